/*
 * The executor's state, shared by its files: exec.c (life cycle, engine callbacks,
 * completions), workers.c (the emulation threads) and results.c (the measured timeline and
 * its metrics). Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_EXEC_INT_H
#define PS_EXEC_INT_H

#include "engine/engine.h"

#include <pipesched/exec.h>

/* Work an emulation thread completes at a deadline (uv_hrtime() nanoseconds). */
typedef struct ps__job {
    uint64_t token, deadline;
} ps__job;

/* An emulation thread: one per local rank (at most one job: the rank's running action), plus
 * one for transfers when c > 0 (jobs in FIFO order, which is deadline order since every
 * transfer takes c). */
typedef struct ps__worker {
    ps_exec *x;
    uv_thread_t tid;
    uv_mutex_t mu;
    uv_cond_t cv;
    ps__job *ring, one; /* ring of cap jobs (&one when cap is 1) */
    size_t cap, head, len;
    int stop, started, inited;
} ps__worker;

typedef struct ps__completion {
    uint64_t token;
    int status;
} ps__completion;

struct ps_exec {
    ps_allocator al;
    uv_loop_t *loop;
    const ps_schedule *s;
    ps_exec_config cfg;
    ps__engine e;
    int engine_ok;
    uint8_t *remote; /* pp: 1 = runs in another process */
    int all_local, n_local;
    int64_t local_total, local_done, pending; /* pending: sends and emulated transfers */
    uv_async_t async;
    uv_timer_t timer;
    int handles; /* handles initialised on the loop, counted down as they close */
    int status, done_reported, closing;
    ps_exec_close_cb close_cb;
    uint64_t t0, last_progress, stall_ns;
    size_t nacts;
    double *start, *end; /* indexed like the schedule's action array */
    uint8_t *xf;         /* per (stage, mb): bit dir = a transfer of that result is posted */
    size_t nsm;
    /* Emulation. */
    uint64_t *dur_ns; /* nacts */
    uint64_t c_ns;
    ps__worker *workers; /* n_workers: local ranks in rank order, then the transfer thread */
    int32_t *wslot;      /* pp: worker of rank r */
    int n_workers;
    /* Completions. */
    uv_mutex_t qmu;
    int qmu_ok;
    ps__completion *q, *batch;
    size_t qcap, qlen;
    int qstopped, qoverflow; /* under qmu */
    char err[PS__ERRLEN];
};

/* ---- emulation threads (workers.c) ------------------------------------------------------- */

/*
 * Emulated compute: the durations of x's actions and transfers under problem's cost model,
 * and a worker (lock, condition, job ring) per local rank, plus one for transfers when they
 * take time; edges bounds the transfers in flight. The threads start with
 * ps__workers_start(). Returns 0, PS_ENOMEM, PS_ESYS (a lock or condition variable could not
 * be created) or the simulator's error on problem (message in x->err).
 */
int ps__workers_new(ps_exec *x, const ps_problem *problem, int64_t edges);
/* Starts a thread per worker. PS_ESYS (message in x->err) when one cannot be created; those
 * started are then joined. */
int ps__workers_start(ps_exec *x);
/* Tells the threads to stop (they drop their jobs); ps__workers_join() waits for them. */
void ps__workers_stop(ps_exec *x);
void ps__workers_join(ps_exec *x);
/* Joins the threads and frees the workers. */
void ps__workers_free(ps_exec *x);

/* Queues a job on w: complete token at deadline. Inline: it runs for every emulated action. */
static inline void ps__worker_post(ps__worker *w, uint64_t token, uint64_t deadline)
{
    uv_mutex_lock(&w->mu);
    size_t at = w->head + w->len;
    if (at >= w->cap)
        at -= w->cap;
    w->ring[at].token = token;
    w->ring[at].deadline = deadline;
    w->len++;
    uv_cond_signal(&w->cv);
    uv_mutex_unlock(&w->mu);
}

#endif
