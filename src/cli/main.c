/*
 * pipesched — command-line front end of libpipesched.
 *
 *   pipesched list | generate | simulate | check FILE.csv | run | demo | help [COMMAND]
 *
 * Exit status: 0 ok, 1 the schedule failed validation (or deadlocks), 2 usage or input
 * error, 3 internal error (out of memory, output failure).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"
#include "demo_config.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#ifdef PS_HAVE_EXEC
#include <pipesched/exec.h>
#endif
#ifdef PS_HAVE_VIZ
#include <pipesched/viz.h>
#endif

#define CONFIG_LIMIT (64u << 20)
#define CSV_LIMIT (1u << 30)

typedef struct opts {
    const char *schedule, *config, *costs, *memory, *mem_limit, *format, *output, *trace;
    const char *time_scale; /* run */
    long long pp, vpp, m, group;
    long long extra_warmup, fstage, bstage; /* -1 = not given */
    int split_backward, method;             /* method: -1 = not given */
    int timed, json, help;
    const char *file; /* check */
    const char *kind; /* draw */
} opts;

/* Help line of each option, by letter, in the order commands list them. */
static const struct {
    char letter;
    const char *text;
} option_help[] = {
    {'s', "  -s, --schedule NAME     schedule family or alias (see `pipesched list`)\n"},
    {'p', "  -p, --pp N              pipeline ranks\n"},
    {'v', "  -v, --vpp N             chunks (virtual stages) per rank\n"},
    {'m', "  -m, --microbatches N    micro-batches per iteration\n"},
    {'G', "      --group-size N      interleaved/adaptive micro-batch group size (default pp)\n"},
    {'c', "      --costs SPEC        per-chunk costs, e.g. f=1,b=1,w=1,c=0 (fb = fused pair)\n"},
    {'M', "      --memory SPEC       memory per chunk: F adds f, I adds b, W adds w (f+b+w = 0),\n"
          "                          default f=1,b=-0.5,w=-0.5\n"},
    {'L', "      --mem-limit X       per-rank memory limit (0 = none): simulation rejects a\n"
          "                          schedule above it; zb-auto schedules under it\n"},
    {'D', "      --extra-warmup N    adaptive: extra warm-up forwards before the fused steady\n"
          "                          phase (default 1)\n"},
    {'B', "      --split-backward    adaptive: each cool-down backward as I then W, so the\n"
          "                          input gradient leaves earlier\n"},
    {'C', "      --config FILE       JSON configuration (docs/config.md); flags override it\n"},
    {'P', "      --method NAME       planner: adaptive (default), mindspeed, megatron, serial\n"},
    {'F', "      --fstage N          model stage of the fused pair's forward (default: the\n"
          "                          first stage with the most MoE layers)\n"},
    {'K', "      --bstage N          model stage of its backward (default: --fstage)\n"},
    {'f', NULL}, /* per command */
    {'t', "      --timed             simulate: the table gets one column per time unit, the\n"
          "                          JSON start/end times and metrics\n"},
    {'j', NULL}, /* per command */
    {'T', "      --trace FILE        write a Chrome/Perfetto trace (1 cost unit = 1 ms)\n"},
    {'S', "      --time-scale S      seconds of real time per cost unit (default 0.001)\n"},
    {'k', "      --kind KIND         timeline (default), overlap or dag\n"},
    {'o', "  -o, --output FILE       write the output to FILE instead of stdout\n"},
    {'h', "  -h, --help              this help\n"},
};

static const struct {
    const char *name, *usage, *about, *format, *options, *json;
} commands_help[] = {
    {"list", "pipesched list [--json]",
     "Lists the schedule families with their aliases (case-insensitive, PyTorch class\n"
     "names accepted), placement and constraints.",
     NULL, "jh", "      --json              the families as JSON\n"},
    {"generate", "pipesched generate [OPTIONS]",
     "Generates and validates a schedule and prints it.",
     "  -f, --format FMT        table (default), json, csv, csv-comms\n", "spvmGDBcMLCftoh", NULL},
    {"simulate", "pipesched simulate [OPTIONS]",
     "Generates, validates and simulates a schedule; prints its metrics.",
     "  -f, --format FMT        print the timed schedule (table, or json with the metrics)\n"
     "                          instead of the metrics\n",
     "spvmGDBcMLCfjToh", "      --json              metrics as JSON\n"},
    {"check", "pipesched check FILE.csv [OPTIONS]",
     "Validates a PyTorch-style CSV schedule (compute_only or compute_comms, one row per\n"
     "rank; - reads stdin) and simulates it. pp, stages, micro-batches and the placement\n"
     "are inferred from the file; -m sets the micro-batch count; from a --config file\n"
     "only the costs and the memory model apply.",
     "  -f, --format FMT        print the schedule instead of the metrics: table (timed),\n"
     "                          json (timed, with the metrics), csv, csv-comms\n",
     "mcMLCfjToh", "      --json              metrics as JSON\n"},
#ifdef PS_HAVE_EXEC
    {"run", "pipesched run [OPTIONS]",
     "Generates and simulates a schedule, then executes it for real on a libuv loop with\n"
     "emulated compute (each action sleeps its cost times the time scale, one thread per\n"
     "rank, all ranks in this process) and prints the measured metrics next to the\n"
     "simulated ones with the relative error of the makespan.",
     NULL, "spvmGDBcMLCjSToh",
     "      --json              {\"simulated\": {...}, \"measured\": {...}, \"makespan_error\": "
     "x}\n"},
#endif
    {"plan", "pipesched plan --config FILE [OPTIONS]",
     "Plans one fused pair (the forward of one micro-batch with the full backward of\n"
     "another, as in the steady phase of adaptive or DualPipe) and one warm-up forward\n"
     "chunk on the compute and communication streams of a device, with the MoE model of\n"
     "the config (\"model\" + \"cluster\", or \"moe\"; docs/config.md). Prints both as\n"
     "two-stream tables and compares the pair under the adaptive planner, MindSpeed's and\n"
     "Megatron's fixed orders and serial execution. Times are in the model's unit\n"
     "(milliseconds when derived from dimensions).",
     NULL, "spvmGDBCPFKjoh", "      --json              the plans as JSON\n"},
#ifdef PS_HAVE_VIZ
    {"draw", "pipesched draw [--kind timeline|overlap|dag] -o FILE.svg [OPTIONS]",
     "Draws as SVG (Graphviz). timeline: the simulated schedule, one lane per rank, a box\n"
     "per action, the bubbles in grey; large timelines are cut to stay small and the\n"
     "title says so. overlap: the fused pair that `pipesched plan` shows (--fstage,\n"
     "--bstage, --method) on the compute and communication streams, the exposed\n"
     "communication in red; needs a MoE model in the --config. dag: the dependencies of\n"
     "a small schedule (at most 400 actions) with its critical path. -o - writes to\n"
     "stdout.",
     NULL, "kspvmGDBcMLCPFKoh", NULL},
#endif
    {"demo", "pipesched demo",
     "Shows GPipe, 1F1B and interleaved 1F1B on 4 ranks with 8 micro-batches, timed,\n"
     "with their metrics.",
     NULL, "h", NULL},
};

