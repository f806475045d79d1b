/*
 * pipesched executor benchmark (issue 6).
 *
 *   pipesched-exec-bench [--quick]
 *
 * 1. Dispatch overhead: compute actions per second through the executor with zero-duration
 *    compute, all ranks local, on a private uv loop: (a) the host completes inside the
 *    compute callback, on the loop thread; (b) the host hands each token to another thread,
 *    which calls ps_exec_complete(). Median of several runs; wall time from ps_exec_start()
 *    to on_done. The simulator's time for the same schedule (the same engine with a virtual
 *    clock) is shown for comparison, and the floor of (b) on the machine: one round trip
 *    between the loop thread and another thread through a condition variable and a uv_async,
 *    without the executor.
 * 2. Emulated fidelity: makespan of an emulated run (pipesched run) against the simulated
 *    one, relative error in percent, median and best of several runs, at two time scales.
 * Figures vary with the machine's load; compare figures from one run.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/exec.h>
#include <pipesched/pipesched.h>

#include "bench_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void die(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "exec-bench: %s: %s%s%s\n", what, ps_strerror(rc), msg && *msg ? ": " : "",
            msg ? msg : "");
    exit(1);
}

static void make(const char *family, int pp, int vpp, int m, ps_problem **pbo, ps_schedule **so)
{
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    int rc;
    if ((rc = ps_problem_new(&pb, NULL)) || (rc = ps_schedule_new(&s, NULL)))
        die("setup", rc, NULL);
    if ((rc = ps_problem_set_schedule(pb, family)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_PP, pp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_VPP, vpp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, m)))
        die(family, rc, ps_problem_last_error(pb));
    if ((rc = ps_schedule_generate(s, pb)) || (rc = ps_schedule_validate(s)))
        die(family, rc, ps_schedule_last_error(s));
    *pbo = pb;
    *so = s;
}

/* ---- 1. dispatch overhead -------------------------------------------------------------------- */

/* The completing thread of mode (b): a queue of tokens (at most one per rank). */
typedef struct completer {
    ps_exec *x;
    uv_thread_t tid;
    uv_mutex_t mu;
    uv_cond_t cv;
    uint64_t *q;
    size_t cap, head, len;
    int quit;
} completer;

typedef struct bench_host {
    ps_exec *x;
    completer *c; /* NULL: complete inside the callback */
    uint64_t t_done;
    int status;
} bench_host;

static void completer_main(void *arg)
{
    completer *c = arg;
    uint64_t batch[64];
    uv_mutex_lock(&c->mu);
    for (;;) {
        while (!c->len && !c->quit)
            uv_cond_wait(&c->cv, &c->mu);
        if (!c->len)
            break;
        size_t n = 0;
        while (c->len && n < sizeof batch / sizeof batch[0]) {
            batch[n++] = c->q[c->head];
            c->head = c->head + 1 == c->cap ? 0 : c->head + 1;
            c->len--;
        }
        uv_mutex_unlock(&c->mu);
        for (size_t i = 0; i < n; i++)
            (void)ps_exec_complete(c->x, batch[i], 0);
        uv_mutex_lock(&c->mu);
    }
    uv_mutex_unlock(&c->mu);
}

static int on_compute(ps_exec *x, const ps_action *a, int rank, uint64_t token, void *ud)
{
    bench_host *h = ud;
    (void)a, (void)rank;
    completer *c = h->c;
    if (!c)
        return ps_exec_complete(x, token, 0);
    uv_mutex_lock(&c->mu);
    int full = c->len == c->cap;
    if (!full) {
        size_t at = c->head + c->len;
        c->q[at >= c->cap ? at - c->cap : at] = token;
        c->len++;
        uv_cond_signal(&c->cv);
    }
    uv_mutex_unlock(&c->mu);
    return full;
}

static void on_done(ps_exec *x, int status, void *ud)
{
    bench_host *h = ud;
    h->t_done = uv_hrtime();
    h->status = status;
    if (status)
        die("run", status, ps_exec_last_error(x));
}

