/*
 * Internal entry points of the estimate (estimate.c) for tests and benchmarks. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_ESTIMATE_H
#define PS_MODEL_ESTIMATE_H

#include <pipesched/model.h>

#include <stdint.h>

/*
 * A handle keeps, from one run to the next, the schedule while its shape stays the same
 * (family, pp, vpp, micro-batches, family options; never for a family that plans with the
 * costs, zb-auto) and the overlap plans of a MoE model while the model stays the same. After
 * this call the next run on e keeps nothing: it generates, validates and plans again, as the
 * first run on a fresh handle does, with the same results. What the cold path costs, for
 * benchmarks; e may be NULL.
 */
void ps__estimate_forget(ps_estimate *e);

/* Runs of e that reused the simulation of the run before (its inputs were the same bit for bit:
 * estimate.c, reuse_simulation). */
uint64_t ps__estimate_reused(const ps_estimate *e);
/* Exact peak memories of e (ps__estimate_bound) that took the ranks' peaks of an earlier walk
 * of the same schedule and stage memory instead of walking the action lists (estimate.c,
 * peak_cache). */
uint64_t ps__estimate_peaks_kept(const ps_estimate *e);

/* Lower bounds of one configuration, computed without a simulation (ps__estimate_bound). */
typedef struct ps__estimate_lb {
    double step_s;     /* the step time is at least this */
    double mem_gib;    /* the peak memory per device is at least this */
    double bubble_s;   /* of step_s, what is neither busy time nor the tail on its rank */
    int32_t mem_exact; /* 1: mem_gib is the peak ps_estimate_run would give, bit for bit */
    int32_t peak_rank; /* with mem_exact: the rank of that peak */
} ps__estimate_lb;

/* The bounds of (model, hw, train) by the derivation ps_estimate_run makes, without simulating
 * the schedule (estimate.c states the proof). exact_mem: also generate the schedule (kept on e
 * for the run that may follow) and give the exact peak memory, which depends on the order of
 * each rank's actions only. Uses e's tables (its last result is gone). Zeros for a layout
 * "auto" or a custom family. Errors as ps_estimate_run's. */
int ps__estimate_bound(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                       const ps_train *train, int exact_mem, ps__estimate_lb *out);

/* The allocator e was created with (borrowed; the balance part allocates through it). */
const ps_allocator *ps__estimate_allocator(const ps_estimate *e);

#endif
