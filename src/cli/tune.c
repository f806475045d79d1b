/*
 * `pipesched tune`: which parallel configuration should I run? Searches every combination of
 * the knobs that the constraints leave, simulates every candidate that passes the cheap checks
 * with the estimate, and prints the fastest that fit, the Pareto front of step time against
 * peak memory and why the others were rejected (include/pipesched/tune.h, docs/tune.md).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"
#include "tune_mpi.h"

#include <pipesched/tune.h>

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SPEC_LIMIT (16u << 20)
#define ERR_LEN 1024

/* The data reordering's simulations per candidate, without --max-evals (bench/README.md). */
#define TUNE_REORDER_EVALS 200
/* --model and --hardware: a built-in name or a file, as estimate reads them (estimate.c). */
static int load_spec(const char *what, const char *arg, ps_transformer *m, ps_hardware *hw)
{
    if (m ? ps_transformer_builtin(arg, m) == 0 : ps_hardware_builtin(arg, hw) == 0)
        return EXIT_OK;
    if (strcmp(arg, "-") && access(arg, F_OK)) {
        const char *(*name)(size_t) = m ? ps_transformer_builtin_name : ps_hardware_builtin_name;
        fprintf(stderr, "pipesched: --%s \"%s\" is neither a built-in (", what, arg);
        for (size_t i = 0; name(i); i++)
            fprintf(stderr, "%s%s", i ? ", " : "", name(i));
        fprintf(stderr, ") nor a file\n");
        return EXIT_USAGE;
    }
    char *text, err[ERR_LEN] = "";
    size_t len;
    if (cli_read_file(arg, SPEC_LIMIT, &text, &len))
        return EXIT_USAGE;
    int rc = m ? ps_transformer_from_hf(text, len, m, err, sizeof err)
               : ps_hardware_from_json(text, len, hw, err, sizeof err);
    free(text);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", arg, *err ? err : ps_strerror(rc));
        return cli_exit_code(rc);
    }
    return EXIT_OK;
}

static int check_required(const cli_opts *o)
{
    const char *missing[6];
    int n = 0;
    if (!o->model)
        missing[n++] = "--model";
    if (!o->hardware)
        missing[n++] = "--hardware";
    if (!o->tune_gpus)
        missing[n++] = "--gpus";
    if (o->gbs < 0)
        missing[n++] = "--gbs";
    if (o->seq < 0)
        missing[n++] = "--seq";
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "pipesched: tune needs ", missing[i]);
    if (n)
        fprintf(stderr, " (see pipesched tune --help)\n");
    return n ? EXIT_USAGE : EXIT_OK;
}

/* The knobs whose values are words, not sizes. */
static int word_knob(int k)
{
    return k == PS_KNOB_SCHEDULE || k == PS_KNOB_RECOMPUTE || k == PS_KNOB_PRECISION ||
           k == PS_KNOB_A2A || k == PS_KNOB_DISTOPT || k == PS_KNOB_LAYOUT || k == PS_KNOB_SPLIT;
}

/* ---- --gpus: one count, a list or a range ------------------------------------------------- */

#define MAX_COUNTS 64
#define MAX_GPUS (1 << 24)

typedef struct gpu_list {
    int32_t n[MAX_COUNTS];
    size_t count;
} gpu_list;

static int bad_gpus(const char *spec, const char *why)
{
    fprintf(stderr,
            "pipesched: --gpus \"%s\": %s (valid: a count N, a list A,B,C or a range A-B of the "
            "powers of two from A to B; counts from 1 to %d, at most %d of them)\n",
            spec, why, MAX_GPUS, MAX_COUNTS);
    return EXIT_USAGE;
}

/* One count of --gpus: *end at the first character after it. 0 or -1. */
static int gpus_number(const char *s, const char **end, long long *out)
{
    if (*s < '0' || *s > '9')
        return -1;
    long long v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        v = 10 * v + (*s - '0');
        if (v > MAX_GPUS)
            return -1;
    }
    *end = s;
    *out = v;
    return v >= 1 ? 0 : -1;
}

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* "N", "A,B,C" (sorted ascending, each once) or "A-B" (the powers of two in [A, B]). */
static int parse_gpus(const char *spec, gpu_list *g)
{
    const char *p = spec, *end;
    long long a, b;
    g->count = 0;
    if (strchr(spec, '-')) {
        if (gpus_number(p, &end, &a) || *end != '-' || gpus_number(end + 1, &end, &b) || *end)
            return bad_gpus(spec, "not a range A-B of two counts");
        if (a > b)
            return bad_gpus(spec, "the range's start is above its end");
        for (long long v = 1; v <= b; v *= 2)
            if (v >= a)
                g->n[g->count++] = (int32_t)v;
        if (!g->count)
            return bad_gpus(spec, "no power of two is in the range");
        return EXIT_OK;
    }
    for (;;) {
        if (gpus_number(p, &end, &a) || (*end && *end != ','))
            return bad_gpus(spec, "not a count or a comma-separated list of counts");
        if (g->count == MAX_COUNTS)
            return bad_gpus(spec, "too many counts");
        g->n[g->count++] = (int32_t)a;
        if (!*end)
            break;
        p = end + 1;
    }
    qsort(g->n, g->count, sizeof g->n[0], cmp_i32);
    for (size_t i = 1; i < g->count; i++)
        if (g->n[i] == g->n[i - 1]) {
            char why[64];
            snprintf(why, sizeof why, "%d is listed twice", g->n[i]);
            return bad_gpus(spec, why);
        }
    return EXIT_OK;
}

/* ---- --config FILE: the options' values from a JSON object ----------------------------------- */

extern const cli_command cli_cmd_tune;

#define CONFIG_KEYS 64
#define CONFIG_VALUE 4096

/* The values the file gives, as the command line's words (cli_opts points into them). */
typedef struct config_words {
    cJSON *root;
    char text[CONFIG_KEYS][CONFIG_VALUE];
} config_words;

int cli_tune_config_key(size_t i)
{
    return cli_row_in_force(&cli_cmd_tune, i) && strcmp(cli_options[i].name, "config") &&
           strcmp(cli_options[i].name, "help");
}

static void config_keys(void)
{
    const char *sep = "";
    for (size_t i = 0; i < cli_option_count; i++)
        if (cli_tune_config_key(i)) {
            fprintf(stderr, "%s%s", sep, cli_options[i].name);
            sep = ", ";
        }
}

/* One value as the word its option takes: a string, a number, true (a flag), or a list of
 * strings and numbers joined by commas. 0, or -1 for a value of another type. */
