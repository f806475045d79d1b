/*
 * The executor: the engine (engine.h) driven by a libuv loop. The simulator completes every
 * action inside the engine's issue callback; here the issue callback hands the action to the
 * host (or to an emulation thread) and returns "later". Completions, from any thread, go
 * through one mutex-protected array and a uv_async; the loop thread drains it and feeds the
 * engine (ps__engine_complete, ps__engine_deliver), which issues whatever became ready. The
 * dependency logic is the engine's, unchanged: what the simulator simulates is what runs.
 *
 * Transfers. Between two local ranks the engine's transfer completes at once (or, when
 * emulating a non-zero c, after c on the transfer thread); an edge to a remote rank is a host
 * send, and an input from a remote rank a host receive, posted when the consuming action
 * blocks on it at the head of its rank (the engine's park hook). Remote ranks are pinned by
 * ps__engine_set_remote() so the engine never runs them here.
 *
 * The emulation threads are in workers.c, the measured results in results.c, the state all
 * three share in exec_int.h.
 *
 * Tokens name outstanding work and carry everything needed to check a completion:
 *   compute: 01 | index (48 bits) | rank (12 bits)
 *   transfer: 10 (send) or 11 (receive) | dir (1 bit) | internal (1 bit) | stage | mb (24 bits)
 * SPDX-License-Identifier: MIT
 */
#include "exec_int.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { ST_NEW = 1, ST_RUNNING = 2 };
enum { TOK_COMPUTE = 1, TOK_SEND = 2, TOK_RECV = 3 };

/* ---- tokens ------------------------------------------------------------------------------ */

static uint64_t tok_compute(int32_t rank, int64_t idx)
{
    return (uint64_t)TOK_COMPUTE << 62 | (uint64_t)idx << 12 | (uint64_t)rank;
}

static uint64_t tok_xfer(int type, int dir, int internal, int32_t stage, int32_t mb)
{
    return (uint64_t)type << 62 | (uint64_t)dir << 61 | (uint64_t)internal << 60 |
           (uint64_t)stage << 24 | (uint64_t)mb;
}

static double secs(const ps_exec *x, uint64_t t)
{
    return (double)(t - x->t0) * 1e-9;
}

/* ---- stopping ---------------------------------------------------------------------------- */

/* Ends the run with status code (0 = finished): no host callback after this; on_done follows
 * from the async callback. */
static void stop(ps_exec *x, int code)
{
    if (x->status != ST_RUNNING)
        return;
    x->status = code;
    uv_mutex_lock(&x->qmu);
    x->qstopped = 1;
    x->qlen = 0;
    uv_mutex_unlock(&x->qmu);
    uv_timer_stop(&x->timer);
    ps__workers_stop(x);
    uv_async_send(&x->async);
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void
fail(ps_exec *x, int code, const char *fmt, ...)
{
    if (x->status != ST_RUNNING)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->err, PS__ERRLEN, fmt, ap);
    va_end(ap);
    stop(x, code);
}

static void check_done(ps_exec *x)
{
    if (x->status == ST_RUNNING && x->local_done == x->local_total && x->pending == 0)
        stop(x, 0);
}

/* ---- engine callbacks -------------------------------------------------------------------- */

static int x_issue(void *ud, int32_t r, int64_t idx, const ps_action *a, const int32_t dep[2])
{
    ps_exec *x = ud;
    (void)dep;
    if (x->status != ST_RUNNING)
        return 0; /* never completes: the run is over */
    uint64_t now = uv_hrtime();
    size_t k = (size_t)(x->s->off[r] + idx);
    x->start[k] = secs(x, now);
    uint64_t tok = tok_compute(r, idx);
    if (x->cfg.emulate) {
        ps__worker_post(&x->workers[x->wslot[r]], tok, now + x->dur_ns[k]);
        return 0;
    }
    int rc = x->cfg.compute(x, a, r, tok, x->cfg.user_data);
    if (rc) {
        char name[96];
        ps__action_str(a, name, sizeof name);
        fail(x, PS_EHOST, "rank %d: the compute callback refused %s (returned %d)", r, name, rc);
    }
    return 0;
}

