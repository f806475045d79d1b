/*
 * The simulator: transfer costs, per-stage costs, fused pairs, memory counting with I/W,
 * re-use of one simulator across schedules, and its error paths. Expected values are worked
 * by hand in the comments.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "engine/sim.h" /* PS__SIM_SPARE_MEMOS, the planned count */
#include "internal.h"   /* ps__problem_set_moe_extra */

#include <math.h>

static ps_schedule *load(const char *csv)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_load_csv(s, csv, strlen(csv), PS_CSV_AUTO, 0);
    ck_assert_msg(rc == 0, "load: %s", ps_schedule_last_error(s));
    return s;
}

static ps_metrics simulate(ps_schedule *s, ps_problem *pb, ps_sim **out)
{
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    int rc = ps_sim_run(sim, s, pb);
    ck_assert_msg(rc == 0, "sim: %s", ps_sim_last_error(sim));
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    *out = sim;
    return m;
}

START_TEST(sim_transfer_cost)
{
    /* 1F1B, p = 2, m = 1, f = 1, b + w = 2, c = 1:
     * 0F0 0-1; arrives 2; 1F0 2-3; 1B0 3-5; arrives 6; 0B0 6-8. */
    ps_problem *pb = make_problem("1f1b", 2, 1, 1, 1, 1, 1, 1);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 8);
    ck_assert_double_eq(ps_sim_starts(sim, 1)[0], 2);
    ck_assert_double_eq(ps_sim_starts(sim, 0)[1], 6);
    ps_rank_metrics r0;
    ps_sim_rank_metrics(sim, 0, &r0);
    ck_assert_double_eq(r0.busy, 3);
    ck_assert_double_eq(r0.span, 8);
    ck_assert_double_eq(r0.idle, 5);
    ck_assert_double_eq(m.bubble, 5);
    ck_assert_double_eq_tol(m.bubble_ratio, 1 - 6.0 / 16.0, 1e-12);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(sim_colocated_stages_skip_transfer)
{
    /* V placement on 2 ranks (stages 1 and 2 on rank 1), c = 10, f = b = 1, w = 0:
     * 0F0 0-1 | 1F0 11-12 | 2F0 12-13 (same rank, no c) | 3F0 23-24 | 3B0 24-25 |
     * 2B0 35-36 | 1B0 36-37 | 0B0 47-48. */
    ps_schedule *s = load("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n");
    ps_problem *pb = make_problem("1f1b", 2, 1, 1, 1, 1, 0, 10);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 48);
    const double *st1 = ps_sim_starts(sim, 1);
    ck_assert_double_eq(st1[0], 11);
    ck_assert_double_eq(st1[1], 12);
    ck_assert_double_eq(st1[2], 35);
    ck_assert_double_eq(st1[3], 36);
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

START_TEST(sim_stage_costs)
{
    /* GPipe p = 2, m = 2 with stage 0: f=1,b=1,w=0 and stage 1: f=3,b=2,w=1.
     * Rank 0: F0 0-1, F1 1-2. Rank 1: F0 1-4, F1 4-7, B0 7-10, B1 10-13.
     * Rank 0: B0 10-11, B1 13-14. */
    ps_schedule *s = load("0F0,0F1,0B0,0B1\n1F0,1F1,1B0,1B1\n");
    ps_problem *pb = make_problem("gpipe", 2, 1, 2, 1, 1, 1, 0);
    const ps_stage_cost sc[2] = {{1, 1, 0}, {3, 2, 1}};
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, 2), 0);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 14);
    ck_assert_double_eq(ps_sim_starts(sim, 0)[2], 10);
    ck_assert_double_eq(ps_sim_ends(sim, 1)[3], 13);
    ps_action b1 = {PS_B, 0, 0, 1, 0, 0, 0};
    ck_assert_double_eq(ps_sim_duration(sim, &b1), 3);
    /* Wrong count of stage costs. */
    const ps_stage_cost three[3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, three, 3), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_sim_last_error(sim), "3 entries but the schedule has 2"));
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, NULL, 0), 0);
    ck_assert_int_eq(ps_problem_stage_costs(pb, NULL), 0);
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

START_TEST(sim_fused_pairs_and_memory)
{
    /* One rank, two stages (0 and 1), 2 micro-batches, split backward:
     * 0F0 1F0 1I0 (0F1;0I0) 1F1... written so that a fused pair runs F of mb 1 with the
     * input-backward of mb 0 on stage 0. f = 1, b = 2, w = 1, fb default = f + b = 3.
     * Order: 0F0 0-1, 1F0 1-2, 1I0 2-4, (0F1;0I0) 4-7, 1F1 7-8, 1B1 8-11, 0B1 11-14,
     * 1W0 14-15, 0W0 15-16. Activations: +1 +1 0 (+1 peak 3, 0) +1 (peak 4) -1 -1 -1 -1. */
    ps_schedule *s = load("0F0,1F0,1I0,(0F1;0I0)OVERLAP_F_B,1F1,1B1,0B1,1W0,0W0\n");
    ps_problem *pb = make_problem("1f1b", 1, 1, 1, 1, 2, 1, 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 16);
    ck_assert_double_eq(ps_sim_starts(sim, 0)[4], 7);
    ps_rank_metrics r;
    ps_sim_rank_metrics(sim, 0, &r);
    ck_assert_int_eq(r.peak_activations, 4);
    ck_assert_double_eq(r.idle, 0);
    /* An explicit fused cost replaces f + b. */
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, 2), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_sim_metrics(sim, &m);
    ck_assert_double_eq(m.makespan, 15);
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

START_TEST(sim_reuse_across_sizes)
{
    ps_sim *sim;
    ps_schedule *s;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    const int sizes[][3] = {{2, 1, 4}, {8, 2, 32}, {1, 1, 1}, {4, 4, 16}};
    for (int i = 0; i < 4; i++) {
        ps_problem *pb =
            make_problem("interleaved", sizes[i][0], sizes[i][1], sizes[i][2], 1, 1, 1, 0);
        ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
        ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
        ps_metrics m;
        ps_sim_metrics(sim, &m);
        int p = sizes[i][0], v = sizes[i][1], mb = sizes[i][2];
        ck_assert_double_eq(m.makespan, 3.0 * (mb * v + p - 1));
        ps_problem_free(pb);
    }
    ps_schedule_free(s);
    ps_sim_free(sim);
}
END_TEST

