/*
 * Lowering: adds SEND/RECV actions. The engine runs the compute lists with a clock that
 * completes everything at once and records the order; when a result must cross ranks the
 * sender appends SEND to its own list and places the matching RECV on the peer's list at
 * that moment ("the sender puts our receive in place", as PyTorch's _add_send_recv does), so
 * every receive precedes its consumer and both ends of a rank pair see the same order.
 * SPDX-License-Identifier: MIT
 */
#include "engine.h"

#include <string.h>

typedef struct lower_ctx {
    ps_schedule *s;
} lower_ctx;

static inline void put(ps_schedule *s, int32_t r, const ps_action *a)
{
    s->lacts[s->loff[r] + s->llen[r]++] = *a;
}

static int lower_issue(void *ud, int32_t rank, int64_t idx, const ps_action *a,
                       const int32_t dep[2])
{
    lower_ctx *c = ud;
    (void)idx, (void)dep;
    put(c->s, rank, a);
    return 1;
}

static int lower_transfer(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to)
{
    lower_ctx *c = ud;
    ps_schedule *s = c->s;
    int32_t peer = ps__path_peer(s, dir, stage, mb);
    ps_action snd = {0}, rcv = {0};
    snd.kind = dir == 0 ? PS_SEND_F : PS_SEND_B;
    snd.stage = stage;
    snd.mb = snd.bmb = mb;
    snd.bstage = peer;
    rcv.kind = dir == 0 ? PS_RECV_F : PS_RECV_B;
    rcv.stage = peer;
    rcv.mb = rcv.bmb = mb;
    rcv.bstage = stage;
    put(s, from, &snd);
    put(s, to, &rcv);
    return 1;
}

static const ps__engine_ops lower_ops = {lower_issue, lower_transfer, NULL};

/* Adds to cap[] the SEND on the producer's rank and the RECV on the consumer's. */
static void count_edge(const ps_schedule *s, int64_t *cap, int32_t r, int dir, int32_t stage,
                       int32_t mb)
{
    if (stage < 0 || stage >= s->nstages || mb < 0 || mb >= s->m)
        return;
    int32_t peer = ps__path_peer(s, dir, stage, mb);
    if (peer >= 0 && s->stage_rank[peer] != r) {
        cap[r]++;
        cap[s->stage_rank[peer]]++;
    }
}

int ps_schedule_lower(ps_schedule *s)
{
    if (!s)
        return PS_EINVAL;
    if (s->pp <= 0 || !s->acts)
        return ps__seterr(s->err, PS_EINVAL, "the schedule is empty");
    if (s->lowered)
        return 0;
    const ps_allocator *al = &s->al;
    size_t p = (size_t)s->pp;
    int64_t *cap = ps__calloc(al, p, sizeof *cap);
    s->loff = ps__alloc(al, p + 1, sizeof *s->loff);
    s->llen = ps__calloc(al, p, sizeof *s->llen);
    if (!cap || !s->loff || !s->llen)
        goto oom;
    for (int32_t r = 0; r < s->pp; r++) {
        const ps_action *a = s->acts + s->off[r];
        cap[r] += s->len[r];
        for (int64_t i = 0; i < s->len[r]; i++) {
            int dir[2];
            int32_t stage[2], mb[2];
            for (int k = ps__action_outputs(&a[i], dir, stage, mb); k-- > 0;)
                count_edge(s, cap, r, dir[k], stage[k], mb[k]);
        }
    }
    int64_t total = 0;
    for (size_t r = 0; r < p; r++) {
        s->loff[r] = total;
        total += cap[r];
    }
    s->loff[p] = total;
    s->lacts = ps__alloc(al, (size_t)total, sizeof *s->lacts);
    if (!s->lacts)
        goto oom;
    s->lacts_cap = (size_t)total;
    ps__free(al, cap, p, sizeof *cap);
    cap = NULL;

    lower_ctx ctx = {s};
    ps__engine e;
    if (ps__engine_init(&e, s, &lower_ops, &ctx, al))
        goto oom;
    ps__engine_run_sync(&e, &lower_ops);
    int done = ps__engine_finished(&e);
    if (!done) {
        ps__seterr(s->err, PS_EDEADLOCK, "cannot lower: deadlock after %lld of %lld actions:",
                   (long long)ps__engine_done(&e), (long long)e.total);
        ps__engine_describe(&e, s->err);
    }
    ps__engine_destroy(&e);
    if (!done) {
        ps__schedule_drop_lowered(s);
        return PS_EDEADLOCK;
    }
    s->lowered = 1;
    return 0;
oom:
    ps__free(al, cap, p, sizeof *cap);
    ps__schedule_drop_lowered(s);
    return ps__seterr(s->err, PS_ENOMEM, "out of memory lowering the schedule");
}
