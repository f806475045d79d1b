/*
 * `pipesched list`: the schedule families of the registry with their aliases, placement and
 * constraints, as text or JSON.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

static void print_json(size_t n)
{
    printf("[");
    for (size_t i = 0; i < n; i++) {
        ps_family_info fi;
        ps_family_get(i, &fi);
        printf("%s\n{\"name\":\"%s\",\"aliases\":\"%s\",\"placement\":\"%s\","
               "\"description\":\"%s\",\"constraints\":\"%s\"}",
               i ? "," : "", fi.name, fi.aliases, fi.placement, fi.description, fi.constraints);
    }
    printf("\n]\n");
}

static void print_text(size_t n)
{
    for (size_t i = 0; i < n; i++) {
        ps_family_info fi;
        ps_family_get(i, &fi);
        printf("%-20s %s\n", fi.name, fi.description);
        printf("%-20s aliases: %s\n", "", fi.aliases);
        printf("%-20s placement: %s; constraints: %s\n\n", "", fi.placement, fi.constraints);
    }
}

static int list_main(const cli_opts *o)
{
    if (o->json)
        print_json(ps_family_count());
    else
        print_text(ps_family_count());
    return EXIT_OK;
}

const cli_command cli_cmd_list = {
    .name = "list",
    .summary = "schedule families, aliases and constraints",
    .usage = "pipesched list [--json]",
    .about = "Lists the schedule families with their aliases (case-insensitive, PyTorch class\n"
             "names accepted), placement and constraints.",
    .option_help = {{"json", "the families as JSON"}},
    .run = list_main,
};
