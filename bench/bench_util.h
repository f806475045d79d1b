/*
 * Helpers shared by the benchmark programs: timing, medians, reading a file.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_BENCH_UTIL_H
#define PS_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Monotonic time in seconds. */
static inline double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static inline double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The whole file at path, NUL-terminated, its length in *len (may be NULL); NULL when it
 * cannot be read. Caller frees. */
static inline char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = 0;
    if (len)
        *len = buf ? (size_t)n : 0;
    return buf;
}

/* The load average (1, 5, 15 minutes), printed with the figures: the machine's load moves
 * every absolute figure. */
static inline void print_load(const char *when)
{
    char buf[128] = "unknown";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (!fgets(buf, sizeof buf, f))
            snprintf(buf, sizeof buf, "unknown");
        fclose(f);
    }
    double a = 0, b = 0, c = 0;
    if (sscanf(buf, "%lf %lf %lf", &a, &b, &c) == 3)
        printf("load average %s: %.2f %.2f %.2f\n", when, a, b, c);
    else
        printf("load average %s: unknown\n", when);
    fflush(stdout);
}

#endif
