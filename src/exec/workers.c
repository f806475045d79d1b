/*
 * The executor's emulation threads: with cfg.emulate, every local rank's compute action and
 * every transfer between ranks takes its cost-model duration (the simulator's) scaled to
 * seconds, on a thread that waits on the monotonic clock and then completes the action with
 * ps_exec_complete(), exactly like a host would. So an emulated run goes through the same
 * completion queue and engine as a real one.
 * SPDX-License-Identifier: MIT
 */
#include "exec_int.h"

#include <math.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif

/* Emulation threads sleep until this close to a deadline, then spin (a timed wait can wake
 * tens of microseconds late; the spin makes the end exact). */
#define SPIN_NS 200000u

/* ---- the threads ------------------------------------------------------------------------- */

/* Waits (w->mu held) until deadline; 0 when told to stop first. */
static int wait_until(ps__worker *w, uint64_t deadline)
{
    for (;;) {
        if (w->stop)
            return 0;
        uint64_t now = uv_hrtime();
        if (now >= deadline)
            return 1;
        if (deadline - now > SPIN_NS) {
            (void)uv_cond_timedwait(&w->cv, &w->mu, deadline - now - SPIN_NS);
            continue;
        }
        uv_mutex_unlock(&w->mu);
        while (uv_hrtime() < deadline)
            sched_yield();
        uv_mutex_lock(&w->mu);
    }
}

static void worker_main(void *arg)
{
    ps__worker *w = arg;
#if defined(__linux__)
    /* The default 50 us timer slack would be most of the error budget of a short action. */
    (void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
#endif
    uv_mutex_lock(&w->mu);
    for (;;) {
        while (!w->len && !w->stop)
            uv_cond_wait(&w->cv, &w->mu);
        if (w->stop)
            break;
        ps__job j = w->ring[w->head];
        if (!wait_until(w, j.deadline))
            break;
        w->head = w->head + 1 == w->cap ? 0 : w->head + 1;
        w->len--;
        uv_mutex_unlock(&w->mu);
        (void)ps_exec_complete(w->x, j.token, 0);
        uv_mutex_lock(&w->mu);
    }
    uv_mutex_unlock(&w->mu);
}

int ps__workers_start(ps_exec *x)
{
    for (int i = 0; i < x->n_workers; i++) {
        ps__worker *w = &x->workers[i];
        if (uv_thread_create(&w->tid, worker_main, w)) {
            ps__workers_join(x);
            return ps__seterr(x->err, PS_ESYS, "cannot start emulation thread %d", i);
        }
        w->started = 1;
    }
    return 0;
}

void ps__workers_stop(ps_exec *x)
{
    for (int i = 0; i < x->n_workers; i++) {
        ps__worker *w = &x->workers[i];
        if (!w->started)
            continue;
        uv_mutex_lock(&w->mu);
        w->stop = 1;
        uv_cond_signal(&w->cv);
        uv_mutex_unlock(&w->mu);
    }
}

void ps__workers_join(ps_exec *x)
{
    ps__workers_stop(x);
    for (int i = 0; i < x->n_workers; i++)
        if (x->workers[i].started) {
            uv_thread_join(&x->workers[i].tid);
            x->workers[i].started = 0;
        }
}

/* ---- set-up and teardown ----------------------------------------------------------------- */

/* Durations of the emulated actions under the problem's cost model (the simulator's). */
static int emulation_costs(ps_exec *x, const ps_problem *pb)
{
    x->dur_ns = ps__alloc(&x->al, x->nacts, sizeof *x->dur_ns);
    if (!x->dur_ns)
        return PS_ENOMEM;
    ps_sim *sim;
    int rc = ps_sim_new(&sim, &x->al);
    if (rc)
        return rc;
    rc = ps_sim_run(sim, x->s, pb);
    if (rc && rc != PS_EINVALID) { /* over the memory limit still times every action */
        snprintf(x->err, PS__ERRLEN, "%s", ps_sim_last_error(sim));
        ps_sim_free(sim);
        return rc;
    }
    for (size_t k = 0; k < x->nacts; k++) {
        double d = ps_sim_duration(sim, &x->s->acts[k]) * x->cfg.time_scale * 1e9;
        x->dur_ns[k] = d > 0 ? (uint64_t)llround(d) : 0;
    }
    double c = ps_problem_get_cost(pb, PS_COST_C) * x->cfg.time_scale * 1e9;
    x->c_ns = c > 0 ? (uint64_t)llround(c) : 0;
    ps_sim_free(sim);
    return 0;
}

/* One worker per local rank (room for one job: the rank runs one action at a time), then the
 * transfer thread's when transfers take time (room for every transfer in flight). */
static int alloc_workers(ps_exec *x, int64_t edges)
{
    int nw = x->n_local + (x->c_ns ? 1 : 0);
    x->workers = ps__calloc(&x->al, (size_t)nw, sizeof *x->workers);
    if (!x->workers)
        return PS_ENOMEM;
    x->n_workers = nw;
    for (int i = 0; i < x->n_workers; i++) {
        ps__worker *w = &x->workers[i];
        w->x = x;
        w->cap = i < x->n_local ? 1 : (size_t)edges + 1;
        w->ring = w->cap == 1 ? &w->one : ps__alloc(&x->al, w->cap, sizeof *w->ring);
        if (!w->ring)
            return PS_ENOMEM;
    }
    return 0;
}

static int init_locks(ps_exec *x)
{
    for (int i = 0; i < x->n_workers; i++) {
        ps__worker *w = &x->workers[i];
        if (uv_mutex_init(&w->mu))
            return PS_ESYS;
        if (uv_cond_init(&w->cv)) {
            uv_mutex_destroy(&w->mu);
            return PS_ESYS;
        }
        w->inited = 1;
    }
    return 0;
}

int ps__workers_new(ps_exec *x, const ps_problem *problem, int64_t edges)
{
    int rc = emulation_costs(x, problem);
    if (rc)
        return rc;
    rc = alloc_workers(x, edges);
    if (rc)
        return rc;
    return init_locks(x);
}

void ps__workers_free(ps_exec *x)
{
    ps__workers_join(x);
    for (int i = 0; i < x->n_workers; i++) {
        ps__worker *w = &x->workers[i];
        if (w->inited) {
            uv_cond_destroy(&w->cv);
            uv_mutex_destroy(&w->mu);
        }
        if (w->ring && w->ring != &w->one)
            ps__free(&x->al, w->ring, w->cap, sizeof *w->ring);
    }
    ps__free(&x->al, x->workers, (size_t)x->n_workers, sizeof *x->workers);
    ps__free(&x->al, x->dur_ns, x->nacts, sizeof *x->dur_ns);
    x->workers = NULL;
    x->n_workers = 0;
    x->dur_ns = NULL;
}
