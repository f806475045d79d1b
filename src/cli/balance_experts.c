/*
 * `pipesched balance experts`: places the experts of each MoE layer on the expert-parallel
 * devices from their predicted loads (docs/balance.md). Not built yet: the skeleton refuses to
 * run.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

static int balance_experts_main(const cli_opts *o)
{
    (void)o;
    fprintf(stderr, "pipesched: balance experts: not built yet\n");
    return EXIT_USAGE;
}

const cli_command cli_cmd_balance_experts = {
    .name = "balance experts",
    .summary = "place the experts of each MoE layer on the devices",
    .usage = "pipesched balance experts [OPTIONS]",
    .about = "Places the experts of each MoE layer on the expert-parallel devices from their\n"
             "predicted loads (docs/balance.md). Not built yet.",
    .option_help = {{"json",
                     "the placement per layer and the imbalance as JSON\n(docs/balance.md)"}},
    .run = balance_experts_main,
};
