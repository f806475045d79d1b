/*
 * `pipesched estimate`: a real model on real hardware with a parallel setup, in seconds and
 * bytes: step time, throughput, MFU, the bubble, the exposed communication by kind and the
 * memory of every pipeline rank (include/pipesched/model.h; formulas in docs/model.md).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <pipesched/model.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A HuggingFace config or a hardware file is a few kilobytes. */
#define SPEC_LIMIT (16u << 20)
#define ERR_LEN 1024
/* Room for the --config file's layout string (ps_train.layout borrows it). */
#define LAYOUT_LEN 4096

static const char *const comm_names[PS_COMM_KINDS] = {"tp", "cp", "ep", "pp", "dp"};

/* Whether the --config file's "train" names key (named_keys: ps_estimate_config_load_keys). */
static int file_names(uint64_t named_keys, const char *key)
{
    for (size_t i = 0; ps_estimate_config_train_key(i); i++)
        if (strcmp(ps_estimate_config_train_key(i), key) == 0)
            return (int)((named_keys >> i) & 1);
    return 0;
}

/* The settings estimate cannot do without: the model, the machine and the job's shape, each
 * from its option or from the --config file (whose "model" and "hardware" are required; the
 * job's keys are those its "train" object names, named_keys). */
static int check_required(const cli_opts *o, int has_file, uint64_t named_keys)
{
    static const struct {
        const char *name;
        size_t offset;
        int is_string;
    } required[] = {
        {"model", offsetof(cli_opts, model), 1}, {"hardware", offsetof(cli_opts, hardware), 1},
        {"gpus", offsetof(cli_opts, gpus), 0},   {"tp", offsetof(cli_opts, tp), 0},
        {"pp", offsetof(cli_opts, pp), 0},       {"gbs", offsetof(cli_opts, gbs), 0},
        {"mbs", offsetof(cli_opts, mbs), 0},     {"seq", offsetof(cli_opts, seq), 0},
    };
    int missing = 0;
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++) {
        const char *at = (const char *)o + required[i].offset;
        int given = required[i].is_string ? *(const char *const *)(const void *)at != NULL
                                          : *(const long long *)(const void *)at >= 0;
        if (has_file)
            given |= required[i].is_string || file_names(named_keys, required[i].name);
        if (!given)
            fprintf(stderr, "%s --%s", missing++ ? "," : "pipesched: estimate needs",
                    required[i].name);
    }
    if (missing)
        fprintf(stderr, " (see pipesched estimate --help)\n");
    return missing ? EXIT_USAGE : EXIT_OK;
}

/* The parallel setup: *t holds ps_train_init's defaults or the --config file's "train"; every
 * option given overrides it. */
static void fill_train(const cli_opts *o, ps_train *t)
{
    if (o->gpus >= 0)
        t->gpus = (int32_t)o->gpus;
    if (o->tp >= 0)
        t->tp = (int32_t)o->tp;
    if (o->pp >= 0)
        t->pp = (int32_t)o->pp;
    if (o->gbs >= 0)
        t->gbs = o->gbs;
    if (o->mbs >= 0)
        t->mbs = (int32_t)o->mbs;
    if (o->seq >= 0)
        t->seq = (int32_t)o->seq;
    if (o->gpus_per_node >= 0)
        t->gpus_per_node = (int32_t)o->gpus_per_node;
    if (o->vpp >= 0)
        t->vpp = (int32_t)o->vpp;
    if (o->cp >= 0)
        t->cp = (int32_t)o->cp;
    if (o->ep >= 0)
        t->ep = (int32_t)o->ep;
    if (o->etp >= 0)
        t->etp = (int32_t)o->etp;
    if (o->precision >= 0)
        t->precision = o->precision;
    if (o->recompute >= 0)
        t->recompute = o->recompute;
    if (o->recompute_layers >= 0)
        t->recompute_layers = (int32_t)o->recompute_layers;
    if (o->distributed_optimizer)
        t->distributed_optimizer = 1;
    if (o->moe_token_drop)
        t->moe_token_drop = 1;
    if (o->no_overlap)
        t->overlap_grad_reduce = t->overlap_param_gather = 0;
    if (o->schedule)
        snprintf(t->schedule, sizeof t->schedule, "%s", o->schedule);
    if (o->group > 0)
        t->group_size = (int32_t)o->group;
    if (o->extra_warmup > 0)
        t->extra_warmup = (int32_t)o->extra_warmup;
    if (o->split_backward)
        t->split_backward = 1;
    if (o->layout)
        t->layout = o->layout;
    if (o->first_layers >= 0)
        t->first_stage_layers = (int32_t)o->first_layers;
    if (o->last_layers >= 0)
        t->last_stage_layers = (int32_t)o->last_layers;
    if (o->a2a >= 0)
        t->a2a = o->a2a;
}

