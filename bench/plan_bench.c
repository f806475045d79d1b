/*
 * Benchmark of the overlap planner on real model configurations (by default
 * docs/examples/pangu-ultra-moe-718b.json and docs/examples/deepseek-v3.json; run from the
 * repository root, or pass config files):
 *   1. the fused pair of the steady phase under each method: F&B, exposed all-to-all, and the
 *      time one plan takes (median of repeated runs);
 *   2. whole iterations: makespan and EP all-to-all overlap (steady phase and whole
 *      iteration) of the config's schedule and of its alternatives (adaptive, interleaved,
 *      dualpipev, dualpipe when the shape allows) on the same model and micro-batches, each
 *      under every planner method;
 *   3. the time of one generate + validate + simulate of the config's scenario.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/pipesched.h>

#include "bench_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Simulates pb (with its family, pp, vpp) under planner method; 0 on success. */
static int simulate(ps_problem *pb, int method, ps_metrics *met, ps_comm_metrics *c, double *us)
{
    ps_moe_model m;
    ps_problem_get_moe(pb, &m);
    m.planner = method;
    ps_problem_set_moe(pb, &m);
    ps_schedule *s;
    ps_sim *sim;
    ps_schedule_new(&s, NULL);
    ps_sim_new(&sim, NULL);
    double t0 = now();
    int rc = ps_schedule_generate(s, pb);
    if (!rc)
        rc = ps_schedule_validate(s);
    if (!rc)
        rc = ps_sim_run(sim, s, pb);
    if (us)
        *us = (now() - t0) * 1e6;
    if (!rc) {
        ps_sim_metrics(sim, met);
        ps_sim_comm(sim, c);
    } else {
        fprintf(stderr, "  (%s: %s%s)\n", ps_problem_schedule(pb), ps_schedule_last_error(s),
                ps_sim_last_error(sim));
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
    return rc;
}

static void bench_config(const char *path, int quick)
{
    size_t len;
    char *text = slurp(path, &len);
    if (!text) {
        printf("%s: cannot read (run from the repository root or pass the file)\n\n", path);
        return;
    }
    ps_problem *pb;
    ps_problem_new(&pb, NULL);
    if (ps_problem_load_json(pb, text, len)) {
        printf("%s: %s\n\n", path, ps_problem_last_error(pb));
        free(text);
        ps_problem_free(pb);
        return;
    }
    free(text);
    const char *family = ps_problem_schedule(pb);
    long long pp = ps_problem_get_int(pb, PS_PARAM_PP), vpp = ps_problem_get_int(pb, PS_PARAM_VPP);
    long long mb = ps_problem_get_int(pb, PS_PARAM_MICROBATCHES);
    ps_moe_model model;
    ps_problem_get_moe(pb, &model);
    ps_a2a_info a;
    printf("== %s: %s pp=%lld vpp=%lld m=%lld, %d layers (%d dense)\n", path, family, pp, vpp, mb,
           (int)model.layers, (int)model.dense_layers);
    if (!ps_problem_a2a_info(pb, &a))
        printf("all-to-all per MoE layer: flat %.3f ms, hierarchical %.3f ms (inter-node bytes "
               "%.1f MB vs %.1f MB, ratio %.2f): %s\n",
               a.flat_time, a.hier_time, a.flat_inter / 1e6, a.hier_inter / 1e6,
               a.hier_inter > 0 ? a.flat_inter / a.hier_inter : 0.0,
               a.chosen == PS_A2A_HIERARCHICAL ? "hierarchical" : "flat");

    /* 1. the steady-phase fused pair: the last model stage (all MoE). */
    ps_schedule *s;
    ps_schedule_new(&s, NULL);
    if (ps_schedule_generate(s, pb)) {
        printf("  %s\n\n", ps_schedule_last_error(s));
        ps_schedule_free(s);
        ps_problem_free(pb);
        return;
    }
    int stages = ps_schedule_num_stages(s) / ps_schedule_param_copies(s);
    ps_schedule_free(s);
    int st = stages - 1;
    ps_plan *pl;
    ps_plan_new(&pl, NULL);
    printf("fused pair (forward + full backward of model stage %d of %d), ms:\n", st, stages);
    printf("  %-10s %10s %10s %10s %9s %12s\n", "method", "F&B", "compute", "exposed", "overlap",
           "us per plan");
    double base = 0;
    for (int k = 0; k < 4; k++) {
        int reps = quick ? 20 : 200;
        double t[200];
        for (int i = 0; i < reps; i++) {
            double t0 = now();
            ps_plan_step(pl, pb, k, stages, st, PS_B, st);
            t[i] = (now() - t0) * 1e6;
        }
        ps_plan_stats ss;
        ps_plan_stats_get(pl, &ss);
        if (!k)
            base = ss.duration;
        printf("  %-10s %10.3f %10.3f %10.3f %8.2f%% %12.1f   (%.3fx adaptive)\n",
               ps_planner_name(k), ss.duration, ss.compute, ss.exposed, 100 * ss.overlap,
               median(t, reps), ss.duration / base);
    }
    ps_plan_free(pl);

    /* 2. whole iterations. */
    static const struct {
        const char *family;
        int vpp; /* 0: the config's */
    } alts[] = {{NULL, 0}, {"adaptive", 0}, {"interleaved", 0}, {"dualpipev", 2}, {"dualpipe", 1}};
    printf("whole iteration (m = %lld), makespan in ms, EP all-to-all overlap steady / whole:\n",
           mb);
    printf("  %-12s %-10s %12s %10s %10s %10s\n", "schedule", "method", "makespan", "steady",
           "whole", "bubble");
    for (size_t i = 0; i < sizeof alts / sizeof alts[0]; i++) {
        const char *fam = alts[i].family ? alts[i].family : family;
        if (i && !strcmp(fam, family))
            continue;
        if (ps_problem_set_schedule(pb, fam))
            continue;
        if (strcmp(fam, "adaptive")) { /* the adaptive options apply to it only */
            ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, -1);
            ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 0);
        }
        long long v = alts[i].vpp ? alts[i].vpp : vpp;
        long long p = pp;
        /* dualpipev puts 2 stages on each rank: same model stages on half the devices
         * would change the problem; keep the devices (pp) and the stage count pp * 2. */
        ps_problem_set_int(pb, PS_PARAM_PP, p);
        ps_problem_set_int(pb, PS_PARAM_VPP, v);
        for (int k = 0; k < 4; k++) {
            ps_metrics met;
            ps_comm_metrics c;
            if (simulate(pb, k, &met, &c, NULL))
                break;
            printf("  %-12s %-10s %12.1f %9.2f%% %9.2f%% %10.4f\n", k ? "" : fam,
                   ps_planner_name(k), met.makespan, 100 * c.overlap[PS_PHASE_STEADY],
                   100 * c.overlap[PS_PHASE_ALL], met.bubble_ratio);
        }
    }
    ps_problem_set_schedule(pb, family);
    ps_problem_set_int(pb, PS_PARAM_VPP, vpp);

    /* Whole-iteration overlap against the number of micro-batches (the steady phase grows,
     * warm-up and cool-down stay): the config's schedule under the adaptive planner. */
    printf("EP all-to-all hidden, %s, against m:\n  %6s %12s %9s %9s %9s %9s\n", family, "m",
           "makespan", "warm-up", "steady", "cool-down", "whole");
    for (long long mm = mb; mm <= 16 * mb && mm <= (quick ? 4 * mb : 16 * mb); mm *= 2) {
        ps_metrics met;
        ps_comm_metrics c;
        ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, mm);
        if (simulate(pb, PS_PLANNER_ADAPTIVE, &met, &c, NULL))
            break;
        printf("  %6lld %12.1f %8.2f%% %8.2f%% %8.2f%% %8.2f%%\n", mm, met.makespan,
               100 * c.overlap[PS_PHASE_WARMUP], 100 * c.overlap[PS_PHASE_STEADY],
               100 * c.overlap[PS_PHASE_COOLDOWN], 100 * c.overlap[PS_PHASE_ALL]);
    }
    ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, mb);

    /* 3. one scenario end to end. */
    int reps = quick ? 5 : 50;
    double t[50];
    for (int i = 0; i < reps; i++) {
        ps_metrics met;
        ps_comm_metrics c;
        simulate(pb, PS_PLANNER_ADAPTIVE, &met, &c, &t[i]);
    }
    printf("generate + validate + plan + simulate of the config: %.1f us median\n\n",
           median(t, reps));
    ps_problem_free(pb);
}

int main(int argc, char **argv)
{
    int quick = 0, first = 1;
    if (argc > 1 && !strcmp(argv[1], "--quick"))
        quick = 1, first = 2;
    if (first < argc) {
        for (int i = first; i < argc; i++)
            bench_config(argv[i], quick);
    } else {
        bench_config("docs/examples/pangu-ultra-moe-718b.json", quick);
        bench_config("docs/examples/deepseek-v3.json", quick);
    }
    return 0;
}
