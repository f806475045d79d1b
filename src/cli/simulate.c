/*
 * `pipesched simulate`: generates, validates and simulates a schedule and prints its metrics,
 * or the timed schedule.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

static int simulate_main(const cli_opts *o)
{
    ps_format fmt = o->format < 0 ? PS_FORMAT_TABLE : (ps_format)o->format;
    if (cli_check_json_format(o) || cli_check_width(o, o->format == PS_FORMAT_TABLE))
        return EXIT_USAGE;
    if (fmt == PS_FORMAT_CSV || fmt == PS_FORMAT_CSV_COMMS) {
        fprintf(stderr, "pipesched: simulate prints table or json; use generate for CSV\n");
        return EXIT_USAGE;
    }
    /* The metrics alone need no timeline: 16 bytes per action less (128 MiB at pp128/vpp8/
     * m4096). The timed outputs (--format, --trace) keep it. */
    cli_job j;
    int ex = cli_job_open(&j, o, o->format >= 0 || o->trace ? CLI_SIM_TIMELINE : CLI_SIM_METRICS);
    if (!ex)
        ex = cli_sim_outputs(o, j.s, j.sim, o->format >= 0, fmt, j.defaulted);
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_simulate = {
    .name = "simulate",
    .summary = "simulate a schedule: makespan, bubbles, memory",
    .usage = "pipesched simulate [OPTIONS]",
    .about = "Generates, validates and simulates a schedule; prints its metrics.",
    .option_help = {{"format", "print the timed schedule (table, or json with the metrics)\n"
                               "instead of the metrics"},
                    {"json", "metrics as JSON; with --format, only json agrees (the timed\n"
                             "schedule with the metrics), another format is refused"}},
    .run = simulate_main,
};
