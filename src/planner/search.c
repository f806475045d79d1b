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
 * window of places per move, a number of passes, a budget of operations timed in all, a step
 * size beyond which the constructed plan is kept, and it is skipped when the best plan is
 * provably optimal already.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <math.h>
#include <string.h>

#define SEARCH_MAX_OPS 4096 /* larger steps keep the best constructed plan */
#define SEARCH_WINDOW 24    /* how far an operation moves in one local-search step */
#define SEARCH_PASSES 50
/* Operations timed in all by one local search (pl->timed: a move times the step from where it
 * parts from the best until it cannot beat it or meets the best's timing again, a move the
 * ancestor sets refuse times nothing, a new best is timed whole), about a second of work. Before
 * the resumed and cut-short timings, steps just under SEARCH_MAX_OPS that kept improving took tens
 * of seconds (300 layers of deepseek-v3 on one stage: 12 s); now such a step times about 7e7
 * operations, and no example or test reaches the bound. */
#define SEARCH_BUDGET ((size_t)1 << 27)

/* The duration and exposed all-to-all of a candidate; dur < 0: none yet. */
typedef struct cand {
    double dur, exp;
} cand;

/* The tolerance of a comparison with a best plan of duration bd. */
static double tolerance(double bd)
{
    return 1e-9 * (bd > 1 ? bd : 1);
}

/* 1 when (d, e) beats (bd, be): shorter, or as long and less exposed (relative tolerance). */
static int better(double d, double e, double bd, double be)
{
    double tol = tolerance(bd);
    return d < bd - tol || (d <= bd + tol && e < be - tol);
}

/* The longest a candidate may last and still beat *best (see better()): the timing of a
 * longer one stops there, and its exposure is not measured (most moves of the local search). */
static double limit_of(const cand *best)
{
    return best->dur < 0 ? INFINITY : best->dur + tolerance(best->dur);
}

/* Keeps the working orders and their times, of duration d (< 0: none), as the best when they
 * beat *best. */
static void consider(ps_plan *pl, double d, cand *best)
{
    if (d < 0)
        return;
    ps_plan_stats st;
    ps__plan_exposure(pl, pl->ord, pl->len, pl->st, pl->en, &st);
    cand c = {d, st.exposed};
    if (best->dur < 0 || better(c.dur, c.exp, best->dur, best->exp)) {
        *best = c;
        for (int s = 0; s < 2; s++)
            memcpy(pl->best[s], pl->ord[s], pl->len[s] * sizeof(int32_t));
        memcpy(pl->bst, pl->st, pl->nn * sizeof(double));
        memcpy(pl->ben, pl->en, pl->nn * sizeof(double));
    }
}

/* Times the working orders (use_x: with the fixed order's extra edges) and considers them. */
static void try_orders(ps_plan *pl, int use_x, cand *best)
{
    consider(pl, ps__list_sched_time(pl, use_x, limit_of(best)), best);
}

/* The fixed fused order of MindSpeed or Megatron as a candidate; Megatron's extra edges hold
 * for its own timing only. */
static void try_fused(ps_plan *pl, int megatron, cand *best)
{
    ps__order_fused(pl, megatron);
    try_orders(pl, megatron, best);
    if (megatron)
        for (size_t k = 0; k < pl->nn; k++)
            pl->n[k].xdep = -1;
}

/* 1 when node j is an ancestor of node k (a predecessor, or one of its predecessors'
 * ancestors). Needs pl->anc. */
static inline int is_ancestor(const ps_plan *pl, int32_t j, int32_t k)
{
    return (int)(pl->anc[(size_t)k * pl->anc_words + (size_t)j / 64] >> (j % 64) & 1);
}

/* 1 when one of the n operations at o is an ancestor of node k (with pl->anc; else a direct
 * predecessor). */
static int has_pred(const ps_plan *pl, int32_t k, const int32_t *o, size_t n)
{
    int bad = 0;
    for (size_t q = 0; q < n && !bad; q++)
        if (pl->anc)
            bad = is_ancestor(pl, o[q], k);
        else
            for (int d = 0; d < pl->n[k].ndep; d++)
                bad |= pl->n[k].dep[d] == o[q];
    return bad;
}