static void usage_main(FILE *f)
{
    fprintf(f, "usage: pipesched COMMAND [OPTIONS]\n\n"
               "Pipeline-parallel schedule engine: generate, validate and simulate schedules.\n\n"
               "commands:\n"
               "  list                 schedule families, aliases and constraints\n"
               "  generate             print a schedule (table, JSON, PyTorch CSV)\n"
               "  simulate             simulate a schedule: makespan, bubbles, memory\n"
               "  check FILE.csv       validate and simulate a PyTorch-style CSV table\n"
#ifdef PS_HAVE_EXEC
               "  run                  execute a schedule with emulated compute; measured vs "
               "simulated\n"
#endif
               "  plan                 overlap plan of a fused pair (MoE all-to-all)\n"
#ifdef PS_HAVE_VIZ
               "  draw                 SVG: timeline, overlap plan or dependency graph\n"
#endif
               "  demo                 a short tour\n"
               "  help [COMMAND]       help on a command\n\n"
               "exit status: 0 ok, 1 invalid schedule, 2 usage or input error, 3 internal "
               "error\n");
}

/* Prints the help of cmd; returns -1 if there is no such command. */
static int usage_cmd(FILE *f, const char *cmd)
{
    for (size_t i = 0; i < sizeof commands_help / sizeof commands_help[0]; i++) {
        if (strcmp(cmd, commands_help[i].name))
            continue;
        fprintf(f, "usage: %s\n\n%s\n\noptions:\n", commands_help[i].usage, commands_help[i].about);
        for (size_t k = 0; k < sizeof option_help / sizeof option_help[0]; k++) {
            if (!strchr(commands_help[i].options, option_help[k].letter))
                continue;
            const char *text = option_help[k].text;
            if (!text)
                text =
                    option_help[k].letter == 'f' ? commands_help[i].format : commands_help[i].json;
            fputs(text, f);
        }
        return 0;
    }
    return -1;
}

/* Long names by option letter, for messages. */
static const char *opt_name(int c)
{
    switch (c) {
    case 's':
        return "--schedule";
    case 'p':
        return "--pp";
    case 'v':
        return "--vpp";
    case 'm':
        return "--microbatches";
    case 'G':
        return "--group-size";
    case 'c':
        return "--costs";
    case 'C':
        return "--config";
    case 'M':
        return "--memory";
    case 'L':
        return "--mem-limit";
    case 'f':
        return "--format";
    case 'o':
        return "--output";
    case 'T':
        return "--trace";
    case 'S':
        return "--time-scale";
    case 'D':
        return "--extra-warmup";
    case 'B':
        return "--split-backward";
    case 'P':
        return "--method";
    case 'F':
        return "--fstage";
    case 'K':
        return "--bstage";
    case 'k':
        return "--kind";
    case 't':
        return "--timed";
    case 'j':
        return "--json";
    default:
        return "--help";
    }
}

