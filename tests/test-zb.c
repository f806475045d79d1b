/*
 * The zero-bubble family's handcrafted rules (hand-worked tables and PyTorch's artifact) and
 * the simulator's memory model (peak memory, per-stage values, fused pairs, the limit).
 * Closed forms over the whole grid are in test-sweep.c.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <stdio.h>

static ps_schedule *gen(const char *fam, int p, int v, int m)
{
    ps_problem *pb = make_problem(fam, p, v, m, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    ck_assert_msg(rc == 0, "%s: %s", fam, ps_schedule_last_error(s));
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_problem_free(pb);
    return s;
}

/* Reads a CSV file of the reference artifacts into rows of non-empty cells joined by ' '. */
static int read_rows(const char *path, char rows[][2048], int max)
{
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "cannot open %s (run from tests/)", path);
    char line[4096];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f)) {
        size_t used = 0;
        rows[n][0] = 0;
        for (char *cell = strtok(line, ",\r\n"); cell; cell = strtok(NULL, ",\r\n")) {
            used += (size_t)snprintf(rows[n] + used, 2048 - used, "%s%s", used ? " " : "", cell);
        }
        n++;
    }
    fclose(f);
    return n;
}

START_TEST(zb_interleaved_matches_pytorch_artifact)
{
    /* PyTorch's ScheduleInterleavedZeroBubble, 2 ranks x 2 chunks, 8 micro-batches; the file's
     * empty cells are PyTorch's lock-step alignment and carry no work (strtok skips them). */
    char rows[2][2048];
    ck_assert_int_eq(read_rows("data/zb1p_2rank_2stagep_compute.csv", rows, 2), 2);
    ps_schedule *s = gen("InterleavedZeroBubble", 2, 2, 8);
    char buf[2048];
    for (int r = 0; r < 2; r++) {
        rank_string(s, r, buf, sizeof buf);
        ck_assert_str_eq(buf, rows[r]);
    }
    ps_schedule_free(s);
}
END_TEST

START_TEST(zb_v_hand_worked)
{
    /* p = 2, m = 3 (n = max(2p-1, m) = 3, no padding), worked through the program by hand:
     * rank 0 holds stages 0 and 3, rank 1 stages 1 and 2. */
    ps_schedule *s = gen("zb-v", 2, 2, 3);
    char buf[1024];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf,
                     "0F0 0F1 0F2 3F0 3I0 3W0 3F1 3I1 3W1 0I0 0W0 3F2 3I2 3W2 0I1 0W1 0I2 0W2");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf,
                     "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 2W1 1I1 2I2 1I2 1W1 2W2 1W2");
    ck_assert_int_eq(ps_schedule_stage_rank(s, 3), 0);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 2), 1);
    ps_schedule_free(s);
    /* Padding: with m = 1 < 2p-1 the padded micro-batches are dropped, 6 actions a rank. */
    s = gen("zb-v", 3, 2, 1);
    for (int r = 0; r < 3; r++)
        ck_assert_int_eq(ps_schedule_rank_length(s, r), 6);
    ps_schedule_free(s);
}
END_TEST

START_TEST(zb_h_hand_worked)
{
    /* ZB-H1, p = 2, m = 3: rank 0 warms up with 1 forward and runs W from step 0; rank 1
     * (the last) runs W from step r = 1 on. */
    ps_schedule *s = gen("zb-h1", 2, 1, 3);
    char buf[512];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0I0 0W0 0F2 0I1 0W1 0I2 0W2");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1I0 1F1 1I1 1W0 1F2 1I2 1W1 1W2");
    ps_schedule_free(s);
    /* ZB-H2, p = 2, m = 4: warm-up 2 on rank 0, W from step 2(p-1) - warm-up = 0. */
    s = gen("zb-h2", 2, 1, 4);
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0F2 0I0 0W0 0F3 0I1 0W1 0I2 0W2 0I3 0W3");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1I0 1F1 1I1 1F2 1I2 1W0 1F3 1I3 1W1 1W2 1W3");
    ps_schedule_free(s);
}
END_TEST

START_TEST(zb_csv_uses_i_and_w)
{
    const char *fams[] = {"interleaved-zb", "zb-v", "zb-h1"};
    for (int k = 0; k < 3; k++) {
        ps_schedule *s = gen(fams[k], 2, k == 2 ? 1 : 2, 4);
        char buf[4096];
        rank_string(s, 1, buf, sizeof buf);
        ck_assert_msg(strstr(buf, "I0") && strstr(buf, "W0") && !strstr(buf, "B"), "%s: %s",
                      fams[k], buf);
        ps_schedule_free(s);
    }
}
END_TEST

static ps_sim *simulate(ps_schedule *s, ps_problem *pb, int expect_rc)
{
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    int rc = ps_sim_run(sim, s, pb);
    ck_assert_msg(rc == expect_rc, "sim: %s", ps_sim_last_error(sim));
    return sim;
}