/* 1 when node k is an ancestor (with pl->anc; else a direct predecessor) of one of the n
 * operations at o. */
static int has_succ(const ps_plan *pl, int32_t k, const int32_t *o, size_t n)
{
    int bad = 0;
    for (size_t q = 0; q < n && !bad; q++)
        if (pl->anc)
            bad = is_ancestor(pl, k, o[q]);
        else
            for (int d = 0; d < pl->n[o[q]].ndep; d++)
                bad |= pl->n[o[q]].dep[d] == k;
    return bad;
}

/*
 * The ancestor sets of the step's nodes into pl->anc (nodes are created in a topological
 * order, so one pass in id order: a node's set is its predecessors and their sets). A move
 * that puts an operation before one of its ancestors in its stream's order, or after one of
 * its descendants, deadlocks: the stream waits at it for an operation queued behind it. The
 * timing would run until it finds the deadlock (both streams waiting, -1) or passes the
 * limit (-2), and the move would be refused either way; with the sets the local search
 * refuses it without timing it. Where the sets cannot be had (memory), pl->anc stays NULL
 * and only direct predecessors are checked, as before.
 */
void ps__plan_ancestors(ps_plan *pl)
{
    size_t w = (pl->nn + 63) / 64, need = pl->nn * w;
    if (need > pl->anc_cap) {
        ps__free(&pl->al, pl->anc, pl->anc_cap, sizeof *pl->anc);
        pl->anc_cap = 0;
        pl->anc = ps__alloc(&pl->al, need, sizeof *pl->anc);
        if (!pl->anc)
            return;
        pl->anc_cap = need;
    }
    pl->anc_words = w;
    for (size_t k = 0; k < pl->nn; k++) {
        uint64_t *a = pl->anc + k * w;
        memset(a, 0, w * sizeof *a);
        for (int d = 0; d < pl->n[k].ndep; d++) {
            size_t j = (size_t)pl->n[k].dep[d];
            const uint64_t *b = pl->anc + j * w;
            for (size_t q = 0; q < w; q++)
                a[q] |= b[q];
            a[j / 64] |= (uint64_t)1 << (j % 64);
        }
    }
}

/* Margin of the estimate of a change of exposure (less_exposed()), relative to the best's
 * duration (at least 1): the estimate and the exposure are sums of the same times in another
 * order, whose rounding differs by about the operation count times 1e-16 of the duration. */
#define EXPOSED_MARGIN 1e-10

/*
 * Whether a timing that met the recorded best one (ps__list_sched_resume(), pl->met), and so
 * lasts as long, may expose less all-to-all than *best by more than the tolerance, which is
 * what it takes to beat it (better()). Its exposure is the best's plus the change over the
 * places where the two differ (ps__plan_exposure_part(), from the checkpoint from to where
 * they met): a few operations instead of the whole step. 0 only when that change, rounding
 * and all, cannot reach the tolerance; then consider() would have refused it too.
 */
static int less_exposed(const ps_plan *pl, const ps__plan_state *from, const cand *best)
{
    double tol = tolerance(best->dur);
    if (best->exp - tol <= 0) /* an exposure is never below 0 */
        return 0;
    const size_t lo[2] = {from->i[0], from->i[1]};
    double delta = ps__plan_exposure_part(pl, pl->ord, lo, pl->met_at, pl->st, pl->en) -
                   ps__plan_exposure_part(pl, pl->best, lo, pl->met_at, pl->bst, pl->ben);
    return delta <= -tol + EXPOSED_MARGIN * (best->dur > 1 ? best->dur : 1);
}

/*
 * Moves the operation at place a of stream s's working order to place b and times the
 * result: from the checkpoint where it parts from the best orders (min(a, b)) when *rec says
 * the best orders' timing is recorded, else from the start. Returns 1 when that made it the
 * best plan, recording the new best's timing; otherwise restores the order from the best
 * (which the working order equals before every move) and returns 0.
 */
