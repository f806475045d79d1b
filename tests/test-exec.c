/*
 * Check suite of the executor (src/exec/): every family runs to completion on a private libuv
 * loop with hosts that complete at once or from another thread, and the measured timeline
 * respects every dependency; emulated runs match the simulator; host errors, stalls and
 * cancellation end cleanly (uv_loop_close() == 0, nothing leaked); remote ranks go through the
 * host's send/recv; argument errors and allocation failures.
 * SPDX-License-Identifier: MIT
 */
#define _GNU_SOURCE /* RTLD_NEXT, for the fault injection below */
#include "common.h"

#include <pipesched/exec.h>

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>

/* ---- test hosts -------------------------------------------------------------------------- */

typedef struct host {
    ps_exec *x;
    int threaded;    /* complete from the host thread instead of inside the callback */
    long fail_at;    /* compute call that returns an error (0 = never) */
    long bad_status; /* compute call completed with status 1 (0 = never) */
    int never_rank;  /* rank whose first action is never completed (-1 = none) */
    long cancel_at;  /* cancel after this many events (0 = never) */
    long computes, sends, recvs, events, done_calls, after_done;
    int done_status;
    /* host thread: a queue of tokens */
    uv_thread_t tid;
    uv_mutex_t mu;
    uv_cond_t cv;
    uint64_t *toks;
    size_t n, cap;
    int quit;
} host;

static void host_push(host *h, uint64_t tok)
{
    uv_mutex_lock(&h->mu);
    ck_assert(h->n < h->cap);
    h->toks[h->n++] = tok;
    uv_cond_signal(&h->cv);
    uv_mutex_unlock(&h->mu);
}

static void host_thread(void *arg)
{
    host *h = arg;
    uv_mutex_lock(&h->mu);
    for (;;) {
        while (!h->n && !h->quit)
            uv_cond_wait(&h->cv, &h->mu);
        if (!h->n && h->quit)
            break;
        uint64_t tok = h->toks[0];
        memmove(h->toks, h->toks + 1, (h->n - 1) * sizeof *h->toks);
        h->n--;
        uv_mutex_unlock(&h->mu);
        (void)ps_exec_complete(h->x, tok, 0);
        uv_mutex_lock(&h->mu);
    }
    uv_mutex_unlock(&h->mu);
}

static void host_init(host *h, int threaded)
{
    memset(h, 0, sizeof *h);
    h->threaded = threaded;
    h->never_rank = -1;
    h->done_status = 1;
    if (threaded) {
        h->cap = 1 << 16;
        h->toks = malloc(h->cap * sizeof *h->toks);
        ck_assert_ptr_nonnull(h->toks);
        ck_assert_int_eq(uv_mutex_init(&h->mu), 0);
        ck_assert_int_eq(uv_cond_init(&h->cv), 0);
        ck_assert_int_eq(uv_thread_create(&h->tid, host_thread, h), 0);
    }
}

/* Stops the host thread (after the tokens it holds, which the stopped executor ignores). */
static void host_fini(host *h)
{
    if (!h->threaded)
        return;
    uv_mutex_lock(&h->mu);
    h->quit = 1;
    uv_cond_signal(&h->cv);
    uv_mutex_unlock(&h->mu);
    uv_thread_join(&h->tid);
    uv_cond_destroy(&h->cv);
    uv_mutex_destroy(&h->mu);
    free(h->toks);
}

static int host_finish(host *h, uint64_t tok, int status)
{
    if (h->threaded && !status)
        host_push(h, tok);
    else
        ck_assert_int_eq(ps_exec_complete(h->x, tok, status), 0);
    return 0;
}

static int on_compute(ps_exec *x, const ps_action *a, int rank, uint64_t tok, void *ud)
{
    host *h = ud;
    (void)a;
    ck_assert_ptr_eq(x, h->x);
    if (h->done_calls)
        h->after_done++;
    h->computes++;
    if (h->fail_at && h->computes == h->fail_at)
        return 7;
    if (rank == h->never_rank && a->kind == PS_F && a->mb == 0)
        return 0;
    return host_finish(h, tok, h->bad_status && h->computes == h->bad_status ? 1 : 0);
}

static int on_send(ps_exec *x, const ps_action *a, int rank, uint64_t tok, void *ud)
{
    host *h = ud;
    (void)x;
    ck_assert(a->kind == PS_SEND_F || a->kind == PS_SEND_B);
    (void)rank;
    h->sends++;
    return host_finish(h, tok, 0);
}

