/*
 * Adaptive Pipe (Pangu Ultra MoE; the public stand-ins are MindSpeed's --moe-fb-overlap and
 * Megatron's combined 1F1B): interleaved 1F1B in which every steady-phase step is one fused
 * forward-backward pair of two different micro-batches, so that the overlap planner can hide
 * each one's communication under the other's computation (reference/adaptive_pipe.md 4.2 and
 * 8 item 1, reference/schedules.md 4.2 and 4.3).
 *
 * Loop placement, v chunks per rank, Megatron's schedule table with group size G = p (the
 * table iterator and the acceptance rule of interleaved.c). Rank r runs
 *   warm-up:   W_r = 2(p-r-1) + (v-1)G + delta forwards (table entries 0..W_r-1), capped at m*v;
 *   steady:    for k = 0.. m*v-W_r-1, one fused action FB(forward of entry k+W_r, backward of
 *              entry k), the backward taking the mirrored chunk v-1-chunk as in interleaved.c;
 *   cool-down: the remaining W_r backwards alone.
 * delta (extra_warmup, default 1) is Megatron's "+1" that makes the pair independent: entries
 * k and k+W_r with W_r > (v-1)G never name the same micro-batch (two entries of one micro-batch
 * lie in one group, at most (v-1) times the group size apart), so with delta >= 1 every pair is
 * fused. With delta = 0 they coincide on the last rank only, where such a pair is the forward
 * and the backward of one micro-batch on the last stage (every step when v = 1; one step per
 * micro-batch when v > 1): a backward cannot run together with its own forward, so that pair
 * is not fused but runs as F then B, interleaved 1F1B's own step. A larger delta adds warm-up
 * forwards, hence activation memory; with the default pair cost it leaves the makespan as is.
 *
 * With v = 1 (combined 1F1B) the warm-up keeps the factor 2, 2(p-r-1) + delta, unlike 1F1B's
 * p-r-1: fusing ties each steady forward to the arrival of its partner's gradient, and with
 * 1F1B's warm-up the next rank then starves (p = 2, m = 3, f = b = w = 1: 15 instead of 12).
 * With p = v = 1 it is Megatron's no-pipelining path: F(0), then F(i+1)&B(i), then B(m-1).
 *
 * With a fused pair costing f+b+w (the default), the makespan is exactly interleaved's,
 * (m v + p - 1)(f+b+w), the bubble (p-1)(f+b+w), whatever delta, and rank 0 holds at most
 * min(2(p-1) + (v-1)p + 1 + delta, m v) chunk activations (tests/test-sweep.c). A cheaper
 * pair (the overlap planner's F&B) shortens every steady step.
 *
 * split_backward: every cool-down backward becomes an I followed at once by its W. The input
 * gradient leaves w earlier and the W takes the place the rest of the B had, so no action ends
 * later than without the split (for any costs where I and W together cost a B), and the
 * gradient chain of the cool-down, p ranks long, runs on I alone. Deferring the Ws further does
 * not pay here: over pp 1..8 x vpp 1..4 x m 1..32 and the five cost ratios of the sweep, every
 * fixed lag tried (1, 2, 4, r, p-1-r, all at the end, ZB-H1 style) was slower than this at
 * some point and faster at none, and a pass that moved each W into the first later idle gap of
 * the simulated timeline where it fits found nothing to gain: the cool-down's idle comes
 * before its Ws can run. Measured gain over no split on that grid (delta = 1, c = 0): the
 * makespan drops by (p-2)w for p >= 2 (by (p-1)w when m = v = 1), never rises; mean gain 3.2% of
 * the makespan at f = b = w = 1 (19% of the bubble; p=8 v=2 m=32: 213 -> 207, p=16 v=2 m=64: 429 ->
 * 415), 2.4% at f,b,w = 1,2,1, 1.4% at 2,1,0.5, 1.1% at 0.75,0.25,0.125 and 3.2% at 3,1,2.
 * The split can be slower only where an I and a W together cost more than the B: with a MoE
 * model a full backward hides the all-to-all of its dispatch backward under the expert dW, an
 * I alone cannot (docs/examples/pangu-ultra-moe-718b.json runs about 2% longer with the split).
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <stdio.h>

int ps__adaptive_check(const ps__params *p, char *why)
{
    if (ps__interleaved_table_check(p, why) == 0)
        return 0;
    char inner[PS__ERRLEN];
    snprintf(inner, sizeof inner, "%s", why);
    snprintf(why, PS__ERRLEN, "adaptive runs interleaved's table: %.4000s", inner);
    return -1;
}

int ps__adaptive_generate(ps_schedule *s, const ps__params *p)
{
    /* interleaved's walk with the factor 2 also for v = 1, delta more warm-up forwards, fused
     * steady steps and, when asked, split cool-down backwards; with delta >= 1 the two
     * micro-batches of a steady step always differ (see above) */
    int32_t G = p->v > 1 ? p->group : p->m;
    ps__interleaved_walk(s, p, G, 2, (int64_t)(p->v - 1) * G + p->delta, 1, p->split);
    return 0;
}
