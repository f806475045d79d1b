/*
 * DualPipe (DeepSeek-V3; deepseek-ai/DualPipe, reference/schedules.md sections 1.1-1.2), and
 * the 8-step per-rank program it shares with DualPipeV (dualpipev.c).
 *
 * Placement (set up by the registry, PS__PLACE_BIDIR): two model copies. Micro-batches
 * 0..m/2-1 take path 0, stages 0..p-1 with stage s on rank s; micro-batches m/2..m-1 take
 * path 1, stages p..2p-1 with stage p+s on rank p-1-s. So rank r holds stage r of path 0 and
 * stage 2p-1-r of path 1 (position p-1-r on that path), and every rank keeps two copies of
 * its parameters.
 *
 * The program is written per rank in terms of its two "phases": for r < p/2 phase 0 is path 0
 * (stage r, micro-batches from 0) and phase 1 is path 1 (stage 2p-1-r, from m/2); for
 * r >= p/2 it is the other way round, phase 0 being the reverse direction. With H = p/2,
 * h = min(r, p-1-r) (the "half rank": rank r's position on its phase-0 path), C = m/2 (the
 * reference's "chunks" per direction: chunk i of a phase is that phase's i-th micro-batch),
 * every rank runs:
 *
 *   step 1: 2(H-h-1) x  F0
 *   step 2: h+1      x  F0, F1
 *   step 3: H-h-1    x  B1(zb), W, F1
 *   step 4: C-2H+h+1 x  F0&B1, F1&B0     (on the middle ranks, h = H-1, the first F0&B1 is
 *                                          not fused: F0, then B1; it shrinks the bubble)
 *   step 5: H-h-1    x  B1, F1&B0
 *   step 6: h+1      x  B1, B0           (zero-bubble backwards from iteration (h+1)/2 on:
 *                                          from its B1 when h is odd, from its B0 when even)
 *   step 7: H-h-1    x  W, B0(zb)
 *   step 8: h+1      x  W
 *
 * Fx/Bx is the next forward/backward of phase x (each phase runs its micro-batches in order);
 * "A&B" is one fused action (PS_FB, the backward part a full B); "B(zb)" is an input-gradient
 * backward I whose weight gradient is deferred into a FIFO, and W runs the oldest deferred
 * one. The deferred Ws are exactly the rank's I actions in list order, so the FIFO is a
 * cursor over the rank's own list, with no memory of its own. The reference asserts p even,
 * m even and m >= 2p (step 4 must run at least once on every rank: C-2H+h+1 >= 1 for h = 0);
 * the registry row states the same. With F&B = f+b+w the published bubble (p/2-1)(F&B+b+w-3w)
 * holds when f = b and w <= b (the general form for other ratios is in tests/test-sweep.c);
 * rank 0's activations peak at p+1 (tests/test-sweep.c, tests/test-fused.c).
 *
 * The program's own invariants (step 4 runs, every W finds its I, each phase runs C forwards
 * and C backwards) hold by construction under the registry's check. They are checked anyway:
 * a broken one is PS_EINTERNAL with a message naming it, never an abort.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <stdio.h>

/* The rank's running state: next forward and backward per phase, the FIFO cursor. */
typedef struct dual_state {
    ps_schedule *s;
    const ps__dual_rank *d;
    int32_t r;
    int32_t f[2], b[2];
    int64_t wcur;   /* list index from which to look for the oldest I without its W */
    int empty_pops; /* Ws asked for with no I left to take (0 by construction) */
} dual_state;

static void fwd(dual_state *st, int k)
{
    ps__emit(st->s, st->r, PS_F, st->d->stage[k], st->d->mb0[k] + st->f[k]++);
}

static void bwd(dual_state *st, int k, int zb)
{
    ps__emit(st->s, st->r, zb ? PS_I : PS_B, st->d->stage[k], st->d->mb0[k] + st->b[k]++);
}

static void fused(dual_state *st, int fk, int bk)
{
    const ps__dual_rank *d = st->d;
    ps__emit_fb(st->s, st->r, d->stage[fk], d->mb0[fk] + st->f[fk]++, PS_B, d->stage[bk],
                d->mb0[bk] + st->b[bk]++);
}

/* W: the weight gradient of the oldest I on the rank's list not yet followed by its W. The
 * program never pops an empty queue; if it did, the W is left out and counted, and
 * ps__dual_emit() reports it once the rank is done. */
