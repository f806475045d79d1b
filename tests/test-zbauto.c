/*
 * zb-auto, the memory-aware greedy zero-bubble scheduler: validity and the memory limit over
 * a grid, the zero-bubble and ZB-H1 bounds for f = b = w, the reference heuristic's makespans,
 * determinism, rejections and allocation failure.
 *
 * Expected values are derived here, not copied from the program: with f = b = w = 1 and c = 0
 * rank p-1 cannot start before p-1 and holds 3m (vpp = 1) or 6m (V) units of work, so no
 * schedule ends before 3m + p - 1 (6m + p - 1); the memory model is the default 1, -0.5, -0.5
 * per chunk, recomputed from the action lists.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "internal.h" /* ps__problem_set_moe_extra, ps__moe_stage_fbw */

#include <math.h>
#include <stdio.h>

/* Uniform costs (f, b, w, c) of the grid. */
static const double grid_costs[][4] = {{1, 1, 1, 0}, {1, 2, 1, 0}, {2, 1, 0.5, 0}, {1, 1, 1, 0.25}};
#define NGRID_COSTS (int)(sizeof grid_costs / sizeof grid_costs[0])

static ps_problem *auto_problem(int p, int v, int m, const double c[4], double limit)
{
    ps_problem *pb = make_problem("zb-auto", p, v, m, c[0], c[1], c[2], c[3]);
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, limit), 0);
    return pb;
}

/*
 * The peak of each rank's running memory, recomputed from its list with per-chunk deltas
 * (mf, mb, mw) for F, I, W (a NULL sm means the uniform default 1, -0.5, -0.5). Fails the
 * test on any kind other than F, I, W. Returns the largest peak over the ranks.
 */
static double list_peak(const ps_schedule *s, const ps_stage_mem *sm)
{
    double worst = 0;
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        double mem = 0, pk = 0;
        for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
            ps_stage_mem d = sm ? sm[a[i].stage] : (ps_stage_mem){1, -0.5, -0.5};
            ck_assert_msg(a[i].kind == PS_F || a[i].kind == PS_I || a[i].kind == PS_W,
                          "zb-auto emitted kind %d", a[i].kind);
            mem += a[i].kind == PS_F ? d.f : a[i].kind == PS_I ? d.b : d.w;
            pk = mem > pk ? mem : pk;
        }
        worst = pk > worst ? pk : worst;
    }
    return worst;
}

/* Generates, validates, simulates; checks the action count, the kinds and the limit (from
 * the lists and from the simulator). Returns the metrics. */
static ps_metrics run_checked(ps_schedule *s, ps_sim *sim, ps_problem *pb, const char *where,
                              const ps_stage_mem *sm)
{
    int rc = ps_schedule_generate(s, pb);
    ck_assert_msg(rc == 0, "%s: %s", where, ps_schedule_last_error(s));
    ck_assert_msg(ps_schedule_validate(s) == 0, "%s: %s", where, ps_schedule_last_error(s));
    ck_assert_msg(ps_schedule_total_actions(s) ==
                      (size_t)3 * ps_schedule_num_stages(s) * (size_t)ps_schedule_microbatches(s),
                  "%s: action count", where);
    rc = ps_sim_run(sim, s, pb);
    ck_assert_msg(rc == 0, "%s: simulate: %s", where, ps_sim_last_error(sim));
    double limit = ps_problem_mem_limit(pb), peak = list_peak(s, sm);
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        ps_rank_metrics rm;
        ck_assert_int_eq(ps_sim_rank_metrics(sim, r, &rm), 0);
        ck_assert_msg(rm.peak_memory <= peak + 1e-9, "%s: rank %d simulated peak %g > %g", where, r,
                      rm.peak_memory, peak);
        if (limit > 0)
            ck_assert_msg(rm.peak_memory <= limit + 1e-9, "%s: rank %d peak %g above %g", where, r,
                          rm.peak_memory, limit);
    }
    if (limit > 0)
        ck_assert_msg(peak <= limit + 1e-9, "%s: list peak %g above %g", where, peak, limit);
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    return met;
}

/* ---- validity --------------------------------------------------------------------------- */

/*
 * pp 1..8 x m 1..32 x four cost sets x three limits (none, 1F1B's p chunks, 2p chunks), for
 * vpp = 1 and 2 (the loop index). One micro-batch needs 1 on a loop rank and 2 on a V rank
 * (both forwards of the rank are held at once), so V with p = 1 and the limit p = 1 must be
 * rejected and everything else accepted.
 */
