/*
 * The steps the commands share: build the problem from the options, generate and validate a
 * schedule, simulate it, and write what `simulate` and `check` print. Each step reports its
 * own failure ("pipesched: ..."), so a command only passes the exit status on.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A configuration file larger than this is a mistake, not a configuration. */
#define CONFIG_LIMIT (64u << 20)

int cli_report(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "pipesched: %s%s%s\n", what ? what : "", what ? ": " : "",
            msg && *msg ? msg : ps_strerror(rc));
    return cli_exit_code(rc);
}

/* Which of the settings that default silently (CLI_DEFAULT_*) the config's top level gives. */
static unsigned config_gives(const char *text, size_t len)
{
    static const char *const keys[] = {"schedule", "pp", "microbatches"};
    unsigned given = 0;
    cJSON *root = cJSON_ParseWithLength(text, len);
    for (unsigned k = 0; k < 3; k++)
        if (cJSON_GetObjectItemCaseSensitive(root, keys[k]))
            given |= 1u << k;
    cJSON_Delete(root);
    return given;
}

static int load_config(ps_problem *pb, const char *path, unsigned *given)
{
    char *text;
    size_t len;
    if (cli_read_file(path, CONFIG_LIMIT, &text, &len))
        return PS_EINVAL;
    int rc = ps_problem_load_json(pb, text, len);
    if (!rc)
        *given = config_gives(text, len);
    free(text);
    if (rc)
        fprintf(stderr, "pipesched: %s: %s\n", path, ps_problem_last_error(pb));
    return rc;
}

/* The flags, over what the config set; the library says why a value does not fit. */
static int apply_flags(ps_problem *pb, const cli_opts *o)
{
    int rc = 0;
    if (o->schedule && (rc = ps_problem_set_schedule(pb, o->schedule)))
        return rc;
    /* -s switches the family of a config: a family-specific key of the file that holds its
     * default (extra_warmup 1, the adaptive family's) means "the default" and must not block
     * the switch, so it goes back to unset; another value, or the flag, still meets the
     * family's check. */
    if (o->schedule && o->extra_warmup < 0 && ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP) == 1 &&
        (rc = ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, -1)))
        return rc;
    if (o->pp > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_PP, o->pp)))
        return rc;
    if (o->vpp > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_VPP, o->vpp)))
        return rc;
    if (o->m > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, o->m)))
        return rc;
    if (o->group > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, o->group)))
        return rc;
    if (o->extra_warmup >= 0 &&
        (rc = ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, o->extra_warmup)))
        return rc;
    if (o->split_backward && (rc = ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 1)))
        return rc;
    if (o->costs && (rc = ps_problem_set_costs_string(pb, o->costs)))
        return rc;
    if (o->memory && (rc = ps_problem_set_memory_string(pb, o->memory)))
        return rc;
    if (o->mb_weights && (rc = ps_problem_set_microbatch_weights_string(pb, o->mb_weights)))
        return rc;
    if (o->mem_limit >= 0 && (rc = ps_problem_set_mem_limit(pb, o->mem_limit)))
        return rc;
    return 0;
}

/* With a MoE model the planner gives every action's duration, so --costs' f, b, w and fb do
 * nothing; only c (the transfer between ranks) still applies. A warning rather than a refusal:
 * a --costs that sets c means what it says, and a script that passes one --costs for every
 * config keeps running. Names the keys that are ignored. */
static void warn_moe_costs(const ps_problem *pb, const char *costs)
{
    ps_moe_model moe;
    if (!costs || ps_problem_get_moe(pb, &moe))
        return;
    char ignored[64] = "";
    size_t n = 0;
    for (const char *p = costs; *p;) {
        size_t k = strcspn(p, "=,");
        if (!(k == 1 && *p == 'c') && k < 8 && n + k + 3 < sizeof ignored)
            n += (size_t)snprintf(ignored + n, sizeof ignored - n, "%s%.*s", n ? ", " : "", (int)k,
                                  p);
        p += strcspn(p, ",");
        p += *p == ',';
    }
    if (n)
        fprintf(stderr,
                "pipesched: warning: --costs %s ignored: the config's MoE model gives the "
                "durations (only c, the transfer between ranks, applies)\n",
                ignored);
}

