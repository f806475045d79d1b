/*
 * The schedule engine: the state machine that walks every rank's action list in order,
 * tracks which results exist and where, issues an action as soon as its rank is free and its
 * inputs have arrived, and handles completions. It knows nothing about time. A clock drives
 * it through two callbacks:
 *
 *   - the simulator's virtual clock completes every action synchronously and computes its
 *     start and end from the dependency times (sim.c);
 *   - the validator's and the lowering pass's clocks complete synchronously too and only
 *     record order (validate.c, lower.c);
 *   - the libuv executor (src/exec/) hands the action to the host and calls
 *     ps__engine_complete() when the host reports it done.
 *
 * One engine, several clocks: what the simulator simulates is exactly what runs. The core
 * is written once, as inline functions taking the clock's callbacks; a synchronous clock
 * instantiates it with constant callbacks (ps__engine_run_sync), which the compiler inlines,
 * so the simulator pays no indirect call per action.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_ENGINE_H
#define PS_ENGINE_H

#include "internal.h"

#if defined(__GNUC__)
/* A hint to fetch the cache line at p for reading (rw 0) or writing (rw 1); never faults. */
#define ps__prefetch(p, rw) __builtin_prefetch((p), (rw), 3)
#else
#define ps__prefetch(p, rw) ((void)(p), (void)(rw))
#endif

enum {
    PS__ST_F_DONE = 1,  /* F(s, j) ran (or the forward part of a fused pair) */
    PS__ST_F_SENT = 2,  /* its output is on the rank of the next stage of j's path */
    PS__ST_G_DONE = 4,  /* I(s, j) or B(s, j) ran */
    PS__ST_G_SENT = 8,  /* its input gradient is on the rank of the previous stage */
    PS__ST_W_DONE = 16, /* W(s, j) ran (or B, which includes it) */
    PS__ST_I_DONE = 32  /* the backward was an I (so a W is still expected) */
};

typedef struct ps__engine_ops {
    /* Rank starts action idx of its compute list. dep[0] is the stage whose forward output
     * the forward part consumed and dep[1] the stage whose gradient the backward part
     * consumed (-1: none, e.g. the first or last stage of the path). Return 1 when the action
     * completed during the call (the engine then completes it), 0 when ps__engine_complete()
     * comes later. */
    int (*issue)(void *ud, int32_t rank, int64_t idx, const ps_action *a, const int32_t dep[2]);
    /* The result of (stage, mb) must travel from rank `from` to rank `to`; dir 0 = forward
     * activation, 1 = input gradient. Return 1 when delivered during the call, 0 when
     * ps__engine_deliver() comes later. */
    int (*transfer)(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to);
    /* Optional (NULL for the synchronous clocks, which then pay nothing): rank stopped at
     * action idx because an input is missing. The executor posts the receives of inputs that
     * come from ranks of other processes here. May be called more than once per action. */
    void (*park)(void *ud, int32_t rank, int64_t idx, const ps_action *a);
} ps__engine_ops;

/* Flags are 16-bit so that stores to them cannot alias the schedule's tables. */
typedef uint16_t ps__flag;

typedef struct ps__engine {
    const ps_schedule *s;
    const ps__engine_ops *ops;
    void *ud;
    ps_allocator al;
    /* Copies of the schedule's tables, to save an indirection per action. */
    const ps_action *acts;
    const int64_t *off, *len;
    const int32_t *stage_rank, *next, *prev;
    const uint8_t *mb_path;
    size_t nstages, m;
    int32_t pp;
    int64_t *cur; /* per rank: index of the next action */
    /* int32_t rather than uint8_t: a store through a char type may alias anything, which
     * would force the hot loop to reload every table pointer after each store. */
    int32_t *running; /* per rank: an issued action has not completed */
    int32_t *parked;  /* per rank: blocked on a missing input, waiting to be woken */
    int32_t *queue;   /* ring of ranks to advance */
    int32_t qhead, qcount;
    ps__flag *st; /* per (stage, mb): PS__ST_* flags, index ps__sm(stage, mb) */
    int64_t total, in_flight_transfers;
    /* Per rank, 1 when the rank runs in another process (NULL: all local); see
     * ps__engine_set_remote(). */
    const uint8_t *remote;
    /* Optional record of the issue order (see ps_schedule.order): pairs (rank, n). */
    int rec_on, rec_failed;
    int32_t *rec;
    size_t rec_len, rec_cap;
} ps__engine;

PS__SIBLING int ps__engine_init(ps__engine *e, const ps_schedule *s, const ps__engine_ops *ops,
                                void *ud, const ps_allocator *al);
PS__SIBLING void ps__engine_destroy(ps__engine *e);
/*
 * Marks the ranks with remote[r] != 0 as run elsewhere (remote is borrowed for the engine's
 * life). Such a rank is pinned as running, so the advance loop skips it without an extra test;
 * results addressed to it are handed to ops->transfer like any other, and ps__engine_describe()
 * calls it remote. Call before ps__engine_start().
 */