/* One run of s with zero-duration compute; returns the seconds from start to on_done. */
static double dispatch_run(const ps_schedule *s, int threaded)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop))
        die("uv_loop_init", PS_ESYS, NULL);
    bench_host h;
    memset(&h, 0, sizeof h);
    completer c;
    memset(&c, 0, sizeof c);
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.compute = on_compute;
    cfg.on_done = on_done;
    cfg.user_data = &h;
    int rc = ps_exec_new(&h.x, &loop, s, &cfg, NULL);
    if (rc)
        die("ps_exec_new", rc, NULL);
    if (threaded) {
        c.x = h.x;
        c.cap = (size_t)ps_schedule_pp(s);
        c.q = malloc(c.cap * sizeof *c.q);
        if (!c.q || uv_mutex_init(&c.mu) || uv_cond_init(&c.cv) ||
            uv_thread_create(&c.tid, completer_main, &c))
            die("completer thread", PS_ESYS, NULL);
        h.c = &c;
    }
    uint64_t t0 = uv_hrtime();
    if ((rc = ps_exec_start(h.x)))
        die("ps_exec_start", rc, ps_exec_last_error(h.x));
    uv_run(&loop, UV_RUN_DEFAULT);
    if (threaded) {
        uv_mutex_lock(&c.mu);
        c.quit = 1;
        uv_cond_signal(&c.cv);
        uv_mutex_unlock(&c.mu);
        uv_thread_join(&c.tid);
        uv_cond_destroy(&c.cv);
        uv_mutex_destroy(&c.mu);
        free(c.q);
    }
    ps_exec_close(h.x, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop))
        die("uv_loop_close", PS_ESTATE, "handles left on the loop");
    return (double)(h.t_done - t0) * 1e-9;
}

/* The floor of mode (b) on this machine: one round trip loop thread -> other thread (mutex +
 * condition variable) -> loop thread (uv_async_send), without the executor. */
typedef struct pingpong {
    uv_async_t async;
    uv_mutex_t mu;
    uv_cond_t cv;
    int turn, quit;
    long n, rounds;
} pingpong;

static void pingpong_thread(void *arg)
{
    pingpong *p = arg;
    uv_mutex_lock(&p->mu);
    for (;;) {
        while (!p->turn && !p->quit)
            uv_cond_wait(&p->cv, &p->mu);
        if (p->quit)
            break;
        p->turn = 0;
        uv_mutex_unlock(&p->mu);
        uv_async_send(&p->async);
        uv_mutex_lock(&p->mu);
    }
    uv_mutex_unlock(&p->mu);
}

static void pingpong_kick(pingpong *p)
{
    uv_mutex_lock(&p->mu);
    p->turn = 1;
    uv_cond_signal(&p->cv);
    uv_mutex_unlock(&p->mu);
}

static void pingpong_async(uv_async_t *h)
{
    pingpong *p = h->data;
    if (++p->n == p->rounds)
        uv_close((uv_handle_t *)h, NULL);
    else
        pingpong_kick(p);
}

static double round_trip_us(long rounds)
{
    uv_loop_t loop;
    pingpong p;
    memset(&p, 0, sizeof p);
    p.rounds = rounds;
    uv_thread_t tid;
    if (uv_loop_init(&loop) || uv_async_init(&loop, &p.async, pingpong_async) ||
        uv_mutex_init(&p.mu) || uv_cond_init(&p.cv) || uv_thread_create(&tid, pingpong_thread, &p))
        die("round trip", PS_ESYS, NULL);
    p.async.data = &p;
    uint64_t t0 = uv_hrtime();
    pingpong_kick(&p);
    uv_run(&loop, UV_RUN_DEFAULT);
    double us = (double)(uv_hrtime() - t0) * 1e-3 / (double)rounds;
    uv_mutex_lock(&p.mu);
    p.quit = 1;
    uv_cond_signal(&p.cv);
    uv_mutex_unlock(&p.mu);
    uv_thread_join(&tid);
    uv_cond_destroy(&p.cv);
    uv_mutex_destroy(&p.mu);
    if (uv_loop_close(&loop))
        die("uv_loop_close", PS_ESTATE, "handles left on the loop");
    return us;
}

static void bench_dispatch(int quick)
{
    static const struct {
        const char *family;
        int pp, vpp, m, quick_m;
    } cases[] = {
        {"1f1b", 4, 1, 65536, 4096},
        {"interleaved", 16, 2, 1024, 128},
        {"zb-v", 8, 2, 4096, 256},
    };
    const int reps = quick ? 3 : 7;
    printf("dispatch overhead, zero-duration compute, all ranks local (median of %d runs):\n"
           "  (a) completed inside the compute callback  (b) completed from another thread\n",
           reps);
    printf("  %-12s %-16s %9s | %12s %12s | %12s %12s | %12s\n", "family", "size", "actions",
           "(a) act/s", "(a) ns/act", "(b) act/s", "(b) ns/act", "sim act/s");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int m = quick ? cases[i].quick_m : cases[i].m;
        ps_problem *pb;
        ps_schedule *s;
        make(cases[i].family, cases[i].pp, cases[i].vpp, m, &pb, &s);
        double n = (double)ps_schedule_total_actions(s);
        double ta[16], tb[16], ts[16];
        ps_sim *sim;
        if (ps_sim_new(&sim, NULL))
            die("ps_sim_new", PS_ENOMEM, NULL);
        for (int r = 0; r < reps; r++) {
            ta[r] = dispatch_run(s, 0);
            tb[r] = dispatch_run(s, 1);
            uint64_t t0 = uv_hrtime();
            int rc = ps_sim_run(sim, s, pb);
            ts[r] = (double)(uv_hrtime() - t0) * 1e-9;
            if (rc)
                die("ps_sim_run", rc, ps_sim_last_error(sim));
        }
        double a = median(ta, reps), b = median(tb, reps), sm = median(ts, reps);
        char size[32];
        snprintf(size, sizeof size, "pp=%d v=%d m=%d", cases[i].pp, cases[i].vpp, m);
        printf("  %-12s %-16s %9.0f | %12.3g %12.1f | %12.3g %12.1f | %12.3g\n", cases[i].family,
               size, n, n / a, a / n * 1e9, n / b, b / n * 1e9, n / sm);
        fflush(stdout);
        ps_sim_free(sim);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
    double rt[16];
    for (int r = 0; r < reps; r++)
        rt[r] = round_trip_us(quick ? 2000 : 20000);
    printf("  floor of (b) without the executor, loop thread -> other thread (mutex + condition\n"
           "  variable) -> loop thread (uv_async_send): %.1f us per round trip (median of %d)\n",
           median(rt, reps), reps);
}

