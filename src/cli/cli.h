/*
 * The pipesched command-line tool: what its files share.
 *
 * The tool is two tables and the code they drive. options.c declares every option once
 * (names, argument, range, help, the commands that take it, where its value goes); the
 * parser, the help screens and the option list of docs/guide.md all read that table. Each
 * command is declared once, in its own file, as a cli_command; main.c dispatches over the
 * commands that commands.h (written by meson) names, so that a command whose library part
 * is not built (run without libuv, draw without Graphviz) is simply not compiled.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_CLI_H
#define PS_CLI_H

#include <pipesched/balance.h>
#include <pipesched/pipesched.h>

#include <stddef.h>
#include <stdio.h>

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2, EXIT_INTERNAL = 3 };

/* The kinds of `draw --kind`. */
enum { CLI_KIND_TIMELINE, CLI_KIND_OVERLAP, CLI_KIND_DAG };

/* The parsed command line. Every range starts at 0 or above, so -1 marks a number or a choice
 * that was not given; strings not given are NULL and flags 0. */
typedef struct cli_opts {
    const char *schedule, *config, *costs, *memory, *output, *trace;
    const char *mb_weights; /* --mb-weights */
    long long pp, vpp, m, group, extra_warmup, fstage, bstage;
    long long width; /* the timed table's rows, characters */
    double mem_limit, time_scale;
    double from, to;          /* draw's time window */
    int overview;             /* draw's bands */
    int format, method, kind; /* a ps_format, a PS_PLANNER_*, a CLI_KIND_* */
    int split_backward, timed, json, help;
    const char *file; /* the command's operand (check's FILE.csv) */
    /* estimate */
    const char *model, *hardware, *layout, *svg;
    long long gpus, gpus_per_node, tp, cp, ep, etp, gbs, mbs, seq, recompute_layers;
    long long first_layers, last_layers;
    int precision, recompute; /* a ps_precision, a ps_recompute */
    int distributed_optimizer, no_overlap, moe_token_drop;
    int a2a; /* a ps_a2a (estimate --a2a) */
    /* tune */
    const char *tune_fix, *tune_allow, *tune_max, *csv, *tune_gpus, *pareto_svg;
    double mem_reserve;
    long long threads, top, draw;
    int no_prune;
    /* balance data (balance_data.c) */
    const char *samples, *sample_cost;
    long long dp, max_evals;

    /* balance experts (balance_experts.c) */
    const char *load, *synthetic_experts, *from_placement;
    /* estimate and tune: the imbalance (edpb_input.c) */
    const char *expert_load, *synthetic_samples;
    long long devices, nodes, capacity, horizon;
    double theta;

} cli_opts;

typedef enum { CLI_FLAG, CLI_INT, CLI_STRING, CLI_DECIMAL, CLI_CHOICE } cli_arg_type;

/* One accepted word of a choice and the value stored for it; lists end with a NULL name. */
typedef struct cli_choice {
    const char *name;
    int value;
} cli_choice;

/* Bounds of the table, for parse.c's static getopt tables; options.c checks them. */
#define CLI_MAX_OPTIONS 128
#define CLI_MAX_ALIASES 2

/* One option. The range fields apply to the type that names them. */
typedef struct cli_option {
    const char *name;                         /* long name, without "--" */
    char letter;                              /* short letter, 0 if none */
    const char *aliases[CLI_MAX_ALIASES + 1]; /* other long names, NULL-terminated */
    cli_arg_type type;
    size_t offset;             /* of the value in cli_opts */
    long long lo, hi;          /* CLI_INT: [lo, hi] */
    double dlo, dhi;           /* CLI_DECIMAL: [dlo, dhi], or (dlo, dhi] when lo_open */
    int lo_open;               /* CLI_DECIMAL */
    const char *unit;          /* CLI_DECIMAL: what it measures, or NULL (see parse.c) */
    const char *note;          /* CLI_DECIMAL: what a special value means, or NULL */
    const cli_choice *choices; /* CLI_CHOICE */
    const char *noun;          /* CLI_CHOICE: "format" in `unknown format "x"` */
    const char *metavar;       /* the argument in the help, NULL for flags */
    const char *def;           /* the default, for the guide (markdown) */
    const char *commands;      /* the commands that take it, by name; "*": all */
    const char *help;          /* help lines, separated by \n; NULL: per command */
    const char *doc;           /* more for the guide, or NULL */
    int once; /* refused when given twice on the command line (else the last one counts) */
} cli_option;

