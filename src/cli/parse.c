/*
 * The parser of pipesched's command lines, driven by the option table (options.c): getopt_long
 * with a table built from the rows, then each value checked against its row's type and range
 * and stored where the row says.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

/* getopt_long returns an option's letter, or for an option without one its row plus this
 * (above every char), so that its return value always leads back to the row. */
#define LONG_ONLY 256

static int val_of(size_t row)
{
    return cli_options[row].letter ? cli_options[row].letter : LONG_ONLY + (int)row;
}

/* The row of a getopt_long return value, or NULL. */
static const cli_option *row_of(int val)
{
    if (val >= LONG_ONLY)
        return val - LONG_ONLY < (int)cli_option_count ? &cli_options[val - LONG_ONLY] : NULL;
    for (size_t i = 0; i < cli_option_count; i++)
        if (cli_options[i].letter && cli_options[i].letter == val)
            return &cli_options[i];
    return NULL;
}

/* Two rows may share a name when no command takes both (draw's --from T, balance experts'
 * --from FILE): the row of that name that cmd takes, or else the first. Whether row i is it. */
static int row_in_force(const cli_command *cmd, size_t i)
{
    size_t first = cli_option_count, taken = cli_option_count;
    for (size_t j = 0; j < cli_option_count; j++) {
        if (strcmp(cli_options[j].name, cli_options[i].name))
            continue;
        if (first == cli_option_count)
            first = j;
        if (taken == cli_option_count && cli_takes(cmd, &cli_options[j]))
            taken = j;
    }
    return i == (taken < cli_option_count ? taken : first);
}

int cli_row_in_force(const cli_command *cmd, size_t i)
{
    return i < cli_option_count && cli_takes(cmd, &cli_options[i]) && row_in_force(cmd, i);
}

/* getopt_long's tables for cmd, from the rows: every name and alias, and the letters. The
 * leading ':' makes a missing value its own return value. */
static struct option longopts[CLI_MAX_OPTIONS * (CLI_MAX_ALIASES + 1) + 1];
static char shortopts[1 + 2 * CLI_MAX_OPTIONS + 1];

static void build_getopt_tables(const cli_command *cmd)
{
    size_t k = 0, n = 0;
    shortopts[n++] = ':';
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *opt = &cli_options[i];
        if (!row_in_force(cmd, i))
            continue;
        int has_arg = opt->type == CLI_FLAG ? no_argument : required_argument;
        longopts[k++] = (struct option){opt->name, has_arg, NULL, val_of(i)};
        for (int a = 0; a < CLI_MAX_ALIASES && opt->aliases[a]; a++)
            longopts[k++] = (struct option){opt->aliases[a], has_arg, NULL, val_of(i)};
        if (opt->letter) {
            shortopts[n++] = opt->letter;
            if (has_arg == required_argument)
                shortopts[n++] = ':';
        }
    }
    longopts[k] = (struct option){NULL, 0, NULL, 0};
    shortopts[n] = 0;
}

/* A decimal as the user wrote it: digits, sign, point and exponent only (strtod alone would
 * also take "inf", "nan", hex and leading blanks). An option with a unit names it with its
 * range on every bad value; the others say what is wrong. */
static int parse_decimal(const cli_option *opt, const char *name, const char *arg, double *out)
{
    char *end;
    double x = strtod(arg, &end);
    int syntax = end != arg && !*end && strspn(arg, "0123456789.eE+-") == strlen(arg);
    int range = syntax && (opt->lo_open ? x > opt->dlo : x >= opt->dlo) && x <= opt->dhi;
    if (range) {
        *out = x;
        return 0;
    }
    char lo = opt->lo_open ? '(' : '[';
    if (opt->unit)
        fprintf(stderr, "pipesched: %s needs %s in %c%g, %g]; got \"%s\"\n", name, opt->unit, lo,
                opt->dlo, opt->dhi, arg);
    else if (!syntax)
        fprintf(stderr, "pipesched: %s needs a decimal number; got \"%s\"\n", name, arg);
    else
        fprintf(stderr, "pipesched: %s must be in %c%g, %g]%s%s%s; got %s\n", name, lo, opt->dlo,
                opt->dhi, opt->note ? " (" : "", opt->note ? opt->note : "", opt->note ? ")" : "",
                arg);
    return -1;
}

static int parse_choice(const cli_option *opt, const char *arg, int *out)
{
    for (const cli_choice *c = opt->choices; c->name; c++)
        if (!strcmp(arg, c->name)) {
            *out = c->value;
            return 0;
        }
    fprintf(stderr, "pipesched: unknown %s \"%s\" (", opt->noun, arg);
    for (const cli_choice *c = opt->choices; c->name; c++)
        fprintf(stderr, "%s%s", c == opt->choices ? "" : ", ", c->name);
    fprintf(stderr, ")\n");
    return -1;
}