static int config_word(const cJSON *v, char *out)
{
    if (cJSON_IsString(v))
        return snprintf(out, CONFIG_VALUE, "%s", v->valuestring) < CONFIG_VALUE ? 0 : -1;
    if (cJSON_IsNumber(v)) {
        double d = v->valuedouble;
        if (d == (double)(long long)d)
            snprintf(out, CONFIG_VALUE, "%lld", (long long)d);
        else
            snprintf(out, CONFIG_VALUE, "%.17g", d);
        return 0;
    }
    if (cJSON_IsTrue(v)) {
        snprintf(out, CONFIG_VALUE, "1");
        return 0;
    }
    if (cJSON_IsArray(v) && cJSON_GetArraySize(v) > 0) {
        size_t n = 0;
        const cJSON *e;
        cJSON_ArrayForEach(e, v)
        {
            char w[64];
            if (cJSON_IsString(e))
                snprintf(w, sizeof w, "%s", e->valuestring);
            else if (cJSON_IsNumber(e))
                snprintf(w, sizeof w, "%.17g", e->valuedouble);
            else
                return -1;
            int k = snprintf(out + n, CONFIG_VALUE - n, "%s%s", n ? "," : "", w);
            if (k < 0 || (size_t)k >= CONFIG_VALUE - n)
                return -1;
            n += (size_t)k;
        }
        return 0;
    }
    return -1;
}

/* Fills c's options that the command line left unset from the file's object. */
static int load_config(cli_opts *c, config_words *cw)
{
    char *text;
    size_t len;
    if (cli_read_file(c->config, SPEC_LIMIT, &text, &len))
        return EXIT_USAGE;
    cw->root = cJSON_ParseWithLength(text, len);
    free(text);
    if (!cJSON_IsObject(cw->root)) {
        fprintf(stderr, "pipesched: %s: not a JSON object (tune's keys: ", c->config);
        config_keys();
        fprintf(stderr, ")\n");
        return EXIT_USAGE;
    }
    int k = 0;
    const cJSON *v;
    cJSON_ArrayForEach(v, cw->root)
    {
        if (k == CONFIG_KEYS) {
            fprintf(stderr, "pipesched: %s: more than %d keys\n", c->config, CONFIG_KEYS);
            return EXIT_USAGE;
        }
        const cli_option *opt = NULL;
        for (size_t i = 0; i < cli_option_count && !opt; i++)
            if (cli_tune_config_key(i) && !strcmp(cli_options[i].name, v->string))
                opt = &cli_options[i];
        if (!opt) {
            fprintf(stderr, "pipesched: %s: unknown key \"%s\" (tune's keys: ", c->config,
                    v->string);
            config_keys();
            fprintf(stderr, ")\n");
            return EXIT_USAGE;
        }
        if (cJSON_IsFalse(v) && opt->type == CLI_FLAG)
            continue;
        if ((cJSON_IsBool(v) != (opt->type == CLI_FLAG)) || config_word(v, cw->text[k])) {
            fprintf(stderr, "pipesched: %s: key \"%s\" takes %s, as its option --%s %s does\n",
                    c->config, v->string,
                    opt->type == CLI_FLAG ? "true or false"
                                          : "a string, a number or a list of them",
                    opt->name, opt->metavar ? opt->metavar : "");
            return EXIT_USAGE;
        }
        if (cli_option_fill(&cli_cmd_tune, v->string, cw->text[k], c)) {
            fprintf(stderr, "pipesched: (the value of key \"%s\" in %s)\n", v->string, c->config);
            return EXIT_USAGE;
        }
        k++;
    }
    return EXIT_OK;
}

/* ---- constraints ----------------------------------------------------------------------------- */

enum { FIX, ALLOW, MAX, KINDS };
static const char *const kind_flag[KINDS] = {"--fix", "--allow", "--max"};

/* Which option named each knob (-1: none), to refuse a knob named twice. */
typedef struct named {
    int by[PS_KNOBS];
} named;

static void list_knobs(void)
{
    for (int k = 0; k < PS_KNOBS; k++)
        fprintf(stderr, "%s%s", k ? ", " : "", ps_tune_knob_name(k));
}

/* Applies one knob's values (v[n]) of option `kind` to t. */
static int apply(ps_tune *t, int kind, int knob, const int32_t *v, size_t n, named *nm)
{
    const char *key = ps_tune_knob_name(knob);
    if (nm->by[knob] >= 0) {
        if (nm->by[knob] == kind)
            fprintf(stderr, "pipesched: %s names %s twice\n", kind_flag[kind], key);
        else
            fprintf(stderr, "pipesched: %s is in both %s and %s: contradictory constraints\n", key,
                    kind_flag[nm->by[knob]], kind_flag[kind]);
        return EXIT_USAGE;
    }
    nm->by[knob] = kind;
    if (kind == FIX && n != 1) {
        fprintf(stderr, "pipesched: --fix %s takes one value; got %zu (use --allow for a list)\n",
                key, n);
        return EXIT_USAGE;
    }
    if (kind == MAX) {
        if (n != 1 || word_knob(knob)) {
            fprintf(stderr,
                    "pipesched: --max takes one number of a numeric knob (tp, cp, pp, ep, "
                    "etp, vpp, mbs, group, warmup); got %s\n",
                    key);
            return EXIT_USAGE;
        }
        return ps_tune_max(t, knob, v[0]) ? EXIT_USAGE : EXIT_OK;
    }
    int rc = ps_tune_allow(t, knob, v, n);
    if (rc)
        return cli_report(kind_flag[kind], rc, ps_tune_last_error(t));
    return EXIT_OK;
}

/* Parses "k=v,v,k=v": a word with '=' starts a knob, the words after it add values. */
static int parse_constraints(ps_tune *t, int kind, const char *spec, named *nm)
{
    if (!spec)
        return EXIT_OK;
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", spec) >= (int)sizeof buf) {
        fprintf(stderr, "pipesched: %s is too long\n", kind_flag[kind]);
        return EXIT_USAGE;
    }
    int32_t v[64];
    size_t n = 0;
    int knob = -1, ex;
    char *save = NULL;
    for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(w, '=');
        if (eq) {
            if (knob >= 0 && (ex = apply(t, kind, knob, v, n, nm)))
                return ex;
            *eq = 0;
            knob = ps_tune_knob_lookup(w);
            if (knob < 0) {
                fprintf(stderr, "pipesched: %s: unknown knob \"%s\" (", kind_flag[kind], w);
                list_knobs();
                fprintf(stderr, ")\n");
                return EXIT_USAGE;
            }
            n = 0;
            w = eq + 1;
        } else if (knob < 0) {
            fprintf(stderr, "pipesched: %s needs KNOB=VALUE; got \"%s\"\n", kind_flag[kind], w);
            return EXIT_USAGE;
        }
        if (n == sizeof v / sizeof v[0] || ps_tune_value_parse(knob, w, &v[n])) {
            fprintf(stderr, "pipesched: %s: bad value \"%s\" of %s%s\n", kind_flag[kind], w,
                    ps_tune_knob_name(knob),
                    knob == PS_KNOB_SCHEDULE ? " (pipesched list shows the families)" : "");
            return EXIT_USAGE;
        }
        if (v[n] < 1 && !word_knob(knob)) {
            fprintf(stderr, "pipesched: %s: %s must be >= 1; got %s\n", kind_flag[kind],
                    ps_tune_knob_name(knob), w);
            return EXIT_USAGE;
        }
        n++;
    }
    if (knob < 0 || n == 0) {
        fprintf(stderr, "pipesched: %s needs KNOB=VALUE; got \"%s\"\n", kind_flag[kind], spec);
        return EXIT_USAGE;
    }
    return apply(t, kind, knob, v, n, nm);
}

