/*
 * pipesched balance — load balancing of a training step (docs/balance.md).
 *
 * Part of libpipesched: include it after or instead of model.h. Two parts of the global load
 * balancing that the Pangu Ultra MoE work calls EDPB, each a planner that the simulator can
 * score:
 *
 *   D  data reordering: every sample of a global batch to a data-parallel rank and a
 *      micro-batch slot, from a linear model of each sample's compute time;
 *   E  expert placement: the experts of each MoE layer on the expert-parallel devices, from
 *      a prediction (EMA) of each expert's load, node level first and device level inside each
 *      node, moving a layer only when the gain pays for the migration.
 *
 * Errors follow pipesched.h: functions return 0 or a negative PS_E* code, with a message that
 * names the line, key or value at fault.
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_BALANCE_H
#define PIPESCHED_BALANCE_H

#include <pipesched/model.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- D: data reordering --------------------------------------------------------------------- */

/* ---- E: expert placement -------------------------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_BALANCE_H */
