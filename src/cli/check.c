/*
 * `pipesched check FILE.csv`: loads a PyTorch-style CSV schedule (compute_only or
 * compute_comms), validates it, simulates it and prints its metrics or the schedule. The
 * file gives pp, the stages, the micro-batches and the placement; of the options only the
 * costs and the memory model apply.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include <stdlib.h>

/* PyTorch's tables of the largest pipelines stay far below this. */
#define CSV_LIMIT (1u << 30)

/* Loads and validates the table of path; parse and validation messages name the file. */
static int load_schedule(const cli_opts *o, ps_schedule **out)
{
    char *text = NULL;
    size_t len;
    ps_schedule *s = NULL;
    if (cli_read_file(o->file, CSV_LIMIT, &text, &len))
        return EXIT_USAGE;
    int ex = EXIT_OK, rc = ps_schedule_new(&s, NULL);
    if (rc) {
        ex = cli_report("check", rc, NULL);
        goto out;
    }
    rc = ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, o->m > 0 ? (int)o->m : 0);
    if (!rc)
        rc = ps_schedule_validate(s);
    if (rc) {
        fprintf(stderr, "pipesched: %s: %s\n", o->file, ps_schedule_last_error(s));
        ex = cli_exit_code(rc);
    }
out:
    free(text);
    if (ex)
        ps_schedule_free(s);
    else
        *out = s;
    return ex;
}

/* The CSV formats print the lists as loaded (or lowered); the others as `simulate`. */
static int print_outputs(const cli_opts *o, const ps_schedule *s, const ps_sim *sim, ps_format fmt)
{
    if (o->format < 0 && !o->json)
        fprintf(stderr, "%s: valid\n", o->file);
    if (fmt == PS_FORMAT_CSV || fmt == PS_FORMAT_CSV_COMMS)
        return cli_emit(s, sim, fmt, o->output);
    return cli_sim_outputs(o, s, sim, o->format >= 0, fmt, 0);
}

static int check_main(const cli_opts *o)
{
    if (!o->file) {
        fprintf(stderr, "pipesched: check needs a CSV file (try pipesched check --help)\n");
        return EXIT_USAGE;
    }
    ps_format fmt = o->format < 0 ? PS_FORMAT_TABLE : (ps_format)o->format;
    if (cli_check_json_format(o) || cli_check_width(o, o->format == PS_FORMAT_TABLE))
        return EXIT_USAGE;
    cli_job j = {NULL, NULL, NULL, 0};
    int rc = cli_build_problem(o, &j.pb, NULL);
    if (rc)
        return cli_exit_code(rc);
    int ex = load_schedule(o, &j.s);
    if (ex)
        goto out;
    if (fmt == PS_FORMAT_CSV_COMMS && (rc = ps_schedule_lower(j.s))) {
        ex = cli_report("lower", rc, ps_schedule_last_error(j.s));
        goto out;
    }
    if (!(ex = cli_run_sim(j.s, j.pb, o->file, &j.sim)))
        ex = print_outputs(o, j.s, j.sim, fmt);
out:
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_check = {
    .name = "check",
    .operand = "FILE.csv",
    .summary = "validate and simulate a PyTorch-style CSV table",
    .usage = "pipesched check FILE.csv [OPTIONS]",
    .about = "Validates a PyTorch-style CSV schedule (compute_only or compute_comms, one row per\n"
             "rank; - reads stdin) and simulates it. pp, stages, micro-batches and the placement\n"
             "are inferred from the file; -m sets the micro-batch count; from a --config file\n"
             "only the costs and the memory model apply.",
    .option_help = {{"format", "print the schedule instead of the metrics: table (timed),\n"
                               "json (timed, with the metrics), csv, csv-comms"},
                    {"json", "metrics as JSON; with --format, only json agrees (the timed\n"
                             "schedule with the metrics), another format is refused"}},
    .run = check_main,
};
