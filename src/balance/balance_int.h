/*
 * Load balancing, inside (include/pipesched/balance.h). Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_BALANCE_INT_H
#define PS_BALANCE_INT_H

#include "internal.h"

#include <pipesched/balance.h>

/* ---- E: the routing trace (trace.c, synthetic.c) -------------------------------------------- */

struct ps_expert_trace {
    ps_allocator al;
    int32_t steps, layers, experts; /* 0 0 0: empty */
    double *tokens;                 /* steps x layers x experts, step-major */
    double max;                     /* the largest number load accepts */
    char err[PS__ERRLEN];
};

/* Empties t and allocates steps x layers x experts zeros (the bounds already checked). */
int ps__trace_reset(ps_expert_trace *t, int32_t steps, int32_t layers, int32_t experts);
/* Frees t's table and marks it empty. */
void ps__trace_clear(ps_expert_trace *t);

/* A small, documented PRNG (xoshiro256**, seeded by splitmix64; Blackman and Vigna), so that a
 * synthetic trace is the same on every platform. */
typedef struct ps__rng {
    uint64_t s[4];
} ps__rng;
void ps__rng_seed(ps__rng *r, uint64_t seed);
uint64_t ps__rng_next(ps__rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double ps__rng_uniform(ps__rng *r);
/* Uniform in [0, n), unbiased (rejection); n >= 1. */
uint64_t ps__rng_below(ps__rng *r, uint64_t n);
/* Standard normal (Box-Muller, one value per call). */
double ps__rng_normal(ps__rng *r);

/* One number of a synthetic spec (what: "synthetic experts", "synthetic samples"): the whole
 * word v[0 .. n), finite, in [lo, hi], whole when integer is set, into *out; else PS_ECONFIG
 * with a message naming what, the key, the range and the word in err (errlen bytes). */
int ps__spec_number(const char *what, const char *key, const char *v, size_t n, double lo,
                    double hi, int integer, double *out, char *err, size_t errlen);

/* ---- D: data reordering (data.c) ------------------------------------------------------------ */

/* ps_balance_data; with weights set, times[] are in units of the problem's micro-batch: a
 * slot's weight (ps_problem_set_microbatch_weights) is the sum of its samples' times, and the
 * problem's durations stay in their own unit (the estimate's seconds). */
int ps__balance_data(const ps_problem *pb, const double *times, size_t n, const ps_data_config *cfg,
                     int weights, int32_t *rank, int32_t *slot, ps_data_result *out, char *err,
                     size_t errlen);

#endif /* PS_BALANCE_INT_H */