static int on_recv(ps_exec *x, const ps_action *a, int rank, uint64_t tok, void *ud)
{
    host *h = ud;
    (void)x;
    ck_assert(a->kind == PS_RECV_F || a->kind == PS_RECV_B);
    (void)rank;
    h->recvs++;
    return host_finish(h, tok, 0);
}

static void on_event(ps_exec *x, int rank, int64_t index, const ps_action *a, double s, double e,
                     void *ud)
{
    host *h = ud;
    (void)rank, (void)index, (void)a;
    ck_assert(e >= s && s >= 0);
    if (h->done_calls)
        h->after_done++;
    h->events++;
    if (h->cancel_at && h->events == h->cancel_at)
        ck_assert_int_eq(ps_exec_cancel(x), 0);
}

static void on_done(ps_exec *x, int status, void *ud)
{
    host *h = ud;
    (void)x;
    h->done_calls++;
    h->done_status = status;
}

static void config_for(ps_exec_config *cfg, host *h)
{
    ps_exec_config_init(cfg);
    cfg->compute = on_compute;
    cfg->send = on_send;
    cfg->recv = on_recv;
    cfg->on_event = on_event;
    cfg->on_done = on_done;
    cfg->user_data = h;
}

static int closed;

static void on_close(ps_exec *x, void *ud)
{
    (void)x, (void)ud;
    closed++;
}

