/*
 * The fused-pair families: DualPipe and DualPipeV (schedules/dualpipe.c, dualpipev.c) and
 * Adaptive Pipe (schedules/adaptive.c). PyTorch's DualPipeV artifact, small cases worked out
 * by hand (orders and timelines), DualPipe's two model copies, Adaptive Pipe's pairing,
 * warm-up and split backward, the errors, allocation failure. The closed forms over the whole
 * grid are in test-sweep.c.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "../schedules/schedules.h" /* ps__dual_emit and the generators, for their invariants */

#include <math.h>
#include <stdio.h>

/* A problem with f, b, w, the fused cost fb (< 0: default) and, when >= 0, extra_warmup. */
static ps_problem *problem(const char *fam, int p, int v, int m, double f, double b, double w,
                           double fb, int delta, int split)
{
    ps_problem *pb = make_problem(fam, p, v, m, f, b, w, 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, fb), 0);
    if (delta >= 0)
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, delta), 0);
    if (split)
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 1), 0);
    return pb;
}

static ps_schedule *generate(const ps_problem *pb)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    ck_assert_msg(rc == 0, "%s: %s", ps_problem_schedule(pb), ps_schedule_last_error(s));
    ck_assert_msg(ps_schedule_validate(s) == 0, "%s", ps_schedule_last_error(s));
    return s;
}

static ps_schedule *gen(const char *fam, int p, int v, int m)
{
    ps_problem *pb = make_problem(fam, p, v, m, 1, 1, 1, 0);
    ps_schedule *s = generate(pb);
    ps_problem_free(pb);
    return s;
}

/* Simulates s under pb; returns the makespan and, if asked, the bubble. */
static double makespan(const ps_schedule *s, const ps_problem *pb, double *bubble)
{
    ps_sim *sim;
    ps_metrics met;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_msg(ps_sim_run(sim, s, pb) == 0, "%s", ps_sim_last_error(sim));
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    if (bubble)
        *bubble = met.bubble;
    ps_sim_free(sim);
    return met.makespan;
}

/* ---- DualPipe / DualPipeV ------------------------------------------------------------------ */

START_TEST(fused_dualpipev_matches_pytorch_artifact)
{
    /* PyTorch's ScheduleDualPipeV, 4 ranks, 10 micro-batches: every cell, fused pairs
     * (OVERLAP_F_B) and the I/W split included. */
    size_t len;
    char *text = test_read_file("data/dualpipev_4rank_10mb.csv", &len);
    ps_schedule *ref, *s = gen("ScheduleDualPipeV", 4, 2, 10);
    ck_assert_int_eq(ps_schedule_new(&ref, NULL), 0);
    ck_assert_int_eq(ps_schedule_load_csv(ref, text, len, PS_CSV_COMPUTE_ONLY, 10), 0);
    ck_assert_int_eq(ps_schedule_pp(ref), 4);
    int fused = 0, split = 0;
    for (int r = 0; r < 4; r++) {
        size_t n = ps_schedule_rank_length(s, r);
        ck_assert_uint_eq(n, ps_schedule_rank_length(ref, r));
        const ps_action *x = ps_schedule_rank_actions(s, r), *y = ps_schedule_rank_actions(ref, r);
        for (size_t i = 0; i < n; i++) {
            char want[64], got[64];
            ps_action_format(&y[i], want, sizeof want);
            ps_action_format(&x[i], got, sizeof got);
            ck_assert_msg(x[i].kind == y[i].kind && x[i].stage == y[i].stage &&
                              x[i].mb == y[i].mb && x[i].bkind == y[i].bkind &&
                              x[i].bstage == y[i].bstage && x[i].bmb == y[i].bmb,
                          "rank %d action %zu: %s, artifact %s", r, i, got, want);
            fused += x[i].kind == PS_FB;
            split += x[i].kind == PS_I;
        }
    }
    /* Per rank: 2(m-2p+r+1) fused pairs in step 4 (one fewer on the last rank) and p-r-1 in
     * step 5: 9, 10, 11, 11; zero-bubble backwards in steps 3, 6 and 7: 2(p-r-1) + r+1 =
     * 7-r. */
    ck_assert_int_eq(fused, 9 + 10 + 11 + 11);
    ck_assert_int_eq(split, 7 + 6 + 5 + 4);
    for (int st = 0; st < 8; st++)
        ck_assert_int_eq(ps_schedule_stage_rank(s, st), st < 4 ? st : 7 - st);
    ps_schedule_free(ref);
    ps_schedule_free(s);
    free(text);
}
END_TEST