/* The step with the imbalance (docs/balance.md, "In the estimate"). */
static void print_edpb_text(FILE *f, const cli_edpb *x, const ps_edpb_result *b)
{
    double even = b->even_step_time_s;
    fprintf(f, "\nimbalance (docs/balance.md):\n");
    if (x->in.samples)
        fprintf(f,
                "  samples          %zu, the heaviest replica %.3f x the mean micro-batch "
                "(reordered %.3f)\n",
                x->in.n_samples, b->data_imbalance, b->data_imbalance_balanced);
    if (x->in.trace)
        fprintf(f, "  experts          max/mean device load %.3f (placed %.3f), EMA theta %g\n",
                b->expert_factor, b->expert_factor_balanced, x->in.theta);
    fprintf(f, "step time, even      %10.4f s\n", even);
    fprintf(f, "  no balancing       %10.4f s  %+6.1f%%\n", b->imbalanced_step_time_s,
            100 * (b->imbalanced_step_time_s / even - 1));
    if (x->in.trace)
        fprintf(f, "  experts placed     %10.4f s  %+6.1f%%\n", b->experts_step_time_s,
                100 * (b->experts_step_time_s / even - 1));
    if (x->in.samples)
        fprintf(f, "  %-18s %10.4f s  %+6.1f%%\n",
                x->in.trace ? "and data reordered" : "data reordered", b->balanced_step_time_s,
                100 * (b->balanced_step_time_s / even - 1));
    fprintf(f, "balancing gains %.1f%% (the step without balancing over the balanced one)\n",
            100 * (b->imbalanced_step_time_s / b->balanced_step_time_s - 1));
}

static void print_text(FILE *f, const ps_estimate *e, const ps_transformer *m,
                       const ps_hardware *hw, const ps_train *t, const ps_estimate_result *r,
                       const cli_edpb *x, const ps_edpb_result *imb)
{
    const ps_schedule *s = ps_estimate_schedule(e);
    fprintf(f, "%s on %d x %s: tp %d pp %d vpp %d cp %d ep %d dp %d; gbs %lld mbs %d seq %d\n",
            m->name, t->gpus, hw->name, t->tp, t->pp, ps_schedule_vpp(s), t->cp, t->ep, r->dp,
            (long long)t->gbs, t->mbs, t->seq);
    fprintf(f, "schedule %s, %d micro-batches per iteration\n\n", ps_schedule_family(s),
            r->microbatches);
    fprintf(f, "step time          %10.4f s\n", r->step_time_s);
    fprintf(f, "tokens/s per GPU   %10.1f\n", r->tokens_per_s_per_gpu);
    fprintf(f, "model TFLOP/s/GPU  %10.1f   MFU %.1f%%\n", r->model_tflops_per_gpu, 100 * r->mfu);
    fprintf(f, "bubble             %10.4f s\n", r->bubble_s);
    fprintf(f, "compute            %10.4f s (busiest rank)\n", r->compute_s);
    fprintf(f, "exposed comm      ");
    for (int k = 0; k < PS_COMM_KINDS; k++)
        fprintf(f, " %s %.4f s%s", comm_names[k], r->exposed_s[k],
                k + 1 < PS_COMM_KINDS ? "," : "");
    fprintf(f, "\noptimizer step     %10.4f s\n\n", r->optimizer_s);
    fprintf(f, "memory per pipeline rank, GiB:\n%6s %9s %9s %10s %12s %9s %9s %10s\n", "rank",
            "weights", "grads", "optimizer", "activations", "overhead", "total", "in-flight");
    for (int rank = 0; rank < ps_schedule_pp(s); rank++) {
        ps_rank_memory mem;
        ps_estimate_rank_memory(e, rank, &mem);
        fprintf(f, "%6d %9.2f %9.2f %10.2f %12.2f %9.2f %9.2f %10lld\n", rank, mem.weights,
                mem.grads, mem.optimizer, mem.activations, mem.overhead, mem.total,
                (long long)mem.peak_inflight);
    }
    fprintf(f, "peak %.2f GiB on rank %d of %.0f GiB: %s\n", r->peak_gib, r->peak_rank, hw->hbm_gib,
            r->fits ? "fits" : "DOES NOT FIT");
    if (imb)
        print_edpb_text(f, x, imb);
}