PS__SIBLING void ps__engine_set_remote(ps__engine *e, const uint8_t *remote);
/* Issues everything that can run now (and, with synchronous clocks, everything). */
PS__SIBLING void ps__engine_start(ps__engine *e);
/* The action running on rank completed. */
PS__SIBLING void ps__engine_complete(ps__engine *e, int32_t rank);
/* A transfer announced through ops->transfer arrived. */
PS__SIBLING void ps__engine_deliver(ps__engine *e, int dir, int32_t stage, int32_t mb);
/* Number of completed actions. */
int64_t ps__engine_done(const ps__engine *e);
/* 1 when every action completed. */
static inline int ps__engine_finished(const ps__engine *e)
{
    return ps__engine_done(e) == e->total;
}
/* 1 when nothing can ever progress again: nothing running, nothing in transit, not done. */
int ps__engine_stuck(const ps__engine *e);
/* Appends the run (rank, n) to the record; on allocation failure stops recording. */
void ps__engine_record(ps__engine *e, int32_t rank, int64_t n);
/* Appends to buf (PS__ERRLEN) one line per rank: finished, running, or the blocked head
 * action and what it waits for. */
PS__SIBLING void ps__engine_describe(const ps__engine *e, char *buf);

/* ---- the core, inline ------------------------------------------------------------------ */

/*
 * The tables the hot loop reads, copied into a local so that stores the clock makes (to its
 * own int64/double arrays, which may alias size_t or double fields of a struct) cannot force
 * reloads.
 */
typedef struct ps__eng_view {
    ps__flag *st;
    const int32_t *next, *prev, *rank;
    const uint8_t *mb_path;
    size_t ns, m;
} ps__eng_view;

PS__HOT ps__eng_view ps__eng_view_of(const ps__engine *e)
{
    ps__eng_view v = {e->st, e->next, e->prev, e->stage_rank, e->mb_path, e->nstages, e->m};
    return v;
}

PS__HOT size_t ps__eng_path(const ps__eng_view *v, int32_t mb)
{
    return v->mb_path ? (size_t)v->mb_path[mb] * v->ns : 0;
}

PS__HOT size_t ps__eng_idx(const ps__eng_view *v, int32_t stage, int32_t mb)
{
    return ps__sm(v->m, stage, mb);
}

/* Whether F(stage, mb) can run; *dep receives the stage it consumes from (-1: none). */
PS__HOT int ps__eng_fwd_ready(const ps__eng_view *v, int32_t stage, int32_t mb, int32_t *dep)
{
    int32_t pv = v->prev[ps__eng_path(v, mb) + (size_t)stage];
    *dep = pv;
    return pv < 0 || (v->st[ps__eng_idx(v, pv, mb)] & PS__ST_F_SENT);
}

PS__HOT int ps__eng_bwd_ready(const ps__eng_view *v, int32_t stage, int32_t mb, int32_t *dep)
{
    int32_t nx = v->next[ps__eng_path(v, mb) + (size_t)stage];
    *dep = nx;
    if (!(v->st[ps__eng_idx(v, stage, mb)] & PS__ST_F_DONE))
        return 0;
    return nx < 0 || (v->st[ps__eng_idx(v, nx, mb)] & PS__ST_G_SENT);
}

PS__HOT int ps__eng_ready(const ps__eng_view *v, const ps_action *a, int32_t dep[2])
{
    /* If-chains rather than a switch: the kinds alternate in patterns that conditional
     * branches predict better than one indirect jump. */
    int kind = a->kind;
    dep[0] = dep[1] = -1;
    if (kind == PS_F)
        return ps__eng_fwd_ready(v, a->stage, a->mb, &dep[0]);
    if (kind == PS_B || kind == PS_I)
        return ps__eng_bwd_ready(v, a->stage, a->mb, &dep[1]);
    if (kind == PS_W)
        return (v->st[ps__eng_idx(v, a->stage, a->mb)] & PS__ST_I_DONE) != 0;
    if (kind == PS_FB)
        return ps__eng_fwd_ready(v, a->stage, a->mb, &dep[0]) &&
               ps__eng_bwd_ready(v, a->bstage, a->bmb, &dep[1]);
    return 1; /* communication actions are not on compute lists */
}

/* The stages whose results a consumes (see ps__engine_ops.issue), without checking them. */
PS__HOT void ps__eng_deps(const ps__eng_view *v, const ps_action *a, int32_t dep[2])
{
    dep[0] = dep[1] = -1;
    switch (a->kind) {
    case PS_F:
        dep[0] = v->prev[ps__eng_path(v, a->mb) + (size_t)a->stage];
        break;
    case PS_I:
    case PS_B:
        dep[1] = v->next[ps__eng_path(v, a->mb) + (size_t)a->stage];
        break;
    case PS_FB:
        dep[0] = v->prev[ps__eng_path(v, a->mb) + (size_t)a->stage];
        dep[1] = v->next[ps__eng_path(v, a->bmb) + (size_t)a->bstage];
        break;
    default:
        break;
    }
}

PS__HOT void ps__eng_wake(ps__engine *e, int32_t r)
{
    if (!e->parked[r])
        return; /* already queued, running, finished, or being advanced */
    e->parked[r] = 0;
    int32_t at = e->qhead + e->qcount;
    if (at >= e->pp)
        at -= e->pp;
    e->queue[at] = r;
    e->qcount++;
}

