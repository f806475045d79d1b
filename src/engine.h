/*
 * The schedule engine: the state machine that walks every rank's action list in order,
 * tracks which results exist and where, issues an action as soon as its rank is free and its
 * inputs have arrived, and handles completions. It knows nothing about time. A clock drives
 * it through two callbacks:
 *
 *   - the simulator's virtual clock completes every action synchronously and computes its
 *     start and end from the dependency times (sim.c);
 *   - the validator's and the lowering pass's "null" clocks complete synchronously too and
 *     only record order (validate.c, lower.c);
 *   - the libuv executor (later work) hands the action to the host and calls
 *     ps__engine_complete() when the host reports it done.
 *
 * One engine, several clocks: what the simulator simulates is exactly what runs.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_ENGINE_H
#define PS_ENGINE_H

#include "internal.h"

enum {
    PS__ST_F_DONE = 1,  /* F(s, j) ran (or the forward part of a fused pair) */
    PS__ST_F_SENT = 2,  /* its output is on the rank of the next stage of j's path */
    PS__ST_G_DONE = 4,  /* I(s, j) or B(s, j) ran */
    PS__ST_G_SENT = 8,  /* its input gradient is on the rank of the previous stage */
    PS__ST_W_DONE = 16, /* W(s, j) ran (or B, which includes it) */
    PS__ST_I_DONE = 32  /* the backward was an I (so a W is still expected) */
};

typedef struct ps__engine_ops {
    /* Rank starts action idx of its compute list. Return 1 when the action completed during
     * the call (the engine then completes it), 0 when ps__engine_complete() comes later. */
    int (*issue)(void *ud, int32_t rank, int64_t idx, const ps_action *a);
    /* The result of (stage, mb) must travel from rank `from` to rank `to`; dir 0 = forward
     * activation, 1 = input gradient. Return 1 when delivered during the call, 0 when
     * ps__engine_deliver() comes later. */
    int (*transfer)(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to);
} ps__engine_ops;

typedef struct ps__engine {
    const ps_schedule *s;
    const ps__engine_ops *ops;
    void *ud;
    ps_allocator al;
    int64_t *cur;      /* per rank: index of the next action */
    uint8_t *running;  /* per rank: an issued action has not completed */
    uint8_t *queued;   /* per rank: on the work queue */
    int32_t *queue;    /* ring of ranks to advance */
    int32_t qhead, qcount;
    uint8_t *st;       /* per (stage, mb): PS__ST_* flags, index stage * m + mb */
    int64_t done, total, in_flight_transfers;
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
/* 1 when every action completed. */
static inline int ps__engine_finished(const ps__engine *e)
{
    return e->done == e->total;
}
/* 1 when nothing can ever progress again: nothing running, nothing in transit, not done. */
int ps__engine_stuck(const ps__engine *e);
/* Appends to buf (PS__ERRLEN) one line per rank: finished, running, or the blocked head
 * action and what it waits for. */
void ps__engine_describe(const ps__engine *e, char *buf);

#endif