static int x_transfer(void *ud, int dir, int32_t stage, int32_t mb, int32_t from, int32_t to)
{
    ps_exec *x = ud;
    if (x->status != ST_RUNNING)
        return 0;
    size_t at = ps__sm(x->e.m, stage, mb);
    if (!x->remote[to]) {
        if (!x->c_ns)
            return 1; /* in-process: the result is already where the consumer runs */
        x->xf[at] |= (uint8_t)(1u << dir);
        x->pending++;
        ps__worker_post(&x->workers[x->n_workers - 1], tok_xfer(TOK_SEND, dir, 1, stage, mb),
                        uv_hrtime() + x->c_ns);
        return 0;
    }
    size_t p = (size_t)ps__path_of(x->s, mb) * x->e.nstages + (size_t)stage;
    ps_action a;
    memset(&a, 0, sizeof a);
    a.kind = dir == 0 ? PS_SEND_F : PS_SEND_B;
    a.stage = stage;
    a.mb = a.bmb = mb;
    a.bstage = dir == 0 ? x->e.next[p] : x->e.prev[p];
    x->xf[at] |= (uint8_t)(1u << dir);
    x->pending++;
    int rc = x->cfg.send(x, &a, from, tok_xfer(TOK_SEND, dir, 0, stage, mb), x->cfg.user_data);
    if (rc) {
        char name[96];
        ps__action_str(&a, name, sizeof name);
        fail(x, PS_EHOST, "rank %d: the send callback refused %s (returned %d)", from, name, rc);
    }
    return 0;
}

/* Posts the receive of one input of a (part 0: forward, 1: backward) if it comes from a
 * remote rank and is neither here nor posted yet. */
static void post_recv(ps_exec *x, int32_t r, const ps_action *a, int part, int32_t from_stage)
{
    if (from_stage < 0 || !x->remote[x->e.stage_rank[from_stage]])
        return;
    int fb = a->kind == PS_FB && part == 1;
    int32_t mb = fb ? a->bmb : a->mb;
    size_t at = ps__sm(x->e.m, from_stage, mb);
    ps__flag have = part == 0 ? PS__ST_F_SENT : PS__ST_G_SENT;
    if ((x->e.st[at] & have) || (x->xf[at] & (1u << part)))
        return;
    x->xf[at] |= (uint8_t)(1u << part);
    x->e.in_flight_transfers++; /* ps__engine_deliver() will account for it */
    ps_action ra;
    memset(&ra, 0, sizeof ra);
    ra.kind = part == 0 ? PS_RECV_F : PS_RECV_B;
    ra.stage = fb ? a->bstage : a->stage;
    ra.bstage = from_stage;
    ra.mb = ra.bmb = mb;
    int rc = x->cfg.recv(x, &ra, r, tok_xfer(TOK_RECV, part, 0, from_stage, mb), x->cfg.user_data);
    if (rc) {
        char name[96];
        ps__action_str(&ra, name, sizeof name);
        fail(x, PS_EHOST, "rank %d: the recv callback refused %s (returned %d)", r, name, rc);
    }
}

static void x_park(void *ud, int32_t r, int64_t idx, const ps_action *a)
{
    ps_exec *x = ud;
    (void)idx;
    if (x->all_local || x->status != ST_RUNNING)
        return;
    const ps__eng_view v = ps__eng_view_of(&x->e);
    int32_t dep[2];
    ps__eng_deps(&v, a, dep);
    post_recv(x, r, a, 0, dep[0]);
    if (x->status == ST_RUNNING)
        post_recv(x, r, a, 1, dep[1]);
}

static const ps__engine_ops exec_ops = {x_issue, x_transfer, x_park};

/* ---- completions ------------------------------------------------------------------------- */