START_TEST(sim_errors)
{
    ps_sim *sim;
    ps_problem *pb;
    ps_schedule *s;
    ps_metrics m;
    ps_rank_metrics rm;
    ck_assert_int_eq(ps_sim_new(NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_run(NULL, s, pb), PS_EINVAL);
    ck_assert_int_eq(ps_sim_run(sim, NULL, pb), PS_EINVAL);
    ck_assert_int_eq(ps_sim_run(sim, s, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_EINVAL); /* empty schedule */
    ck_assert_int_eq(ps_sim_metrics(sim, &m), PS_ESTATE);
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 0, &rm), PS_ESTATE);
    ck_assert_ptr_null(ps_sim_starts(sim, 0));
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 4, &rm), PS_EINVAL);
    ck_assert_int_eq(ps_sim_rank_metrics(sim, -1, &rm), PS_EINVAL);
    ck_assert_ptr_null(ps_sim_ends(sim, 4));
    ck_assert_int_eq(ps_sim_metrics(sim, NULL), PS_EINVAL);
    ck_assert_str_eq(ps_sim_last_error(NULL), "invalid argument: NULL simulator");
    ps_sim_free(sim);
    ps_sim_free(NULL);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(sim_replay_matches_engine)
{
    /* Before validation the simulator drives the engine; after it, it replays the recorded
     * issue order. Both must give the same timeline, bit for bit. */
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    const int sizes[][3] = {{1, 1, 3}, {3, 1, 7}, {4, 2, 8}, {5, 3, 10}, {8, 4, 32}};
    for (int k = 0; k < 5; k++) {
        ps_problem *pb =
            make_problem(fi.name, sizes[k][0], sizes[k][1], sizes[k][2], 1, 1.5, 0.75, 0.25);
        ps_schedule *s;
        ps_sim *a, *b;
        ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
        if (ps_schedule_generate(s, pb)) {
            ps_schedule_free(s);
            ps_problem_free(pb);
            continue;
        }
        ck_assert_int_eq(ps_sim_new(&a, NULL), 0);
        ck_assert_int_eq(ps_sim_new(&b, NULL), 0);
        ck_assert_int_eq(ps_sim_run(a, s, pb), 0);
        ck_assert_int_eq(ps_schedule_validate(s), 0);
        ck_assert_int_eq(ps_sim_run(b, s, pb), 0);
        for (int r = 0; r < ps_schedule_pp(s); r++) {
            size_t n = ps_schedule_rank_length(s, r);
            ck_assert(memcmp(ps_sim_starts(a, r), ps_sim_starts(b, r), n * sizeof(double)) == 0);
            ck_assert(memcmp(ps_sim_ends(a, r), ps_sim_ends(b, r), n * sizeof(double)) == 0);
            ps_rank_metrics ra, rb;
            ps_sim_rank_metrics(a, r, &ra);
            ps_sim_rank_metrics(b, r, &rb);
            ck_assert_int_eq(ra.peak_activations, rb.peak_activations);
        }
        ps_sim_free(a);
        ps_sim_free(b);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
}
END_TEST

/* The makespan of s under pb with the transfer cost set to c (pb keeps c afterwards). */
static double makespan_at(ps_schedule *s, ps_problem *pb, double c)
{
    ps_sim *sim;
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_C, c), 0);
    ps_metrics m = simulate(s, pb, &sim);
    ps_sim_free(sim);
    return m.makespan;
}

START_TEST(sim_critical_transfers_by_hand)
{
    /* 1F1B, p = 2, m = 3, f = 1, B = b + w = 2, c = 0.25 (exact in binary). Rank 0 runs F0 F1
     * B0 F2 B1 B2, rank 1 F0 B0 F1 B1 F2 B2:
     *   0F0 0-1, 0F1 1-2; 1F0 1.25-2.25, 1B0 2.25-4.25; 0B0 4.5-6.5 (gradient at 4.5);
     *   1F1 4.25-5.25 (input there at 2.25), 1B1 5.25-7.25; 0F2 6.5-7.5; 0B1 7.5-9.5 (free and
     *   gradient both at 7.5); 1F2 7.75-8.75 (input at 7.75), 1B2 8.75-10.75; 0B2 11-13.
     * With c = 0 the same lists give 4 (f + B) = 12: a critical path that is critical at both.
     * Walking back from 0B2: the gradient of 1B2 (a transfer), 1F2 by its rank, the input from
     * 0F2 (a transfer), 0B0 by its rank, the gradient of 1B0 (a transfer), 1F0 by its rank,
     * the input from 0F0 (a transfer), which starts at 0: 4 transfers, 13 = 4 (f + B) + 4c. */
    ps_problem *pb = make_problem("1f1b", 2, 1, 3, 1, 1.5, 0.5, 0.25);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_sim *sim;
    int64_t n = -1;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps__sim_critical_transfers(sim, &n), PS_ESTATE);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_int_eq(ps__sim_critical_transfers(NULL, &n), PS_EINVAL);
    ck_assert_int_eq(ps__sim_critical_transfers(sim, NULL), PS_EINVAL);
    const double want0[] = {0, 1, 4.5, 6.5, 7.5, 11},
                 want1[] = {1.25, 2.25, 4.25, 5.25, 7.75, 8.75};
    for (int i = 0; i < 6; i++) {
        ck_assert_double_eq(ps_sim_starts(sim, 0)[i], want0[i]);
        ck_assert_double_eq(ps_sim_starts(sim, 1)[i], want1[i]);
    }
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    ck_assert_double_eq(m.makespan, 13);
    ck_assert_int_eq(ps__sim_critical_transfers(sim, &n), 0);
    ck_assert_int_eq(n, 4);
    ck_assert_double_eq(makespan_at(s, pb, 0), 12);
    ck_assert_double_eq(m.makespan - 12, (double)n * 0.25);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/*
 * For every family: GPipe with uniform costs has its critical path at every c, through the
 * 2(p - 1) transfers of the first forward and the last backward, so the count is 2(p - 1) and
 * makespan(c) - makespan(0) = 2(p - 1)c (rank r's first forward starts at r(f + c), rank 0's
 * last backward ends (p - 1)(B + c) after the last rank's): (m + p - 1)(f + B) + 2(p - 1)c.
 * 1F1B's path zigzags between the last two ranks (the hand-worked case above) and stays
 * critical at c = 0 too: the count's time is what free transfers save.
 * Every family: the path without its c is a chain of the c = 0 timeline, so
 * makespan(c) - makespan(0) <= count.c <= makespan(c); with c = 0 the count is 0 or more but
 * the figure count.c is 0.
 */
START_TEST(sim_critical_transfers_bounds)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    const int sizes[][3] = {{1, 1, 3}, {2, 1, 4}, {4, 2, 8}, {5, 3, 10}, {8, 4, 32}};
    const double cs[] = {0.25, 0.5, 3};
    for (int k = 0; k < 5; k++) {
        for (int q = 0; q < 3; q++) {
            double c = cs[q];
            int p = sizes[k][0], v = sizes[k][1], mb = sizes[k][2];
            ps_problem *pb = make_problem(fi.name, p, v, mb, 1, 1.5, 0.75, c);
            ps_schedule *s;
            ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
            if (ps_schedule_generate(s, pb)) {
                ps_schedule_free(s);
                ps_problem_free(pb);
                continue;
            }
            ck_assert_int_eq(ps_schedule_validate(s), 0);
            ps_sim *sim;
            ps_metrics m = simulate(s, pb, &sim);
            int64_t n;
            ck_assert_int_eq(ps__sim_critical_transfers(sim, &n), 0);
            double exposed = (double)n * c, saved = m.makespan - makespan_at(s, pb, 0);
            ck_assert_msg(exposed >= saved - 1e-9 && exposed <= m.makespan,
                          "%s p%d v%d m%d c%g: %g transfers' time, %g saved, makespan %g", fi.name,
                          p, v, mb, c, exposed, saved, m.makespan);
            if (strcmp(fi.name, "1f1b") == 0) /* its critical path stays critical at c = 0 */
                ck_assert_double_eq_tol(exposed, saved, 1e-9);
            if (strcmp(fi.name, "gpipe") == 0) {
                ck_assert_int_eq(n, 2 * (p - 1));
                ck_assert_double_eq_tol(m.makespan, (mb + p - 1) * 3.25 + 2 * (p - 1) * c, 1e-9);
                ck_assert_double_eq_tol(saved, 2 * (p - 1) * c, 1e-9);
            }
            ps_sim_free(sim);
            ps_schedule_free(s);
            ps_problem_free(pb);
        }
    }
}
END_TEST

START_TEST(sim_stale_after_regeneration)
{
    ps_problem *pb = make_problem("1f1b", 4, 1, 8, 1, 1, 1, 0);
    ps_schedule *s;
    ps_sim *sim;
    ps_metrics m;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    /* Lowering keeps the compute lists: the timeline stays valid. */
    ck_assert_int_eq(ps_schedule_lower(s), 0);
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_sim_metrics(sim, &m), PS_ESTATE);
    ck_assert_ptr_null(ps_sim_starts(sim, 0));
    ps_rank_metrics rm;
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 3, &rm), PS_ESTATE);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* A problem's per-stage tables must have one entry per stage of the schedule simulated (not
 * of the schedule it would generate): costs first, then memory; the run keeps no timeline. */
