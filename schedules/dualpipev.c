/*
 * DualPipeV, DualPipe "cut in half" (deepseek-ai/DualPipe dualpipev.py; PyTorch's
 * ScheduleDualPipeV; reference/schedules.md section 1.3).
 *
 * V placement with two chunks per rank: rank r holds stage r (chunk 0) and stage 2p-1-r
 * (chunk 1), one model copy, one path through all 2p stages; inputs and loss are both on
 * rank 0. Every rank runs DualPipe's 8-step program (dualpipe.c, ps__dual_emit) with H = p
 * ranks, half rank h = r and C = m micro-batches per phase: phase 0 is chunk 0, phase 1 is
 * chunk 1, both over all micro-batches in order; the "middle" rank whose first F0&B1 is not
 * fused is the last one, r = p-1. The reference asserts m >= 2p (step 4, m-2p+r+1 times,
 * must run on rank 0) and needs no parity. The result equals PyTorch's artifact
 * dualpipev_4rank_10mb.csv action for action (tests/test-fused.c). With F&B = f+b+w the
 * published bubble (p-1)(F&B+b+w-3w) holds when f = b and w <= b (the general form is in
 * tests/test-sweep.c); rank 0's activations peak at 2p+1 chunks.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <stdio.h>

int ps__dualpipev_check(const ps__params *p, char *why)
{
    if (p->m < 2 * p->p) {
        snprintf(why, PS__ERRLEN,
                 "dualpipev needs m >= 2 pp (every rank's main step runs at least once); got "
                 "pp=%d, m=%d",
                 p->p, p->m);
        return -1;
    }
    return 0;
}

int ps__dualpipev_generate(ps_schedule *s, const ps__params *p)
{
    int rc = 0;
    for (int32_t r = 0; r < p->p && !rc; r++) {
        ps__dual_rank d = {p->p, r, p->m, {r, 2 * p->p - 1 - r}, {0, 0}};
        rc = ps__dual_emit(s, r, &d);
    }
    return rc;
}