static void handle(ps_exec *x, uint64_t token, int status, uint64_t now)
{
    int type = (int)(token >> 62);
    if (type == TOK_COMPUTE) {
        int32_t r = (int32_t)(token & 0xfff);
        int64_t idx = (int64_t)((token >> 12) & ((UINT64_C(1) << 48) - 1));
        if (r >= x->e.pp || x->remote[r] || !x->e.running[r] || x->e.cur[r] != idx ||
            (token >> 60 & 3) != 0) {
            fail(x, PS_EHOST, "ps_exec_complete: token 0x%llx names no running action",
                 (unsigned long long)token);
            return;
        }
        size_t k = (size_t)(x->s->off[r] + idx);
        const ps_action *a = &x->s->acts[k];
        if (status) {
            char name[96];
            ps__action_str(a, name, sizeof name);
            fail(x, PS_EHOST, "rank %d: %s failed with status %d", r, name, status);
            return;
        }
        x->end[k] = secs(x, now);
        x->local_done++;
        x->last_progress = now;
        if (x->cfg.on_event)
            x->cfg.on_event(x, r, idx, a, x->start[k], x->end[k], x->cfg.user_data);
        if (x->status == ST_RUNNING)
            ps__engine_complete(&x->e, r);
        return;
    }
    int dir = (int)(token >> 61 & 1), internal = (int)(token >> 60 & 1);
    int32_t stage = (int32_t)(token >> 24 & 0xfffffff), mb = (int32_t)(token & 0xffffff);
    if (type == 0 || stage >= x->s->nstages || mb >= x->s->m ||
        !(x->xf[ps__sm(x->e.m, stage, mb)] & (1u << dir)) || (internal && type != TOK_SEND)) {
        fail(x, PS_EHOST, "ps_exec_complete: token 0x%llx names no pending transfer",
             (unsigned long long)token);
        return;
    }
    if (status) {
        fail(x, PS_EHOST, "the %s of %s %d of micro-batch %d failed with status %d",
             type == TOK_SEND ? "send" : "receive",
             dir ? "the input gradient of stage" : "the activation of stage", stage, mb, status);
        return;
    }
    x->xf[ps__sm(x->e.m, stage, mb)] &= (uint8_t) ~(1u << dir);
    if (type == TOK_SEND)
        x->pending--;
    x->last_progress = now;
    ps__engine_deliver(&x->e, dir, stage, mb);
}

/* Handles the queued completions on the loop thread; also reports the end of the run. */
static void on_async(uv_async_t *h)
{
    ps_exec *x = h->data;
    /* A bounded number of rounds, so a host that completes inside its callbacks cannot keep
     * the loop from its other handles; the async is re-armed when work is left. */
    for (int round = 0; round < 64 && x->status == ST_RUNNING; round++) {
        uv_mutex_lock(&x->qmu);
        ps__completion *b = x->q;
        size_t n = x->qlen;
        int overflow = x->qoverflow;
        x->q = x->batch;
        x->batch = b;
        x->qlen = 0;
        uv_mutex_unlock(&x->qmu);
        if (overflow) {
            fail(x, PS_EHOST, "ps_exec_complete: more completions than outstanding actions");
            break;
        }
        if (!n)
            break;
        uint64_t now = uv_hrtime();
        for (size_t i = 0; i < n && x->status == ST_RUNNING; i++)
            handle(x, b[i].token, b[i].status, now);
        check_done(x);
        if (round == 63 && x->status == ST_RUNNING)
            uv_async_send(&x->async);
    }
    if (x->status <= 0 && !x->done_reported && !x->closing) {
        x->done_reported = 1;
        uv_unref((uv_handle_t *)&x->async);
        if (x->cfg.on_done)
            x->cfg.on_done(x, x->status, x->cfg.user_data);
    }
}

/* Names the outstanding transfers (at most a few) after the engine's per-rank description. */
static void describe_transfers(ps_exec *x)
{
    int shown = 0;
    for (size_t i = 0; i < x->nsm && shown < 8; i++)
        for (int dir = 0; dir < 2; dir++)
            if (x->xf[i] & (1u << dir)) {
                int32_t stage = (int32_t)(i / x->e.m), mb = (int32_t)(i % x->e.m);
                ps__adderr(x->err, "\n  transfer pending: %s of stage %d, micro-batch %d",
                           dir ? "input gradient" : "activation", stage, mb);
                shown++;
            }
}

