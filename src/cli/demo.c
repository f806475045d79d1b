/*
 * `pipesched demo`: a short tour. Three classic schedules on 4 ranks as timed tables, then
 * Adaptive Pipe on the Pangu Ultra MoE 718B example (built in from demo_config.h), then EDPB
 * on the same model in seconds (the estimate with skewed expert loads and packed samples, and
 * two SVG timelines of its uneven micro-batches), then what other commands add through their
 * `demo` member (draw: two SVG files).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"
#include "demo_config.h"

#include <pipesched/balance.h>

#include <stdlib.h>
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

/* ---- EDPB (issue 15, docs/balance.md) ------------------------------------------------------ */

/* The synthetic inputs: skewed routing and packed documents (docs/balance.md says why these). */
#define EDPB_EXPERTS "zipf:0.6"
#define EDPB_SAMPLES "lognormal:7,1.5"
/* The reordering's simulations: enough for the gain, few enough for a tour. */
#define EDPB_EVALS 300
#define EDPB_BEFORE "pipesched-demo-edpb-before.svg"
#define EDPB_AFTER "pipesched-demo-edpb-after.svg"

/* The published setup of Pangu Ultra MoE: tp 8, pp 16, vpp 2, ep 32 on 6144 Ascend 910B with
 * Adaptive Pipe (docs/tune.md, "Known answers": expert tp 2 fits without recompute). */
static void edpb_job(ps_train *t)
{
    ps_train_init(t);
    t->gpus = 6144, t->tp = 8, t->pp = 16, t->vpp = 2, t->ep = 32, t->etp = 2;
    t->gbs = 1536, t->mbs = 1, t->seq = 8192, t->distributed_optimizer = 1;
    snprintf(t->schedule, sizeof t->schedule, "adaptive");
    t->layout = "balanced";
}

typedef struct edpb_demo {
    ps_transformer m;
    ps_hardware hw;
    ps_train t;
    ps_sample *x;
    int32_t *rank, *slot;
    double *w;
    ps_expert_trace *tr;
    ps_estimate *e;
    ps_edpb_result r;
    char err[1024];
} edpb_demo;

/* Replica `replica`'s pipeline with the placed experts and the weights of an assignment
 * (rank NULL: the input order), drawn to path. */
static int edpb_draw(edpb_demo *d, const int32_t *rank, const int32_t *slot, int32_t replica,
                     const char *path)
{
    const cli_command *draw = cli_find("draw");
    ps_estimate_result er;
    ps_estimate_result_get(d->e, &er); /* the even estimate ps_edpb_estimate leaves */
    int32_t dp = er.dp, m = er.microbatches;
    double f = d->r.expert_factor_balanced;
    int rc = ps_edpb_slot_weights(&d->m, &d->hw, d->x, (size_t)d->t.gbs, rank, slot, dp, m, d->w,
                                  d->err, sizeof d->err);
    if (!rc)
        rc = ps_estimate_set_microbatch_weights(d->e, d->w + (size_t)replica * m, (size_t)m);
    if (!rc)
        rc = ps_estimate_set_moe_imbalance(d->e, f, f);
    if (!rc)
        rc = ps_estimate_run(d->e, &d->m, &d->hw, &d->t);
    if (rc)
        return cli_report("demo", rc, *d->err ? d->err : ps_estimate_last_error(d->e));
    return draw->timeline_svg(ps_estimate_schedule(d->e), ps_estimate_sim(d->e), "s", "demo", path);
}

static int edpb_inputs(edpb_demo *d)
{
    int rc = ps_transformer_builtin("pangu-ultra-moe-718b", &d->m);
    if (!rc)
        rc = ps_hardware_builtin("ascend-910b", &d->hw);
    if (rc)
        return cli_report("demo", rc, "the Pangu model or the 910B preset is missing");
    edpb_job(&d->t);
    size_t n = (size_t)d->t.gbs;
    d->x = malloc(n * sizeof *d->x);
    d->rank = malloc(n * sizeof *d->rank);
    d->slot = malloc(n * sizeof *d->slot);
    d->w = malloc(n * sizeof *d->w); /* dp x m slots of mbs 1 */
    if (!d->x || !d->rank || !d->slot || !d->w)
        return cli_report("demo", PS_ENOMEM, NULL);
    if ((rc = ps_samples_synthetic(EDPB_SAMPLES, d->t.seq, d->x, n, d->err, sizeof d->err)))
        return cli_report("demo", rc, d->err);
    if ((rc = ps_expert_trace_new(&d->tr, NULL)) ||
        (rc = ps_expert_trace_synthetic(d->tr, EDPB_EXPERTS, d->m.layers - d->m.first_dense,
                                        d->m.experts)))
        return cli_report("demo", rc, d->tr ? ps_expert_trace_last_error(d->tr) : NULL);
    if ((rc = ps_estimate_new(&d->e, NULL)))
        return cli_report("demo", rc, NULL);
    return EXIT_OK;
}

