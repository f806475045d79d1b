/*
 * Schedule IR, registry and the classic generators: hand-worked small tables, the Megatron
 * documentation examples, rejections with their reasons, limits refused before allocation.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include "internal.h" /* ps__families: which generators read the costs */

#include <stdio.h>

static ps_schedule *gen(const char *fam, int p, int v, int m)
{
    ps_problem *pb = make_problem(fam, p, v, m, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    ck_assert_msg(rc == 0, "%s: %s", fam, ps_schedule_last_error(s));
    ps_problem_free(pb);
    return s;
}

START_TEST(schedule_1f1b_pp2_m4)
{
    /* Worked by hand: rank 0 warms up with p-r-1 = 1 forward, rank 1 with none. */
    ps_schedule *s = gen("1f1b", 2, 1, 4);
    char buf[512];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0B0 0F2 0B1 0F3 0B2 0B3");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1B0 1F1 1B1 1F2 1B2 1F3 1B3");
    ck_assert_int_eq(ps_schedule_pp(s), 2);
    ck_assert_int_eq(ps_schedule_num_stages(s), 2);
    ck_assert_int_eq(ps_schedule_vpp(s), 1);
    ck_assert_str_eq(ps_schedule_family(s), "1f1b");

    /* Timeline with f = b = w = 1 (B costs 2), worked by hand:
     * rank 1: F0 1-2, B0 2-4, F1 4-5, B1 5-7, F2 7-8, B2 8-10, F3 10-11, B3 11-13
     * rank 0: F0 0-1, F1 1-2, B0 4-6, F2 6-7, B1 7-9, F3 9-10, B2 10-12, B3 13-15 */
    ps_problem *pb = make_problem("1f1b", 2, 1, 4, 1, 1, 1, 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    const double want0[] = {0, 1, 4, 6, 7, 9, 10, 13};
    const double want1[] = {1, 2, 4, 5, 7, 8, 10, 11};
    const double *st0 = ps_sim_starts(sim, 0), *st1 = ps_sim_starts(sim, 1);
    for (int i = 0; i < 8; i++) {
        ck_assert_double_eq(st0[i], want0[i]);
        ck_assert_double_eq(st1[i], want1[i]);
    }
    ps_metrics m;
    ck_assert_int_eq(ps_sim_metrics(sim, &m), 0);
    ck_assert_double_eq(m.makespan, 15);
    ck_assert_double_eq(m.bubble, 3);
    ck_assert_double_eq_tol(m.bubble_ratio, 1.0 - 24.0 / 30.0, 1e-12);
    ps_rank_metrics r1;
    ck_assert_int_eq(ps_sim_rank_metrics(sim, 1, &r1), 0);
    ck_assert_double_eq(r1.busy, 12);
    ck_assert_double_eq(r1.span, 12);
    ck_assert_double_eq(r1.idle, 0);
    ck_assert_int_eq(r1.peak_activations, 1);
    ck_assert_int_eq(r1.param_copies, 1);
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

START_TEST(schedule_interleaved_pp2_vpp2_m4)
{
    /* Megatron, G = p = 2. Forward table: (mb, chunk) = (0,0) (1,0) (0,1) (1,1) (2,0) (3,0)
     * (2,1) (3,1); backward k uses chunk 1 - chunk. Rank 0 warms up 2(p-r-1)+(v-1)G = 4,
     * rank 1 warms up 2. Stage = chunk * p + rank. */
    ps_schedule *s = gen("interleaved", 2, 2, 4);
    char buf[512];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3");
    ck_assert_int_eq(ps_schedule_stage_rank(s, 0), 0);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 1), 1);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 2), 0);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 3), 1);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 4), -1);
    ck_assert_int_eq(ps_schedule_group_size(s), 2);
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    /* f = b = w = 1: 16 actions of 1 + 2 = 24 per rank, plus the (p-1)(f+b+w) = 3 bubble. */
    ps_problem *pb = make_problem("interleaved", 2, 2, 4, 1, 1, 1, 0);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    ps_metrics m;
    ps_sim_metrics(sim, &m);
    ck_assert_double_eq(m.makespan, 27);
    ps_rank_metrics r0;
    ps_sim_rank_metrics(sim, 0, &r0);
    ck_assert_int_eq(r0.peak_activations, 5); /* 2(p-1) + (v-1)p + 1 */
    ps_sim_free(sim);
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