static void on_timer(uv_timer_t *h)
{
    ps_exec *x = h->data;
    if (x->status != ST_RUNNING)
        return;
    uint64_t now = uv_hrtime(), idle = now - x->last_progress;
    if (idle < x->stall_ns) {
        uint64_t left_ms = (x->stall_ns - idle + 999999) / 1000000;
        uv_timer_start(&x->timer, on_timer, left_ms ? left_ms : 1, 0);
        return;
    }
    ps__seterr(x->err, PS_ESTALL,
               "stalled: nothing completed for %.3g s after %lld of %lld local actions:",
               (double)idle * 1e-9, (long long)x->local_done, (long long)x->local_total);
    ps__engine_describe(&x->e, x->err);
    describe_transfers(x);
    stop(x, PS_ESTALL);
}

/* ---- life cycle -------------------------------------------------------------------------- */

void ps_exec_config_init(ps_exec_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->time_scale = 1e-3;
}

/* Frees x and everything it holds: the one place of cleanup, reached from ps_exec_new() when a
 * step before the handles failed and from the handles' close callback otherwise. */
static void destroy(ps_exec *x)
{
    ps_allocator al = x->al;
    size_t pp = (size_t)x->s->pp;
    ps__workers_free(x);
    ps__free(&al, x->wslot, pp, sizeof *x->wslot);
    if (x->qmu_ok)
        uv_mutex_destroy(&x->qmu);
    if (x->engine_ok)
        ps__engine_destroy(&x->e);
    ps__free(&al, x->remote, pp, sizeof *x->remote);
    ps__free(&al, x->start, x->nacts, sizeof *x->start);
    ps__free(&al, x->end, x->nacts, sizeof *x->end);
    ps__free(&al, x->xf, x->nsm, sizeof *x->xf);
    ps__free(&al, x->q, x->qcap, sizeof *x->q);
    ps__free(&al, x->batch, x->qcap, sizeof *x->batch);
    ps__free(&al, x, 1, sizeof *x);
}

static void on_closed(uv_handle_t *h)
{
    ps_exec *x = h->data;
    if (--x->handles)
        return;
    if (x->close_cb)
        x->close_cb(x, x->cfg.user_data);
    destroy(x);
}

/* Closes the handles initialised on the loop; the last one's close callback frees x. */
static void close_handles(ps_exec *x)
{
    int timer = x->handles == 2;
    uv_close((uv_handle_t *)&x->async, on_closed);
    if (timer)
        uv_close((uv_handle_t *)&x->timer, on_closed);
}

/* ---- ps_exec_new ------------------------------------------------------------------------- */

/* Number of results that local ranks send to another rank: a bound on pending transfers. */
static int64_t cross_edges(const ps_exec *x)
{
    const ps_schedule *s = x->s;
    int64_t n = 0;
    for (int32_t r = 0; r < s->pp; r++) {
        if (x->remote[r])
            continue;
        for (int64_t i = 0; i < s->len[r]; i++) {
            const ps_action *a = &s->acts[s->off[r] + i];
            int f = a->kind == PS_F || a->kind == PS_FB;
            int b = a->kind == PS_I || a->kind == PS_B || a->kind == PS_FB;
            if (f) {
                int32_t nx = s->path_next[(size_t)ps__path_of(s, a->mb) * (size_t)s->nstages +
                                          (size_t)a->stage];
                n += nx >= 0 && s->stage_rank[nx] != r;
            }
            if (b) {
                int32_t st = a->kind == PS_FB ? a->bstage : a->stage;
                int32_t mb = a->kind == PS_FB ? a->bmb : a->mb;
                int32_t pv =
                    s->path_prev[(size_t)ps__path_of(s, mb) * (size_t)s->nstages + (size_t)st];
                n += pv >= 0 && s->stage_rank[pv] != r;
            }
        }
    }
    return n;
}

static int check_config(const ps_schedule *s, const ps_exec_config *cfg)
{
    if (!cfg->emulate && !cfg->compute)
        return PS_EINVAL;
    if (cfg->emulate && (!cfg->problem || !(cfg->time_scale > 0) || !isfinite(cfg->time_scale)))
        return PS_EINVAL;
    if (!(cfg->stall_timeout_s >= 0) || !isfinite(cfg->stall_timeout_s))
        return PS_EINVAL;
    if (cfg->local_ranks) {
        if (cfg->n_local < 0 || cfg->n_local > s->pp)
            return PS_EINVAL;
        for (int i = 0; i < cfg->n_local; i++)
            if (cfg->local_ranks[i] < 0 || cfg->local_ranks[i] >= s->pp)
                return PS_EINVAL;
    }
    return 0;
}