/* Parses argv for command cmd, which accepts the options its help lists. */
static int parse_opts(int argc, char **argv, opts *o, const char *cmd, int want_file)
{
    const char *allowed = "";
    for (size_t i = 0; i < sizeof commands_help / sizeof commands_help[0]; i++)
        if (!strcmp(cmd, commands_help[i].name))
            allowed = commands_help[i].options;
    static const struct option longopts[] = {
        {"schedule", required_argument, NULL, 's'},
        {"pp", required_argument, NULL, 'p'},
        {"vpp", required_argument, NULL, 'v'},
        {"microbatches", required_argument, NULL, 'm'},
        {"group-size", required_argument, NULL, 'G'},
        {"costs", required_argument, NULL, 'c'},
        {"config", required_argument, NULL, 'C'},
        {"memory", required_argument, NULL, 'M'},
        {"mem-limit", required_argument, NULL, 'L'},
        {"format", required_argument, NULL, 'f'},
        {"output", required_argument, NULL, 'o'},
        {"trace", required_argument, NULL, 'T'},
        {"time-scale", required_argument, NULL, 'S'},
        {"extra-warmup", required_argument, NULL, 'D'},
        {"split-backward", no_argument, NULL, 'B'},
        {"method", required_argument, NULL, 'P'},
        {"fstage", required_argument, NULL, 'F'},
        {"bstage", required_argument, NULL, 'K'},
        {"kind", required_argument, NULL, 'k'},
        {"timed", no_argument, NULL, 't'},
        {"json", no_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    memset(o, 0, sizeof *o);
    o->pp = o->vpp = o->m = o->group = -1;
    o->extra_warmup = o->fstage = o->bstage = -1;
    o->method = -1;
    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, ":s:p:v:m:f:o:h", longopts, NULL)) != -1) {
        if (c != ':' && c != '?' && !strchr(allowed, c)) {
            fprintf(stderr, "pipesched: %s does not take %s (see pipesched %s --help)\n", cmd,
                    opt_name(c), cmd);
            return -1;
        }
        switch (c) {
        case 's':
            o->schedule = optarg;
            break;
        case 'p':
            if (cli_parse_int("--pp", optarg, 1, PS_MAX_PP, &o->pp))
                return -1;
            break;
        case 'v':
            if (cli_parse_int("--vpp", optarg, 1, PS_MAX_VPP, &o->vpp))
                return -1;
            break;
        case 'm':
            if (cli_parse_int("--microbatches", optarg, 1, PS_MAX_MICROBATCHES, &o->m))
                return -1;
            break;
        case 'G':
            if (cli_parse_int("--group-size", optarg, 1, PS_MAX_MICROBATCHES, &o->group))
                return -1;
            break;
        case 'c':
            o->costs = optarg;
            break;
        case 'C':
            o->config = optarg;
            break;
        case 'M':
            o->memory = optarg;
            break;
        case 'L':
            o->mem_limit = optarg;
            break;
        case 'f':
            o->format = optarg;
            break;
        case 'o':
            o->output = optarg;
            break;
        case 'T':
            o->trace = optarg;
            break;
        case 'S':
            o->time_scale = optarg;
            break;
        case 'D':
            if (cli_parse_int("--extra-warmup", optarg, 0, PS_MAX_MICROBATCHES, &o->extra_warmup))
                return -1;
            break;
        case 'B':
            o->split_backward = 1;
            break;
        case 'P':
            if ((o->method = cli_parse_method(optarg)) < 0)
                return -1;
            break;
        case 'F':
            if (cli_parse_int("--fstage", optarg, 0, PS_MAX_STAGES - 1, &o->fstage))
                return -1;
            break;
        case 'K':
            if (cli_parse_int("--bstage", optarg, 0, PS_MAX_STAGES - 1, &o->bstage))
                return -1;
            break;
        case 'k':
            o->kind = optarg;
            break;
        case 't':
            o->timed = 1;
            break;
        case 'j':
            o->json = 1;
            break;
        case 'h':
            o->help = 1;
            break;
        case ':':
            fprintf(stderr, "pipesched: %s needs a value\n", argv[optind - 1]);
            return -1;
        default:
            if (optopt)
                fprintf(stderr, "pipesched: unknown option -%c\n", optopt);
            else
                fprintf(stderr, "pipesched: unknown option %s\n", argv[optind - 1]);
            return -1;
        }
    }
    if (want_file && optind < argc)
        o->file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "pipesched: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    return 0;
}

/* Builds the problem: defaults, then the config file, then the flags. */
static int build_problem(const opts *o, ps_problem **out)
{
    ps_problem *pb;
    int rc = ps_problem_new(&pb, NULL);
    if (rc) {
        fprintf(stderr, "pipesched: %s\n", ps_strerror(rc));
        return rc;
    }
    if (o->config) {
        char *text;
        size_t len;
        if (cli_read_file(o->config, CONFIG_LIMIT, &text, &len)) {
            ps_problem_free(pb);
            return PS_EINVAL;
        }
        rc = ps_problem_load_json(pb, text, len);
        free(text);
        if (rc) {
            fprintf(stderr, "pipesched: %s: %s\n", o->config, ps_problem_last_error(pb));
            ps_problem_free(pb);
            return rc;
        }
    }
    if (o->schedule && (rc = ps_problem_set_schedule(pb, o->schedule)))
        goto fail;
    if (o->pp > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_PP, o->pp)))
        goto fail;
    if (o->vpp > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_VPP, o->vpp)))
        goto fail;
    if (o->m > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, o->m)))
        goto fail;
    if (o->group > 0 && (rc = ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, o->group)))
        goto fail;
    if (o->extra_warmup >= 0 &&
        (rc = ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, o->extra_warmup)))
        goto fail;
    if (o->split_backward && (rc = ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 1)))
        goto fail;
    if (o->costs && (rc = ps_problem_set_costs_string(pb, o->costs)))
        goto fail;
    if (o->memory && (rc = ps_problem_set_memory_string(pb, o->memory)))
        goto fail;
    if (o->mem_limit) {
        char *end;
        double x = strtod(o->mem_limit, &end);
        if (end == o->mem_limit || *end ||
            strspn(o->mem_limit, "0123456789.eE+-") != strlen(o->mem_limit)) {
            fprintf(stderr, "pipesched: --mem-limit needs a decimal number; got \"%s\"\n",
                    o->mem_limit);
            ps_problem_free(pb);
            return PS_EINVAL;
        }
        if (ps_problem_set_mem_limit(pb, x)) {
            fprintf(stderr, "pipesched: --mem-limit must be in [0, %g] (0 = none); got %s\n",
                    PS_MAX_COST, o->mem_limit);
            ps_problem_free(pb);
            return PS_ERANGE;
        }
    }
    *out = pb;
    return 0;