/* The forward micro-batch order of rank 0, as in Megatron's model_parallel_config.py. */
static void forward_mbs(const ps_schedule *s, char *buf, size_t n)
{
    const ps_action *a = ps_schedule_rank_actions(s, 0);
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < ps_schedule_rank_length(s, 0); i++)
        if (a[i].kind == PS_F)
            used += (size_t)snprintf(buf + used, n - used, "%s%d", used ? " " : "", a[i].mb);
}

START_TEST(schedule_interleaved_megatron_docstring)
{
    ps_problem *pb = make_problem("interleaved", 2, 2, 4, 1, 1, 1, 0);
    ps_schedule *s;
    char buf[256];
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, 2), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    forward_mbs(s, buf, sizeof buf);
    ck_assert_str_eq(buf, "0 1 0 1 2 3 2 3");
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, 3), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 5), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    forward_mbs(s, buf, sizeof buf);
    ck_assert_str_eq(buf, "0 1 2 0 1 2 3 4 3 4");
    ck_assert_int_eq(ps_schedule_validate(s), 0);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(schedule_gpipe_and_looped_bfs_orders)
{
    ps_schedule *s = gen("gpipe", 2, 1, 3);
    char buf[512];
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1F1 1F2 1B0 1B1 1B2");
    ps_schedule_free(s);
    s = gen("looped-bfs", 2, 2, 2);
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 2F0 2F1 2B1 2B0 0B1 0B0");
    rank_string(s, 1, buf, sizeof buf);
    ck_assert_str_eq(buf, "1F0 1F1 3F0 3F1 3B1 3B0 1B1 1B0");
    ps_schedule_free(s);
}
END_TEST

START_TEST(schedule_interleaved_rounds_pytorch)
{
    /* p = 4, m = 10: rounds = 2, 5 micro-batches per round; rank 0 warms up
     * (v-1)*5 + 2*3 = 11 forwards: chunk 0 of mb 0..4, chunk 1 of mb 0..4, chunk 0 of mb 5. */
    ps_schedule *s = gen("interleaved-rounds", 4, 2, 10);
    const ps_action *a = ps_schedule_rank_actions(s, 0);
    for (int i = 0; i < 11; i++) {
        ck_assert_int_eq(a[i].kind, PS_F);
        ck_assert_int_eq(a[i].stage, i < 5 ? 0 : i < 10 ? 4 : 0);
        ck_assert_int_eq(a[i].mb, i < 5 ? i : i < 10 ? i - 5 : 5);
    }
    /* Steady steps are F then B: F of chunk 0 mb 6, then B of chunk 1 mb 0 (stage 4). */
    ck_assert_int_eq(a[11].kind, PS_F);
    ck_assert_int_eq(a[11].stage, 0);
    ck_assert_int_eq(a[11].mb, 6);
    ck_assert_int_eq(a[12].kind, PS_B);
    ck_assert_int_eq(a[12].stage, 4);
    ck_assert_int_eq(a[12].mb, 0);
    ps_schedule_free(s);
}
END_TEST

static int try_gen(const char *fam, int p, int v, int m, int G, char *msg, size_t n)
{
    ps_problem *pb = make_problem(fam, p, v, m, 1, 1, 1, 0);
    if (G)
        ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, G), 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    int rc = ps_schedule_generate(s, pb);
    snprintf(msg, n, "%s", ps_schedule_last_error(s));
    ck_assert_int_eq(ps_schedule_total_actions(s), rc ? 0 : ps_schedule_total_actions(s));
    ps_schedule_free(s);
    ps_problem_free(pb);
    return rc;
}

