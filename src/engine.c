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
    e->running = ps__calloc(al, p, sizeof *e->running);
    e->queued = ps__calloc(al, p, sizeof *e->queued);
    e->queue = ps__alloc(al, p, sizeof *e->queue);
    e->st = ps__calloc(al, (size_t)s->nstages * (size_t)s->m, sizeof *e->st);
    e->acts = s->acts;
    e->off = s->off;
    e->len = s->len;
    e->stage_rank = s->stage_rank;
    e->next = s->path_next;
    e->prev = s->path_prev;
    e->mb_path = s->mb_path;
    e->nstages = (size_t)s->nstages;
    e->m = (size_t)s->m;
    e->pp = s->pp;
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
    ps__free(&e->al, e->running, p, sizeof *e->running);
    ps__free(&e->al, e->queued, p, sizeof *e->queued);
    ps__free(&e->al, e->queue, p, sizeof *e->queue);
    ps__free(&e->al, e->st, (size_t)e->s->nstages * (size_t)e->s->m, sizeof *e->st);
    e->s = NULL;
}

void ps__engine_start(ps__engine *e)
{
    for (int32_t r = 0; r < e->pp; r++)
        ps__eng_wake(e, r);
    ps__eng_pump(e, e->ops);
}

void ps__engine_complete(ps__engine *e, int32_t rank)
{
    ps__eng_finish(e, e->ops, rank, &e->acts[e->off[rank] + e->cur[rank]]);
    e->cur[rank]++;
    e->running[rank] = 0;
    ps__eng_advance(e, e->ops, rank);
    ps__eng_pump(e, e->ops);
}

void ps__engine_deliver(ps__engine *e, int dir, int32_t stage, int32_t mb)
{
    e->st[ps__eng_idx(e, stage, mb)] |= dir == 0 ? PS__ST_F_SENT : PS__ST_G_SENT;
    e->in_flight_transfers--;
    int32_t peer = dir == 0 ? ps__eng_next(e, stage, mb) : ps__eng_prev(e, stage, mb);
    ps__eng_wake(e, e->stage_rank[peer]);
    ps__eng_pump(e, e->ops);
}

int64_t ps__engine_done(const ps__engine *e)
{
    int64_t d = 0;
    for (int32_t r = 0; r < e->pp; r++)
        d += e->cur[r];
    return d;
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
    ps__flag st = e->st[ps__eng_idx(e, stage, mb)];
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
        ps__adderr(buf, "\n  rank %d: blocked at step %lld on %s, which ", r, (long long)e->cur[r],
                   name);
        int fwd_part_ready = 1;
        int32_t dep;
        if (a->kind == PS_F || a->kind == PS_FB) {
            fwd_part_ready = ps__eng_fwd_ready(e, a->stage, a->mb, &dep);
            if (!fwd_part_ready)
                describe_dep(e, r, 1, ps__eng_prev(e, a->stage, a->mb), a->mb, buf);
        }
        if (a->kind == PS_I || a->kind == PS_B || a->kind == PS_FB) {
            int32_t st = a->kind == PS_FB ? a->bstage : a->stage;
            int32_t mb = a->kind == PS_FB ? a->bmb : a->mb;
            if (!(e->st[ps__eng_idx(e, st, mb)] & PS__ST_F_DONE)) {
                ps_action f = {0};
                f.stage = st;
                f.mb = mb;
                ps__action_str(&f, name, sizeof name);
                ps__adderr(buf, "%swaits for its own forward %s (rank %d), which has not run",
                           fwd_part_ready ? "" : " and ", name, s->stage_rank[st]);
            } else if (!ps__eng_bwd_ready(e, st, mb, &dep)) {
                if (!fwd_part_ready)
                    ps__adderr(buf, " and ");
                describe_dep(e, r, 0, ps__eng_next(e, st, mb), mb, buf);
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
