/*
 * The engine state machine (see engine.h). Every action is examined O(1) times: a rank is
 * re-examined only when it is woken by a result addressed to it or when its own action
 * completes, so a whole run is O(actions + ranks).
 * SPDX-License-Identifier: MIT
 */
#include "engine.h"

#include <stdio.h>
#include <string.h>

int ps__engine_init(ps__engine *e, const ps_schedule *s, const ps__engine_ops *ops, void *ud,
                    const ps_allocator *al)
{
    memset(e, 0, sizeof *e);
    e->s = s;
    e->ops = ops;
    e->ud = ud;
    e->al = *al;
    size_t p = (size_t)s->pp;
    e->cur = ps__calloc(al, p, sizeof *e->cur);
    e->running = ps__calloc(al, p, 1);
    e->queued = ps__calloc(al, p, 1);
    e->queue = ps__alloc(al, p, sizeof *e->queue);
    e->st = ps__calloc(al, (size_t)s->nstages * (size_t)s->m, 1);
    if (!e->cur || !e->running || !e->queued || !e->queue || !e->st) {
        ps__engine_destroy(e);
        return PS_ENOMEM;
    }
    for (int32_t r = 0; r < s->pp; r++)
        e->total += s->len[r];
    return 0;
}

void ps__engine_destroy(ps__engine *e)
{
    if (!e->s)
        return;
    size_t p = (size_t)e->s->pp;
    ps__free(&e->al, e->cur, p, sizeof *e->cur);
    ps__free(&e->al, e->running, p, 1);
    ps__free(&e->al, e->queued, p, 1);
    ps__free(&e->al, e->queue, p, sizeof *e->queue);
    ps__free(&e->al, e->st, (size_t)e->s->nstages * (size_t)e->s->m, 1);
    e->s = NULL;
}

static inline int32_t prev_stage(const ps_schedule *s, int32_t stage, int32_t mb)
{
    return s->path_prev[(size_t)ps__path_of(s, mb) * (size_t)s->nstages + (size_t)stage];
}

static inline int32_t next_stage(const ps_schedule *s, int32_t stage, int32_t mb)
{
    return s->path_next[(size_t)ps__path_of(s, mb) * (size_t)s->nstages + (size_t)stage];
}

static inline size_t idx(const ps_schedule *s, int32_t stage, int32_t mb)
{
    return (size_t)stage * (size_t)s->m + (size_t)mb;
}

static inline int fwd_ready(const ps__engine *e, int32_t stage, int32_t mb)
{
    int32_t pv = prev_stage(e->s, stage, mb);
    return pv < 0 || (e->st[idx(e->s, pv, mb)] & PS__ST_F_SENT);
}

static inline int bwd_ready(const ps__engine *e, int32_t stage, int32_t mb)
{
    if (!(e->st[idx(e->s, stage, mb)] & PS__ST_F_DONE))
        return 0;
    int32_t nx = next_stage(e->s, stage, mb);
    return nx < 0 || (e->st[idx(e->s, nx, mb)] & PS__ST_G_SENT);
}

static inline int ready(const ps__engine *e, const ps_action *a)
{
    switch (a->kind) {
    case PS_F:
        return fwd_ready(e, a->stage, a->mb);
    case PS_I:
    case PS_B:
        return bwd_ready(e, a->stage, a->mb);
    case PS_W:
        return (e->st[idx(e->s, a->stage, a->mb)] & PS__ST_I_DONE) != 0;
    case PS_FB:
        return fwd_ready(e, a->stage, a->mb) && bwd_ready(e, a->bstage, a->bmb);
    default:
        return 1; /* communication actions are not on compute lists */
    }
}

static inline void wake(ps__engine *e, int32_t r)
{
    if (e->queued[r] || e->running[r] || e->cur[r] >= e->s->len[r])
        return;
    int32_t pp = e->s->pp;
    e->queue[(e->qhead + e->qcount) % pp] = r;
    e->qcount++;
    e->queued[r] = 1;
}

