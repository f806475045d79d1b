/*
 * `pipesched demo`: a short tour. Three classic schedules on 4 ranks as timed tables, then
 * Adaptive Pipe on the Pangu Ultra MoE 718B example (built in from demo_config.h), then what
 * other commands add through their `demo` member (draw: two SVG files).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"
#include "demo_config.h"

#include <string.h>

/* Where the built-in example comes from, for the reader of the tour. */
#define PANGU_SOURCE "docs/examples/pangu-ultra-moe-718b.json"

/* One classic schedule with the default costs: its timed table and its metrics. */
static int demo_one(const char *family, int pp, int vpp, int m)
{
    cli_job j = {NULL, NULL, NULL, 0};
    int ex = EXIT_INTERNAL;
    if (ps_problem_new(&j.pb, NULL) || ps_problem_set_schedule(j.pb, family) ||
        ps_problem_set_int(j.pb, PS_PARAM_PP, pp) || ps_problem_set_int(j.pb, PS_PARAM_VPP, vpp) ||
        ps_problem_set_int(j.pb, PS_PARAM_MICROBATCHES, m))
        goto out;
    if ((ex = cli_job_run(&j, 1)))
        goto out;
    printf("== %s, pp=%d vpp=%d m=%d, f=b=w=1 (per chunk), c=0\n", family, pp, vpp, m);
    if ((ex = cli_emit(j.s, j.sim, PS_FORMAT_TABLE_TIMED, NULL)))
        goto out;
    cli_print_metrics(stdout, j.s, j.sim, 0);
    printf("\n");
out:
    cli_job_free(&j);
    return ex;
}

static int demo_classic(void)
{
    printf("pipesched demo: the same 4-rank pipeline with 8 micro-batches, three ways.\n"
           "Each row is a rank; each column one time unit; '+' continues an action; '.' is a "
           "bubble.\n\n");
    int ex = demo_one("gpipe", 4, 1, 8);
    if (!ex)
        ex = demo_one("1f1b", 4, 1, 8);
    if (!ex)
        ex = demo_one("interleaved", 4, 2, 8);
    if (!ex)
        printf("1F1B matches GPipe's bubble with %s of its activation memory on rank 0; "
               "interleaving\nhalves the bubble in stage time at the price of more "
               "in-flight chunks.\n\n",
               "half");
    return ex;
}

/* The model and its all-to-all estimate. */
static void moe_header(FILE *f, const ps_problem *pb)
{
    ps_moe_model m;
    ps_a2a_info a;
    ps_problem_get_moe(pb, &m);
    long long pp = ps_problem_get_int(pb, PS_PARAM_PP), vpp = ps_problem_get_int(pb, PS_PARAM_VPP);
    long long mb = ps_problem_get_int(pb, PS_PARAM_MICROBATCHES);
    fprintf(f,
            "== Adaptive Pipe on Pangu Ultra MoE 718B (%s)\n"
            "%d layers (%d dense), PP%lld/VPP%lld, %lld micro-batches; per-layer durations "
            "derived from the\nmodel and cluster dimensions, in milliseconds.\n",
            PANGU_SOURCE, (int)m.layers, (int)m.dense_layers, pp, vpp, mb);
    if (!ps_problem_a2a_info(pb, &a))
        fprintf(f,
                "all-to-all per MoE layer: flat %.2f ms, hierarchical %.2f ms (%.0f vs %.0f MB "
                "across nodes): %s\n",
                a.flat_time, a.hier_time, a.flat_inter / 1e6, a.hier_inter / 1e6,
                a.chosen == PS_A2A_HIERARCHICAL ? "hierarchical" : "flat");
}

/* The steady-phase pair, the last model stage's forward and full backward, under each
 * planner method. */
static int moe_pair(FILE *f, const ps_problem *pb)
{
    int stages = (int)(ps_problem_get_int(pb, PS_PARAM_PP) * ps_problem_get_int(pb, PS_PARAM_VPP));
    ps_plan *pl;
    if (ps_plan_new(&pl, NULL))
        return EXIT_INTERNAL;
    fprintf(f, "steady-phase fused pair (forward + backward of a 2-layer MoE chunk):\n");
    for (int k = 0; k < 4; k++) {
        if (ps_plan_step(pl, pb, k, stages, stages - 1, PS_B, stages - 1)) {
            fprintf(stderr, "pipesched: demo: %s\n", ps_plan_last_error(pl));
            ps_plan_free(pl);
            return EXIT_INTERNAL;
        }
        ps_plan_stats st;
        ps_plan_stats_get(pl, &st);
        fprintf(f, "  %-10s F&B %8.2f ms, all-to-all %7.2f ms, exposed %6.2f ms, hidden %6.2f%%\n",
                ps_planner_name(k), st.duration, st.comm, st.exposed, 100 * st.overlap);
    }
    ps_plan_free(pl);
    return EXIT_OK;
}

