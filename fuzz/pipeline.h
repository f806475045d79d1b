/*
 * The invariants of the whole pipeline on one problem: generate, validate, simulate, export in
 * every format, lower, validate again, export the lowered table; every handle on a
 * size-checking allocator, and nothing left allocated at the end.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_FUZZ_PIPELINE_H
#define PS_FUZZ_PIPELINE_H

#include "fuzz.h"

/*
 * Runs the pipeline on pb with handles on allocator state a (which may inject a failure:
 * then any step may end the run with PS_ENOMEM, and only the memory invariants are checked).
 * The caller frees pb and checks that a is empty.
 */
void fz_check_pipeline(const ps_problem *pb, fz_alloc *a);

/* Simulates, exports and lowers an already valid schedule s under pb (the CSV target's
 * second half). */
void fz_check_schedule(ps_schedule *s, const ps_problem *pb, fz_alloc *a);

#endif