START_TEST(zbauto_valid_under_limits)
{
    int v = _i + 1;
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    for (int p = 1; p <= 8; p++)
        for (int m = 1; m <= 32; m++)
            for (int ci = 0; ci < NGRID_COSTS; ci++)
                for (int li = 0; li < 3; li++) {
                    double limit = li == 0 ? 0 : li == 1 ? p : 2.0 * p;
                    ps_problem *pb = auto_problem(p, v, m, grid_costs[ci], limit);
                    char where[128];
                    snprintf(where, sizeof where, "pp=%d vpp=%d m=%d costs %d limit %g", p, v, m,
                             ci, limit);
                    if (limit > 0 && limit < v) {
                        ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
                    } else {
                        run_checked(s, sim, pb, where, NULL);
                    }
                    ps_problem_free(pb);
                }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* Per-stage costs: p = 2, stage 1 three times slower than stage 0 (f = b = w = 3 against 1).
 * Rank 1 cannot start before 1 and holds 9m of work; the scheduler must keep it busy, so the
 * makespan is exactly 1 + 9m, also under a limit of two forwards. */
START_TEST(zbauto_stage_costs)
{
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const ps_stage_cost sc[2] = {{1, 1, 1}, {3, 3, 3}};
    const double unit[4] = {1, 1, 1, 0};
    for (int m = 1; m <= 12; m++)
        for (int li = 0; li < 2; li++) {
            ps_problem *pb = auto_problem(2, 1, m, unit, li ? 2 : 0);
            ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, 2), 0);
            ps_metrics met = run_checked(s, sim, pb, "stage costs", NULL);
            ck_assert_msg(fabs(met.makespan - (1 + 9 * m)) < 1e-9, "m=%d: makespan %g, want %d", m,
                          met.makespan, 1 + 9 * m);
            ps_problem_free(pb);
        }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/*
 * Under a MoE model zb-auto plans with the durations the simulator uses: each stage's planned
 * F, I and W plus its extras (the performance model's embedding, output layer and loss). pp 2,
 * one layer per stage, the serial planner, no all-to-all: planned F = attn + mlp = 2 + 3 = 5,
 * I = mlp_dx + attn_dx = 3 + 2 = 5, W = mlp_dw + attn_dw = 1 + 1 = 2 on both stages. Extras:
 * stage 0 {0.5, 0, 0} (the embedding), stage 1 {4, 6, 2} (the output layer and the loss, the
 * heavier stage): F 5.5 and 9, I 5 and 11, W 2 and 4. zb-auto must then make, for every m and
 * limit, the schedule it makes from those per-stage costs given directly, and the simulation
 * the same makespan.
 */