START_TEST(fused_dualpipe_hand_worked)
{
    /* p = 2, m = 4: H = 1, h = 0 on both ranks (both are middle ranks), C = 2 per direction.
     * Rank 0: phase 0 = path 0 at stage 0 (micro-batches 0, 1), phase 1 = path 1 at stage 3
     * (micro-batches 2, 3). Rank 1: phase 0 = path 1 at stage 2, phase 1 = path 0 at stage 1.
     * Step 2: F0, F1. Step 4 once, first F0&B1 not fused: F0, B1, then F1&B0. Step 6 once,
     * zero-bubble from i = (h+1)/2 = 0 before B0 (h even): B1, B0(zb) = I. Step 8: W. */
    ps_schedule *s = gen("DualPipe", 2, 1, 4);
    char buf[1024];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 3F2 0F1 3B2 (3F3;0B0)OVERLAP_F_B 3B3 0I1 0W1");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "2F2 1F0 2F3 1B0 (1F1;2B2)OVERLAP_F_B 1B1 2I3 2W3");
    /* Placement and paths of the two copies. */
    ck_assert_int_eq(ps_schedule_num_stages(s), 4);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 0), 0);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 1), 1);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 2), 1);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 3), 0);
    ck_assert_int_eq(ps_schedule_num_paths(s), 2);
    const int32_t *st;
    int n, first, count;
    ck_assert_int_eq(ps_schedule_path(s, 1, &st, &n, &first, &count), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(st[0], 2);
    ck_assert_int_eq(st[1], 3);
    ck_assert_int_eq(first, 2);
    ck_assert_int_eq(count, 2);
    ps_schedule_free(s);

    /* p = 4, m = 8, rank 0 (h = 0, H = 2, C = 4): step 1 2 x F0, step 2 F0 F1, step 3 B1(zb)
     * W F1, step 4 once (C-2H+h+1 = 1) fused, step 5 B1 F1&B0, step 6 B1 B0(zb), step 7 W
     * B0(zb), step 8 W. Rank 1 (h = 1, a middle rank): step 2 twice, step 4 twice with the
     * first F0&B1 unfused, step 6 twice switching to zb before its second B1 (h odd). */
    s = gen("dualpipe", 4, 1, 8);
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0F2 7F4 7I4 7W4 7F5 (0F3;7B5)OVERLAP_F_B (7F6;0B0)OVERLAP_F_B "
                          "7B6 (7F7;0B1)OVERLAP_F_B 7B7 0I2 0W2 0I3 0W3");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 6F4 1F1 6F5 1F2 6B4 (6F6;1B0)OVERLAP_F_B (1F3;6B5)OVERLAP_F_B "
                          "(6F7;1B1)OVERLAP_F_B 6B6 1B2 6I7 1I3 6W7 1W3");
    /* Rank 2 mirrors rank 1 with the directions swapped: phase 0 is path 1 (stage 5). */
    rank_string(s, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "5F4 2F0 5F5 2F1 5F6 2B0 (2F2;5B4)OVERLAP_F_B (5F7;2B1)OVERLAP_F_B "
                          "(2F3;5B5)OVERLAP_F_B 2B2 5B6 2I3 5I7 2W3 5W7");
    ps_schedule_free(s);
}
END_TEST

START_TEST(fused_dualpipev_hand_worked)
{
    /* p = 2, m = 4 (H = 2, C = 4). Rank 0 (h = 0, stages 0 and 3): 2 x F0; F0 F1; B1(zb) W
     * F1; once F0&B1 F1&B0; B1 F1&B0; B1 B0(zb); W B0(zb); W. Rank 1 (h = 1, the last rank,
     * stages 1 and 2): twice F0 F1; step 4 twice, the first F0&B1 unfused; step 6 twice, zb
     * from the second B1 (h odd); two Ws. */
    ps_schedule *s = gen("dualpipev", 2, 2, 4);
    char buf[1024];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0F2 3F0 3I0 3W0 3F1 (0F3;3B1)OVERLAP_F_B (3F2;0B0)OVERLAP_F_B "
                          "3B2 (3F3;0B1)OVERLAP_F_B 3B3 0I2 0W2 0I3 0W3");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 2F0 1F1 2F1 1F2 2B0 (2F2;1B0)OVERLAP_F_B (1F3;2B1)OVERLAP_F_B "
                          "(2F3;1B1)OVERLAP_F_B 2B2 1B2 2I3 1I3 2W3 1W3");
    ck_assert_int_eq(ps_schedule_num_paths(s), 1);
    ck_assert_int_eq(ps_schedule_param_copies(s), 1);
    ps_schedule_free(s);
}
END_TEST

