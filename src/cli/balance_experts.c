/*
 * `pipesched balance experts`: places the experts of each MoE layer on the expert-parallel
 * devices from their predicted loads (include/pipesched/balance.h, docs/balance.md).
 *
 * The steps: the inputs (a routing trace or a synthetic one, the model and hardware when
 * given, the current placement when given), the EMA prediction, then per layer the placement,
 * its cost and, with a current placement, the migration decision; last the output, as text
 * (comment lines, then one line of devices per layer, which --from reads back) or JSON.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <pipesched/balance.h>
#include <pipesched/model.h>

#include <errno.h>
#include <float.h>
#include <stdlib.h>
#include <string.h>

/* A routing trace of a long run is large, but not this large. */
#define TRACE_LIMIT (1u << 30)
#define ERR_LEN 1024

/* What one layer's planning found. */
typedef struct layer_out {
    double mean, max_before, max_planned, max_after; /* device loads (tokens) */
    ps_expert_layer_time t_before, t_after;          /* with a model and hardware */
    int32_t moved;                                   /* planned vs current (--from) */
    double migration_s;
    int migrate; /* the final placement is the planned one */
} layer_out;

typedef struct job {
    const cli_opts *o;
    ps_transformer model;
    ps_hardware hw;
    int has_model, has_time; /* --model; --model and --hardware */
    ps_expert_group g;
    int32_t cap, steps, layers, experts, horizon;
    double theta;
    ps_expert_trace *trace, *from;
    double *pred, *dev_load;                  /* layers x experts; devices */
    int32_t *current, *planned, *final_place; /* layers x experts; current NULL without --from */
    layer_out *rows;
} job;

static int usage_error(const char *msg)
{
    fprintf(stderr, "pipesched: balance experts: %s (see pipesched balance experts --help)\n", msg);
    return EXIT_USAGE;
}

static int check_options(const cli_opts *o)
{
    if (!o->load == !o->synthetic_experts)
        return usage_error(o->load ? "give --load or --synthetic-experts, not both"
                                   : "needs --load FILE or --synthetic-experts SPEC");
    if (o->devices < 0)
        return usage_error("needs --devices D");
    if (o->synthetic_experts && !o->model)
        return usage_error("--synthetic-experts needs --model (its MoE layers and experts)");
    if (o->hardware && !o->model)
        return usage_error("--hardware needs --model");
    if (o->from_placement && !(o->model && o->hardware))
        return usage_error("--from needs --model and --hardware: the migration is weighed in "
                           "seconds");
    if (o->horizon >= 0 && !o->from_placement)
        return usage_error("--horizon weighs a migration: it needs --from");
    if (o->precision >= 0 && !o->hardware)
        return usage_error("--precision sets the GEMMs' peak: it needs --hardware");
    return EXIT_OK;
}

