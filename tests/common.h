/*
 * Shared helpers of the Check suites: a counting allocator that fails its Nth call (for the
 * allocation-failure tests) and a few builders.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_TEST_COMMON_H
#define PS_TEST_COMMON_H

#include <pipesched/pipesched.h>

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct counting_alloc {
    long calls;   /* allocations (not frees) made so far */
    long fail_at; /* fail the allocation with this 1-based number; 0 = never */
    long live;    /* blocks currently allocated */
    size_t bytes; /* bytes currently allocated */
} counting_alloc;

/*
 * The allocator contract (pipesched.h, Lua's lua_Alloc): a free or a resize passes the block's
 * size as osize. Every block of the counting allocator carries its size in a header in front
 * of it, and every free and resize checks osize against it: a wrong size fails the test on the
 * spot, naming both sizes, in every suite that uses the allocator.
 */
#define COUNTING_HEADER 16 /* keeps the block aligned as malloc's (max_align_t) */

static inline void counting_check_size(void *ptr, size_t osize)
{
    size_t had;
    memcpy(&had, (char *)ptr - COUNTING_HEADER, sizeof had);
    if (had != osize)
        ck_abort_msg("allocator contract broken: a block of %zu bytes freed or resized with "
                     "osize %zu",
                     had, osize);
}

static inline void *counting_fn(void *ud, void *ptr, size_t osize, size_t nsize)
{
    counting_alloc *c = ud;
    if (ptr)
        counting_check_size(ptr, osize);
    if (nsize == 0) {
        if (ptr) {
            c->live--;
            c->bytes -= osize;
            free((char *)ptr - COUNTING_HEADER);
        }
        return NULL;
    }
    c->calls++;
    if (c->fail_at && c->calls == c->fail_at)
        return NULL;
    if (nsize > SIZE_MAX - COUNTING_HEADER)
        return NULL;
    char *p = realloc(ptr ? (char *)ptr - COUNTING_HEADER : NULL, nsize + COUNTING_HEADER);
    if (!p)
        return NULL;
    memcpy(p, &nsize, sizeof nsize);
    if (!ptr)
        c->live++;
    c->bytes += nsize - (ptr ? osize : 0);
    return p + COUNTING_HEADER;
}

static inline ps_allocator counting_allocator(counting_alloc *c)
{
    ps_allocator a = {counting_fn, c};
    return a;
}

/* A problem for family/pp/vpp/m with uniform costs. */
static inline ps_problem *make_problem(const char *family, int pp, int vpp, int m, double f,
                                       double b, double w, double c)
{
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_problem_set_schedule(pb, family), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, pp), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_VPP, vpp), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, m), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_F, f), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_B, b), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_W, w), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_C, c), 0);
    return pb;
}

/* Formats rank r's compute list as "0F0 0F1 ..." into buf. */
static inline void rank_string(const ps_schedule *s, int r, char *buf, size_t n)
{
    const ps_action *a = ps_schedule_rank_actions(s, r);
    size_t len = ps_schedule_rank_length(s, r), used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < len && used + 40 < n; i++) {
        if (i)
            buf[used++] = ' ';
        int k = ps_action_format(&a[i], buf + used, n - used);
        used += (size_t)k;
    }
}

static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* The whole file at path (relative to tests/, where the suites run), NUL-terminated; its
 * length without the NUL in *len. Caller frees. */
static inline char *test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from tests/)", path);
    char *buf = NULL;
    size_t cap = 0, n = 0, got;
    do {
        if (n + 4097 > cap) {
            cap = cap ? cap * 2 : 16384;
            buf = realloc(buf, cap);
            ck_assert_ptr_nonnull(buf);
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
}

#endif