START_TEST(fused_makespans_by_hand)
{
    /* DualPipe p = 2, m = 4 (orders above), f = b = w = 1, a fused pair costs 1.5.
     * r0: 0F0 [0,1] 3F2 [1,2] (2F2 on r1 [0,1]) 0F1 [2,3] 3B2 [3,5];
     * r1: 2F2 [0,1] 1F0 [1,2] 2F3 [2,3] 1B0 [3,5];
     * r0: (3F3;0B0) waits for 1B0: [5,6.5]; r1: (1F1;2B2) waits for 3B2: [5,6.5];
     * 3B3 [6.5,8.5], 1B1 [6.5,8.5]; 0I1 (after 1B1) [8.5,9.5] 0W1 [9.5,10.5]; 2I3 (after 3B3)
     * [8.5,9.5] 2W3 [9.5,10.5]. Makespan 10.5; with the default 3 per pair 12 (no bubble). */
    ps_problem *pb = problem("dualpipe", 2, 1, 4, 1, 1, 1, 1.5, -1, 0);
    ps_schedule *s = generate(pb);
    double bub;
    ck_assert_double_eq_tol(makespan(s, pb, &bub), 10.5, 1e-9);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, -1), 0);
    ck_assert_double_eq_tol(makespan(s, pb, &bub), 12, 1e-9);
    ck_assert_double_eq_tol(bub, 0, 1e-9); /* (p/2-1)(...) = 0 */
    ps_schedule_free(s);
    ps_problem_free(pb);

    /* DualPipeV p = 2, m = 4, f = b = w = 1, pair 1.5.
     * r0: 0F0 [0,1] 0F1 [1,2] 0F2 [2,3]; r1: 1F0 [1,2] 2F0 [2,3] 1F1 [3,4] 2F1 [4,5] 1F2 [5,6];
     * r0: 3F0 [3,4] 3I0 [4,5] 3W0 [5,6] 3F1 [6,7] (0F3;3B1) [7,8.5];
     * r1: 2B0 [6,8] (2F2;1B0) [8,9.5] (1F3;2B1) [9.5,11] (2F3;1B1) [11,12.5];
     * r0: (3F2;0B0) [9.5,11] 3B2 [11,13] (3F3;0B1) [13,14.5] 3B3 [14.5,16.5];
     * r1: 2B2 [13,15] 1B2 [15,17] 2I3 [17,18] 1I3 [18,19] 2W3 [19,20] 1W3 [20,21];
     * r0: 0I2 [17,18] 0W2 [18,19] 0I3 [19,20] 0W3 [20,21]. Makespan 21. */
    pb = problem("dualpipev", 2, 2, 4, 1, 1, 1, 1.5, -1, 0);
    s = generate(pb);
    ck_assert_double_eq_tol(makespan(s, pb, NULL), 21, 1e-9);
    /* Default pair (3): busy 2m(f+b+w) = 24 plus the published bubble (p-1)(3+2-3) = 2. */
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, -1), 0);
    ck_assert_double_eq_tol(makespan(s, pb, &bub), 26, 1e-9);
    ck_assert_double_eq_tol(bub, 2, 1e-9);

    /* Where the published bubble does not hold (f != b), same orders, default pair f+b+w.
     * f = 2, b = 1, w = 0.5 (B = 1.5, pair 3.5):
     * r0: 0F0 [0,2] 0F1 [2,4] 0F2 [4,6]; r1: 1F0 [2,4] 2F0 [4,6] 1F1 [6,8] 2F1 [8,10]
     * 1F2 [10,12]; r0: 3F0 [6,8] 3I0 [8,9] 3W0 [9,9.5] 3F1 [10,12] (0F3;3B1) [12,15.5];
     * r1: 2B0 [12,13.5] (2F2;1B0) [13.5,17] (1F3;2B1) [17,20.5] (2F3;1B1) [20.5,24];
     * r0: (3F2;0B0) [17,20.5] 3B2 [20.5,22] (3F3;0B1) [24,27.5] 3B3 [27.5,29];
     * r1: 2B2 [24,25.5] 1B2 [25.5,27] 2I3 [29,30] 1I3 [30,31] 2W3 [31,31.5] 1W3 [31.5,32];
     * r0: 0I2 [29,30] 0W2 [30,30.5] 0I3 [31,32] 0W3 [32,32.5].
     * Makespan 32.5, rank 0 idle 32.5 - 28 = 4.5 = (p-1)(2f + b - w), not the published
     * (p-1)(f + 2b - w) = 3.5 (test-sweep.c, branch f >= b). */
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_F, 2), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_B, 1), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_W, 0.5), 0);
    ck_assert_double_eq_tol(makespan(s, pb, &bub), 32.5, 1e-9);
    ck_assert_double_eq_tol(bub, 4.5, 1e-9);
    /* f = 1, b = 2, w = 1 (B = 3, pair 4):
     * r0: 0F0 [0,1] 0F1 [1,2] 0F2 [2,3]; r1: 1F0 [1,2] 2F0 [2,3] 1F1 [3,4] 2F1 [4,5] 1F2 [5,6];
     * r0: 3F0 [3,4] 3I0 [4,6] 3W0 [6,7] 3F1 [7,8] (0F3;3B1) [8,12];
     * r1: 2B0 [6,9] (2F2;1B0) [9,13] (1F3;2B1) [13,17] (2F3;1B1) [17,21];
     * r0: (3F2;0B0) [13,17] 3B2 [17,20] (3F3;0B1) [21,25] 3B3 [25,28];
     * r1: 2B2 [21,24] 1B2 [24,27] 2I3 [28,30] 1I3 [30,32] 2W3 [32,33] 1W3 [33,34];
     * r0: 0I2 [28,30] 0W2 [30,31] 0I3 [32,34] 0W3 [34,35].
     * Makespan 35, bubble 35 - 32 = 3 = (p-1)(f + 2b - w) - min(f, (p-1)(b - f)), one less
     * than the published 4 (test-sweep.c, branch f < b). */
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_F, 1), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_B, 2), 0);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_W, 1), 0);
    ck_assert_double_eq_tol(makespan(s, pb, &bub), 35, 1e-9);
    ck_assert_double_eq_tol(bub, 3, 1e-9);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(fused_dualpipe_two_copies)
{
    /* DualPipe keeps two model copies on every rank: the schedule says so and so does every
     * rank's simulated metrics. Rank 0's activations peak at p + 1 (reference 1.2: after step
     * 3 it holds p, the first forward of step 4 adds one). DualPipeV has one copy. */
    ps_problem *pb = make_problem("dualpipe", 4, 1, 8, 1, 1, 1, 0);
    ps_schedule *s = generate(pb);
    ck_assert_int_eq(ps_schedule_param_copies(s), 2);
    ck_assert_int_eq(ps_schedule_num_stages(s), 8);
    for (int st = 0; st < 8; st++)
        ck_assert_int_eq(ps_schedule_stage_rank(s, st), st < 4 ? st : 7 - st);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    for (int r = 0; r < 4; r++) {
        ps_rank_metrics rm;
        ck_assert_int_eq(ps_sim_rank_metrics(sim, r, &rm), 0);
        ck_assert_int_eq(rm.param_copies, 2);
        if (r == 0)
            ck_assert_int_eq(rm.peak_activations, 5);
    }
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);

    pb = make_problem("dualpipev", 4, 2, 8, 1, 1, 1, 0);
    s = generate(pb);
    ck_assert_int_eq(ps_schedule_param_copies(s), 1);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_rank_metrics rm;
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 0, &rm), 0);
    ck_assert_int_eq(rm.param_copies, 1);
    ck_assert_int_eq(rm.peak_activations, 9); /* 2p + 1 chunks */
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* ---- Adaptive Pipe --------------------------------------------------------------------------- */