START_TEST(sim_stage_tables_must_match)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 4, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);

    const ps_stage_cost three[3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    const ps_stage_mem one[1] = {{1, -0.5, -0.5}};
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, three, 3), 0);
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, one, 1), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_sim_last_error(sim),
                     "stage_costs has 3 entries but the schedule has 2 stages");
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), PS_ESTATE);
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, NULL, 0), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_sim_last_error(sim),
                     "stage_memory has 1 entry but the schedule has 2 stages");
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, NULL, 0), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* The per-stage extras of MoE mode (the performance model's embedding and output layer): one
 * layer per stage, attn 2 and mlp 3 on the compute stream, no all-to-all, 1f1b on pp = 2.
 * Planned F = 2 + 3 = 5; extras stage 0 {1, 0, 0}, stage 1 {0.5, 2, 1}: F0 = 6, F1 = 5.5.
 * The planned I of a layer is mlp_dx + attn_dx = 3 + 2 = 5, W = 0 (no dW given): I1 = 7 and
 * B1 = 5 + 2 + 1 = 8. A count that does not match the stages is PS_ECONFIG. */
START_TEST(sim_moe_extra_costs)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 2, 1, 1, 1, 0);
    ps_moe_model m;
    memset(&m, 0, sizeof m);
    m.layers = 2;
    m.moe.t[PS_OP_ATTN] = 2, m.moe.t[PS_OP_MLP] = 3;
    m.moe.t[PS_OP_MLP_DX] = 3, m.moe.t[PS_OP_ATTN_DX] = 2;
    m.planner = PS_PLANNER_SERIAL;
    ck_assert_int_eq(ps_problem_set_moe(pb, &m), 0);
    const ps_stage_cost x[2] = {{1, 0, 0}, {0.5, 2, 1}};
    ck_assert_int_eq(ps__problem_set_moe_extra(pb, x, 2), 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_action f0 = {PS_F, 0, 0, 0, 0, 0, 0}, f1 = {PS_F, 0, 0, 1, 0, 0, 0};
    ps_action b1 = {PS_B, 0, 0, 1, 0, 0, 0}, i1 = {PS_I, 0, 0, 1, 0, 0, 0};
    ck_assert_double_eq_tol(ps_sim_duration(sim, &f0), 6, 1e-12);
    ck_assert_double_eq_tol(ps_sim_duration(sim, &f1), 5.5, 1e-12);
    ck_assert_double_eq_tol(ps_sim_duration(sim, &i1), 7, 1e-12);
    ck_assert_double_eq_tol(ps_sim_duration(sim, &b1), 8, 1e-12);
    /* 1f1b, p = 2, m = 2, c = 0: F0 F0 on rank 0 (0-6, 6-12); rank 1: F1(0) 6-11.5,
     * B1(0) 11.5-19.5, F1(1) 19.5-25, B1(1) 25-33; rank 0: B0(0) after 19.5, B0 = 5: 24.5,
     * B0(1) 33-38. */
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    ck_assert_double_eq_tol(met.makespan, 38, 1e-12);
    /* the public stage_costs stay exclusive with a MoE model; a wrong extra count is refused */
    ck_assert_int_eq(ps__problem_set_moe_extra(pb, x, 1), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_sim_last_error(sim), "MoE extra"));
    const ps_stage_cost bad = {-1, 0, 0};
    ck_assert_int_eq(ps__problem_set_moe_extra(pb, &bad, 1), PS_ERANGE);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* A MoE model of 24 layers, the first 2 dense, whose all-to-all the planner can hide. */
static ps_moe_model overlap_model(double scale)
{
    ps_moe_model m;
    memset(&m, 0, sizeof m);
    m.layers = 24, m.dense_layers = 2;
    const double moe[PS_OP_LAYER_COUNT] = {2, 1.5, 3, 1, 1.5, 1.5, 1, 3, 1.5, 2, 3, 1, 2, 0.5};
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
        m.moe.t[k] = scale * moe[k];
    m.dense.t[PS_OP_ATTN] = 2, m.dense.t[PS_OP_MLP] = 4, m.dense.t[PS_OP_MLP_DX] = 4;
    m.dense.t[PS_OP_ATTN_DX] = 2, m.dense.t[PS_OP_MLP_DW] = 4, m.dense.t[PS_OP_ATTN_DW] = 2;
    m.planner = PS_PLANNER_ADAPTIVE;
    return m;
}

/* Run k: the kept simulator's timeline equals the fresh one's bit for bit on the 4 ranks. */
static void same_timeline(const ps_sim *kept, const ps_sim *fresh, const ps_schedule *s, int k)
{
    for (int r = 0; r < 4; r++) {
        size_t n = ps_schedule_rank_length(s, r);
        ck_assert_msg(
            !memcmp(ps_sim_starts(kept, r), ps_sim_starts(fresh, r), n * sizeof(double)) &&
                !memcmp(ps_sim_ends(kept, r), ps_sim_ends(fresh, r), n * sizeof(double)),
            "run %d, rank %d", k, r);
    }
}

/*
 * The simulator keeps its overlap plans from run to run while the MoE model is the same and
 * plans only the layer compositions and fused pairs it has not seen: one simulator through
 * splits that add compositions (more than the 8 classes its first pair table holds), a
 * changed model, a forgotten memo and a dense run gives, every time, the timeline and the
 * all-to-all figures of a fresh simulator, bit for bit.
 */
