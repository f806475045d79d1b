/*
 * The invariants of generate, validate, simulate, export and lower (pipeline.h).
 * SPDX-License-Identifier: MIT
 */
#include "pipeline.h"

/* An error code must be one of the table's, and come with a message. */
static void check_error(int rc, const char *msg, const char *step)
{
    FZ_CHECK(rc < 0 && strcmp(ps_err_name(rc), "UNKNOWN") != 0, "%s returned %d, not a PS_E code",
             step, rc);
    FZ_CHECK(msg != NULL && msg[0] != 0, "%s failed with %s but left no message", step,
             ps_err_name(rc));
}

/* With an injected allocation failure, any step may give up with PS_ENOMEM: stop there. Other
 * codes must still be the ones the step documents. */
static int oom(const fz_alloc *a, int rc)
{
    return a->failed && rc == PS_ENOMEM;
}

static void check_timeline(const ps_schedule *s, const ps_sim *sim, const char *step)
{
    ps_metrics m;
    FZ_CHECK(ps_sim_metrics(sim, &m) == 0, "%s: no metrics after a run", step);
    FZ_CHECK(isfinite(m.makespan) && m.makespan >= 0, "%s: makespan %g", step, m.makespan);
    FZ_CHECK(m.pp == ps_schedule_pp(s), "%s: metrics of %d ranks, schedule has %d", step, m.pp,
             ps_schedule_pp(s));
    for (int r = 0; r < m.pp; r++) {
        ps_rank_metrics rm;
        FZ_CHECK(ps_sim_rank_metrics(sim, r, &rm) == 0, "%s: no metrics for rank %d", step, r);
        FZ_CHECK(isfinite(rm.busy) && rm.busy >= 0, "%s: rank %d busy %g", step, r, rm.busy);
        /* busy is a sum of the same durations the timeline adds up: rounding only. */
        FZ_CHECK(rm.busy <= m.makespan * (1 + 1e-9) + 1e-300,
                 "%s: rank %d busy %.17g above the makespan %.17g", step, r, rm.busy, m.makespan);
        size_t n = ps_schedule_rank_length(s, r);
        const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
        FZ_CHECK(n == 0 || (st && en), "%s: rank %d has no timeline", step, r);
        for (size_t i = 0; i < n; i++) {
            FZ_CHECK(isfinite(st[i]) && isfinite(en[i]) && st[i] >= 0 && en[i] >= st[i] &&
                         en[i] <= m.makespan,
                     "%s: rank %d action %zu runs [%.17g, %.17g], makespan %.17g", step, r, i,
                     st[i], en[i], m.makespan);
            FZ_CHECK(i == 0 || st[i] >= en[i - 1],
                     "%s: rank %d action %zu starts at %.17g before the previous ends at %.17g",
                     step, r, i, st[i], en[i - 1]);
        }
    }
}

/* Every format; the timed ones need sim (NULL: skipped). Returns PS_ENOMEM to stop. */
static int export_all(const ps_schedule *s, const ps_sim *sim, fz_alloc *a)
{
    static const ps_format formats[] = {PS_FORMAT_TABLE,  PS_FORMAT_TABLE_TIMED, PS_FORMAT_JSON,
                                        PS_FORMAT_CSV,    PS_FORMAT_CSV_COMMS,   PS_FORMAT_TRACE,
                                        PS_FORMAT_METRICS};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        ps_format f = formats[i];
        int timed = f == PS_FORMAT_TABLE_TIMED || f == PS_FORMAT_TRACE || f == PS_FORMAT_METRICS;
        fz_sink out = {0};
        int rc = ps_export(s, timed ? sim : NULL, f, fz_write, &out);
        if (timed && !sim) {
            FZ_CHECK(rc == PS_EINVAL, "export %d without a timeline returned %d", (int)f, rc);
            continue;
        }
        if (f == PS_FORMAT_CSV_COMMS && !ps_schedule_is_lowered(s)) {
            FZ_CHECK(rc == PS_EINVAL, "csv-comms of a schedule not lowered returned %d", rc);
            continue;
        }
        if (oom(a, rc))
            return rc;
        FZ_CHECK(rc == 0, "export in format %d failed: %s", (int)f, ps_err_name(rc));
        FZ_CHECK(out.bytes > 0, "export in format %d wrote nothing", (int)f);
        /* A writer that fails must stop the export with PS_EIO. */
        fz_sink failing = {0, 1, 0};
        rc = ps_export(s, timed ? sim : NULL, f, fz_write, &failing);
        if (oom(a, rc))
            return rc;
        FZ_CHECK(rc == PS_EIO, "export in format %d into a failing writer returned %s", (int)f,
                 ps_err_name(rc));
    }
    return 0;
}