fail:
    fprintf(stderr, "pipesched: %s\n", ps_problem_last_error(pb));
    ps_problem_free(pb);
    return rc;
}

static int parse_format(const char *name, ps_format *fmt)
{
    static const struct {
        const char *name;
        ps_format fmt;
    } tab[] = {{"table", PS_FORMAT_TABLE},
               {"json", PS_FORMAT_JSON},
               {"csv", PS_FORMAT_CSV},
               {"csv-comms", PS_FORMAT_CSV_COMMS}};
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(name, tab[i].name)) {
            *fmt = tab[i].fmt;
            return 0;
        }
    fprintf(stderr, "pipesched: unknown format \"%s\" (table, json, csv, csv-comms)\n", name);
    return -1;
}

/* Writes through ps_export to path (NULL = stdout). */
static int emit(const ps_schedule *s, const ps_sim *sim, ps_format fmt, const char *path)
{
    FILE *f = path ? fopen(path, "wb") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s\n", path);
        return EXIT_USAGE;
    }
    int rc = ps_export(s, sim, fmt, cli_write_file, f);
    int cerr = path ? fclose(f) : fflush(f);
    if (rc || cerr) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", path ? path : "stdout",
                rc ? ps_strerror(rc) : "I/O error");
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

static void print_metrics(FILE *f, const ps_schedule *s, const ps_sim *sim)
{
    ps_metrics m;
    ps_sim_metrics(sim, &m);
    fprintf(f, "schedule %s: pp=%d vpp=%d stages=%d microbatches=%d actions=%zu\n",
            ps_schedule_family(s), ps_schedule_pp(s), ps_schedule_vpp(s), ps_schedule_num_stages(s),
            ps_schedule_microbatches(s), ps_schedule_total_actions(s));
    fprintf(f, "makespan %g  bubble %g  bubble_ratio %.4f\n", m.makespan, m.bubble, m.bubble_ratio);
    fprintf(f, "%6s %12s %12s %12s %8s %10s %7s\n", "rank", "busy", "span", "idle", "peak_act",
            "peak_mem", "params");
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(sim, r, &rm);
        fprintf(f, "%6d %12g %12g %12g %8lld %10g %7d\n", r, rm.busy, rm.span, rm.idle,
                (long long)rm.peak_activations, rm.peak_memory, rm.param_copies);
    }
    ps_comm_metrics c;
    if (ps_sim_comm(sim, &c) == 0) {
        static const char *const phase[PS_PHASE_COUNT] = {"warm-up", "steady", "cool-down",
                                                          "whole"};
        fprintf(f, "EP all-to-all (summed over ranks): %10s %12s %9s\n", "total", "exposed",
                "overlap");
        for (int ph = 0; ph < PS_PHASE_COUNT; ph++)
            fprintf(f, "  %-32s %10g %12g %8.2f%%\n", phase[ph], c.total[ph], c.exposed[ph],
                    100.0 * c.overlap[ph]);
    }
}

/* Prints "pipesched: [what: ]message" and returns the exit status of rc. */
static int report(const char *what, int rc, const char *msg)
{
    fprintf(stderr, "pipesched: %s%s%s\n", what ? what : "", what ? ": " : "",
            msg && *msg ? msg : ps_strerror(rc));
    return cli_exit_code(rc);
}

static int cmd_list(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o, "list", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "list");
        return EXIT_OK;
    }
    size_t n = ps_family_count();
    if (o.json) {
        printf("[");
        for (size_t i = 0; i < n; i++) {
            ps_family_info fi;
            ps_family_get(i, &fi);
            printf("%s\n{\"name\":\"%s\",\"aliases\":\"%s\",\"placement\":\"%s\","
                   "\"description\":\"%s\",\"constraints\":\"%s\"}",
                   i ? "," : "", fi.name, fi.aliases, fi.placement, fi.description, fi.constraints);
        }
        printf("\n]\n");
        return EXIT_OK;
    }
    for (size_t i = 0; i < n; i++) {
        ps_family_info fi;
        ps_family_get(i, &fi);
        printf("%-20s %s\n", fi.name, fi.description);
        printf("%-20s aliases: %s\n", "", fi.aliases);
        printf("%-20s placement: %s; constraints: %s\n\n", "", fi.placement, fi.constraints);
    }
    return EXIT_OK;
}

/* Generate + validate into *out. */
static int make_schedule(const ps_problem *pb, ps_schedule **out)
{
    ps_schedule *s;
    int rc = ps_schedule_new(&s, NULL);
    if (rc)
        return report("schedule", rc, NULL);
    rc = ps_schedule_generate(s, pb);
    if (rc) {
        int ex = report(NULL, rc, ps_schedule_last_error(s));
        ps_schedule_free(s);
        return ex;
    }
    rc = ps_schedule_validate(s);
    if (rc) {
        int ex = report("validation", rc, ps_schedule_last_error(s));
        ps_schedule_free(s);
        return ex;
    }
    *out = s;
    return EXIT_OK;
}