/* Moves the result of (stage, mb) towards the rank of peer (a neighbour on its path). */
PS__HOT void ps__eng_send(ps__engine *e, const ps__eng_view *v, const ps__engine_ops *ops, int dir,
                          int32_t r, int32_t stage, int32_t mb, int32_t peer, ps__flag *st)
{
    if (peer < 0)
        return;
    int32_t to = v->rank[peer];
    ps__flag sent = dir == 0 ? PS__ST_F_SENT : PS__ST_G_SENT;
    if (to == r) {
        *st |= sent;
    } else if (ops->transfer(e->ud, dir, stage, mb, r, to)) {
        *st |= sent;
        ps__eng_wake(e, to);
    } else {
        e->in_flight_transfers++;
    }
}

/* Records the completion of action a on rank r and moves its results on. */
PS__HOT void ps__eng_finish(ps__engine *e, const ps__eng_view *v, const ps__engine_ops *ops,
                            int32_t r, const ps_action *a)
{
    ps__flag *st = &v->st[ps__eng_idx(v, a->stage, a->mb)];
    int kind = a->kind;
    if (kind == PS_F) {
        *st |= PS__ST_F_DONE;
        ps__eng_send(e, v, ops, 0, r, a->stage, a->mb,
                     v->next[ps__eng_path(v, a->mb) + (size_t)a->stage], st);
    } else if (kind == PS_B || kind == PS_I) {
        *st |= (ps__flag)(PS__ST_G_DONE | (kind == PS_I ? PS__ST_I_DONE : PS__ST_W_DONE));
        ps__eng_send(e, v, ops, 1, r, a->stage, a->mb,
                     v->prev[ps__eng_path(v, a->mb) + (size_t)a->stage], st);
    } else if (kind == PS_W) {
        *st |= PS__ST_W_DONE;
    } else if (kind == PS_FB) {
        *st |= PS__ST_F_DONE;
        ps__eng_send(e, v, ops, 0, r, a->stage, a->mb,
                     v->next[ps__eng_path(v, a->mb) + (size_t)a->stage], st);
        ps__flag *bt = &v->st[ps__eng_idx(v, a->bstage, a->bmb)];
        *bt |= (ps__flag)(PS__ST_G_DONE | (a->bkind == PS_I ? PS__ST_I_DONE : PS__ST_W_DONE));
        ps__eng_send(e, v, ops, 1, r, a->bstage, a->bmb,
                     v->prev[ps__eng_path(v, a->bmb) + (size_t)a->bstage], bt);
    }
}

/* Runs rank r as far as it can go. The cursor is written back once: with a synchronous
 * clock nothing else looks at it meanwhile. */
PS__HOT void ps__eng_advance(ps__engine *e, const ps__eng_view *vp, const ps__engine_ops *ops,
                             int32_t r)
{
    if (e->running[r])
        return;
    const ps__eng_view v = *vp;
    const ps_action *base = e->acts + e->off[r];
    int64_t n = e->len[r], i = e->cur[r], first = i;
    while (i < n) {
        const ps_action *a = &base[i];
        int32_t dep[2];
        if (!ps__eng_ready(&v, a, dep)) {
            e->parked[r] = 1; /* a finish elsewhere wakes it */
            if (ops->park)
                ops->park(e->ud, r, i, a);
            break;
        }
        if (!ops->issue(e->ud, r, i, a, dep)) {
            e->running[r] = 1; /* ps__engine_complete() finishes it */
            break;
        }
        ps__eng_finish(e, &v, ops, r, a);
        i++;
    }
    e->cur[r] = i;
    /* The other ranks run before this one is advanced again: fetch the line of actions after
     * the one it stopped at now (the hardware's prefetcher follows a few streams, not one per
     * rank), so that it waits in the cache then. */
    ps__prefetch(&base[i] + 3, 0);
    if (e->rec_on && i > first) {
        if (e->rec_len + 2 <= e->rec_cap && i - first <= INT32_MAX) {
            e->rec[e->rec_len] = r;
            e->rec[e->rec_len + 1] = (int32_t)(i - first);
            e->rec_len += 2;
        } else {
            ps__engine_record(e, r, i - first);
        }
    }
}

PS__HOT void ps__eng_pump(ps__engine *e, const ps__engine_ops *ops)
{
    const ps__eng_view v = ps__eng_view_of(e);
    while (e->qcount) {
        int32_t r = e->queue[e->qhead];
        if (++e->qhead == e->pp)
            e->qhead = 0;
        e->qcount--;
        ps__eng_advance(e, &v, ops, r);
    }
}

/* Runs a synchronous clock to the end (or to a deadlock). ops should be a constant so that
 * its callbacks inline. */
PS__HOT void ps__engine_run_sync(ps__engine *e, const ps__engine_ops *ops)
{
    for (int32_t r = 0; r < e->pp; r++) {
        e->parked[r] = 1;
        ps__eng_wake(e, r);
    }
    ps__eng_pump(e, ops);
}

#endif