/* Simulates s under pb. Returns 0 with a timeline, 1 when the run was refused as documented
 * (memory limit, per-stage tables), PS_ENOMEM to stop. */
static int simulate(ps_sim *sim, const ps_schedule *s, const ps_problem *pb, fz_alloc *a,
                    const char *step)
{
    int rc = ps_sim_run(sim, s, pb);
    if (oom(a, rc))
        return rc;
    if (rc == PS_EINVALID && ps_problem_mem_limit(pb) > 0) {
        check_error(rc, ps_sim_last_error(sim), step);
        /* The timeline stays available. */
        check_timeline(s, sim, step);
        return 0;
    }
    if (rc == PS_ECONFIG) { /* per-stage tables or a MoE model that do not fit the schedule */
        check_error(rc, ps_sim_last_error(sim), step);
        return 1;
    }
    FZ_CHECK(rc == 0, "%s: %s: %s", step, ps_err_name(rc), ps_sim_last_error(sim));
    check_timeline(s, sim, step);
    return 0;
}

void fz_check_schedule(ps_schedule *s, const ps_problem *pb, fz_alloc *a)
{
    ps_allocator al = fz_allocator(a);
    ps_sim *sim = NULL;
    int rc = ps_sim_new(&sim, &al);
    if (oom(a, rc))
        return;
    FZ_CHECK(rc == 0, "ps_sim_new: %s", ps_err_name(rc));

    rc = simulate(sim, s, pb, a, "simulate");
    if (rc < 0)
        goto done;
    if (export_all(s, rc == 0 ? sim : NULL, a))
        goto done;

    rc = ps_schedule_lower(s);
    if (oom(a, rc))
        goto done;
    FZ_CHECK(rc == 0, "lowering a valid schedule: %s: %s", ps_err_name(rc),
             ps_schedule_last_error(s));
    FZ_CHECK(ps_schedule_is_lowered(s), "lowered schedule says it is not");
    rc = ps_schedule_validate(s);
    if (oom(a, rc))
        goto done;
    FZ_CHECK(rc == 0, "the lowered schedule does not validate: %s: %s", ps_err_name(rc),
             ps_schedule_last_error(s));
    rc = simulate(sim, s, pb, a, "simulate the lowered schedule");
    if (rc < 0)
        goto done;
    export_all(s, rc == 0 ? sim : NULL, a);
done:
    ps_sim_free(sim);
}

void fz_check_pipeline(const ps_problem *pb, fz_alloc *a)
{
    ps_allocator al = fz_allocator(a);
    ps_schedule *s = NULL;
    int rc = ps_schedule_new(&s, &al);
    if (oom(a, rc))
        return;
    FZ_CHECK(rc == 0, "ps_schedule_new: %s", ps_err_name(rc));

    rc = ps_schedule_generate(s, pb);
    if (oom(a, rc))
        goto done;
    if (rc) {
        check_error(rc, ps_schedule_last_error(s), "generate");
        goto done;
    }
    FZ_CHECK(ps_schedule_total_actions(s) > 0, "generated an empty schedule");
    rc = ps_schedule_validate(s);
    if (oom(a, rc))
        goto done;
    FZ_CHECK(rc == 0, "%s p=%d m=%d: generated schedule fails validation: %s: %s",
             ps_problem_schedule(pb), ps_schedule_pp(s), ps_schedule_microbatches(s),
             ps_err_name(rc), ps_schedule_last_error(s));
    fz_check_schedule(s, pb, a);
done:
    ps_schedule_free(s);
}