/* "imbalance": {...}, the step with the imbalance (docs/balance.md, "In the estimate"). */
static void print_edpb_json(FILE *f, const cli_edpb *x, const ps_edpb_result *b)
{
    fprintf(f,
            ",\"imbalance\":{\"samples\":%zu,\"expert_trace\":%s,\"theta\":%s,"
            "\"even_step_time_s\":%s,\"unbalanced_step_time_s\":%s,"
            "\"experts_placed_step_time_s\":%s,\"balanced_step_time_s\":%s,"
            "\"expert_max_over_mean\":%s,\"expert_max_over_mean_placed\":%s,"
            "\"replica_weight_max\":%s,\"replica_weight_max_reordered\":%s,"
            "\"slowest_replica\":%d,\"slowest_replica_reordered\":%d,"
            "\"reorder_simulations\":%lld}",
            x->in.n_samples, x->in.trace ? "true" : "false",
            x->in.trace ? CLI_NUM(x->in.theta) : "null", CLI_NUM(b->even_step_time_s),
            CLI_NUM(b->imbalanced_step_time_s), CLI_NUM(b->experts_step_time_s),
            CLI_NUM(b->balanced_step_time_s), CLI_NUM(b->expert_factor),
            CLI_NUM(b->expert_factor_balanced), CLI_NUM(b->data_imbalance),
            CLI_NUM(b->data_imbalance_balanced), (int)b->slowest_replica,
            (int)b->slowest_replica_balanced, (long long)b->evals);
}

static void print_json(FILE *f, const ps_estimate *e, const ps_estimate_result *r,
                       const cli_edpb *x, const ps_edpb_result *imb)
{
    const ps_schedule *s = ps_estimate_schedule(e);
    fprintf(f,
            "{\"schedule\":\"%s\",\"dp\":%d,\"microbatches\":%d,\"step_time_s\":%s,"
            "\"tokens_per_s_per_gpu\":%s,\"model_tflops_per_gpu\":%s,\"mfu\":%s,"
            "\"bubble_s\":%s,\"compute_s\":%s,\"optimizer_s\":%s,\"exposed_s\":{",
            ps_schedule_family(s), r->dp, r->microbatches, CLI_NUM(r->step_time_s),
            CLI_NUM(r->tokens_per_s_per_gpu), CLI_NUM(r->model_tflops_per_gpu), CLI_NUM(r->mfu),
            CLI_NUM(r->bubble_s), CLI_NUM(r->compute_s), CLI_NUM(r->optimizer_s));
    for (int k = 0; k < PS_COMM_KINDS; k++)
        fprintf(f, "%s\"%s\":%s", k ? "," : "", comm_names[k], CLI_NUM(r->exposed_s[k]));
    fprintf(f, "},\"memory\":{\"peak_gib\":%s,\"peak_rank\":%d,\"ranks\":[", CLI_NUM(r->peak_gib),
            r->peak_rank);
    for (int rank = 0; rank < ps_schedule_pp(s); rank++) {
        ps_rank_memory m;
        ps_estimate_rank_memory(e, rank, &m);
        fprintf(f,
                "%s{\"weights_gib\":%s,\"grads_gib\":%s,\"optimizer_gib\":%s,"
                "\"activations_gib\":%s,\"overhead_gib\":%s,\"total_gib\":%s,"
                "\"peak_inflight\":%lld}",
                rank ? "," : "", CLI_NUM(m.weights), CLI_NUM(m.grads), CLI_NUM(m.optimizer),
                CLI_NUM(m.activations), CLI_NUM(m.overhead), CLI_NUM(m.total),
                (long long)m.peak_inflight);
    }
    fprintf(f, "]},\"fits\":%s", r->fits ? "true" : "false");
    if (imb)
        print_edpb_json(f, x, imb);
    fprintf(f, "}\n");
}