/* Runs the loop until the executor stopped, closes it and checks that nothing is left. */
static void run_and_close(uv_loop_t *loop, ps_exec *x, host *h)
{
    ck_assert_int_eq(uv_run(loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(h->done_calls, 1);
    ck_assert_int_eq(ps_exec_status(x), h->done_status);
    host_fini(h);
    int before = closed;
    ps_exec_close(x, on_close);
    ck_assert_int_eq(uv_run(loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(closed, before + 1);
    ck_assert_int_eq(h->after_done, 0);
}

/* ---- dependency check of a timeline -------------------------------------------------------- */

/* Every action starts after its rank's previous action and after the actions whose results it
 * consumes ended (the paths come from the public accessors). */
static void check_order(const ps_schedule *s, const double *const *st, const double *const *en)
{
    int pp = ps_schedule_pp(s), ns = ps_schedule_num_stages(s), m = ps_schedule_microbatches(s);
    size_t sm = (size_t)ns * (size_t)m;
    double *tf = malloc(sm * sizeof *tf), *tg = malloc(sm * sizeof *tg);
    double *ti = malloc(sm * sizeof *ti);
    int *next = malloc(sm * sizeof *next), *prev = malloc(sm * sizeof *prev);
    ck_assert(tf && tg && ti && next && prev);
    for (size_t k = 0; k < sm; k++)
        tf[k] = tg[k] = ti[k] = -1, next[k] = prev[k] = -1;
    for (int p = 0; p < ps_schedule_num_paths(s); p++) {
        const int32_t *stages;
        int n, first, count;
        ck_assert_int_eq(ps_schedule_path(s, p, &stages, &n, &first, &count), 0);
        for (int j = first; j < first + count; j++)
            for (int i = 0; i < n; i++) {
                next[(size_t)stages[i] * (size_t)m + (size_t)j] = i + 1 < n ? stages[i + 1] : -1;
                prev[(size_t)stages[i] * (size_t)m + (size_t)j] = i ? stages[i - 1] : -1;
            }
    }
    for (int r = 0; r < pp; r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
            ck_assert(st[r][i] >= 0 && en[r][i] >= st[r][i]);
            size_t f = (size_t)a[i].stage * (size_t)m + (size_t)a[i].mb;
            size_t b = a[i].kind == PS_FB ? (size_t)a[i].bstage * (size_t)m + (size_t)a[i].bmb : f;
            if (a[i].kind == PS_F || a[i].kind == PS_FB)
                tf[f] = en[r][i];
            if (a[i].kind == PS_B || a[i].kind == PS_FB || a[i].kind == PS_I)
                tg[b] = en[r][i];
            if (a[i].kind == PS_I || (a[i].kind == PS_FB && a[i].bkind == PS_I))
                ti[b] = en[r][i];
        }
    }
    for (int r = 0; r < pp; r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
            double t = st[r][i];
            if (i)
                ck_assert_msg(t >= en[r][i - 1], "rank %d step %zu overlaps", r, i);
            int32_t fs = a[i].stage, fm = a[i].mb;
            int32_t bs = a[i].kind == PS_FB ? a[i].bstage : a[i].stage;
            int32_t bm = a[i].kind == PS_FB ? a[i].bmb : a[i].mb;
            if (a[i].kind == PS_F || a[i].kind == PS_FB) {
                int pv = prev[(size_t)fs * (size_t)m + (size_t)fm];
                if (pv >= 0)
                    ck_assert_msg(t >= tf[(size_t)pv * (size_t)m + (size_t)fm] &&
                                      tf[(size_t)pv * (size_t)m + (size_t)fm] >= 0,
                                  "rank %d step %zu starts before its input", r, i);
            }
            if (a[i].kind == PS_B || a[i].kind == PS_I || a[i].kind == PS_FB) {
                size_t own = (size_t)bs * (size_t)m + (size_t)bm;
                ck_assert(tf[own] >= 0 && t >= tf[own]);
                int nx = next[own];
                if (nx >= 0)
                    ck_assert_msg(tg[(size_t)nx * (size_t)m + (size_t)bm] >= 0 &&
                                      t >= tg[(size_t)nx * (size_t)m + (size_t)bm],
                                  "rank %d step %zu starts before its gradient", r, i);
            }
            if (a[i].kind == PS_W) {
                size_t own = (size_t)fs * (size_t)m + (size_t)fm;
                ck_assert(ti[own] >= 0 && t >= ti[own]);
            }
        }
    }
    free(tf), free(tg), free(ti), free(next), free(prev);
}

static void check_exec_order(const ps_schedule *s, const ps_exec *x)
{
    int pp = ps_schedule_pp(s);
    const double *st[64], *en[64];
    ck_assert_int_le(pp, 64);
    for (int r = 0; r < pp; r++) {
        st[r] = ps_exec_starts(x, r);
        en[r] = ps_exec_ends(x, r);
    }
    check_order(s, st, en);
}

/* Generates and validates family/pp/vpp/m; NULL when the family rejects the sizes. */
static ps_schedule *make_schedule(const char *family, int pp, int vpp, int m, ps_problem **pbo)
{
    ps_problem *pb = make_problem(family, pp, vpp, m, 1, 1, 1, 0);
    ps_schedule *s = NULL;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    if (rc == PS_EUNSUPPORTED) {
        ps_schedule_free(s);
        ps_problem_free(pb);
        return NULL;
    }
    ck_assert_msg(rc == 0, "%s: %s", family, ps_schedule_last_error(s));
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    if (pbo)
        *pbo = pb;
    else
        ps_problem_free(pb);
    return s;
}

/* Runs s under a host; returns the number of compute actions that ran. */
static void run_checked(const ps_schedule *s, int threaded)
{
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    host h;
    host_init(&h, threaded);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    ps_exec *x = NULL;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    h.x = x;
    ck_assert_int_eq(ps_exec_status(x), 1);
    ck_assert_int_eq(ps_exec_start(x), 0);
    ck_assert_int_eq(ps_exec_start(x), PS_ESTATE);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_msg(h.done_status == 0, "status %d: %s", h.done_status, ps_exec_last_error(x));
    ck_assert_int_eq(h.events, (long)ps_schedule_total_actions(s));
    ck_assert_int_eq(h.computes, (long)ps_schedule_total_actions(s));
    ck_assert_int_eq(h.sends + h.recvs, 0); /* every rank is local */
    int pp = ps_schedule_pp(s);
    check_exec_order(s, x);
    ps_metrics m;
    ck_assert_int_eq(ps_exec_metrics(x, 1.0, &m), 0);
    ck_assert(m.makespan > 0 && m.pp == pp);
    host_fini(&h);
    h.threaded = 0;
    ps_exec_close(x, NULL);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
}

START_TEST(exec_every_family)
{
    static const int grid[][2] = {{1, 1}, {1, 3}, {2, 2}, {2, 5}, {4, 4}, {4, 8}, {3, 7}};
    int ran = 0;
    for (size_t f = 0; f < ps_family_count(); f++) {
        ps_family_info fi;
        ck_assert_int_eq(ps_family_get(f, &fi), 0);
        for (size_t g = 0; g < sizeof grid / sizeof grid[0]; g++) {
            ps_schedule *s = make_schedule(fi.name, grid[g][0], 0, grid[g][1], NULL);
            if (!s)
                continue;
            run_checked(s, _i);
            ran++;
            ps_schedule_free(s);
        }
    }
    ck_assert_int_ge(ran, (int)ps_family_count());
}
END_TEST

/* ---- fidelity ------------------------------------------------------------------------------ */

/* Relative makespan error of an emulated run of family/pp/vpp/m against the simulator, with
 * micro-batch weights w (m of them; NULL: none), which the emulation must time too. */
static double fidelity(const char *family, int pp, int vpp, int m, const double *w, double scale)
{
    ps_problem *pb;
    ps_schedule *s = make_schedule(family, pp, vpp, m, &pb);
    ck_assert_ptr_nonnull(s);
    if (w)
        ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, w, (size_t)m), 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_metrics ms, mx, mm;
    ck_assert_int_eq(ps_sim_metrics(sim, &ms), 0);
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    host h;
    host_init(&h, 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.compute = NULL;
    cfg.emulate = 1;
    cfg.problem = pb;
    cfg.time_scale = scale;
    ps_exec *x;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    h.x = x;
    ck_assert_int_eq(ps_exec_start(x), 0);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_msg(h.done_status == 0, "%s", ps_exec_last_error(x));
    ck_assert_int_eq(h.computes, 0);
    ck_assert_int_eq(ps_exec_metrics(x, scale, &mx), 0);
    /* The measured timeline loaded into the simulator gives the same figures. */
    ck_assert_int_eq(ps_exec_measured(x, scale, sim), 0);
    ck_assert_int_eq(ps_sim_metrics(sim, &mm), 0);
    ck_assert_double_eq_tol(mm.makespan, mx.makespan, 1e-9);
    check_exec_order(s, x);
    ps_exec_close(x, NULL);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    double err = fabs(mx.makespan - ms.makespan) / ms.makespan;
    fprintf(stderr,
            "fidelity %s pp=%d vpp=%d m=%d scale=%g: simulated %g measured %g error %.3f%%\n",
            family, pp, vpp, m, scale, ms.makespan, mx.makespan, 100 * err);
    return err;
}

START_TEST(exec_fidelity)
{
    static const double uneven[8] = {1, 2, 0.5, 1.5, 1, 0.25, 2, 1};
    static const struct {
        const char *family;
        int pp, vpp, m;
        const double *w;
    } cases[] = {{"1f1b", 2, 1, 8, NULL},  {"1f1b", 4, 1, 8, NULL},        {"gpipe", 4, 1, 8, NULL},
                 {"zb-h1", 4, 1, 4, NULL}, {"interleaved", 4, 2, 4, NULL}, {"1f1b", 8, 1, 4, NULL},
                 {"1f1b", 4, 1, 8, uneven}};
    /* 10 ms per cost unit: each run takes 0.15 to 0.33 s. The error is a fixed dispatch
     * latency per action on the critical path (tens of microseconds when the loop thread
     * must be woken), so longer actions make it relatively smaller. */
    const double scale = 1e-2;
    /* The best of five runs: on a shared virtual machine a run now and then loses tens of
     * milliseconds to the host. */
    double best = 1;
    for (int k = 0; k < 5 && best > 0.02; k++) {
        double e = fidelity(cases[_i].family, cases[_i].pp, cases[_i].vpp, cases[_i].m, cases[_i].w,
                            scale);
        best = e < best ? e : best;
    }
    ck_assert_msg(best <= 0.02, "makespan error %.3f%% above 2%%", 100 * best);
}
END_TEST

/* ---- faults -------------------------------------------------------------------------------- */

static ps_exec *start_host(uv_loop_t *loop, const ps_schedule *s, host *h, double stall)
{
    ck_assert_int_eq(uv_loop_init(loop), 0);
    ps_exec_config cfg;
    config_for(&cfg, h);
    cfg.stall_timeout_s = stall;
    ps_exec *x;
    ck_assert_int_eq(ps_exec_new(&x, loop, s, &cfg, NULL), 0);
    h->x = x;
    ck_assert_int_eq(ps_exec_start(x), 0);
    return x;
}

START_TEST(exec_host_error)
{
    ps_schedule *s = make_schedule("1f1b", 4, 0, 8, NULL);
    for (int mode = 0; mode < 2; mode++) {
        uv_loop_t loop;
        host h;
        host_init(&h, _i);
        if (mode == 0)
            h.fail_at = 9;
        else
            h.bad_status = 9;
        ps_exec *x = start_host(&loop, s, &h, 0);
        run_and_close(&loop, x, &h);
        ck_assert_int_eq(h.done_status, PS_EHOST);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
    }
    ps_schedule_free(s);
}
END_TEST

static char stall_msg[4096];

static void keep_msg(ps_exec *x, int status, void *ud)
{
    on_done(x, status, ud);
    snprintf(stall_msg, sizeof stall_msg, "%s", ps_exec_last_error(x));
}

START_TEST(exec_stall)
{
    ps_schedule *s = make_schedule("1f1b", 4, 0, 8, NULL);
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    host h;
    host_init(&h, _i);
    h.never_rank = 1;
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.on_done = keep_msg;
    cfg.stall_timeout_s = 0.1;
    ps_exec *x;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    h.x = x;
    uint64_t t0 = uv_hrtime();
    ck_assert_int_eq(ps_exec_start(x), 0);
    run_and_close(&loop, x, &h);
    double took = (double)(uv_hrtime() - t0) * 1e-9;
    ck_assert_int_eq(h.done_status, PS_ESTALL);
    ck_assert_msg(took >= 0.1 && took < 2.0, "took %g s", took);
    ck_assert_msg(strstr(stall_msg, "rank 1: running 1F0"), "%s", stall_msg);
    ck_assert_msg(strstr(stall_msg, "rank 2: blocked at step 0 on 2F0, which waits for 1F0"), "%s",
                  stall_msg);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
}
END_TEST

START_TEST(exec_cancel)
{
    ps_schedule *s = make_schedule("interleaved", 4, 2, 8, NULL);
    uv_loop_t loop;
    host h;
    host_init(&h, _i);
    h.cancel_at = 20;
    ps_exec *x = start_host(&loop, s, &h, 0);
    run_and_close(&loop, x, &h);
    ck_assert_int_eq(h.done_status, PS_ECANCELED);
    ck_assert_int_eq(h.events, 20);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
}
END_TEST

/* Closing a running executor cancels it without on_done. */
START_TEST(exec_close_running)
{
    ps_schedule *s = make_schedule("1f1b", 4, 0, 8, NULL);
    uv_loop_t loop;
    host h;
    host_init(&h, 0);
    h.never_rank = 0;
    ps_exec *x = start_host(&loop, s, &h, 0);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_NOWAIT), 1);
    ck_assert_int_eq(ps_exec_status(x), 2);
    int before = closed;
    ps_exec_close(x, on_close);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(closed, before + 1);
    ck_assert_int_eq(h.done_calls, 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
}
END_TEST

/* ---- remote ranks ---------------------------------------------------------------------------- */

/* 1F1B on 2 ranks with m micro-batches, rank 0 local: it sends m activations to rank 1 and
 * receives m gradients from it; rank 1's actions never run here. */
START_TEST(exec_remote_ranks)
{
    const int m = 5;
    ps_schedule *s = make_schedule("1f1b", 2, 0, m, NULL);
    for (int local = 0; local < 2; local++) {
        uv_loop_t loop;
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        host h;
        host_init(&h, _i);
        ps_exec_config cfg;
        config_for(&cfg, &h);
        cfg.local_ranks = &local;
        cfg.n_local = 1;
        ps_exec *x;
        ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
        h.x = x;
        ck_assert_int_eq(ps_exec_start(x), 0);
        run_and_close(&loop, x, &h);
        ck_assert_int_eq(h.done_status, 0);
        ck_assert_int_eq(h.computes, 2 * m);
        ck_assert_int_eq(h.sends, m);
        ck_assert_int_eq(h.recvs, m);
        ck_assert_int_eq(uv_loop_close(&loop), 0);
    }
    ps_schedule_free(s);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(exec_errors)
{
    ps_schedule *s = make_schedule("1f1b", 2, 0, 2, NULL);
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    host h;
    host_init(&h, 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    ps_exec *x = (ps_exec *)&h;
    ck_assert_int_eq(ps_exec_new(NULL, &loop, s, &cfg, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_exec_new(&x, NULL, s, &cfg, NULL), PS_EINVAL);
    ck_assert_ptr_null(x);
    ck_assert_int_eq(ps_exec_new(&x, &loop, NULL, &cfg, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, NULL, NULL), PS_EINVAL);
    cfg.compute = NULL;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), PS_EINVAL);
    cfg.emulate = 1; /* without a problem */
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), PS_EINVAL);
    config_for(&cfg, &h);
    int bad = 2;
    cfg.local_ranks = &bad;
    cfg.n_local = 1;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), PS_EINVAL);
    bad = 0;
    cfg.send = NULL; /* a remote rank needs send and recv */
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), PS_EINVAL);
    config_for(&cfg, &h);
    cfg.stall_timeout_s = -1;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_exec_start(NULL), PS_EINVAL);
    ck_assert_int_eq(ps_exec_complete(NULL, 1, 0), PS_EINVAL);
    ck_assert_int_eq(ps_exec_cancel(NULL), PS_EINVAL);
    ck_assert_int_eq(ps_exec_status(NULL), PS_EINVAL);
    ck_assert_str_eq(ps_exec_last_error(NULL), "invalid argument: NULL executor");
    ck_assert_ptr_null(ps_exec_starts(NULL, 0));
    ps_exec_close(NULL, NULL);
    config_for(&cfg, &h);
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    ck_assert_int_eq(ps_exec_complete(x, 0, 0), PS_EINVAL);
    ck_assert_int_eq(ps_exec_complete(x, 1, 0), PS_ESTATE); /* not started */
    ck_assert_int_eq(ps_exec_cancel(x), PS_ESTATE);
    ps_metrics m;
    ck_assert_int_eq(ps_exec_metrics(x, 1, &m), PS_ESTATE);
    ck_assert_ptr_null(ps_exec_starts(x, 2));
    ck_assert_ptr_nonnull(ps_exec_starts(x, 1));
    ck_assert_double_eq(ps_exec_starts(x, 1)[0], -1);
    /* An idle executor does not keep the loop running; closing it never starts it. */
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ps_exec_close(x, NULL);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(h.computes, 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
}
END_TEST

