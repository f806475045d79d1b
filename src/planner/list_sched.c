/*
 * The two-stream machine that turns orders into times, and the list scheduler built on it.
 *
 * Each stream runs its order one operation at a time; an operation starts when its stream is
 * free and its predecessors have ended. While the communication stream is busy, compute runs
 * (1 + slowdown) times slower (ps_moe_model.slowdown), so the clock moves from one end of an
 * operation to the next and the running compute operation keeps its unstretched work left.
 *
 * The list scheduler is the same machine with one change: a free stream takes the ready
 * operation of highest priority from the rest of its order instead of the next one, and puts
 * it next, so the order it leaves behind is the schedule. Sharing the machine keeps the
 * schedules and their times consistent by construction.
 *
 * The pick rule: with prefer_feed, operations feeding the communication stream first; then
 * the highest priority (the longest path to the end), priorities within 1e-12 of each other
 * counting as equal; then the earliest in the stream's order. Each stream keeps its ready
 * operations in a binary heap ordered by that rule, and an operation enters the heap when its
 * last predecessor ends (a count of unfinished predecessors per operation, decremented along
 * the successor lists), so a step of n operations is scheduled in O(n log n). The tolerance
 * is made a total order first: the priorities are sorted and those closer than 1e-12 to the
 * next lower one share its class (classes are ranked, the rank is the heap's key). Where no
 * class spans more than 1e-12 this picks exactly what the former linear scan picked (it kept
 * the first ready operation and replaced it by a later one only when that was more than 1e-12
 * higher); tests/test-plan.c keeps that scan and compares the two.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PRIO_TOL 1e-12
/* How far a lower bound on the makespan must pass the limit to stop a timing, relative to the
 * limit (at least 1): the bound and the clock are sums of the same durations in another
 * order, so they differ by rounding, at most a few operations' count times 1e-16 of the
 * makespan; this margin is 1e6 times more. */
#define CUT_MARGIN 1e-10

/* 1 when node k's predecessors have ended (and its extra edge, with use_x). */
static inline int ready(const ps_plan *pl, int32_t k, int use_x)
{
    const ps__plan_node *x = &pl->n[k];
    for (int i = 0; i < x->ndep; i++)
        if (!pl->fin[x->dep[i]])
            return 0;
    return !(use_x && x->xdep >= 0 && !pl->fin[x->xdep]);
}

/* ---- the list scheduler's state ------------------------------------------------------------- */

/* Views into the handle's workspace (pl->lsw, pl->lsort; plan.c sizes them with the nodes). */
typedef struct picker {
    const ps__plan_node *n;
    int prefer_feed;
    int32_t *cls;  /* rank of the node's priority class (higher = more urgent) */
    int32_t *pos;  /* place in its stream's order as given; -1 once taken */
    int32_t *pend; /* predecessors not ended yet */
    int32_t *soff; /* successors of k: succ[soff[k] .. soff[k+1]) */
    int32_t *succ;
    int32_t *sid;      /* the stream whose order holds the node, -1 none */
    int32_t *given[2]; /* the orders as given (pl->tmp) */
    int32_t *heap[2];
    size_t hn[2];
} picker;

static int cmp_prio(const void *a, const void *b)
{
    const ps__plan_prio *x = a, *y = b;
    if (x->prio != y->prio)
        return x->prio < y->prio ? -1 : 1;
    return (x->id > y->id) - (x->id < y->id);
}

/* 1 when node a goes before node b. */
static inline int before(const picker *w, int32_t a, int32_t b)
{
    if (w->prefer_feed && w->n[a].feeds != w->n[b].feeds)
        return w->n[a].feeds > w->n[b].feeds;
    if (w->cls[a] != w->cls[b])
        return w->cls[a] > w->cls[b];
    return w->pos[a] < w->pos[b];
}

static void heap_push(picker *w, int s, int32_t k)
{
    int32_t *h = w->heap[s];
    size_t i = w->hn[s]++;
    while (i > 0) {
        size_t up = (i - 1) / 2;
        if (!before(w, k, h[up]))
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = k;
}

static int32_t heap_pop(picker *w, int s)
{
    int32_t *h = w->heap[s];
    int32_t top = h[0], k = h[--w->hn[s]];
    size_t n = w->hn[s], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && before(w, h[c + 1], h[c]))
            c++;
        if (!before(w, h[c], k))
            break;
        h[i] = h[c];
        i = c;
    }
    if (n)
        h[i] = k;
    return top;
}

