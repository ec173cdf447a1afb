/*
 * expire.h - expiring a client's ZooKeeper session on purpose, for the integration tests.
 *
 * A program that uses it is linked against reign_internal with
 * -Wl,--wrap=zookeeper_init2 -Wl,--wrap=zookeeper_close (see tests.cmake), so that expire.c
 * knows every ZooKeeper handle libreign holds.  h_expire_session() has reign_it_expire
 * (expire_tool.c, named by $REIGN_IT_EXPIRE) open a second connection with the client's own
 * session id and password and close it: the server ends the session,
 * exactly as it would after a partition longer than the session timeout, and the client hears
 * "expired" when it reconnects.  Nothing is mocked: the server does the expiring.
 */
#ifndef REIGN_TEST_EXPIRE_H
#define REIGN_TEST_EXPIRE_H

#include <reign/reign.h>

/* Ends `client`'s current session on the server (fails the test if it cannot). */
void h_expire_session(reign_client *client);

#endif