/* A token that names no running action stops the run with PS_EHOST. */
static int bogus_compute(ps_exec *x, const ps_action *a, int rank, uint64_t tok, void *ud)
{
    (void)a, (void)rank, (void)ud;
    ck_assert_int_eq(ps_exec_complete(x, tok ^ (UINT64_C(1) << 12), 0), 0);
    return 0;
}

START_TEST(exec_bad_token)
{
    ps_schedule *s = make_schedule("1f1b", 2, 0, 2, NULL);
    uv_loop_t loop;
    host h;
    host_init(&h, 0);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.compute = bogus_compute;
    cfg.on_done = keep_msg;
    ps_exec *x;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    h.x = x;
    ck_assert_int_eq(ps_exec_start(x), 0);
    run_and_close(&loop, x, &h);
    ck_assert_int_eq(h.done_status, PS_EHOST);
    ck_assert_msg(strstr(stall_msg, "names no running action"), "%s", stall_msg);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
}
END_TEST

/* A host that completes its first action over and over fills the completion queue:
 * ps_exec_complete() then returns PS_ERANGE, which exec.h must list among its returns, and the
 * run stops with PS_EHOST. */
static int flood_rc;
static int flood_compute(ps_exec *x, const ps_action *a, int rank, uint64_t tok, void *ud)
{
    (void)a, (void)rank, (void)ud;
    for (int i = 0; i < 100000 && !flood_rc; i++)
        flood_rc = ps_exec_complete(x, tok, 0);
    return 0;
}