/* Priority classes, successor lists, predecessor counts and the first ready operations. */
static void picker_init(ps_plan *pl, picker *w, int32_t *o[2], const size_t len[2], int prefer_feed)
{
    size_t nn = pl->nn;
    int32_t *ws = pl->lsw;
    w->n = pl->n;
    w->prefer_feed = prefer_feed;
    w->cls = ws;
    w->pos = ws + nn;
    w->pend = ws + 2 * nn;
    w->sid = ws + 3 * nn;
    w->heap[0] = ws + 4 * nn;
    w->heap[1] = ws + 4 * nn + len[0];
    w->soff = ws + 5 * nn;
    w->succ = ws + 6 * nn + 1;
    w->hn[0] = w->hn[1] = 0;
    ps__plan_prio *sp = pl->lsort;
    for (size_t k = 0; k < nn; k++) {
        sp[k].prio = pl->n[k].prio;
        sp[k].id = (int32_t)k;
    }
    qsort(sp, nn, sizeof *sp, cmp_prio);
    int32_t c = 0;
    for (size_t q = 0; q < nn; q++) {
        if (q && sp[q].prio > sp[q - 1].prio + PRIO_TOL)
            c++;
        w->cls[sp[q].id] = c;
    }
    for (size_t k = 0; k <= nn; k++)
        w->soff[k] = 0;
    for (size_t k = 0; k < nn; k++) {
        w->pend[k] = pl->n[k].ndep;
        w->sid[k] = -1;
        for (int d = 0; d < pl->n[k].ndep; d++)
            w->soff[pl->n[k].dep[d] + 1]++;
    }
    for (size_t k = 0; k < nn; k++)
        w->soff[k + 1] += w->soff[k];
    for (size_t k = 0; k < nn; k++) /* soff[d] runs ahead while filling, then is restored */
        for (int d = 0; d < pl->n[k].ndep; d++)
            w->succ[w->soff[pl->n[k].dep[d]]++] = (int32_t)k;
    for (size_t k = nn; k > 0; k--)
        w->soff[k] = w->soff[k - 1];
    w->soff[0] = 0;
    for (int s = 0; s < 2; s++) {
        w->given[s] = pl->tmp[s];
        memcpy(w->given[s], o[s], len[s] * sizeof(int32_t));
        for (size_t q = 0; q < len[s]; q++) {
            w->pos[o[s][q]] = (int32_t)q;
            w->sid[o[s][q]] = s;
        }
    }
    for (int s = 0; s < 2; s++)
        for (size_t q = 0; q < len[s]; q++)
            if (w->pend[o[s][q]] == 0)
                heap_push(w, s, o[s][q]);
}

/* Node k ended: its successors whose last predecessor it was become ready. */
static void picker_ended(picker *w, int32_t k)
{
    for (int32_t e = w->soff[k]; e < w->soff[k + 1]; e++) {
        int32_t x = w->succ[e];
        if (--w->pend[x] == 0 && w->sid[x] >= 0)
            heap_push(w, w->sid[x], x);
    }
}

/* The next operation of stream s into o[s][at]; 0 when none is ready. */
static int picker_take(picker *w, int s, int32_t *o, size_t at)
{
    if (!w->hn[s])
        return 0;
    int32_t k = heap_pop(w, s);
    w->pos[k] = -1;
    o[at] = k;
    return 1;
}

/* After a stuck run: the operations never taken follow, in their given order. */
static void picker_rest(picker *w, int32_t *o[2], const size_t i[2], const size_t len[2])
{
    for (int s = 0; s < 2; s++) {
        size_t at = i[s];
        for (size_t q = 0; q < len[s] && at < len[s]; q++)
            if (w->pos[w->given[s][q]] >= 0)
                o[s][at++] = w->given[s][q];
    }
}

/*
 * Puts st, en and fin in the recorded timing's state after its first nfin finished
 * operations: the recorded times everywhere, the first nfin of fin_order finished. A resumed
 * timing (run() with from) changes only what it starts and finishes, which it lists in
 * dirty, so while nothing else has timed since (clean), undoing that list and moving the
 * finished prefix from fin_upto to nfin costs what the last timing timed, not the step's
 * size: the local search resumes thousands of times between two records.
 */
