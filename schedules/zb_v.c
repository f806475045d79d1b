/*
 * ZB-V, the handcrafted V-shape zero-bubble schedule (Qi et al., "Zero Bubble Pipeline
 * Parallelism", section 6; the same program as PyTorch's ScheduleZBVZeroBubble and the
 * zero-bubble project's handcrafted_zb_v).
 *
 * Two chunks per rank in V placement: chunk 0 of rank r is stage r, chunk 1 is stage
 * 2p-1-r. With n = max(2p-1, m) micro-batches (the program needs at least 2p-1 to fill the
 * V; the extra ones are padding), rank r runs:
 *   2(p-r)-1 x F0;   r x (F1, F0);   p-r x (F1, I1, W1);
 *   while chunk 1 lags chunk 0 or forwards remain: [F0], I0, W0, F1, I1, W1;
 *   r x (I0, I1);   p-r x (I0, W0);   the remaining W1s, then the remaining W0s;
 * and actions of padding micro-batches (index >= m) are dropped. Zero bubble when
 * f = b = w.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__zb_v_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

/* Emits (kind, stage, mb) unless mb is padding. */
static inline void put(ps_schedule *s, const ps__params *p, int32_t r, int kind, int32_t stage,
                       int32_t mb)
{
    if (mb < p->m)
        ps__emit(s, r, kind, stage, mb);
}

int ps__zb_v_generate(ps_schedule *s, const ps__params *p)
{
    int32_t pp = p->p, n = 2 * pp - 1 > p->m ? 2 * pp - 1 : p->m;
    for (int32_t r = 0; r < pp; r++) {
        int32_t s0 = r, s1 = 2 * pp - 1 - r;
        int32_t f0 = 0, f1 = 0, b0 = 0, b1 = 0;
        for (int32_t k = 0; k < 2 * (pp - r) - 1; k++)
            put(s, p, r, PS_F, s0, f0++);
        for (int32_t k = 0; k < r; k++) {
            put(s, p, r, PS_F, s1, f1++);
            put(s, p, r, PS_F, s0, f0++);
        }
        for (int32_t k = 0; k < pp - r; k++) {
            put(s, p, r, PS_F, s1, f1++);
            put(s, p, r, PS_I, s1, b1);
            put(s, p, r, PS_W, s1, b1++);
        }
        while (f1 < f0 || f0 < n) {
            if (f0 < n)
                put(s, p, r, PS_F, s0, f0++);
            put(s, p, r, PS_I, s0, b0);
            put(s, p, r, PS_W, s0, b0++);
            put(s, p, r, PS_F, s1, f1++);
            put(s, p, r, PS_I, s1, b1);
            put(s, p, r, PS_W, s1, b1++);
        }
        int32_t w0 = b0, w1 = b1;
        for (int32_t k = 0; k < r; k++) {
            put(s, p, r, PS_I, s0, b0++);
            put(s, p, r, PS_I, s1, b1++);
        }
        for (int32_t k = 0; k < pp - r; k++) {
            put(s, p, r, PS_I, s0, b0++);
            put(s, p, r, PS_W, s0, w0++);
        }
        while (w1 < b1)
            put(s, p, r, PS_W, s1, w1++);
        while (w0 < b0)
            put(s, p, r, PS_W, s0, w0++);
    }
    return 0;
}
