/*
 * The two-stream machine that turns orders into times, and the list scheduler built on it.
 *
 * Each stream runs its order one operation at a time; an operation starts when its stream is
 * free and its predecessors have ended. While the communication stream is busy, compute runs
 * (1 + slowdown) times slower (ps_moe_model.slowdown), so the clock moves from one end of an
 * operation to the next and the running compute operation keeps its unstretched work left.
 *
 * The list scheduler is the same machine with one change: a free stream takes the ready
 * operation of highest priority from the rest of its order instead of the next one, and moves
 * it there, so the order it leaves behind is the schedule. Sharing the machine keeps the
 * schedules and their times consistent by construction.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <math.h>
#include <string.h>

/* 1 when node k's predecessors have ended (and its extra edge, with use_x). */
static inline int ready(const ps_plan *pl, int32_t k, int use_x)
{
    const ps__plan_node *x = &pl->n[k];
    for (int i = 0; i < x->ndep; i++)
        if (!pl->fin[x->dep[i]])
            return 0;
    return !(use_x && x->xdep >= 0 && !pl->fin[x->xdep]);
}

/*
 * The list scheduler's choice among o[at .. len): the ready operation of highest priority
 * (with prefer_feed, those feeding the communication stream first; the earliest on ties),
 * moved to o[at]. 0 when none is ready.
 */
static int take_best(const ps_plan *pl, int32_t *o, size_t at, size_t len, int use_x,
                     int prefer_feed)
{
    size_t pick = len;
    for (size_t q = at; q < len; q++) {
        int32_t k = o[q];
        if (!ready(pl, k, use_x))
            continue;
        if (pick == len) {
            pick = q;
            continue;
        }
        const ps__plan_node *a = &pl->n[k], *b = &pl->n[o[pick]];
        int af = prefer_feed && a->feeds, bf = prefer_feed && b->feeds;
        if (af > bf || (af == bf && a->prio > b->prio + 1e-12))
            pick = q;
    }
    if (pick == len)
        return 0;
    int32_t k = o[pick];
    memmove(&o[at + 1], &o[at], (pick - at) * sizeof(int32_t));
    o[at] = k;
    return 1;
}

/*
 * Times of the orders o[0] (compute) and o[1] (communication) into st/en. Returns the
 * makespan, -1 when the orders contradict the dependencies (both streams wait and work is
 * left), or -2 as soon as the clock passes limit (the makespan can only be larger; st/en are
 * then partly written). With greedy set, the orders are built instead (take_best()).
 *
 * With record, the state at the start of the first turn at which each stream stands idle at
 * each place is kept in cp, and the finishing operations in fin_order. With from, the timing
 * starts in that state instead of at 0: the finished operations are the first from->nfin of
 * fin_order, and the times so far those of the recorded timing (cst, cen).
 *
 * cur[s] is the operation stream s runs (-1: idle) and i[s] its place in the order; rem is
 * the unstretched work left of the compute operation, end1 the end of the communication one.
 * This is the planner's hot loop (the local search times every move), so its three phases
 * stay in one function: as helpers over a state struct, gcc 12 kept part of the state on the
 * stack and small steps measured about 5% slower.
 */
static double run(ps_plan *pl, int32_t *o[2], const size_t len[2], int use_x, int greedy,
                  int prefer_feed, double limit, int record, const ps__plan_state *from)
{
    const double slow = 1.0 + pl->slowdown;
    size_t i[2] = {0, 0}, nfin = 0, next[2] = {0, 0};
    int32_t cur[2] = {-1, -1};
    double rem = 0, end1 = 0, t = 0, makespan = 0;
    memset(pl->fin, 0, pl->nn);
    if (from) {
        t = from->t, rem = from->rem, end1 = from->end1, makespan = from->makespan;
        for (int s = 0; s < 2; s++)
            cur[s] = from->cur[s], i[s] = from->i[s];
        for (size_t q = 0; q < from->nfin; q++)
            pl->fin[pl->fin_order[q]] = 1;
        memcpy(pl->st, pl->cst, pl->nn * sizeof(double));
        memcpy(pl->en, pl->cen, pl->nn * sizeof(double));
    }
    for (;;) {
        if (record)
            for (int s = 0; s < 2; s++)
                if (cur[s] < 0 && i[s] < len[s] && i[s] == next[s]) {
                    ps__plan_state *c = &pl->cp[s][next[s]++];
                    c->t = t, c->rem = rem, c->end1 = end1, c->makespan = makespan;
                    c->cur[0] = cur[0], c->cur[1] = cur[1], c->i[0] = i[0], c->i[1] = i[1];
                    c->nfin = nfin;
                }
        /* Start the next operation of every idle stream whose next operation is ready. */
        for (int s = 0; s < 2; s++) {
            if (cur[s] >= 0 || i[s] >= len[s])
                continue;
            if (greedy) {
                if (!take_best(pl, o[s], i[s], len[s], use_x, prefer_feed))
                    continue;
            } else if (!ready(pl, o[s][i[s]], use_x)) {
                continue;
            }
            int32_t k = o[s][i[s]];
            cur[s] = k;
            pl->st[k] = t;
            if (s == 0)
                rem = pl->n[k].dur;
            else
                end1 = t + pl->n[k].dur;
        }
        if (cur[0] < 0 && cur[1] < 0)
            return i[0] == len[0] && i[1] == len[1] ? makespan : -1.0;
        /* Move the clock to the next end; compute ran slow times slower while communication ran. */
        double t0 = INFINITY, t1 = cur[1] >= 0 ? end1 : INFINITY;
        if (cur[0] >= 0)
            t0 = t + rem * (cur[1] >= 0 ? slow : 1.0);
        double tn = t0 < t1 ? t0 : t1;
        if (cur[0] >= 0)
            rem -= (tn - t) / (cur[1] >= 0 ? slow : 1.0);
        t = tn;
        /* Finish what ends now (both streams when they end together). */
        if (cur[1] >= 0 && t1 <= tn) {
            pl->en[cur[1]] = t;
            pl->fin[cur[1]] = 1;
            if (record)
                pl->fin_order[nfin++] = cur[1];
            cur[1] = -1;
            i[1]++;
        }
        if (cur[0] >= 0 && t0 <= tn) {
            pl->en[cur[0]] = t;
            pl->fin[cur[0]] = 1;
            if (record)
                pl->fin_order[nfin++] = cur[0];
            cur[0] = -1;
            i[0]++;
        }
        if (t > makespan)
            makespan = t;
        if (makespan > limit)
            return -2.0;
    }
}

double ps__list_sched_time(ps_plan *pl, int use_x, double limit)
{
    return run(pl, pl->ord, pl->len, use_x, 0, 0, limit, 0, NULL);
}

double ps__list_sched_record(ps_plan *pl)
{
    double d = run(pl, pl->ord, pl->len, 0, 0, 0, INFINITY, 1, NULL);
    memcpy(pl->cst, pl->st, pl->nn * sizeof(double));
    memcpy(pl->cen, pl->en, pl->nn * sizeof(double));
    return d;
}

double ps__list_sched_resume(ps_plan *pl, int s, size_t p0, double limit)
{
    return run(pl, pl->ord, pl->len, 0, 0, 0, limit, 0, &pl->cp[s][p0]);
}

double ps__list_sched_build(ps_plan *pl, int prefer_feed)
{
    return run(pl, pl->ord, pl->len, 0, 1, prefer_feed, INFINITY, 0, NULL);
}