START_TEST(sim_moe_plans_kept_across_runs)
{
    const int32_t even[8] = {3, 3, 3, 3, 3, 3, 3, 3}, up[8] = {1, 1, 2, 2, 3, 4, 5, 6},
                  down[8] = {6, 5, 4, 3, 2, 2, 1, 1};
    const int32_t *splits[] = {even, up, down, even, up, down, even};
    const double scale[] = {1, 1, 1, 1, 2, 2, 2};
    ps_sim *kept;
    ck_assert_int_eq(ps_sim_new(&kept, NULL), 0);
    for (int k = 0; k < 8; k++) {
        int dense = k == 7; /* a run without a model between the MoE runs */
        ps_problem *pb = make_problem("dualpipev", 4, 2, 8, 1, 1, 1, 0.5);
        ps_moe_model m = overlap_model(scale[k < 7 ? k : 0]);
        if (!dense) {
            ck_assert_int_eq(ps_problem_set_moe(pb, &m), 0);
            ck_assert_int_eq(ps_problem_set_stage_layers(pb, splits[k], 8), 0);
        }
        ps_schedule *s;
        ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
        ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
        ck_assert_int_eq(ps_schedule_validate(s), 0);
        if (k == 5)
            ps__sim_forget_plans(kept);
        ps_sim *fresh;
        ck_assert_int_eq(ps_sim_new(&fresh, NULL), 0);
        ck_assert_int_eq(ps_sim_run(fresh, s, pb), 0);
        ck_assert_msg(ps_sim_run(kept, s, pb) == 0, "run %d: %s", k, ps_sim_last_error(kept));
        same_timeline(kept, fresh, s, k);
        ps_comm_metrics ca, cb;
        int rc = ps_sim_comm(kept, &ca);
        ck_assert_int_eq(rc, dense ? PS_ENOTFOUND : 0);
        if (!dense) {
            ck_assert_int_eq(ps_sim_comm(fresh, &cb), 0);
            ck_assert(!memcmp(ca.total, cb.total, sizeof ca.total) &&
                      !memcmp(ca.exposed, cb.exposed, sizeof ca.exposed));
            ck_assert(ca.total[PS_PHASE_ALL] > ca.exposed[PS_PHASE_ALL]); /* some overlap */
        }
        ps_sim_free(fresh);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
    ps__sim_forget_plans(NULL);
    ps_sim_free(kept);
}
END_TEST

/*
 * The simulator keeps the plans of the PS__SIM_SPARE_MEMOS + 1 models it used last, not only
 * of the last one. Through N = PS__SIM_SPARE_MEMOS + 9 models (scales of one model), then
 * back to some of them, every run gives the timeline of a fresh simulator bit for bit, and
 * the plans made are counted by hand: 4 (F, I, W, B; 1F1B fuses nothing) per layer
 * composition not yet planned under the model. With 2 dense layers first, split `even` (6
 * layers a stage) has 2 compositions, (2 dense, 4 MoE) and (0, 6), and split `mixed` (6, 5, 7,
 * 6) 4, two of them even's. A model among the last PS__SIM_SPARE_MEMOS + 1 plans nothing again
 * with its split and only the 2 new compositions with the other; model 0, pushed out by the 8
 * newer ones beyond, plans again; after ps__sim_forget_plans every model plans again.
 */
START_TEST(sim_moe_plans_of_many_models)
{
    const int32_t even[4] = {6, 6, 6, 6}, mixed[4] = {6, 5, 7, 6};
    enum { N = PS__SIM_SPARE_MEMOS + 9 };
    ps_sim *kept;
    ck_assert_int_eq(ps_sim_new(&kept, NULL), 0);
    /* (model, split) runs: the first pass, models N-1 and N-2 again (kept: no plans), model 0
     * (pushed out: planned again), then all forgotten and model N-1 again (planned). */
    int runs[N + 5][2], nruns = 0;
    for (int k = 0; k < N; k++)
        runs[nruns][0] = k, runs[nruns++][1] = k % 2;
    const int again[5][2] = {{N - 1, 1}, {N - 2, 0}, {N - 2, 1}, {0, 0}, {N - 1, 0}};
    for (int k = 0; k < 5; k++)
        runs[nruns][0] = again[k][0], runs[nruns++][1] = again[k][1];
    for (int k = 0; k < nruns; k++) {
        int model = runs[k][0], split = runs[k][1];
        ps_problem *pb = make_problem("1f1b", 4, 1, 4, 1, 1, 1, 0.5);
        ps_moe_model m = overlap_model(1.0 + model / 64.0);
        m.layers = 24;
        ck_assert_int_eq(ps_problem_set_moe(pb, &m), 0);
        ck_assert_int_eq(ps_problem_set_stage_layers(pb, split ? mixed : even, 4), 0);
        ps_schedule *s;
        ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
        ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
        ck_assert_int_eq(ps_schedule_validate(s), 0);
        if (k == nruns - 1)
            ps__sim_forget_plans(kept);
        ps_sim *fresh;
        ck_assert_int_eq(ps_sim_new(&fresh, NULL), 0);
        ck_assert_int_eq(ps_sim_run(fresh, s, pb), 0);
        uint64_t before = kept->planned;
        ck_assert_msg(ps_sim_run(kept, s, pb) == 0, "run %d: %s", k, ps_sim_last_error(kept));
        uint64_t planned = kept->planned - before;
        same_timeline(kept, fresh, s, k);
        ps_comm_metrics ca, cb;
        ck_assert_int_eq(ps_sim_comm(kept, &ca), 0);
        ck_assert_int_eq(ps_sim_comm(fresh, &cb), 0);
        ck_assert(!memcmp(ca.total, cb.total, sizeof ca.total) &&
                  !memcmp(ca.exposed, cb.exposed, sizeof ca.exposed));
        uint64_t fresh_plans = split ? 16 : 8, want = fresh_plans;
        if (k == N || k == N + 1) /* model N-1 with split 1, N-2 with 0: their first pass's */
            want = 0;
        else if (k == N + 2) /* model N-2 with split 1: (0, 5) and (0, 7) are new */
            want = 8;
        ck_assert_uint_eq(fresh->planned, fresh_plans);
        ck_assert_msg(planned == want, "run %d (model %d, split %d) planned %llu, not %llu", k,
                      model, split, (unsigned long long)planned, (unsigned long long)want);
        ps_sim_free(fresh);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
    ps_sim_free(kept);
}
END_TEST

/* A duration far below c is absorbed into the times (1 + 1e-300 == 1): a rank's span then
 * comes out shorter than its busy time, and span - busy was a negative idle. Idle and the
 * bubble are never negative, nor is the bubble ratio outside [0, 1], over several tiny and
 * huge cost mixes and every family that takes them. */
START_TEST(sim_idle_never_negative)
{
    static const double costs[][4] = {{1e-300, 0, 0, 1},
                                      {1e-300, 1e-300, 1e-300, 1},
                                      {1e-20, 1e-20, 0, 1e6},
                                      {4.9e-324, 0, 0, 1}};
    static const char *const fams[] = {"adaptive", "1f1b", "zb-h1", "dualpipev", "gpipe"};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        for (size_t c = 0; c < sizeof costs / sizeof costs[0]; c++) {
            ps_problem *pb = make_problem(fams[f], f == 3 ? 2 : 3, f == 3 ? 2 : 1, f == 3 ? 4 : 2,
                                          costs[c][0], costs[c][1], costs[c][2], costs[c][3]);
            ps_schedule *s;
            ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
            ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
            ps_sim *sim;
            ps_metrics m = simulate(s, pb, &sim);
            ck_assert(m.bubble >= 0);
            ck_assert(m.bubble_ratio >= 0 && m.bubble_ratio <= 1);
            for (int r = 0; r < ps_schedule_pp(s); r++) {
                ps_rank_metrics rm;
                ck_assert_int_eq(ps_sim_rank_metrics(sim, r, &rm), 0);
                ck_assert_msg(rm.idle >= 0, "%s costs %zu rank %d: idle %g (span %g, busy %g)",
                              fams[f], c, r, rm.idle, rm.span, rm.busy);
            }
            ps_sim_free(sim);
            ps_schedule_free(s);
            ps_problem_free(pb);
        }
    }
}
END_TEST

/* ---- micro-batch weights ----------------------------------------------------------------- */

/* Sets pb's micro-batch weights. */
static void set_weights(ps_problem *pb, const double *w, size_t n)
{
    int rc = ps_problem_set_microbatch_weights(pb, w, n);
    ck_assert_msg(rc == 0, "weights: %s", ps_problem_last_error(pb));
}

/* Checks rank r's list (as "0F0 0F1 ...") and its times: t holds start, end pairs. */
static void check_rank(const ps_schedule *s, const ps_sim *sim, int r, const char *list,
                       const double *t)
{
    char buf[1024];
    rank_string(s, r, buf, sizeof buf);
    ck_assert_str_eq(buf, list);
    const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
    for (size_t i = 0; i < ps_schedule_rank_length(s, r); i++) {
        ck_assert_msg(st[i] == t[2 * i] && en[i] == t[2 * i + 1],
                      "rank %d action %zu: [%g, %g], expected [%g, %g]", r, i, st[i], en[i],
                      t[2 * i], t[2 * i + 1]);
    }
}

/* Generates pb's schedule and simulates it. */
static ps_schedule *generate(ps_problem *pb)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    ck_assert_msg(rc == 0, "generate: %s", ps_schedule_last_error(s));
    return s;
}

