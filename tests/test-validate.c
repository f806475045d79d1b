/*
 * The validator: hand-made bad tables (deadlocks, missing and duplicated actions, wrong
 * ranks), and the SEND/RECV checks of lowered schedules.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "internal.h"

static ps_schedule *load(const char *csv, int m)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_load_csv(s, csv, strlen(csv), PS_CSV_AUTO, m);
    ck_assert_msg(rc == 0, "load: %s", ps_schedule_last_error(s));
    return s;
}

START_TEST(validate_deadlock_names_blocked_heads)
{
    /* Rank 1 wants the backward of mb 0 before running its forward; rank 0 waits for it. */
    ps_schedule *s = load("0F0,0B0\n1B0,1F0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EDEADLOCK);
    const char *e = ps_schedule_last_error(s);
    ck_assert_ptr_nonnull(strstr(e, "deadlock after 1 of 4 actions"));
    ck_assert_ptr_nonnull(strstr(e, "rank 0: blocked at step 1 on 0B0"));
    ck_assert_ptr_nonnull(strstr(e, "rank 1: blocked at step 0 on 1B0"));
    ck_assert_ptr_nonnull(strstr(e, "its own forward 1F0"));
    /* The simulator reports the same deadlock. */
    ps_problem *pb;
    ps_sim *sim;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), PS_EDEADLOCK);
    ck_assert_ptr_nonnull(strstr(ps_sim_last_error(sim), "rank 1: blocked at step 0 on 1B0"));
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), PS_ESTATE);
    ck_assert_int_eq(ps_schedule_lower(s), PS_EDEADLOCK);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 0);
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

START_TEST(validate_cross_rank_cycle)
{
    /* Each rank waits for the other's forward: 0F1 needs nothing, but rank 0 runs 0B0
     * first, which needs 1B0, which needs 1F0, which rank 1 only runs after 1F1... */
    ps_schedule *s = load("0F0,0B0,0F1,0B1\n1F1,1B1,1F0,1B0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EDEADLOCK);
    const char *e = ps_schedule_last_error(s);
    ck_assert_ptr_nonnull(strstr(e, "rank 0: blocked at step 1 on 0B0"));
    ck_assert_ptr_nonnull(strstr(e, "rank 1: blocked at step 0 on 1F1"));
    ck_assert_ptr_nonnull(strstr(e, "waits for 0F1 (rank 0), which has not run"));
    ps_schedule_free(s);
}
END_TEST

START_TEST(validate_counts)
{
    /* mb 1 has no backward on stage 1; mb 0 runs its forward twice on stage 0. */
    ps_schedule *s = load("0F0,0F0,0F1,0B0,0B1\n1F0,1B0,1F1\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    const char *e = ps_schedule_last_error(s);
    ck_assert_ptr_nonnull(strstr(e, "micro-batch 0, stage 0 (rank 0): 2 forwards"));
    ck_assert_ptr_nonnull(strstr(e, "micro-batch 1, stage 1 (rank 1): no backward"));
    ps_schedule_free(s);

    /* An I without its W, and a B together with a W. */
    s = load("0F0,0I0,0F1,0B1,0W1\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    e = ps_schedule_last_error(s);
    ck_assert_ptr_nonnull(strstr(e, "micro-batch 0, stage 0 (rank 0): an I with 0 W"));
    ck_assert_ptr_nonnull(strstr(e, "micro-batch 1, stage 0 (rank 0): a full backward B and 1 W"));
    ps_schedule_free(s);

    /* A W before its I deadlocks on the rank itself. */
    s = load("0F0,0W0,0I0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EDEADLOCK);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "on 0W0, which waits for 0I0"));
    ps_schedule_free(s);

    /* The given micro-batch count makes mb 2 missing everywhere. */
    s = load("0F0,0B0,0F1,0B1\n", 3);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "micro-batch 2, stage 0"));
    ps_schedule_free(s);
}
END_TEST

START_TEST(validate_many_problems_are_counted)
{
    /* 20 micro-batches declared, none run beyond mb 0: 19 missing forwards, listed up to 8
     * and then counted. */
    ps_schedule *s = load("0F0,0B0\n", 20);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "... and 11 more problems"));
    ps_schedule_free(s);
}
END_TEST

