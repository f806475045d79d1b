/*
 * The help screens of pipesched, printed from the option table and the command declarations:
 * `pipesched --help`, and `pipesched CMD --help` = `pipesched help CMD`, which lists exactly
 * the options that CMD takes, in the table's order.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <string.h>

/* The help column of an option starts here; wider names push it to the next line. */
#define HELP_COLUMN 26

void cli_usage(FILE *f)
{
    fprintf(f, "usage: pipesched COMMAND [OPTIONS]\n\n"
               "Pipeline-parallel schedule engine: generate, validate and simulate schedules.\n\n"
               "commands:\n");
    for (const cli_command *const *c = cli_commands; *c; c++) {
        char name[64];
        int n = snprintf(name, sizeof name, "%s%s%s", (*c)->name, (*c)->operand ? " " : "",
                         (*c)->operand ? (*c)->operand : "");
        for (const cli_command *const *s = (*c)->subcommands; s && *s; s++)
            if (n > 0 && (size_t)n < sizeof name)
                n += snprintf(name + n, sizeof name - (size_t)n, "%c%s",
                              s == (*c)->subcommands ? ' ' : '|', cli_sub_word(*s));
        fprintf(f, "  %-20s %s\n", name, (*c)->summary);
    }
    fprintf(f, "  %-20s %s\n\n", "help [COMMAND]", "help on a command");
    fprintf(f, "exit status: 0 ok, 1 invalid schedule, 2 usage or input error, 3 internal error\n");
}

const char *cli_help_text(const cli_command *cmd, const cli_option *opt)
{
    for (size_t i = 0; i < sizeof cmd->option_help / sizeof cmd->option_help[0]; i++)
        if (cmd->option_help[i].option && !strcmp(cmd->option_help[i].option, opt->name))
            return cmd->option_help[i].help;
    return opt->help;
}

/* Prints text's lines, the first after `used` columns, the others at the help column. */
static void print_lines(FILE *f, int used, const char *text)
{
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        fprintf(f, "%*s%.*s\n", HELP_COLUMN - used, "", (int)n, p);
        used = 0;
        p += n + (p[n] == '\n');
    }
}

/* The default of opt in cmd, from the row's `def` (markdown for the guide): its segments
 * are separated by "; ", and one that starts "COMMAND: " is that command's own; backticks
 * are dropped. Writes "" when there is none for cmd. */
void cli_default_for(const cli_command *cmd, const cli_option *opt, char *buf, size_t n)
{
    const char *pick = NULL, *p = opt->def;
    size_t len = 0, k = 0;
    while (p && *p) {
        const char *end = strstr(p, "; ");
        size_t seg = end ? (size_t)(end - p) : strlen(p);
        size_t word = strcspn(p, ": ;");
        char name[32];
        snprintf(name, sizeof name, "%.*s", (int)(word < sizeof name ? word : 0), p);
        if (word < seg && p[word] == ':' && cli_find(name)) {
            if (!strcmp(name, cmd->name)) {
                pick = p + word + 2;
                len = seg - word - 2;
                break;
            }
        } else if (!pick) {
            pick = p;
            len = seg;
        }
        p += seg + (end ? 2 : 0);
    }
    for (size_t i = 0; pick && i < len && k + 1 < n; i++)
        if (pick[i] != '`')
            buf[k++] = pick[i];
    buf[k] = 0;
}

static void print_option(FILE *f, const cli_command *cmd, const cli_option *opt, const char *text)
{
    char left[128];
    int n;
    if (opt->letter)
        n = snprintf(left, sizeof left, "  -%c, --%s", opt->letter, opt->name);
    else
        n = snprintf(left, sizeof left, "      --%s", opt->name);
    if (opt->metavar)
        n += snprintf(left + n, sizeof left - (size_t)n, " %s", opt->metavar);
    fputs(left, f);
    if (n >= HELP_COLUMN - 1) { /* no room for the help on the same line */
        fputc('\n', f);
        n = 0;
    }
    print_lines(f, n, text ? text : "");
    /* The default, unless the help already gives it. */
    char def[128];
    cli_default_for(cmd, opt, def, sizeof def);
    if (*def && !(text && strstr(text, "default")))
        fprintf(f, "%*s%s%s\n", HELP_COLUMN, "", strcmp(def, "required") ? "default: " : "", def);
    for (int a = 0; a < CLI_MAX_ALIASES && opt->aliases[a]; a++)
        fprintf(f, "%*salso: --%s\n", HELP_COLUMN, "", opt->aliases[a]);
}

void cli_help(FILE *f, const cli_command *cmd)
{
    fprintf(f, "usage: %s\n\n%s\n\n", cmd->usage, cmd->about);
    if (cmd->subcommands) {
        fprintf(f, "subcommands (pipesched %s SUBCOMMAND --help for each):\n", cmd->name);
        for (const cli_command *const *s = cmd->subcommands; *s; s++)
            fprintf(f, "  %-20s %s\n", cli_sub_word(*s), (*s)->summary);
        fputc('\n', f);
    }
    fprintf(f, "options:\n");
    for (size_t i = 0; i < cli_option_count; i++)
        if (cli_takes(cmd, &cli_options[i]))
            print_option(f, cmd, &cli_options[i], cli_help_text(cmd, &cli_options[i]));
}

int cli_help_main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: pipesched help [COMMAND [SUBCOMMAND]]\n\n"
               "Without a command, the commands; with one, its options (the same as\n"
               "pipesched COMMAND [SUBCOMMAND] --help).\n");
        return EXIT_OK;
    }
    /* Not listed in the help: they exist for the guide and the configuration reference. */
    if (!strcmp(argv[1], "--markdown") && argc == 2) {
        cli_markdown(stdout);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--markdown") && !strcmp(argv[2], "tune-config") && argc == 3) {
        cli_markdown_keys(stdout, cli_find("tune"), cli_tune_config_key);
        return EXIT_OK;
    }
    if (!strcmp(argv[1], "--markdown")) {
        int bad = argc > 3 && !strcmp(argv[2], "tune-config") ? 3 : 2;
        fprintf(stderr,
                "pipesched: help --markdown takes nothing, or tune-config (the keys of tune "
                "--config); got \"%s\"\n",
                argv[bad]);
        return EXIT_USAGE;
    }
    const cli_command *cmd = cli_find(argv[1]);
    if (!cmd) {
        fprintf(stderr, "pipesched: no command \"%s\" (see pipesched --help)\n", argv[1]);
        return EXIT_USAGE;
    }
    if (argc > 2 && cmd->subcommands) {
        const cli_command *sub = cli_find_sub(cmd, argv[2]);
        if (!sub) {
            fprintf(stderr, "pipesched: no subcommand \"%s\" of %s (see pipesched help %s)\n",
                    argv[2], cmd->name, cmd->name);
            return EXIT_USAGE;
        }
        cmd = sub;
    }
    cli_help(stdout, cmd);
    return EXIT_OK;
}
