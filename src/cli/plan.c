/*
 * `pipesched plan`: the overlap planner's view of one fused pair and of a warm-up chunk, as
 * two-stream tables (or JSON), with the fixed MindSpeed/Megatron orders and the serial
 * execution for comparison.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
            "\"duration\":%s,\"compute\":%s,\"comm\":%s,\"exposed\":%s,\"overlap\":%s,"
            "\"p2p\":%s,\"p2p_exposed\":%s,\"ops\":[",
            CLI_NUM(st.duration), CLI_NUM(st.compute), CLI_NUM(st.comm), CLI_NUM(st.exposed),
            CLI_NUM(st.overlap), CLI_NUM(st.p2p), CLI_NUM(st.p2p_exposed));
    for (size_t i = 0; i < n; i++)
        fprintf(f,
                "%s{\"op\":\"%s\",\"stream\":\"%s\",\"part\":\"%s\",\"layer\":%d,\"dense\":%s,"
                "\"start\":%s,\"end\":%s}",
                i ? "," : "", ps_op_name(ops[i].op), ops[i].stream ? "comm" : "compute",
                ops[i].part ? "B" : "F", (int)ops[i].layer, ops[i].dense ? "true" : "false",
                CLI_NUM(ops[i].start), CLI_NUM(ops[i].end));
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

/* What the parts of `plan`'s output share. */
typedef struct plan_out {
    FILE *f;
    const ps_problem *pb;
    ps_plan *pl;
    int method, stages, fstage, bstage, json;
} plan_out;

/* The model, its stages and the all-to-all estimate. */
static void print_header(const plan_out *p, const ps_schedule *s, const ps_moe_model *m)
{
    static const char *const algo[] = {"auto", "flat", "hierarchical"};
    ps_a2a_info a;
    int have_a2a = ps_problem_a2a_info(p->pb, &a) == 0;
    if (p->json) {
        fprintf(p->f, "{\"schedule\":\"%s\",\"model_stages\":%d,\"layers\":%d,\"dense_layers\":%d,",
                ps_schedule_family(s), p->stages, (int)m->layers, (int)m->dense_layers);
        if (have_a2a)
            fprintf(p->f,
                    "\"a2a\":{\"chosen\":\"%s\",\"flat\":{\"inter_bytes\":%s,\"intra_bytes\":"
                    "%s,\"time\":%s},\"hierarchical\":{\"inter_bytes\":%s,\"intra_bytes\":"
                    "%s,\"time\":%s}},",
                    algo[a.chosen], CLI_NUM(a.flat_inter), CLI_NUM(a.flat_intra),
                    CLI_NUM(a.flat_time), CLI_NUM(a.hier_inter), CLI_NUM(a.hier_intra),
                    CLI_NUM(a.hier_time));
        return;
    }
    fprintf(p->f, "%s: %d layers (%d dense) over %d model stages; planner %s\n",
            ps_schedule_family(s), (int)m->layers, (int)m->dense_layers, p->stages,
            ps_planner_name(p->method));
    if (have_a2a)
        fprintf(p->f,
                "all-to-all per MoE layer: flat %.3f ms (inter-node %.1f MB), hierarchical "
                "%.3f ms (inter-node %.1f MB): %s\n",
                a.flat_time, a.flat_inter / 1e6, a.hier_time, a.hier_inter / 1e6, algo[a.chosen]);
    fprintf(p->f, "\n");
}

/* Plans fstage's forward with bstage's backward (bstage -1: the forward alone). */
static int plan_step(const plan_out *p, int method, int bstage)
{
    int rc = ps_plan_step(p->pl, p->pb, method, p->stages, p->fstage, PS_B, bstage);
    if (rc)
        fprintf(stderr, "pipesched: plan: %s\n", ps_plan_last_error(p->pl));
    return rc ? cli_exit_code(rc) : EXIT_OK;
}

/* The fused pair of the steady phase. */
static int print_pair(const plan_out *p)
{
    int ex = plan_step(p, p->method, p->bstage);
    if (ex)
        return ex;
    if (p->json) {
        json_plan(p->f, "pair", p->pl, p->method, p->fstage, p->bstage);
        return EXIT_OK;
    }
    int flo, fhi, blo, bhi;
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(p->pl, &ops);
    layer_span(ops, n, 0, &flo, &fhi);
    layer_span(ops, n, 1, &blo, &bhi);
    char title[256];
    snprintf(title, sizeof title,
             "fused pair: forward of stage %d (layers %d-%d) with the full backward of stage "
             "%d (layers %d-%d) of another micro-batch",
             p->fstage, flo, fhi, p->bstage, blo, bhi);
    print_table(p->f, title, p->pl);
    return EXIT_OK;
}

