/*
 * The imbalance inputs of estimate and tune (docs/balance.md, "In the estimate"): --samples
 * FILE or --synthetic-samples SPEC, --expert-load FILE or --synthetic-experts SPEC, --theta.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

/* A samples file of a few million samples and a trace of a few million rows. */
#define INPUT_LIMIT (1u << 30)
#define ERR_LEN 1024

int cli_edpb_wanted(const cli_opts *o)
{
    return o->samples || o->synthetic_samples || o->expert_load || o->synthetic_experts;
}

/* Options that go together: one source of samples, one of loads, --theta with a trace. */
int cli_edpb_check(const cli_opts *o, const char *cmd)
{
    const char *msg = NULL;
    if (o->samples && o->synthetic_samples)
        msg = "give --samples or --synthetic-samples, not both";
    else if (o->expert_load && o->synthetic_experts)
        msg = "give --expert-load or --synthetic-experts, not both";
    else if (o->max_evals > 0 && !o->samples && !o->synthetic_samples)
        msg = "--max-evals bounds the data reordering: it needs --samples or --synthetic-samples";
    else if (o->theta >= 0 && !o->expert_load && !o->synthetic_experts)
        msg = "--theta is the EMA of an expert load: it needs --expert-load or "
              "--synthetic-experts";
    if (!msg)
        return EXIT_OK;
    fprintf(stderr, "pipesched: %s: %s (see pipesched %s --help)\n", cmd, msg, cmd);
    return EXIT_USAGE;
}

static int read_samples(const char *path, cli_edpb *x)
{
    char *text, err[ERR_LEN] = "";
    size_t len, n = 0;
    if (cli_read_file(path, INPUT_LIMIT, &text, &len))
        return EXIT_USAGE;
    int rc = ps_samples_parse(text, len, NULL, 0, &n, err, sizeof err);
    if (!rc) {
        x->samples = malloc(n * sizeof *x->samples);
        rc = x->samples ? ps_samples_parse(text, len, x->samples, n, &n, err, sizeof err)
                        : PS_ENOMEM;
    }
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", path, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    x->in.samples = x->samples;
    x->in.n_samples = n;
    return EXIT_OK;
}

/* --synthetic-samples: the job's gbs samples of seq tokens (the global batch is dp x m x mbs
 * samples whatever the parallel setup). */
static int synthetic_samples(const char *spec, const ps_train *t, cli_edpb *x)
{
    char err[ERR_LEN] = "";
    size_t n = (size_t)t->gbs;
    if (t->gbs < 1 || (double)t->gbs * t->seq > PS_MAX_SYNTHETIC_TOKENS) {
        fprintf(stderr,
                "pipesched: --synthetic-samples: gbs %lld x seq %d tokens is beyond the limit "
                "of %.0f\n",
                (long long)t->gbs, (int)t->seq, PS_MAX_SYNTHETIC_TOKENS);
        return EXIT_USAGE;
    }
    x->samples = malloc(n * sizeof *x->samples);
    if (!x->samples)
        return cli_report("--synthetic-samples", PS_ENOMEM, NULL);
    int rc = ps_samples_synthetic(spec, t->seq, x->samples, n, err, sizeof err);
    if (rc)
        return cli_report("--synthetic-samples", rc, err);
    x->in.samples = x->samples;
    x->in.n_samples = n;
    return EXIT_OK;
}

int cli_expert_trace_read(const char *what, const char *synthetic, const char *file,
                          const ps_transformer *m, ps_expert_trace **out)
{
    int rc = ps_expert_trace_new(out, NULL);
    if (rc)
        return cli_report(what, rc, NULL);
    ps_expert_trace *t = *out;
    if (synthetic) {
        int32_t moe_layers = m->layers - m->first_dense;
        if (m->experts < 1 || moe_layers < 1) {
            fprintf(stderr, "pipesched: --synthetic-experts: model %s has no MoE layers\n",
                    m->name);
            return EXIT_USAGE;
        }
        rc = ps_expert_trace_synthetic(t, synthetic, moe_layers, m->experts);
        if (rc)
            return cli_report("--synthetic-experts", rc, ps_expert_trace_last_error(t));
        return EXIT_OK;
    }
    char *text;
    size_t len;
    if (cli_read_file(file, INPUT_LIMIT, &text, &len))
        return EXIT_USAGE;
    rc = ps_expert_trace_load(t, text, len);
    free(text);
    return rc ? cli_report(file, rc, ps_expert_trace_last_error(t)) : EXIT_OK;
}

static int read_trace(const cli_opts *o, const ps_transformer *m, cli_edpb *x)
{
    int ex =
        cli_expert_trace_read("expert load", o->synthetic_experts, o->expert_load, m, &x->trace);
    if (!ex)
        x->in.trace = x->trace;
    return ex;
}

int cli_edpb_load(const cli_opts *o, const ps_transformer *m, const ps_train *t, cli_edpb *x)
{
    memset(x, 0, sizeof *x);
    x->in.theta = o->theta >= 0 ? o->theta : 0.9;
    x->in.max_evals = o->max_evals > 0 ? o->max_evals : 0;
    int ex = EXIT_OK;
    if (o->samples)
        ex = read_samples(o->samples, x);
    else if (o->synthetic_samples)
        ex = synthetic_samples(o->synthetic_samples, t, x);
    if (!ex && (o->expert_load || o->synthetic_experts))
        ex = read_trace(o, m, x);
    return ex;
}

void cli_edpb_free(cli_edpb *x)
{
    free(x->samples);
    ps_expert_trace_free(x->trace);
    memset(x, 0, sizeof *x);
}