/* Simulates s; failures are reported as "pipesched: [what: ]message". */
static int run_sim(const ps_schedule *s, const ps_problem *pb, const char *what, ps_sim **out)
{
    ps_sim *sim;
    int rc = ps_sim_new(&sim, NULL);
    if (rc)
        return report("simulate", rc, NULL);
    rc = ps_sim_run(sim, s, pb);
    if (rc) {
        int ex = report(what, rc, ps_sim_last_error(sim));
        ps_sim_free(sim);
        return ex;
    }
    *out = sim;
    return EXIT_OK;
}

static int cmd_generate(int argc, char **argv)
{
    opts o;
    ps_format fmt = PS_FORMAT_TABLE;
    if (parse_opts(argc, argv, &o, "generate", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "generate");
        return EXIT_OK;
    }
    if (o.format && parse_format(o.format, &fmt))
        return EXIT_USAGE;
    if (o.timed && fmt != PS_FORMAT_TABLE && fmt != PS_FORMAT_JSON) {
        fprintf(stderr, "pipesched: --timed applies to the table and json formats\n");
        return EXIT_USAGE;
    }
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    int rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = make_schedule(pb, &s);
    if (ex)
        goto out;
    if (fmt == PS_FORMAT_CSV_COMMS && (rc = ps_schedule_lower(s))) {
        ex = report("lower", rc, ps_schedule_last_error(s));
        goto out;
    }
    if (o.timed) {
        if ((ex = run_sim(s, pb, NULL, &sim)))
            goto out;
        if (fmt == PS_FORMAT_TABLE)
            fmt = PS_FORMAT_TABLE_TIMED;
    }
    ex = emit(s, sim, fmt, o.output);
out:
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}

static int sim_outputs(const opts *o, const ps_schedule *s, const ps_sim *sim, int has_fmt,
                       ps_format fmt)
{
    int ex = EXIT_OK;
    if (o->trace && (ex = emit(s, sim, PS_FORMAT_TRACE, o->trace)))
        return ex;
    if (has_fmt)
        return emit(s, sim, fmt == PS_FORMAT_TABLE ? PS_FORMAT_TABLE_TIMED : fmt, o->output);
    if (o->json)
        return emit(s, sim, PS_FORMAT_METRICS, o->output);
    FILE *f = o->output ? fopen(o->output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s\n", o->output);
        return EXIT_USAGE;
    }
    print_metrics(f, s, sim);
    if (o->output && fclose(f)) {
        fprintf(stderr, "pipesched: writing %s failed\n", o->output);
        return EXIT_INTERNAL;
    }
    return EXIT_OK;
}

static int cmd_simulate(int argc, char **argv)
{
    opts o;
    ps_format fmt = PS_FORMAT_TABLE;
    if (parse_opts(argc, argv, &o, "simulate", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "simulate");
        return EXIT_OK;
    }
    if (o.format && parse_format(o.format, &fmt))
        return EXIT_USAGE;
    if (o.format && (fmt == PS_FORMAT_CSV || fmt == PS_FORMAT_CSV_COMMS)) {
        fprintf(stderr, "pipesched: simulate prints table or json; use generate for CSV\n");
        return EXIT_USAGE;
    }
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    int rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = make_schedule(pb, &s);
    if (!ex)
        ex = run_sim(s, pb, NULL, &sim);
    if (!ex)
        ex = sim_outputs(&o, s, sim, o.format != NULL, fmt);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}

static int cmd_check(int argc, char **argv)
{
    opts o;
    ps_format fmt = PS_FORMAT_TABLE;
    if (parse_opts(argc, argv, &o, "check", 1))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "check");
        return EXIT_OK;
    }
    if (!o.file) {
        fprintf(stderr, "pipesched: check needs a CSV file (try pipesched check --help)\n");
        return EXIT_USAGE;
    }
    if (o.format && parse_format(o.format, &fmt))
        return EXIT_USAGE;
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    char *text = NULL;
    size_t len;
    int ex = EXIT_OK, rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    if (cli_read_file(o.file, CSV_LIMIT, &text, &len)) {
        ex = EXIT_USAGE;
        goto out;
    }
    if ((rc = ps_schedule_new(&s, NULL))) {
        ex = report("check", rc, NULL);
        goto out;
    }
    rc = ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, o.m > 0 ? (int)o.m : 0);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", o.file, ps_schedule_last_error(s));
        ex = cli_exit_code(rc);
        goto out;
    }
    rc = ps_schedule_validate(s);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", o.file, ps_schedule_last_error(s));
        ex = cli_exit_code(rc);
        goto out;
    }
    if (fmt == PS_FORMAT_CSV_COMMS && (rc = ps_schedule_lower(s))) {
        ex = report("lower", rc, ps_schedule_last_error(s));
        goto out;
    }
    if ((ex = run_sim(s, pb, o.file, &sim)))
        goto out;
    if (!o.format && !o.json)
        fprintf(stderr, "%s: valid\n", o.file);
    if (o.format && (fmt == PS_FORMAT_CSV || fmt == PS_FORMAT_CSV_COMMS))
        ex = emit(s, sim, fmt, o.output);
    else
        ex = sim_outputs(&o, s, sim, o.format != NULL, fmt);
out:
    free(text);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}

#ifdef PS_HAVE_EXEC
/* A growable text buffer behind ps_write_fn. */
typedef struct membuf {
    char *p;
    size_t n, cap;
} membuf;

