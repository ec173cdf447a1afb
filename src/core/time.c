/* time.c - the clocks: CLOCK_MONOTONIC for every deadline, wall time only for display. */
#include <time.h>

#include "core.h"

int64_t reign__now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t reign_now_ns(void)
{
    return reign__now_ns();
}

int64_t reign__wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
