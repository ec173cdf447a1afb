#!/bin/sh
# hook.sh WHAT - the hook and fence command of reignd's end-to-end tests: appends one line per
# run to the file $HOOK_EVENTS (shared by every node of a test, so its lines are in the order
# the commands ran).  Data comes from reignd in REIGN_* variables only.  A fence fails while
# $HOOK_FENCE_FLAG names a file that does not exist, become_active while $HOOK_ACTIVE_FLAG does.
events=${HOOK_EVENTS:?}
case $1 in
become_active)
    if [ -n "$HOOK_ACTIVE_FLAG" ] && [ ! -e "$HOOK_ACTIVE_FLAG" ]; then
        echo "$REIGN_NODE_ID active_failed term=$REIGN_TERM service=$REIGN_SERVICE" >>"$events"
        exit 1
    fi
    echo "$REIGN_NODE_ID become_active term=$REIGN_TERM token=$REIGN_TOKEN service=$REIGN_SERVICE" \
        >>"$events"
    ;;
become_standby)
    echo "$REIGN_NODE_ID become_standby term=$REIGN_TERM service=$REIGN_SERVICE" >>"$events"
    ;;
fence)
    if [ -n "$HOOK_FENCE_FLAG" ] && [ ! -e "$HOOK_FENCE_FLAG" ]; then
        echo "$REIGN_NODE_ID fence_failed target=$REIGN_TARGET_ID service=$REIGN_SERVICE" >>"$events"
        exit 1
    fi
    echo "$REIGN_NODE_ID fence target=$REIGN_TARGET_ID address=$REIGN_TARGET_ADDRESS" \
        "target_term=$REIGN_TARGET_TERM service=$REIGN_SERVICE" >>"$events"
    ;;
*)
    echo "hook.sh: unknown hook '$1'" >&2
    exit 2
    ;;
esac