START_TEST(schedule_rejections_explain)
{
    char msg[PS_MAX_PP];
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 3, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_str_eq(msg, "interleaved needs m >= pp when vpp > 1; got m=3, pp=4; "
                          "interleaved-rounds (PyTorch's rule) accepts m=3");
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 9, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "m mod group_size"));
    ck_assert_ptr_nonnull(strstr(msg, "m=9, group_size=4, m mod group_size=1, pp=4"));
    /* 0 < m mod G < p is rejected, m mod G >= p accepted. */
    ck_assert_int_eq(try_gen("interleaved", 2, 2, 5, 3, msg, sizeof msg), 0);
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 9, 8, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 8, 2, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "pp <= group_size <= m"));
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 8, 9, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_int_eq(try_gen("interleaved-rounds", 4, 2, 11, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "rounds = max(1, m // pp) = 2"));
    ck_assert_int_eq(try_gen("gpipe", 4, 2, 8, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_str_eq(msg, "gpipe needs vpp = 1; got vpp=2");
    ck_assert_int_eq(try_gen("gpipe", 4, 1, 8, 4, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_str_eq(msg, "group_size applies to the interleaved and adaptive families only; gpipe "
                          "has no group size to set");
    /* 1F1B works for m < p. */
    ck_assert_int_eq(try_gen("1f1b", 8, 1, 3, 0, msg, sizeof msg), 0);
}
END_TEST

START_TEST(schedule_limits_refused_before_allocation)
{
    counting_alloc ca = {0};
    ps_allocator al = counting_allocator(&ca);
    ps_problem *pb = make_problem("interleaved", PS_MAX_PP, 16, PS_MAX_MICROBATCHES, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, &al), 0);
    long before = ca.calls;
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ERANGE);
    ck_assert_int_eq(ca.calls, before);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "the limit is"));
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_VPP, 32), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ERANGE);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "stages exceeds the limit"));
    ck_assert_int_eq(ca.calls, before);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, PS_MAX_PP + 1), PS_ERANGE);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 0), PS_ERANGE);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_VPP, PS_MAX_VPP + 1), PS_ERANGE);
    ps_schedule_free(s);
    ps_problem_free(pb);
    ck_assert_int_eq(ca.live, 0);
}
END_TEST

START_TEST(schedule_stage_costs_must_match)
{
    ps_problem *pb = make_problem("interleaved", 2, 2, 4, 1, 1, 1, 0);
    const ps_stage_cost sc[3] = {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}};
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, sc, 3), 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "stage_costs has 3 entries but interleaved with pp=2, vpp=2 has 4 stages");
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* PyTorch's names (ScheduleInterleaved1F1B, get_schedule_class's "Interleaved1F1B") select
 * the rounds rule, as PyTorch's class runs it: m = 6 or 10 with p = 4, v = 2, which Megatron's
 * rule refuses, and a warm-up of 2(p-r-1) forwards with v = 1. Megatron's refusals say what
 * accepts m instead. */
START_TEST(schedule_pytorch_interleaved_alias)
{
    char msg[PS_MAX_PP];
    for (int m = 6; m <= 10; m += 4) {
        ck_assert_int_eq(try_gen("ScheduleInterleaved1F1B", 4, 2, m, 0, msg, sizeof msg), 0);
        ck_assert_int_eq(try_gen("Interleaved1F1B", 4, 2, m, 0, msg, sizeof msg), 0);
        ck_assert_int_eq(try_gen("interleaved", 4, 2, m, 0, msg, sizeof msg), PS_EUNSUPPORTED);
        char want[128];
        snprintf(want, sizeof want,
                 "; group_size (--group-size) %d accepts m=%d, and so does "
                 "interleaved-rounds (PyTorch's rule)",
                 m == 6 ? 6 : 5, m);
        ck_assert_msg(strstr(msg, want), "%s", msg);
    }
    ck_assert_int_eq(try_gen("interleaved", 4, 2, 10, 5, msg, sizeof msg), 0);
    ck_assert_int_eq(try_gen("adaptive", 4, 2, 10, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "; group_size (--group-size) 5 accepts m=10"));
    ck_assert_ptr_null(strstr(msg, "interleaved-rounds"));
    ck_assert_int_eq(try_gen("interleaved-rounds", 4, 2, 9, 0, msg, sizeof msg), PS_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "(m=8 or m=10 fit; interleaved (Megatron's rule)"));
    /* v = 1: PyTorch keeps the factor 2 of the warm-up: rank 0 of 4 runs 6 warm-up forwards,
     * then steps of one forward and one backward (Megatron's rule: 3 warm-up forwards) */
    ps_problem *pb = make_problem("ScheduleInterleaved1F1B", 4, 1, 8, 1, 1, 0, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    char buf[512];
    rank_string(s, 0, buf, sizeof buf);
    ck_assert_str_eq(buf, "0F0 0F1 0F2 0F3 0F4 0F5 0F6 0B0 0F7 0B1 0B2 0B3 0B4 0B5 0B6 0B7");
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(schedule_registry_lookup)
{
    ps_family_info fi;
    ck_assert_int_ge(ps_family_lookup("Interleaved1F1B", &fi), 0);
    ck_assert_str_eq(fi.name, "interleaved-rounds");
    ck_assert_int_ge(ps_family_lookup("INTERLEAVED1F1B", &fi), 0);
    ck_assert_str_eq(fi.name, "interleaved-rounds");
    ck_assert_int_ge(ps_family_lookup("megatron-interleaved", &fi), 0);
    ck_assert_str_eq(fi.name, "interleaved");
    ck_assert_int_ge(ps_family_lookup("gpipe", &fi), 0);
    ck_assert_str_eq(fi.name, "gpipe");
    ck_assert_int_ge(ps_family_lookup("LoopedBFS", &fi), 0);
    ck_assert_str_eq(fi.name, "looped-bfs");
    ck_assert_int_ge(ps_family_lookup("looped_bfs", &fi), 0);
    ck_assert_str_eq(fi.name, "looped-bfs");
    ck_assert_int_ge(ps_family_lookup("1F1B", &fi), 0);
    ck_assert_str_eq(fi.name, "1f1b");
    ck_assert_str_eq(fi.placement, "loop");
    ck_assert_int_eq(ps_family_lookup("zigzag", &fi), PS_ENOTFOUND);
    ck_assert_int_eq(ps_family_lookup(NULL, &fi), PS_EINVAL);
    ck_assert_int_eq(ps_family_get(ps_family_count(), &fi), PS_EINVAL);
    for (size_t i = 0; i < ps_family_count(); i++) {
        ck_assert_int_eq(ps_family_get(i, &fi), 0);
        ck_assert(strlen(fi.description) > 10 && strlen(fi.constraints) > 3);
        ck_assert_int_eq(ps_family_lookup(fi.name, NULL), (int)i);
    }
    ps_problem *pb;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_problem_set_schedule(pb, "nope"), PS_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "nope"));
    ck_assert_str_eq(ps_problem_schedule(pb), "1f1b");
    ps_problem_free(pb);
}
END_TEST