/* The comment block right above the declaration of fn in exec.h. */
static void exec_doc_of(const char *fn, char *out, size_t n)
{
    size_t len;
    char *h = test_read_file("../include/pipesched/exec.h", &len);
    char decl[128];
    snprintf(decl, sizeof decl, "PS_EXTERN int %s(", fn);
    char *d = strstr(h, decl);
    ck_assert_ptr_nonnull(d);
    char *open = d;
    while (open > h && strncmp(open, "/*", 2) != 0)
        open--;
    size_t k = (size_t)(d - open) < n - 1 ? (size_t)(d - open) : n - 1;
    memcpy(out, open, k);
    out[k] = 0;
    free(h);
}

START_TEST(exec_complete_queue_full)
{
    ps_schedule *s = make_schedule("1f1b", 2, 0, 2, NULL);
    uv_loop_t loop;
    host h;
    host_init(&h, 0);
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.compute = flood_compute;
    cfg.on_done = keep_msg;
    ps_exec *x;
    flood_rc = 0;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, NULL), 0);
    h.x = x;
    ck_assert_int_eq(ps_exec_start(x), 0);
    run_and_close(&loop, x, &h);
    ck_assert_int_eq(flood_rc, PS_ERANGE);
    ck_assert_int_eq(h.done_status, PS_EHOST);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
    char doc[2048];
    exec_doc_of("ps_exec_complete", doc, sizeof doc);
    ck_assert_msg(strstr(doc, "PS_ERANGE"),
                  "exec.h does not list PS_ERANGE for "
                  "ps_exec_complete():\n%s",
                  doc);
}
END_TEST