static void recorded_state(ps_plan *pl, size_t nfin)
{
    if (!pl->clean) {
        memset(pl->fin, 0, pl->nn);
        memcpy(pl->st, pl->cst, pl->nn * sizeof(double));
        memcpy(pl->en, pl->cen, pl->nn * sizeof(double));
        pl->fin_upto = 0;
        pl->clean = 1;
    } else {
        for (size_t q = 0; q < pl->ndirty; q++) {
            int32_t k = pl->dirty[q];
            pl->st[k] = pl->cst[k];
            pl->en[k] = pl->cen[k];
            pl->fin[k] = 0;
        }
    }
    pl->ndirty = 0;
    while (pl->fin_upto < nfin)
        pl->fin[pl->fin_order[pl->fin_upto++]] = 1;
    while (pl->fin_upto > nfin)
        pl->fin[pl->fin_order[--pl->fin_upto]] = 0;
}

/*
 * Times of the orders o[0] (compute) and o[1] (communication) into st/en. Returns the
 * makespan, -1 when the orders contradict the dependencies (both streams wait and work is
 * left), or -2 as soon as the makespan is known to pass limit (st/en are then partly
 * written). Known: the clock has passed it, or a stream's work left, run back to back from
 * now, would end past it (each stream runs one operation at a time, and compute runs no
 * faster than its unstretched durations); that bound passing limit by CUT_MARGIN is what
 * counts, so rounding cannot stop a timing whose makespan would not pass limit. The bound
 * stops most moves of the local search (search.c) soon after they part from the best orders
 * instead of at its end, where the clock passes the best. With a picker w, the orders are
 * built instead (picker_take(); use_x is 0 then).
 *
 * With record, the state at the start of the first turn at which each stream stands idle at
 * each place is kept in cp, and the finishing operations in fin_order. With from, the timing
 * starts in that state instead of at 0: the finished operations are the first from->nfin of
 * fin_order, and the times so far those of the recorded timing (cst, cen).
 *
 * With from, the orders equal the recorded ones except in places [from's place, sync_p) of
 * stream sync_s (a move of the local search permutes them). Once stream sync_s is past them,
 * the same operations have finished in both timings whenever both have reached the same
 * places; when the state of a turn then equals the recorded state at the same places (clock,
 * running operations, their work left or end), everything after is the recorded timing's, bit
 * for bit: the machine is deterministic, and st/en of what has not started yet still hold
 * the recorded times (recorded_state()). The timing stops there and returns the
 * recorded makespan, which is what it would have reached.
 *
 * cur[s] is the operation stream s runs (-1: idle) and i[s] its place in the order; rem is
 * the unstretched work left of the compute operation, end1 the end of the communication one.
 * This is the planner's hot loop (the local search times every move), so its three phases
 * stay in one function: as helpers over a state struct, gcc 12 kept part of the state on the
 * stack and small steps measured about 5% slower. It is inlined into its four callers, whose
 * constant arguments (record, from, w, use_x) remove the branches of the other modes:
 * pangu-ultra-moe-718b's tune space with tp 8 and cp 1 took 11.0 s instead of 13.0 on one
 * thread.
 */