/* ---- output ---------------------------------------------------------------------------------- */

static const char *const comm_names[PS_COMM_KINDS] = {"tp", "cp", "ep", "pp", "dp"};

static const char *word(int knob, int32_t v, char buf[32])
{
    ps_tune_value_name(knob, v, buf, 32);
    return buf;
}

/* Layout first, last, first-last: the first and last rank's decoder layers (0: not set). */
static int end_layers(const ps_transformer *m, const ps_tune_config *c, int32_t *first,
                      int32_t *last)
{
    const int32_t *k = c->knob;
    *first = *last = 0;
    if (k[PS_KNOB_LAYOUT] < 3)
        return 0;
    return ps_layout_end_counts(k[PS_KNOB_LAYOUT] - 2, k[PS_KNOB_PP], k[PS_KNOB_VPP], m->layers,
                                first, last) == 0;
}

/* The layout of a row: "balanced", "first(5)" (the first rank's decoder layers), "last(3)",
 * "first-last(4)" (each end rank's); empty for the even split. */
static void layout_text(char *buf, size_t cap, const ps_transformer *m, const ps_tune_config *c)
{
    char w[32];
    int32_t fl, ll;
    buf[0] = 0;
    if (!c->knob[PS_KNOB_LAYOUT])
        return;
    word(PS_KNOB_LAYOUT, c->knob[PS_KNOB_LAYOUT], w);
    if (end_layers(m, c, &fl, &ll))
        snprintf(buf, cap, "%s(%d)", w, (int)(fl > 0 ? fl : ll));
    else
        snprintf(buf, cap, "%s", w);
}

/* The knobs of a row in one line: "tp4 cp1 pp4 vpp5 mbs1 interleaved none distopt bf16". */
static void knobs_text(FILE *f, const ps_transformer *m, const ps_tune_config *c)
{
    const int32_t *k = c->knob;
    char w[32];
    fprintf(f, "tp%d cp%d pp%d vpp%d", k[PS_KNOB_TP], k[PS_KNOB_CP], k[PS_KNOB_PP], k[PS_KNOB_VPP]);
    if (m->experts > 0)
        fprintf(f, " ep%d etp%d %s", k[PS_KNOB_EP], k[PS_KNOB_ETP],
                word(PS_KNOB_A2A, k[PS_KNOB_A2A], w));
    fprintf(f, " mbs%d %s", k[PS_KNOB_MBS], word(PS_KNOB_SCHEDULE, k[PS_KNOB_SCHEDULE], w));
    fprintf(f, " recompute=%s", word(PS_KNOB_RECOMPUTE, k[PS_KNOB_RECOMPUTE], w));
    if (k[PS_KNOB_RECOMPUTE] == PS_TUNE_RECOMPUTE_FIT)
        fprintf(f, "(%d)", c->recompute_layers);
    fprintf(f, "%s %s", k[PS_KNOB_DISTOPT] ? " distopt" : "",
            word(PS_KNOB_PRECISION, k[PS_KNOB_PRECISION], w));
    if (k[PS_KNOB_LAYOUT]) {
        char lw[48];
        layout_text(lw, sizeof lw, m, c);
        fprintf(f, " %s", lw);
    }
    if (k[PS_KNOB_GROUP] > 1)
        fprintf(f, " group=%d", k[PS_KNOB_GROUP] * k[PS_KNOB_PP]);
    if (k[PS_KNOB_WARMUP] != 1)
        fprintf(f, " warmup=%d", k[PS_KNOB_WARMUP]);
    if (k[PS_KNOB_SPLIT])
        fprintf(f, " split-backward");
}

/* The estimate command that reproduces a row. */
static void command_text(FILE *f, const cli_opts *o, const ps_transformer *m,
                         const ps_tune_config *c)
{
    const int32_t *k = c->knob;
    char w[32], w2[32];
    fprintf(f, "pipesched estimate --model %s --hardware %s --gpus %lld", o->model, o->hardware,
            o->gpus);
    if (o->gpus_per_node >= 0)
        fprintf(f, " --gpus-per-node %lld", o->gpus_per_node);
    fprintf(f, " --gbs %lld --seq %lld --tp %d --cp %d --pp %d --vpp %d", o->gbs, o->seq,
            k[PS_KNOB_TP], k[PS_KNOB_CP], k[PS_KNOB_PP], k[PS_KNOB_VPP]);
    if (m->experts > 0)
        fprintf(f, " --ep %d --etp %d --a2a %s", k[PS_KNOB_EP], k[PS_KNOB_ETP],
                word(PS_KNOB_A2A, k[PS_KNOB_A2A], w));
    int fit = k[PS_KNOB_RECOMPUTE] == PS_TUNE_RECOMPUTE_FIT;
    fprintf(f, " --mbs %d --schedule %s --recompute %s", k[PS_KNOB_MBS],
            word(PS_KNOB_SCHEDULE, k[PS_KNOB_SCHEDULE], w),
            fit ? "full" : word(PS_KNOB_RECOMPUTE, k[PS_KNOB_RECOMPUTE], w2));
    if (fit)
        fprintf(f, " --recompute-layers %d", c->recompute_layers);
    fprintf(f, "%s --precision %s", k[PS_KNOB_DISTOPT] ? " --distributed-optimizer" : "",
            k[PS_KNOB_PRECISION] == PS_PREC_FP8 ? "fp8" : "bf16");
    int32_t fl, ll;
    if (end_layers(m, c, &fl, &ll)) {
        /* Megatron's counts, which the estimate splits as the layout name does. */
        if (fl > 0)
            fprintf(f, " --first-stage-layers %d", (int)fl);
        if (ll > 0)
            fprintf(f, " --last-stage-layers %d", (int)ll);
    } else if (k[PS_KNOB_LAYOUT])
        fprintf(f, " --layout %s", word(PS_KNOB_LAYOUT, k[PS_KNOB_LAYOUT], w));
    if (k[PS_KNOB_GROUP] > 1)
        fprintf(f, " --group-size %d", k[PS_KNOB_GROUP] * k[PS_KNOB_PP]);
    if (k[PS_KNOB_WARMUP] != 1)
        fprintf(f, " --extra-warmup %d", k[PS_KNOB_WARMUP]);
    if (k[PS_KNOB_SPLIT])
        fprintf(f, " --split-backward");
    /* The imbalance: the estimate's balanced step is the row's. */
    static const struct {
        const char *name;
        size_t at;
    } imb[] = {{"samples", offsetof(cli_opts, samples)},
               {"synthetic-samples", offsetof(cli_opts, synthetic_samples)},
               {"expert-load", offsetof(cli_opts, expert_load)},
               {"synthetic-experts", offsetof(cli_opts, synthetic_experts)}};
    for (size_t i = 0; i < sizeof imb / sizeof imb[0]; i++) {
        const char *v = *(const char *const *)(const void *)((const char *)o + imb[i].at);
        if (v)
            fprintf(f, " --%s %s", imb[i].name, v);
    }
    if (o->theta >= 0)
        fprintf(f, " --theta %.17g", o->theta);
    if (o->samples || o->synthetic_samples)
        fprintf(f, " --max-evals %lld", o->max_evals > 0 ? o->max_evals : TUNE_REORDER_EVALS);
}