/* Stores the value of opt, spelled name on the command line, into o. */
static int store(const cli_option *opt, const char *name, const char *arg, cli_opts *o)
{
    void *at = (char *)o + opt->offset;
    switch (opt->type) {
    case CLI_FLAG:
        *(int *)at = 1;
        return 0;
    case CLI_STRING:
        *(const char **)at = arg;
        return 0;
    case CLI_INT:
        return cli_parse_int(name, arg, opt->lo, opt->hi, at);
    case CLI_DECIMAL:
        return parse_decimal(opt, name, arg, at);
    case CLI_CHOICE:
        return parse_choice(opt, arg, at);
    }
    return -1;
}

/* Nothing given: numbers and choices -1, the rest zero. */
static void init_opts(cli_opts *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < cli_option_count; i++) {
        void *at = (char *)o + cli_options[i].offset;
        if (cli_options[i].type == CLI_INT)
            *(long long *)at = -1;
        else if (cli_options[i].type == CLI_DECIMAL)
            *(double *)at = -1;
        else if (cli_options[i].type == CLI_CHOICE)
            *(int *)at = -1;
    }
}

/* Whether o holds a value of opt (init_opts's "nothing given" differs per type). */
static int given(const cli_option *opt, const cli_opts *o)
{
    const void *at = (const char *)o + opt->offset;
    return opt->type == CLI_FLAG      ? *(const int *)at != 0
           : opt->type == CLI_STRING  ? *(const char *const *)at != NULL
           : opt->type == CLI_INT     ? *(const long long *)at != -1
           : opt->type == CLI_DECIMAL ? *(const double *)at != -1
                                      : *(const int *)at != -1;
}

int cli_option_fill(const cli_command *cmd, const char *name, const char *arg, cli_opts *o)
{
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *opt = &cli_options[i];
        if (strcmp(opt->name, name) || !cli_takes(cmd, opt) || !row_in_force(cmd, i))
            continue;
        if (given(opt, o))
            return 0;
        char flag[64];
        snprintf(flag, sizeof flag, "--%s", name);
        return store(opt, flag, arg, o) ? -1 : 0;
    }
    return -2;
}

/* The options whose long name begins with the n characters of prefix, the aliases of one
 * option (its neighbours in longopts) counted once; printed to f unless f is NULL. */
static int matches(const char *prefix, size_t n, FILE *f)
{
    int hits = 0, last = -1;
    for (const struct option *lo = longopts; n && lo->name; lo++) {
        if (strncmp(lo->name, prefix, n) || lo->val == last)
            continue;
        last = lo->val;
        hits++;
        if (f)
            fprintf(f, " --%s", lo->name);
    }
    return hits;
}

/* getopt_long takes a unique prefix of a long name, and refuses one that fits several options
 * as if it were unknown. The aliases make that likelier (--micro), so this names the options
 * it fits. Returns 0 when arg is not such a prefix. */
static int report_ambiguous(const char *arg)
{
    if (strncmp(arg, "--", 2))
        return 0;
    size_t n = strcspn(arg += 2, "=");
    if (matches(arg, n, NULL) < 2)
        return 0;
    fprintf(stderr, "pipesched: --%.*s is ambiguous:", (int)n, arg);
    matches(arg, n, stderr);
    fprintf(stderr, "\n");
    return 1;
}

/* Says why getopt_long refused argv's current option. */
static void report_bad_option(int c, char **argv)
{
    const cli_option *known = c == '?' ? row_of(optopt) : NULL;
    if (c == ':')
        fprintf(stderr, "pipesched: %s needs a value\n", argv[optind - 1]);
    else if (known) /* a flag written --flag=value */
        fprintf(stderr, "pipesched: --%s takes no value\n", known->name);
    else if (!optopt && report_ambiguous(argv[optind - 1]))
        return;
    else if (optopt)
        fprintf(stderr, "pipesched: unknown option -%c\n", optopt);
    else
        fprintf(stderr, "pipesched: unknown option %s\n", argv[optind - 1]);
}

int cli_parse(const cli_command *cmd, int argc, char **argv, cli_opts *o)
{
    char name[64];
    int c, li;
    build_getopt_tables(cmd);
    init_opts(o);
    optind = 1;
    opterr = 0;
    while ((li = -1, c = getopt_long(argc, argv, shortopts, longopts, &li)) != -1) {
        const cli_option *opt = c == ':' || c == '?' ? NULL : row_of(c);
        if (!opt) {
            report_bad_option(c, argv);
            return -1;
        }
        /* Messages name the option as matched: a short letter by its long name. */
        snprintf(name, sizeof name, "--%s", li >= 0 ? longopts[li].name : opt->name);
        if (!cli_takes(cmd, opt)) {
            fprintf(stderr, "pipesched: %s does not take %s (see pipesched %s --help)\n", cmd->name,
                    name, cmd->name);
            return -1;
        }
        if (opt->once && given(opt, o)) {
            fprintf(stderr,
                    "pipesched: %s is given twice; give all its knobs in one %s, separated by "
                    "commas (%s %s)\n",
                    name, name, name, opt->metavar);
            return -1;
        }
        if (store(opt, name, optarg, o))
            return -1;
    }
    if (cmd->operand && optind < argc)
        o->file = argv[optind++];
    if (optind < argc) {
        fprintf(stderr, "pipesched: unexpected argument \"%s\"\n", argv[optind]);
        return -1;
    }
    return 0;
}
