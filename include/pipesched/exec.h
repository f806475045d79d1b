/*
 * pipesched executor — runs a schedule for real on the host's libuv loop.
 *
 * The second public header: it includes <uv.h> because the executor takes the host's
 * uv_loop_t. The same engine that the simulator drives with a virtual clock (ps_sim_run) is
 * driven here by the loop: the executor decides what runs when and hands each action to the
 * host through callbacks; the host reports completion with ps_exec_complete(). What is
 * simulated is what runs.
 *
 * Threads. Every function except ps_exec_complete() must be called on the loop's thread, and
 * every callback is called there. ps_exec_complete() may be called from any thread.
 *
 * Life cycle. ps_exec_new() -> ps_exec_start() -> (callbacks, ps_exec_complete()) ->
 * on_done(status) -> read the results -> ps_exec_close(close_cb) -> close_cb, after which the
 * handle is freed. The executor owns two libuv handles (an async and a timer), initialised by
 * ps_exec_new() and closed by ps_exec_close(); once close_cb ran, nothing of the executor is
 * left on the loop. While a run is in progress the executor keeps the loop alive; before
 * ps_exec_start() and after the run stopped it does not (uv_run() returns).
 *
 * Stop. A run stops when every local action completed (status 0), when a host callback returns
 * non-zero or reports a non-zero status (PS_EHOST), on ps_exec_cancel() (PS_ECANCELED) or when
 * nothing completed for stall_timeout_s (PS_ESTALL). After a stop no host callback is called
 * again (on_done excepted, once) and completions of actions still outstanding are ignored.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_EXEC_H
#define PIPESCHED_EXEC_H

#include <pipesched/pipesched.h>

#include <uv.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ps_exec ps_exec;

/*
 * A host callback: run action a of rank `rank` (compute: a compute action of the schedule;
 * send: a PS_SEND_F/PS_SEND_B action whose stage is the producing stage and bstage the peer;
 * recv: a PS_RECV_F/PS_RECV_B action whose stage is the consuming stage and bstage the producing
 * one; mb the micro-batch). a is borrowed for the duration of the call. Return 0 when the work
 * was accepted, and report its end later with ps_exec_complete(x, token, status), possibly
 * from inside the callback. A non-zero return stops the run with PS_EHOST.
 */
typedef int (*ps_exec_action_cb)(ps_exec *x, const ps_action *a, int rank, uint64_t token,
                                 void *user_data);

/* Called once a compute action completed: index is its position in the rank's compute list
 * (ps_schedule_rank_actions), start and end in seconds since ps_exec_start(). */
typedef void (*ps_exec_event_cb)(ps_exec *x, int rank, int64_t index, const ps_action *a,
                                 double start_s, double end_s, void *user_data);

/* Called once, on the loop thread, when the run stopped (status 0: every local action ran). */
typedef void (*ps_exec_done_cb)(ps_exec *x, int status, void *user_data);

/* Called when ps_exec_close() finished; x is freed when it returns. */
typedef void (*ps_exec_close_cb)(ps_exec *x, void *user_data);

typedef struct ps_exec_config {
    /* Host work. compute is required unless emulate is set; send and recv are required when
     * some ranks are remote (an edge between a local and a remote rank) and unused otherwise:
     * between two local ranks results move inside the executor. */
    ps_exec_action_cb compute, send, recv;
    ps_exec_event_cb on_event; /* optional */
    ps_exec_done_cb on_done;   /* optional */
    void *user_data;           /* passed to every callback */
    /* The ranks this process runs (copied by ps_exec_new). NULL = all ranks. */
    const int *local_ranks;
    int n_local;
    /* Stop with PS_ESTALL when no action or transfer completed for this long. 0 = never. */
    double stall_timeout_s;
    /*
     * Emulated compute: each compute action takes its cost-model duration under `problem`
     * (ps_sim_duration) times time_scale seconds, on one worker thread per local rank that
     * waits on a monotonic clock; transfers between ranks take the problem's cost c times
     * time_scale. compute is then not called. problem is borrowed by ps_exec_new() only.
     */
    int emulate;
    const ps_problem *problem;
    double time_scale; /* seconds per cost unit (default 1e-3) */
} ps_exec_config;