static int exec_alloc(ps_exec **out, const ps_schedule *s, const ps_exec_config *cfg,
                      const ps_allocator *alloc)
{
    ps_allocator al;
    ps__alloc_init(&al, alloc);
    ps_exec *x = ps__calloc(&al, 1, sizeof *x);
    if (!x)
        return PS_ENOMEM;
    x->al = al;
    x->s = s;
    x->cfg = *cfg;
    x->cfg.local_ranks = NULL; /* copied into remote[] */
    x->status = ST_NEW;
    x->qstopped = 1;
    *out = x;
    return 0;
}

/* The measured timeline (-1: did not run), the posted-transfer bits and the per-rank
 * tables. */
static int alloc_tables(ps_exec *x)
{
    const ps_schedule *s = x->s;
    size_t pp = (size_t)s->pp;
    for (int32_t r = 0; r < s->pp; r++)
        if ((size_t)(s->off[r] + s->len[r]) > x->nacts)
            x->nacts = (size_t)(s->off[r] + s->len[r]);
    x->nsm = (size_t)s->nstages * (size_t)s->m;
    x->remote = ps__calloc(&x->al, pp, sizeof *x->remote);
    x->start = ps__alloc(&x->al, x->nacts, sizeof *x->start);
    x->end = ps__alloc(&x->al, x->nacts, sizeof *x->end);
    x->xf = ps__calloc(&x->al, x->nsm, sizeof *x->xf);
    x->wslot = ps__alloc(&x->al, pp, sizeof *x->wslot);
    if (!x->remote || !x->start || !x->end || !x->xf || !x->wslot)
        return PS_ENOMEM;
    for (size_t k = 0; k < x->nacts; k++)
        x->start[k] = x->end[k] = -1.0;
    return 0;
}

/* Which ranks run here (cfg->local_ranks, NULL = all), and the emulation worker of each. A
 * rank elsewhere needs the host's send and recv. */
static int place_ranks(ps_exec *x, const ps_exec_config *cfg)
{
    const ps_schedule *s = x->s;
    x->all_local = cfg->local_ranks == NULL;
    if (cfg->local_ranks) {
        memset(x->remote, 1, (size_t)s->pp);
        for (int i = 0; i < cfg->n_local; i++)
            x->remote[cfg->local_ranks[i]] = 0;
        x->all_local = 1;
        for (int32_t r = 0; r < s->pp; r++)
            x->all_local &= !x->remote[r];
    }
    for (int32_t r = 0; r < s->pp; r++) {
        x->wslot[r] = x->remote[r] ? -1 : x->n_local;
        x->n_local += !x->remote[r];
        if (!x->remote[r])
            x->local_total += s->len[r];
    }
    if (!x->all_local && (!cfg->send || !cfg->recv))
        return PS_EINVAL;
    return 0;
}

/* The completion queue and its swap buffer: room for every completion that can be
 * outstanding (a compute action and two transfers per local rank, and the cross-rank edges). */
static int alloc_completions(ps_exec *x, int64_t edges)
{
    x->qcap = (size_t)(3 * x->n_local + edges + 1);
    x->q = ps__alloc(&x->al, x->qcap, sizeof *x->q);
    x->batch = ps__alloc(&x->al, x->qcap, sizeof *x->batch);
    return x->q && x->batch ? 0 : PS_ENOMEM;
}

static int init_engine(ps_exec *x)
{
    int rc = ps__engine_init(&x->e, x->s, &exec_ops, x, &x->al);
    if (rc)
        return rc;
    x->engine_ok = 1;
    ps__engine_set_remote(&x->e, x->all_local ? NULL : x->remote);
    return 0;
}

/*
 * The completion lock, then the handles. The handles come last: once initialised, only a
 * close through the loop releases them. Neither init fails in libuv 1.x (the loop's wake-up
 * descriptor exists since uv_loop_init; uv_timer_init always returns 0), but both are checked,
 * the async first: if it failed, nothing is left on the loop; if the timer did, the async is
 * closed and x freed by the loop's next iteration.
 */
