/*
 * pipesched, the command-line front end of libpipesched: finds the command named by argv[1],
 * parses its options and runs it.
 *
 *   pipesched list | generate | simulate | check FILE.csv | run | plan | estimate | tune |
 *             balance data|experts | draw | demo
 *   pipesched help [COMMAND] | --help | --version
 *
 * Exit status: 0 ok, 1 the schedule failed validation (or deadlocks), 2 usage or input
 * error, 3 internal error (out of memory, output failure).
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <string.h>

#define ENTRY(name) &cli_cmd_##name,
const cli_command *const cli_commands[] = {CLI_COMMANDS(ENTRY) NULL};

const cli_command *cli_find(const char *name)
{
    for (const cli_command *const *c = cli_commands; *c; c++)
        if (!strcmp(name, (*c)->name))
            return *c;
    return NULL;
}

const char *cli_sub_word(const cli_command *cmd)
{
    const char *space = strrchr(cmd->name, ' ');
    return space ? space + 1 : cmd->name;
}

const cli_command *cli_find_sub(const cli_command *parent, const char *word)
{
    for (const cli_command *const *c = parent->subcommands; c && *c; c++)
        if (!strcmp(word, cli_sub_word(*c)))
            return *c;
    return NULL;
}

/* At most this many commands and subcommands in all. */
#define MAX_LEAVES 64

const cli_command *const *cli_leaf_commands(void)
{
    static const cli_command *leaves[MAX_LEAVES + 1];
    if (leaves[0])
        return leaves;
    size_t n = 0;
    for (const cli_command *const *c = cli_commands; *c; c++)
        for (const cli_command *const *s = (*c)->subcommands ? (*c)->subcommands : c; *s; s++) {
            if (n < MAX_LEAVES)
                leaves[n++] = *s;
            if (!(*c)->subcommands)
                break;
        }
    return leaves;
}

static void print_subcommands(FILE *f, const cli_command *parent)
{
    for (const cli_command *const *c = parent->subcommands; *c; c++)
        fprintf(f, "%s%s", c == parent->subcommands ? "" : ", ", cli_sub_word(*c));
}

static int run_command(const cli_command *cmd, int argc, char **argv);

/* A command made of subcommands: the word after it names the one that parses the rest. Without
 * a word, only --help is understood. */
static int run_parent(const cli_command *cmd, int argc, char **argv)
{
    if (argc > 1 && argv[1][0] != '-') {
        const cli_command *sub = cli_find_sub(cmd, argv[1]);
        if (sub)
            return run_command(sub, argc - 1, argv + 1);
        fprintf(stderr, "pipesched: unknown %s subcommand \"%s\" (", cmd->name, argv[1]);
        print_subcommands(stderr, cmd);
        fprintf(stderr, ")\n");
        return EXIT_USAGE;
    }
    cli_opts o;
    if (cli_parse(cmd, argc, argv, &o))
        return EXIT_USAGE;
    if (o.help) {
        cli_help(stdout, cmd);
        return EXIT_OK;
    }
    fprintf(stderr, "pipesched: %s needs a subcommand: ", cmd->name);
    print_subcommands(stderr, cmd);
    fprintf(stderr, " (see pipesched %s --help)\n", cmd->name);
    return EXIT_USAGE;
}

/* The options apply to the command after its name: argv[0] of the parse is the command. */
static int run_command(const cli_command *cmd, int argc, char **argv)
{
    if (cmd->subcommands)
        return run_parent(cmd, argc, argv);
    if (cmd->before_parse)
        cmd->before_parse();
    cli_opts o;
    if (cli_parse(cmd, argc, argv, &o))
        return EXIT_USAGE;
    if (o.help) {
        cli_help(stdout, cmd);
        return EXIT_OK;
    }
    return cmd->run(&o);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_usage(stderr);
        return EXIT_USAGE;
    }
    const char *name = argv[1];
    if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
        cli_usage(stdout);
        return EXIT_OK;
    }
    if (!strcmp(name, "help"))
        return cli_help_main(argc - 1, argv + 1);
    if (!strcmp(name, "--version")) {
        printf("pipesched %d.%d.%d\n", PS_VERSION_MAJOR, PS_VERSION_MINOR, PS_VERSION_PATCH);
        return EXIT_OK;
    }
    const cli_command *cmd = cli_find(name);
    if (cmd)
        return run_command(cmd, argc - 1, argv + 1);
    fprintf(stderr, "pipesched: unknown command \"%s\"\n\n", name);
    cli_usage(stderr);
    return EXIT_USAGE;
}