/* Marks the forward of (stage, mb) done on rank r and moves its output on. */
static inline void finish_fwd(ps__engine *e, int32_t r, int32_t stage, int32_t mb)
{
    const ps_schedule *s = e->s;
    uint8_t *st = &e->st[idx(s, stage, mb)];
    *st |= PS__ST_F_DONE;
    int32_t nx = next_stage(s, stage, mb);
    if (nx < 0)
        return;
    int32_t to = s->stage_rank[nx];
    if (to == r) {
        *st |= PS__ST_F_SENT;
    } else if (e->ops->transfer(e->ud, 0, stage, mb, r, to)) {
        *st |= PS__ST_F_SENT;
        wake(e, to);
    } else {
        e->in_flight_transfers++;
    }
}

static inline void finish_bwd(ps__engine *e, int32_t r, int kind, int32_t stage, int32_t mb)
{
    const ps_schedule *s = e->s;
    uint8_t *st = &e->st[idx(s, stage, mb)];
    *st |= (uint8_t)(PS__ST_G_DONE | (kind == PS_I ? PS__ST_I_DONE : PS__ST_W_DONE));
    int32_t pv = prev_stage(s, stage, mb);
    if (pv < 0)
        return;
    int32_t to = s->stage_rank[pv];
    if (to == r) {
        *st |= PS__ST_G_SENT;
    } else if (e->ops->transfer(e->ud, 1, stage, mb, r, to)) {
        *st |= PS__ST_G_SENT;
        wake(e, to);
    } else {
        e->in_flight_transfers++;
    }
}

static void finish(ps__engine *e, int32_t r)
{
    const ps_action *a = &e->s->acts[e->s->off[r] + e->cur[r]];
    switch (a->kind) {
    case PS_F:
        finish_fwd(e, r, a->stage, a->mb);
        break;
    case PS_I:
    case PS_B:
        finish_bwd(e, r, a->kind, a->stage, a->mb);
        break;
    case PS_W:
        e->st[idx(e->s, a->stage, a->mb)] |= PS__ST_W_DONE;
        break;
    case PS_FB:
        finish_fwd(e, r, a->stage, a->mb);
        finish_bwd(e, r, a->bkind, a->bstage, a->bmb);
        break;
    default:
        break;
    }
    e->cur[r]++;
    e->running[r] = 0;
    e->done++;
}

/* Runs rank r as far as it can go. */
static void advance(ps__engine *e, int32_t r)
{
    const ps_schedule *s = e->s;
    const ps_action *base = s->acts + s->off[r];
    int64_t n = s->len[r];
    while (!e->running[r] && e->cur[r] < n) {
        const ps_action *a = &base[e->cur[r]];
        if (!ready(e, a))
            return;
        e->running[r] = 1;
        if (!e->ops->issue(e->ud, r, e->cur[r], a))
            return;
        finish(e, r);
    }
}

static void pump(ps__engine *e)
{
    int32_t pp = e->s->pp;
    while (e->qcount) {
        int32_t r = e->queue[e->qhead];
        e->qhead = (e->qhead + 1) % pp;
        e->qcount--;
        e->queued[r] = 0;
        advance(e, r);
    }
}

void ps__engine_start(ps__engine *e)
{
    for (int32_t r = 0; r < e->s->pp; r++)
        wake(e, r);
    pump(e);
}

void ps__engine_complete(ps__engine *e, int32_t rank)
{
    finish(e, rank);
    advance(e, rank);
    pump(e);
}

void ps__engine_deliver(ps__engine *e, int dir, int32_t stage, int32_t mb)
{
    const ps_schedule *s = e->s;
    e->st[idx(s, stage, mb)] |= dir == 0 ? PS__ST_F_SENT : PS__ST_G_SENT;
    e->in_flight_transfers--;
    int32_t peer = dir == 0 ? next_stage(s, stage, mb) : prev_stage(s, stage, mb);
    wake(e, s->stage_rank[peer]);
    pump(e);
}