static void print_search(FILE *f, const ps_tune_stats *st)
{
    char procs[48] = "";
    if (st->processes > 1)
        snprintf(procs, sizeof procs, " in %d processes", st->processes);
    fprintf(f,
            "search: %llu candidates, %llu rejected by the checks, %llu over memory (%llu of them "
            "by the schedule's exact peak, not simulated), %llu simulated (%llu refused by the "
            "schedule, %llu fit, %llu reusing the simulation before), %llu pruned; %.2f s on %d "
            "threads%s: %.0f candidates/s, %.0f simulated/s\n",
            (unsigned long long)st->candidates, (unsigned long long)st->rejected,
            (unsigned long long)st->over_memory, (unsigned long long)st->over_unsimulated,
            (unsigned long long)st->simulated, (unsigned long long)st->failed,
            (unsigned long long)st->fitting, (unsigned long long)st->reused,
            (unsigned long long)st->pruned, st->seconds, st->threads, procs, st->candidates_per_s,
            st->simulated_per_s);
}

/* The searches of every GPU count, and their top K and front merged: a row with its count. */
typedef struct mrow {
    ps_tune_row r;
    int32_t gpus;
} mrow;

/* --csv: the file, written as each search goes (job.csv_write), on rank 0 alone. */
typedef struct csv_sink {
    FILE *f;
    const char *path;
    int regular; /* a regular file: removed when it cannot be completed */
    int gpus;    /* several GPU counts: this search's count, a first column; 0: one count */
    int first;   /* the next call is the header */
    int skip;    /* the header is written already (a count after the first) */
    int err;     /* a write failed: its errno (or EIO) */
} csv_sink;

typedef struct result {
    csv_sink csv;
    gpu_list g;
    ps_tune *t[MAX_COUNTS];
    ps_tune_stats st[MAX_COUNTS];
    mrow *top, *front;
    size_t ntop, nfront;
} result;

/* Step time, then peak memory, then GPUs, then the candidate's number. */
static int cmp_mrow(const void *pa, const void *pb)
{
    const mrow *a = pa, *b = pb;
    const ps_estimate_result *x = &a->r.result, *y = &b->r.result;
    if (x->step_time_s != y->step_time_s)
        return x->step_time_s < y->step_time_s ? -1 : 1;
    if (x->peak_gib != y->peak_gib)
        return x->peak_gib < y->peak_gib ? -1 : 1;
    if (a->gpus != b->gpus)
        return a->gpus < b->gpus ? -1 : 1;
    return (a->r.index > b->r.index) - (a->r.index < b->r.index);
}

/* The top K across the counts (each count's top K holds every row of it that can rank) and the
 * front against step, peak and GPUs (a point dominated within its count is dominated in 3-D, so
 * the union of the counts' fronts holds every point of it). 0 or EXIT_INTERNAL. */
static int merge(result *res, size_t k)
{
    size_t nt = 0, nf = 0;
    for (size_t i = 0; i < res->g.count; i++) {
        nt += ps_tune_top_count(res->t[i]);
        nf += ps_tune_front_count(res->t[i]);
    }
    res->top = calloc(nt + 1, sizeof *res->top);
    res->front = calloc(nf + 1, sizeof *res->front);
    double *step = calloc(nf + 1, sizeof *step), *peak = calloc(nf + 1, sizeof *peak);
    int32_t *gpus = calloc(nf + 1, sizeof *gpus);
    unsigned char *on = calloc(nf + 1, 1);
    int ok = res->top && res->front && step && peak && gpus && on;
    if (ok) {
        nt = nf = 0;
        for (size_t i = 0; i < res->g.count; i++) {
            for (size_t j = 0; j < ps_tune_top_count(res->t[i]); j++, nt++) {
                ps_tune_top(res->t[i], j, &res->top[nt].r);
                res->top[nt].gpus = res->g.n[i];
            }
            for (size_t j = 0; j < ps_tune_front_count(res->t[i]); j++, nf++) {
                ps_tune_front(res->t[i], j, &res->front[nf].r);
                res->front[nf].gpus = gpus[nf] = res->g.n[i];
                step[nf] = res->front[nf].r.result.step_time_s;
                peak[nf] = res->front[nf].r.result.peak_gib;
            }
        }
        qsort(res->top, nt, sizeof *res->top, cmp_mrow);
        res->ntop = nt < k ? nt : k;
        ps_tune_pareto3(step, peak, gpus, nf, on);
        res->nfront = 0;
        for (size_t i = 0; i < nf; i++)
            if (on[i])
                res->front[res->nfront++] = res->front[i];
        qsort(res->front, res->nfront, sizeof *res->front, cmp_mrow);
    }
    free(step);
    free(peak);
    free(gpus);
    free(on);
    if (!ok)
        fprintf(stderr, "pipesched: tune: out of memory\n");
    return ok ? EXIT_OK : EXIT_INTERNAL;
}

/* o with --gpus the row's count, for the estimate command of the row. */
static cli_opts with_gpus(const cli_opts *o, int32_t gpus)
{
    cli_opts c = *o;
    c.gpus = gpus;
    return c;
}

static void print_rows(FILE *f, const cli_opts *o, const ps_transformer *m, const mrow *rows,
                       size_t n, double limit, int multi)
{
    fprintf(f, "%4s%s %10s %10s %6s %9s %9s  %-12s %s\n", "#", multi ? "  gpus" : "", "step s",
            "tok/s/GPU", "MFU", "peak GiB", "headroom", "dominant gap", "configuration");
    for (size_t i = 0; i < n; i++) {
        const ps_tune_row *r = &rows[i].r;
        const ps_estimate_result *e = &r->result;
        char gap[40];
        snprintf(gap, sizeof gap, "%s %.3fs", ps_tune_gap_name(r->gap), r->gap_s);
        fprintf(f, "%4zu", i + 1);
        if (multi)
            fprintf(f, " %5d", rows[i].gpus);
        fprintf(f, " %10.4f %10.1f %5.1f%% %9.2f %9.2f  %-12s ", e->step_time_s,
                e->tokens_per_s_per_gpu, 100 * e->mfu, e->peak_gib, limit - e->peak_gib, gap);
        knobs_text(f, m, &r->config);
        fprintf(f, "\n%4s ", "");
        cli_opts oc = with_gpus(o, rows[i].gpus);
        command_text(f, &oc, m, &r->config);
        fprintf(f, "\n");
    }
}

static void print_reasons(FILE *f, const ps_tune *t)
{
    fprintf(f, "%12s  %s\n", "rejected", "reason (first example)");
    for (size_t i = 0; i < ps_tune_reason_count(t); i++) {
        const char *text, *ex;
        uint64_t count;
        ps_tune_reason(t, i, &text, &ex, &count);
        fprintf(f, "%12llu  %s%s%s%s\n", (unsigned long long)count, text, *ex ? " (" : "", ex,
                *ex ? ")" : "");
    }
}

