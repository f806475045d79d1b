/*
 * `pipesched help --markdown`: every option of the table as a markdown table (names, aliases,
 * argument and range, default, commands, meaning), then each command's options. docs/guide.md
 * carries this output between its `<!-- options:begin -->` and `<!-- options:end -->`
 * markers, and tests/cli.sh fails when the two differ, so the guide's option list cannot
 * drift from what the program accepts. `pipesched help --markdown tune-config` writes the
 * keys of tune --config the same way, for docs/config.md.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <string.h>

/* Text for a markdown table cell: lines joined by spaces, '|' escaped. */
static void md_cell(FILE *f, const char *text)
{
    for (const char *p = text; *p; p++) {
        if (*p == '\n')
            fputc(' ', f);
        else if (*p == '|')
            fputs("\\|", f);
        else
            fputc(*p, f);
    }
}

/* The argument column: type and range, written as the error messages write them. */
static void md_argument(FILE *f, const cli_option *opt)
{
    switch (opt->type) {
    case CLI_FLAG:
        fprintf(f, "none");
        break;
    case CLI_STRING:
        fprintf(f, "text");
        break;
    case CLI_INT:
        fprintf(f, "integer in [%lld, %lld]", opt->lo, opt->hi);
        break;
    case CLI_DECIMAL:
        fprintf(f, "%s in %c%g, %g]%s%s", opt->unit ? opt->unit : "decimal",
                opt->lo_open ? '(' : '[', opt->dlo, opt->dhi, opt->note ? "; " : "",
                opt->note ? opt->note : "");
        break;
    case CLI_CHOICE:
        for (const cli_choice *c = opt->choices; c->name; c++)
            fprintf(f, "%s`%s`", c == opt->choices ? "" : ", ", c->name);
        break;
    }
}

/* The meaning column: the help, the guide's extra, and each command's own help. */
static void md_meaning(FILE *f, const cli_option *opt)
{
    int any = 0;
    if (opt->help) {
        md_cell(f, opt->help);
        any = 1;
    }
    if (opt->doc) {
        fputs(any ? ". " : "", f);
        md_cell(f, opt->doc);
        any = 1;
    }
    for (const cli_command *const *c = cli_leaf_commands(); *c; c++) {
        const char *text = cli_help_text(*c, opt);
        if (!cli_takes(*c, opt) || text == opt->help)
            continue;
        fprintf(f, "%s`%s`: ", any ? "<br>" : "", (*c)->name);
        md_cell(f, text);
        any = 1;
    }
}

static void md_option(FILE *f, const cli_option *opt)
{
    fputs("| `", f);
    if (opt->letter)
        fprintf(f, "-%c, ", opt->letter);
    fprintf(f, "--%s%s", opt->name, opt->metavar ? " " : "");
    if (opt->metavar) /* NAME|FILE: a '|' in a code span still ends a GFM cell */
        md_cell(f, opt->metavar);
    fputs("` | ", f);
    for (int a = 0; a < CLI_MAX_ALIASES && opt->aliases[a]; a++)
        fprintf(f, "%s`--%s`", a ? ", " : "", opt->aliases[a]);
    fputs(" | ", f);
    md_argument(f, opt);
    fprintf(f, " | %s | ", opt->def ? opt->def : "");
    if (!strcmp(opt->commands, "*"))
        fputs("all", f);
    /* Words separated by commas, but a command with subcommands stays with the next word
     * ("balance data"). */
    for (const char *p = opt->commands; *p && *p != '*';) {
        size_t n = strcspn(p, " ");
        char word[32];
        snprintf(word, sizeof word, "%.*s", (int)n, p);
        const cli_command *cmd = cli_find(word);
        fprintf(f, "%.*s", (int)n, p);
        p += n;
        if (*p == ' ')
            fputs(cmd && cmd->subcommands ? " " : ", ", f);
        p += *p == ' ';
    }
    fputs(" | ", f);
    md_meaning(f, opt);
    fputs(" |\n", f);
}

void cli_markdown(FILE *f)
{
    fprintf(f, "| option | aliases | argument | default | commands | meaning |\n"
               "|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < cli_option_count; i++)
        md_option(f, &cli_options[i]);
    fprintf(f, "\n| command | options |\n|---|---|\n");
    for (const cli_command *const *c = cli_leaf_commands(); *c; c++) {
        fprintf(f, "| `%s` | ", (*c)->name);
        const char *sep = "";
        for (size_t i = 0; i < cli_option_count; i++) {
            const cli_option *opt = &cli_options[i];
            if (!cli_takes(*c, opt))
                continue;
            if (opt->letter)
                fprintf(f, "%s`-%c`", sep, opt->letter);
            else
                fprintf(f, "%s`--%s`", sep, opt->name);
            sep = " ";
        }
        fprintf(f, " |\n");
    }
}

void cli_markdown_keys(FILE *f, const cli_command *cmd, int (*is_key)(size_t i))
{
    fprintf(f, "| key | option | value | default | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < cli_option_count; i++) {
        const cli_option *opt = &cli_options[i];
        if (!is_key(i))
            continue;
        fprintf(f, "| `%s` | `--%s%s", opt->name, opt->name, opt->metavar ? " " : "");
        md_cell(f, opt->metavar ? opt->metavar : "");
        fputs("` | ", f);
        if (opt->type == CLI_FLAG)
            fputs("`true`, `false`", f);
        else
            md_argument(f, opt);
        char def[256];
        cli_default_for(cmd, opt, def, sizeof def);
        fputs(" | ", f);
        md_cell(f, def);
        fputs(" | ", f);
        md_cell(f, cli_help_text(cmd, opt));
        fputs(" |\n", f);
    }
}
