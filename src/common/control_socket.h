/*
 * control_socket.h - what the two ends of reignd's control socket agree on:
 * where it is by default and the longest cede delay a request may ask for.
 * reignd serves the socket (src/reignd/control.c) and `reign ctl` talks to it
 * (src/cli/ctl.c); neither includes the other's files, so what both need is
 * here, below both.
 */
#ifndef REIGN_CONTROL_SOCKET_H
#define REIGN_CONTROL_SOCKET_H

/* The socket for root ([daemon] control_socket; config.c chooses
 * $XDG_RUNTIME_DIR/reign/reignd.sock for other users, and so does reign ctl). */
#define REIGND_CONTROL_SOCKET_DEFAULT "/run/reign/reignd.sock"

/* The longest cede delay accepted, in seconds (a day). */
#define REIGND_CEDE_DELAY_MAX_S 86400.0

#endif
