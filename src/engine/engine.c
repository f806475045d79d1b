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
    e->parked = ps__calloc(al, p, sizeof *e->parked);
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
    if (!e->cur || !e->running || !e->parked || !e->queue || !e->st) {
        ps__engine_destroy(e);
        return PS_ENOMEM;
    }
    for (int32_t r = 0; r < s->pp; r++)
        e->total += s->len[r];
    return 0;
}

void ps__engine_record(ps__engine *e, int32_t rank, int64_t n)
{
    if (e->rec_failed)
        return;
    if (e->rec_len + 2 > e->rec_cap) {
        size_t cap = e->rec_cap ? e->rec_cap * 2 : 256;
        int32_t *p = ps__realloc(&e->al, e->rec, e->rec_cap, cap, sizeof *p);
        if (!p || n > INT32_MAX) {
            e->rec_failed = 1;
            return;
        }
        e->rec = p;
        e->rec_cap = cap;
    }
    e->rec[e->rec_len++] = rank;
    e->rec[e->rec_len++] = (int32_t)n;
}

void ps__engine_destroy(ps__engine *e)
{
    if (!e->s)
        return;
    ps__free(&e->al, e->rec, e->rec_cap, sizeof *e->rec);
    size_t p = (size_t)e->s->pp;
    ps__free(&e->al, e->cur, p, sizeof *e->cur);
    ps__free(&e->al, e->running, p, sizeof *e->running);
    ps__free(&e->al, e->parked, p, sizeof *e->parked);
    ps__free(&e->al, e->queue, p, sizeof *e->queue);
    ps__free(&e->al, e->st, (size_t)e->s->nstages * (size_t)e->s->m, sizeof *e->st);
    e->s = NULL;
}

void ps__engine_set_remote(ps__engine *e, const uint8_t *remote)
{
    e->remote = remote;
    for (int32_t r = 0; r < e->pp; r++)
        if (remote && remote[r])
            e->running[r] = 1;
}

void ps__engine_start(ps__engine *e)
{
    for (int32_t r = 0; r < e->pp; r++) {
        e->parked[r] = 1;
        ps__eng_wake(e, r);
    }
    ps__eng_pump(e, e->ops);
}

void ps__engine_complete(ps__engine *e, int32_t rank)
{
    const ps__eng_view v = ps__eng_view_of(e);
    ps__eng_finish(e, &v, e->ops, rank, &e->acts[e->off[rank] + e->cur[rank]]);
    e->cur[rank]++;
    e->running[rank] = 0;
    ps__eng_advance(e, &v, e->ops, rank);
    ps__eng_pump(e, e->ops);
}

void ps__engine_deliver(ps__engine *e, int dir, int32_t stage, int32_t mb)
{
    const ps__eng_view v = ps__eng_view_of(e);
    v.st[ps__eng_idx(&v, stage, mb)] |= dir == 0 ? PS__ST_F_SENT : PS__ST_G_SENT;
    e->in_flight_transfers--;
    size_t at = ps__eng_path(&v, mb) + (size_t)stage;
    int32_t peer = dir == 0 ? v.next[at] : v.prev[at];
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

/* Says what a missing input is waiting for: the forward output (fwd) or the input gradient
 * of stage `stage` for micro-batch mb. */
static void describe_dep(const ps__engine *e, const ps__eng_view *v, int fwd, int32_t stage,
                         int32_t mb, char *buf)
{
    char name[64];
    ps__flag st = v->st[ps__eng_idx(v, stage, mb)];
    int32_t at = v->rank[stage];
    if (fwd)
        snprintf(name, sizeof name, "%dF%d", stage, mb);
    else
        snprintf(name, sizeof name, "the backward %dB%d/%dI%d", stage, mb, stage, mb);
    if (!(st & (fwd ? PS__ST_F_DONE : PS__ST_G_DONE)))
        ps__adderr(buf, "waits for %s (rank %d), which has not run", name, at);
    else
        ps__adderr(buf, "waits for %s from rank %d, still in transit", name, at);
    (void)e;
}

void ps__engine_describe(const ps__engine *e, char *buf)
{
    const ps__eng_view v = ps__eng_view_of(e);
    for (int32_t r = 0; r < e->pp; r++) {
        char name[96];
        if (e->remote && e->remote[r]) {
            ps__adderr(buf, "\n  rank %d: remote", r);
            continue;
        }
        if (e->cur[r] >= e->len[r]) {
            ps__adderr(buf, "\n  rank %d: finished", r);
            continue;
        }
        const ps_action *a = &e->acts[e->off[r] + e->cur[r]];
        ps__action_str(a, name, sizeof name);
        if (e->running[r]) {
            ps__adderr(buf, "\n  rank %d: running %s", r, name);
            continue;
        }
        ps__adderr(buf, "\n  rank %d: blocked at step %lld on %s, which ", r, (long long)e->cur[r],
                   name);
        int fwd_ok = 1;
        int32_t dep;
        if (a->kind == PS_F || a->kind == PS_FB) {
            fwd_ok = ps__eng_fwd_ready(&v, a->stage, a->mb, &dep);
            if (!fwd_ok)
                describe_dep(e, &v, 1, dep, a->mb, buf);
        }
        if (a->kind == PS_I || a->kind == PS_B || a->kind == PS_FB) {
            int32_t st = a->kind == PS_FB ? a->bstage : a->stage;
            int32_t mb = a->kind == PS_FB ? a->bmb : a->mb;
            if (!(v.st[ps__eng_idx(&v, st, mb)] & PS__ST_F_DONE)) {
                snprintf(name, sizeof name, "%dF%d", st, mb);
                ps__adderr(buf, "%swaits for its own forward %s (rank %d), which has not run",
                           fwd_ok ? "" : " and ", name, v.rank[st]);
            } else if (!ps__eng_bwd_ready(&v, st, mb, &dep)) {
                if (!fwd_ok)
                    ps__adderr(buf, " and ");
                describe_dep(e, &v, 0, dep, mb, buf);
            }
        }
        if (a->kind == PS_W)
            ps__adderr(buf, "waits for %dI%d (rank %d), which has not run", a->stage, a->mb,
                       v.rank[a->stage]);
    }
}
