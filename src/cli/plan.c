/*
 * `pipesched plan`: the overlap planner's view of one fused pair and of a warm-up chunk, as
 * two-stream tables (or JSON), with the fixed MindSpeed/Megatron orders and the serial
 * execution for comparison.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int cli_parse_method(const char *name)
{
    for (int i = PS_PLANNER_ADAPTIVE; i <= PS_PLANNER_SERIAL; i++)
        if (!strcmp(name, ps_planner_name(i)))
            return i;
    fprintf(stderr,
            "pipesched: unknown planner method \"%s\" (adaptive, mindspeed, megatron, serial)\n",
            name);
    return -1;
}

/* First layer and count of each part of the plan, from its operations. */
static void layer_span(const ps_plan_op *ops, size_t n, int part, int *lo, int *hi)
{
    *lo = -1;
    *hi = -1;
    for (size_t i = 0; i < n; i++) {
        if (ops[i].part != part)
            continue;
        if (*lo < 0 || ops[i].layer < *lo)
            *lo = ops[i].layer;
        if (ops[i].layer > *hi)
            *hi = ops[i].layer;
    }
}

static void print_table(FILE *f, const char *title, const ps_plan *pl)
{
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(pl, &ops);
    ps_plan_stats st;
    ps_plan_stats_get(pl, &st);
    fprintf(f, "%s\n", title);
    fprintf(f, "%10s %10s  %-24s %-24s\n", "start", "end", "compute stream",
            "communication stream");
    for (size_t i = 0; i < n; i++) {
        char cell[64];
        snprintf(cell, sizeof cell, "%s %s L%d%s", ops[i].part ? "B" : "F", ps_op_name(ops[i].op),
                 (int)ops[i].layer, ops[i].dense ? " (dense)" : "");
        fprintf(f, "%10.3f %10.3f  %-24s %-24s\n", ops[i].start, ops[i].end,
                ops[i].stream ? "" : cell, ops[i].stream ? cell : "");
    }
    fprintf(f, "duration %.3f  compute %.3f  all-to-all %.3f  exposed %.3f  overlap %.1f%%",
            st.duration, st.compute, st.comm, st.exposed, 100.0 * st.overlap);
    if (st.p2p > 0)
        fprintf(f, "  p2p %.3f (exposed %.3f)", st.p2p, st.p2p_exposed);
    fprintf(f, "\n\n");
}

static void json_plan(FILE *f, const char *key, const ps_plan *pl, int method, int fstage,
                      int bstage)
{
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(pl, &ops);
    ps_plan_stats st;
    ps_plan_stats_get(pl, &st);
    fprintf(f, "\"%s\":{\"method\":\"%s\",\"forward_stage\":%d,\"backward_stage\":%d,", key,
            ps_planner_name(method), fstage, bstage);
    fprintf(f,
            "\"duration\":%.9g,\"compute\":%.9g,\"comm\":%.9g,\"exposed\":%.9g,\"overlap\":%.9g,"
            "\"p2p\":%.9g,\"p2p_exposed\":%.9g,\"ops\":[",
            st.duration, st.compute, st.comm, st.exposed, st.overlap, st.p2p, st.p2p_exposed);
    for (size_t i = 0; i < n; i++)
        fprintf(f,
                "%s{\"op\":\"%s\",\"stream\":\"%s\",\"part\":\"%s\",\"layer\":%d,\"dense\":%s,"
                "\"start\":%.9g,\"end\":%.9g}",
                i ? "," : "", ps_op_name(ops[i].op), ops[i].stream ? "comm" : "compute",
                ops[i].part ? "B" : "F", (int)ops[i].layer, ops[i].dense ? "true" : "false",
                ops[i].start, ops[i].end);
    fprintf(f, "]}");
}

int cli_default_stage(const ps_problem *pb, int stages)
{
    int32_t *a = malloc(3 * sizeof *a * (size_t)stages);
    int best = 0;
    if (a && ps_problem_stage_split(pb, stages, a, a + stages, a + 2 * stages) == 0)
        for (int s = 1; s < stages; s++)
            if (a[stages + s] - a[2 * stages + s] > a[stages + best] - a[2 * stages + best])
                best = s;
    free(a);
    return best;
}