static int membuf_write(void *ud, const char *data, size_t len)
{
    membuf *b = ud;
    if (b->n + len + 1 > b->cap) {
        size_t cap = (b->n + len + 1) * 2;
        char *p = realloc(b->p, cap);
        if (!p)
            return -1;
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, data, len);
    b->n += len;
    b->p[b->n] = 0;
    return 0;
}

/* The metrics JSON of sim (simulate --json) without its final newline, into b. */
static int metrics_json(const ps_schedule *s, const ps_sim *sim, membuf *b)
{
    b->n = 0;
    int rc = ps_export(s, sim, PS_FORMAT_METRICS, membuf_write, b);
    if (rc)
        return report("run", rc, NULL);
    while (b->n && b->p[b->n - 1] == '\n')
        b->p[--b->n] = 0;
    return EXIT_OK;
}

/* Runs s on a private loop with emulated compute; the measured timeline ends up in sim. */
static int execute(const ps_schedule *s, const ps_problem *pb, double scale, ps_sim *sim)
{
    uv_loop_t loop;
    if (uv_loop_init(&loop)) {
        fprintf(stderr, "pipesched: run: cannot create an event loop\n");
        return EXIT_INTERNAL;
    }
    ps_exec_config cfg;
    ps_exec_config_init(&cfg);
    cfg.emulate = 1;
    cfg.problem = pb;
    cfg.time_scale = scale;
    ps_exec *x;
    int ex = EXIT_OK, rc = ps_exec_new(&x, &loop, s, &cfg, NULL);
    if (rc) {
        ex = report("run", rc, NULL);
        goto out;
    }
    if ((rc = ps_exec_start(x)) == 0) {
        uv_run(&loop, UV_RUN_DEFAULT);
        rc = ps_exec_status(x);
    }
    if (rc)
        ex = report("run", rc, ps_exec_last_error(x));
    else if ((rc = ps_exec_measured(x, scale, sim)))
        ex = report("run", rc, NULL);
    ps_exec_close(x, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
out:
    if (uv_loop_close(&loop) && !ex) {
        fprintf(stderr, "pipesched: run: the event loop still has handles\n");
        ex = EXIT_INTERNAL;
    }
    return ex;
}

static void print_comparison(FILE *f, const ps_schedule *s, const ps_metrics *sm,
                             const ps_rank_metrics *sr, const ps_sim *measured, double scale)
{
    ps_metrics mm;
    ps_sim_metrics(measured, &mm);
    fprintf(f, "schedule %s: pp=%d vpp=%d stages=%d microbatches=%d actions=%zu, time scale %g s\n",
            ps_schedule_family(s), ps_schedule_pp(s), ps_schedule_vpp(s), ps_schedule_num_stages(s),
            ps_schedule_microbatches(s), ps_schedule_total_actions(s), scale);
    fprintf(f, "%-14s %12s %12s\n", "", "simulated", "measured");
    fprintf(f, "%-14s %12g %12g\n", "makespan", sm->makespan, mm.makespan);
    fprintf(f, "%-14s %12g %12g\n", "bubble", sm->bubble, mm.bubble);
    fprintf(f, "%-14s %12.4f %12.4f\n", "bubble_ratio", sm->bubble_ratio, mm.bubble_ratio);
    fprintf(f, "makespan error %.3f%%\n", 100 * fabs(mm.makespan - sm->makespan) / sm->makespan);
    fprintf(f, "%6s %12s %12s %12s %12s\n", "rank", "busy(sim)", "busy(run)", "idle(sim)",
            "idle(run)");
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(measured, r, &rm);
        fprintf(f, "%6d %12g %12g %12g %12g\n", r, sr[r].busy, rm.busy, sr[r].idle, rm.idle);
    }
}

static int cmd_run(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o, "run", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "run");
        return EXIT_OK;
    }
    double scale = 1e-3;
    if (o.time_scale) {
        char *end;
        scale = strtod(o.time_scale, &end);
        if (end == o.time_scale || *end || !(scale > 0) || scale > 10) {
            fprintf(stderr,
                    "pipesched: --time-scale needs seconds per cost unit in (0, 10]; "
                    "got \"%s\"\n",
                    o.time_scale);
            return EXIT_USAGE;
        }
    }
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    ps_rank_metrics *sr = NULL;
    membuf simj = {NULL, 0, 0}, runj = {NULL, 0, 0};
    int rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = make_schedule(pb, &s);
    if (!ex)
        ex = run_sim(s, pb, NULL, &sim);
    if (ex)
        goto out;
    ps_metrics sm;
    ps_sim_metrics(sim, &sm);
    sr = calloc((size_t)ps_schedule_pp(s), sizeof *sr);
    if (!sr) {
        ex = report("run", PS_ENOMEM, NULL);
        goto out;
    }
    for (int r = 0; r < ps_schedule_pp(s); r++)
        ps_sim_rank_metrics(sim, r, &sr[r]);
    if (o.json && (ex = metrics_json(s, sim, &simj)))
        goto out;
    if ((ex = execute(s, pb, scale, sim)))
        goto out;
    if (o.trace && (ex = emit(s, sim, PS_FORMAT_TRACE, o.trace)))
        goto out;
    if (o.json && (ex = metrics_json(s, sim, &runj)))
        goto out;
    FILE *f = o.output ? fopen(o.output, "w") : stdout;
    if (!f) {
        fprintf(stderr, "pipesched: cannot write %s\n", o.output);
        ex = EXIT_USAGE;
        goto out;
    }
    if (o.json) {
        ps_metrics mm;
        ps_sim_metrics(sim, &mm);
        fprintf(f, "{\"simulated\": %s,\n \"measured\": %s,\n \"makespan_error\": %.6g}\n", simj.p,
                runj.p, fabs(mm.makespan - sm.makespan) / sm.makespan);
    } else {
        print_comparison(f, s, &sm, sr, sim, scale);
    }
    if (o.output && fclose(f)) {
        fprintf(stderr, "pipesched: writing %s failed\n", o.output);
        ex = EXIT_INTERNAL;
    }