static void edpb_print(FILE *f, const edpb_demo *d)
{
    const ps_edpb_result *r = &d->r;
    ps_estimate_result er;
    ps_estimate_result_get(d->e, &er);
    double gain_e = r->imbalanced_step_time_s / r->experts_step_time_s - 1;
    double gain = r->imbalanced_step_time_s / r->balanced_step_time_s - 1;
    fprintf(f,
            "\n== EDPB on Pangu Ultra MoE 718B in seconds (pangu-ultra-moe-718b, docs/balance.md)\n"
            "%d x %s, tp %d pp %d vpp %d ep %d (expert tp %d), Adaptive Pipe:\n%d replicas x %d "
            "micro-batches. Synthetic expert loads %s (the busiest EP device\n%.2f x the mean "
            "at Megatron's placement) and %lld packed samples %s\n(the heaviest replica %.3f x "
            "the mean).\n",
            d->t.gpus, d->hw.name, d->t.tp, d->t.pp, d->t.vpp, d->t.ep, d->t.etp, er.dp,
            er.microbatches, EDPB_EXPERTS, r->expert_factor, (long long)d->t.gbs, EDPB_SAMPLES,
            r->data_imbalance);
    fprintf(f, "  %-38s %8.3f s\n", "even loads and micro-batches", r->even_step_time_s);
    fprintf(f, "  %-38s %8.3f s\n", "Adaptive Pipe alone, imbalanced", r->imbalanced_step_time_s);
    fprintf(f, "  %-38s %8.3f s  %+6.1f%% throughput\n", "+ expert placement",
            r->experts_step_time_s, 100 * gain_e);
    fprintf(f, "  %-38s %8.3f s  %+6.1f%% throughput in all\n", "+ data reordering",
            r->balanced_step_time_s, 100 * gain);
    fprintf(f,
            "EDPB (E and D here; P is the balanced layout in every row) gains %+.1f%%; Pangu "
            "Ultra MoE\nreports +25.5%% of its +72.6%%. The gain grows with the skew, which "
            "is synthetic\nhere: docs/balance.md compares the two.\n",
            100 * gain);
}

/* EDPB on the Pangu job: the estimate with skewed loads and packed samples, without and with
 * the balancing, and the slowest replica's timeline before and after the reordering. */
static int demo_edpb(FILE *f)
{
    edpb_demo d;
    memset(&d, 0, sizeof d);
    int ex = edpb_inputs(&d);
    if (!ex) {
        ps_edpb_input in = {d.x, (size_t)d.t.gbs, d.tr, 0.9, EDPB_EVALS};
        int rc = ps_edpb_estimate(d.e, &d.m, &d.hw, &d.t, &in, &d.r, d.rank, d.slot, d.err,
                                  sizeof d.err);
        if (rc)
            ex = cli_report("demo", rc, d.err);
    }
    if (!ex)
        edpb_print(f, &d);
    const cli_command *draw = cli_find("draw");
    if (!ex && draw && draw->timeline_svg) {
        fflush(f);
        ex = edpb_draw(&d, NULL, NULL, d.r.slowest_replica, EDPB_BEFORE);
        if (!ex)
            ex = edpb_draw(&d, d.rank, d.slot, d.r.slowest_replica_balanced, EDPB_AFTER);
        if (!ex)
            fprintf(f,
                    "wrote %s and %s\n(the slowest replica's pipeline, its micro-batches "
                    "weighted, with the placed experts:\ninput order, then reordered)\n",
                    EDPB_BEFORE, EDPB_AFTER);
    }
    ps_estimate_free(d.e);
    ps_expert_trace_free(d.tr);
    free(d.x);
    free(d.rank);
    free(d.slot);
    free(d.w);
    return ex;
}

static int demo_main(const cli_opts *o)
{
    int ex = demo_classic();
    if (!ex)
        ex = demo_moe(stdout);
    if (!ex)
        ex = demo_edpb(stdout);
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
             "with their metrics; Adaptive Pipe on the Pangu Ultra MoE example; EDPB (expert\n"
             "placement and data reordering) on the same model in seconds, with two SVG\n"
             "timelines of its uneven micro-batches (docs/balance.md).",
    .run = demo_main,
};
