/* ids.c: random identifiers from the kernel, and clocks. */
#include "ids.h"

#include <stdio.h>
#include <sys/random.h>
#include <time.h>

int esc_random_hex(char *out, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char buf[64];
    if (nbytes > sizeof buf)
        return -1;
    if (getrandom(buf, nbytes, 0) != (ssize_t)nbytes)
        return -1;
    for (size_t i = 0; i < nbytes; i++) {
        out[2 * i] = hex[buf[i] >> 4];
        out[2 * i + 1] = hex[buf[i] & 15];
    }
    out[2 * nbytes] = 0;
    return 0;
}

void esc_return_id(const char *task_id, unsigned i, char *out, size_t len)
{
    snprintf(out, len, "%s%04x", task_id, i & 0xffff);
}

uint64_t esc_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct timespec esc_time_after_ms(clockid_t clock, uint64_t ms)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    ts.tv_sec += (time_t)(ms / 1000);
    ts.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

double esc_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t esc_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}