static void print_text(FILE *f, const cli_opts *o, const ps_transformer *m, const ps_hardware *hw,
                       const result *res)
{
    int multi = res->g.count > 1;
    double limit = res->st[0].limit_gib;
    fprintf(f, "%s on ", m->name);
    for (size_t i = 0; i < res->g.count; i++)
        fprintf(f, "%s%d", i ? ", " : "", res->g.n[i]);
    fprintf(f, " x %s, gbs %lld, seq %lld: memory limit %.2f GiB per device\n", hw->name, o->gbs,
            o->seq, limit);
    for (size_t i = 0; i < res->g.count; i++) {
        if (multi)
            fprintf(f, "%d GPUs, ", res->g.n[i]);
        print_search(f, &res->st[i]);
    }
    if (cli_edpb_wanted(o))
        fprintf(f,
                "step times with the imbalance of %s%s%s, balanced (placed experts, reordered "
                "samples; docs/balance.md)\n",
                o->samples             ? o->samples
                : o->synthetic_samples ? o->synthetic_samples
                                       : "",
                (o->samples || o->synthetic_samples) && (o->expert_load || o->synthetic_experts)
                    ? " and "
                    : "",
                o->expert_load         ? o->expert_load
                : o->synthetic_experts ? o->synthetic_experts
                                       : "");
    fprintf(f, "\ntop %zu by step time%s:\n", res->ntop, multi ? " across the GPU counts" : "");
    print_rows(f, o, m, res->top, res->ntop, limit, multi);
    fprintf(f, "\nPareto front, step time against peak memory%s:\n", multi ? " and GPU count" : "");
    print_rows(f, o, m, res->front, res->nfront, limit, multi);
    for (size_t i = 0; i < res->g.count; i++) {
        fprintf(f, "\n");
        if (multi)
            fprintf(f, "at %d GPUs:\n", res->g.n[i]);
        print_reasons(f, res->t[i]);
    }
}

/* A JSON string. */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

/* A row; multi: with its "gpus". */
static void json_row(FILE *f, const cli_opts *o, const ps_transformer *m, const mrow *mr,
                     double limit, int multi)
{
    const ps_tune_row *r = &mr->r;
    const ps_estimate_result *e = &r->result;
    char w[32];
    fprintf(f, "{\"index\":%llu,", (unsigned long long)r->index);
    if (multi)
        fprintf(f, "\"gpus\":%d,", mr->gpus);
    fprintf(f, "\"knobs\":{");
    for (int k = 0; k < PS_KNOBS; k++) {
        fprintf(f, "%s\"%s\":", k ? "," : "", ps_tune_knob_name(k));
        ps_tune_value_name(k, r->config.knob[k], w, sizeof w);
        int flag = k == PS_KNOB_DISTOPT || k == PS_KNOB_SPLIT;
        if (word_knob(k) && !flag)
            json_str(f, w);
        else if (flag)
            fprintf(f, "%s", r->config.knob[k] ? "true" : "false");
        else
            fprintf(f, "%d", r->config.knob[k]);
    }
    fprintf(f, "},\"recompute_layers\":%d,", r->config.recompute_layers);
    fprintf(f, "\"dp\":%d,\"microbatches\":%d,\"step_time_s\":%s,\"tokens_per_s_per_gpu\":%s,",
            e->dp, e->microbatches, CLI_NUM(e->step_time_s), CLI_NUM(e->tokens_per_s_per_gpu));
    fprintf(f, "\"model_tflops_per_gpu\":%s,\"mfu\":%s,\"bubble_s\":%s,\"compute_s\":%s,",
            CLI_NUM(e->model_tflops_per_gpu), CLI_NUM(e->mfu), CLI_NUM(e->bubble_s),
            CLI_NUM(e->compute_s));
    fprintf(f, "\"optimizer_s\":%s,\"exposed_s\":{", CLI_NUM(e->optimizer_s));
    for (int k = 0; k < PS_COMM_KINDS; k++)
        fprintf(f, "%s\"%s\":%s", k ? "," : "", comm_names[k], CLI_NUM(e->exposed_s[k]));
    fprintf(f, "},\"peak_gib\":%s,\"peak_rank\":%d,", CLI_NUM(e->peak_gib), e->peak_rank);
    fprintf(f, "\"headroom_gib\":%s,\"gap\":\"%s\",\"gap_s\":%s,\"command\":",
            CLI_NUM(limit - e->peak_gib), ps_tune_gap_name(r->gap), CLI_NUM(r->gap_s));
    char *cmd = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&cmd, &len);
    if (mem) {
        cli_opts oc = with_gpus(o, mr->gpus);
        command_text(mem, &oc, m, &r->config);
        fclose(mem);
        json_str(f, cmd);
        free(cmd);
    } else {
        fprintf(f, "null");
    }
    fprintf(f, "}");
}

/* The search's figures; gpus > 0: with the count. */
static void json_search(FILE *f, const ps_tune_stats *st, int32_t gpus)
{
    fprintf(f, "{");
    if (gpus > 0)
        fprintf(f, "\"gpus\":%d,", gpus);
    fprintf(f,
            "\"candidates\":%llu,\"rejected\":%llu,\"simulated\":%llu,\"failed\":%llu,"
            "\"over_memory\":%llu,\"fitting\":%llu,\"reused\":%llu,\"pruned\":%llu,"
            "\"over_memory_unsimulated\":%llu,\"seconds\":%s,\"candidates_per_s\":%s,\"simulated_"
            "per_s\":%s,"
            "\"threads\":%d,\"processes\":%d}",
            (unsigned long long)st->candidates, (unsigned long long)st->rejected,
            (unsigned long long)st->simulated, (unsigned long long)st->failed,
            (unsigned long long)st->over_memory, (unsigned long long)st->fitting,
            (unsigned long long)st->reused, (unsigned long long)st->pruned,
            (unsigned long long)st->over_unsimulated, CLI_NUM(st->seconds),
            CLI_NUM(st->candidates_per_s), CLI_NUM(st->simulated_per_s), st->threads,
            st->processes);
}

/* One top-level member per line, so that a script can drop the timing line ("search"; with
 * several GPU counts "searches", a list, and every row and rejection with its "gpus"). */
