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

#include <stdio.h>

int ps__interleaved_zb_check(const ps__params *p, char *why)
{
    int32_t rounds = p->m / p->p > 1 ? p->m / p->p : 1;
    if (p->m % rounds) {
        snprintf(why, PS__ERRLEN,
                 "interleaved-zb needs m to be a multiple of rounds = max(1, m // pp) = %d; "
                 "got m=%d, pp=%d",
                 rounds, p->m, p->p);
        return -1;
    }
    return 0;
}

/* The k-th forward (or backward, mirrored) of a rank walks groups of mpr micro-batches:
 * chunk = (k / mpr) mod v, micro-batch = a running counter per chunk. */
typedef struct walk {
    int32_t mpr, v, in, chunk;
    int32_t *next_mb; /* per chunk */
} walk;

static void walk_next(walk *w, int32_t *chunk, int32_t *mb)
{
    *chunk = w->chunk;
    *mb = w->next_mb[w->chunk]++;
    if (++w->in == w->mpr) {
        w->in = 0;
        w->chunk = (w->chunk + 1) % w->v;
    }
}

int ps__interleaved_zb_generate(ps_schedule *s, const ps__params *p)
{
    int32_t rounds = p->m / p->p > 1 ? p->m / p->p : 1;
    int32_t mpr = p->m / rounds, v = p->v, pp = p->p;
    int64_t total = (int64_t)p->m * v;
    /* The W queue holds stage numbers of pending Ws in I order (its micro-batches follow per
     * stage), so a ring of per-rank backward stages plus per-stage W counters is enough. */
    int32_t *fmb = ps__calloc(&s->al, (size_t)v * 3, sizeof *fmb);
    int32_t *wq = ps__alloc(&s->al, (size_t)total, sizeof *wq);
    if (!fmb || !wq) {
        ps__free(&s->al, fmb, (size_t)v * 3, sizeof *fmb);
        ps__free(&s->al, wq, (size_t)total, sizeof *wq);
        return PS_ENOMEM;
    }
    int32_t *bmb = fmb + v, *wmb = fmb + 2 * v;
    for (int32_t r = 0; r < pp; r++) {
        for (int32_t c = 0; c < 3 * v; c++)
            fmb[c] = 0;
        walk fw = {mpr, v, 0, 0, fmb}, bw = {mpr, v, 0, 0, bmb};
        int64_t warm = (int64_t)(v - 1) * mpr + (pp - 1 - r);
        if (warm > total)
            warm = total;
        int64_t qh = 0, qt = 0, step = 0;
        int32_t c, mb;
        for (int64_t k = 0; k < warm; k++) {
            walk_next(&fw, &c, &mb);
            ps__emit(s, r, PS_F, c * pp + r, mb);
        }
        for (int64_t k = warm; k < total + warm; k++, step++) {
            if (k < total) {
                walk_next(&fw, &c, &mb);
                ps__emit(s, r, PS_F, c * pp + r, mb);
            }
            walk_next(&bw, &c, &mb);
            int32_t stage = (v - 1 - c) * pp + r;
            ps__emit(s, r, PS_I, stage, mb);
            wq[qt++] = v - 1 - c;
            if (step >= r) {
                int32_t wc = wq[qh++];
                ps__emit(s, r, PS_W, wc * pp + r, wmb[wc]++);
            }
        }
        while (qh < qt) {
            int32_t wc = wq[qh++];
            ps__emit(s, r, PS_W, wc * pp + r, wmb[wc]++);
        }
    }
    ps__free(&s->al, fmb, (size_t)v * 3, sizeof *fmb);
    ps__free(&s->al, wq, (size_t)total, sizeof *wq);
    return 0;
}
