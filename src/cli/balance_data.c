/*
 * `pipesched balance data`: assigns the samples of a global batch to data-parallel ranks and
 * micro-batch slots so that the slowest replica's simulated pipeline is shortest
 * (docs/balance.md). Not built yet: the skeleton refuses to run.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

static int balance_data_main(const cli_opts *o)
{
    (void)o;
    fprintf(stderr, "pipesched: balance data: not built yet\n");
    return EXIT_USAGE;
}

const cli_command cli_cmd_balance_data = {
    .name = "balance data",
    .summary = "assign samples to data-parallel ranks and micro-batch slots",
    .usage = "pipesched balance data [OPTIONS]",
    .about = "Assigns every sample of a global batch to a data-parallel rank and a micro-batch\n"
             "slot so that the step time is shortest (docs/balance.md). Not built yet.",
    .option_help = {{"json", "the assignment, step times and gain as JSON (docs/balance.md)"}},
    .run = balance_data_main,
};