/* Fills *cfg with the defaults: no callbacks, all ranks local, no stall timeout, not emulated,
 * time_scale 1e-3. */
PS_EXTERN void ps_exec_config_init(ps_exec_config *cfg);

/*
 * Creates an executor of schedule s (validated: ps_schedule_validate) on loop. s is borrowed
 * and must stay unchanged until close; cfg is copied. Initialises the executor's handles on
 * loop: release with ps_exec_close(), even if the run never starts.
 * Returns 0, PS_EINVAL (NULL argument, missing callback, bad rank list, time_scale <= 0 with
 * emulate), PS_ESTATE (s not validated), PS_ECONFIG (emulate: the problem's per-stage costs
 * do not match), PS_ENOMEM or PS_ESYS; on failure *out is NULL and nothing is left on loop.
 */
PS_EXTERN int ps_exec_new(ps_exec **out, uv_loop_t *loop, const ps_schedule *s,
                          const ps_exec_config *cfg, const ps_allocator *alloc);

/* Starts the run: issues every action that can run now. PS_ESTATE if already started or
 * closing; PS_ESYS if a worker thread could not be started (nothing was called then). */
PS_EXTERN int ps_exec_start(ps_exec *x);

/*
 * Reports the end of the work of token (status 0 = success; non-zero stops the run with
 * PS_EHOST). Thread-safe: the completion is queued and handled on the loop thread. Returns 0,
 * PS_EINVAL (x NULL or token 0), PS_ESTATE (the run stopped: ignored) or PS_ERANGE (the
 * completion queue is full: more completions than outstanding actions, a host bug; the
 * completion is dropped and the run stops with PS_EHOST). Must not be called once
 * ps_exec_close() was called.
 */
PS_EXTERN int ps_exec_complete(ps_exec *x, uint64_t token, int status);

/* Stops a running executor with PS_ECANCELED (on_done follows from the loop). PS_ESTATE when
 * not running. */
PS_EXTERN int ps_exec_cancel(ps_exec *x);

/*
 * Closes the executor: cancels a run in progress (on_done is then not called), joins the
 * worker threads and closes the handles; close_cb (may be NULL) is called from the loop once
 * they are closed, then x is freed. Call once; x must not be used afterwards.
 */
PS_EXTERN void ps_exec_close(ps_exec *x, ps_exec_close_cb close_cb);

/* The run's status: 1 not started, 2 running, 0 finished, or the PS_E* code that stopped it. */
PS_EXTERN int ps_exec_status(const ps_exec *x);
/* The message of the failure that stopped the run ("" if none): a stall names, for each rank,
 * the action it runs or is blocked on and what it waits for. Borrowed until the next call. */
PS_EXTERN const char *ps_exec_last_error(const ps_exec *x);

/*
 * Measured start and end times (seconds since ps_exec_start) of rank's compute actions,
 * aligned with ps_schedule_rank_actions() like ps_sim_starts()/ps_sim_ends(); borrowed until
 * close. Actions that did not run hold -1. NULL for a bad rank.
 */
PS_EXTERN const double *ps_exec_starts(const ps_exec *x, int rank);
PS_EXTERN const double *ps_exec_ends(const ps_exec *x, int rank);

/*
 * Metrics of the measured timeline over the local ranks, in units of `unit` seconds (pass
 * time_scale to compare with the simulation, 1 for seconds). PS_ESTATE unless the run
 * finished with status 0.
 */
PS_EXTERN int ps_exec_metrics(const ps_exec *x, double unit, ps_metrics *out);

/*
 * Loads the measured timeline, in units of `unit` seconds, into sim, which must hold a
 * simulation of the executor's schedule (ps_sim_run) and every rank must be local. Afterwards
 * ps_sim_metrics, ps_sim_rank_metrics, ps_sim_starts/ends and ps_export (trace, metrics)
 * describe the real run; peak activations and memory are kept (they depend only on each
 * rank's order, which the executor follows). PS_ESTATE when the run did not finish, some rank
 * is remote, or sim holds no timeline of this schedule (none kept: ps_sim_keep_timeline).
 */
PS_EXTERN int ps_exec_measured(const ps_exec *x, double unit, ps_sim *sim);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_EXEC_H */
