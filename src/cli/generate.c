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
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    int rc = cli_build_problem(o, &pb);
    if (rc)
        return cli_exit_code(rc);
    int ex = cli_make_schedule(pb, &s);
    if (ex)
        goto out;
    /* PyTorch's compute_comms lists carry the SEND/RECV actions of the lowered schedule. */
    if (fmt == PS_FORMAT_CSV_COMMS && (rc = ps_schedule_lower(s))) {
        ex = cli_report("lower", rc, ps_schedule_last_error(s));
        goto out;
    }
    if (o->timed) {
        if ((ex = cli_run_sim(s, pb, NULL, &sim)))
            goto out;
        if (fmt == PS_FORMAT_TABLE)
            fmt = PS_FORMAT_TABLE_TIMED;
    }
    ex = cli_emit(s, sim, fmt, o->output);
out:
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
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
