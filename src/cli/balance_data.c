/*
 * `pipesched balance data`: assigns the samples of a global batch to data-parallel ranks and
 * micro-batch slots so that the slowest replica's simulated pipeline is shortest
 * (docs/balance.md; the library part is ps_balance_data in include/pipesched/balance.h).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <pipesched/balance.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A samples file of a few million samples is tens of megabytes. */
#define SAMPLES_LIMIT ((size_t)1 << 30)
#define ERR_LEN 1024

/* --cost: a=..,c=..,d=.. over *m (keys not given keep their value); all three are required
 * unless `have` (the model's). Prints the reason and returns the exit status. */
static int parse_cost(const char *spec, ps_sample_model *m, int have)
{
    static const char names[] = "acd";
    double *val[3] = {&m->a, &m->c, &m->d};
    int set[3] = {0, 0, 0};
    const char *p = spec;
    while (spec && *p) {
        const char *end = p + strcspn(p, ",");
        const char *eq = memchr(p, '=', (size_t)(end - p));
        const char *k = eq == p + 1 ? strchr(names, *p) : NULL;
        if (!eq || !k || !*p) {
            fprintf(stderr, "pipesched: --cost: expected a=A, c=C or d=D at column %d of \"%s\"\n",
                    (int)(p - spec) + 1, spec);
            return EXIT_USAGE;
        }
        int i = (int)(k - names);
        char *num_end;
        errno = 0;
        double v = strtod(eq + 1, &num_end);
        if (num_end == eq + 1 || num_end != end || errno || !isfinite(v) || v < 0) {
            fprintf(stderr,
                    "pipesched: --cost: %c must be a finite number >= 0; got \"%.*s\" (column "
                    "%d)\n",
                    *p, (int)(end - eq - 1), eq + 1, (int)(eq - spec) + 2);
            return EXIT_USAGE;
        }
        if (set[i]) {
            fprintf(stderr, "pipesched: --cost: %c is given twice\n", *p);
            return EXIT_USAGE;
        }
        *val[i] = v;
        set[i] = 1;
        p = *end ? end + 1 : end;
    }
    if (!have && !(set[0] && set[1] && set[2])) {
        fprintf(stderr, "pipesched: balance data needs the sample model: --cost a=A,c=C,d=D "
                        "(all three), or --model and --hardware\n");
        return EXIT_USAGE;
    }
    return EXIT_OK;
}

/* The sample model: the model's (--model, --hardware), then --cost over it. */
static int sample_model(const cli_opts *o, ps_sample_model *m)
{
    memset(m, 0, sizeof *m);
    if (o->model) {
        if (!o->hardware) {
            fprintf(stderr, "pipesched: balance data: --model needs --hardware (the device's "
                            "peak and efficiencies give the seconds)\n");
            return EXIT_USAGE;
        }
        ps_transformer t;
        ps_hardware hw;
        char err[ERR_LEN] = "";
        int ex = cli_load_model(o->model, &t);
        if (!ex)
            ex = cli_load_hardware(o->hardware, &hw);
        if (ex)
            return ex;
        int rc = ps_sample_model_derive(&t, &hw, m, err, sizeof err);
        if (rc)
            return cli_report("balance data", rc, err);
    }
    return parse_cost(o->sample_cost, m, o->model != NULL);
}

/* The samples of the file, their times under m in *times. Caller frees both. */
static int read_samples(const char *path, const ps_sample_model *m, ps_sample **out, double **times,
                        size_t *n)
{
    char *text, err[ERR_LEN] = "";
    size_t len;
    if (cli_read_file(path, SAMPLES_LIMIT, &text, &len))
        return EXIT_USAGE;
    int rc = ps_samples_parse(text, len, NULL, 0, n, err, sizeof err);
    *out = NULL;
    *times = NULL;
    if (!rc) {
        *out = malloc(*n * sizeof **out);
        *times = malloc(*n * sizeof **times);
        rc = *out && *times ? ps_samples_parse(text, len, *out, *n, n, err, sizeof err) : PS_ENOMEM;
    }
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", path, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    for (size_t i = 0; i < *n; i++)
        (*times)[i] = ps_sample_time(m, &(*out)[i]);
    return EXIT_OK;
}

typedef struct result {
    const cli_opts *o;
    size_t n;
    int32_t dp, micro, mbs;
    const int32_t *rank, *slot;
    const ps_data_result *r;
    const char *family;
    int pp, vpp;
} result;

static double gain(const ps_data_result *r)
{
    return r->step_time > 0 ? r->baseline_step_time / r->step_time - 1 : 0;
}

static int emit_json(const void *arg, ps_write_fn write, void *ud)
{
    const result *x = arg;
    FILE *f = ud;
    (void)write;
    fprintf(f, "{\"assignment\":[");
    for (size_t i = 0; i < x->n; i++)
        fprintf(f, "%s[%d,%d]", i ? "," : "", (int)x->rank[i], (int)x->slot[i]);
    fprintf(f,
            "],\"step_time\":%s,\"baseline_step_time\":%s,\"lpt_step_time\":%s,\"gain\":%s,"
            "\"samples\":%zu,\"dp\":%d,\"microbatches\":%d,\"mbs\":%d,\"schedule\":\"%s\","
            "\"pp\":%d,\"vpp\":%d,\"evaluations\":%lld}\n",
            CLI_NUM(x->r->step_time), CLI_NUM(x->r->baseline_step_time),
            CLI_NUM(x->r->lpt_step_time), CLI_NUM(gain(x->r)), x->n, (int)x->dp, (int)x->micro,
            (int)x->mbs, x->family, x->pp, x->vpp, (long long)x->r->evals);
    return ferror(f) ? PS_EIO : 0;
}