int ps__engine_stuck(const ps__engine *e)
{
    if (ps__engine_finished(e) || e->qcount || e->in_flight_transfers)
        return 0;
    for (int32_t r = 0; r < e->s->pp; r++)
        if (e->running[r])
            return 0;
    return 1;
}

/* Says what the dependency (stage, mb, forward or backward result) is waiting for. */
static void describe_dep(const ps__engine *e, int32_t r, int fwd, int32_t stage, int32_t mb,
                         char *buf)
{
    const ps_schedule *s = e->s;
    char name[64];
    ps_action d = {0};
    d.stage = stage;
    d.mb = mb;
    d.kind = fwd ? PS_F : PS_B;
    uint8_t st = e->st[idx(s, stage, mb)];
    int32_t at = s->stage_rank[stage];
    if (fwd) {
        ps__action_str(&d, name, sizeof name);
        if (!(st & PS__ST_F_DONE))
            ps__adderr(buf, "waits for %s (rank %d), which has not run", name, at);
        else
            ps__adderr(buf, "waits for %s from rank %d, still in transit", name, at);
    } else {
        char nm[80];
        ps__action_str(&d, name, sizeof name);
        /* Name it the way the user wrote it: "the backward 2B0/2I0". */
        snprintf(nm, sizeof nm, "the backward of stage %d micro-batch %d", stage, mb);
        if (!(st & PS__ST_G_DONE))
            ps__adderr(buf, "waits for %s (rank %d), which has not run", nm, at);
        else
            ps__adderr(buf, "waits for %s from rank %d, still in transit", nm, at);
    }
    (void)r;
}

void ps__engine_describe(const ps__engine *e, char *buf)
{
    const ps_schedule *s = e->s;
    for (int32_t r = 0; r < s->pp; r++) {
        char name[96];
        if (e->cur[r] >= s->len[r]) {
            ps__adderr(buf, "\n  rank %d: finished", r);
            continue;
        }
        const ps_action *a = &s->acts[s->off[r] + e->cur[r]];
        ps__action_str(a, name, sizeof name);
        if (e->running[r]) {
            ps__adderr(buf, "\n  rank %d: running %s", r, name);
            continue;
        }
        ps__adderr(buf, "\n  rank %d: blocked at step %lld on %s, which ", r,
                   (long long)e->cur[r], name);
        int fwd_part_ready = 1;
        if (a->kind == PS_F || a->kind == PS_FB) {
            fwd_part_ready = fwd_ready(e, a->stage, a->mb);
            if (!fwd_part_ready)
                describe_dep(e, r, 1, prev_stage(s, a->stage, a->mb), a->mb, buf);
        }
        if (a->kind == PS_I || a->kind == PS_B || a->kind == PS_FB) {
            int32_t st = a->kind == PS_FB ? a->bstage : a->stage;
            int32_t mb = a->kind == PS_FB ? a->bmb : a->mb;
            if (!(e->st[idx(s, st, mb)] & PS__ST_F_DONE)) {
                ps_action f = {0};
                f.stage = st;
                f.mb = mb;
                ps__action_str(&f, name, sizeof name);
                ps__adderr(buf, "%swaits for its own forward %s (rank %d), which has not run",
                           fwd_part_ready ? "" : " and ", name, s->stage_rank[st]);
            } else if (!bwd_ready(e, st, mb)) {
                if (!fwd_part_ready)
                    ps__adderr(buf, " and ");
                describe_dep(e, r, 0, next_stage(s, st, mb), mb, buf);
            }
        }
        if (a->kind == PS_W) {
            ps_action i = *a;
            i.kind = PS_I;
            ps__action_str(&i, name, sizeof name);
            ps__adderr(buf, "waits for %s (rank %d), which has not run", name,
                       s->stage_rank[a->stage]);
        }
    }
}