START_TEST(schedule_null_arguments)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_generate(NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_validate(s), PS_EINVAL); /* empty */
    ck_assert_int_eq(ps_schedule_lower(s), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_validate(NULL), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_lower(NULL), PS_EINVAL);
    ck_assert_ptr_null(ps_schedule_rank_actions(s, 0));
    ck_assert_int_eq(ps_schedule_rank_length(NULL, 0), 0);
    ck_assert_int_eq(ps_schedule_path(s, 0, NULL, NULL, NULL, NULL), PS_EINVAL);
    ps_schedule_free(s);
    ps_schedule_free(NULL);
    ck_assert_str_eq(ps_strerror(PS_EDEADLOCK), "schedule deadlocks");
    ck_assert_str_eq(ps_err_name(PS_ENOMEM), "ENOMEM");
    ck_assert_str_eq(ps_strerror(12345), "unknown error");
}
END_TEST

START_TEST(schedule_path_neighbors)
{
    /* 1F1B, p = 4: one path 0 1 2 3. DualPipe, p = 2, m = 4: micro-batches 0, 1 run stages
     * 0 1, micro-batches 2, 3 run stages 2 3 (copy 1). */
    ps_problem *pb = make_problem("1f1b", 4, 1, 8, 1, 1, 1, 0);
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 0, 0, 1), -1); /* empty schedule */
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 1, 5, 1), 2);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 1, 5, -1), 0);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 3, 5, 1), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 0, 5, -1), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 4, 0, 1), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 0, 8, 1), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 0, 0, 0), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(NULL, 0, 0, 1), -1);
    ck_assert_int_eq(ps_problem_set_schedule(pb, "dualpipe"), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 4), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 0, 1, 1), 1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 1, 1, 1), -1);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 2, 2, 1), 3);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 3, 3, -1), 2);
    ck_assert_int_eq(ps_schedule_path_neighbor(s, 1, 2, 1), -1); /* stage 1 is off its path */
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(schedule_costs_string)
{
    ps_problem *pb;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=2,b=3.5,w=0.5,c=0.25,fb=4"), 0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 2);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_B), 3.5);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_W), 0.5);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_C), 0.25);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 4);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=1,x=2"), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "unknown key \"x\" at column 5"));
    /* A key given twice is a mistake, not "the last one wins"; nothing changes. */
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=5,b=1,f=6"), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "duplicate key \"f\" at column 9"));
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 2);
    ck_assert_int_eq(ps_problem_set_memory_string(pb, "f=2,b=-1,b=-1"), PS_ECONFIG);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "memory: duplicate key \"b\""));
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=abc"), PS_ECONFIG);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=-1"), PS_ECONFIG);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f"), PS_ECONFIG);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=1e999"), PS_ECONFIG);
    /* A failed spec changes nothing. */
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=7,b=nan"), PS_ECONFIG);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 2);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_F, -1), PS_ERANGE);
    ck_assert_int_eq(ps_problem_set_cost(pb, PS_COST_FB, -1), 0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), -1);
    ps_problem_free(pb);
}
END_TEST