START_TEST(zb_memory_model)
{
    /* ZB-H1 p = 2, m = 2, rank 0: F0 F1 I0 W0 I1 W1 with F +1, I -0.5, W -0.5:
     * 1, 2, 1.5, 1, 0.5, 0 -> peak 2. Rank 1: F0 I0 F1 I1 W0 W1: 1, .5, 1.5, 1, .5, 0. */
    ps_problem *pb = make_problem("zb-h1", 2, 1, 2, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ps_sim *sim = simulate(s, pb, 0);
    ps_rank_metrics r0, r1;
    ps_sim_rank_metrics(sim, 0, &r0);
    ps_sim_rank_metrics(sim, 1, &r1);
    ck_assert_double_eq(r0.peak_memory, 2);
    ck_assert_double_eq(r1.peak_memory, 1.5);
    ck_assert_int_eq(r0.peak_activations, 2);
    ck_assert_int_eq(r1.peak_activations, 2);
    /* A limit below the peak: the simulation names the rank and the action. */
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 1.5), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_EINVALID);
    ck_assert_str_eq(ps_sim_last_error(sim),
                     "rank 0 exceeds the memory limit 1.5 at step 1 (0F1): 2");
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0); /* the timeline stays available */
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 2), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, -1), PS_ERANGE);
    /* Other weights: F +2, I -2, W 0: rank 0 peaks at 4. */
    ck_assert_int_eq(ps_problem_set_memory(pb, 2, -2, 0), 0);
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 0), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_sim_rank_metrics(sim, 0, &r0);
    ck_assert_double_eq(r0.peak_memory, 4);
    ck_assert_int_eq(ps_problem_set_memory(pb, 1, 1, 1), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "f + b + w must be 0"));
    ck_assert_int_eq(ps_problem_set_memory_string(pb, "f=3,b=-2,w=-1"), 0);
    ck_assert_double_eq(ps_problem_memory(pb, 0).f, 3);
    ck_assert_int_eq(ps_problem_set_memory_string(pb, "f=3,x=1"), PS_ECONFIG);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(zb_memory_per_stage_and_fused)
{
    /* 1F1B p = 2, m = 2 with stage 0: F +2, B -2 and stage 1: F +1, B -1.
     * Rank 0: F0 F1 B0 B1 -> 2, 4, 2, 0 (peak 4); rank 1: F0 B0 F1 B1 -> peak 1. */
    ps_problem *pb = make_problem("1f1b", 2, 1, 2, 1, 1, 1, 0);
    const ps_stage_mem sm[2] = {{2, -1, -1}, {1, -0.5, -0.5}};
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, sm, 2), 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ps_sim *sim = simulate(s, pb, 0);
    ps_rank_metrics r0, r1;
    ps_sim_rank_metrics(sim, 0, &r0);
    ps_sim_rank_metrics(sim, 1, &r1);
    ck_assert_double_eq(r0.peak_memory, 4);
    ck_assert_double_eq(r1.peak_memory, 1);
    const ps_stage_mem bad[1] = {{1, 0, 0}};
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, bad, 1), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "stage_memory[0]"));
    const ps_stage_mem three[3] = {{1, -1, 0}, {1, -1, 0}, {1, -1, 0}};
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, three, 3), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "stage_memory has 3 entries"));
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);

    /* A fused pair counts its forward before its backward releases: one stage, 2 mbs,
     * 0F0 (0F1;0I0) 0W0 0B1 -> 1, 2 then 1.5, 1, 0: peak 2; activations 1, 2, 2, 1, 0. */
    const char *csv = "0F0,(0F1;0I0)OVERLAP_F_B,0W0,0B1\n";
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_load_csv(s, csv, strlen(csv), PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    pb = make_problem("1f1b", 1, 1, 2, 1, 1, 1, 0);
    sim = simulate(s, pb, 0);
    ps_sim_rank_metrics(sim, 0, &r0);
    ck_assert_double_eq(r0.peak_memory, 2);
    ck_assert_int_eq(r0.peak_activations, 2);
    /* Per-stage memory of the wrong length is refused before anything reads it. */
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, sm, 2), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_sim_last_error(sim),
                     "stage_memory has 2 entries but the schedule has 1 stages");
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(zb_peak_memory_closed_forms)
{
    /* Rank 0 with the default weights (F +1, I -0.5, W -0.5), m >= 2p: ZB-H1 holds p
     * forwards at its peak (warm-up p-1, then one more), ZB-H2 2p-1; 1F1B p. */
    for (int p = 1; p <= 8; p++) {
        const char *fams[] = {"zb-h1", "zb-h2", "1f1b"};
        const double want[] = {p, 2 * p - 1, p};
        for (int k = 0; k < 3; k++) {
            ps_problem *pb = make_problem(fams[k], p, 1, 2 * p + 3, 1, 1, 1, 0);
            ps_schedule *s;
            ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
            ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
            ps_sim *sim = simulate(s, pb, 0);
            ps_rank_metrics r0;
            ps_sim_rank_metrics(sim, 0, &r0);
            ck_assert_msg(r0.peak_memory == want[k], "%s p=%d: %g", fams[k], p, r0.peak_memory);
            ps_sim_free(sim);
            ps_schedule_free(s);
            ps_problem_free(pb);
        }
    }
}
END_TEST

int main(void)
{
    Suite *su = suite_create("zb");
    TCase *tc = tcase_create("handcrafted");
    tcase_add_test(tc, zb_interleaved_matches_pytorch_artifact);
    tcase_add_test(tc, zb_v_hand_worked);
    tcase_add_test(tc, zb_h_hand_worked);
    tcase_add_test(tc, zb_csv_uses_i_and_w);
    suite_add_tcase(su, tc);
    tc = tcase_create("memory");
    tcase_add_test(tc, zb_memory_model);
    tcase_add_test(tc, zb_memory_per_stage_and_fused);
    tcase_add_test(tc, zb_peak_memory_closed_forms);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