/* Prints the result to -o FILE or stdout; returns the exit status. */
static int print_result(const cli_opts *o, const ps_estimate *e, const ps_transformer *m,
                        const ps_hardware *hw, const ps_train *t, const cli_edpb *x,
                        const ps_edpb_result *imb)
{
    ps_estimate_result r;
    ps_estimate_result_get(e, &r);
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", o->output, strerror(errno));
        return EXIT_USAGE;
    }
    if (o->json)
        print_json(f, e, &r, x, imb);
    else
        print_text(f, e, m, hw, t, &r, x, imb);
    if (o->output && fclose(f)) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", o->output, strerror(errno));
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

/* --trace FILE: the step in seconds, the data-parallel and optimizer tail included. */
static int emit_trace(const void *arg, ps_write_fn write, void *ud)
{
    return ps_estimate_write_trace(arg, write, ud);
}

/* --svg needs `draw`'s timeline, which only a build with Graphviz has: refused before the
 * estimate runs. */
static int check_svg(const cli_opts *o)
{
    const cli_command *draw = cli_find("draw");
    if (!o->svg || (draw && draw->timeline_svg))
        return EXIT_OK;
    fprintf(stderr, "pipesched: estimate --svg needs the SVG drawings, and this pipesched was "
                    "built without Graphviz (meson -Dviz); --trace FILE writes the timeline as "
                    "a Chrome trace\n");
    return EXIT_USAGE;
}

/* The files besides the result: --trace, then --svg. */
static int write_files(const cli_opts *o, const ps_estimate *e)
{
    int ex = EXIT_OK;
    if (o->trace)
        ex = cli_write_out(o->trace, emit_trace, e);
    if (!ex && o->svg)
        ex = cli_find("draw")->timeline_svg(ps_estimate_schedule(e), ps_estimate_sim(e), "s",
                                            "estimate", o->svg);
    return ex;
}

/*
 * --config FILE: the model, the hardware and the job from the file (docs/config.md, "Estimate
 * configuration"), the layout string into layout[LAYOUT_LEN]; then the required settings are
 * checked on the file and the options together. Without --config, ps_train_init's defaults and
 * the required options alone.
 */
