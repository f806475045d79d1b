/*
 * Interleaved 1F1B, Megatron's rule (megatron/core/pipeline_parallel/schedules.py,
 * get_pp_rank_microbatches and get_schedule_table).
 *
 * Loop placement, v chunks per rank. Micro-batches are taken in groups of G (the last group
 * takes the remainder); within a group the forward order visits chunk 0 of every member,
 * then chunk 1, ... The k-th backward takes the micro-batch of the k-th table entry and the
 * mirrored chunk v-1-chunk. Rank r warms up with 2(p-r-1) + (v-1)G forwards (capped at m*v),
 * then alternates F and B, then drains. With v = 1 Megatron uses the plain 1F1B warm-up
 * p-r-1, and so do we.
 *
 * The same generator serves PyTorch's ScheduleInterleaved1F1B ("interleaved-rounds"): there
 * the group is m / rounds with rounds = max(1, m // p), and the warm-up keeps the factor 2
 * even for v = 1.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <stdio.h>
#include <string.h>

/* 1 when the rounds rule (interleaved-rounds) accepts m: m a multiple of max(1, m // pp). */
static int rounds_accept(int32_t m, int32_t pp)
{
    int32_t rounds = m / pp > 1 ? m / pp : 1;
    return m % rounds == 0;
}

/* The smallest group size in [pp, m] that Megatron's rule accepts for m (m itself always
 * does when m >= pp); 0 when m < pp. */
static int32_t fitting_group(int32_t m, int32_t pp)
{
    for (int32_t g = pp; g < m; g++)
        if (m % g == 0 || m % g >= pp)
            return g;
    return m >= pp ? m : 0;
}

/* Appends to why what accepts m instead: a group size (the interleaved and adaptive families
 * take --group-size / group_size) and, for interleaved itself, the rounds rule of
 * interleaved-rounds (PyTorch's ScheduleInterleaved1F1B), which adaptive does not run. */
static void hint(const ps__params *p, char *why)
{
    size_t n = strlen(why);
    int32_t g = fitting_group(p->m, p->p);
    int rounds = rounds_accept(p->m, p->p);
    if (g && rounds)
        snprintf(why + n, PS__ERRLEN - n,
                 "; group_size (--group-size) %d accepts m=%d, and so does interleaved-rounds "
                 "(PyTorch's rule)",
                 (int)g, (int)p->m);
    else if (g)
        snprintf(why + n, PS__ERRLEN - n, "; group_size (--group-size) %d accepts m=%d", (int)g,
                 (int)p->m);
    else if (rounds)
        snprintf(why + n, PS__ERRLEN - n, "; interleaved-rounds (PyTorch's rule) accepts m=%d",
                 (int)p->m);
}

static int interleaved_rule(const ps__params *p, char *why)
{
    if (p->v == 1)
        return 0;
    if (p->m < p->p) {
        snprintf(why, PS__ERRLEN, "interleaved needs m >= pp when vpp > 1; got m=%d, pp=%d", p->m,
                 p->p);
        return -1;
    }
    if (p->group < p->p || p->group > p->m) {
        snprintf(why, PS__ERRLEN,
                 "interleaved needs pp <= group_size <= m; got group_size=%d, pp=%d, m=%d",
                 p->group, p->p, p->m);
        return -1;
    }
    int32_t rem = p->m % p->group;
    if (rem > 0 && rem < p->p) {
        snprintf(why, PS__ERRLEN,
                 "interleaved needs m mod group_size to be 0 or >= pp (a smaller last group "
                 "stalls the pipeline); got m=%d, group_size=%d, m mod group_size=%d, pp=%d",
                 p->m, p->group, rem, p->p);
        return -1;
    }
    return 0;
}

int ps__interleaved_check(const ps__params *p, char *why)
{
    if (interleaved_rule(p, why) == 0)
        return 0;
    hint(p, why);
    return -1;
}

/* Adaptive runs interleaved's table: the same rule, with only the group size as a way out. */
int ps__interleaved_table_check(const ps__params *p, char *why)
{
    if (interleaved_rule(p, why) == 0)
        return 0;
    size_t n = strlen(why);
    int32_t g = fitting_group(p->m, p->p);
    if (g)
        snprintf(why + n, PS__ERRLEN - n, "; group_size (--group-size) %d accepts m=%d", (int)g,
                 (int)p->m);
    return -1;
}

int ps__rounds_check(const ps__params *p, const char *family, char *why)
{
    int32_t rounds = ps__rounds(p);
    if (p->m % rounds) {
        int n = snprintf(why, PS__ERRLEN,
                         "%s needs m to be a multiple of rounds = max(1, m // pp) = %d; got m=%d, "
                         "pp=%d",
                         family, rounds, p->m, p->p);
        /* the nearest m on either side that the rule accepts */
        int32_t lo = p->m - 1, hi = p->m + 1;
        while (lo > 0 && !rounds_accept(lo, p->p))
            lo--;
        while (!rounds_accept(hi, p->p))
            hi++;
        if (n > 0 && n < PS__ERRLEN)
            snprintf(why + n, PS__ERRLEN - (size_t)n, " (m=%d or m=%d fit%s)", (int)lo, (int)hi,
                     strcmp(family, "interleaved-rounds") == 0
                         ? "; interleaved (Megatron's rule) takes any m >= pp with a suitable "
                           "--group-size"
                         : "");
        return -1;
    }
    return 0;
}

int ps__interleaved_rounds_check(const ps__params *p, char *why)
{
    return ps__rounds_check(p, "interleaved-rounds", why);
}

int ps__interleaved_generate(ps_schedule *s, const ps__params *p)
{
    if (p->v == 1) {
        ps__interleaved_walk(s, p, p->m, 1, 0, 0, 0);
        return 0;
    }
    ps__interleaved_walk(s, p, p->group, 2, (int64_t)(p->v - 1) * p->group, 0, 0);
    return 0;
}

int ps__interleaved_rounds_generate(ps_schedule *s, const ps__params *p)
{
    int32_t mpr = p->m / ps__rounds(p);
    ps__interleaved_walk(s, p, mpr, 2, (int64_t)(p->v - 1) * mpr, 0, 0);
    return 0;
}
