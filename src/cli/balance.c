/*
 * `pipesched balance`: the load balancing of issue 15 (docs/balance.md), one subcommand per
 * part: `balance data` reorders the samples of a global batch over the data-parallel ranks
 * and micro-batch slots (balance_data.c); `balance experts` places the experts of each MoE
 * layer on the expert-parallel devices (balance_experts.c). The parent only names them: main.c
 * hands the rest of the line to the subcommand the next word names.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

extern const cli_command cli_cmd_balance_data;
extern const cli_command cli_cmd_balance_experts;

static const cli_command *const balance_subcommands[] = {&cli_cmd_balance_data,
                                                         &cli_cmd_balance_experts, NULL};

const cli_command cli_cmd_balance = {
    .name = "balance",
    .summary = "balance load: data reordering, expert placement",
    .usage = "pipesched balance data|experts [OPTIONS]",
    .about = "Balances the load of a training step (docs/balance.md): `data` assigns the samples\n"
             "of a global batch to data-parallel ranks and micro-batch slots, `experts` places\n"
             "the experts of each MoE layer on the expert-parallel devices.",
    .subcommands = balance_subcommands,
};