/* Each per-stage table is checked against the stages the family makes (two model copies:
 * 2 pp), memory first; one entry is "entry". */
START_TEST(schedule_stage_tables_must_match)
{
    const ps_stage_mem one[1] = {{1, -0.5, -0.5}};
    const ps_stage_cost two[2] = {{1, 1, 1}, {1, 1, 1}};
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);

    ps_problem *pb = make_problem("1f1b", 2, 1, 4, 1, 1, 1, 0);
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, one, 1), 0);
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, two, 2), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "stage_memory has 1 entry but 1f1b with pp=2, vpp=1 has 2 stages");
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, NULL, 0), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0); /* two costs for two stages */
    ps_problem_free(pb);

    pb = make_problem("dualpipe", 2, 1, 4, 1, 1, 1, 0);
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, two, 2), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), PS_ECONFIG);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "stage_costs has 2 entries but dualpipe with pp=2, vpp=1 has 4 stages");
    ps_problem_free(pb);
    ps_schedule_free(s);
}
END_TEST

/* 1 when a and b hold the same compute lists on the same placement. */
static int same_lists(const ps_schedule *a, const ps_schedule *b)
{
    if (ps_schedule_pp(a) != ps_schedule_pp(b) ||
        ps_schedule_num_stages(a) != ps_schedule_num_stages(b))
        return 0;
    for (int i = 0; i < ps_schedule_num_stages(a); i++)
        if (ps_schedule_stage_rank(a, i) != ps_schedule_stage_rank(b, i))
            return 0;
    for (int r = 0; r < ps_schedule_pp(a); r++) {
        size_t n = ps_schedule_rank_length(a, r);
        if (n != ps_schedule_rank_length(b, r) ||
            memcmp(ps_schedule_rank_actions(a, r), ps_schedule_rank_actions(b, r),
                   n * sizeof(ps_action)))
            return 0;
    }
    return 1;
}

/* The registry's costs flag: a family without it makes the same schedule whatever the costs,
 * the memory model and c (the estimate keeps such a schedule while its shape stays the same);
 * zb-auto, which has it, plans with them. */
START_TEST(schedule_costs_flag)
{
    const ps__family *f = &ps__families[_i];
    const int sizes[][3] = {{1, 1, 3}, {2, 1, 4}, {4, 2, 8}, {4, 1, 8}, {5, 3, 10}, {8, 2, 32}};
    const double costs[][4] = {{1, 1, 1, 0}, {2, 3, 0.5, 1.5}, {1, 0.25, 4, 0.125}};
    int differs = 0;
    for (int k = 0; k < 6; k++) {
        ps_schedule *s[3];
        int ok = 1;
        for (int q = 0; q < 3; q++) {
            ps_problem *pb = make_problem(f->name, sizes[k][0], sizes[k][1], sizes[k][2],
                                          costs[q][0], costs[q][1], costs[q][2], costs[q][3]);
            if (q == 2)
                ck_assert_int_eq(ps_problem_set_memory(pb, 1, -0.75, -0.25), 0);
            ck_assert_int_eq(ps_schedule_new(&s[q], NULL), 0);
            ok &= ps_schedule_generate(s[q], pb) == 0;
            ps_problem_free(pb);
        }
        for (int q = 1; ok && q < 3; q++) {
            int same = same_lists(s[0], s[q]);
            ck_assert_msg(same || f->costs, "%s p%d v%d m%d: costs %d change the schedule", f->name,
                          sizes[k][0], sizes[k][1], sizes[k][2], q);
            differs |= !same;
        }
        for (int q = 0; q < 3; q++)
            ps_schedule_free(s[q]);
    }
    ck_assert_msg(differs == f->costs, "%s: costs flag %d, the costs %s the schedule", f->name,
                  f->costs, differs ? "change" : "do not change");
}
END_TEST

/* What ps_family_params_get says a family takes is what generation accepts: hand-checked values
 * for a few families, then, for every family, an optional parameter outside its list is refused
 * naming that parameter, and a vpp other than a required one is refused. */
