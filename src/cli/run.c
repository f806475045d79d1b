/*
 * `pipesched run`: simulates a schedule, then executes it for real on a private libuv loop
 * with emulated compute (include/pipesched/exec.h), and prints the measured metrics next to
 * the simulated ones. meson compiles this file only when libuv is found. The executor's library
 * (and libuv with it) is loaded on first use (exec_dl.h), so that the other commands start
 * without it.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include "exec_dl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A growable text buffer behind ps_write_fn. */
typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static int membuf_write(void *ud, const char *data, size_t len)
{
    membuf *b = ud;
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = 0;
    return 0;
}

/* The metrics JSON of sim (simulate --json) without its final newline, into b: the two runs
 * are printed as members of one object. */
static int metrics_json(const ps_schedule *s, const ps_sim *sim, membuf *b)
{
    b->n = 0;
    int rc = ps_export(s, sim, PS_FORMAT_METRICS, membuf_write, b);
    if (rc)
        return cli_report("run", rc, NULL);
    while (b->n && b->p[b->n - 1] == '\n')
        b->p[--b->n] = 0;
    return EXIT_OK;
}

/* Runs s on a private loop with emulated compute; the measured timeline ends up in sim. */
static int execute(const ps_schedule *s, const ps_problem *pb, double scale, ps_sim *sim)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) {
        fprintf(stderr, "pipesched: run: cannot create an event loop\n");
        return EXIT_INTERNAL;
    }
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.emulate = 1;
    cfg.problem = pb;
    cfg.time_scale = scale;
    ps_exec *x;
    int ex = EXIT_OK, rc = ps_exec_new(&x, &loop, s, &cfg, NULL);
    if (rc) {
        ex = cli_report("run", rc, NULL);
        goto out;
    }
    if ((rc = ps_exec_start(x)) == 0) {
        uv_run(&loop, UV_RUN_DEFAULT);
        rc = ps_exec_status(x);
    }
    if (rc)
        ex = cli_report("run", rc, ps_exec_last_error(x));
    else if ((rc = ps_exec_measured(x, scale, sim)))
        ex = cli_report("run", rc, NULL);
    /* The executor's handles close asynchronously: the loop runs once more to finish them. */
    ps_exec_close(x, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
out:
    if (uv_loop_close(&loop) && !ex) {
        fprintf(stderr, "pipesched: run: the event loop still has handles\n");
        ex = EXIT_INTERNAL;
    }
    return ex;
}

static void print_comparison(FILE *f, const ps_schedule *s, const ps_metrics *sm,
                             const ps_rank_metrics *sr, const ps_sim *measured, double scale)
{
    ps_metrics mm;
    ps_sim_metrics(measured, &mm);
    fprintf(f, "schedule %s: pp=%d vpp=%d stages=%d microbatches=%d actions=%zu, time scale %g s\n",
            ps_schedule_family(s), ps_schedule_pp(s), ps_schedule_vpp(s), ps_schedule_num_stages(s),
            ps_schedule_microbatches(s), ps_schedule_total_actions(s), scale);
    fprintf(f, "%-14s %12s %12s\n", "", "simulated", "measured");
    fprintf(f, "%-14s %12g %12g\n", "makespan", sm->makespan, mm.makespan);
    fprintf(f, "%-14s %12g %12g   largest idle of a rank\n", "bubble", sm->bubble, mm.bubble);
    fprintf(f, "%-14s %12.4f %12.4f   idle fraction\n", "bubble_ratio", sm->bubble_ratio,
            mm.bubble_ratio);
    fprintf(f, "makespan error %.3f%%\n", 100 * fabs(mm.makespan - sm->makespan) / sm->makespan);
    fprintf(f, "%6s %12s %12s %12s %12s\n", "rank", "busy(sim)", "busy(run)", "idle(sim)",
            "idle(run)");
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(measured, r, &rm);
        fprintf(f, "%6d %12g %12g %12g %12g\n", r, sr[r].busy, rm.busy, sr[r].idle, rm.idle);
    }
}

/* What the simulation predicted, kept before the execution overwrites sim's timeline. */
typedef struct predicted {
    ps_metrics m;
    ps_rank_metrics *ranks;
    membuf json;
} predicted;

static int keep_prediction(const cli_opts *o, const ps_schedule *s, const ps_sim *sim, predicted *p)
{
    ps_sim_metrics(sim, &p->m);
    p->ranks = calloc((size_t)ps_schedule_pp(s), sizeof *p->ranks);
    if (!p->ranks)
        return cli_report("run", PS_ENOMEM, NULL);
    for (int r = 0; r < ps_schedule_pp(s); r++)
        ps_sim_rank_metrics(sim, r, &p->ranks[r]);
    return o->json ? metrics_json(s, sim, &p->json) : EXIT_OK;
}

static int print_result(const cli_opts *o, const ps_schedule *s, const ps_sim *sim,
                        const predicted *p, double scale)
{
    membuf runj = {NULL, 0, 0};
    int ex = o->json ? metrics_json(s, sim, &runj) : EXIT_OK;
    FILE *f = stdout;
    if (!ex && o->output && !(f = fopen(o->output, "w"))) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", o->output, strerror(errno));
        ex = EXIT_USAGE;
    }
    if (!ex) {
        ps_metrics mm;
        ps_sim_metrics(sim, &mm);
        if (o->json)
            fprintf(f, "{\"simulated\": %s,\n \"measured\": %s,\n \"makespan_error\": %s}\n",
                    p->json.p, runj.p, CLI_NUM(fabs(mm.makespan - p->m.makespan) / p->m.makespan));
        else
            print_comparison(f, s, &p->m, p->ranks, sim, scale);
        if (o->output && fclose(f)) {
            fprintf(stderr, "pipesched: writing %s failed: %s\n", o->output, strerror(errno));
            ex = EXIT_INTERNAL;
        }
    }
    free(runj.p);
    return ex;
}

static int run_main(const cli_opts *o)
{
    double scale = o->time_scale < 0 ? 1e-3 : o->time_scale;
    predicted p = {{0}, NULL, {NULL, 0, 0}};
    cli_job j;
    int ex = cli_job_open(&j, o, 1);
    if (!ex)
        ex = keep_prediction(o, j.s, j.sim, &p);
    if (!ex && cli_exec_load())
        ex = EXIT_INTERNAL;
    if (!ex)
        ex = execute(j.s, j.pb, scale, j.sim);
    if (!ex && o->trace)
        ex = cli_emit(j.s, j.sim, PS_FORMAT_TRACE, o->trace);
    if (!ex)
        ex = print_result(o, j.s, j.sim, &p, scale);
    free(p.json.p);
    free(p.ranks);
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_run = {
    .name = "run",
    .summary = "execute a schedule with emulated compute; measured vs simulated",
    .usage = "pipesched run [OPTIONS]",
    .about = "Generates and simulates a schedule, then executes it for real on a libuv loop with\n"
             "emulated compute (each action sleeps its cost times the time scale, one thread per\n"
             "rank, all ranks in this process) and prints the measured metrics next to the\n"
             "simulated ones with the relative error of the makespan.",
    .option_help = {{"json", "{\"simulated\": {...}, \"measured\": {...}, \"makespan_error\": x}"}},
    .run = run_main,
};
