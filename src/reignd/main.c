/*
 * main.c - reignd's entry point.  A placeholder until the daemon's wiring
 * (service.c, issue 6, R2) replaces it.
 */
#include <stdio.h>

int main(void)
{
    fprintf(stderr, "reignd: not yet wired\n");
    return 1;
}