static void print_json(FILE *f, const cli_opts *o, const ps_transformer *m, const result *res)
{
    int multi = res->g.count > 1;
    double limit = res->st[0].limit_gib;
    if (multi) {
        fprintf(f, "{\"searches\":[");
        for (size_t i = 0; i < res->g.count; i++) {
            fprintf(f, "%s", i ? "," : "");
            json_search(f, &res->st[i], res->g.n[i]);
        }
        fprintf(f, "],\n");
    } else {
        fprintf(f, "{\"search\":");
        json_search(f, &res->st[0], 0);
        fprintf(f, ",\n");
    }
    if (cli_edpb_wanted(o))
        fprintf(f,
                "\"imbalance\":{\"samples\":%s,\"expert_trace\":%s,\"step_time\":"
                "\"balanced\"},\n",
                o->samples || o->synthetic_samples ? "true" : "false",
                o->expert_load || o->synthetic_experts ? "true" : "false");
    fprintf(f, "\"limit_gib\":%s,\n\"top\":[", CLI_NUM(limit));
    for (size_t i = 0; i < res->ntop; i++) {
        fprintf(f, "%s\n", i ? "," : "");
        json_row(f, o, m, &res->top[i], limit, multi);
    }
    fprintf(f, "],\n\"front\":[");
    for (size_t i = 0; i < res->nfront; i++) {
        fprintf(f, "%s\n", i ? "," : "");
        json_row(f, o, m, &res->front[i], limit, multi);
    }
    fprintf(f, "],\n\"rejected\":[");
    const char *sep = "";
    for (size_t g = 0; g < res->g.count; g++)
        for (size_t i = 0; i < ps_tune_reason_count(res->t[g]); i++) {
            const char *text, *ex;
            uint64_t count;
            ps_tune_reason(res->t[g], i, &text, &ex, &count);
            fprintf(f, "%s{", sep);
            if (multi)
                fprintf(f, "\"gpus\":%d,", res->g.n[g]);
            fprintf(f, "\"reason\":");
            json_str(f, text);
            fprintf(f, ",\"example\":");
            json_str(f, ex);
            fprintf(f, ",\"count\":%llu}", (unsigned long long)count);
            sep = ",";
        }
    fprintf(f, "]}\n");
}

/* Nothing fits: the reasons, and the least memory a configuration needs. */
static int report_nothing(const ps_tune *t, const ps_tune_stats *st, const ps_hardware *hw)
{
    print_reasons(stderr, t);
    if (st->min_need_gib > 0)
        fprintf(stderr,
                "pipesched: tune: no configuration fits in %.2f GiB per device (%s has %.2f GiB, "
                "--mem-reserve-gib %.2f): the smallest needs %s%.2f GiB; use more devices, a "
                "device with more memory, or fewer constraints\n",
                st->limit_gib, hw->name, hw->hbm_gib, hw->hbm_gib - st->limit_gib,
                st->min_need_exact ? "" : "at least ", st->min_need_gib);
    else
        fprintf(stderr, "pipesched: tune: no configuration passes the checks (the reasons above); "
                        "relax the constraints or change gpus, gbs or seq\n");
    return EXIT_USAGE;
}

static int csv_out(csv_sink *c, const char *data, size_t len)
{
    if (fwrite(data, 1, len, c->f) == len)
        return 0;
    c->err = errno ? errno : EIO;
    return PS_EIO;
}

/* job.csv_write: whole lines; with several GPU counts each line gets its count first (the
 * header "gpus", once). */
static int csv_put(void *ud, const char *data, size_t len)
{
    csv_sink *c = ud;
    int head = c->first;
    c->first = 0;
    if (c->err)
        return PS_EIO;
    if (!c->gpus)
        return csv_out(c, data, len);
    if (head && c->skip)
        return 0;
    char pre[32];
    for (size_t at = 0; at < len;) {
        const char *nl = memchr(data + at, '\n', len - at);
        size_t end = nl ? (size_t)(nl - data) + 1 : len;
        int n =
            head ? snprintf(pre, sizeof pre, "gpus,") : snprintf(pre, sizeof pre, "%d,", c->gpus);
        if (csv_out(c, pre, (size_t)n) || csv_out(c, data + at, end - at))
            return PS_EIO;
        at = end;
    }
    return 0;
}

/* Opens the --csv file before the search. */
static int csv_open(const cli_opts *o, csv_sink *c)
{
    memset(c, 0, sizeof *c);
    if (!o->csv)
        return EXIT_OK;
    c->path = o->csv;
    c->f = fopen(o->csv, "wb");
    if (!c->f) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", o->csv, strerror(errno));
        return EXIT_USAGE;
    }
    struct stat sb;
    c->regular = !fstat(fileno(c->f), &sb) && S_ISREG(sb.st_mode);
    return EXIT_OK;
}

/* The file closed; a regular file that is incomplete (failed: a write, or the search) is
 * removed, so that no partial file passes for the whole space. */
static int csv_close(csv_sink *c, int failed)
{
    if (!c->f)
        return EXIT_OK;
    errno = 0;
    if (fclose(c->f) && !c->err)
        c->err = errno ? errno : EIO;
    c->f = NULL;
    if (!c->err && !failed)
        return EXIT_OK;
    int removed = c->regular && !remove(c->path);
    if (c->err) /* else the search's failure is reported already */
        fprintf(stderr, "pipesched: writing %s failed: %s%s\n", c->path, strerror(c->err),
                removed ? " (the file is removed)" : "");
    return c->err ? EXIT_INTERNAL : EXIT_OK;
}