static int init_handles(ps_exec *x, uv_loop_t *loop)
{
    if (uv_mutex_init(&x->qmu))
        return PS_ESYS;
    x->qmu_ok = 1;
    if (uv_async_init(loop, &x->async, on_async))
        return PS_ESYS;
    x->async.data = x;
    x->handles = 1;
    if (uv_timer_init(loop, &x->timer))
        return PS_ESYS;
    x->timer.data = x;
    x->handles = 2;
    uv_unref((uv_handle_t *)&x->async); /* an idle executor does not keep the loop alive */
    return 0;
}

int ps_exec_new(ps_exec **out, uv_loop_t *loop, const ps_schedule *s, const ps_exec_config *cfg,
                const ps_allocator *alloc)
{
    ps_exec *x;
    int64_t edges;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    if (!loop || !s || !cfg || s->pp <= 0 || !s->acts)
        return PS_EINVAL;
    int rc = check_config(s, cfg);
    if (rc)
        return rc;
    rc = exec_alloc(&x, s, cfg, alloc);
    if (rc)
        return rc;
    x->loop = loop;
    rc = alloc_tables(x);
    if (rc)
        goto fail;
    rc = place_ranks(x, cfg);
    if (rc)
        goto fail;
    edges = cross_edges(x);
    rc = alloc_completions(x, edges);
    if (rc)
        goto fail;
    if (cfg->emulate && (rc = ps__workers_new(x, cfg->problem, edges)))
        goto fail;
    rc = init_engine(x);
    if (rc)
        goto fail;
    rc = init_handles(x, loop);
    if (rc)
        goto fail;
    x->stall_ns = (uint64_t)(cfg->stall_timeout_s * 1e9);
    *out = x;
    return 0;
fail:
    if (x->handles)
        close_handles(x);
    else
        destroy(x);
    return rc;
}

/* ---- running ----------------------------------------------------------------------------- */

int ps_exec_start(ps_exec *x)
{
    if (!x)
        return PS_EINVAL;
    if (x->status != ST_NEW || x->closing)
        return PS_ESTATE;
    int rc = ps__workers_start(x);
    if (rc)
        return rc;
    uv_mutex_lock(&x->qmu);
    x->qstopped = 0;
    uv_mutex_unlock(&x->qmu);
    x->status = ST_RUNNING;
    x->t0 = x->last_progress = uv_hrtime();
    uv_ref((uv_handle_t *)&x->async);
    if (x->stall_ns) {
        uint64_t ms = (x->stall_ns + 999999) / 1000000;
        uv_timer_start(&x->timer, on_timer, ms ? ms : 1, 0);
    }
    ps__engine_start(&x->e);
    check_done(x);
    return 0;
}

int ps_exec_complete(ps_exec *x, uint64_t token, int status)
{
    if (!x || !token)
        return PS_EINVAL;
    int rc = 0;
    uv_mutex_lock(&x->qmu);
    if (x->qstopped) {
        rc = PS_ESTATE;
    } else if (x->qlen == x->qcap) {
        x->qoverflow = 1;
        rc = PS_ERANGE;
    } else {
        x->q[x->qlen].token = token;
        x->q[x->qlen].status = status;
        x->qlen++;
    }
    uv_mutex_unlock(&x->qmu);
    if (rc != PS_ESTATE)
        uv_async_send(&x->async);
    return rc;
}

int ps_exec_cancel(ps_exec *x)
{
    if (!x)
        return PS_EINVAL;
    if (x->status != ST_RUNNING || x->closing)
        return PS_ESTATE;
    fail(x, PS_ECANCELED, "canceled after %lld of %lld local actions", (long long)x->local_done,
         (long long)x->local_total);
    return 0;
}

void ps_exec_close(ps_exec *x, ps_exec_close_cb close_cb)
{
    if (!x || x->closing)
        return;
    if (x->status == ST_RUNNING)
        fail(x, PS_ECANCELED, "closed while running, after %lld of %lld local actions",
             (long long)x->local_done, (long long)x->local_total);
    x->closing = 1;
    x->close_cb = close_cb;
    uv_mutex_lock(&x->qmu);
    x->qstopped = 1;
    uv_mutex_unlock(&x->qmu);
    ps__workers_join(x);
    close_handles(x);
}