/*
 * 1F1B, p = 2, m = 3, f = b = w = 1 (B = 2), c = 0, weights 1, 2, 0.5: F_j = w_j, B_j = 2 w_j.
 * Rank 0 runs F0 F1 B0 F2 B1 B2, rank 1 F0 B0 F1 B1 F2 B2.
 *   r0 F0 0-1 | r1 F0 1-2 | r0 F1 1-3 | r1 B0 2-4 | r0 B0 waits for r1's B0: 4-6
 *   r1 F1 (F1 ended at 3, rank free at 4) 4-6 | r1 B1 6-10 | r0 F2 6-6.5
 *   r0 B1 waits for r1's B1: 10-14 | r1 F2 10-10.5 | r1 B2 10.5-11.5 | r0 B2 14-15.
 * Makespan 15; without weights it would be 3 (m + p - 1) = 12.
 */
START_TEST(sim_weights_1f1b_by_hand)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 3, 1, 1, 1, 0);
    const double w[3] = {1, 2, 0.5};
    set_weights(pb, w, 3);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 15);
    const double r0[] = {0, 1, 1, 3, 4, 6, 6, 6.5, 10, 14, 14, 15};
    const double r1[] = {1, 2, 2, 4, 4, 6, 6, 10, 10, 10.5, 10.5, 11.5};
    check_rank(s, sim, 0, "0F0 0F1 0B0 0F2 0B1 0B2", r0);
    check_rank(s, sim, 1, "1F0 1B0 1F1 1B1 1F2 1B2", r1);
    ps_rank_metrics rm;
    ps_sim_rank_metrics(sim, 0, &rm);
    ck_assert_double_eq(rm.busy, 1 + 2 + 2 + 0.5 + 4 + 1);
    /* ps_sim_duration, which the executor's emulation times its actions with, weighs too */
    const ps_action f1 = {PS_F, 0, 0, 0, 1, 0, 0}, b2 = {PS_B, 0, 0, 1, 2, 0, 0};
    ck_assert_double_eq(ps_sim_duration(sim, &f1), 2);
    ck_assert_double_eq(ps_sim_duration(sim, &b2), 1);
    const ps_action out_of_range = {PS_F, 0, 0, 0, 3, 0, 0};
    ck_assert_double_eq(ps_sim_duration(sim, &out_of_range), 0);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/*
 * Interleaved 1F1B, p = 2, v = 2 (stages 0, 2 on rank 0; 1, 3 on rank 1), m = 4, G = 2,
 * f = b = w = 1, c = 0, weights 1, 2, 1, 1: F = w_j, B = 2 w_j. Warm-ups 2(p-r-1) + (v-1)G:
 * 4 on rank 0, 2 on rank 1. Times in issue order:
 *   r0 0F0 0-1, 0F1 1-3 | r1 1F0 1-2, 1F1 3-5 | r0 2F0 3-4, 2F1 5-7
 *   r1 3F0 5-6, 3B0 6-8, 3F1 8-10, 3B1 10-14
 *   r0 0F2 7-8, 2B0 (3B0 at 8) 8-10, 0F3 10-11, 2B1 (3B1 at 14) 14-18
 *   r1 1F2 14-15, 1B0 15-17, 1F3 17-18, 1B1 (2B1 at 18) 18-22
 *   r0 2F2 (1F2 at 15, free at 18) 18-19, 0B0 19-21, 2F3 21-22, 0B1 (1B1 at 22) 22-26
 *   r1 3F2 22-23, 3B2 23-25, 3F3 25-26, 3B3 26-28
 *   r0 2B2 26-28, 2B3 (3B3 at 28) 28-30 | r1 1B2 28-30, 1B3 30-32 | r0 0B2 30-32, 0B3 32-34.
 */
START_TEST(sim_weights_interleaved_by_hand)
{
    ps_problem *pb = make_problem("interleaved", 2, 2, 4, 1, 1, 1, 0);
    const double w[4] = {1, 2, 1, 1};
    set_weights(pb, w, 4);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 34);
    const double r0[] = {0,  1,  1,  3,  3,  4,  5,  7,  7,  8,  8,  10, 10, 11, 14, 18,
                         18, 19, 19, 21, 21, 22, 22, 26, 26, 28, 28, 30, 30, 32, 32, 34};
    const double r1[] = {1,  2,  3,  5,  5,  6,  6,  8,  8,  10, 10, 14, 14, 15, 15, 17,
                         17, 18, 18, 22, 22, 23, 23, 25, 25, 26, 26, 28, 28, 30, 30, 32};
    check_rank(s, sim, 0, "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3", r0);
    check_rank(s, sim, 1, "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3", r1);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/*
 * ZB-H1, p = 2, m = 3, f = b = w = 1, c = 0, weights 1, 2, 0.5: F, I and W of micro-batch j
 * all take w_j.
 *   r0 F0 0-1, F1 1-3 | r1 F0 1-2, I0 2-3, F1 (r0's F1 at 3) 3-5, I1 5-7, W0 7-8
 *   r0 I0 (r1's I0 at 3) 3-4, W0 4-5, F2 5-5.5, I1 (r1's I1 at 7) 7-9, W1 9-11
 *   r1 F2 (free at 8) 8-8.5, I2 8.5-9, W1 9-11, W2 11-11.5
 *   r0 I2 (free at 11) 11-11.5, W2 11.5-12.
 */
START_TEST(sim_weights_zb_h1_by_hand)
{
    ps_problem *pb = make_problem("zb-h1", 2, 1, 3, 1, 1, 1, 0);
    const double w[3] = {1, 2, 0.5};
    set_weights(pb, w, 3);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 12);
    const double r0[] = {0, 1, 1, 3, 3, 4, 4, 5, 5, 5.5, 7, 9, 9, 11, 11, 11.5, 11.5, 12};
    const double r1[] = {1, 2, 2, 3, 3, 5, 5, 7, 7, 8, 8, 8.5, 8.5, 9, 9, 11, 11, 11.5};
    check_rank(s, sim, 0, "0F0 0F1 0I0 0W0 0F2 0I1 0W1 0I2 0W2", r0);
    check_rank(s, sim, 1, "1F0 1I0 1F1 1I1 1W0 1F2 1I2 1W1 1W2", r1);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/*
 * Adaptive Pipe with v = 1 (combined 1F1B), p = 2, m = 3, f = b = w = 1, c = 0, weights 1,
 * 2, 0.5. Rank 0: F0 F1 F2 B0 B1 B2; rank 1: F0 (F1;B0) (F2;B1) B2. A fused pair weighs each
 * part with its own micro-batch: (F_i;B_j) = w_i + 2 w_j.
 *   r0 F0 0-1, F1 1-3, F2 3-3.5 | r1 F0 1-2, (F1;B0) = 2 + 2 from 3 (F1 at 3): 3-7
 *   r1 (F2;B1) = 0.5 + 4 from 7 (its own F1 at 7): 7-11.5, B2 11.5-12.5
 *   r0 B0 (r1's at 7) 7-9, B1 (at 11.5) 11.5-15.5, B2 15.5-16.5.
 * With a fused cost of its own, fb = 1.5, a pair costs 1.5 (w_i + 2 w_j) / 3: (F1;B0) =
 * 1.5 * 4/3 = 2 and (F2;B1) = 1.5 * 4.5/3 = 2.25:
 *   r1 (F1;B0) 3-5, (F2;B1) 5-7.25, B2 7.25-8.25 | r0 B0 5-7, B1 7.25-11.25, B2 11.25-12.25.
 */