out:
    free(simj.p);
    free(runj.p);
    free(sr);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}
#endif

static int cmd_plan(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o, "plan", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "plan");
        return EXIT_OK;
    }
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    int rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = make_schedule(pb, &s);
    FILE *f = stdout;
    if (!ex && o.output && !(f = fopen(o.output, "w"))) {
        fprintf(stderr, "pipesched: cannot write %s\n", o.output);
        ex = EXIT_USAGE;
    }
    if (!ex) {
        ex = cli_plan(f, pb, s, o.method < 0 ? PS_PLANNER_ADAPTIVE : o.method, (int)o.fstage,
                      (int)o.bstage, o.json);
        if (f != stdout && fclose(f) && !ex) {
            fprintf(stderr, "pipesched: cannot write %s\n", o.output);
            ex = EXIT_INTERNAL;
        }
    }
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}

#ifdef PS_HAVE_VIZ
/* Output of `draw`: the file is created on the first write, so that a failed drawing leaves
 * no file behind. */
typedef struct draw_out {
    const char *path;
    FILE *f;
    int open_errno; /* fopen failed with this */
} draw_out;

static int draw_write(void *ud, const char *data, size_t len)
{
    draw_out *d = ud;
    if (!d->f && !(d->f = strcmp(d->path, "-") ? fopen(d->path, "wb") : stdout)) {
        d->open_errno = errno ? errno : EIO;
        return -1;
    }
    return fwrite(data, 1, len, d->f) == len ? 0 : -1;
}

/* Reports a failed drawing: an output file that cannot be created is a usage error. */
static int draw_report(int rc, const draw_out *out, const ps_viz *viz)
{
    if (rc == PS_EIO && out->open_errno) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", out->path, strerror(out->open_errno));
        return EXIT_USAGE;
    }
    return report("draw", rc, ps_viz_last_error(viz));
}

/* `draw --kind overlap`: plans one fused pair of s's model stages and draws it. */
static int draw_overlap(const opts *o, const ps_problem *pb, const ps_schedule *s, ps_viz *viz,
                        draw_out *out)
{
    int stages = ps_schedule_num_stages(s) / ps_schedule_param_copies(s);
    int method = o->method < 0 ? PS_PLANNER_ADAPTIVE : o->method;
    int fstage = (int)o->fstage, bstage = (int)o->bstage;
    if (fstage >= stages || bstage >= stages) {
        fprintf(stderr, "pipesched: --%s %d is out of range: the schedule has %d model stages\n",
                fstage >= stages ? "fstage" : "bstage", fstage >= stages ? fstage : bstage, stages);
        return EXIT_USAGE;
    }
    ps_plan *pl;
    int rc = ps_plan_new(&pl, NULL);
    if (rc)
        return report("draw", rc, NULL);
    int ex = EXIT_OK;
    ps_moe_model moe;
    if (ps_problem_get_moe(pb, &moe)) {
        fprintf(stderr, "pipesched: draw --kind overlap needs a MoE model: a config with "
                        "\"model\" and \"cluster\" blocks, or a \"moe\" block (docs/config.md)\n");
        ex = EXIT_USAGE;
        goto out;
    }
    /* The pair `pipesched plan` shows: the busiest stage's forward with its backward. */
    if (fstage < 0)
        fstage = cli_default_stage(pb, stages);
    if (bstage < 0)
        bstage = fstage;
    if ((rc = ps_plan_step(pl, pb, method, stages, fstage, PS_B, bstage))) {
        ex = report("draw", rc, ps_plan_last_error(pl));
        goto out;
    }
    const ps_plan_op *ops;
    size_t n = ps_plan_ops(pl, &ops);
    ps_plan_stats st;
    ps_plan_stats_get(pl, &st);
    char title[256];
    snprintf(title, sizeof title,
             "%s: forward of model stage %d fused with the backward of stage %d, planner %s",
             ps_schedule_family(s), fstage, bstage, ps_planner_name(method));
    if ((rc = ps_viz_overlap_svg(viz, ops, n, &st, title, draw_write, out)))
        ex = draw_report(rc, out, viz);
out:
    ps_plan_free(pl);
    return ex;
}

static int cmd_draw(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o, "draw", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "draw");
        return EXIT_OK;
    }
    const char *kind = o.kind ? o.kind : "timeline";
    if (strcmp(kind, "timeline") && strcmp(kind, "overlap") && strcmp(kind, "dag")) {
        fprintf(stderr, "pipesched: unknown kind \"%s\" (timeline, overlap, dag)\n", kind);
        return EXIT_USAGE;
    }
    if (!o.output) {
        fprintf(stderr, "pipesched: draw needs -o FILE.svg (- for stdout)\n");
        return EXIT_USAGE;
    }
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    ps_viz *viz = NULL;
    draw_out out = {o.output, NULL, 0};
    int rc = build_problem(&o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = make_schedule(pb, &s);
    if (ex)
        goto out;
    if ((rc = ps_viz_new(&viz, NULL, NULL))) {
        ex = report("draw", rc, NULL);
        goto out;
    }
    if (!strcmp(kind, "overlap")) {
        ex = draw_overlap(&o, pb, s, viz, &out);
    } else if (!(ex = run_sim(s, pb, NULL, &sim))) {
        rc = !strcmp(kind, "dag") ? ps_viz_dag_svg(viz, s, sim, draw_write, &out)
                                  : ps_viz_timeline_svg(viz, s, sim, draw_write, &out);
        if (rc)
            ex = draw_report(rc, &out, viz);
    }
out:
    if (out.f && out.f != stdout && fclose(out.f) && !ex) {
        fprintf(stderr, "pipesched: writing %s failed\n", o.output);
        ex = EXIT_INTERNAL;
    }
    ps_viz_free(viz);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}