START_TEST(zbauto_moe_extras)
{
    ps_moe_model mm;
    memset(&mm, 0, sizeof mm);
    mm.layers = 2;
    mm.moe.t[PS_OP_ATTN] = 2, mm.moe.t[PS_OP_MLP] = 3;
    mm.moe.t[PS_OP_MLP_DX] = 3, mm.moe.t[PS_OP_ATTN_DX] = 2;
    mm.moe.t[PS_OP_MLP_DW] = 1, mm.moe.t[PS_OP_ATTN_DW] = 1;
    mm.planner = PS_PLANNER_SERIAL;
    const ps_stage_cost extra[2] = {{0.5, 0, 0}, {4, 6, 2}};
    const ps_stage_cost want[2] = {{5.5, 5, 2}, {9, 11, 4}};
    const double zero[4] = {0, 0, 0, 0}, unit[4] = {1, 1, 1, 0};
    ps_schedule *s, *direct;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_new(&direct, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    for (int m = 1; m <= 8; m++)
        for (int li = 0; li < 2; li++) {
            double limit = li ? 2 : 0;
            ps_problem *moe = auto_problem(2, 1, m, zero, limit);
            ck_assert_int_eq(ps_problem_set_moe(moe, &mm), 0);
            ck_assert_int_eq(ps__problem_set_moe_extra(moe, extra, 2), 0);
            ps_stage_cost fbw[2];
            char err[PS__ERRLEN] = "";
            ck_assert_int_eq(ps__moe_stage_fbw(moe, 2, 1, fbw, err), 0);
            for (int st = 0; st < 2; st++)
                ck_assert_msg(fabs(fbw[st].f - want[st].f) < 1e-12 &&
                                  fabs(fbw[st].b - want[st].b) < 1e-12 &&
                                  fabs(fbw[st].w - want[st].w) < 1e-12,
                              "stage %d plans {%g, %g, %g}, want {%g, %g, %g}", st, fbw[st].f,
                              fbw[st].b, fbw[st].w, want[st].f, want[st].b, want[st].w);
            ps_problem *plain = auto_problem(2, 1, m, unit, limit);
            ck_assert_int_eq(ps_problem_set_stage_costs(plain, want, 2), 0);
            char where[64];
            snprintf(where, sizeof where, "MoE m=%d limit %g", m, limit);
            ps_metrics a = run_checked(s, sim, moe, where, NULL);
            ps_metrics b = run_checked(direct, sim, plain, "direct", NULL);
            for (int r = 0; r < 2; r++) {
                char x[4096], y[4096];
                rank_string(s, r, x, sizeof x);
                rank_string(direct, r, y, sizeof y);
                ck_assert_msg(strcmp(x, y) == 0, "%s rank %d: %s, from the costs: %s", where, r, x,
                              y);
            }
            ck_assert_msg(fabs(a.makespan - b.makespan) < 1e-9, "%s: makespan %g, want %g", where,
                          a.makespan, b.makespan);
            ps_problem_free(plain);
            ps_problem_free(moe);
        }
    /* Extras that do not match the stages are refused, as the simulator refuses them. */
    ps_problem *moe = auto_problem(2, 1, 4, zero, 0);
    ck_assert_int_eq(ps_problem_set_moe(moe, &mm), 0);
    ck_assert_int_eq(ps__problem_set_moe_extra(moe, extra, 1), 0);
    ck_assert_int_eq(ps_schedule_generate(s, moe), PS_ECONFIG);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "the MoE extra costs has 1 entry but zb-auto with pp=2, vpp=1 has 2 stages");
    /* and by the planned durations' own check, for a caller that asks directly */
    ps_stage_cost fbw[2];
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(ps__moe_stage_fbw(moe, 2, 1, fbw, err), PS_ECONFIG);
    ck_assert_str_eq(err, "the MoE extra costs have 1 entry but the schedule has 2 stages");
    ps_problem_free(moe);
    ps_sim_free(sim);
    ps_schedule_free(direct);
    ps_schedule_free(s);
}
END_TEST

/* Per-stage memory and costs, c > 0, limits from tight to loose: valid and never above. */
START_TEST(zbauto_stage_memory)
{
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    for (int v = 1; v <= 2; v++)
        for (int p = 1; p <= 6; p++) {
            int n = p * v;
            ps_stage_mem sm[12];
            ps_stage_cost sc[12];
            for (int i = 0; i < n; i++) {
                sm[i].f = 1 + 0.5 * (i % 3);
                sm[i].b = -0.25 * sm[i].f * (1 + i % 2);
                sm[i].w = -sm[i].f - sm[i].b;
                sc[i].f = 1 + 0.25 * (i % 4);
                sc[i].b = 1.5 + 0.5 * (i % 2);
                sc[i].w = 0.5 + 0.25 * (i % 3);
            }
            for (int m = 1; m <= 20; m += 3)
                for (double limit = 4.0; limit <= 4.0 * p + 4; limit += 2.5) {
                    const double c[4] = {1, 1, 1, 0.3};
                    ps_problem *pb = auto_problem(p, v, m, c, limit);
                    ck_assert_int_eq(ps_problem_set_stage_memory(pb, sm, (size_t)n), 0);
                    ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, (size_t)n), 0);
                    char where[96];
                    snprintf(where, sizeof where, "pp=%d vpp=%d m=%d limit %g", p, v, m, limit);
                    run_checked(s, sim, pb, where, sm);
                    ps_problem_free(pb);
                }
        }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* Memory models where an I or a W adds memory: the greedy may stall there and fall back to
 * running the micro-batches one after the other; whatever it does stays valid and under. */
