/*
 * fsm_dot.c - a state machine's table as a graphviz digraph (fsm_dot.h).
 */
#include "fsm_dot.h"

void fsm_dot_print(FILE *f, const fsm_dot_graph *g)
{
    fprintf(f, "digraph %s {\n    rankdir=LR;\n    node [shape=box];\n", g->name);
    for (unsigned s = 0; s < g->n_states; s++)
        fprintf(f, "    %s%s;\n", g->states[s], g->bold && g->bold(s) ? " [style=bold]" : "");
    for (size_t i = 0; i < g->n_rows; i++) {
        fsm_dot_edge e;
        g->row(g->ctx, i, &e);
        if (e.from == e.to && !e.actions[0])
            continue; /* no-op rows would bury the graph */
        fprintf(f, "    %s -> %s [label=\"%s%s%s%s\"];\n", g->states[e.from], g->states[e.to],
                e.event, e.guard, e.actions[0] ? " / " : "", e.actions);
    }
    fprintf(f, "}\n");
}
