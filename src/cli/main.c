/*
 * pipesched, the command-line front end of libpipesched: finds the command named by argv[1],
 * parses its options and runs it.
 *
 *   pipesched list | generate | simulate | check FILE.csv | run | plan | draw | demo
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

/* The options apply to the command after its name: argv[0] of the parse is the command. */
static int run_command(const cli_command *cmd, int argc, char **argv)
{
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
