/*
 * The choice of orders per planner method: every candidate order is timed and the best one
 * is kept (shortest step, then least exposed all-to-all). SERIAL needs no choice (order.c).
 *
 *   MINDSPEED, MEGATRON  their fixed fused order (order.c); a single chunk (warm-up,
 *                        cool-down, W) has no pair to fuse and takes the natural order, which
 *                        is self-overlap: the shared expert hides the dispatch, shared dX
 *                        hides combine_b, the weight gradients hide dispatch_b;
 *   ADAPTIVE             the best of the natural order, both fixed orders and two list
 *                        schedules (critical-path priority, with and without a preference for
 *                        operations that feed the communication stream), then local search:
 *                        move one operation to another place in its stream's order while that
 *                        improves the plan.
 *
 * The local search is the expensive part (every move is timed again), so it is bounded: a
 * window of places per move, a number of passes, a step size beyond which the constructed plan
 * is kept, and it is skipped when the best plan is provably optimal already.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <string.h>

#define SEARCH_MAX_OPS 4096 /* larger steps keep the best constructed plan */
#define SEARCH_WINDOW 24    /* how far an operation moves in one local-search step */
#define SEARCH_PASSES 50

/* 1 when (d, e) beats (bd, be): shorter, or as long and less exposed (relative tolerance). */
static int better(double d, double e, double bd, double be)
{
    double tol = 1e-9 * (bd > 1 ? bd : 1);
    return d < bd - tol || (d <= bd + tol && e < be - tol);
}

typedef struct cand {
    double dur, exp;
} cand;

/* Evaluates the working orders; keeps them as the best when better. */
static cand try_orders(ps_plan *pl, int use_x, cand *best)
{
    cand c = {-1, 0};
    double d = ps__list_sched_time(pl, use_x);
    if (d < 0)
        return c;
    ps_plan_stats st;
    ps__plan_exposure(pl, pl->ord, pl->len, pl->st, pl->en, &st);
    c.dur = d;
    c.exp = st.exposed;
    if (best->dur < 0 || better(c.dur, c.exp, best->dur, best->exp)) {
        *best = c;
        for (int s = 0; s < 2; s++)
            memcpy(pl->best[s], pl->ord[s], pl->len[s] * sizeof(int32_t));
        memcpy(pl->bst, pl->st, pl->nn * sizeof(double));
        memcpy(pl->ben, pl->en, pl->nn * sizeof(double));
    }
    return c;
}

/* Local search: move one operation within its stream while the plan improves. */
static void local_search(ps_plan *pl, cand *best)
{
    for (int s = 0; s < 2; s++)
        memcpy(pl->ord[s], pl->best[s], pl->len[s] * sizeof(int32_t));
    for (int pass = 0; pass < SEARCH_PASSES; pass++) {
        int improved = 0;
        for (int s = 0; s < 2; s++) {
            size_t n = pl->len[s];
            for (size_t a = 0; a < n; a++) {
                size_t lo = a > SEARCH_WINDOW ? a - SEARCH_WINDOW : 0;
                size_t hi = a + SEARCH_WINDOW < n ? a + SEARCH_WINDOW : n - 1;
                for (size_t b = lo; b <= hi; b++) {
                    if (b == a)
                        continue;
                    int32_t *o = pl->ord[s];
                    int32_t k = o[a];
                    /* moving k before one of its own predecessors cannot work */
                    if (b < a) {
                        int bad = 0;
                        for (size_t q = b; q < a && !bad; q++)
                            for (int d = 0; d < pl->n[k].ndep; d++)
                                bad |= pl->n[k].dep[d] == o[q];
                        if (bad)
                            continue;
                        memmove(&o[b + 1], &o[b], (a - b) * sizeof(int32_t));
                    } else {
                        memmove(&o[a], &o[a + 1], (b - a) * sizeof(int32_t));
                    }
                    o[b] = k;
                    cand before = *best;
                    try_orders(pl, 0, best);
                    if (best->dur != before.dur || best->exp != before.exp) {
                        improved = 1;
                        a = b;
                        break;
                    }
                    memcpy(o, pl->best[s], n * sizeof(int32_t));
                }
            }
        }
        if (!improved)
            break;
    }
}

/*
 * 1 when best provably cannot be improved: it lasts as long as one stream's total work (the
 * compute stream needs at least its unstretched sum) and exposes no more all-to-all than the
 * compute could not cover. The local search is skipped then.
 */
static int optimal(const ps_plan *pl, const cand *best)
{
    double comp = 0, comm = 0, a2a = 0;
    for (size_t k = 0; k < pl->nn; k++) {
        const ps__plan_node *x = &pl->n[k];
        if (x->stream) {
            comm += x->dur;
            a2a += x->op == PS_OP_P2P ? 0 : x->dur;
        } else {
            comp += x->dur;
        }
    }
    double lb = comp > comm ? comp : comm, tol = 1e-9 * (lb > 1 ? lb : 1);
    /* while communication slows compute down, stretched compute may cover more: only a
     * plan that exposes nothing is then known to be best */
    double least_exposed = a2a > comp && pl->slowdown == 0 ? a2a - comp : 0;
    return best->dur <= lb + tol && best->exp <= least_exposed + tol;
}

int ps__search_orders(ps_plan *pl, int method)
{
    int fused = pl->nl[0] > 0 && pl->nl[1] > 0;
    cand best = {-1, 0};
    if (method == PS_PLANNER_ADAPTIVE || !fused) {
        ps__order_natural(pl);
        try_orders(pl, 0, &best);
    }
    if (fused && (method == PS_PLANNER_ADAPTIVE || method == PS_PLANNER_MINDSPEED)) {
        ps__order_fused(pl, 0);
        try_orders(pl, 0, &best);
    }
    if (fused && (method == PS_PLANNER_ADAPTIVE || method == PS_PLANNER_MEGATRON)) {
        ps__order_fused(pl, 1);
        try_orders(pl, 1, &best);
        for (size_t k = 0; k < pl->nn; k++)
            pl->n[k].xdep = -1;
    }
    if (method == PS_PLANNER_ADAPTIVE) {
        for (int feed = 0; feed < 2; feed++) {
            ps__order_natural(pl);
            if (ps__list_sched_build(pl, feed) >= 0)
                try_orders(pl, 0, &best);
        }
        if (pl->nn <= SEARCH_MAX_OPS && !optimal(pl, &best))
            local_search(pl, &best);
    }
    return best.dur < 0 ? PS_EINVAL : 0;
}
