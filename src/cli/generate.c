/*
 * `pipesched generate`: generates and validates a schedule and prints it as a table, JSON or
 * PyTorch CSV; with --timed it also simulates it, for the times.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

static int generate_main(const cli_opts *o)
{
    ps_format fmt = o->format < 0 ? PS_FORMAT_TABLE : (ps_format)o->format;
    if (o->timed && fmt != PS_FORMAT_TABLE && fmt != PS_FORMAT_JSON) {
        fprintf(stderr, "pipesched: --timed applies to the table and json formats\n");
        return EXIT_USAGE;
    }
    if (cli_check_width(o, o->timed && fmt == PS_FORMAT_TABLE))
        return EXIT_USAGE;
    cli_job j;
    int rc, ex = cli_job_open(&j, o, 0);
    if (ex)
        goto out;
    /* PyTorch's compute_comms lists carry the SEND/RECV actions of the lowered schedule. */
    if (fmt == PS_FORMAT_CSV_COMMS && (rc = ps_schedule_lower(j.s))) {
        ex = cli_report("lower", rc, ps_schedule_last_error(j.s));
        goto out;
    }
    if (o->timed) {
        if ((ex = cli_run_sim(j.s, j.pb, NULL, &j.sim)))
            goto out;
        if (fmt == PS_FORMAT_TABLE)
            fmt = PS_FORMAT_TABLE_TIMED;
    }
    ex = fmt == PS_FORMAT_TABLE_TIMED ? cli_emit_timed(j.s, j.sim, o->width, o->output)
                                      : cli_emit(j.s, j.sim, fmt, o->output);
out:
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_generate = {
    .name = "generate",
    .summary = "print a schedule (table, JSON, PyTorch CSV)",
    .usage = "pipesched generate [OPTIONS]",
    .about = "Generates and validates a schedule and prints it.",
    .option_help = {{"format", "table (default), json, csv, csv-comms"}},
    .run = generate_main,
};