START_TEST(zbauto_exotic_memory)
{
    static const double models[][3] = {{0.5, 0.5, -1}, {1, 0.5, -1.5}, {2, -3, 1}, {1, -1, 0}};
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const double c[4] = {1, 1, 1, 0.1};
    for (int mi = 0; mi < 4; mi++)
        for (int v = 1; v <= 2; v++)
            for (int p = 1; p <= 5; p++)
                for (int m = 1; m <= 13; m += 4)
                    for (double limit = 0.5; limit <= 6; limit += 0.5) {
                        ps_problem *pb = auto_problem(p, v, m, c, limit);
                        ck_assert_int_eq(
                            ps_problem_set_memory(pb, models[mi][0], models[mi][1], models[mi][2]),
                            0);
                        ps_stage_mem sm[10];
                        for (int i = 0; i < p * v; i++)
                            sm[i] = ps_problem_memory(pb, i);
                        int rc = ps_schedule_generate(s, pb);
                        if (rc == PS_EUNSUPPORTED) {
                            ps_problem_free(pb);
                            continue;
                        }
                        char where[96];
                        snprintf(where, sizeof where, "model %d pp=%d vpp=%d m=%d limit %g", mi, p,
                                 v, m, limit);
                        run_checked(s, sim, pb, where, sm);
                        ps_problem_free(pb);
                    }
    /* Per-stage: I of chunk 0 adds memory, W of chunk 1 adds memory. */
    const ps_stage_mem sm[2] = {{0.5, 1, -1.5}, {0, -1, 1}};
    for (int m = 1; m <= 6; m++) {
        ps_problem *pb = auto_problem(1, 2, m, c, 1.5);
        ck_assert_int_eq(ps_problem_set_stage_memory(pb, sm, 2), 0);
        run_checked(s, sim, pb, "per-stage exotic", sm);
        ps_problem_free(pb);
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* ---- bubbles ---------------------------------------------------------------------------- */

/*
 * Unlimited memory, f = b = w = 1, c = 0, vpp = 1: for every m >= 2p-1 the bubble (largest
 * per-rank idle) is ZB-H2's (p-1)(f+b-2w) = 0 and the makespan the bound 3m + p - 1. For
 * m >= p the makespan is already the bound.
 */
START_TEST(zbauto_zero_bubble_unlimited)
{
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const double unit[4] = {1, 1, 1, 0};
    for (int p = 1; p <= 8; p++)
        for (int m = p; m <= 40; m++) {
            ps_problem *pb = auto_problem(p, 1, m, unit, 0);
            ps_metrics met = run_checked(s, sim, pb, "unlimited", NULL);
            ck_assert_msg(fabs(met.makespan - (3 * m + p - 1)) < 1e-9,
                          "pp=%d m=%d: makespan %g, bound %d", p, m, met.makespan, 3 * m + p - 1);
            if (m >= 2 * p - 1)
                ck_assert_msg(met.bubble < 1e-9, "pp=%d m=%d: bubble %g", p, m, met.bubble);
            ps_problem_free(pb);
        }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/*
 * The limit at 1F1B's memory (p forwards per rank), f = b = w = 1, c = 0, vpp = 1, m >= p:
 * bubble at most ZB-H1's (p-1)(f+b-w) = p-1 and makespan the bound 3m + p - 1 (ZB-H1's).
 */
START_TEST(zbauto_h1_bubble_at_1f1b_memory)
{
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const double unit[4] = {1, 1, 1, 0};
    for (int p = 1; p <= 8; p++)
        for (int m = p; m <= 40; m++) {
            ps_problem *pb = auto_problem(p, 1, m, unit, p);
            ps_metrics met = run_checked(s, sim, pb, "1F1B memory", NULL);
            ck_assert_msg(met.bubble <= p - 1 + 1e-9, "pp=%d m=%d: bubble %g > %d", p, m,
                          met.bubble, p - 1);
            ck_assert_msg(fabs(met.makespan - (3 * m + p - 1)) < 1e-9,
                          "pp=%d m=%d: makespan %g, bound %d", p, m, met.makespan, 3 * m + p - 1);
            ps_problem_free(pb);
        }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* V placement with the limit at 2p chunks (1F1B's memory), f = b = w = 1, c = 0, m >= p: the
 * makespan is the bound 6m + p - 1 (ZB-V's). */
START_TEST(zbauto_v_bound_at_1f1b_memory)
{
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const double unit[4] = {1, 1, 1, 0};
    for (int p = 1; p <= 8; p++)
        for (int m = p; m <= 32; m++) {
            ps_problem *pb = auto_problem(p, 2, m, unit, 2 * p);
            ps_metrics met = run_checked(s, sim, pb, "V", NULL);
            ck_assert_msg(fabs(met.makespan - (6 * m + p - 1)) < 1e-9,
                          "pp=%d m=%d: makespan %g, bound %d", p, m, met.makespan, 6 * m + p - 1);
            ps_problem_free(pb);
        }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* ---- the reference heuristic's figures -------------------------------------------------- */

/*
 * Makespans of the zero-bubble project's greedy heuristic at f = b = w = 1, c = 0
 * (reference/peer-figures.md): zb:zb unlimited and with --mem-mult 1 (limit p), and zb:zbv
 * (V, limit 2p chunks). zb-auto must match or beat every one.
 */
START_TEST(zbauto_reference_figures)
{
    static const struct {
        int p, m;
        double zb, zbv;
    } fig[] = {{4, 8, 27, 51},
               {8, 32, 103, 199},
               {16, 64, 207, 399},
               {32, 256, 799, 1567},
               {64, 1024, 3135, 6207}};
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    const double unit[4] = {1, 1, 1, 0};
    for (size_t i = 0; i < sizeof fig / sizeof fig[0]; i++) {
        int p = fig[i].p, m = fig[i].m;
        for (int k = 0; k < 3; k++) {
            int v = k == 2 ? 2 : 1;
            double limit = k == 0   ? 0
                           : k == 1 ? p
                                    : 2.0 * p,
                   want = v == 2 ? fig[i].zbv : fig[i].zb;
            ps_problem *pb = auto_problem(p, v, m, unit, limit);
            char where[64];
            snprintf(where, sizeof where, "%dx%d vpp=%d limit %g", p, m, v, limit);
            ps_metrics met = run_checked(s, sim, pb, where, NULL);
            ck_assert_msg(met.makespan <= want + 1e-9, "%s: makespan %g, reference %g", where,
                          met.makespan, want);
            ps_problem_free(pb);
        }
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* ---- determinism ------------------------------------------------------------------------ */

static void assert_same_lists(const ps_schedule *a, const ps_schedule *b)
{
    ck_assert_int_eq(ps_schedule_pp(a), ps_schedule_pp(b));
    for (int r = 0; r < ps_schedule_pp(a); r++) {
        size_t n = ps_schedule_rank_length(a, r);
        ck_assert_uint_eq(n, ps_schedule_rank_length(b, r));
        ck_assert(memcmp(ps_schedule_rank_actions(a, r), ps_schedule_rank_actions(b, r),
                         n * sizeof(ps_action)) == 0);
    }
}

START_TEST(zbauto_deterministic)
{
    static const double costs[][4] = {{1, 1, 1, 0}, {1, 2, 1, 0.1}, {0.75, 0.25, 0.125, 0.5}};
    for (int ci = 0; ci < 3; ci++)
        for (int v = 1; v <= 2; v++)
            for (int li = 0; li < 2; li++) {
                ps_problem *pb = auto_problem(6, v, 19, costs[ci], li ? 6.0 * v : 0);
                ps_schedule *a, *b;
                ck_assert_int_eq(ps_schedule_new(&a, NULL), 0);
                ck_assert_int_eq(ps_schedule_new(&b, NULL), 0);
                ck_assert_int_eq(ps_schedule_generate(a, pb), 0);
                ck_assert_int_eq(ps_schedule_generate(b, pb), 0);
                assert_same_lists(a, b);
                /* Regenerating into a used schedule gives the same lists too. */
                ck_assert_int_eq(ps_schedule_generate(b, pb), 0);
                assert_same_lists(a, b);
                ps_schedule_free(a);
                ps_schedule_free(b);
                ps_problem_free(pb);
            }
}
END_TEST

/* ---- rejections ------------------------------------------------------------------------- */

START_TEST(zbauto_rejects_vpp)
{
    const double unit[4] = {1, 1, 1, 0};
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    for (int v = 3; v <= 4; v++) {
        ps_problem *pb = auto_problem(4, v, 8, unit, 0);
        ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
        char want[96];
        snprintf(want, sizeof want,
                 "zb-auto supports vpp = 1 (loop) or 2 (V placement); got vpp=%d", v);
        ck_assert_msg(strstr(ps_schedule_last_error(s), want) != NULL, "%s",
                      ps_schedule_last_error(s));
        ps_problem_free(pb);
    }
    ps_schedule_free(s);
}
END_TEST

START_TEST(zbauto_rejects_small_limit)
{
    const double unit[4] = {1, 1, 1, 0};
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    /* Loop: one forward (1) must fit. */
    ps_problem *pb = auto_problem(4, 1, 8, unit, 0.5);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
    ck_assert_msg(strstr(ps_schedule_last_error(s),
                         "memory limit 0.5 is below the 1 that one micro-batch needs on rank 0") !=
                      NULL,
                  "%s", ps_schedule_last_error(s));
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 1), 0);
    ps_metrics met = run_checked(s, sim, pb, "limit 1", NULL);
    /* One micro-batch at a time: 8 round trips of 4 F, 4 I and the last W. */
    ck_assert_double_eq_tol(met.makespan, 8 * 9, 1e-9);
    ps_problem_free(pb);
    /* V: both forwards of a rank (2) must fit. */
    pb = auto_problem(4, 2, 8, unit, 1.5);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
    ck_assert_msg(strstr(ps_schedule_last_error(s),
                         "memory limit 1.5 is below the 2 that one micro-batch needs on rank 0, "
                         "which holds the forwards of stages 0 and 7 at once") != NULL,
                  "%s", ps_schedule_last_error(s));
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 2), 0);
    run_checked(s, sim, pb, "limit 2", NULL);
    ps_problem_free(pb);
    /* Per-stage: only rank 2's forward (3) is too big for 2.5. */
    ps_stage_mem sm[4] = {{1, -0.5, -0.5}, {1, -0.5, -0.5}, {3, -1, -2}, {1, -0.5, -0.5}};
    pb = auto_problem(4, 1, 8, unit, 2.5);
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, sm, 4), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
    ck_assert_msg(strstr(ps_schedule_last_error(s),
                         "below the 3 that one micro-batch needs on rank 2 (stage 2: F +3, I -1, "
                         "W -2)") != NULL,
                  "%s", ps_schedule_last_error(s));
    ps_problem_free(pb);
    ps_sim_free(sim);
    ps_schedule_free(s);
}
END_TEST

/* ---- allocation failure ----------------------------------------------------------------- */

/* Fails the Nth allocation for every N until generation succeeds: each failure is PS_ENOMEM
 * and leaves nothing allocated once the schedule is freed. */
START_TEST(zbauto_alloc_failure)
{
    const double costs[4] = {1, 2, 1, 0.1};
    for (int v = 1; v <= 2; v++) {
        ps_problem *pb = auto_problem(4, v, 12, costs, 4.0 * v);
        int ok = 0;
        for (long n = 1; !ok && n < 1000; n++) {
            counting_alloc c = {0, n, 0, 0};
            ps_allocator al = counting_allocator(&c);
            ps_schedule *s = NULL;
            int rc = ps_schedule_new(&s, &al);
            if (rc == 0) {
                rc = ps_schedule_generate(s, pb);
                if (rc == 0) {
                    ok = c.calls < n; /* no failure was injected */
                    c.fail_at = 0;    /* the validator allocates too */
                    ck_assert_int_eq(ps_schedule_validate(s), 0);
                } else {
                    ck_assert_int_eq(rc, PS_ENOMEM);
                }
                ps_schedule_free(s);
            } else {
                ck_assert_int_eq(rc, PS_ENOMEM);
            }
            ck_assert_int_eq(c.live, 0);
            ck_assert_uint_eq(c.bytes, 0);
        }
        ck_assert(ok);
        ps_problem_free(pb);
    }
}
END_TEST

/* A generator's own message survives the registry: the failure of zb-auto's search block says
 * what it could not allocate, not a generic "out of memory while generating", and a message
 * that already names the family is not prefixed with it twice. */
START_TEST(zbauto_alloc_failure_keeps_message)
{
    const double costs[4] = {1, 2, 1, 0.1};
    ps_problem *pb = auto_problem(4, 1, 12, costs, 4.0);
    int search_block = 0, ok = 0;
    for (long n = 1; !ok && n < 1000; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator al = counting_allocator(&c);
        ps_schedule *s = NULL;
        if (ps_schedule_new(&s, &al) == 0) {
            int rc = ps_schedule_generate(s, pb);
            const char *msg = ps_schedule_last_error(s);
            if (rc == 0)
                ok = c.calls < n;
            else {
                ck_assert_int_eq(rc, PS_ENOMEM);
                ck_assert_msg(!strstr(msg, "zb-auto: zb-auto:"), "doubled prefix: %s", msg);
                static const char want[] = "zb-auto: out of memory for the zb-auto search (";
                if (strncmp(msg, want, sizeof want - 1) == 0)
                    search_block++;
            }
        }
        ps_schedule_free(s);
        ck_assert_int_eq(c.live, 0);
    }
    ck_assert(ok);
    ck_assert_int_eq(search_block, 1);
    ps_problem_free(pb);
}
END_TEST

/* Makespan and largest per-rank peak memory of family under the given costs and limit;
 * returns the simulator's code. */
static int measure(const char *family, int p, int v, int m, const double c4[4], double limit,
                   double *makespan, double *peak)
{
    ps_problem *pb = make_problem(family, p, v, m, c4[0], c4[1], c4[2], c4[3]);
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, limit), 0);
    ps_schedule *s;
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    int rc = ps_sim_run(sim, s, pb);
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    *makespan = met.makespan;
    *peak = 0;
    for (int r = 0; r < p; r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(sim, r, &rm);
        if (rm.peak_memory > *peak)
            *peak = rm.peak_memory;
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return rc;
}

START_TEST(zbauto_never_worse_than_handcrafted)
{
    /* With the limit at a handcrafted schedule's own peak memory, zb-auto is at least as
     * fast: ZB-H1 and ZB-H2 for one chunk, ZB-V for the V, over cost ratios where the greedy
     * alone can lose (c > 0, b != f). */
    static const double costs[][4] = {
        {1, 2, 1, 0.1}, {2, 1, 1, 0}, {1, 1, 1, 0.3}, {1, 1.5, 0.5, 0.25}, {3, 1, 2, 0.5}};
    static const char *const one[] = {"zb-h1", "zb-h2"};
    for (int ci = 0; ci < 5; ci++)
        for (int p = 2; p <= 6; p++)
            for (int m = p; m <= 3 * p; m += p) {
                for (int k = 0; k < 3; k++) {
                    const char *hand = k < 2 ? one[k] : "zb-v";
                    int v = k < 2 ? 1 : 2;
                    double hm, hp, am, ap;
                    ck_assert_int_eq(measure(hand, p, v, m, costs[ci], 0, &hm, &hp), 0);
                    ck_assert_int_eq(measure("zb-auto", p, v, m, costs[ci], hp, &am, &ap), 0);
                    ck_assert_msg(am <= hm * (1 + 1e-12) && ap <= hp * (1 + 1e-12),
                                  "%s p=%d m=%d costs %d: zb-auto %g (peak %g) vs %g (peak %g)",
                                  hand, p, m, ci, am, ap, hm, hp);
                }
            }
}
END_TEST

int main(void)
{
    Suite *su = suite_create("zbauto");
    TCase *tc = tcase_create("validity");
    tcase_add_loop_test(tc, zbauto_valid_under_limits, 0, 2);
    tcase_add_test(tc, zbauto_stage_costs);
    tcase_add_test(tc, zbauto_moe_extras);
    tcase_add_test(tc, zbauto_stage_memory);
    tcase_add_test(tc, zbauto_exotic_memory);
    suite_add_tcase(su, tc);
    tc = tcase_create("bubble");
    tcase_add_test(tc, zbauto_zero_bubble_unlimited);
    tcase_add_test(tc, zbauto_h1_bubble_at_1f1b_memory);
    tcase_add_test(tc, zbauto_v_bound_at_1f1b_memory);
    suite_add_tcase(su, tc);
    tc = tcase_create("reference");
    tcase_add_test(tc, zbauto_reference_figures);
    tcase_add_test(tc, zbauto_never_worse_than_handcrafted);
    suite_add_tcase(su, tc);
    tc = tcase_create("determinism");
    tcase_add_test(tc, zbauto_deterministic);
    suite_add_tcase(su, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, zbauto_rejects_vpp);
    tcase_add_test(tc, zbauto_rejects_small_limit);
    tcase_add_test(tc, zbauto_alloc_failure);
    tcase_add_test(tc, zbauto_alloc_failure_keeps_message);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