START_TEST(exec_alloc_failure)
{
    ps_problem *pb;
    ps_schedule *s = make_schedule("interleaved", 4, 2, 8, &pb);
    int ok = 0;
    for (long n = 1; n < 200 && !ok; n++) {
        uv_loop_t loop;
        ck_assert_int_eq(uv_loop_init(&loop), 0);
        counting_alloc c = {0, n, 0, 0};
        ps_allocator al = counting_allocator(&c);
        host h;
        host_init(&h, 0);
        ps_exec_config cfg;
        config_for(&cfg, &h);
        cfg.emulate = _i;
        cfg.problem = pb;
        cfg.time_scale = 1e-6;
        ps_exec *x = NULL;
        int rc = ps_exec_new(&x, &loop, s, &cfg, &al);
        if (rc) {
            ck_assert_int_eq(rc, PS_ENOMEM);
            ck_assert_ptr_null(x);
            ck_assert_int_eq(c.live, 0);
        } else {
            ok = 1;
            h.x = x;
            ck_assert_int_eq(ps_exec_start(x), 0);
            run_and_close(&loop, x, &h);
            ck_assert_int_eq(h.done_status, 0);
            ck_assert_int_eq(c.live, 0);
        }
        ck_assert_int_eq(uv_loop_close(&loop), 0);
    }
    ck_assert(ok);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* ---- fault injection: each step of ps_exec_new() and ps_exec_start() fails ---------------- */

/*
 * The libuv calls through which the executor's set-up can fail, defined again here: the test
 * program's definitions come first in symbol resolution, so the library's calls reach them.
 * Each forwards to libuv's own, unless uv_fault names it: then its uv_fault_at-th call fails.
 * libuv 1.x never fails most of them (the loop's wake-up descriptor exists since uv_loop_init,
 * uv_timer_init always returns 0), so this is the only way to reach those error paths.
 */
enum { FAULT_NONE, FAULT_MUTEX, FAULT_COND, FAULT_ASYNC, FAULT_TIMER, FAULT_THREAD };
static int uv_fault, uv_fault_at, uv_fault_calls;

static int fault_now(int which)
{
    return uv_fault == which && ++uv_fault_calls == uv_fault_at;
}

/* libuv's own definition of name (a function; copied through memcpy, which ISO C allows). */
static void libuv_fn(const char *name, void *fnp, size_t size)
{
    void *p = dlsym(RTLD_NEXT, name);
    ck_assert_msg(p != NULL, "dlsym(%s)", name);
    ck_assert_uint_eq(size, sizeof p);
    memcpy(fnp, &p, size);
}

int uv_mutex_init(uv_mutex_t *m)
{
    static int (*real)(uv_mutex_t *);
    if (!real)
        libuv_fn("uv_mutex_init", &real, sizeof real);
    return fault_now(FAULT_MUTEX) ? UV_ENOMEM : real(m);
}

int uv_cond_init(uv_cond_t *c)
{
    static int (*real)(uv_cond_t *);
    if (!real)
        libuv_fn("uv_cond_init", &real, sizeof real);
    return fault_now(FAULT_COND) ? UV_ENOMEM : real(c);
}

int uv_async_init(uv_loop_t *loop, uv_async_t *h, uv_async_cb cb)
{
    static int (*real)(uv_loop_t *, uv_async_t *, uv_async_cb);
    if (!real)
        libuv_fn("uv_async_init", &real, sizeof real);
    return fault_now(FAULT_ASYNC) ? UV_EMFILE : real(loop, h, cb);
}

int uv_timer_init(uv_loop_t *loop, uv_timer_t *h)
{
    static int (*real)(uv_loop_t *, uv_timer_t *);
    if (!real)
        libuv_fn("uv_timer_init", &real, sizeof real);
    return fault_now(FAULT_TIMER) ? UV_ENOMEM : real(loop, h);
}

int uv_thread_create(uv_thread_t *tid, uv_thread_cb entry, void *arg)
{
    static int (*real)(uv_thread_t *, uv_thread_cb, void *);
    if (!real)
        libuv_fn("uv_thread_create", &real, sizeof real);
    return fault_now(FAULT_THREAD) ? UV_EAGAIN : real(tid, entry, arg);
}

/* Emulated 1F1B on 2 ranks, c = 0: two workers (one lock and one condition each), then the
 * completion lock, the async, the timer; the threads start in ps_exec_start(). */
static const struct {
    int fault, at, new_rc, start_rc;
} step_faults[] = {
    {FAULT_MUTEX, 1, PS_ESYS, 0},  /* rank 0's worker */
    {FAULT_COND, 2, PS_ESYS, 0},   /* rank 1's worker */
    {FAULT_MUTEX, 3, PS_ESYS, 0},  /* the completion queue's lock */
    {FAULT_ASYNC, 1, PS_ESYS, 0},  /* nothing on the loop yet */
    {FAULT_TIMER, 1, PS_ESYS, 0},  /* the async is on the loop: closed there */
    {FAULT_THREAD, 1, 0, PS_ESYS}, /* ps_exec_start(): the first thread */
    {FAULT_THREAD, 2, 0, PS_ESYS}, /* the second, once the first runs: it is joined */
};

/* Every step reports its own failure, and what it leaves is released: at once before the
 * handles exist, by the loop's next iteration after (a failed timer leaves the async to close),
 * so that the loop closes and no allocation is left either way. */
START_TEST(exec_step_faults)
{
    ps_problem *pb;
    ps_schedule *s = make_schedule("1f1b", 2, 0, 4, &pb);
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    counting_alloc c = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&c);
    host h;
    host_init(&h, 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.emulate = 1;
    cfg.problem = pb;
    cfg.time_scale = 1e-6;
    ps_exec *x = (ps_exec *)&h;
    uv_fault = step_faults[_i].fault;
    uv_fault_at = step_faults[_i].at;
    uv_fault_calls = 0;
    int rc = ps_exec_new(&x, &loop, s, &cfg, &al);
    ck_assert_int_eq(rc, step_faults[_i].new_rc);
    if (rc == 0) {
        ck_assert_int_eq(ps_exec_start(x), step_faults[_i].start_rc);
        char want[64];
        snprintf(want, sizeof want, "cannot start emulation thread %d", step_faults[_i].at - 1);
        ck_assert_str_eq(ps_exec_last_error(x), want);
        ck_assert_int_eq(ps_exec_status(x), 1); /* not started: nothing was called */
        ck_assert_int_eq(h.computes, 0);
        ps_exec_close(x, NULL);
    } else {
        ck_assert_ptr_null(x);
    }
    uv_fault = FAULT_NONE;
    ck_assert_int_eq(uv_fault_calls, step_faults[_i].at);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(c.live, 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* The emulation step returns the simulator's own error: per-stage costs that do not match the
 * schedule are PS_ECONFIG (as exec.h documents), not a generic failure. */
START_TEST(exec_emulation_error)
{
    ps_problem *pb;
    ps_schedule *s = make_schedule("1f1b", 2, 0, 4, &pb);
    const ps_stage_cost three[3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, three, 3), 0);
    uv_loop_t loop;
    ck_assert_int_eq(uv_loop_init(&loop), 0);
    counting_alloc c = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&c);
    host h;
    host_init(&h, 0);
    ps_exec_config cfg;
    config_for(&cfg, &h);
    cfg.emulate = 1;
    cfg.problem = pb;
    ps_exec *x = (ps_exec *)&h;
    ck_assert_int_eq(ps_exec_new(&x, &loop, s, &cfg, &al), PS_ECONFIG);
    ck_assert_ptr_null(x);
    ck_assert_int_eq(c.live, 0);
    ck_assert_int_eq(uv_run(&loop, UV_RUN_DEFAULT), 0);
    ck_assert_int_eq(uv_loop_close(&loop), 0);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

static Suite *exec_suite(void)
{
    Suite *s = suite_create("exec");
    TCase *tc = tcase_create("exec_run");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, exec_every_family, 0, 2);
    tcase_add_loop_test(tc, exec_remote_ranks, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("exec_faults");
    tcase_set_timeout(tc, 20);
    tcase_add_loop_test(tc, exec_host_error, 0, 2);
    tcase_add_loop_test(tc, exec_stall, 0, 2);
    tcase_add_loop_test(tc, exec_cancel, 0, 2);
    tcase_add_test(tc, exec_close_running);
    tcase_add_test(tc, exec_bad_token);
    tcase_add_test(tc, exec_complete_queue_full);
    suite_add_tcase(s, tc);
    tc = tcase_create("exec_errors");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, exec_errors);
    tcase_add_loop_test(tc, exec_alloc_failure, 0, 2);
    suite_add_tcase(s, tc);
    tc = tcase_create("exec_step_errors");
    tcase_set_timeout(tc, 20);
    tcase_add_loop_test(tc, exec_step_faults, 0, (int)(sizeof step_faults / sizeof step_faults[0]));
    tcase_add_test(tc, exec_emulation_error);
    suite_add_tcase(s, tc);
    /* Timing-sensitive: tagged so that the valgrind setup can leave it out. */
    tc = tcase_create("exec_fidelity");
    tcase_set_tags(tc, "timing");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, exec_fidelity, 0, 7);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(exec_suite());
}
