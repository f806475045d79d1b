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
 *   - the libuv executor (later work) hands the action to the host and calls
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
#define PS__HOT static inline __attribute__((always_inline))
#else
#define PS__HOT static inline
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
    int32_t *queued;  /* per rank: on the work queue */
    int32_t *queue;   /* ring of ranks to advance */
    int32_t qhead, qcount;
    ps__flag *st; /* per (stage, mb): PS__ST_* flags, index stage * m + mb */
    int64_t total, in_flight_transfers;
} ps__engine;

int ps__engine_init(ps__engine *e, const ps_schedule *s, const ps__engine_ops *ops, void *ud,
                    const ps_allocator *al);
void ps__engine_destroy(ps__engine *e);
/* Issues everything that can run now (and, with synchronous clocks, everything). */
void ps__engine_start(ps__engine *e);
/* The action running on rank completed. */
void ps__engine_complete(ps__engine *e, int32_t rank);
/* A transfer announced through ops->transfer arrived. */
void ps__engine_deliver(ps__engine *e, int dir, int32_t stage, int32_t mb);
/* Number of completed actions. */
int64_t ps__engine_done(const ps__engine *e);
/* 1 when every action completed. */
static inline int ps__engine_finished(const ps__engine *e)
{
    return ps__engine_done(e) == e->total;
}
/* 1 when nothing can ever progress again: nothing running, nothing in transit, not done. */
int ps__engine_stuck(const ps__engine *e);
/* Appends to buf (PS__ERRLEN) one line per rank: finished, running, or the blocked head
 * action and what it waits for. */
void ps__engine_describe(const ps__engine *e, char *buf);

/* ---- the core, inline ------------------------------------------------------------------ */

PS__HOT size_t ps__eng_path(const ps__engine *e, int32_t mb)
{
    return e->mb_path ? (size_t)e->mb_path[mb] * e->nstages : 0;
}

PS__HOT int32_t ps__eng_prev(const ps__engine *e, int32_t stage, int32_t mb)
{
    return e->prev[ps__eng_path(e, mb) + (size_t)stage];
}

PS__HOT int32_t ps__eng_next(const ps__engine *e, int32_t stage, int32_t mb)
{
    return e->next[ps__eng_path(e, mb) + (size_t)stage];
}

PS__HOT size_t ps__eng_idx(const ps__engine *e, int32_t stage, int32_t mb)
{
    return (size_t)stage * e->m + (size_t)mb;
}

/* Whether F(stage, mb) can run; *dep receives the stage it consumes from (-1: none). */
PS__HOT int ps__eng_fwd_ready(const ps__engine *e, int32_t stage, int32_t mb, int32_t *dep)
{
    int32_t pv = ps__eng_prev(e, stage, mb);
    *dep = pv;
    return pv < 0 || (e->st[ps__eng_idx(e, pv, mb)] & PS__ST_F_SENT);
}

PS__HOT int ps__eng_bwd_ready(const ps__engine *e, int32_t stage, int32_t mb, int32_t *dep)
{
    int32_t nx = ps__eng_next(e, stage, mb);
    *dep = nx;
    if (!(e->st[ps__eng_idx(e, stage, mb)] & PS__ST_F_DONE))
        return 0;
    return nx < 0 || (e->st[ps__eng_idx(e, nx, mb)] & PS__ST_G_SENT);
}

PS__HOT int ps__eng_ready(const ps__engine *e, const ps_action *a, int32_t dep[2])
{
    dep[0] = dep[1] = -1;
    switch (a->kind) {
    case PS_F:
        return ps__eng_fwd_ready(e, a->stage, a->mb, &dep[0]);
    case PS_I:
    case PS_B:
        return ps__eng_bwd_ready(e, a->stage, a->mb, &dep[1]);
    case PS_W:
        return (e->st[ps__eng_idx(e, a->stage, a->mb)] & PS__ST_I_DONE) != 0;
    case PS_FB:
        return ps__eng_fwd_ready(e, a->stage, a->mb, &dep[0]) &&
               ps__eng_bwd_ready(e, a->bstage, a->bmb, &dep[1]);
    default:
        return 1; /* communication actions are not on compute lists */
    }
}