START_TEST(schedule_family_params)
{
    ps_family_params fp;
    ps_family_info fi;
    ck_assert_int_eq(ps_family_params_get(ps_family_count(), &fp), PS_EINVAL);
    ck_assert_int_eq(ps_family_params_get(0, NULL), PS_EINVAL);
    struct {
        const char *name, *options;
        int vpp, default_vpp, copies, cost_aware;
    } known[] = {{"1f1b", "", 1, 1, 1, 0},
                 {"interleaved", "group_size", 0, 1, 1, 0},
                 {"zb-v", "", 2, 2, 1, 0},
                 {"zb-auto", "", 0, 1, 1, 1},
                 {"dualpipe", "", 1, 1, 2, 0},
                 {"adaptive", "group_size,extra_warmup,split_backward", 0, 1, 1, 0}};
    for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        int i = ps_family_lookup(known[k].name, NULL);
        ck_assert_int_ge(i, 0);
        ck_assert_int_eq(ps_family_params_get((size_t)i, &fp), 0);
        ck_assert_str_eq(fp.options, known[k].options);
        ck_assert_int_eq(fp.vpp, known[k].vpp);
        ck_assert_int_eq(fp.default_vpp, known[k].default_vpp);
        ck_assert_int_eq(fp.model_copies, known[k].copies);
        ck_assert_int_eq(fp.cost_aware, known[k].cost_aware);
    }
    static const struct {
        const char *key;
        ps_param param;
        long long value;
    } opts[] = {{"group_size", PS_PARAM_GROUP_SIZE, 4},
                {"extra_warmup", PS_PARAM_EXTRA_WARMUP, 1},
                {"split_backward", PS_PARAM_SPLIT_BACKWARD, 1}};
    for (size_t i = 0; i < ps_family_count(); i++) {
        ck_assert_int_eq(ps_family_get(i, &fi), 0);
        ck_assert_int_eq(ps_family_params_get(i, &fp), 0);
        for (size_t k = 0; k < 3; k++) {
            ps_problem *pb = make_problem(fi.name, 4, fp.default_vpp, 8, 1, 1, 1, 0);
            ck_assert_int_eq(ps_problem_set_int(pb, opts[k].param, opts[k].value), 0);
            ps_schedule *s;
            ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
            int rc = ps_schedule_generate(s, pb);
            if (strstr(fp.options, opts[k].key))
                ck_assert_msg(rc == 0, "%s with %s: %s", fi.name, opts[k].key,
                              ps_schedule_last_error(s));
            else
                ck_assert_msg(
                    rc == PS_EUNSUPPORTED && strstr(ps_schedule_last_error(s), opts[k].key),
                    "%s with %s: %d %s", fi.name, opts[k].key, rc, ps_schedule_last_error(s));
            ps_schedule_free(s);
            ps_problem_free(pb);
        }
        if (fp.vpp) {
            ps_problem *pb = make_problem(fi.name, 4, fp.vpp + 1, 8, 1, 1, 1, 0);
            ps_schedule *s;
            ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
            ck_assert_int_eq(ps_schedule_generate(s, pb), PS_EUNSUPPORTED);
            ps_schedule_free(s);
            ps_problem_free(pb);
        }
    }
}
END_TEST

int main(void)
{
    Suite *su = suite_create("schedule");
    TCase *tc = tcase_create("generators");
    tcase_add_test(tc, schedule_1f1b_pp2_m4);
    tcase_add_test(tc, schedule_interleaved_pp2_vpp2_m4);
    tcase_add_test(tc, schedule_interleaved_megatron_docstring);
    tcase_add_test(tc, schedule_gpipe_and_looped_bfs_orders);
    tcase_add_test(tc, schedule_interleaved_rounds_pytorch);
    suite_add_tcase(su, tc);
    tc = tcase_create("registry");
    tcase_add_test(tc, schedule_rejections_explain);
    tcase_add_test(tc, schedule_limits_refused_before_allocation);
    tcase_add_test(tc, schedule_registry_lookup);
    tcase_add_test(tc, schedule_family_params);
    tcase_add_test(tc, schedule_pytorch_interleaved_alias);
    tcase_add_test(tc, schedule_stage_costs_must_match);
    tcase_add_test(tc, schedule_null_arguments);
    tcase_add_test(tc, schedule_costs_string);
    tcase_add_test(tc, schedule_path_neighbors);
    tcase_add_loop_test(tc, schedule_costs_flag, 0, (int)ps__nfamilies);
    suite_add_tcase(su, tc);
    tc = tcase_create("stage_tables");
    tcase_add_test(tc, schedule_stage_tables_must_match);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