extern const cli_option cli_options[];
extern const size_t cli_option_count;

/* A command's own help of a shared option (what --json prints differs per command). */
typedef struct cli_option_help {
    const char *option, *help;
} cli_option_help;

typedef struct cli_command {
    const char *name;    /* a subcommand's is both words: "balance data" */
    const char *operand; /* the positional argument it takes ("FILE.csv"), NULL for none */
    const char *summary; /* its line in `pipesched --help` */
    const char *usage, *about;
    cli_option_help option_help[4];
    int (*run)(const cli_opts *o); /* returns the exit status */
    /* Adds to `pipesched demo`, which calls it with the tour's MoE example (the Pangu
     * config, JSON text) after its own part; NULL for most commands. Returns the exit
     * status. */
    int (*demo)(const char *moe_json);
    /* Draws sim's timeline of s as SVG into path ("-": stdout) for another command (estimate
     * --svg), the times in unit ("s"); failures are reported as "pipesched: what: ...", and a
     * failed drawing leaves no file. Only draw sets it, and draw is built with Graphviz alone:
     * cli_find("draw") says whether this build can draw. Returns the exit status. */
    int (*timeline_svg)(const ps_schedule *s, const ps_sim *sim, const char *unit, const char *what,
                        const char *path);
    /* Draws the n labelled points (x[i], y[i]) as an SVG scatter plot into path, with the axis
     * labels and title given (tune --pareto-svg); reported and left as timeline_svg. Only draw
     * sets it. Returns the exit status. */
    int (*scatter_svg)(const double *x, const double *y, const char *const *labels, size_t n,
                       const char *x_label, const char *y_label, const char *title,
                       const char *what, const char *path);
    /* A command made of subcommands (`balance data`, `balance experts`): NULL-terminated, NULL
     * for a plain command. The word after the command names one, which then parses the rest of
     * the line as a command of its own (main.c); option rows name it by both words. The parent
     * itself takes only the options of every command (--help) and has no run. */
    const struct cli_command *const *subcommands;
    /* Called before the command parses its options (tune: under mpirun, the ranks other than
     * 0 fall quiet before they could print a usage error); NULL for most commands. */
    void (*before_parse)(void);
} cli_command;

/* The commands built into this program, each defined in the file of its name, and all of
 * them in the order of `pipesched --help`, NULL-terminated (main.c). */
#include "commands.h"
#define CLI_DECLARE(name) extern const cli_command cli_cmd_##name;
CLI_COMMANDS(CLI_DECLARE)
extern const cli_command *const cli_commands[];
/* main.c: the built command of that name, or NULL. */
const cli_command *cli_find(const char *name);
/* main.c: the subcommand of parent named `word` (its last word: "data"), or NULL. */
const cli_command *cli_find_sub(const cli_command *parent, const char *word);
/* main.c: the last word of a subcommand's name ("data" of "balance data"), the name itself
 * for a plain command. */
const char *cli_sub_word(const cli_command *cmd);
/* main.c: every command that parses options, in the order of `pipesched --help`, a command
 * with subcommands replaced by them, NULL-terminated (the guide's tables). */
const cli_command *const *cli_leaf_commands(void);

/* options.c: whether cmd takes opt. */
int cli_takes(const cli_command *cmd, const cli_option *opt);
/* A configuration file's value of cmd's option name (tune --config): stores arg as the command
 * line would, unless the command line gave the option (flags override the file). 0; -1 when arg
 * is refused (reported as "--name ..."); -2 when cmd has no option name. */
int cli_option_fill(const cli_command *cmd, const char *name, const char *arg, cli_opts *o);
/* options.c: parses argv (argv[0] is the command's name) into *o for cmd. Prints the reason
 * and returns -1 on a usage error. */
int cli_parse(const cli_command *cmd, int argc, char **argv, cli_opts *o);