PS__HOT void ps__eng_wake(ps__engine *e, int32_t r)
{
    if (e->queued[r] || e->running[r] || e->cur[r] >= e->len[r])
        return;
    int32_t at = e->qhead + e->qcount;
    if (at >= e->pp)
        at -= e->pp;
    e->queue[at] = r;
    e->qcount++;
    e->queued[r] = 1;
}

/* Moves the result of (stage, mb) towards the rank of peer (a neighbour on its path). */
PS__HOT void ps__eng_send(ps__engine *e, const ps__engine_ops *ops, int dir, int32_t r,
                          int32_t stage, int32_t mb, int32_t peer, ps__flag *st)
{
    if (peer < 0)
        return;
    int32_t to = e->stage_rank[peer];
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

PS__HOT void ps__eng_finish_fwd(ps__engine *e, const ps__engine_ops *ops, int32_t r, int32_t stage,
                                int32_t mb)
{
    ps__flag *st = &e->st[ps__eng_idx(e, stage, mb)];
    *st |= PS__ST_F_DONE;
    ps__eng_send(e, ops, 0, r, stage, mb, ps__eng_next(e, stage, mb), st);
}

PS__HOT void ps__eng_finish_bwd(ps__engine *e, const ps__engine_ops *ops, int32_t r, int kind,
                                int32_t stage, int32_t mb)
{
    ps__flag *st = &e->st[ps__eng_idx(e, stage, mb)];
    *st |= (ps__flag)(PS__ST_G_DONE | (kind == PS_I ? PS__ST_I_DONE : PS__ST_W_DONE));
    ps__eng_send(e, ops, 1, r, stage, mb, ps__eng_prev(e, stage, mb), st);
}

PS__HOT void ps__eng_finish(ps__engine *e, const ps__engine_ops *ops, int32_t r, const ps_action *a)
{
    switch (a->kind) {
    case PS_F:
        ps__eng_finish_fwd(e, ops, r, a->stage, a->mb);
        break;
    case PS_I:
    case PS_B:
        ps__eng_finish_bwd(e, ops, r, a->kind, a->stage, a->mb);
        break;
    case PS_W:
        e->st[ps__eng_idx(e, a->stage, a->mb)] |= PS__ST_W_DONE;
        break;
    case PS_FB:
        ps__eng_finish_fwd(e, ops, r, a->stage, a->mb);
        ps__eng_finish_bwd(e, ops, r, a->bkind, a->bstage, a->bmb);
        break;
    default:
        break;
    }
}

/* Runs rank r as far as it can go. The cursor is written back once: with a synchronous
 * clock nothing else looks at it meanwhile. */
PS__HOT void ps__eng_advance(ps__engine *e, const ps__engine_ops *ops, int32_t r)
{
    if (e->running[r])
        return;
    const ps_action *base = e->acts + e->off[r];
    int64_t n = e->len[r], i = e->cur[r];
    while (i < n) {
        const ps_action *a = &base[i];
        int32_t dep[2];
        if (!ps__eng_ready(e, a, dep))
            break;
        if (!ops->issue(e->ud, r, i, a, dep)) {
            e->running[r] = 1; /* ps__engine_complete() finishes it */
            break;
        }
        ps__eng_finish(e, ops, r, a);
        i++;
    }
    e->cur[r] = i;
}

PS__HOT void ps__eng_pump(ps__engine *e, const ps__engine_ops *ops)
{
    while (e->qcount) {
        int32_t r = e->queue[e->qhead];
        if (++e->qhead == e->pp)
            e->qhead = 0;
        e->qcount--;
        e->queued[r] = 0;
        ps__eng_advance(e, ops, r);
    }
}

/* Runs a synchronous clock to the end (or to a deadlock). ops should be a constant so that
 * its callbacks inline. */
PS__HOT void ps__engine_run_sync(ps__engine *e, const ps__engine_ops *ops)
{
    for (int32_t r = 0; r < e->pp; r++)
        ps__eng_wake(e, r);
    ps__eng_pump(e, ops);
}

#endif