static void weight(dual_state *st)
{
    const ps_action *a = st->s->acts + st->s->off[st->r];
    int64_t n = st->s->len[st->r];
    while (st->wcur < n && a[st->wcur].kind != PS_I)
        st->wcur++;
    if (st->wcur == n) {
        st->empty_pops++;
        return;
    }
    ps__emit(st->s, st->r, PS_W, a[st->wcur].stage, a[st->wcur].mb);
    st->wcur++;
}

/* The program's invariants after the rank's list is written (see the comment at the top). */
static int check_rank(const dual_state *st)
{
    const ps__dual_rank *d = st->d;
    if (st->empty_pops)
        return ps__seterr(st->s->err, PS_EINTERNAL,
                          "internal invariant broken on rank %d: %d W found no I whose weight "
                          "gradient it could run (H=%d, h=%d, C=%d)",
                          st->r, st->empty_pops, d->H, d->h, d->C);
    if (st->f[0] != d->C || st->f[1] != d->C || st->b[0] != d->C || st->b[1] != d->C)
        return ps__seterr(st->s->err, PS_EINTERNAL,
                          "internal invariant broken on rank %d: phases 0 and 1 ran %d and %d "
                          "forwards, %d and %d backwards, not C=%d each (H=%d, h=%d)",
                          st->r, st->f[0], st->f[1], st->b[0], st->b[1], d->C, d->H, d->h);
    return 0;
}

int ps__dual_emit(ps_schedule *s, int32_t r, const ps__dual_rank *d)
{
    dual_state st = {s, d, r, {0, 0}, {0, 0}, s->len[r], 0};
    int32_t H = d->H, h = d->h;
    int32_t side = H - h - 1; /* steps 1, 3, 5 and 7 run on the ranks off the middle */
    int64_t steady = (int64_t)d->C - 2 * H + h + 1;
    if (steady < 1)
        return ps__seterr(s->err, PS_EINTERNAL,
                          "internal invariant broken on rank %d: step 4 would run C-2H+h+1 = "
                          "%lld times, not at least once (H=%d, h=%d, C=%d)",
                          r, (long long)steady, H, h, d->C);
    for (int32_t i = 0; i < 2 * side; i++)
        fwd(&st, 0);
    for (int32_t i = 0; i <= h; i++) {
        fwd(&st, 0);
        fwd(&st, 1);
    }
    for (int32_t i = 0; i < side; i++) {
        bwd(&st, 1, 1);
        weight(&st);
        fwd(&st, 1);
    }
    for (int64_t i = 0; i < steady; i++) {
        if (i == 0 && h == H - 1) {
            fwd(&st, 0);
            bwd(&st, 1, 0);
        } else {
            fused(&st, 0, 1);
        }
        fused(&st, 1, 0);
    }
    for (int32_t i = 0; i < side; i++) {
        bwd(&st, 1, 0);
        fused(&st, 1, 0);
    }
    int zb = 0;
    for (int32_t i = 0; i <= h; i++) {
        if (i == (h + 1) / 2 && h % 2 == 1)
            zb = 1;
        bwd(&st, 1, zb);
        if (i == (h + 1) / 2 && h % 2 == 0)
            zb = 1;
        bwd(&st, 0, zb);
    }
    for (int32_t i = 0; i < side; i++) {
        weight(&st);
        bwd(&st, 0, 1);
    }
    for (int32_t i = 0; i <= h; i++)
        weight(&st);
    return check_rank(&st);
}

int ps__dualpipe_check(const ps__params *p, char *why)
{
    if (p->p % 2 || p->m % 2 || p->m < 2 * p->p) {
        snprintf(why, PS__ERRLEN,
                 "dualpipe needs an even pp, an even m and m >= 2 pp (every rank's main step "
                 "runs at least once); got pp=%d, m=%d",
                 p->p, p->m);
        return -1;
    }
    return 0;
}

int ps__dualpipe_generate(ps_schedule *s, const ps__params *p)
{
    int32_t pp = p->p, H = pp / 2;
    for (int32_t r = 0; r < pp; r++) {
        /* Phase 0 is path 0 on the first half of the ranks, path 1 on the second. */
        int first = r < H;
        int32_t st0 = r, st1 = 2 * pp - 1 - r; /* rank r's stage on path 0, on path 1 */
        ps__dual_rank d;
        d.H = H;
        d.h = first ? r : pp - 1 - r;
        d.C = p->m / 2;
        d.stage[0] = first ? st0 : st1;
        d.stage[1] = first ? st1 : st0;
        d.mb0[0] = first ? 0 : d.C;
        d.mb0[1] = first ? d.C : 0;
        int rc = ps__dual_emit(s, r, &d);
        if (rc)
            return rc;
    }
    return 0;
}