int cli_build_problem(const cli_opts *o, ps_problem **out, unsigned *defaulted)
{
    ps_problem *pb;
    unsigned given = 0;
    int rc = ps_problem_new(&pb, NULL);
    if (rc) {
        fprintf(stderr, "pipesched: %s\n", ps_strerror(rc));
        return rc;
    }
    if (o->config && (rc = load_config(pb, o->config, &given))) {
        ps_problem_free(pb);
        return rc;
    }
    if ((rc = apply_flags(pb, o))) {
        fprintf(stderr, "pipesched: %s\n", ps_problem_last_error(pb));
        ps_problem_free(pb);
        return rc;
    }
    warn_moe_costs(pb, o->costs);
    given |= (o->schedule ? CLI_DEFAULT_SCHEDULE : 0u) | (o->pp > 0 ? CLI_DEFAULT_PP : 0u) |
             (o->m > 0 ? CLI_DEFAULT_MICROBATCHES : 0u);
    if (defaulted)
        *defaulted = ~given & (CLI_DEFAULT_SCHEDULE | CLI_DEFAULT_PP | CLI_DEFAULT_MICROBATCHES);
    *out = pb;
    return 0;
}

int cli_make_schedule(const ps_problem *pb, ps_schedule **out)
{
    ps_schedule *s;
    int rc = ps_schedule_new(&s, NULL);
    if (rc)
        return cli_report("schedule", rc, NULL);
    rc = ps_schedule_generate(s, pb);
    if (rc) {
        int ex = cli_report(NULL, rc, ps_schedule_last_error(s));
        ps_schedule_free(s);
        return ex;
    }
    rc = ps_schedule_validate(s);
    if (rc) {
        int ex = cli_report("validation", rc, ps_schedule_last_error(s));
        ps_schedule_free(s);
        return ex;
    }
    *out = s;
    return EXIT_OK;
}

static int run_sim(const ps_schedule *s, const ps_problem *pb, const char *what, int timeline,
                   ps_sim **out)
{
    ps_sim *sim;
    int rc = ps_sim_new(&sim, NULL);
    if (rc)
        return cli_report("simulate", rc, NULL);
    ps_sim_keep_timeline(sim, timeline);
    rc = ps_sim_run(sim, s, pb);
    if (rc) {
        int ex = cli_report(what, rc, ps_sim_last_error(sim));
        ps_sim_free(sim);
        return ex;
    }
    *out = sim;
    return EXIT_OK;
}

int cli_run_sim(const ps_schedule *s, const ps_problem *pb, const char *what, ps_sim **out)
{
    return run_sim(s, pb, what, 1, out);
}

int cli_job_run(cli_job *j, int simulate)
{
    int ex = cli_make_schedule(j->pb, &j->s);
    if (!ex && simulate)
        ex = run_sim(j->s, j->pb, NULL, simulate != CLI_SIM_METRICS, &j->sim);
    return ex;
}

int cli_job_open(cli_job *j, const cli_opts *o, int simulate)
{
    j->pb = NULL;
    j->s = NULL;
    j->sim = NULL;
    j->defaulted = 0;
    int rc = cli_build_problem(o, &j->pb, &j->defaulted);
    return rc ? cli_exit_code(rc) : cli_job_run(j, simulate);
}

void cli_job_free(cli_job *j)
{
    ps_sim_free(j->sim);
    ps_schedule_free(j->s);
    ps_problem_free(j->pb);
}