START_TEST(validate_generated_and_lowered)
{
    ps_problem *pb = make_problem("interleaved", 4, 2, 8, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_lower(s), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 1);
    ck_assert_int_eq(ps_schedule_lower(s), 0); /* idempotent */
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    /* Loop placement on 4 ranks: every adjacent stage pair crosses ranks, so each of the
     * 8 mbs x 7 edges carries one SEND and one RECV per direction: 4 * 56 comm actions. */
    size_t comm = 0, total = 0;
    for (int r = 0; r < 4; r++) {
        total += ps_schedule_lowered_length(s, r);
        comm += ps_schedule_lowered_length(s, r) - ps_schedule_rank_length(s, r);
    }
    ck_assert_int_eq(comm, 4 * 8 * 7);
    ck_assert_int_eq(total, comm + 4 * 32);

    /* Swap two receives from the same peer on rank 1: out of order. */
    ps_action *l = s->lacts + s->loff[1];
    int64_t first = -1, second = -1;
    for (int64_t i = 0; i < s->llen[1] && second < 0; i++)
        if (l[i].kind == PS_RECV_F) {
            if (first < 0)
                first = i;
            else
                second = i;
        }
    ck_assert(first >= 0 && second > first);
    ps_action tmp = l[first];
    l[first] = l[second];
    l[second] = tmp;
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "out of the order rank 0 sends in"));
    l[second] = l[first];
    l[first] = tmp;
    ck_assert_int_eq(ps_schedule_validate(s), 0);

    /* Turn a SEND_F into a duplicate of another one: one missing, one twice. */
    ps_action *l0 = s->lacts + s->loff[0];
    int64_t a = -1, b = -1;
    for (int64_t i = 0; i < s->llen[0] && b < 0; i++)
        if (l0[i].kind == PS_SEND_F) {
            if (a < 0)
                a = i;
            else
                b = i;
        }
    l0[b] = l0[a];
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "appears twice"));
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "missing SEND_F"));
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(validate_imported_comms_table)
{
    /* A compute_comms table written by hand: 2 ranks, 1 mb. */
    ps_schedule *s = load("0F0,0SEND_F0,0RECV_B0,0B0\n1RECV_F0,1F0,1B0,1SEND_B0\n", 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 1);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_schedule_free(s);
    /* RECV after the forward that needs it. */
    s = load("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1RECV_F0,1B0,1SEND_B0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "RECV_F placed after the forward"));
    ps_schedule_free(s);
    /* A SEND with nothing on the other side. */
    s = load("0F0,0SEND_F0,0RECV_B0,0B0\n1F0,1B0,1SEND_B0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "missing RECV_F"));
    ps_schedule_free(s);
}
END_TEST

START_TEST(validate_colocated_stages_need_no_comm)
{
    /* V placement on 2 ranks: stages 1 and 2 share rank 1. */
    ps_schedule *s = load("0F0,3F0,3B0,0B0\n1F0,2F0,2B0,1B0\n", 0);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ck_assert_int_eq(ps_schedule_lower(s), 0);
    /* Edges 0-1 and 2-3 cross ranks (2 directions each): 4 SEND + 4 RECV. */
    size_t comm = 0;
    for (int r = 0; r < 2; r++)
        comm += ps_schedule_lowered_length(s, r) - ps_schedule_rank_length(s, r);
    ck_assert_int_eq(comm, 8);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_schedule_free(s);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("validate");
    TCase *tc = tcase_create("deadlock");
    tcase_add_test(tc, validate_deadlock_names_blocked_heads);
    tcase_add_test(tc, validate_cross_rank_cycle);
    suite_add_tcase(su, tc);
    tc = tcase_create("counts");
    tcase_add_test(tc, validate_counts);
    tcase_add_test(tc, validate_many_problems_are_counted);
    suite_add_tcase(su, tc);
    tc = tcase_create("comms");
    tcase_add_test(tc, validate_generated_and_lowered);
    tcase_add_test(tc, validate_imported_comms_table);
    tcase_add_test(tc, validate_colocated_stages_need_no_comm);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