static int try_move(ps_plan *pl, int s, size_t a, size_t b, cand *best, int *rec)
{
    int32_t *o = pl->ord[s];
    int32_t k = o[a];
    if (b < a) {
        /* moving k before one of its own ancestors cannot work */
        if (has_pred(pl, k, &o[b], a - b))
            return 0;
        memmove(&o[b + 1], &o[b], (a - b) * sizeof(int32_t));
    } else {
        /* nor after one of its own descendants: the timing would find them stuck (-1) */
        if (has_succ(pl, k, &o[a + 1], b - a))
            return 0;
        memmove(&o[a], &o[a + 1], (b - a) * sizeof(int32_t));
    }
    o[b] = k;
    cand before = *best;
    double limit = limit_of(best);
    size_t p0 = a < b ? a : b;
    double d = *rec ? ps__list_sched_resume(pl, s, p0, (a < b ? b : a) + 1, limit)
                    : ps__list_sched_time(pl, 0, limit);
    if (*rec && pl->met && d == best->dur && !less_exposed(pl, &pl->cp[s][p0], best)) {
        memcpy(o, pl->best[s], pl->len[s] * sizeof(int32_t));
        return 0;
    }
    consider(pl, d, best);
    if (best->dur != before.dur || best->exp != before.exp) {
        *rec = ps__list_sched_record(pl) >= 0; /* the working orders are the best now */
        return 1;
    }
    memcpy(o, pl->best[s], pl->len[s] * sizeof(int32_t));
    return 0;
}

/* One pass over stream s: each operation in turn tries the places within the window around
 * it and stays at the first that improves the plan; the pass goes on after that place.
 * Returns 1 when something moved. */
static int improve_stream(ps_plan *pl, int s, cand *best, int *rec)
{
    int improved = 0;
    size_t n = pl->len[s];
    for (size_t a = 0; a < n && pl->timed < SEARCH_BUDGET; a++) {
        size_t lo = a > SEARCH_WINDOW ? a - SEARCH_WINDOW : 0;
        size_t hi = a + SEARCH_WINDOW < n ? a + SEARCH_WINDOW : n - 1;
        for (size_t b = lo; b <= hi; b++) {
            if (b != a && try_move(pl, s, a, b, best, rec)) {
                improved = 1;
                a = b;
                break;
            }
        }
    }
    return improved;
}

/* Local search from the best orders: passes over both streams while one improves the plan.
 * A move changes its stream's order from one place on, so its timing starts from the best
 * orders' recorded state there: what comes before is the same, bit for bit. */
static void local_search(ps_plan *pl, cand *best)
{
    for (int s = 0; s < 2; s++)
        memcpy(pl->ord[s], pl->best[s], pl->len[s] * sizeof(int32_t));
    ps__plan_ancestors(pl);
    pl->timed = 0;
    int rec = ps__list_sched_record(pl) >= 0;
    for (int pass = 0; pass < SEARCH_PASSES && pl->timed < SEARCH_BUDGET; pass++) {
        int improved = 0;
        for (int s = 0; s < 2; s++)
            improved |= improve_stream(pl, s, best, &rec);
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

/* ADAPTIVE beyond the fixed orders: the two list schedules, then the local search. */
static void adapt(ps_plan *pl, cand *best)
{
    for (int feed = 0; feed < 2; feed++) {
        ps__order_natural(pl);
        if (ps__list_sched_build(pl, feed) >= 0)
            try_orders(pl, 0, best);
    }
    if (pl->nn <= SEARCH_MAX_OPS && !optimal(pl, best))
        local_search(pl, best);
}

int ps__search_orders(ps_plan *pl, int method)
{
    int fused = pl->nl[0] > 0 && pl->nl[1] > 0;
    int adaptive = method == PS_PLANNER_ADAPTIVE;
    cand best = {-1, 0};
    if (adaptive || !fused) {
        ps__order_natural(pl);
        try_orders(pl, 0, &best);
    }
    if (fused && (adaptive || method == PS_PLANNER_MINDSPEED))
        try_fused(pl, 0, &best);
    if (fused && (adaptive || method == PS_PLANNER_MEGATRON))
        try_fused(pl, 1, &best);
    if (adaptive)
        adapt(pl, &best);
    return best.dur < 0 ? PS_EINVAL : 0;
}
