/*
 * The simulator: transfer costs, per-stage costs, fused pairs, memory counting with I/W,
 * re-use of one simulator across schedules, and its error paths. Expected values are worked
 * by hand in the comments.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "internal.h" /* ps__problem_set_moe_extra */

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
        for (int r = 0; r < 4; r++) {
            size_t n = ps_schedule_rank_length(s, r);
            ck_assert_msg(
                !memcmp(ps_sim_starts(kept, r), ps_sim_starts(fresh, r), n * sizeof(double)) &&
                    !memcmp(ps_sim_ends(kept, r), ps_sim_ends(fresh, r), n * sizeof(double)),
                "run %d, rank %d", k, r);
        }
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
    suite_add_tcase(su, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, sim_errors);
    suite_add_tcase(su, tc);
    tc = tcase_create("stage_tables");
    tcase_add_test(tc, sim_stage_tables_must_match);
    tcase_add_test(tc, sim_moe_extra_costs);
    tcase_add_test(tc, sim_moe_plans_kept_across_runs);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