static int outputs(const cli_opts *o, const ps_transformer *m, const ps_hardware *hw,
                   const result *res)
{
    int multi = res->g.count > 1;
    for (size_t i = 0; i < res->g.count; i++)
        if (res->st[i].bound_breaks)
            fprintf(stderr,
                    "pipesched: tune: warning: %llu simulated steps below their lower bound "
                    "(a bug: please report it; rerun with --no-prune)\n",
                    (unsigned long long)res->st[i].bound_breaks);
    int ex = EXIT_OK;
    if (res->ntop == 0) {
        for (size_t i = 0; i < res->g.count; i++) {
            if (multi)
                fprintf(stderr, "at %d GPUs:\n", res->g.n[i]);
            ex = report_nothing(res->t[i], &res->st[i], hw);
        }
        return ex;
    }
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s\n", o->output);
        return EXIT_USAGE;
    }
    if (o->json)
        print_json(f, o, m, res);
    else
        print_text(f, o, m, hw, res);
    if (o->output && fclose(f)) {
        fprintf(stderr, "pipesched: writing %s failed\n", o->output);
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

/* ---- the progress bar and the drawing ----------------------------------------------------- */

/* The bar on stderr (a terminal): share done, count, rate, time left, best step so far. The
 * last call (done = total) erases it, so that the terminal keeps only the results. */
static void progress_bar(void *ud, const ps_tune_progress *p)
{
    (void)ud;
    if (p->done >= p->total) {
        fprintf(stderr, "\r\033[K");
        fflush(stderr);
        return;
    }
    enum { WIDTH = 24 };
    double share = p->total ? (double)p->done / (double)p->total : 1.0;
    double rate = p->seconds > 0 ? (double)p->done / p->seconds : 0.0;
    double left = rate > 0 ? (double)(p->total - p->done) / rate : 0.0;
    char bar[WIDTH + 1];
    int full = (int)(share * WIDTH);
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < full ? '#' : '-';
    bar[WIDTH] = 0;
    fprintf(stderr, "\r\033[K%3.0f%% [%s] %llu/%llu, %.0f/s, %.0f s left", 100.0 * share, bar,
            (unsigned long long)p->done, (unsigned long long)p->total, rate, left);
    if (p->best_step_s > 0)
        fprintf(stderr, ", best %.4g s", p->best_step_s);
    fflush(stderr);
}

/* --draw N --svg FILE: the timeline of row N, simulated again with the estimate. */
static int draw_row(const cli_opts *o, const ps_transformer *m, const ps_hardware *hw,
                    const result *res, ps_tune_job job)
{
    size_t n = res->ntop;
    if ((size_t)o->draw > n) {
        fprintf(stderr, "pipesched: --draw %lld: the ranking has %zu row%s\n", o->draw, n,
                n == 1 ? "" : "s");
        return EXIT_USAGE;
    }
    const mrow *row = &res->top[o->draw - 1];
    job.gpus = row->gpus;
    ps_train tr;
    ps_tune_config_train(&job, &row->r.config, &tr);
    ps_estimate *e;
    int rc = ps_estimate_new(&e, NULL);
    if (!rc)
        rc = ps_estimate_run(e, m, hw, &tr);
    int ex = rc ? cli_report("tune --draw", rc, e ? ps_estimate_last_error(e) : NULL)
                : cli_find("draw")->timeline_svg(ps_estimate_schedule(e), ps_estimate_sim(e), "s",
                                                 "tune --draw", o->svg);
    ps_estimate_free(e);
    return ex;
}

/* A front point's knobs, briefly: "tp4 cp2 pp4 vpp5 mbs1 interleaved" (the experts, a
 * recompute other than none, fp8, a balanced layout and, with several counts, "@16 GPUs"). */
static void brief_knobs(char *buf, size_t cap, const ps_transformer *m, const mrow *r, int multi)
{
    const int32_t *k = r->r.config.knob;
    char w[32];
    size_t n = (size_t)snprintf(buf, cap, "tp%d cp%d pp%d vpp%d", k[PS_KNOB_TP], k[PS_KNOB_CP],
                                k[PS_KNOB_PP], k[PS_KNOB_VPP]);
#define ADD(...) (n += n < cap ? (size_t)snprintf(buf + n, cap - n, __VA_ARGS__) : 0)
    if (m->experts > 0)
        ADD(" ep%d etp%d", k[PS_KNOB_EP], k[PS_KNOB_ETP]);
    ADD(" mbs%d %s", k[PS_KNOB_MBS], word(PS_KNOB_SCHEDULE, k[PS_KNOB_SCHEDULE], w));
    if (k[PS_KNOB_RECOMPUTE] != PS_RECOMPUTE_NONE)
        ADD(" rc-%s", word(PS_KNOB_RECOMPUTE, k[PS_KNOB_RECOMPUTE], w));
    if (k[PS_KNOB_RECOMPUTE] == PS_TUNE_RECOMPUTE_FIT)
        ADD("(%d)", r->r.config.recompute_layers);
    if (k[PS_KNOB_PRECISION] == PS_PREC_FP8)
        ADD(" fp8");
    if (k[PS_KNOB_LAYOUT]) {
        char lw[48];
        layout_text(lw, sizeof lw, m, &r->r.config);
        ADD(" %s", lw);
    }
    if (k[PS_KNOB_GROUP] > 1)
        ADD(" g%d", k[PS_KNOB_GROUP] * k[PS_KNOB_PP]);
    if (k[PS_KNOB_WARMUP] != 1)
        ADD(" w%d", k[PS_KNOB_WARMUP]);
    if (k[PS_KNOB_SPLIT])
        ADD(" split");
    if (multi)
        ADD(" @%d GPUs", r->gpus);
#undef ADD
}

/* --pareto-svg FILE: the front as a scatter plot of step time against peak memory. */
static int draw_front(const cli_opts *o, const ps_transformer *m, const ps_hardware *hw,
                      const result *res)
{
    enum { LABEL = 112 };
    size_t n = res->nfront;
    double *x = calloc(n, sizeof *x), *y = calloc(n, sizeof *y);
    char *text = calloc(n, LABEL);
    const char **labels = calloc(n, sizeof *labels);
    int ex = EXIT_INTERNAL;
    if (x && y && text && labels) {
        for (size_t i = 0; i < n; i++) {
            x[i] = res->front[i].r.result.peak_gib;
            y[i] = res->front[i].r.result.step_time_s;
            labels[i] = text + i * LABEL;
            brief_knobs(text + i * LABEL, LABEL, m, &res->front[i], res->g.count > 1);
        }
        char title[320];
        snprintf(title, sizeof title, "Pareto front of %s on %s%s: step time against peak memory",
                 m->name, hw->name, res->g.count > 1 ? " (and GPU count)" : "");
        ex = cli_find("draw")->scatter_svg(x, y, labels, n, "peak memory per GPU (GiB)",
                                           "step time (s)", title, "tune --pareto-svg",
                                           o->pareto_svg);
    } else {
        fprintf(stderr, "pipesched: tune --pareto-svg: out of memory\n");
    }
    free(x);
    free(y);
    free(text);
    free(labels);
    return ex;
}

/* --draw needs --svg and the drawings (a build with Graphviz): refused before the search. */
static int check_draw(const cli_opts *o)
{
    const cli_command *draw = cli_find("draw");
    if (o->draw < 0 && !o->svg)
        return EXIT_OK;
    if (o->draw < 0 || !o->svg) {
        fprintf(stderr, "pipesched: tune --draw N and --svg FILE go together (the timeline of "
                        "row N into FILE)\n");
        return EXIT_USAGE;
    }
    if (draw && draw->timeline_svg)
        return EXIT_OK;
    fprintf(stderr, "pipesched: tune --draw needs the SVG drawings, and this pipesched was built "
                    "without Graphviz (meson -Dviz)\n");
    return EXIT_USAGE;
}

/* --pareto-svg needs the drawings too: refused before the search. */
static int check_pareto_svg(const cli_opts *o)
{
    const cli_command *draw = cli_find("draw");
    if (!o->pareto_svg || (draw && draw->scatter_svg))
        return EXIT_OK;
    fprintf(stderr, "pipesched: tune --pareto-svg needs the SVG drawings, and this pipesched was "
                    "built without Graphviz (meson -Dviz)\n");
    return EXIT_USAGE;
}

/* The search of one GPU count into res->t[i] and res->st[i]; mpi: split over the processes of
 * mpirun, every one of which calls this. */
static int search_one(const cli_opts *o, const ps_transformer *m, const ps_hardware *hw,
                      result *res, size_t i, ps_tune_job job, int mpi, const cli_edpb *x)
{
    int rc = ps_tune_new(&res->t[i], NULL);
    int ex = rc ? cli_report("tune", rc, NULL) : EXIT_OK;
    if (!ex && cli_edpb_wanted(o) && (rc = ps_tune_set_imbalance(res->t[i], &x->in)))
        ex = cli_report("tune", rc, NULL);
    named nm;
    for (int k = 0; k < PS_KNOBS; k++)
        nm.by[k] = -1;
    const char *spec[KINDS] = {o->tune_fix, o->tune_allow, o->tune_max};
    for (int kind = 0; kind < KINDS && !ex; kind++)
        ex = parse_constraints(res->t[i], kind, spec[kind], &nm);
    if (mpi) /* the same on every process but out of memory: agreed before the collective */
        ex = cli_mpi_agree(ex);
    if (ex)
        return ex;
    job.gpus = res->g.n[i];
    if (res->csv.f) {
        res->csv.first = 1;
        res->csv.gpus = res->g.count > 1 ? job.gpus : 0;
        res->csv.skip = i > 0;
        job.csv_write = csv_put;
        job.csv_ud = &res->csv;
    }
    rc = mpi ? cli_mpi_run(res->t[i], m, hw, &job) : ps_tune_run(res->t[i], m, hw, &job);
    if (rc == PS_EIO && res->csv.err) /* csv_close says why */
        return EXIT_INTERNAL;
    if (rc) {
        char what[64];
        snprintf(what, sizeof what, "tune --gpus %d", job.gpus);
        return cli_report(res->g.count > 1 ? what : "tune", rc, ps_tune_last_error(res->t[i]));
    }
    ps_tune_stats_get(res->t[i], &res->st[i]);
    return EXIT_OK;
}

/* The default threads of a process under mpirun: the node's cores shared by its processes
 * (OMPI_COMM_WORLD_LOCAL_SIZE), at least 1. */
static int32_t mpi_threads(void)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *local = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    long n = local ? strtol(local, NULL, 10) : 1;
    long t = n > 0 && cores > 0 ? cores / n : cores;
    return t < 1 ? 1 : t > 256 ? 256 : (int32_t)t;
}