/* Simulates pb as family (vpp 0: keep) under its MoE model; prints one summary line. */
static int demo_row(FILE *f, ps_problem *pb, const char *family, int vpp, double *makespan)
{
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    int ex = EXIT_INTERNAL;
    int adaptive = !strcmp(family, "adaptive"); /* its options stay for it only */
    if (ps_problem_set_schedule(pb, family) || (vpp && ps_problem_set_int(pb, PS_PARAM_VPP, vpp)) ||
        (!adaptive && (ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, -1) ||
                       ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 0))) ||
        ps_schedule_new(&s, NULL) || ps_sim_new(&sim, NULL))
        goto out;
    int rc = ps_schedule_generate(s, pb);
    if (!rc)
        rc = ps_schedule_validate(s);
    if (!rc)
        rc = ps_sim_run(sim, s, pb);
    if (rc) {
        fprintf(stderr, "pipesched: demo: %s: %s%s\n", family, ps_schedule_last_error(s),
                ps_sim_last_error(sim));
        ex = cli_exit_code(rc);
        goto out;
    }
    ps_metrics m;
    ps_comm_metrics c;
    ps_rank_metrics r0;
    ps_sim_metrics(sim, &m);
    ps_sim_comm(sim, &c);
    ps_sim_rank_metrics(sim, 0, &r0);
    fprintf(f, "  %-12s %4d %11.1f %10.2f%% %10.2f%% %10.2f%% %9lld %7d\n", family,
            ps_schedule_vpp(s), m.makespan, 100 * m.bubble_ratio, 100 * c.overlap[PS_PHASE_STEADY],
            100 * c.overlap[PS_PHASE_ALL], (long long)r0.peak_activations, r0.param_copies);
    if (makespan)
        *makespan = m.makespan;
    ex = EXIT_OK;
out:
    ps_sim_free(sim);
    ps_schedule_free(s);
    return ex;
}

/* The whole iteration under adaptive, interleaved and DualPipeV, and the comparison. */
static int moe_iteration(FILE *f, ps_problem *pb)
{
    fprintf(f,
            "whole iteration (EP all-to-all hidden: steady phase / whole iteration):\n"
            "  %-12s %4s %11s %11s %11s %11s %9s %7s\n",
            "schedule", "vpp", "makespan", "bubble", "steady", "whole", "peak_act0", "params");
    double ad = 0, il = 0, dv = 0;
    int ex;
    if ((ex = demo_row(f, pb, "adaptive", 0, &ad)) || (ex = demo_row(f, pb, "interleaved", 0, &il)))
        return ex;
    if ((ex = demo_row(f, pb, "dualpipev", 2, &dv)))
        return ex;
    fprintf(f,
            "Adaptive Pipe is %.1f%% faster than interleaved 1F1B and %.1f%% faster than "
            "DualPipeV here: its\nsteady phase fuses each forward with the backward of another "
            "micro-batch, so the\nall-to-all of one hides under the other's compute, with one "
            "copy of the weights.\n",
            il > 0 ? 100.0 * (il - ad) / il : 0.0, dv > 0 ? 100.0 * (dv - ad) / dv : 0.0);
    return EXIT_OK;
}

/* The MoE part of the tour: Adaptive Pipe on the built-in Pangu example. */
static int demo_moe(FILE *f)
{
    ps_problem *pb = NULL;
    int ex = EXIT_INTERNAL;
    if (ps_problem_new(&pb, NULL))
        goto out;
    if (ps_problem_load_json(pb, PS_DEMO_PANGU_JSON, strlen(PS_DEMO_PANGU_JSON))) {
        fprintf(stderr, "pipesched: demo: %s: %s\n", PANGU_SOURCE, ps_problem_last_error(pb));
        goto out;
    }
    moe_header(f, pb);
    if ((ex = moe_pair(f, pb)) == EXIT_OK)
        ex = moe_iteration(f, pb);
out:
    ps_problem_free(pb);
    return ex;
}

static int demo_main(const cli_opts *o)
{
    int ex = demo_classic();
    if (!ex)
        ex = demo_moe(stdout);
    /* The other commands' parts, after ours; stdout first, as they may write elsewhere. */
    for (const cli_command *const *c = cli_commands; *c; c++) {
        if (!(*c)->demo)
            continue;
        fflush(stdout);
        if (!ex)
            ex = (*c)->demo(PS_DEMO_PANGU_JSON);
    }
    return ex;
}

const cli_command cli_cmd_demo = {
    .name = "demo",
    .summary = "a short tour",
    .usage = "pipesched demo",
    .about = "Shows GPipe, 1F1B and interleaved 1F1B on 4 ranks with 8 micro-batches, timed,\n"
             "with their metrics.",
    .run = demo_main,
};
