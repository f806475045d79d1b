/*
 * Allocation-failure injection on the public functions: with an allocator that fails its Nth
 * call, every N from 1 until the whole pipeline succeeds must end in PS_ENOMEM (never a
 * crash, never another code) and leave no block allocated.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

static int sink(void *ud, const char *data, size_t len)
{
    (void)data;
    *(size_t *)ud += len;
    return 0;
}

/* problem -> generate -> validate -> lower -> validate -> simulate -> export. */
static int pipeline(const ps_allocator *al, const char *family, int pp, int vpp, int m)
{
    ps_problem *pb = NULL;
    ps_schedule *s = NULL;
    ps_sim *sim = NULL;
    size_t bytes = 0;
    const ps_stage_cost sc[] = {{1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2},
                                {1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {1, 1, 2}};
    int rc = ps_problem_new(&pb, al);
    if (rc)
        goto out;
    if ((rc = ps_problem_set_schedule(pb, family)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_PP, pp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_VPP, vpp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, m)) ||
        (rc = ps_problem_set_stage_costs(pb, sc, (size_t)(pp * vpp))) ||
        (rc = ps_problem_set_costs_string(pb, "c=0.5")))
        goto out;
    if ((rc = ps_schedule_new(&s, al)) || (rc = ps_schedule_generate(s, pb)) ||
        (rc = ps_schedule_validate(s)) || (rc = ps_schedule_lower(s)) ||
        (rc = ps_schedule_validate(s)))
        goto out;
    if ((rc = ps_sim_new(&sim, al)) || (rc = ps_sim_run(sim, s, pb)))
        goto out;
    for (int f = PS_FORMAT_TABLE; f <= PS_FORMAT_METRICS; f++)
        if ((rc = ps_export(s, sim, (ps_format)f, sink, &bytes)))
            goto out;
out:
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
    return rc;
}

START_TEST(alloc_failure_every_call)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } cases[] = {{"1f1b", 4, 1, 8}, {"interleaved", 4, 2, 8}, {"looped-bfs", 2, 2, 3}};
    const int k = _i;
    long n;
    for (n = 1;; n++) {
        counting_alloc ca = {0};
        ca.fail_at = n;
        ps_allocator al = counting_allocator(&ca);
        int rc = pipeline(&al, cases[k].family, cases[k].pp, cases[k].vpp, cases[k].m);
        ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "%s: failing call %ld gave %s", cases[k].family,
                      n, ps_err_name(rc));
        ck_assert_msg(ca.live == 0 && ca.bytes == 0, "%s: failing call %ld leaked %ld blocks",
                      cases[k].family, n, ca.live);
        if (rc == 0) {
            ck_assert_int_lt(ca.calls, n); /* succeeded because nothing failed any more */
            break;
        }
    }
    ck_assert_int_gt(n, 10);
}
END_TEST

START_TEST(alloc_new_functions)
{
    counting_alloc ca = {0};
    ca.fail_at = 1;
    ps_allocator al = counting_allocator(&ca);
    ps_problem *pb = (ps_problem *)&ca;
    ps_schedule *s = (ps_schedule *)&ca;
    ps_sim *sim = (ps_sim *)&ca;
    ck_assert_int_eq(ps_problem_new(&pb, &al), PS_ENOMEM);
    ck_assert_ptr_null(pb);
    ca.calls = 0;
    ck_assert_int_eq(ps_schedule_new(&s, &al), PS_ENOMEM);
    ck_assert_ptr_null(s);
    ca.calls = 0;
    ck_assert_int_eq(ps_sim_new(&sim, &al), PS_ENOMEM);
    ck_assert_ptr_null(sim);
    ck_assert_int_eq(ca.live, 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("alloc");
    TCase *tc = tcase_create("injection");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, alloc_failure_every_call, 0, 3);
    tcase_add_test(tc, alloc_new_functions);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