PS__HOT double run(ps_plan *pl, int32_t *o[2], const size_t len[2], int use_x, picker *w,
                   double limit, int record, const ps__plan_state *from, int sync_s, size_t sync_p)
{
    const double slow = 1.0 + pl->slowdown;
    size_t i[2] = {0, 0}, nfin = 0, next[2] = {0, 0};
    int32_t cur[2] = {-1, -1};
    double rem = 0, end1 = 0, t = 0, makespan = 0, wait[2] = {0, 0};
    const double cut = limit + CUT_MARGIN * (limit > 1 ? limit : 1);
    pl->met = 0;
    if (from) {
        t = from->t, rem = from->rem, end1 = from->end1, makespan = from->makespan;
        for (int s = 0; s < 2; s++)
            cur[s] = from->cur[s], i[s] = from->i[s], wait[s] = from->wait[s];
        recorded_state(pl, from->nfin);
        for (int s = 0; s < 2; s++)
            if (cur[s] >= 0)
                pl->dirty[pl->ndirty++] = cur[s];
    } else {
        memset(pl->fin, 0, pl->nn);
        pl->clean = 0;
        for (int s = 0; s < 2; s++)
            for (size_t q = 0; q < len[s]; q++)
                wait[s] += pl->n[o[s][q]].dur;
    }
    const size_t i0 = i[0] + i[1];
    for (;;) {
        if (record)
            for (int s = 0; s < 2; s++)
                if (cur[s] < 0 && i[s] < len[s] && i[s] == next[s]) {
                    ps__plan_state *c = &pl->cp[s][next[s]++];
                    c->t = t, c->rem = rem, c->end1 = end1, c->makespan = makespan;
                    c->wait[0] = wait[0], c->wait[1] = wait[1];
                    c->cur[0] = cur[0], c->cur[1] = cur[1], c->i[0] = i[0], c->i[1] = i[1];
                    c->nfin = nfin;
                }
        if (from && i[sync_s] >= sync_p)
            for (int s = 0; s < 2; s++) {
                if (cur[s] >= 0 || i[s] >= len[s])
                    continue;
                const ps__plan_state *c = &pl->cp[s][i[s]];
                if (c->t == t && c->i[0] == i[0] && c->i[1] == i[1] && c->cur[0] == cur[0] &&
                    c->cur[1] == cur[1] && (cur[0] < 0 || c->rem == rem) &&
                    (cur[1] < 0 || c->end1 == end1)) {
                    pl->timed += i[0] + i[1] - i0;
                    pl->met = 1;
                    for (int r = 0; r < 2; r++)
                        pl->met_at[r] = i[r] + (cur[r] >= 0);
                    return pl->rec_makespan;
                }
            }
        /* Start the next operation of every idle stream whose next operation is ready. */
        for (int s = 0; s < 2; s++) {
            if (cur[s] >= 0 || i[s] >= len[s])
                continue;
            if (w) {
                if (!picker_take(w, s, o[s], i[s]))
                    continue;
            } else if (!ready(pl, o[s][i[s]], use_x)) {
                continue;
            }
            int32_t k = o[s][i[s]];
            cur[s] = k;
            pl->st[k] = t;
            wait[s] -= pl->n[k].dur;
            if (from)
                pl->dirty[pl->ndirty++] = k;
            if (s == 0)
                rem = pl->n[k].dur;
            else
                end1 = t + pl->n[k].dur;
        }
        if (cur[0] < 0 && cur[1] < 0) {
            pl->timed += i[0] + i[1] - i0;
            if (i[0] == len[0] && i[1] == len[1])
                return makespan;
            if (w)
                picker_rest(w, o, i, len);
            return -1.0;
        }
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
            if (w)
                picker_ended(w, cur[1]);
            cur[1] = -1;
            i[1]++;
        }
        if (cur[0] >= 0 && t0 <= tn) {
            pl->en[cur[0]] = t;
            pl->fin[cur[0]] = 1;
            if (record)
                pl->fin_order[nfin++] = cur[0];
            if (w)
                picker_ended(w, cur[0]);
            cur[0] = -1;
            i[0]++;
        }
        if (t > makespan)
            makespan = t;
        if (makespan > limit || t + wait[0] + (cur[0] >= 0 ? rem : 0) > cut ||
            (cur[1] >= 0 ? end1 : t) + wait[1] > cut) {
            pl->timed += i[0] + i[1] - i0;
            return -2.0;
        }
    }
}

double ps__list_sched_time(ps_plan *pl, int use_x, double limit)
{
    return run(pl, pl->ord, pl->len, use_x, NULL, limit, 0, NULL, 0, 0);
}

double ps__list_sched_record(ps_plan *pl)
{
    double d = run(pl, pl->ord, pl->len, 0, NULL, INFINITY, 1, NULL, 0, 0);
    pl->rec_makespan = d;
    memcpy(pl->cst, pl->st, pl->nn * sizeof(double));
    memcpy(pl->cen, pl->en, pl->nn * sizeof(double));
    /* fin now flags the operations that finished, the first fin_upto of fin_order */
    pl->fin_upto = 0;
    for (size_t k = 0; k < pl->nn; k++)
        pl->fin_upto += pl->fin[k];
    pl->ndirty = 0;
    pl->clean = 1;
    return d;
}

double ps__list_sched_resume(ps_plan *pl, int s, size_t p0, size_t p1, double limit)
{
    return run(pl, pl->ord, pl->len, 0, NULL, limit, 0, &pl->cp[s][p0], s, p1);
}

double ps__list_sched_build(ps_plan *pl, int prefer_feed)
{
    picker w;
    picker_init(pl, &w, pl->ord, pl->len, prefer_feed);
    return run(pl, pl->ord, pl->len, 0, &w, INFINITY, 0, NULL, 0, 0);
}