/* The warm-up chunk: a forward alone, overlapping only with itself. */
static int print_warmup(const plan_out *p)
{
    int ex = plan_step(p, p->method, -1);
    if (ex)
        return ex;
    if (p->json) {
        fprintf(p->f, ",");
        json_plan(p->f, "warmup", p->pl, p->method, p->fstage, -1);
        return EXIT_OK;
    }
    char title[128];
    snprintf(title, sizeof title, "warm-up chunk: forward of stage %d alone (self-overlap)",
             p->fstage);
    print_table(p->f, title, p->pl);
    return EXIT_OK;
}

/* The fused pair under every method, against the adaptive planner's. */
static int print_comparison(const plan_out *p)
{
    if (p->json)
        fprintf(p->f, ",\"compare\":[");
    else
        fprintf(p->f, "the fused pair under each method:\n%-10s %12s %12s %10s %12s\n", "method",
                "F&B", "exposed", "overlap", "vs adaptive");
    double base = 0;
    for (int k = PS_PLANNER_ADAPTIVE; k <= PS_PLANNER_SERIAL; k++) {
        int ex = plan_step(p, k, p->bstage);
        if (ex)
            return ex;
        ps_plan_stats st;
        ps_plan_stats_get(p->pl, &st);
        if (k == PS_PLANNER_ADAPTIVE)
            base = st.duration;
        if (p->json)
            fprintf(p->f, "%s{\"method\":\"%s\",\"duration\":%s,\"exposed\":%s,\"overlap\":%s}",
                    k ? "," : "", ps_planner_name(k), CLI_NUM(st.duration), CLI_NUM(st.exposed),
                    CLI_NUM(st.overlap));
        else
            fprintf(p->f, "%-10s %12.3f %12.3f %9.1f%% %11.3fx\n", ps_planner_name(k), st.duration,
                    st.exposed, 100.0 * st.overlap, base > 0 ? st.duration / base : 1.0);
    }
    if (p->json)
        fprintf(p->f, "]}\n");
    return EXIT_OK;
}

/* Writes the plans of a fused pair and a warm-up chunk of s's model stages (fstage/bstage < 0:
 * defaults) to f, and the comparison of the methods. Returns the exit status. */
static int print_plans(FILE *f, const ps_problem *pb, const ps_schedule *s, int method, int fstage,
                       int bstage, int json)
{
    plan_out p = {
        f,      pb,     NULL, method, ps_schedule_num_stages(s) / ps_schedule_param_copies(s),
        fstage, bstage, json};
    ps_moe_model m;
    if (ps_problem_get_moe(pb, &m)) {
        fprintf(stderr, "pipesched: plan needs a MoE model: a config with \"model\" and "
                        "\"cluster\" blocks, or a \"moe\" block (docs/config.md)\n");
        return EXIT_USAGE;
    }
    if (fstage >= p.stages || bstage >= p.stages) {
        fprintf(stderr, "pipesched: --%s %d is out of range: the schedule has %d model stages\n",
                fstage >= p.stages ? "fstage" : "bstage", fstage >= p.stages ? fstage : bstage,
                p.stages);
        return EXIT_USAGE;
    }
    if (p.fstage < 0)
        p.fstage = cli_default_stage(pb, p.stages);
    if (p.bstage < 0)
        p.bstage = p.fstage;
    if (ps_plan_new(&p.pl, NULL)) {
        fprintf(stderr, "pipesched: out of memory\n");
        return EXIT_INTERNAL;
    }
    print_header(&p, s, &m);
    int ex = print_pair(&p);
    if (!ex)
        ex = print_warmup(&p);
    if (!ex)
        ex = print_comparison(&p);
    ps_plan_free(p.pl);
    return ex;
}

static int plan_main(const cli_opts *o)
{
    cli_job j;
    int ex = cli_job_open(&j, o, 0);
    FILE *f = stdout;
    if (!ex && o->output && !(f = fopen(o->output, "w"))) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", o->output, strerror(errno));
        ex = EXIT_USAGE;
    }
    if (!ex) {
        ex = print_plans(f, j.pb, j.s, o->method < 0 ? PS_PLANNER_ADAPTIVE : o->method,
                         (int)o->fstage, (int)o->bstage, o->json);
        if (f != stdout && fclose(f) && !ex) {
            fprintf(stderr, "pipesched: cannot write %s: %s\n", o->output, strerror(errno));
            ex = EXIT_INTERNAL;
        }
    }
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_plan = {
    .name = "plan",
    .summary = "overlap plan of a fused pair (MoE all-to-all)",
    .usage = "pipesched plan --config FILE [OPTIONS]",
    .about = "Plans one fused pair (the forward of one micro-batch with the full backward of\n"
             "another, as in the steady phase of adaptive or DualPipe) and one warm-up forward\n"
             "chunk on the compute and communication streams of a device, with the MoE model of\n"
             "the config (\"model\" + \"cluster\", or \"moe\"; docs/config.md). Prints both as\n"
             "two-stream tables and compares the pair under the adaptive planner, MindSpeed's and\n"
             "Megatron's fixed orders and serial execution. Times are in the model's unit\n"
             "(milliseconds when derived from dimensions).",
    .option_help = {{"json", "the plans as JSON"}},
    .run = plan_main,
};
