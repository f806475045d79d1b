/*
 * ZB-H1, the handcrafted zero-bubble schedule of "Zero Bubble Pipeline Parallelism" (Qi et
 * al., ICLR 2024; sail-sg/zero-bubble-pipeline-parallelism, efficiency.py get_hand_schedule).
 *
 * The backward is split into I (input gradient, on the critical path) and W (weight
 * gradient, deferrable). Rank r warms up with c(p-r-1) forwards, then every step runs the
 * next forward (while any is left) and the next I, and from the moment the warm-up plus the
 * step index reaches c(p-1) also the oldest pending W; the Ws left over fill the cool-down.
 * c = 1 is ZB-H1 (W deferred by r micro-batches, the memory of 1F1B), c = 2 is ZB-H2 (see
 * zb_h2.c: W deferred by 2r, about twice the memory, zero bubble when f = b = w).
 *
 * The reference asserts m >= 2p. The rule itself needs no such bound: with the warm-up cut
 * at m every micro-batch still gets its F, I and W in dependency order, so any m >= 1 is
 * accepted (the sweep test validates every m in 1..32); the closed-form bubble holds from
 * m >= c(p-1) + 1 on (see tests/test-sweep.c).
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

void ps__zb_h_emit(ps_schedule *s, const ps__params *p, int32_t c)
{
    for (int32_t r = 0; r < p->p; r++) {
        int64_t warm = (int64_t)c * (p->p - r - 1);
        if (warm > p->m)
            warm = p->m;
        int32_t next_w = 0;
        for (int32_t j = 0; j < warm; j++)
            ps__emit(s, r, PS_F, r, j);
        for (int32_t i = 0; i < p->m; i++) {
            if (warm + i < p->m)
                ps__emit(s, r, PS_F, r, (int32_t)(warm + i));
            ps__emit(s, r, PS_I, r, i);
            if (warm + i >= (int64_t)c * (p->p - 1))
                ps__emit(s, r, PS_W, r, next_w++);
        }
        while (next_w < p->m)
            ps__emit(s, r, PS_W, r, next_w++);
    }
}

int ps__zb_h1_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__zb_h1_generate(ps_schedule *s, const ps__params *p)
{
    ps__zb_h_emit(s, p, 1);
    return 0;
}