/* help.c: `pipesched --help`. */
void cli_usage(FILE *f);
/* help.c: `pipesched CMD --help`. */
void cli_help(FILE *f, const cli_command *cmd);
/* help.c: what opt does in cmd: cmd's own help of it, or the option's. */
const char *cli_help_text(const cli_command *cmd, const cli_option *opt);
/* help.c: `pipesched help [COMMAND | --markdown]`; argv[0] is "help". */
int cli_help_main(int argc, char **argv);
/* help.c: the default of opt in cmd as its help prints it ("" when none) into buf. */
void cli_default_for(const cli_command *cmd, const cli_option *opt, char *buf, size_t n);
/* markdown.c: the option list of docs/guide.md. */
void cli_markdown(FILE *f);
/* markdown.c: the keys of a command's configuration file, one row per option row i for which
 * is_key(i) holds: the key, its option, its value as the option's word, the command's default
 * and its help (docs/config.md's tune table: `pipesched help --markdown tune-config`). */
void cli_markdown_keys(FILE *f, const cli_command *cmd, int (*is_key)(size_t i));
/* tune.c: whether option row i is a key of tune --config (the rows tune takes, in force for
 * it, but --config and --help). load_config reads the file by it, the reference lists it. */
int cli_tune_config_key(size_t i);
/* parse.c: whether option row i is the row of its name that cmd takes (two rows may share a
 * name when no command takes both). */
int cli_row_in_force(const cli_command *cmd, size_t i);

/* util.c: reads a whole file (or stdin for "-") of at most limit bytes. Caller frees *data.
 * Prints the reason and returns non-zero on failure. */
int cli_read_file(const char *path, size_t limit, char **data, size_t *len);
/* util.c: strict integer parsing: the whole string, in [lo, hi]. Prints the reason on
 * failure. */
int cli_parse_int(const char *opt, const char *s, long long lo, long long hi, long long *out);
/* util.c: v in JSON, as the shortest of %.15g, %.16g and %.17g that reads back as exactly v
 * (the exporters' rule: no float noise, no lost digits), "null" when not finite; into buf of
 * CLI_NUM_SIZE bytes, which it returns. CLI_NUM(v) gives each use its own buffer, so that
 * several can be arguments of one printf. */
#define CLI_NUM_SIZE 32
const char *cli_num(double v, char *buf);
#define CLI_NUM(v) cli_num((v), (char[CLI_NUM_SIZE]){0})
/* util.c: ps_write_fn over a FILE*. */
int cli_write_file(void *ud, const char *data, size_t len);
/* util.c: maps a library error code to the exit status: 1 validation, 2 input, 3 internal. */
int cli_exit_code(int rc);

/* common.c: prints "pipesched: [what: ]message" (message NULL or empty: ps_strerror(rc)) and
 * returns the exit status of rc. */
int cli_report(const char *what, int rc, const char *msg);
/* The settings that a command line without them takes silently from the defaults (the
 * schedule 1f1b, pp 4, 8 micro-batches): cli_build_problem says which were given neither by
 * a flag nor by the config, and the text outputs print them (cli_print_defaults). */
enum { CLI_DEFAULT_SCHEDULE = 1, CLI_DEFAULT_PP = 2, CLI_DEFAULT_MICROBATCHES = 4 };
/* common.c: builds the problem: the defaults, then the config file, then the flags. Prints
 * the reason and returns a PS_E* code on failure. Caller frees with ps_problem_free.
 * *defaulted (when not NULL) receives the CLI_DEFAULT_* settings taken from the defaults. */
int cli_build_problem(const cli_opts *o, ps_problem **out, unsigned *defaulted);
/* common.c: generates and validates the schedule of pb; returns the exit status. Caller
 * frees *out with ps_schedule_free. */
int cli_make_schedule(const ps_problem *pb, ps_schedule **out);
/* common.c: simulates s; failures are reported as "pipesched: [what: ]message". Returns the
 * exit status; caller frees *out with ps_sim_free. */
int cli_run_sim(const ps_schedule *s, const ps_problem *pb, const char *what, ps_sim **out);
/* common.c: writes s (sim may be NULL) through ps_export to path (NULL: stdout). */
int cli_emit(const ps_schedule *s, const ps_sim *sim, ps_format fmt, const char *path);
/* common.c: the timed table of s (PS_FORMAT_TABLE_TIMED) with rows of at most width characters
 * (width < 0: not given) to path (NULL: stdout), as cli_emit. */
int cli_emit_timed(const ps_schedule *s, const ps_sim *sim, long long width, const char *path);
/* common.c: --width is for the timed table (timed_table set) alone; refuses it elsewhere.
 * Returns the exit status. */
int cli_check_width(const cli_opts *o, int timed_table);
/* common.c: opens path (NULL: stdout) and has emit(arg, cli_write_file, the FILE *)
 * write it; a path that cannot be opened is reported (exit 2), a failed emit or write too
 * (exit 3). Returns the exit status. */