int cli_plan(FILE *f, const ps_problem *pb, const ps_schedule *s, int method, int fstage,
             int bstage, int json)
{
    int stages = ps_schedule_num_stages(s) / ps_schedule_param_copies(s);
    ps_moe_model m;
    if (ps_problem_get_moe(pb, &m)) {
        fprintf(stderr, "pipesched: plan needs a MoE model: a config with \"model\" and "
                        "\"cluster\" blocks, or a \"moe\" block (docs/config.md)\n");
        return EXIT_USAGE;
    }
    if (fstage >= stages || bstage >= stages) {
        fprintf(stderr, "pipesched: --%s %d is out of range: the schedule has %d model stages\n",
                fstage >= stages ? "fstage" : "bstage", fstage >= stages ? fstage : bstage, stages);
        return EXIT_USAGE;
    }
    if (fstage < 0)
        fstage = cli_default_stage(pb, stages);
    if (bstage < 0)
        bstage = fstage;
    ps_plan *pl;
    if (ps_plan_new(&pl, NULL)) {
        fprintf(stderr, "pipesched: out of memory\n");
        return EXIT_INTERNAL;
    }
    int ex = EXIT_OK, rc;
    ps_a2a_info a;
    int have_a2a = ps_problem_a2a_info(pb, &a) == 0;
    static const char *const algo[] = {"auto", "flat", "hierarchical"};
    if (json) {
        fprintf(f, "{\"schedule\":\"%s\",\"model_stages\":%d,\"layers\":%d,\"dense_layers\":%d,",
                ps_schedule_family(s), stages, (int)m.layers, (int)m.dense_layers);
        if (have_a2a)
            fprintf(f,
                    "\"a2a\":{\"chosen\":\"%s\",\"flat\":{\"inter_bytes\":%.9g,\"intra_bytes\":"
                    "%.9g,\"time\":%.9g},\"hierarchical\":{\"inter_bytes\":%.9g,\"intra_bytes\":"
                    "%.9g,\"time\":%.9g}},",
                    algo[a.chosen], a.flat_inter, a.flat_intra, a.flat_time, a.hier_inter,
                    a.hier_intra, a.hier_time);
    } else {
        fprintf(f, "%s: %d layers (%d dense) over %d model stages; planner %s\n",
                ps_schedule_family(s), (int)m.layers, (int)m.dense_layers, stages,
                ps_planner_name(method));
        if (have_a2a)
            fprintf(f,
                    "all-to-all per MoE layer: flat %.3f ms (inter-node %.1f MB), hierarchical "
                    "%.3f ms (inter-node %.1f MB): %s\n",
                    a.flat_time, a.flat_inter / 1e6, a.hier_time, a.hier_inter / 1e6,
                    algo[a.chosen]);
        fprintf(f, "\n");
    }
    /* The fused pair. */
    if ((rc = ps_plan_step(pl, pb, method, stages, fstage, PS_B, bstage))) {
        ex = cli_exit_code(rc);
        fprintf(stderr, "pipesched: plan: %s\n", ps_plan_last_error(pl));
        goto out;
    }
    int flo, fhi, blo, bhi;
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(pl, &ops);
    layer_span(ops, n, 0, &flo, &fhi);
    layer_span(ops, n, 1, &blo, &bhi);
    if (json) {
        json_plan(f, "pair", pl, method, fstage, bstage);
    } else {
        char title[256];
        snprintf(title, sizeof title,
                 "fused pair: forward of stage %d (layers %d-%d) with the full backward of stage "
                 "%d (layers %d-%d) of another micro-batch",
                 fstage, flo, fhi, bstage, blo, bhi);
        print_table(f, title, pl);
    }
    /* The warm-up chunk: a forward alone. */
    if ((rc = ps_plan_step(pl, pb, method, stages, fstage, PS_B, -1))) {
        ex = cli_exit_code(rc);
        fprintf(stderr, "pipesched: plan: %s\n", ps_plan_last_error(pl));
        goto out;
    }
    if (json) {
        fprintf(f, ",");
        json_plan(f, "warmup", pl, method, fstage, -1);
        fprintf(f, ",\"compare\":[");
    } else {
        char title[128];
        snprintf(title, sizeof title, "warm-up chunk: forward of stage %d alone (self-overlap)",
                 fstage);
        print_table(f, title, pl);
        fprintf(f, "the fused pair under each method:\n%-10s %12s %12s %10s %12s\n", "method",
                "F&B", "exposed", "overlap", "vs adaptive");
    }
    double base = 0;
    for (int k = 0; k < 4; k++) {
        if ((rc = ps_plan_step(pl, pb, k, stages, fstage, PS_B, bstage))) {
            ex = cli_exit_code(rc);
            fprintf(stderr, "pipesched: plan: %s\n", ps_plan_last_error(pl));
            goto out;
        }
        ps_plan_stats st;
        ps_plan_stats_get(pl, &st);
        if (k == 0)
            base = st.duration;
        if (json)
            fprintf(f, "%s{\"method\":\"%s\",\"duration\":%.9g,\"exposed\":%.9g,\"overlap\":%.9g}",
                    k ? "," : "", ps_planner_name(k), st.duration, st.exposed, st.overlap);
        else
            fprintf(f, "%-10s %12.3f %12.3f %9.1f%% %11.3fx\n", ps_planner_name(k), st.duration,
                    st.exposed, 100.0 * st.overlap, base > 0 ? st.duration / base : 1.0);
    }
    if (json)
        fprintf(f, "]}\n");
out:
    ps_plan_free(pl);
    return ex;
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

int cli_demo_moe(FILE *f, const char *json, const char *source)
{
    ps_problem *pb = NULL;
    int ex = EXIT_INTERNAL;
    if (ps_problem_new(&pb, NULL))
        goto out;
    if (ps_problem_load_json(pb, json, strlen(json))) {
        fprintf(stderr, "pipesched: demo: %s: %s\n", source, ps_problem_last_error(pb));
        goto out;
    }
    ps_moe_model m;
    ps_a2a_info a;
    ps_problem_get_moe(pb, &m);
    long long pp = ps_problem_get_int(pb, PS_PARAM_PP), vpp = ps_problem_get_int(pb, PS_PARAM_VPP);
    long long mb = ps_problem_get_int(pb, PS_PARAM_MICROBATCHES);
    fprintf(f,
            "== Adaptive Pipe on Pangu Ultra MoE 718B (%s)\n"
            "%d layers (%d dense), PP%lld/VPP%lld, %lld micro-batches; per-layer durations "
            "derived from the\nmodel and cluster dimensions, in milliseconds.\n",
            source, (int)m.layers, (int)m.dense_layers, pp, vpp, mb);
    if (!ps_problem_a2a_info(pb, &a))
        fprintf(f,
                "all-to-all per MoE layer: flat %.2f ms, hierarchical %.2f ms (%.0f vs %.0f MB "
                "across nodes): %s\n",
                a.flat_time, a.hier_time, a.flat_inter / 1e6, a.hier_inter / 1e6,
                a.chosen == PS_A2A_HIERARCHICAL ? "hierarchical" : "flat");
    /* The steady-phase pair: the last model stage, forward and full backward. */
    int stages = (int)(pp * vpp);
    ps_plan *pl;
    if (ps_plan_new(&pl, NULL))
        goto out;
    fprintf(f, "steady-phase fused pair (forward + backward of a 2-layer MoE chunk):\n");
    for (int k = 0; k < 4; k++) {
        if (ps_plan_step(pl, pb, k, stages, stages - 1, PS_B, stages - 1)) {
            fprintf(stderr, "pipesched: demo: %s\n", ps_plan_last_error(pl));
            ps_plan_free(pl);
            goto out;
        }
        ps_plan_stats st;
        ps_plan_stats_get(pl, &st);
        fprintf(f, "  %-10s F&B %8.2f ms, all-to-all %7.2f ms, exposed %6.2f ms, hidden %6.2f%%\n",
                ps_planner_name(k), st.duration, st.comm, st.exposed, 100 * st.overlap);
    }
    ps_plan_free(pl);
    fprintf(f,
            "whole iteration (EP all-to-all hidden: steady phase / whole iteration):\n"
            "  %-12s %4s %11s %11s %11s %11s %9s %7s\n",
            "schedule", "vpp", "makespan", "bubble", "steady", "whole", "peak_act0", "params");
    double ad = 0, il = 0, dv = 0;
    if ((ex = demo_row(f, pb, "adaptive", 0, &ad)) || (ex = demo_row(f, pb, "interleaved", 0, &il)))
        goto out;
    if ((ex = demo_row(f, pb, "dualpipev", 2, &dv)))
        goto out;
    fprintf(f,
            "Adaptive Pipe is %.1f%% faster than interleaved 1F1B and %.1f%% faster than "
            "DualPipeV here: its\nsteady phase fuses each forward with the backward of another "
            "micro-batch, so the\nall-to-all of one hides under the other's compute, with one "
            "copy of the weights.\n",
            il > 0 ? 100.0 * (il - ad) / il : 0.0, dv > 0 ? 100.0 * (dv - ad) / dv : 0.0);
    ex = EXIT_OK;
out:
    ps_problem_free(pb);
    return ex;
}