START_TEST(sim_weights_fused_by_hand)
{
    ps_problem *pb = make_problem("adaptive", 2, 1, 3, 1, 1, 1, 0);
    const double w[3] = {1, 2, 0.5};
    set_weights(pb, w, 3);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq(m.makespan, 16.5);
    const double r0[] = {0, 1, 1, 3, 3, 3.5, 7, 9, 11.5, 15.5, 15.5, 16.5};
    const double r1[] = {1, 2, 3, 7, 7, 11.5, 11.5, 12.5};
    check_rank(s, sim, 0, "0F0 0F1 0F2 0B0 0B1 0B2", r0);
    check_rank(s, sim, 1, "1F0 (1F1;1B0)OVERLAP_F_B (1F2;1B1)OVERLAP_F_B 1B2", r1);
    ps_sim_free(sim);

    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, 1.5), 0);
    m = simulate(s, pb, &sim);
    ck_assert_double_eq_tol(m.makespan, 12.25, 1e-12);
    const double q0[] = {0, 1, 1, 3, 3, 3.5, 5, 7, 7.25, 11.25, 11.25, 12.25};
    const double q1[] = {1, 2, 3, 5, 5, 7.25, 7.25, 8.25};
    const double *st = ps_sim_starts(sim, 0), *en = ps_sim_ends(sim, 0);
    for (int i = 0; i < 6; i++) {
        ck_assert_double_eq_tol(st[i], q0[2 * i], 1e-12);
        ck_assert_double_eq_tol(en[i], q0[2 * i + 1], 1e-12);
    }
    st = ps_sim_starts(sim, 1), en = ps_sim_ends(sim, 1);
    for (int i = 0; i < 4; i++) {
        ck_assert_double_eq_tol(st[i], q1[2 * i], 1e-12);
        ck_assert_double_eq_tol(en[i], q1[2 * i + 1], 1e-12);
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* The micro-batch count of a family that generates at these sizes, else 0. */
static int family_sizes(const char *fam, int k, int *p, int *v, int *m)
{
    static const int sizes[][3] = {{1, 1, 3}, {3, 1, 7}, {4, 2, 8}, {2, 2, 4}, {4, 1, 8}};
    if (k >= 5)
        return 0;
    *p = sizes[k][0], *v = sizes[k][1], *m = sizes[k][2];
    ps_problem *pb = make_problem(fam, *p, *v, *m, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int ok = ps_schedule_generate(s, pb) == 0;
    ps_schedule_free(s);
    ps_problem_free(pb);
    return ok ? *m : 0;
}

/* The cost setups of the invariant tests: uniform, a fused cost of its own, per stage. */
static void set_costs(ps_problem *pb, int setup, int nstages)
{
    if (setup == 1)
        ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, 2.2), 0);
    if (setup == 2) {
        ps_stage_cost sc[64];
        ck_assert_int_lt(nstages, 64);
        for (int i = 0; i < nstages; i++) {
            sc[i].f = 0.5 + 0.25 * (i % 3);
            sc[i].b = 1.1 + 0.1 * (i % 4);
            sc[i].w = 0.3 * (i % 2);
        }
        ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, (size_t)nstages), 0);
    }
}

/* s and t hold the same actions, and a and b the same timeline, bit for bit. */
static void check_same(const ps_schedule *s, const ps_sim *a, const ps_schedule *t, const ps_sim *b,
                       double scale, const char *what)
{
    ck_assert_int_eq(ps_schedule_pp(s), ps_schedule_pp(t));
    for (int r = 0; r < ps_schedule_pp(s); r++) {
        size_t n = ps_schedule_rank_length(s, r);
        ck_assert_uint_eq(n, ps_schedule_rank_length(t, r));
        ck_assert_msg(memcmp(ps_schedule_rank_actions(s, r), ps_schedule_rank_actions(t, r),
                             n * sizeof(ps_action)) == 0,
                      "%s: rank %d's lists differ", what, r);
        const double *sa = ps_sim_starts(a, r), *sb = ps_sim_starts(b, r);
        const double *ea = ps_sim_ends(a, r), *eb = ps_sim_ends(b, r);
        for (size_t i = 0; i < n; i++)
            ck_assert_msg(sa[i] * scale == sb[i] && ea[i] * scale == eb[i],
                          "%s: rank %d action %zu: [%.17g, %.17g] * %g != [%.17g, %.17g]", what, r,
                          i, sa[i], ea[i], scale, sb[i], eb[i]);
    }
}

/*
 * Every family, at every size it generates and under three cost setups: weights all 1 give
 * the unweighted schedule (zb-auto plans with the weights) and timeline bit for bit; weights
 * all 2 with c = 0 give the same schedule with every time doubled (multiplying by 2 is exact,
 * and every time is a sum of durations).
 */
START_TEST(sim_weights_ones_equal_unweighted)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    int p, v, m, tested = 0;
    for (int k = 0; k < 5; k++) {
        if (!family_sizes(fi.name, k, &p, &v, &m))
            continue;
        for (int setup = 0; setup < 3; setup++) {
            for (int two = 0; two < 2; two++) {
                char what[128];
                snprintf(what, sizeof what, "%s p%d v%d m%d setup %d weights %d", fi.name, p, v, m,
                         setup, two + 1);
                ps_problem *pb = make_problem(fi.name, p, v, m, 1, 1.5, 0.75, two ? 0 : 0.25);
                ps_schedule *s = generate(pb);
                set_costs(pb, setup, ps_schedule_num_stages(s));
                ps_schedule_free(s);
                s = generate(pb); /* zb-auto plans with the stage costs */
                ps_sim *a, *b;
                simulate(s, pb, &a);
                double w[16];
                for (int j = 0; j < m; j++)
                    w[j] = two ? 2 : 1;
                set_weights(pb, w, (size_t)m);
                ps_schedule *t = generate(pb);
                simulate(t, pb, &b);
                check_same(s, a, t, b, two ? 2 : 1, what);
                ps_metrics ma, mb;
                ps_sim_metrics(a, &ma);
                ps_sim_metrics(b, &mb);
                ck_assert_double_eq(ma.makespan * (two ? 2 : 1), mb.makespan);
                ck_assert_double_eq(ma.bubble * (two ? 2 : 1), mb.bubble);
                tested++;
                ps_sim_free(a);
                ps_sim_free(b);
                ps_schedule_free(s);
                ps_schedule_free(t);
                ps_problem_free(pb);
            }
        }
    }
    ck_assert_msg(tested > 0, "%s: no size generated", fi.name);
}
END_TEST

/*
 * zb-auto plans with the weights: with every weight k its schedule is the one it makes for
 * the costs times k (c unchanged), which differs from the one for the costs alone because c
 * weighs less next to longer actions. With uneven weights it is never worse than the
 * handcrafted schedules of its placement under the same weights.
 */
START_TEST(sim_weights_zb_auto_plans_with_them)
{
    for (int v = 1; v <= 2; v++) {
        ps_problem *pb = make_problem("zb-auto", 4, v, 8, 1, 1.5, 0.75, 0.5);
        ps_problem *scaled = make_problem("zb-auto", 4, v, 8, 3, 4.5, 2.25, 0.5);
        double w[8];
        for (int j = 0; j < 8; j++)
            w[j] = 3;
        set_weights(pb, w, 8);
        ps_schedule *s = generate(pb), *t = generate(scaled);
        ps_sim *a, *b;
        simulate(s, pb, &a);
        simulate(t, scaled, &b);
        check_same(s, a, t, b, 1, v == 1 ? "zb-auto v1" : "zb-auto v2");
        ps_sim_free(a);
        ps_sim_free(b);
        ps_schedule_free(s);
        ps_schedule_free(t);

        const double uneven[8] = {1, 3, 0.5, 2, 1, 0.25, 4, 1};
        set_weights(pb, uneven, 8);
        s = generate(pb);
        ps_metrics best = simulate(s, pb, &a);
        ps_sim_free(a);
        ps_schedule_free(s);
        const char *const hand[] = {v == 1 ? "zb-h1" : "zb-v", v == 1 ? "zb-h2" : NULL};
        for (int k = 0; k < 2 && hand[k]; k++) {
            ck_assert_int_eq(ps_problem_set_schedule(pb, hand[k]), 0);
            s = generate(pb);
            ps_metrics m = simulate(s, pb, &a);
            ck_assert_msg(best.makespan <= m.makespan, "zb-auto %g, %s %g", best.makespan, hand[k],
                          m.makespan);
            ps_sim_free(a);
            ps_schedule_free(s);
        }
        ck_assert_int_eq(ps_problem_set_schedule(pb, "zb-auto"), 0);
        ps_problem_free(pb);
        ps_problem_free(scaled);
    }
}
END_TEST

