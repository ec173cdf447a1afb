/*
 * zk_fault.h - one fault injected into a ZooKeeper create or multi that libreign sends, for the
 * integration tests of a write whose outcome the client cannot know.
 *
 * A program that uses it is linked against reign_internal with
 * -Wl,--wrap=zoo_acreate2,--wrap=zoo_amulti (REIGN_ZK_FAULT_WRAP in tests.cmake), so that every
 * create and multi libreign sends passes through zk_fault.c.  The test names the requests it is
 * about (h_fault_setup) and arms the injector (h_fault_arm); the next of them gets the fault:
 *
 *   H_FAULT_REPLY_LOST  sent and applied by the server, but answered with ZCONNECTIONLOSS (an
 *                       answer other than ZOK goes through unchanged, and nothing is injected)
 *   H_FAULT_NEVER_SENT  never sent, and answered with ZCONNECTIONLOSS from another thread, as
 *                       the C client's completion thread would
 *   H_FAULT_REPLY_HELD  sent and applied, its answer kept back until h_fault_release() (multis
 *                       only)
 *
 * Every other request goes through unchanged.  Nothing is mocked: the server does the applying.
 */
#ifndef REIGN_TEST_ZK_FAULT_H
#define REIGN_TEST_ZK_FAULT_H

#include <stddef.h>

#include "harness.h"

typedef enum h_fault {
    H_FAULT_REPLY_LOST,
    H_FAULT_NEVER_SENT,
    H_FAULT_REPLY_HELD,
} h_fault;

/* Whether a create of `path` is one the test is about. */
typedef int h_fault_create_fn(const char *path);
/* Whether a multi is one the test is about: the index of the create op in `ops` that makes it
 * one (its result is what h_fault_applied() reports), or -1. */
typedef int h_fault_multi_fn(int count, const zoo_op_t *ops);

/* For a multi chooser: the index of the first create op in `ops` under `prefix`, or -1. */
int h_fault_create_under(int count, const zoo_op_t *ops, const char *prefix);

/* Before the first client is made: the fault, and which creates and multis it may hit (either
 * may be NULL).  The choosers run on the thread that sends the request, before the injector
 * looks at them, and may keep counts of their own (under a lock of their own). */
void h_fault_setup(h_fault fault, h_fault_create_fn *on_create, h_fault_multi_fn *on_multi);

/* The next request chosen gets the fault. */
void h_fault_arm(void);

/* How many requests were chosen so far, armed or not. */
int h_fault_chosen(void);

/* Whether the fault was delivered (REPLY_LOST: the server applied the request; REPLY_HELD: its
 * answer is held).  The predicate form is for H_WAIT. */
int h_fault_injected(void);
int h_pred_fault_injected(void *unused);

/* REPLY_LOST: the path the server gave the create whose answer was lost ("" before). */
void h_fault_applied(char *buf, size_t size);

/* REPLY_HELD: whether an answer is held back, and delivering it now (as the C client's thread
 * would have); fails the test if none is held. */
int h_fault_held(void);
void h_fault_release(void);

#endif
