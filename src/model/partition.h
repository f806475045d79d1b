/*
 * The automatic layer partition (partition.c): the decoder-layer counts per virtual stage that
 * minimise the simulated step time, found by a bounded, deterministic local search. The
 * estimate (estimate.c) drives it with a callback that turns one candidate split into stage
 * tables and simulates them, reusing the handle's problem, schedule and simulations; the
 * search only proposes splits and keeps the best. docs/layout.md ("auto") states the method.
 * Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_PARTITION_H
#define PS_MODEL_PARTITION_H

#include <pipesched/model.h>

#include <stdint.h>

/* Simulates the split counts[stages] (decoder layers per virtual stage, summing to layers)
 * and sets *step to its step time in seconds. Returns 0 or a negative PS_E* code, which ends
 * the search with that code. */
typedef int (*ps__split_eval)(void *ctx, const int32_t *counts, double *step);

/* What the search reads. The work figures only choose the starting point ("balance compute");
 * the objective is always the simulated step time. */
typedef struct ps__partition {
    int32_t stages;    /* virtual stages of one model copy, >= 1 */
    int32_t layers;    /* decoder layers, >= 0 */
    double dense_work; /* seconds of F + I + W of a dense decoder layer */
    double moe_work;   /* the same of a MoE layer */
    int32_t first_moe; /* index of the first MoE layer (= layers: none) */
    double head_work;  /* the first stage's extra work (the embedding) */
    double tail_work;  /* the last stage's extra work (the output layer and the loss) */
    ps__split_eval eval;
    void *ctx;
    int64_t exhaustive; /* at most this many splits: every one is simulated (exact) */
} ps__partition;

/* The estimate's limit for the exhaustive search: below it "auto" is the brute-force minimum. */
#define PS__PARTITION_EXHAUSTIVE 4096

/* What a search did. */
typedef struct ps__partition_stats {
    int64_t evals;     /* simulations run, the final one included */
    int64_t bound;     /* the most it could have run: ps__partition_bound(stages) + 3 */
    double even_step;  /* step time of the even split; -1 when layers % stages != 0 */
    double start_step; /* step time of the starting point */
    double best_step;  /* step time of the result */
} ps__partition_stats;

/* The most local-search moves evaluated for `stages` stages: 8 * stages^2. */
int64_t ps__partition_bound(int32_t stages);

/* The splits of `layers` over `stages` (empty stages allowed): C(layers + stages - 1,
 * stages - 1), or cap + 1 when there are more than cap. */
int64_t ps__partition_splits(int32_t layers, int32_t stages, int64_t cap);

/*
 * Finds the split of p->layers over p->stages that minimises p->eval's step time: the best of
 * the even split (when it divides) and the balanced split as the start, then moves of one
 * layer between two stages while the step time strictly improves (docs/layout.md). best and
 * cand are caller-provided arrays of p->stages entries; best receives the result. On return
 * the last evaluation was of best, so whatever eval fills describes the result. Returns 0 or
 * the first error of eval; *stats is filled on success (may be NULL).
 */
int ps__partition_search(const ps__partition *p, int32_t *best, int32_t *cand,
                         ps__partition_stats *stats);

/* The statistics of the last run's automatic partition (evals 0 when the run had a layout or
 * the even split): 0, PS_EINVAL or PS_ESTATE (no successful run). For tests and benchmarks. */
int ps__estimate_partition_stats(const ps_estimate *e, ps__partition_stats *out);

#endif