static int emit_text(const void *arg, ps_write_fn write, void *ud)
{
    const result *x = arg;
    FILE *f = ud;
    (void)write;
    fprintf(f,
            "balance data: %zu samples over dp %d x %d micro-batches x mbs %d; each replica "
            "runs %s, pp %d, vpp %d\n",
            x->n, (int)x->dp, (int)x->micro, (int)x->mbs, x->family, x->pp, x->vpp);
    fprintf(f,
            "step time %s (input order round-robin %s, longest-processing-time start %s): "
            "gain %+.1f%%, %lld simulations\n",
            CLI_NUM(x->r->step_time), CLI_NUM(x->r->baseline_step_time),
            CLI_NUM(x->r->lpt_step_time), 100 * gain(x->r), (long long)x->r->evals);
    fprintf(f, "sample rank slot\n");
    for (size_t i = 0; i < x->n; i++)
        fprintf(f, "%6zu %4d %4d\n", i, (int)x->rank[i], (int)x->slot[i]);
    return ferror(f) ? PS_EIO : 0;
}

static int balance_data_main(const cli_opts *o)
{
    if (!o->samples || o->dp < 1 || o->m < 1) {
        fprintf(stderr, "pipesched: balance data needs --samples FILE, --dp D and -m M (see "
                        "pipesched balance data --help)\n");
        return EXIT_USAGE;
    }
    ps_sample_model sm;
    int ex = sample_model(o, &sm);
    if (ex)
        return ex;
    ps_sample *samples = NULL;
    double *times = NULL;
    int32_t *rank = NULL, *slot = NULL;
    ps_problem *pb = NULL;
    size_t n = 0;
    if ((ex = read_samples(o->samples, &sm, &samples, &times, &n)))
        goto out;
    long long per = o->dp * o->m;
    long long mbs = o->mbs > 0 ? o->mbs : (long long)n / per;
    if (mbs < 1 || (long long)n != per * mbs) {
        fprintf(stderr,
                "pipesched: balance data: %zu samples do not fill dp %lld x %lld micro-batches x "
                "mbs %lld exactly (the global batch is dp x microbatches x mbs samples)\n",
                n, o->dp, o->m, mbs < 1 ? 1 : mbs);
        ex = EXIT_USAGE;
        goto out;
    }
    if (cli_build_problem(o, &pb, NULL)) {
        ex = EXIT_USAGE;
        goto out;
    }
    rank = malloc(n * sizeof *rank);
    slot = malloc(n * sizeof *slot);
    if (!rank || !slot) {
        ex = cli_report("balance data", PS_ENOMEM, NULL);
        goto out;
    }
    ps_data_config cfg = {(int32_t)o->dp, (int32_t)o->m, (int32_t)mbs,
                          o->max_evals > 0 ? o->max_evals : 0};
    ps_data_result r;
    char err[ERR_LEN] = "";
    int rc = ps_balance_data(pb, times, n, &cfg, rank, slot, &r, err, sizeof err);
    if (rc) {
        ex = cli_report(NULL, rc, err);
        goto out;
    }
    result x = {o,
                n,
                cfg.dp,
                cfg.microbatches,
                cfg.mbs,
                rank,
                slot,
                &r,
                ps_problem_schedule(pb),
                (int)ps_problem_get_int(pb, PS_PARAM_PP),
                (int)ps_problem_get_int(pb, PS_PARAM_VPP)};
    if (x.vpp == 0)
        x.vpp = 1;
    ex = cli_write_out(o->output, o->json ? emit_json : emit_text, &x);
out:
    free(samples);
    free(times);
    free(rank);
    free(slot);
    ps_problem_free(pb);
    return ex;
}

const cli_command cli_cmd_balance_data = {
    .name = "balance data",
    .summary = "assign samples to data-parallel ranks and micro-batch slots",
    .usage = "pipesched balance data --samples FILE --dp D -m M [--mbs N] [--cost a=A,c=C,d=D]\n"
             "       [--model NAME|FILE --hardware NAME|FILE] [-s NAME -p N -v N --costs SPEC] "
             "[--json]",
    .about = "Assigns every sample of a global batch (FILE: one per line, its document lengths)\n"
             "to a data-parallel rank and a micro-batch slot so that the step time, the slowest\n"
             "replica's simulated pipeline, is shortest: each slot is a micro-batch whose weight\n"
             "is its samples' predicted time a·Σℓ² + c·Σℓ + d. Longest processing time first,\n"
             "then swaps judged by the simulation (docs/balance-data.md).",
    .option_help = {{"json", "the assignment, step times and gain as JSON (docs/balance.md)"}},
    .run = balance_data_main,
};