/*
 * MoE mode: the model of sim_moe_extra_costs (F0 = 6, F1 = 5.5, B1 = 8, B0 = 5 per unit of
 * weight), 1f1b, p = 2, m = 2, weights 1 and 2:
 *   r0 F0(0) 0-6, F0(1) 6-18 | r1 F1(0) 6-11.5, B1(0) 11.5-19.5, F1(1) (free at 19.5)
 *   19.5-30.5, B1(1) 30.5-46.5 | r0 B0(0) 19.5-24.5, B0(1) (r1's at 46.5) 46.5-56.5.
 * And on a model whose all-to-all the planner hides (DualPipeV: fused pairs of planned
 * durations): weights 1 give the timeline and the all-to-all figures of no weights, bit for
 * bit; weights 2 with c = 0 double both.
 */
START_TEST(sim_weights_moe)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 2, 1, 1, 1, 0);
    ps_moe_model mm;
    memset(&mm, 0, sizeof mm);
    mm.layers = 2;
    mm.moe.t[PS_OP_ATTN] = 2, mm.moe.t[PS_OP_MLP] = 3;
    mm.moe.t[PS_OP_MLP_DX] = 3, mm.moe.t[PS_OP_ATTN_DX] = 2;
    mm.planner = PS_PLANNER_SERIAL;
    ck_assert_int_eq(ps_problem_set_moe(pb, &mm), 0);
    const ps_stage_cost x[2] = {{1, 0, 0}, {0.5, 2, 1}};
    ck_assert_int_eq(ps__problem_set_moe_extra(pb, x, 2), 0);
    const double w[2] = {1, 2};
    set_weights(pb, w, 2);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ps_metrics m = simulate(s, pb, &sim);
    ck_assert_double_eq_tol(m.makespan, 56.5, 1e-12);
    const ps_action f01 = {PS_F, 0, 0, 0, 1, 0, 0};
    ck_assert_double_eq_tol(ps_sim_duration(sim, &f01), 12, 1e-12);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);

    for (int two = 0; two < 2; two++) {
        pb = make_problem("dualpipev", 4, 2, 8, 1, 1, 1, two ? 0 : 0.5);
        ps_moe_model om = overlap_model(1);
        ck_assert_int_eq(ps_problem_set_moe(pb, &om), 0);
        s = generate(pb);
        ps_sim *a, *b;
        simulate(s, pb, &a);
        double ww[8];
        for (int j = 0; j < 8; j++)
            ww[j] = two ? 2 : 1;
        set_weights(pb, ww, 8);
        simulate(s, pb, &b);
        check_same(s, a, s, b, two ? 2 : 1, two ? "moe weights 2" : "moe weights 1");
        ps_comm_metrics ca, cb;
        ck_assert_int_eq(ps_sim_comm(a, &ca), 0);
        ck_assert_int_eq(ps_sim_comm(b, &cb), 0);
        for (int ph = 0; ph < PS_PHASE_COUNT; ph++) {
            ck_assert_double_eq(ca.total[ph] * (two ? 2 : 1), cb.total[ph]);
            ck_assert_double_eq(ca.exposed[ph] * (two ? 2 : 1), cb.exposed[ph]);
        }
        ck_assert(ca.total[PS_PHASE_ALL] > 0);
        ps_sim_free(a);
        ps_sim_free(b);
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
}
END_TEST

/* Bad weights are refused with the index (and the column of a string), leaving the problem's
 * weights as they were; a count other than the micro-batch count is refused by generation and
 * by the simulator. */
START_TEST(sim_weights_errors)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 3, 1, 1, 1, 0);
    const double good[3] = {1, 2, 0.5};
    set_weights(pb, good, 3);
    const double bad[][3] = {{1, 1, 0}, {1, 1, -1}, {1, 1, NAN}, {1, 1, INFINITY}, {1, 1, 2e12}};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, bad[k], 3), PS_ERANGE);
        ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb),
                                     "microbatch_weights[2] must be a finite number > 0 and <= "
                                     "1e+12; got "));
    }
    const double *got;
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &got), 3);
    ck_assert_double_eq(got[1], 2);
    ck_assert_int_eq(ps_problem_set_microbatch_weights(NULL, good, 3), PS_EINVAL);
    ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, NULL, 3), PS_EINVAL);
    ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, good, (size_t)PS_MAX_MICROBATCHES + 1),
                     PS_ERANGE);
    ck_assert_uint_eq(ps_problem_microbatch_weights(NULL, &got), 0);

    static const struct {
        const char *spec, *msg;
    } strs[] = {
        {"", "microbatch weights: empty list; expected one positive number per micro-batch, "
             "separated by commas (\"1,2,0.5\")"},
        {"1,,2", "microbatch weights: weight 1 (column 3) must be a finite number > 0 and <= "
                 "1e+12; got \"\""},
        {"1,2,x", "microbatch weights: weight 2 (column 5) must be a finite number > 0 and <= "
                  "1e+12; got \"x\""},
        {"1,2,", "microbatch weights: weight 2 (column 5) must be a finite number > 0 and <= "
                 "1e+12; got \"\""},
        {"0.5,nan", "microbatch weights: weight 1 (column 5) must be a finite number > 0 and <= "
                    "1e+12; got \"nan\""},
        {"1,2e12", "microbatch weights: weight 1 (column 3) must be a finite number > 0 and <= "
                   "1e+12; got \"2e12\""},
        {"-1", "microbatch weights: weight 0 (column 1) must be a finite number > 0 and <= "
               "1e+12; got \"-1\""},
    };
    for (size_t k = 0; k < sizeof strs / sizeof strs[0]; k++) {
        ck_assert_int_eq(ps_problem_set_microbatch_weights_string(pb, strs[k].spec), PS_ECONFIG);
        ck_assert_str_eq(ps_problem_last_error(pb), strs[k].msg);
    }
    ck_assert_int_eq(ps_problem_set_microbatch_weights_string(pb, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_problem_set_microbatch_weights_string(NULL, "1"), PS_EINVAL);
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &got), 3);
    ck_assert_int_eq(ps_problem_set_microbatch_weights_string(pb, "1.5,0.25,3"), 0);
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &got), 3);
    ck_assert_double_eq(got[0], 1.5);
    ck_assert_double_eq(got[1], 0.25);
    ck_assert_double_eq(got[2], 3);

    /* the count: generation, then the simulator on a schedule of 3 micro-batches */
    ps_schedule *s = generate(pb);
    ck_assert_int_eq(ps_problem_set_microbatch_weights_string(pb, "1,2"), 0);
    ps_schedule *t;
    ck_assert_int_eq(ps_schedule_new(&t, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(t, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_schedule_last_error(t),
                     "microbatch_weights has 2 entries but there are 3 micro-batches (one weight "
                     "per micro-batch)");
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_sim_last_error(sim),
                     "microbatch_weights has 2 entries but the schedule has 3 micro-batches (one "
                     "weight per micro-batch)");
    /* cleared: the schedule simulates unweighted again (3 (m + p - 1) = 12) */
    ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, NULL, 0), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_metrics m;
    ps_sim_metrics(sim, &m);
    ck_assert_double_eq(m.makespan, 12);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_schedule_free(t);
    ps_problem_free(pb);
}
END_TEST