/* ---- 2. emulated fidelity -------------------------------------------------------------------- */

/* One emulated run at scale; returns the relative makespan error against sim (already run);
 * *wall receives the run's wall time. */
static double emulated_error(const ps_schedule *s, const ps_problem *pb, const ps_metrics *ms,
                             double scale, double *wall)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop))
        die("uv_loop_init", PS_ESYS, NULL);
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.emulate = 1;
    cfg.problem = pb;
    cfg.time_scale = scale;
    ps_exec *x;
    int rc = ps_exec_new(&x, &loop, s, &cfg, NULL);
    if (rc)
        die("ps_exec_new", rc, ps_exec_last_error(x));
    uint64_t t0 = uv_hrtime();
    if ((rc = ps_exec_start(x)))
        die("ps_exec_start", rc, ps_exec_last_error(x));
    uv_run(&loop, UV_RUN_DEFAULT);
    *wall = (double)(uv_hrtime() - t0) * 1e-9;
    ps_metrics mx;
    if ((rc = ps_exec_status(x)) || (rc = ps_exec_metrics(x, scale, &mx)))
        die("emulated run", rc, ps_exec_last_error(x));
    ps_exec_close(x, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    if (uv_loop_close(&loop))
        die("uv_loop_close", PS_ESTATE, "handles left on the loop");
    return fabs(mx.makespan - ms->makespan) / ms->makespan;
}

static void bench_fidelity(int quick)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } cases[] = {
        {"1f1b", 4, 1, 8},   {"gpipe", 4, 1, 8},       {"interleaved", 4, 2, 8},
        {"zb-h1", 4, 1, 8},  {"zb-v", 4, 2, 8},        {"1f1b", 8, 1, 16},
        {"zb-h1", 8, 1, 16}, {"interleaved", 8, 2, 8}, {"zb-v", 8, 2, 8},
    };
    static const double scales[] = {1e-2, 1e-3};
    const int reps = quick ? 3 : 5;
    printf("emulated fidelity: |measured - simulated| / simulated makespan, f=b=w=1, c=0\n"
           "(median and best of %d runs per time scale; wall = seconds per run):\n",
           reps);
    printf("  %-12s %-16s %8s", "family", "size", "makespan");
    for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++)
        printf(" | %5gs/unit: wall  median   best", scales[k]);
    printf("\n");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_problem *pb;
        ps_schedule *s;
        make(cases[i].family, cases[i].pp, cases[i].vpp, cases[i].m, &pb, &s);
        ps_sim *sim;
        ps_metrics ms;
        int rc;
        if ((rc = ps_sim_new(&sim, NULL)) || (rc = ps_sim_run(sim, s, pb)) ||
            (rc = ps_sim_metrics(sim, &ms)))
            die("simulation", rc, NULL);
        char size[32];
        snprintf(size, sizeof size, "pp=%d v=%d m=%d", cases[i].pp, cases[i].vpp, cases[i].m);
        printf("  %-12s %-16s %8g", cases[i].family, size, ms.makespan);
        for (size_t k = 0; k < sizeof scales / sizeof scales[0]; k++) {
            double e[16], wall = 0;
            for (int r = 0; r < reps; r++)
                e[r] = 100 * emulated_error(s, pb, &ms, scales[k], &wall);
            double med = median(e, reps);
            printf(" | %15.2f %6.2f%% %5.2f%%", wall, med, e[0]);
        }
        printf("\n");
        fflush(stdout);
        ps_sim_free(sim);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
}

int main(int argc, char **argv)
{
    int quick = argc > 1 && !strcmp(argv[1], "--quick");
    if (argc > 2 || (argc > 1 && !quick)) {
        fprintf(stderr, "usage: pipesched-exec-bench [--quick]\n");
        return 2;
    }
    bench_dispatch(quick);
    bench_fidelity(quick);
    return 0;
}
