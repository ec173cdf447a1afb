/*
 * fsm_dot.h - draws a state machine's table as a graphviz digraph.
 *
 * Shared by the tables that have a graph: reignd's service machine
 * (reignd --print-fsm) and the ZooKeeper candidate's (its unit test prints
 * the graph that docs/design.md shows).  A row that keeps its state and does
 * nothing is left out: such rows would bury the graph.
 */
#ifndef REIGN_TOOLS_FSM_DOT_H
#define REIGN_TOOLS_FSM_DOT_H

#include <stddef.h>
#include <stdio.h>

typedef struct fsm_dot_edge {
    unsigned from, to;
    const char *event;
    const char *guard;   /* "" or a label such as " [healthy]" */
    const char *actions; /* "" or "a+b" */
} fsm_dot_edge;

typedef struct fsm_dot_graph {
    const char *name;
    const char *const *states;
    size_t n_states;
    int (*bold)(unsigned state); /* NULL: none */
    size_t n_rows;
    /* Fills row i; the strings live until the next call. */
    void (*row)(const void *ctx, size_t i, fsm_dot_edge *out);
    const void *ctx;
} fsm_dot_graph;

void fsm_dot_print(FILE *f, const fsm_dot_graph *g);

#endif
