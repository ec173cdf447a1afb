#!/bin/sh
# hook.sh WHAT - the hook and fence command of reignd's end-to-end tests: appends one line per
# run to the file $HOOK_EVENTS (shared by every node of a test, so its lines are in the order
# the commands ran), ending with at=NS, the wall clock in nanoseconds when the line was written:
#   become_active   written when the hook starts (the service may be active from then on);
#                   while the file $HOOK_ACTIVE_HOLD exists, it then waits, and writes
#                   "active_done" once the file is gone
#   become_standby  written when the hook ends (the service is standby from then on)
#   fence           written when the fence is done (the target is fenced from then on)
# so that the test's checker can prove, from these timestamps alone, that no two nodes were
# ever active at once.  The first word is $HOOK_NODE (the test's name for the daemon: two
# daemons may share a node_id), else $REIGN_NODE_ID.  Data comes from reignd in REIGN_*
# variables only.  A fence fails while $HOOK_FENCE_FLAG names a file that does not exist,
# become_active while $HOOK_ACTIVE_FLAG does.
events=${HOOK_EVENTS:?}
node=${HOOK_NODE:-$REIGN_NODE_ID}
now() { date +%s%N; }
case $1 in
become_active)
    if [ -n "$HOOK_ACTIVE_FLAG" ] && [ ! -e "$HOOK_ACTIVE_FLAG" ]; then
        echo "$node active_failed term=$REIGN_TERM service=$REIGN_SERVICE at=$(now)" >>"$events"
        exit 1
    fi
    echo "$node become_active term=$REIGN_TERM token=$REIGN_TOKEN service=$REIGN_SERVICE" \
        "at=$(now)" >>"$events"
    if [ -n "$HOOK_ACTIVE_HOLD" ]; then
        while [ -e "$HOOK_ACTIVE_HOLD" ]; do sleep 0.05; done
        echo "$node active_done term=$REIGN_TERM service=$REIGN_SERVICE at=$(now)" >>"$events"
    fi
    ;;
become_standby)
    echo "$node become_standby term=$REIGN_TERM service=$REIGN_SERVICE at=$(now)" >>"$events"
    ;;
fence)
    if [ -n "$HOOK_FENCE_FLAG" ] && [ ! -e "$HOOK_FENCE_FLAG" ]; then
        echo "$node fence_failed target=$REIGN_TARGET_ID service=$REIGN_SERVICE at=$(now)" \
            >>"$events"
        exit 1
    fi
    echo "$node fence target=$REIGN_TARGET_ID address=$REIGN_TARGET_ADDRESS" \
        "target_term=$REIGN_TARGET_TERM service=$REIGN_SERVICE at=$(now)" >>"$events"
    ;;
*)
    echo "hook.sh: unknown hook '$1'" >&2
    exit 2
    ;;
esac