static int64_t warmup(int p, int v, int m, int r, int delta)
{
    int64_t w = 2LL * (p - r - 1) + (int64_t)(v - 1) * p + delta;
    return w < (int64_t)m * v ? w : (int64_t)m * v;
}

START_TEST(fused_adaptive_pairs_and_warmup)
{
    /* Every fused pair joins two different micro-batches; rank r opens with W_r forwards
     * (2(p-r-1) + (v-1)p + delta, capped at m v), then runs m v - W_r fused pairs, then W_r
     * backwards alone. */
    int checked = 0;
    for (int delta = 1; delta <= 3; delta++)
        for (int p = 1; p <= 6; p++)
            for (int v = 1; v <= 3; v++)
                for (int m = 1; m <= 14; m++) {
                    if (v > 1 && (m < p || m % p))
                        continue;
                    ps_problem *pb = problem("adaptive", p, v, m, 1, 1, 1, -1, delta, 0);
                    ps_schedule *s = generate(pb);
                    for (int r = 0; r < p; r++) {
                        const ps_action *a = ps_schedule_rank_actions(s, r);
                        size_t n = ps_schedule_rank_length(s, r), i = 0;
                        int64_t w = warmup(p, v, m, r, delta), nf = 0, nfb = 0, nb = 0;
                        while (i < n && a[i].kind == PS_F)
                            i++, nf++;
                        for (; i < n && a[i].kind == PS_FB; i++, nfb++)
                            ck_assert_msg(a[i].mb != a[i].bmb && a[i].bkind == PS_B,
                                          "p=%d v=%d m=%d rank %d: pair of micro-batch %d", p, v, m,
                                          r, a[i].mb);
                        for (; i < n && a[i].kind == PS_B; i++)
                            nb++;
                        ck_assert_uint_eq(i, n);
                        ck_assert_int_eq(nf, w);
                        ck_assert_int_eq(nfb, (int64_t)m * v - w);
                        ck_assert_int_eq(nb, w);
                    }
                    checked++;
                    ps_schedule_free(s);
                    ps_problem_free(pb);
                }
    ck_assert_int_gt(checked, 300);
}
END_TEST