/* The routing trace: --load's file or the synthetic one for the model's MoE layers. */
static int load_trace(job *j)
{
    const cli_opts *o = j->o;
    int rc = cli_expert_trace_read("balance experts", o->synthetic_experts, o->load, &j->model,
                                   &j->trace);
    if (rc)
        return rc;
    ps_expert_trace_shape(j->trace, &j->steps, &j->layers, &j->experts);
    if (j->has_model && j->model.experts != j->experts) {
        fprintf(stderr, "pipesched: %s: %d experts per layer, but model %s has %d\n", o->load,
                j->experts, j->model.name, j->model.experts);
        return EXIT_USAGE;
    }
    if (j->has_model && j->layers > j->model.layers - j->model.first_dense) {
        fprintf(stderr, "pipesched: %s: %d layers, but model %s has %d MoE layers\n", o->load,
                j->layers, j->model.name, j->model.layers - j->model.first_dense);
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* --from: one line of devices per layer, every one a device index, no device over capacity. */
static int load_current(job *j)
{
    const char *path = j->o->from_placement;
    char *text;
    size_t len;
    int32_t steps, layers, experts;
    if (cli_read_file(path, TRACE_LIMIT, &text, &len))
        return EXIT_USAGE;
    int rc = ps_expert_trace_new(&j->from, NULL);
    if (!rc) /* device indices, checked below by their own bounds */
        rc = ps_expert_trace_set_max(j->from, DBL_MAX);
    if (!rc)
        rc = ps_expert_trace_load(j->from, text, len);
    free(text);
    if (rc)
        return cli_report(path, rc, j->from ? ps_expert_trace_last_error(j->from) : NULL);
    ps_expert_trace_shape(j->from, &steps, &layers, &experts);
    if (steps != 1 || layers != j->layers || experts != j->experts) {
        fprintf(stderr,
                "pipesched: %s: expected %d lines (layers) of %d devices (one per expert), got "
                "%d of %d%s\n",
                path, j->layers, j->experts, layers, experts, steps != 1 ? " (a CSV trace?)" : "");
        return EXIT_USAGE;
    }
    for (int32_t l = 0; l < j->layers; l++) {
        int32_t *cur = j->current + (size_t)l * (size_t)j->experts;
        memset(j->dev_load, 0, (size_t)j->g.devices * sizeof *j->dev_load);
        for (int32_t e = 0; e < j->experts; e++) {
            double d = ps_expert_trace_tokens(j->from, 0, l, e);
            if (d >= j->g.devices ||
                d != (double)(int32_t)d) { /* the range first: the cast needs it */
                fprintf(stderr,
                        "pipesched: %s: layer %d (its line), expert %d: device %g is not an "
                        "integer in [0, %d]\n",
                        path, l, e, d, j->g.devices - 1);
                return EXIT_USAGE;
            }
            cur[e] = (int32_t)d;
            if (++j->dev_load[cur[e]] > j->cap) {
                fprintf(stderr,
                        "pipesched: %s: layer %d (its line): device %d holds more than the "
                        "capacity of %d experts\n",
                        path, l, cur[e], j->cap);
                return EXIT_USAGE;
            }
        }
    }
    return EXIT_OK;
}

static int load_inputs(job *j)
{
    const cli_opts *o = j->o;
    int ex;
    if (o->model && (ex = cli_load_model(o->model, &j->model)))
        return ex;
    if (o->hardware && (ex = cli_load_hardware(o->hardware, &j->hw)))
        return ex;
    j->has_model = o->model != NULL;
    j->has_time = j->has_model && o->hardware;
    if ((ex = load_trace(j)))
        return ex;
    j->g = (ps_expert_group){(int32_t)o->devices, o->nodes > 0 ? (int32_t)o->nodes : 1,
                             o->capacity > 0 ? (int32_t)o->capacity : 0};
    char err[ERR_LEN] = "";
    int rc = ps_expert_group_check(&j->g, j->experts, &j->cap, err, sizeof err);
    if (rc) {
        fprintf(stderr, "pipesched: balance experts: %s\n", err);
        return EXIT_USAGE;
    }
    size_t cells = (size_t)j->layers * (size_t)j->experts;
    j->pred = calloc(cells, sizeof *j->pred);
    j->dev_load = calloc((size_t)j->g.devices, sizeof *j->dev_load);
    j->planned = calloc(cells, sizeof *j->planned);
    j->final_place = calloc(cells, sizeof *j->final_place);
    j->current = calloc(cells, sizeof *j->current);
    j->rows = calloc((size_t)j->layers, sizeof *j->rows);
    if (!j->pred || !j->dev_load || !j->planned || !j->final_place || !j->current || !j->rows)
        return cli_report("balance experts", PS_ENOMEM, NULL);
    if (o->from_placement)
        return load_current(j);
    for (int32_t l = 0; l < j->layers; l++) /* without --from: Megatron's identity */
        ps_expert_identity(j->experts, &j->g, j->current + (size_t)l * (size_t)j->experts);
    return EXIT_OK;
}

/* One layer: place, compare with the current placement, decide. */
static int plan_layer(job *j, int32_t l)
{
    size_t at = (size_t)l * (size_t)j->experts;
    const double *w = j->pred + at;
    const int32_t *cur = j->current + at;
    int32_t *plan = j->planned + at, *fin = j->final_place + at;
    layer_out *r = &j->rows[l];
    char err[ERR_LEN] = "";
    int rc = ps_expert_place(w, j->experts, &j->g, j->o->from_placement ? cur : NULL, plan, NULL,
                             err, sizeof err);
    if (!rc && j->o->from_placement)
        rc = ps_expert_align(cur, plan, j->experts, &j->g, NULL);
    if (rc)
        return cli_report("balance experts", rc, err);
    double total = 0;
    for (int32_t e = 0; e < j->experts; e++)
        total += w[e];
    r->mean = total / j->g.devices;
    r->max_before = ps_expert_device_loads(w, j->experts, cur, j->g.devices, j->dev_load);
    r->max_planned = ps_expert_device_loads(w, j->experts, plan, j->g.devices, j->dev_load);
    r->migrate = 1;
    ps_expert_layer_time planned_t;
    if (j->has_time) {
        int32_t prec = j->o->precision >= 0 ? j->o->precision : PS_PREC_BF16;
        rc = ps_expert_layer_time_get(&j->model, &j->hw, prec, w, j->experts, cur, &j->g,
                                      &r->t_before, err, sizeof err);
        if (!rc)
            rc = ps_expert_layer_time_get(&j->model, &j->hw, prec, w, j->experts, plan, &j->g,
                                          &planned_t, err, sizeof err);
        if (rc)
            return cli_report("balance experts", rc, err);
        r->t_after = planned_t;
    }
    if (j->o->from_placement) {
        ps_expert_migration_s(cur, plan, j->experts, &j->g, ps_expert_migration_bytes(&j->model),
                              &j->hw, &r->moved, &r->migration_s);
        r->migrate = ps_expert_should_migrate(r->t_before.layer_s, planned_t.layer_s,
                                              r->migration_s, j->horizon);
        if (!r->migrate)
            r->t_after = r->t_before;
    }
    memcpy(fin, r->migrate ? plan : cur, (size_t)j->experts * sizeof *fin);
    r->max_after = r->migrate ? r->max_planned : r->max_before;
    return EXIT_OK;
}

/* ---- output --------------------------------------------------------------------------------- */

static double ratio(double max, double mean)
{
    return mean > 0 ? max / mean : 1.0;
}

/* The means over layers of the imbalance before and after, and the sums of the layer times. */
typedef struct totals {
    double imb_before, imb_after, time_before, time_after, migration_s;
    int32_t migrated;
} totals;

static totals sum_up(const job *j)
{
    totals t = {0, 0, 0, 0, 0, 0};
    for (int32_t l = 0; l < j->layers; l++) {
        const layer_out *r = &j->rows[l];
        t.imb_before += ratio(r->max_before, r->mean) / j->layers;
        t.imb_after += ratio(r->max_after, r->mean) / j->layers;
        t.time_before += r->t_before.layer_s;
        t.time_after += r->t_after.layer_s;
        if (r->migrate && r->moved) {
            t.migrated++;
            t.migration_s += r->migration_s;
        }
    }
    return t;
}

static void print_time_json(FILE *f, const char *key, const ps_expert_layer_time *t)
{
    fprintf(f,
            ", \"%s\": {\"device\": %d, \"gemm_s\": %s, \"a2a_s\": %s, \"layer_s\": %s, "
            "\"a2a_bytes\": %s, \"a2a_inter_bytes\": %s}",
            key, t->device, CLI_NUM(t->gemm_s), CLI_NUM(t->a2a_s), CLI_NUM(t->layer_s),
            CLI_NUM(t->a2a_bytes), CLI_NUM(t->a2a_inter_bytes));
}

static void print_json(FILE *f, const job *j)
{
    totals t = sum_up(j);
    fprintf(f,
            "{\"devices\": %d, \"nodes\": %d, \"capacity\": %d, \"experts\": %d, \"steps\": %d, "
            "\"theta\": %s, \"imbalance_before\": %s, \"imbalance_after\": %s",
            j->g.devices, j->g.nodes, j->cap, j->experts, j->steps, CLI_NUM(j->theta),
            CLI_NUM(t.imb_before), CLI_NUM(t.imb_after));
    if (j->has_time)
        fprintf(f, ", \"moe_time_before_s\": %s, \"moe_time_after_s\": %s", CLI_NUM(t.time_before),
                CLI_NUM(t.time_after));
    if (j->o->from_placement)
        fprintf(f, ", \"horizon\": %d, \"migrated_layers\": %d, \"migration_s\": %s", j->horizon,
                t.migrated, CLI_NUM(t.migration_s));
    fprintf(f, ", \"layers\": [");
    for (int32_t l = 0; l < j->layers; l++) {
        const layer_out *r = &j->rows[l];
        const int32_t *p = j->final_place + (size_t)l * (size_t)j->experts;
        fprintf(f, "%s\n  {\"layer\": %d, \"device_of_expert\": [", l ? "," : "", l);
        for (int32_t e = 0; e < j->experts; e++)
            fprintf(f, "%s%d", e ? ", " : "", p[e]);
        fprintf(f,
                "], \"max_load\": %s, \"mean_load\": %s, \"before_max_load\": %s, "
                "\"imbalance_before\": %s, \"imbalance_after\": %s",
                CLI_NUM(r->max_after), CLI_NUM(r->mean), CLI_NUM(r->max_before),
                CLI_NUM(ratio(r->max_before, r->mean)), CLI_NUM(ratio(r->max_after, r->mean)));
        if (j->o->from_placement)
            fprintf(f,
                    ", \"planned_max_load\": %s, \"moved\": %d, \"migration_s\": %s, \"migrate\": "
                    "%s",
                    CLI_NUM(r->max_planned), r->moved, CLI_NUM(r->migration_s),
                    r->migrate ? "true" : "false");
        if (j->has_time) {
            print_time_json(f, "time_before", &r->t_before);
            print_time_json(f, "time_after", &r->t_after);
        }
        fprintf(f, "}");
    }
    fprintf(f, "\n]}\n");
}

static void print_text(FILE *f, const job *j)
{
    totals t = sum_up(j);
    fprintf(
        f,
        "# balance experts: %d layers x %d experts on %d devices (%d nodes, %d experts per device)",
        j->layers, j->experts, j->g.devices, j->g.nodes, j->cap);
    fprintf(f, ", EMA theta %s over %d steps\n", CLI_NUM(j->theta), j->steps);
    fprintf(f, "# imbalance (max/mean device load, mean over layers): before %.3f, after %.3f\n",
            t.imb_before, t.imb_after);
    if (j->has_time)
        fprintf(f, "# MoE layers per step (slowest device each, summed): %.6g ms -> %.6g ms\n",
                t.time_before * 1e3, t.time_after * 1e3);
    if (j->o->from_placement)
        fprintf(f, "# migrated: %d of %d layers, %.6g ms of migration (horizon %d steps)\n",
                t.migrated, j->layers, t.migration_s * 1e3, j->horizon);
    fprintf(f, "# one line per layer: the device of each expert (--from reads it back)\n");
    for (int32_t l = 0; l < j->layers; l++) {
        const layer_out *r = &j->rows[l];
        fprintf(f, "# layer %d: max %.6g, mean %.6g, imbalance %.3f -> %.3f", l, r->max_after,
                r->mean, ratio(r->max_before, r->mean), ratio(r->max_after, r->mean));
        if (j->has_time)
            fprintf(f,
                    "; layer %.6g -> %.6g ms (GEMMs %.6g ms, all-to-all %.6g ms, %.6g MB of "
                    "which %.6g MB across nodes)",
                    r->t_before.layer_s * 1e3, r->t_after.layer_s * 1e3, r->t_after.gemm_s * 1e3,
                    r->t_after.a2a_s * 1e3, r->t_after.a2a_bytes / 1e6,
                    r->t_after.a2a_inter_bytes / 1e6);
        if (j->o->from_placement)
            fprintf(f, "; %d experts to move in %.6g ms: %s", r->moved, r->migration_s * 1e3,
                    r->migrate ? "migrate" : "keep");
        fputc('\n', f);
        const int32_t *p = j->final_place + (size_t)l * (size_t)j->experts;
        for (int32_t e = 0; e < j->experts; e++)
            fprintf(f, "%s%d", e ? " " : "", p[e]);
        fputc('\n', f);
    }
}

static int print_result(const job *j)
{
    const char *path = j->o->output;
    FILE *f = path ? fopen(path, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    if (j->o->json)
        print_json(f, j);
    else
        print_text(f, j);
    if (path ? fclose(f) : fflush(f)) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", path ? path : "stdout",
                strerror(errno));
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

static void job_free(job *j)
{
    ps_expert_trace_free(j->trace);
    ps_expert_trace_free(j->from);
    free(j->pred);
    free(j->dev_load);
    free(j->current);
    free(j->planned);
    free(j->final_place);
    free(j->rows);
}

static int balance_experts_main(const cli_opts *o)
{
    int ex = check_options(o);
    if (ex)
        return ex;
    job j = {.o = o, .theta = o->theta >= 0 ? o->theta : 0.9};
    j.horizon = o->horizon > 0 ? (int32_t)o->horizon : 50;
    if ((ex = load_inputs(&j)))
        goto out;
    int rc = ps_expert_trace_predict(j.trace, j.theta, j.pred);
    if (rc) {
        ex = cli_report("balance experts", rc, NULL);
        goto out;
    }
    for (int32_t l = 0; l < j.layers && !ex; l++)
        ex = plan_layer(&j, l);
    if (!ex)
        ex = print_result(&j);
out:
    job_free(&j);
    return ex;
}

const cli_command cli_cmd_balance_experts = {
    .name = "balance experts",
    .summary = "place the experts of each MoE layer on the devices",
    .usage = "pipesched balance experts --load FILE | --synthetic-experts SPEC --devices D\n"
             "       [--nodes N] [--capacity K] [--theta X] [--model M [--hardware H]]\n"
             "       [--from FILE [--horizon H]] [--json] [OPTIONS]",
    .about = "Predicts each expert's load from a routing trace (EMA), then places the experts of\n"
             "each MoE layer on the expert-parallel devices so that the most loaded device\n"
             "carries as little as it can: nodes first, then the devices inside each node,\n"
             "each greedy with local swaps. With --model and --hardware, the MoE layer time of\n"
             "the slowest device before and after; with --from, a layer moves only when its\n"
             "gain over --horizon steps exceeds the migration time (docs/balance.md).",
    .option_help = {{"json", "the placement per layer and the imbalance as JSON\n"
                             "(docs/balance.md)"}},
    .run = balance_experts_main,
};
