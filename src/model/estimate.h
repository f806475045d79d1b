/*
 * Internal entry points of the estimate (estimate.c) for tests and benchmarks. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_ESTIMATE_H
#define PS_MODEL_ESTIMATE_H

#include <pipesched/model.h>

/*
 * A handle keeps, from one run to the next, the schedule while its shape stays the same
 * (family, pp, vpp, micro-batches, family options; never for a family that plans with the
 * costs, zb-auto) and the overlap plans of a MoE model while the model stays the same. After
 * this call the next run on e keeps nothing: it generates, validates and plans again, as the
 * first run on a fresh handle does, with the same results. What the cold path costs, for
 * benchmarks; e may be NULL.
 */
void ps__estimate_forget(ps_estimate *e);

#endif
