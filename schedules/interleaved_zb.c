/*
 * Interleaved zero bubble, PyTorch's ScheduleInterleavedZeroBubble ("ZB1P" of the zero-bubble
 * paper generalised to v chunks; torch/distributed/pipelining/schedules.py).
 *
 * Loop placement and the micro-batch order of interleaved-rounds (rounds = max(1, m // p),
 * groups of m / rounds micro-batches), but the warm-up is (v-1)(m/rounds) + (p-r-1) forwards
 * (factor 1, not 2), the backward is split: each steady step runs a forward and an I, and
 * from step r on every step (and every cool-down I) is followed by the W of the oldest
 * backward not yet W'd; the remaining Ws end the list. PyTorch pads its table with empty
 * lock-step cells; those carry no work and are not part of our IR.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__interleaved_zb_check(const ps__params *p, char *why)
{
    return ps__rounds_check(p, "interleaved-zb", why);
}

/*
 * Three walks over the same table: forwards, Is (the mirrored chunk), and Ws, which follow
 * the Is in the same order (each W is the oldest backward not yet W'd).
 */
int ps__interleaved_zb_generate(ps_schedule *s, const ps__params *p)
{
    int32_t mpr = p->m / ps__rounds(p), v = p->v, pp = p->p;
    int64_t total = (int64_t)p->m * v;
    for (int32_t r = 0; r < pp; r++) {
        ps__table_it f, b, w;
        ps__table_init(&f, p->m, v, mpr);
        ps__table_init(&b, p->m, v, mpr);
        ps__table_init(&w, p->m, v, mpr);
        int64_t warm = (int64_t)(v - 1) * mpr + (pp - 1 - r);
        if (warm > total)
            warm = total;
        for (int64_t k = 0; k < warm; k++, ps__table_next(&f))
            ps__emit(s, r, PS_F, f.chunk * pp + r, f.gstart + f.in);
        int64_t ws = 0;
        for (int64_t step = 0; step < total; step++) {
            if (step + warm < total) {
                ps__emit(s, r, PS_F, f.chunk * pp + r, f.gstart + f.in);
                ps__table_next(&f);
            }
            ps__emit(s, r, PS_I, (v - 1 - b.chunk) * pp + r, b.gstart + b.in);
            ps__table_next(&b);
            if (step >= r) {
                ps__emit(s, r, PS_W, (v - 1 - w.chunk) * pp + r, w.gstart + w.in);
                ps__table_next(&w);
                ws++;
            }
        }
        for (; ws < total; ws++, ps__table_next(&w))
            ps__emit(s, r, PS_W, (v - 1 - w.chunk) * pp + r, w.gstart + w.in);
    }
    return 0;
}
