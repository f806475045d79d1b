/*
 * `pipesched draw`: SVG drawings through libpipesched-viz (Graphviz): the simulated timeline,
 * the overlap plan of a fused pair, or the dependency graph. It also adds the two drawings of
 * the Pangu example to `pipesched demo`. meson compiles this file only when Graphviz is found.
 * The library is loaded on first use (viz_dl.h), so that the other commands start without it.
 * SPDX-License-Identifier: MIT
 */
#include "cli.h"

#include "viz_dl.h"

#include <errno.h>
#include <string.h>

/* Output of a drawing: the file is created on the first write, so that a failed drawing
 * leaves no file behind. */
typedef struct draw_out {
    const char *path;
    FILE *f;
    int open_errno; /* fopen failed with this */
} draw_out;

static int draw_write(void *ud, const char *data, size_t len)
{
    draw_out *d = ud;
    if (!d->f && !(d->f = strcmp(d->path, "-") ? fopen(d->path, "wb") : stdout)) {
        d->open_errno = errno ? errno : EIO;
        return -1;
    }
    return fwrite(data, 1, len, d->f) == len ? 0 : -1;
}

/* Reports a failed drawing of command what: an output file that cannot be created is a usage
 * error. */
static int draw_report(const char *what, int rc, const draw_out *out, const ps_viz *viz)
{
    if (rc == PS_EIO && out->open_errno) {
        fprintf(stderr, "pipesched: cannot write %s: %s\n", out->path, strerror(out->open_errno));
        return EXIT_USAGE;
    }
    return cli_report(what, rc, ps_viz_last_error(viz));
}

/* The fused pair that `pipesched plan` shows: the busiest stage's forward with its backward,
 * unless --fstage/--bstage say otherwise. */
static int plan_pair(const cli_opts *o, const ps_problem *pb, int stages, ps_plan *pl, int *fstage,
                     int *bstage)
{
    int method = o->method < 0 ? PS_PLANNER_ADAPTIVE : o->method;
    ps_moe_model moe;
    if (ps_problem_get_moe(pb, &moe)) {
        fprintf(stderr, "pipesched: draw --kind overlap needs a MoE model: a config with "
                        "\"model\" and \"cluster\" blocks, or a \"moe\" block (docs/config.md)\n");
        return EXIT_USAGE;
    }
    if (*fstage < 0)
        *fstage = cli_default_stage(pb, stages);
    if (*bstage < 0)
        *bstage = *fstage;
    int rc = ps_plan_step(pl, pb, method, stages, *fstage, PS_B, *bstage);
    return rc ? cli_report("draw", rc, ps_plan_last_error(pl)) : EXIT_OK;
}

/* `draw --kind overlap`: plans one fused pair of s's model stages and draws it. */
static int draw_overlap(const cli_opts *o, const ps_problem *pb, const ps_schedule *s, ps_viz *viz,
                        draw_out *out)
{
    int stages = ps_schedule_num_stages(s) / ps_schedule_param_copies(s);
    int fstage = (int)o->fstage, bstage = (int)o->bstage;
    if (fstage >= stages || bstage >= stages) {
        fprintf(stderr, "pipesched: --%s %d is out of range: the schedule has %d model stages\n",
                fstage >= stages ? "fstage" : "bstage", fstage >= stages ? fstage : bstage, stages);
        return EXIT_USAGE;
    }
    ps_plan *pl;
    int rc = ps_plan_new(&pl, NULL);
    if (rc)
        return cli_report("draw", rc, NULL);
    int ex = plan_pair(o, pb, stages, pl, &fstage, &bstage);
    if (!ex) {
        const ps_plan_op *ops;
        size_t n = ps_plan_ops(pl, &ops);
        ps_plan_stats st;
        ps_plan_stats_get(pl, &st);
        char title[256];
        snprintf(title, sizeof title,
                 "%s: forward of model stage %d fused with the backward of stage %d, planner %s",
                 ps_schedule_family(s), fstage, bstage,
                 ps_planner_name(o->method < 0 ? PS_PLANNER_ADAPTIVE : o->method));
        if ((rc = ps_viz_overlap_svg(viz, ops, n, &st, title, draw_write, out)))
            ex = draw_report("draw", rc, out, viz);
    }
    ps_plan_free(pl);
    return ex;
}

/* The timeline and the DAG need the simulated times. */
static int draw_simulated(const cli_opts *o, cli_job *j, ps_viz *viz, draw_out *out)
{
    int ex = cli_run_sim(j->s, j->pb, NULL, &j->sim);
    if (!ex) {
        int rc = o->kind == CLI_KIND_DAG ? ps_viz_dag_svg(viz, j->s, j->sim, draw_write, out)
                                         : ps_viz_timeline_svg(viz, j->s, j->sim, draw_write, out);
        if (rc)
            ex = draw_report("draw", rc, out, viz);
    }
    return ex;
}