START_TEST(fused_adaptive_bound)
{
    /* makespan <= interleaved's (m v + p - 1)(f + b + w) + delta f for a fused pair costing
     * f + b + w or less, over a grid and several cost ratios. */
    static const double cs[][3] = {{1, 1, 1}, {1, 2, 1}, {2, 1, 0.5}, {3, 1, 2}};
    static const double share[] = {1, 0.8, 0.5};
    for (int ci = 0; ci < 4; ci++)
        for (int k = 0; k < 3; k++)
            for (int delta = 0; delta <= 2; delta++)
                for (int p = 1; p <= 5; p++)
                    for (int v = 1; v <= 3; v++)
                        for (int m = p; m <= 3 * p; m += p) {
                            double f = cs[ci][0], full = f + cs[ci][1] + cs[ci][2];
                            ps_problem *pb = problem("adaptive", p, v, m, f, cs[ci][1], cs[ci][2],
                                                     share[k] * full, delta, 0);
                            ps_schedule *s = generate(pb);
                            double bound = ((double)m * v + p - 1) * full + delta * f;
                            double t = makespan(s, pb, NULL);
                            ck_assert_msg(t <= bound + 1e-9, "p=%d v=%d m=%d: %g > %g", p, v, m, t,
                                          bound);
                            ps_schedule_free(s);
                            ps_problem_free(pb);
                        }
}
END_TEST