static int sink(void *ud, const char *data, size_t len)
{
    (void)ud, (void)data, (void)len;
    return 0;
}

/* Bytes the counting allocator holds once sim (keep: its timeline or not) ran s under pb. */
static size_t sim_bytes(ps_schedule *s, ps_problem *pb, int keep)
{
    counting_alloc c = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&c);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, &al), 0);
    ck_assert_int_eq(ps_sim_keep_timeline(sim, keep), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    size_t bytes = c.bytes;
    ps_sim_free(sim);
    ck_assert_int_eq(c.live, 0);
    return bytes;
}

/* A run that keeps only the metrics: the same metrics (1F1B, p = 4, m = 8, f = 1, b + w = 2,
 * c = 0: makespan (m + p - 1)(f + b + w) = 33; rank r starts at r f = r, ends its last
 * backward at 33 - 2r, busy 8 x 3 = 24, so span 33 - 3r and idle 9 - 3r), no start or end
 * times, the timed exports refused, and 16 bytes per action less. */
START_TEST(sim_metrics_without_timeline)
{
    ps_problem *pb = make_problem("1f1b", 4, 1, 8, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ck_assert_int_eq(ps_sim_keep_timeline(NULL, 0), PS_EINVAL);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_keep_timeline(sim, 0), 0);
    for (int pass = 0; pass < 2; pass++) { /* replayed order, then the engine's own */
        if (pass == 1)
            ck_assert_int_eq(ps_schedule_generate(s, pb), 0); /* drops the recorded order */
        ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
        ps_metrics m;
        ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
        ck_assert_double_eq(m.makespan, 33);
        ck_assert_double_eq(m.bubble, 9);
        for (int r = 0; r < 4; r++) {
            ps_rank_metrics rm;
            ck_assert_int_eq(ps_sim_rank_metrics(sim, r, &rm), 0);
            ck_assert_double_eq(rm.busy, 24);
            ck_assert_double_eq(rm.span, 33 - 3 * r);
            ck_assert_double_eq(rm.idle, 9 - 3 * r);
        }
        ck_assert_ptr_null(ps_sim_starts(sim, 0));
        ck_assert_ptr_null(ps_sim_ends(sim, 3));
        ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TRACE, sink, NULL), PS_ESTATE);
        ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TABLE_TIMED, sink, NULL), PS_ESTATE);
        ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_JSON, sink, NULL), PS_ESTATE);
        ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_METRICS, sink, NULL), 0);
        ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TABLE, sink, NULL), 0);
        ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_JSON, sink, NULL), 0);
    }
    /* Kept again from the next run on. */
    ck_assert_int_eq(ps_sim_keep_timeline(sim, 1), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_double_eq(ps_sim_starts(sim, 1)[0], 1);
    ck_assert_double_eq(ps_sim_ends(sim, 0)[15], 33);
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TRACE, sink, NULL), 0);
    ps_sim_free(sim);

    /* The timeline is two doubles per action, of 64. */
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    size_t with = sim_bytes(s, pb, 1), without = sim_bytes(s, pb, 0);
    ck_assert_msg(with >= without + 2 * 8 * 64, "%zu bytes with the timeline, %zu without", with,
                  without);

    /* Every allocation of a metrics-only run can fail, and nothing leaks. */
    for (long n = 1;; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator al = counting_allocator(&c);
        ps_sim *x;
        if (ps_sim_new(&x, &al)) {
            ck_assert_int_eq(c.live, 0);
            continue;
        }
        ps_sim_keep_timeline(x, 0);
        int rc = ps_sim_run(x, s, pb);
        ps_sim_free(x);
        ck_assert_int_eq(c.live, 0);
        if (rc == 0)
            break;
        ck_assert_int_eq(rc, PS_ENOMEM);
    }
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* Every allocation of the weights fails cleanly: the setters leave the problem as it was, the
 * simulator reports PS_ENOMEM, and nothing leaks. */
START_TEST(sim_weights_allocation_failure)
{
    int done = 0;
    for (long n = 1; !done; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 4), 0);
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
        ps_schedule *s;
        ck_assert_int_eq(ps_schedule_new(&s, &al), 0);
        ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
        ps_sim *sim;
        ck_assert_int_eq(ps_sim_new(&sim, &al), 0);
        cnt.fail_at = cnt.calls + n;
        const double w[4] = {1, 2, 3, 4};
        int rc = ps_problem_set_microbatch_weights_string(pb, "1,2,3,4");
        if (!rc)
            rc = ps_problem_set_microbatch_weights(pb, w, 3);
        if (!rc)
            rc = ps_problem_set_microbatch_weights(pb, w, 4);
        if (!rc)
            rc = ps_sim_run(sim, s, pb);
        cnt.fail_at = 0;
        if (rc) {
            ck_assert_int_eq(rc, PS_ENOMEM);
        } else {
            ps_metrics m;
            ps_sim_metrics(sim, &m);
            /* 1f1b, p = 2, weights 1 2 3 4: F_j = w_j, B_j = 2 w_j. r0 F0 0-1, F1 1-3;
             * r1 F0 1-2, B0 2-4, F1 4-6, B1 6-10; r0 B0 4-6, F2 6-9, B1 10-14, F3 14-18;
             * r1 F2 10-13, B2 13-19, F3 19-23, B3 23-31; r0 B2 19-25, B3 31-39. */
            ck_assert_double_eq(m.makespan, 39);
            done = 1;
        }
        ps_sim_free(sim);
        ps_schedule_free(s);
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
    }
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sim");
    TCase *tc = tcase_create("timing");
    tcase_add_test(tc, sim_transfer_cost);
    tcase_add_test(tc, sim_colocated_stages_skip_transfer);
    tcase_add_test(tc, sim_stage_costs);
    tcase_add_test(tc, sim_fused_pairs_and_memory);
    tcase_add_test(tc, sim_reuse_across_sizes);
    tcase_add_loop_test(tc, sim_replay_matches_engine, 0, (int)ps_family_count());
    tcase_add_test(tc, sim_stale_after_regeneration);
    tcase_add_test(tc, sim_critical_transfers_by_hand);
    tcase_add_loop_test(tc, sim_critical_transfers_bounds, 0, (int)ps_family_count());
    tcase_add_test(tc, sim_idle_never_negative);
    tcase_add_test(tc, sim_metrics_without_timeline);
    suite_add_tcase(su, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, sim_errors);
    suite_add_tcase(su, tc);
    tc = tcase_create("microbatch_weights");
    tcase_add_test(tc, sim_weights_1f1b_by_hand);
    tcase_add_test(tc, sim_weights_interleaved_by_hand);
    tcase_add_test(tc, sim_weights_zb_h1_by_hand);
    tcase_add_test(tc, sim_weights_fused_by_hand);
    tcase_add_loop_test(tc, sim_weights_ones_equal_unweighted, 0, (int)ps_family_count());
    tcase_add_test(tc, sim_weights_zb_auto_plans_with_them);
    tcase_add_test(tc, sim_weights_moe);
    tcase_add_test(tc, sim_weights_errors);
    tcase_add_test(tc, sim_weights_allocation_failure);
    suite_add_tcase(su, tc);

    tc = tcase_create("stage_tables");
    tcase_add_test(tc, sim_stage_tables_must_match);
    tcase_add_test(tc, sim_moe_extra_costs);
    tcase_add_test(tc, sim_moe_plans_kept_across_runs);
    tcase_add_test(tc, sim_moe_plans_of_many_models);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