int cli_write_out(const char *path, int (*emit)(const void *arg, ps_write_fn write, void *ud),
                  const void *arg);
/* The handles a command works on: its problem (the defaults, the config file, the flags), the
 * problem's schedule, and the schedule's simulation; NULL where not built. */
typedef struct cli_job {
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
    unsigned defaulted; /* CLI_DEFAULT_* of cli_build_problem */
} cli_job;
/* What cli_job_run simulates: nothing, the run with its timeline, or only its metrics (16 bytes
 * per action less, for the outputs that print no times: ps_sim_keep_timeline). */
enum { CLI_SIM_NONE = 0, CLI_SIM_TIMELINE = 1, CLI_SIM_METRICS = 2 };
/* common.c: generates and validates j->pb's schedule into j->s and, when simulate is set
 * (CLI_SIM_*), simulates it into j->sim. Reports a failure and returns the exit status. */
int cli_job_run(cli_job *j, int simulate);
/* common.c: builds o's problem into *j (which it clears first), then cli_job_run. Returns the
 * exit status; free j with cli_job_free whatever it returns. */
int cli_job_open(cli_job *j, const cli_opts *o, int simulate);
/* common.c: frees what j holds. */
void cli_job_free(cli_job *j);
/* common.c: `--json` asks for JSON, `--format table` (or csv) for something else: the
 * contradiction is refused (exit 2, both named); --json with --format json agree. Returns the
 * exit status. */
int cli_check_json_format(const cli_opts *o);
/* common.c: the line "defaults (not given): -s 1f1b, -p 4, -m 8" of the CLI_DEFAULT_*
 * settings in defaulted, with s's values; nothing when defaulted is 0. */
void cli_print_defaults(FILE *f, const ps_schedule *s, unsigned defaulted);
/* common.c: the metrics as text, as `simulate` prints them, the defaults line after the
 * header. */
void cli_print_metrics(FILE *f, const ps_schedule *s, const ps_sim *sim, unsigned defaulted);
/* common.c: the outputs of `simulate` and `check`: the trace, then the timed schedule in fmt
 * (has_fmt), the metrics JSON (--json) or the metrics text (with the CLI_DEFAULT_* settings
 * in defaulted). Returns the exit status. */
int cli_sim_outputs(const cli_opts *o, const ps_schedule *s, const ps_sim *sim, int has_fmt,
                    ps_format fmt, unsigned defaulted);

/* specs.c: --model (a built-in name or a HuggingFace config.json) into *t, and --hardware (a
 * preset or a hardware file) into *hw. Print the reason; return the exit status. */
struct ps_transformer;
struct ps_hardware;
int cli_load_model(const char *arg, struct ps_transformer *t);
int cli_load_hardware(const char *arg, struct ps_hardware *hw);

/* plan.c: the model stage (of `stages`) with the most MoE layers, the first of them: the
 * typical chunk of the steady phase. */
int cli_default_stage(const ps_problem *pb, int stages);

/* edpb_input.c: the imbalance inputs of estimate and tune (docs/balance.md). */
typedef struct cli_edpb {
    ps_edpb_input in;
    ps_sample *samples;
    ps_expert_trace *trace;
} cli_edpb;
/* Whether any of --samples, --synthetic-samples, --expert-load, --synthetic-experts is given. */
int cli_edpb_wanted(const cli_opts *o);
/* Refuses contradictory options (prints the reason); returns the exit status. */
int cli_edpb_check(const cli_opts *o, const char *cmd);
/* Reads the samples and the trace the options name, for model m and the job t (the synthetic
 * samples are t's gbs samples of t's seq tokens); prints the reason and returns the exit
 * status. Free with cli_edpb_free (also after a failure). */
int cli_edpb_load(const cli_opts *o, const ps_transformer *m, const ps_train *t, cli_edpb *x);
void cli_edpb_free(cli_edpb *x);
/* A routing trace into *out (new; the caller frees it, also after a failure): the synthetic
 * one of spec `synthetic` for m's MoE layers, else the file's (both formats of balance
 * experts --load). Prints the reason (what names a failed allocation) and returns the exit
 * status. */
int cli_expert_trace_read(const char *what, const char *synthetic, const char *file,
                          const ps_transformer *m, ps_expert_trace **out);

#endif