START_TEST(fused_adaptive_delta)
{
    /* delta = 0: interleaved's warm-up; the pairs that would join a micro-batch's forward and
     * backward lie on the last rank, on the last stage, and run unfused as F then B: m of
     * them (every step with v = 1; one per micro-batch with v > 1). Every other pair is
     * fused. */
    for (int p = 1; p <= 5; p++)
        for (int v = 1; v <= 3; v++)
            for (int m = p; m <= 3 * p; m += p) {
                ps_problem *pb = problem("adaptive", p, v, m, 1, 1, 1, -1, 0, 0);
                ps_schedule *s = generate(pb);
                int S = p * v, unfused = 0;
                for (int r = 0; r < p; r++) {
                    const ps_action *a = ps_schedule_rank_actions(s, r);
                    size_t n = ps_schedule_rank_length(s, r);
                    int64_t nf = 0;
                    for (size_t i = 0; i < n; i++) {
                        if (a[i].kind == PS_FB)
                            ck_assert_int_ne(a[i].mb, a[i].bmb);
                        if (a[i].kind == PS_F)
                            nf++;
                        if (i + 1 < n && a[i].kind == PS_F && a[i + 1].kind == PS_B &&
                            a[i].mb == a[i + 1].mb) {
                            ck_assert_int_eq(r, p - 1);
                            ck_assert_int_eq(a[i].stage, S - 1);
                            ck_assert_int_eq(a[i + 1].stage, S - 1);
                            unfused++;
                        }
                    }
                    /* Every forward not in a pair is warm-up or an unfused step. */
                    ck_assert_int_eq(nf, warmup(p, v, m, r, 0) + (r == p - 1 ? unfused : 0));
                }
                ck_assert_int_eq(unfused, m);
                ps_schedule_free(s);
                ps_problem_free(pb);
            }

    /* delta = 2: two more warm-up forwards than interleaved's, all pairs fused, rank 0 peaks
     * at interleaved's 2(p-1) + (v-1)p + 1 plus 2, and the makespan stays interleaved's. */
    ps_problem *pb = problem("adaptive", 4, 2, 8, 1, 1, 1, -1, 2, 0);
    ps_schedule *s = generate(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_rank_metrics rm;
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 0, &rm), 0);
    ck_assert_int_eq(rm.peak_activations, 2 * 3 + 4 + 1 + 2);
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(sim, &met), 0);
    ck_assert_double_eq_tol(met.makespan, (16 + 3) * 3, 1e-9);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(fused_adaptive_split_backward)
{
    /* p = 3, v = 1, m = 3, f = b = w = 1. Warm-ups 2(p-r-1)+1 capped at 3: 3, 3, 1, so ranks
     * 0 and 1 run F F F B B B and rank 2 runs F, two fused pairs, B.
     * Without the split: r2: 2F0 [2,3] (2F1;2B0) [3,6] (2F2;2B1) [6,9] 2B2 [9,11];
     * r1: 1B0 [6,8] 1B1 [9,11] 1B2 [11,13]; r0: 0B0 [8,10] 0B1 [11,13] 0B2 [13,15]. 15.
     * With it every cool-down B is I then W: r2: 2I2 [9,10] 2W2 [10,11];
     * r1: 1I0 [6,7] 1W0 [7,8] 1I1 [9,10] 1W1 [10,11] 1I2 [11,12] 1W2 [12,13];
     * r0: 0I0 [7,8] 0W0 [8,9] 0I1 [10,11] 0W1 [11,12] 0I2 [12,13] 0W2 [13,14]. 14, (p-2)w
     * less. */
    ps_problem *pb = problem("adaptive", 3, 1, 3, 1, 1, 1, -1, -1, 0);
    ps_schedule *s = generate(pb);
    char buf[512];
    rank_string(s, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "2F0 (2F1;2B0)OVERLAP_F_B (2F2;2B1)OVERLAP_F_B 2B2");
    ck_assert_double_eq_tol(makespan(s, pb, NULL), 15, 1e-9);
    ps_schedule_free(s);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 1), 0);
    s = generate(pb);
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0F2 0I0 0W0 0I1 0W1 0I2 0W2");
    rank_string(s, 2, buf, sizeof buf);
    ck_assert_str_eq(buf, "2F0 (2F1;2B0)OVERLAP_F_B (2F2;2B1)OVERLAP_F_B 2I2 2W2");
    ck_assert_double_eq_tol(makespan(s, pb, NULL), 14, 1e-9);
    ps_schedule_free(s);
    ps_problem_free(pb);

    /* Never slower than without the split: each I ends where the B began plus b, earlier
     * than the B did, and its W ends where the B did, so no action of any rank starts later
     * (the simulator's times are monotone in the end times they wait for). Checked over a
     * grid, every cost ratio of the sweep, with and without transfer cost. */
    static const double cs[][3] = {{1, 1, 1},           {1, 2, 1}, {2, 1, 0.5},
                                   {0.75, 0.25, 0.125}, {3, 1, 2}, {1, 1, 3}};
    for (int ci = 0; ci < 6; ci++)
        for (int p = 1; p <= 6; p++)
            for (int v = 1; v <= 3; v++)
                for (int m = 1; m <= 13; m += 3) {
                    if (v > 1 && (m < p || m % p))
                        continue;
                    for (int c = 0; c < 2; c++) {
                        ps_problem *q = problem("adaptive", p, v, m, cs[ci][0], cs[ci][1],
                                                cs[ci][2], -1, -1, 0);
                        ck_assert_int_eq(ps_problem_set_cost(q, PS_COST_C, 0.5 * c), 0);
                        ps_schedule *a = generate(q);
                        ck_assert_int_eq(ps_problem_set_int(q, PS_PARAM_SPLIT_BACKWARD, 1), 0);
                        ps_schedule *b = generate(q);
                        double ta = makespan(a, q, NULL), tb = makespan(b, q, NULL);
                        ck_assert_msg(tb <= ta + 1e-9, "p=%d v=%d m=%d: split %g, not %g", p, v, m,
                                      tb, ta);
                        /* Same lists except that each cool-down B is now I, W. */
                        for (int r = 0; r < p; r++) {
                            int64_t w = warmup(p, v, m, r, 1);
                            ck_assert_uint_eq(ps_schedule_rank_length(b, r),
                                              ps_schedule_rank_length(a, r) + (size_t)w);
                        }
                        ps_schedule_free(a);
                        ps_schedule_free(b);
                        ps_problem_free(q);
                    }
                }
}
END_TEST

START_TEST(fused_registry_names)
{
    ps_family_info fi;
    ck_assert_int_ge(ps_family_lookup("DualPipe", &fi), 0);
    ck_assert_str_eq(fi.name, "dualpipe");
    ck_assert_str_eq(fi.placement, "bidirectional");
    ck_assert_int_ge(ps_family_lookup("ScheduleDualPipeV", &fi), 0);
    ck_assert_str_eq(fi.name, "dualpipev");
    ck_assert_str_eq(fi.placement, "v");
    const char *adaptive[] = {"adaptive", "adaptive-pipe", "AdaptivePipe", "combined_1f1b",
                              "fb-overlap"};
    for (int k = 0; k < 5; k++) {
        ck_assert_int_ge(ps_family_lookup(adaptive[k], &fi), 0);
        ck_assert_str_eq(fi.name, "adaptive");
        ck_assert_str_eq(fi.placement, "loop");
    }
}
END_TEST