static int tune_main(const cli_opts *opts)
{
    ps_transformer model;
    ps_hardware hw;
    static result res;      /* large: not on the stack */
    static config_words cw; /* the --config file's words, which o points into */
    memset(&res, 0, sizeof res);
    cw.root = NULL;
    cli_opts oc = *opts;
    const cli_opts *o = &oc;
    /* Under mpirun every process runs this; rank 0 prints, the others only search. */
    int rank = 0, size = 1, mpi = cli_mpi_launched(&rank, &size);
    if (mpi && cli_mpi_begin(&rank, &size))
        return EXIT_USAGE;
    int ex = oc.config ? load_config(&oc, &cw) : EXIT_OK;
    if (!ex)
        ex = check_required(o);
    if (!ex)
        ex = parse_gpus(o->tune_gpus, &res.g);
    if (!ex)
        ex = check_draw(o);
    if (!ex)
        ex = check_pareto_svg(o);
    if (!ex)
        ex = cli_edpb_check(o, "tune");
    if (!ex)
        ex = load_spec("model", o->model, &model, NULL);
    if (!ex)
        ex = load_spec("hardware", o->hardware, NULL, &hw);
    if (mpi) /* a file one process cannot read fails them all, named by rank 0 */
        ex = cli_mpi_agree(ex);
    if (ex) {
        cJSON_Delete(cw.root);
        cli_mpi_end();
        return ex;
    }
    ps_tune_job job;
    ps_tune_job_init(&job);
    job.gpus_per_node = o->gpus_per_node > 0 ? (int32_t)o->gpus_per_node : 0;
    job.gbs = o->gbs;
    job.seq = (int32_t)o->seq;
    if (o->mem_reserve >= 0)
        job.mem_reserve_gib = o->mem_reserve;
    if (o->threads >= 0)
        job.threads = (int32_t)o->threads;
    else if (mpi)
        job.threads = mpi_threads();
    if (o->top >= 0)
        job.top_k = (int32_t)o->top;
    job.no_prune = o->no_prune;
    /* --csv streams (job.csv_write, set per search): nothing recorded. The file is opened
     * (on rank 0) before the search, so that a path that cannot be written fails at once. */
    ex = rank == 0 ? csv_open(o, &res.csv) : EXIT_OK;
    if (mpi)
        ex = cli_mpi_agree(ex);
    if (ex) {
        cJSON_Delete(cw.root);
        cli_mpi_end();
        return ex;
    }
    if (!mpi && isatty(STDERR_FILENO))
        job.progress = progress_bar;
    /* The imbalance (docs/balance.md): the synthetic samples are the job's gbs samples. */
    cli_edpb x;
    ps_train jt;
    ps_train_init(&jt);
    jt.gbs = job.gbs, jt.seq = job.seq;
    ex = cli_edpb_load(o, &model, &jt, &x);
    if (mpi) /* a samples or trace file one process cannot read fails them all */
        ex = cli_mpi_agree(ex);
    if (o->max_evals <= 0) /* a reordering per candidate: a small budget */
        x.in.max_evals = TUNE_REORDER_EVALS;
    for (size_t i = 0; i < res.g.count && !ex; i++)
        ex = search_one(o, &model, &hw, &res, i, job, mpi, &x);
    int cex = csv_close(&res.csv, ex != EXIT_OK);
    if (!ex)
        ex = cex;
    int root = rank == 0;
    if (!ex && root)
        ex = merge(&res, (size_t)job.top_k);
    if (!ex && root)
        ex = outputs(o, &model, &hw, &res);
    if (!ex && root && o->draw > 0)
        ex = draw_row(o, &model, &hw, &res, job);
    if (!ex && root && o->pareto_svg)
        ex = draw_front(o, &model, &hw, &res);
    if (mpi) /* rank 0's outcome, which the others wait for, is every process's exit status */
        ex = cli_mpi_agree(ex);
    cli_mpi_end();
    for (size_t i = 0; i < res.g.count; i++)
        ps_tune_free(res.t[i]);
    cli_edpb_free(&x);
    free(res.top);
    free(res.front);
    cJSON_Delete(cw.root);
    return ex;
}

const cli_command cli_cmd_tune = {
    .name = "tune",
    .summary = "search the parallel configurations, every candidate simulated",
    .usage = "pipesched tune --model NAME|FILE --hardware NAME|FILE --gpus N --gbs B --seq S\n"
             "                      [--fix K=V,...] [--allow K=V,V,...] [--max K=V,...] [OPTIONS]",
    .about = "Enumerates every combination of tp, cp, pp, vpp, ep, etp, micro-batch size,\n"
             "recompute (none, selective, full, and full for the fewest layers that fit),\n"
             "distributed optimizer, precision, schedule family, layout, interleaved group\n"
             "size, adaptive's options and (MoE) all-to-all that the constraints leave,\n"
             "rejects what cannot run by cheap checks (counted per reason), simulates every\n"
             "other candidate with the estimate (a bound skips only what provably cannot\n"
             "rank), and prints the fastest configurations that fit with the estimate command\n"
             "of each, the Pareto front of step time against peak memory and the rejections\n"
             "(docs/tune.md).",
    .option_help = {{"json", "the ranking, the front, the rejections and the search's\n"
                             "figures as JSON"},
                    {"samples", "the global batch (gbs lines of document lengths,\n"
                                "512,2048,128): every candidate's step with these uneven\n"
                                "micro-batches, reordered, ranks it"},
                    {"synthetic-experts", "instead of --expert-load: a seeded trace for the\n"
                                          "model's MoE layers,\n"
                                          "zipf:S[,drift:X][,seed:N][,steps:T][,tokens:K]"}},
    .run = tune_main,
    .before_parse = cli_mpi_quiet,
};