static int draw_main(const cli_opts *o)
{
    if (!o->output) {
        fprintf(stderr, "pipesched: draw needs -o FILE.svg (- for stdout)\n");
        return EXIT_USAGE;
    }
    int window = o->from >= 0 || o->to > 0 || o->overview;
    if (window && o->kind >= 0 && o->kind != CLI_KIND_TIMELINE) {
        fprintf(stderr, "pipesched: --from, --to and --overview apply to --kind timeline\n");
        return EXIT_USAGE;
    }
    if (o->from >= 0 && o->to > 0 && o->to <= o->from) {
        fprintf(stderr, "pipesched: --to %g must be above --from %g\n", o->to, o->from);
        return EXIT_USAGE;
    }
    if (cli_viz_load())
        return EXIT_INTERNAL;
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    cfg.window_from = o->from >= 0 ? o->from : 0;
    cfg.window_to = o->to > 0 ? o->to : 0;
    cfg.overview = o->overview;
    ps_viz *viz = NULL;
    draw_out out = {o->output, NULL, 0};
    cli_job j;
    int rc, ex = cli_job_open(&j, o, 0);
    if (!ex && (rc = ps_viz_new(&viz, &cfg, NULL)))
        ex = cli_report("draw", rc, NULL);
    if (!ex)
        ex = o->kind == CLI_KIND_OVERLAP ? draw_overlap(o, j.pb, j.s, viz, &out)
                                         : draw_simulated(o, &j, viz, &out);
    if (out.f && out.f != stdout && fclose(out.f) && !ex) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", o->output, strerror(errno));
        ex = EXIT_INTERNAL;
    }
    ps_viz_free(viz);
    cli_job_free(&j);
    return ex;
}

/* Closes a drawing's file (not stdout); on failure removes it. Returns the exit status. */
static int out_close(draw_out *out, int ex)
{
    int file = out->f && out->f != stdout;
    if (file && fclose(out->f) && !ex) {
        fprintf(stderr, "pipesched: writing %s failed: %s\n", out->path, strerror(errno));
        ex = EXIT_INTERNAL;
    }
    if (file && ex)
        remove(out->path);
    out->f = NULL;
    return ex;
}

/* The timeline for another command (estimate --svg), its times in unit. */
static int draw_timeline(const ps_schedule *s, const ps_sim *sim, const char *unit,
                         const char *what, const char *path)
{
    if (cli_viz_load())
        return EXIT_INTERNAL;
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    snprintf(cfg.time_unit, sizeof cfg.time_unit, "%s", unit);
    ps_viz *viz;
    int rc = ps_viz_new(&viz, &cfg, NULL);
    if (rc)
        return cli_report(what, rc, NULL);
    draw_out out = {path, NULL, 0};
    int ex = EXIT_OK;
    if ((rc = ps_viz_timeline_svg(viz, s, sim, draw_write, &out)))
        ex = draw_report(what, rc, &out, viz);
    ex = out_close(&out, ex);
    ps_viz_free(viz);
    return ex;
}

/* A scatter plot for another command (tune --pareto-svg). */
static int draw_scatter(const double *x, const double *y, const char *const *labels, size_t n,
                        const char *x_label, const char *y_label, const char *title,
                        const char *what, const char *path)
{
    if (cli_viz_load())
        return EXIT_INTERNAL;
    ps_viz *viz;
    int rc = ps_viz_new(&viz, NULL, NULL);
    if (rc)
        return cli_report(what, rc, NULL);
    draw_out out = {path, NULL, 0};
    int ex = EXIT_OK;
    if ((rc = ps_viz_scatter_svg(viz, x, y, labels, n, x_label, y_label, title, draw_write, &out)))
        ex = draw_report(what, rc, &out, viz);
    ex = out_close(&out, ex);
    ps_viz_free(viz);
    return ex;
}

/* The demo's drawings, in the current directory: the Pangu example's timeline under Adaptive
 * Pipe and the overlap plan of one of its fused pairs. */
static int draw_demo(const char *moe_json)
{
    static const char *const tl = "pipesched-demo-timeline.svg";
    static const char *const ov = "pipesched-demo-overlap.svg";
    cli_job j = {NULL, NULL, NULL, 0};
    ps_viz *viz = NULL;
    draw_out a = {tl, NULL, 0}, b = {ov, NULL, 0};
    cli_opts o = {.method = -1, .fstage = -1, .bstage = -1}; /* draw's defaults */
    int ex = EXIT_INTERNAL, rc;
    if (cli_viz_load())
        return EXIT_INTERNAL;
    if (ps_problem_new(&j.pb, NULL) || ps_problem_load_json(j.pb, moe_json, strlen(moe_json)))
        goto out;
    if ((ex = cli_job_run(&j, 1)))
        goto out;
    if ((rc = ps_viz_new(&viz, NULL, NULL))) {
        ex = cli_report("demo", rc, NULL);
        goto out;
    }
    if ((rc = ps_viz_timeline_svg(viz, j.s, j.sim, draw_write, &a)))
        ex = draw_report("demo", rc, &a, viz);
    if ((ex = out_close(&a, ex)))
        goto out;
    ex = out_close(&b, draw_overlap(&o, j.pb, j.s, viz, &b));
    if (!ex)
        printf("\nwrote %s (Adaptive Pipe on the Pangu example, every rank's timeline) and\n%s "
               "(one fused pair on the compute and communication streams)\n",
               tl, ov);
out:
    ps_viz_free(viz);
    cli_job_free(&j);
    return ex;
}

const cli_command cli_cmd_draw = {
    .name = "draw",
    .summary = "SVG: timeline, overlap plan or dependency graph",
    .usage = "pipesched draw [--kind timeline|overlap|dag] -o FILE.svg [OPTIONS]",
    .about = "Draws as SVG (Graphviz). timeline: the simulated schedule, one lane per rank, a box\n"
             "per action, the bubbles in grey; large timelines are cut to stay small and the\n"
             "title says so (--from/--to choose the window, --overview draws the whole run as\n"
             "busy/idle bands). overlap: the fused pair that `pipesched plan` shows (--fstage,\n"
             "--bstage, --method) on the compute and communication streams, the exposed\n"
             "communication in red; needs a MoE model in the --config. dag: the dependencies of\n"
             "a small schedule (at most 400 actions) with its critical path. -o - writes to\n"
             "stdout.",
    .run = draw_main,
    .demo = draw_demo,
    .timeline_svg = draw_timeline,
    .scatter_svg = draw_scatter,
};