/* ---- errors --------------------------------------------------------------------------------- */

static void expect_error(ps_problem *pb, int code, const char *needle)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), code);
    ck_assert_msg(strstr(ps_schedule_last_error(s), needle) != NULL, "'%s' lacks '%s'",
                  ps_schedule_last_error(s), needle);
    ps_schedule_free(s);
    ps_problem_free(pb);
}

START_TEST(fused_errors)
{
    expect_error(make_problem("dualpipe", 4, 1, 9, 1, 1, 1, 0), PS_EUNSUPPORTED, "even m");
    expect_error(make_problem("dualpipe", 3, 1, 8, 1, 1, 1, 0), PS_EUNSUPPORTED, "even pp");
    expect_error(make_problem("dualpipe", 4, 1, 6, 1, 1, 1, 0), PS_EUNSUPPORTED, "m >= 2 pp");
    expect_error(make_problem("dualpipe", 4, 2, 8, 1, 1, 1, 0), PS_EUNSUPPORTED, "vpp = 1");
    expect_error(make_problem("dualpipev", 4, 2, 7, 1, 1, 1, 0), PS_EUNSUPPORTED, "m >= 2 pp");
    expect_error(make_problem("dualpipev", 4, 3, 8, 1, 1, 1, 0), PS_EUNSUPPORTED, "vpp = 2");
    expect_error(make_problem("dualpipev", 4, 1, 8, 1, 1, 1, 0), PS_EUNSUPPORTED, "vpp = 2");
    expect_error(make_problem("adaptive", 4, 2, 6, 1, 1, 1, 0), PS_EUNSUPPORTED, "adaptive");
    expect_error(make_problem("adaptive", 4, 2, 2, 1, 1, 1, 0), PS_EUNSUPPORTED, "m >= pp");
    expect_error(problem("1f1b", 4, 1, 8, 1, 1, 1, -1, 2, 0), PS_EUNSUPPORTED, "extra_warmup");
    expect_error(problem("dualpipe", 4, 1, 8, 1, 1, 1, -1, -1, 1), PS_EUNSUPPORTED,
                 "split_backward");
    /* Accepted edges: DualPipeV needs no parity, DualPipe's smallest case, p = 1. */
    ps_schedule_free(gen("dualpipev", 3, 2, 7));
    ps_schedule_free(gen("dualpipe", 2, 1, 4));
    ps_schedule_free(gen("dualpipev", 1, 2, 2));
    ps_schedule_free(gen("adaptive", 1, 1, 1));
}
END_TEST

START_TEST(fused_alloc_failure)
{
    /* generate -> validate -> simulate under an allocator failing its Nth call: PS_ENOMEM
     * and nothing left allocated, until the whole run succeeds. */
    static const struct {
        const char *fam;
        int p, v, m, split;
    } cases[] = {{"dualpipe", 4, 1, 8, 0}, {"dualpipev", 3, 2, 6, 0}, {"adaptive", 3, 2, 6, 1}};
    for (int k = 0; k < 3; k++) {
        long n;
        for (n = 1;; n++) {
            counting_alloc ca = {0};
            ca.fail_at = n;
            ps_allocator al = counting_allocator(&ca);
            ps_problem *pb = NULL;
            ps_schedule *s = NULL;
            ps_sim *sim = NULL;
            int rc = ps_problem_new(&pb, &al);
            if (!rc && !(rc = ps_problem_set_schedule(pb, cases[k].fam)) &&
                !(rc = ps_problem_set_int(pb, PS_PARAM_PP, cases[k].p)) &&
                !(rc = ps_problem_set_int(pb, PS_PARAM_VPP, cases[k].v)) &&
                !(rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, cases[k].m)) &&
                !(rc = ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, cases[k].split)) &&
                !(rc = ps_schedule_new(&s, &al)) && !(rc = ps_schedule_generate(s, pb)) &&
                !(rc = ps_schedule_validate(s)) && !(rc = ps_sim_new(&sim, &al)))
                rc = ps_sim_run(sim, s, pb);
            ps_sim_free(sim);
            ps_schedule_free(s);
            ps_problem_free(pb);
            ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "%s: failing call %ld gave %s", cases[k].fam,
                          n, ps_err_name(rc));
            ck_assert_msg(ca.live == 0 && ca.bytes == 0, "%s: call %ld leaked", cases[k].fam, n);
            if (rc == 0)
                break;
        }
        ck_assert_int_gt(n, 3);
    }
}
END_TEST

/* ---- the 8-step program's invariants: reported, never aborted --------------------------- */