#endif

#ifdef PS_HAVE_VIZ
/* Closes a drawing's file; on failure removes it and returns the exit status. */
static int demo_close(draw_out *out, int ex)
{
    if (out->f && fclose(out->f) && !ex) {
        fprintf(stderr, "pipesched: writing %s failed\n", out->path);
        ex = EXIT_INTERNAL;
    }
    out->f = NULL;
    if (ex)
        remove(out->path);
    return ex;
}

/* The demo's drawings, in the current directory: the Pangu example's timeline under Adaptive
 * Pipe and the overlap plan of one of its fused pairs. */
static int demo_svgs(void)
{
    static const char *const tl = "pipesched-demo-timeline.svg", *const ov =
                                                                     "pipesched-demo-overlap.svg";
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    ps_viz *viz = NULL;
    draw_out a = {tl, NULL, 0}, b = {ov, NULL, 0};
    int ex = EXIT_INTERNAL, rc;
    if (ps_problem_new(&pb, NULL) ||
        ps_problem_load_json(pb, PS_DEMO_PANGU_JSON, strlen(PS_DEMO_PANGU_JSON)))
        goto out;
    if ((ex = make_schedule(pb, &s)) || (ex = run_sim(s, pb, NULL, &sim)))
        goto out;
    if ((rc = ps_viz_new(&viz, NULL, NULL))) {
        ex = report("demo", rc, NULL);
        goto out;
    }
    if ((rc = ps_viz_timeline_svg(viz, s, sim, draw_write, &a)))
        ex = draw_report(rc, &a, viz);
    if ((ex = demo_close(&a, ex)))
        goto out;
    opts o;
    memset(&o, 0, sizeof o);
    o.method = -1;
    o.fstage = o.bstage = -1;
    ex = demo_close(&b, draw_overlap(&o, pb, s, viz, &b));
    if (!ex)
        printf("\nwrote %s (Adaptive Pipe on the Pangu example, every rank's timeline) and\n%s "
               "(one fused pair on the compute and communication streams)\n",
               tl, ov);
out:
    ps_viz_free(viz);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}
#endif

static int demo_one(const char *family, int pp, int vpp, int m)
{
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    int ex = EXIT_INTERNAL;
    if (ps_problem_new(&pb, NULL) || ps_problem_set_schedule(pb, family) ||
        ps_problem_set_int(pb, PS_PARAM_PP, pp) || ps_problem_set_int(pb, PS_PARAM_VPP, vpp) ||
        ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, m))
        goto out;
    if ((ex = make_schedule(pb, &s)) || (ex = run_sim(s, pb, NULL, &sim)))
        goto out;
    printf("== %s, pp=%d vpp=%d m=%d, f=b=w=1 (per chunk), c=0\n", family, pp, vpp, m);
    if ((ex = emit(s, sim, PS_FORMAT_TABLE_TIMED, NULL)))
        goto out;
    print_metrics(stdout, s, sim);
    printf("\n");
out:
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ex;
}

static int cmd_demo(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o, "demo", 0))
        return EXIT_USAGE;
    if (o.help) {
        usage_cmd(stdout, "demo");
        return EXIT_OK;
    }
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
    if (!ex)
        ex = cli_demo_moe(stdout, PS_DEMO_PANGU_JSON, "docs/examples/pangu-ultra-moe-718b.json");
#ifdef PS_HAVE_VIZ
    fflush(stdout);
    if (!ex)
        ex = demo_svgs();
#endif
    return ex;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage_main(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        usage_main(stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "help")) {
        if (argc < 3) {
            usage_main(stdout);
            return EXIT_OK;
        }
        if (usage_cmd(stdout, argv[2])) {
            fprintf(stderr, "pipesched: no command \"%s\" (see pipesched --help)\n", argv[2]);
            return EXIT_USAGE;
        }
        return EXIT_OK;
    }
    if (!strcmp(cmd, "--version")) {
        printf("pipesched %d.%d.%d\n", PS_VERSION_MAJOR, PS_VERSION_MINOR, PS_VERSION_PATCH);
        return EXIT_OK;
    }
    static const struct {
        const char *name;
        int (*fn)(int, char **);
    } cmds[] = {{"list", cmd_list},         {"generate", cmd_generate},
                {"simulate", cmd_simulate}, {"check", cmd_check},
#ifdef PS_HAVE_EXEC
                {"run", cmd_run},
#endif
                {"plan", cmd_plan},
#ifdef PS_HAVE_VIZ
                {"draw", cmd_draw},
#endif
                {"demo", cmd_demo}};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(cmd, cmds[i].name))
            return cmds[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "pipesched: unknown command \"%s\"\n\n", cmd);
    usage_main(stderr);
    return EXIT_USAGE;
}