static int load_config(const cli_opts *o, ps_transformer *m, ps_hardware *hw, ps_train *t,
                       char *layout)
{
    ps_train_init(t);
    if (!o->config)
        return check_required(o, 0, 0);
    char *text, err[ERR_LEN] = "";
    size_t len;
    if (cli_read_file(o->config, SPEC_LIMIT, &text, &len))
        return EXIT_USAGE;
    /* The loader also says which "train" keys the file names: it fills the rest with
     * defaults, and a default is not a setting the user chose. */
    uint64_t named_keys = 0;
    int rc = ps_estimate_config_load_keys(text, len, m, hw, t, &named_keys, layout, LAYOUT_LEN, err,
                                          sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", o->config, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    return check_required(o, 1, named_keys);
}

static int estimate_main(const cli_opts *o)
{
    ps_transformer model;
    ps_hardware hw;
    ps_train train;
    char layout[LAYOUT_LEN];
    int ex = check_svg(o);
    if (!ex)
        ex = cli_edpb_check(o, "estimate");
    if (!ex)
        ex = load_config(o, &model, &hw, &train, layout);
    if (!ex && o->model)
        ex = cli_load_model(o->model, &model);
    if (!ex && o->hardware)
        ex = cli_load_hardware(o->hardware, &hw);
    if (ex)
        return ex;
    if (o->extra_warmup == 0) {
        /* ps_train.extra_warmup 0 means the family's default (1). */
        fprintf(stderr, "pipesched: estimate: --extra-warmup must be >= 1 (the adaptive "
                        "family's default is 1); got 0\n");
        return EXIT_USAGE;
    }
    fill_train(o, &train);
    ps_estimate *e;
    int rc = ps_estimate_new(&e, NULL);
    if (rc)
        return cli_report("estimate", rc, NULL);
    cli_edpb x;
    ps_edpb_result imb;
    const ps_edpb_result *with = NULL;
    ex = cli_edpb_load(o, &model, &train, &x);
    if (!ex && cli_edpb_wanted(o)) {
        char err[ERR_LEN] = "";
        rc = ps_edpb_estimate(e, &model, &hw, &train, &x.in, &imb, NULL, NULL, err, sizeof err);
        ex = rc ? cli_report("estimate", rc, err) : EXIT_OK;
        with = &imb;
    } else if (!ex) {
        rc = ps_estimate_run(e, &model, &hw, &train);
        ex = rc ? cli_report("estimate", rc, ps_estimate_last_error(e)) : EXIT_OK;
    }
    if (!ex)
        ex = write_files(o, e);
    if (!ex)
        ex = print_result(o, e, &model, &hw, &train, &x, with);
    cli_edpb_free(&x);
    ps_estimate_free(e);
    return ex;
}

const cli_command cli_cmd_estimate = {
    .name = "estimate",
    .summary = "step time and memory of a real model on real hardware",
    .usage = "pipesched estimate --model NAME|FILE --hardware NAME|FILE --gpus N --tp T --pp P\n"
             "                          --gbs B --mbs b --seq S [OPTIONS]\n"
             "       pipesched estimate --config FILE [OPTIONS]",
    .about = "Derives the forward, input-gradient and weight-gradient durations of every\n"
             "virtual stage in seconds and the bytes every pipeline rank holds, from the model\n"
             "(a built-in name or a HuggingFace config.json), the hardware (a preset or a\n"
             "file) and the parallel setup; simulates the iteration with the schedule; prints\n"
             "the step time, tokens/s per GPU, MFU, the bubble, the exposed communication by\n"
             "kind and the memory of every pipeline rank (docs/model.md). --trace and --svg\n"
             "show the simulated step on a time axis in seconds. --samples and --expert-load\n"
             "(or their synthetic forms) add the step time with uneven micro-batches and\n"
             "expert loads, without balancing and with the expert placement and the data\n"
             "reordering (docs/balance.md); the other figures stay those of the even step.",
    .option_help = {{"json", "the estimate as JSON"},
                    {"samples", "the global batch, one sample per line (its document\n"
                                "lengths, 512,2048,128): the step time with these uneven\n"
                                "micro-batches, in input order and reordered"},
                    {"synthetic-experts", "instead of --expert-load: a seeded trace for the\n"
                                          "model's MoE layers,\n"
                                          "zipf:S[,drift:X][,seed:N][,steps:T][,tokens:K]"},
                    {"trace", "write the step as a Chrome/Perfetto trace in seconds, the\n"
                              "data-parallel and optimizer tail of every rank included"}},
    .run = estimate_main,
};