/* An IR laid out by generating family on pp ranks and m micro-batches, its lists emptied. */
static ps_schedule *empty_ir(const char *fam, int pp, int v, int m)
{
    ps_problem *pb = problem(fam, pp, v, m, 1, 1, 1, -1, -1, 0);
    ps_schedule *s = generate(pb);
    ps_problem_free(pb);
    for (int32_t r = 0; r < s->pp; r++)
        s->len[r] = 0;
    return s;
}

/* Rank descriptions the families' checks never produce, each breaking one invariant of
 * ps__dual_emit (counts worked from the steps in dualpipe.c's comment). */
START_TEST(fused_dual_invariants)
{
    static const struct {
        ps__dual_rank d;
        const char *msg;
    } cases[] = {
        /* C-2H+h+1 = 1-4+0+1: the steady step would not run */
        {{2, 0, 1, {0, 7}, {0, 1}},
         "internal invariant broken on rank 0: step 4 would run C-2H+h+1 = -2 times, not at "
         "least once (H=2, h=0, C=1)"},
        /* h = -1: step 6 makes no I, so step 7's first W has none to take */
        {{2, -1, 5, {0, 7}, {0, 5}},
         "internal invariant broken on rank 0: 1 W found no I whose weight gradient it could run "
         "(H=2, h=-1, C=5)"},
        /* h = H: steps 2, 4 and 6 run h+1 + C-2H+h+1 = 10 of each, steps 1, 3, 5, 7 none */
        {{2, 2, 8, {0, 7}, {0, 8}},
         "internal invariant broken on rank 0: phases 0 and 1 ran 10 and 10 forwards, 10 and 10 "
         "backwards, not C=8 each (H=2, h=2)"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        ps_schedule *s = empty_ir("dualpipe", 4, 1, 16); /* room for 48 actions per rank */
        ck_assert_int_eq(ps__dual_emit(s, 0, &cases[k].d), PS_EINTERNAL);
        ck_assert_str_eq(ps_schedule_last_error(s), cases[k].msg);
        ps_schedule_free(s);
    }
}
END_TEST

/* Parameters that the checks refuse (m < 2 pp) reach the generators only by a bug; they then
 * report the broken invariant instead of aborting. */
START_TEST(fused_dual_generators_report)
{
    /* A broken invariant has its own code, which the CLI maps to exit status 3. */
    ck_assert_str_eq(ps_err_name(PS_EINTERNAL), "EINTERNAL");
    ck_assert_int_eq(PS_EINTERNAL, -16);
    ps__params p = {4, 1, 4, 0, 1, 0, NULL};
    char why[PS__ERRLEN];
    ck_assert_int_ne(ps__dualpipe_check(&p, why), 0);
    ps_schedule *s = empty_ir("dualpipe", 4, 1, 16);
    ck_assert_int_eq(ps__dualpipe_generate(s, &p), PS_EINTERNAL);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "internal invariant broken on rank 0: step 4 would run C-2H+h+1 = -1 times, "
                     "not at least once (H=2, h=0, C=2)");
    ps_schedule_free(s);

    p.v = 2;
    ck_assert_int_ne(ps__dualpipev_check(&p, why), 0);
    s = empty_ir("dualpipev", 4, 2, 16);
    ck_assert_int_eq(ps__dualpipev_generate(s, &p), PS_EINTERNAL);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "internal invariant broken on rank 0: step 4 would run C-2H+h+1 = -3 times, "
                     "not at least once (H=4, h=0, C=4)");
    ps_schedule_free(s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("fused");
    TCase *dual = tcase_create("dualpipe");
    tcase_add_test(dual, fused_dualpipev_matches_pytorch_artifact);
    tcase_add_test(dual, fused_dualpipe_hand_worked);
    tcase_add_test(dual, fused_dualpipev_hand_worked);
    tcase_add_test(dual, fused_makespans_by_hand);
    tcase_add_test(dual, fused_dualpipe_two_copies);
    suite_add_tcase(su, dual);
    TCase *ad = tcase_create("adaptive");
    tcase_add_test(ad, fused_adaptive_pairs_and_warmup);
    tcase_add_test(ad, fused_adaptive_bound);
    tcase_add_test(ad, fused_adaptive_delta);
    tcase_add_test(ad, fused_adaptive_split_backward);
    suite_add_tcase(su, ad);
    TCase *misc = tcase_create("registry");
    tcase_add_test(misc, fused_registry_names);
    tcase_add_test(misc, fused_errors);
    tcase_add_test(misc, fused_alloc_failure);
    suite_add_tcase(su, misc);
    TCase *inv = tcase_create("dualpipe_invariants");
    tcase_add_test(inv, fused_dual_invariants);
    tcase_add_test(inv, fused_dual_generators_report);
    suite_add_tcase(su, inv);
    return run_suite(su);
}