int cli_write_out(const char *path, int (*emit)(const void *arg, ps_write_fn write, void *ud),
                  const void *arg)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", path, strerror(errno));
        return EXIT_USAGE;
    }
    int rc = emit(arg, cli_write_file, f);
    int werr = ferror(f) ? errno : 0;
    int cerr = path ? fclose(f) : fflush(f);
    if (cerr && !werr)
        werr = errno;
    if (rc || cerr) {
        /* The C library's reason when it has one (a write or the close failed): "No space
         * left on device" says more than the library's "I/O error". */
        fprintf(stderr, "pipesched: writing %s failed: %s\n", path ? path : "stdout",
                werr ? strerror(werr) : ps_strerror(rc ? rc : PS_EIO));
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

/* What cli_emit writes: a schedule, its timeline, a format. */
typedef struct emit_args {
    const ps_schedule *s;
    const ps_sim *sim;
    ps_format fmt;
    int width; /* cli_emit_timed's */
} emit_args;

static int emit_export(const void *arg, ps_write_fn write, void *ud)
{
    const emit_args *a = arg;
    return ps_export(a->s, a->sim, a->fmt, write, ud);
}

int cli_emit(const ps_schedule *s, const ps_sim *sim, ps_format fmt, const char *path)
{
    emit_args a = {s, sim, fmt, 0};
    return cli_write_out(path, emit_export, &a);
}

static int emit_timed(const void *arg, ps_write_fn write, void *ud)
{
    const emit_args *a = arg;
    return ps_export_timed_table(a->s, a->sim, a->width, write, ud);
}

int cli_emit_timed(const ps_schedule *s, const ps_sim *sim, long long width, const char *path)
{
    emit_args a = {s, sim, PS_FORMAT_TABLE_TIMED, width > 0 ? (int)width : 0};
    return cli_write_out(path, emit_timed, &a);
}

int cli_check_width(const cli_opts *o, int timed_table)
{
    if (o->width < 0 || timed_table)
        return EXIT_OK;
    fprintf(stderr,
            "pipesched: --width %lld applies to the timed table only (generate --timed, "
            "simulate -f table, check -f table)\n",
            o->width);
    return EXIT_USAGE;
}

/* The all-to-all lines of the metrics, for a simulation with a MoE model. */
static void print_comm(FILE *f, const ps_sim *sim)
{
    static const char *const phase[PS_PHASE_COUNT] = {"warm-up", "steady", "cool-down", "whole"};
    ps_comm_metrics c;
    if (ps_sim_comm(sim, &c))
        return;
    fprintf(f, "EP all-to-all (summed over ranks): %10s %12s %9s\n", "total", "exposed", "overlap");
    for (int ph = 0; ph < PS_PHASE_COUNT; ph++)
        fprintf(f, "  %-32s %10g %12g %8.2f%%\n", phase[ph], c.total[ph], c.exposed[ph],
                100.0 * c.overlap[ph]);
}

void cli_print_defaults(FILE *f, const ps_schedule *s, unsigned defaulted)
{
    if (!defaulted)
        return;
    fprintf(f, "defaults (not given):");
    const char *sep = " ";
    if (defaulted & CLI_DEFAULT_SCHEDULE) {
        fprintf(f, "%s-s %s", sep, ps_schedule_family(s));
        sep = ", ";
    }
    if (defaulted & CLI_DEFAULT_PP) {
        fprintf(f, "%s-p %d", sep, ps_schedule_pp(s));
        sep = ", ";
    }
    if (defaulted & CLI_DEFAULT_MICROBATCHES)
        fprintf(f, "%s-m %d", sep, ps_schedule_microbatches(s));
    fprintf(f, "\n");
}

void cli_print_metrics(FILE *f, const ps_schedule *s, const ps_sim *sim, unsigned defaulted)
{
    ps_metrics m;
    ps_sim_metrics(sim, &m);
    fprintf(f, "schedule %s: pp=%d vpp=%d stages=%d microbatches=%d actions=%zu\n",
            ps_schedule_family(s), ps_schedule_pp(s), ps_schedule_vpp(s), ps_schedule_num_stages(s),
            ps_schedule_microbatches(s), ps_schedule_total_actions(s));
    cli_print_defaults(f, s, defaulted);
    /* Two measures of idle time that read as a contradiction when bare ("bubble 0" next to
     * "bubble_ratio 0.111"): each carries what it measures. The JSON keys stay. */
    fprintf(f,
            "makespan %g  bubble %g (largest idle of a rank)  bubble_ratio %.4f (idle fraction)\n",
            m.makespan, m.bubble, m.bubble_ratio);
    fprintf(f, "%6s %12s %12s %12s %8s %10s %7s\n", "rank", "busy", "span", "idle", "peak_act",
            "peak_mem", "params");
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(sim, r, &rm);
        fprintf(f, "%6d %12g %12g %12g %8lld %10g %7d\n", r, rm.busy, rm.span, rm.idle,
                (long long)rm.peak_activations, rm.peak_memory, rm.param_copies);
    }
    print_comm(f, sim);
}

int cli_check_json_format(const cli_opts *o)
{
    if (!o->json || o->format < 0 || o->format == PS_FORMAT_JSON)
        return EXIT_OK;
    const char *name = "table";
    for (size_t i = 0; i < cli_option_count; i++)
        if (cli_options[i].type == CLI_CHOICE &&
            cli_options[i].offset == offsetof(cli_opts, format))
            for (const cli_choice *c = cli_options[i].choices; c->name; c++)
                if (c->value == o->format)
                    name = c->name;
    fprintf(stderr,
            "pipesched: --json and --format %s contradict each other: use one (--format json "
            "prints the timed schedule with the metrics, --json the metrics alone)\n",
            name);
    return EXIT_USAGE;
}

int cli_sim_outputs(const cli_opts *o, const ps_schedule *s, const ps_sim *sim, int has_fmt,
                    ps_format fmt, unsigned defaulted)
{
    int ex = EXIT_OK;
    if (o->trace && (ex = cli_emit(s, sim, PS_FORMAT_TRACE, o->trace)))
        return ex;
    if (has_fmt && fmt == PS_FORMAT_TABLE)
        return cli_emit_timed(s, sim, o->width, o->output);
    if (has_fmt)
        return cli_emit(s, sim, fmt, o->output);
    if (o->json)
        return cli_emit(s, sim, PS_FORMAT_METRICS, o->output);
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", o->output, strerror(errno));
        return EXIT_USAGE;
    }
    cli_print_metrics(f, s, sim, defaulted);
    if (o->output && fclose(f)) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", o->output, strerror(errno));
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}
