/*
 * Expert placement (include/pipesched/balance.h, part E): the trace formats and their errors,
 * the EMA against hand-computed sequences, the placement against a brute-force optimum and
 * against the identity and plain LPT placements, the layer time, the migration and its
 * decision on hand-worked cases, the synthetic traces and the PRNG.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"
#include "common.h"

#include <pipesched/balance.h>
#include <pipesched/model.h>

#include <math.h>

/* ---- helpers -------------------------------------------------------------------------------- */

static ps_expert_trace *load(const char *text, int want_rc)
{
    ps_expert_trace *t = NULL;
    ck_assert_int_eq(ps_expert_trace_new(&t, NULL), 0);
    int rc = ps_expert_trace_load(t, text, strlen(text));
    ck_assert_msg(rc == want_rc, "load returned %d (%s), expected %d", rc,
                  ps_expert_trace_last_error(t), want_rc);
    return t;
}

/* Loads text, expects PS_EPARSE (or rc) and a message containing want. */
static void load_fails(const char *text, int rc, const char *want)
{
    ps_expert_trace *t = load(text, rc);
    const char *msg = ps_expert_trace_last_error(t);
    ck_assert_msg(strstr(msg, want), "message \"%s\" lacks \"%s\"", msg, want);
    ck_assert_int_eq(ps_expert_trace_shape(t, NULL, NULL, NULL), PS_ESTATE);
    ps_expert_trace_free(t);
}

/* A test's own generator (not the library's), so that the instances do not depend on it. */
static uint32_t lcg(uint32_t *x)
{
    *x = *x * 1664525u + 1013904223u;
    return *x >> 8;
}

static double max_load(const double *w, int32_t E, const int32_t *dev, int32_t D)
{
    double load[256] = {0}, top = 0;
    ck_assert_int_le(D, 256);
    for (int32_t e = 0; e < E; e++) {
        ck_assert_int_ge(dev[e], 0);
        ck_assert_int_lt(dev[e], D);
        load[dev[e]] += w[e];
    }
    for (int32_t d = 0; d < D; d++)
        top = load[d] > top ? load[d] : top;
    return top;
}

static void assert_capacity(const int32_t *dev, int32_t E, int32_t D, int32_t cap)
{
    int32_t count[256] = {0};
    for (int32_t e = 0; e < E; e++)
        count[dev[e]]++;
    for (int32_t d = 0; d < D; d++)
        ck_assert_msg(count[d] <= cap, "device %d holds %d > %d experts", d, count[d], cap);
}

/* The optimum by enumerating every assignment of E experts to D devices (D^E of them). */
static double brute_force(const double *w, int32_t E, int32_t D, int32_t cap)
{
    long total = 1;
    for (int32_t e = 0; e < E; e++)
        total *= D;
    double best = INFINITY;
    for (long code = 0; code < total; code++) {
        double load[8] = {0};
        int32_t count[8] = {0};
        long c = code;
        int ok = 1;
        for (int32_t e = 0; e < E && ok; e++, c /= D) {
            int32_t d = (int32_t)(c % D);
            load[d] += w[e];
            ok = ++count[d] <= cap;
        }
        double top = 0;
        for (int32_t d = 0; d < D; d++)
            top = load[d] > top ? load[d] : top;
        if (ok && top < best)
            best = top;
    }
    return best;
}

/* Plain LPT with a cap, written here from its definition. */
static double plain_lpt(const double *w, int32_t E, int32_t D, int32_t cap)
{
    int32_t order[256], count[256] = {0};
    double load[256] = {0};
    for (int32_t e = 0; e < E; e++)
        order[e] = e;
    for (int32_t i = 1; i < E; i++) /* insertion sort, heaviest first */
        for (int32_t k = i; k > 0 && w[order[k]] > w[order[k - 1]]; k--) {
            int32_t x = order[k];
            order[k] = order[k - 1];
            order[k - 1] = x;
        }
    for (int32_t i = 0; i < E; i++) {
        int32_t best = -1;
        for (int32_t d = 0; d < D; d++)
            if (count[d] < cap && (best < 0 || load[d] < load[best]))
                best = d;
        load[best] += w[order[i]];
        count[best]++;
    }
    double top = 0;
    for (int32_t d = 0; d < D; d++)
        top = load[d] > top ? load[d] : top;
    return top;
}

/* ---- the trace ------------------------------------------------------------------------------ */

START_TEST(experts_trace_lines)
{
    ps_expert_trace *t = load("# two layers\n10, 20 30\n\n  1,2,3.5  \n", 0);
    int32_t s, l, e;
    ck_assert_int_eq(ps_expert_trace_shape(t, &s, &l, &e), 0);
    ck_assert_int_eq(s, 1);
    ck_assert_int_eq(l, 2);
    ck_assert_int_eq(e, 3);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 0, 0, 1), 20);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 0, 1, 2), 3.5);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 0, 2, 0), -1);
    ps_expert_trace_free(t);
}
END_TEST

START_TEST(experts_trace_csv)
{
    /* CRLF, a missing row (step 1, layer 0, expert 1: 0 tokens), rows in any order. */
    ps_expert_trace *t = load("Step, Layer, Expert, Tokens\r\n"
                              "1,0,0,7\r\n0,0,0,4\r\n0,0,1,5\r\n0,1,1,6\r\n",
                              0);
    int32_t s, l, e;
    ck_assert_int_eq(ps_expert_trace_shape(t, &s, &l, &e), 0);
    ck_assert_int_eq(s, 2);
    ck_assert_int_eq(l, 2);
    ck_assert_int_eq(e, 2);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 1, 0, 0), 7);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 1, 0, 1), 0);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 0, 1, 1), 6);
    ck_assert_double_eq(ps_expert_trace_tokens(t, 0, 1, 0), 0);
    ps_expert_trace_free(t);
}
END_TEST

/* Exactly the bound is accepted. */
static void load_ok_1e15(void)
{
    ps_expert_trace *t = NULL;
    ck_assert_int_eq(ps_expert_trace_new(&t, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_load(t, "1e15 0\n", 7), 0);
    ck_assert(ps_expert_trace_tokens(t, 0, 0, 0) == 1e15);
    /* A file of other numbers sets its own bound. */
    ck_assert_int_eq(ps_expert_trace_set_max(t, 10), 0);
    ck_assert_int_eq(ps_expert_trace_load(t, "10 11\n", 6), PS_ERANGE);
    ck_assert_str_eq(ps_expert_trace_last_error(t),
                     "line 1, column 4: tokens 11 is beyond the limit 10");
    ck_assert_int_eq(ps_expert_trace_set_max(t, 1.7e308), 0);
    ck_assert_int_eq(ps_expert_trace_load(t, "1e300\n", 6), 0);
    ck_assert_int_eq(ps_expert_trace_set_max(t, 0), PS_EINVAL);
    ck_assert_int_eq(ps_expert_trace_set_max(t, NAN), PS_EINVAL);
    ck_assert_int_eq(ps_expert_trace_set_max(NULL, 1), PS_EINVAL);
    ps_expert_trace_free(t);
}

START_TEST(experts_trace_bad_input)
{
    load_fails("1,2,-3\n", PS_EPARSE, "line 1, column 5: negative tokens \"-3\"");
    load_fails("step,layer,expert,tokens\n0,0,0,1\n0,0,1,-2\n", PS_EPARSE,
               "line 3, column 7: negative tokens");
    load_fails("1 2 3\n4 5\n", PS_EPARSE, "line 2: a ragged trace: 2 experts, but line 1 has 3");
    load_fails("step,layer,expert,tokens\n0,0,0\n", PS_EPARSE,
               "line 2, column 6: a ragged row: 3 fields");
    load_fails("step,layer,expert,tokens\n0,0,0,1,9\n", PS_EPARSE,
               "line 2, column 9: a ragged row");
    load_fails("step,layer,expert,tokens\n0,0,1,1\n0,0,1,2\n", PS_EPARSE,
               "line 3: step 0, layer 0, expert 1 is given a second time");
    load_fails("", PS_EPARSE, "line 1: no data");
    load_fails("# nothing\n\n", PS_EPARSE, "line 3: no data");
    load_fails("step,layer,expert,tokens\n", PS_EPARSE, "line 2: no rows after the header");
    load_fails("1,,2\n", PS_EPARSE, "line 1, column 3: an empty field");
    load_fails("1,x\n", PS_EPARSE, "line 1, column 3: \"x\" is not a number of tokens");
    load_fails("1,nan\n", PS_EPARSE, "\"nan\" is not a number");
    load_fails("step,layer,expert,tokens\n0,0,1.5,1\n", PS_EPARSE,
               "line 2, column 5: expert \"1.5\" is not an index");
    load_fails("step,layer,expert,tokens\n0,0,70000,1\n", PS_ERANGE,
               "expert 70000 is beyond the limit 65535");
    load_fails("step,layer,expert,tokens\n999999,4095,1000,1\n", PS_ERANGE, "beyond the limit of");
    /* The fuzzer's find: 3e303 tokens loaded, then refused by the placement. */
    load_fails("1 3e303\n", PS_ERANGE, "line 1, column 3: tokens 3e303 is beyond the limit 1e+15");
    load_fails("step,layer,expert,tokens\n0,0,0,1000000000000001\n", PS_ERANGE,
               "line 2, column 7: tokens 1000000000000001 is beyond the limit 1e+15");
    load_ok_1e15();
}
END_TEST

START_TEST(experts_trace_alloc_failure)
{
    const char *text = "step,layer,expert,tokens\n0,0,0,1\n1,1,1,2\n";
    int ok = 0;
    for (long n = 1; n < 20 && !ok; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator a = counting_allocator(&c);
        ps_expert_trace *t = NULL;
        int rc = ps_expert_trace_new(&t, &a);
        if (!rc)
            rc = ps_expert_trace_load(t, text, strlen(text));
        ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "fail at %ld: rc %d", n, rc);
        ok = rc == 0;
        ps_expert_trace_free(t);
        ck_assert_int_eq(c.live, 0);
    }
    ck_assert(ok);
    ck_assert_int_eq(ps_expert_trace_new(NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_expert_trace_load(NULL, "", 0), PS_EINVAL);
}
END_TEST

/* ---- the EMA -------------------------------------------------------------------------------- */

START_TEST(experts_ema_hand)
{
    /* One layer, two experts; EL_0 = (4, 0), EL_1 = (0, 8), EL_2 = (2, 2).
     * theta 0.5: P1 = (4, 0), P2 = (2, 4), P3 = (2, 3).
     * theta 0.9: P2 = (3.6, 0.8), P3 = (0.9 * 3.6 + 0.2, 0.9 * 0.8 + 0.2) = (3.44, 0.92).
     * theta 0: the last step, (2, 2). */
    ps_expert_trace *t = load("step,layer,expert,tokens\n0,0,0,4\n1,0,1,8\n2,0,0,2\n2,0,1,2\n", 0);
    double p[2];
    ck_assert_int_eq(ps_expert_trace_predict(t, 0.5, p), 0);
    ck_assert_double_eq_tol(p[0], 2, 1e-12);
    ck_assert_double_eq_tol(p[1], 3, 1e-12);
    ck_assert_int_eq(ps_expert_trace_predict(t, 0.9, p), 0);
    ck_assert_double_eq_tol(p[0], 3.44, 1e-12);
    ck_assert_double_eq_tol(p[1], 0.92, 1e-12);
    ck_assert_int_eq(ps_expert_trace_predict(t, 0, p), 0);
    ck_assert_double_eq(p[0], 2);
    ck_assert_double_eq(p[1], 2);
    ck_assert_int_eq(ps_expert_trace_predict(t, 1, p), PS_ERANGE);
    ck_assert_int_eq(ps_expert_trace_predict(t, -0.1, p), PS_ERANGE);
    ps_expert_trace_free(t);
    /* One step: the step itself, whatever theta. */
    t = load("5 6\n", 0);
    ck_assert_int_eq(ps_expert_trace_predict(t, 0.9, p), 0);
    ck_assert_double_eq(p[0], 5);
    ck_assert_double_eq(p[1], 6);
    ps_expert_trace_free(t);
}
END_TEST

/* ---- the placement -------------------------------------------------------------------------- */

START_TEST(experts_place_hand)
{
    /* 8..1 on 4 devices of 2: the pairs (8,1) (7,2) (6,3) (5,4) all sum to 9. */
    double w[8] = {8, 7, 6, 5, 4, 3, 2, 1};
    int32_t dev[8];
    ps_expert_group g = {4, 2, 0};
    ck_assert_int_eq(ps_expert_place(w, 8, &g, NULL, dev, NULL, NULL, 0), 0);
    ck_assert_double_eq(max_load(w, 8, dev, 4), 9);
    assert_capacity(dev, 8, 4, 2);
}
END_TEST

START_TEST(experts_place_keeps_current)
{
    /* The current placement is already optimal (every pair sums to 9): nothing moves. */
    double w[8] = {8, 1, 7, 2, 6, 3, 5, 4};
    int32_t cur[8] = {0, 0, 1, 1, 2, 2, 3, 3}, dev[8];
    ps_expert_group g = {4, 2, 0};
    ck_assert_int_eq(ps_expert_place(w, 8, &g, cur, dev, NULL, NULL, 0), 0);
    for (int e = 0; e < 8; e++)
        ck_assert_int_eq(dev[e], cur[e]);
    /* One swap repairs (8, 7) (1, 2): two experts move, the others stay. */
    int32_t cur2[8] = {0, 1, 0, 1, 2, 2, 3, 3};
    ck_assert_int_eq(ps_expert_place(w, 8, &g, cur2, dev, NULL, NULL, 0), 0);
    ck_assert_double_eq(max_load(w, 8, dev, 4), 9);
    int moved = 0;
    for (int e = 0; e < 8; e++)
        moved += dev[e] != cur2[e];
    ck_assert_int_eq(moved, 2);
    char err[128];
    int32_t over[8] = {0, 0, 0, 1, 2, 2, 3, 3};
    ck_assert_int_eq(ps_expert_place(w, 8, &g, over, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "the current placement puts more than 2 experts on device 0");
}
END_TEST

START_TEST(experts_place_brute_force)
{
    uint32_t x = 12345;
    for (int round = 0; round < 300; round++) {
        double w[8];
        for (int e = 0; e < 8; e++)
            w[e] = (double)(lcg(&x) % 1000) * (round % 3 ? 1 : (e + 1)); /* some skewed */
        int32_t cap = round % 4 == 3 ? 3 : 2, dev[8];
        ps_expert_group g = {4, 2, round % 4 == 3 ? 3 : 0};
        ck_assert_int_eq(ps_expert_place(w, 8, &g, NULL, dev, NULL, NULL, 0), 0);
        assert_capacity(dev, 8, 4, cap);
        double got = max_load(w, 8, dev, 4), best = brute_force(w, 8, 4, cap);
        ck_assert_msg(fabs(got - best) < 1e-9, "round %d: %g, optimum %g", round, got, best);
    }
}
END_TEST

START_TEST(experts_place_never_worse)
{
    static const int32_t shapes[][3] = {{64, 16, 4}, {256, 64, 8}, {32, 8, 2}, {60, 8, 2}};
    uint32_t x = 777;
    for (int round = 0; round < 40; round++) {
        const int32_t *sh = shapes[round % 4];
        int32_t E = sh[0], D = sh[1], N = sh[2], cap = (E + D - 1) / D;
        double w[256];
        for (int32_t e = 0; e < E; e++) /* a heavy tail: a few hot experts */
            w[e] = (double)(lcg(&x) % 100) + (lcg(&x) % 10 == 0 ? (double)(lcg(&x) % 5000) : 0);
        int32_t dev[256], ident[256];
        ps_expert_group g = {D, N, E % D ? cap : 0};
        ck_assert_int_eq(ps_expert_place(w, E, &g, NULL, dev, NULL, NULL, 0), 0);
        assert_capacity(dev, E, D, cap);
        for (int32_t e = 0; e < E; e++)
            ident[e] = e / cap;
        double got = max_load(w, E, dev, D);
        ck_assert_msg(got <= max_load(w, E, ident, D), "round %d: worse than the identity", round);
        ck_assert_msg(got <= plain_lpt(w, E, D, cap), "round %d: %g worse than plain LPT %g", round,
                      got, plain_lpt(w, E, D, cap));
        double total = 0, top = 0;
        for (int32_t e = 0; e < E; e++)
            total += w[e], top = w[e] > top ? w[e] : top;
        ck_assert(got >= total / D - 1e-9 && got >= top); /* the lower bounds */
    }
}
END_TEST

START_TEST(experts_place_errors)
{
    double w[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    int32_t dev[9];
    char err[256];
    ps_expert_group g = {4, 2, 0};
    ck_assert_int_eq(ps_expert_place(w, 9, &g, NULL, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "9 experts do not divide over 4 devices: give a capacity (experts per "
                          "device) of at least 3");
    g.capacity = 2;
    ck_assert_int_eq(ps_expert_place(w, 9, &g, NULL, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "more experts (9) than slots: 4 devices x capacity 2 = 8");
    g = (ps_expert_group){4, 3, 0};
    ck_assert_int_eq(ps_expert_place(w, 8, &g, NULL, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert(strstr(err, "the nodes must divide the devices"));
    g = (ps_expert_group){4, 2, 0};
    w[3] = -1;
    ck_assert_int_eq(ps_expert_place(w, 8, &g, NULL, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "expert 3 has the load -1: expected a number >= 0 and below 1e300");
    w[3] = 3e300;
    ck_assert_int_eq(ps_expert_place(w, 8, &g, NULL, dev, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "expert 3 has the load 3e+300: expected a number >= 0 and below 1e300");
    ck_assert_int_eq(ps_expert_place(NULL, 8, &g, NULL, dev, NULL, err, sizeof err), PS_EINVAL);
}
END_TEST

START_TEST(experts_place_alloc_failure)
{
    double w[16];
    for (int e = 0; e < 16; e++)
        w[e] = e * e;
    ps_expert_group g = {4, 2, 0};
    int32_t dev[16];
    int ok = 0;
    for (long n = 1; n < 20 && !ok; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator a = counting_allocator(&c);
        int rc = ps_expert_place(w, 16, &g, NULL, dev, &a, NULL, 0);
        ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "fail at %ld: rc %d", n, rc);
        ok = rc == 0;
        ck_assert_int_eq(c.live, 0);
    }
    ck_assert(ok);
}
END_TEST

START_TEST(experts_align_keeps_experts)
{
    /* The same grouping with nodes and devices relabelled: aligning gives the current back. */
    int32_t cur[8] = {0, 0, 1, 1, 2, 2, 3, 3}, plan[8] = {3, 3, 2, 2, 1, 1, 0, 0};
    ps_expert_group g = {4, 2, 0};
    ck_assert_int_eq(ps_expert_align(cur, plan, 8, &g, NULL), 0);
    for (int e = 0; e < 8; e++)
        ck_assert_int_eq(plan[e], cur[e]);
    /* Node 1 of the plan holds the current node 0's experts 0, 1 and 2: it becomes node 0. */
    int32_t plan2[8] = {2, 2, 3, 0, 0, 1, 1, 3};
    ck_assert_int_eq(ps_expert_align(cur, plan2, 8, &g, NULL), 0);
    for (int e = 0; e < 3; e++)
        ck_assert_int_lt(plan2[e], 2);
    ck_assert_int_eq(plan2[0], 0); /* the plan's pair {0, 1} lands on the current device 0 */
    ck_assert_int_eq(plan2[1], 0);
}
END_TEST

/* ---- the cost and the migration ------------------------------------------------------------- */

static ps_hardware toy_hardware(void)
{
    ps_hardware hw;
    memset(&hw, 0, sizeof hw);
    strcpy(hw.name, "toy");
    hw.peak_tflops_bf16 = 1;
    hw.devices_per_node = 2;
    hw.intra_gbps = 100;
    hw.inter_gbps = 10;
    hw.gemm_eff = hw.bus_eff_intra = hw.bus_eff_inter = hw.grouped_gemm_eff = 1;
    return hw;
}

START_TEST(experts_layer_time_hand)
{
    ps_transformer m;
    memset(&m, 0, sizeof m);
    strcpy(m.name, "toy");
    m.hidden = 1000;
    m.moe_ffn = 500;
    m.gated_mlp = 1;
    m.experts = 4;
    m.top_k = 1;
    ps_hardware hw = toy_hardware();
    ps_expert_group g = {4, 2, 0};
    double w[4] = {1000, 0, 0, 500};
    int32_t dev[4] = {0, 1, 2, 3};
    ps_expert_layer_time t;
    ck_assert_int_eq(ps_expert_layer_time_get(&m, &hw, PS_PREC_BF16, w, 4, dev, &g, &t, NULL, 0),
                     0);
    /* Device 0: up 2.1000.1000.1000 + down 2.1000.500.1000 = 3e9 FLOPs forward, x3 = 9e9 at
     * 1e12 FLOP/s: 9 ms. All-to-all: 4 x 1000 tokens x 1000 x 2 bytes = 8e6 bytes, half of it
     * from the other node at 10 GB/s (0.4 ms), a quarter from the node's other device at
     * 100 GB/s (0.02 ms). */
    ck_assert_int_eq(t.device, 0);
    ck_assert_double_eq_tol(t.gemm_s, 9e-3, 1e-15);
    ck_assert_double_eq_tol(t.a2a_s, 4.2e-4, 1e-15);
    ck_assert_double_eq_tol(t.layer_s, 9.42e-3, 1e-15);
    ck_assert_double_eq_tol(t.a2a_bytes, 6e6, 1e-6);
    ck_assert_double_eq_tol(t.a2a_inter_bytes, 4e6, 1e-6);
    m.experts = 8;
    char err[128];
    ck_assert_int_eq(ps_expert_layer_time_get(&m, &hw, 0, w, 4, dev, &g, &t, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_str_eq(err, "the loads name 4 experts, model toy has 8");
}
END_TEST

START_TEST(experts_migration_hand)
{
    ps_hardware hw = toy_hardware();
    hw.lat_intra_us = 5;
    hw.lat_inter_us = 20;
    ps_expert_group g = {4, 2, 1};
    int32_t from[4] = {0, 1, 2, 3}, within[4] = {1, 0, 2, 3}, across[4] = {2, 1, 0, 3};
    int32_t moved;
    double s;
    /* Experts 0 and 1 trade places inside node 0: each device sends and receives 1 GB at
     * 100 GB/s at once: 10 ms, plus one intra-node latency. */
    ck_assert_int_eq(ps_expert_migration_s(from, within, 4, &g, 1e9, &hw, &moved, &s), 0);
    ck_assert_int_eq(moved, 2);
    ck_assert_double_eq_tol(s, 0.01 + 5e-6, 1e-12);
    /* Experts 0 and 2 trade across the nodes: 1 GB at 10 GB/s, plus one inter-node latency. */
    ck_assert_int_eq(ps_expert_migration_s(from, across, 4, &g, 1e9, &hw, &moved, &s), 0);
    ck_assert_int_eq(moved, 2);
    ck_assert_double_eq_tol(s, 0.1 + 20e-6, 1e-12);
    ck_assert_int_eq(ps_expert_migration_s(from, from, 4, &g, 1e9, &hw, &moved, &s), 0);
    ck_assert_int_eq(moved, 0);
    ck_assert_double_eq(s, 0);
    /* The decision: 50 steps of a 10 ms gain (0.5 s) pay for 0.4 s; 30 steps (0.3 s) do not;
     * a gain that only equals the cost (2 x 0.25 s, exact in binary) does not move. */
    ck_assert_int_eq(ps_expert_should_migrate(1.0, 0.99, 0.4, 50), 1);
    ck_assert_int_eq(ps_expert_should_migrate(1.0, 0.99, 0.4, 30), 0);
    ck_assert_int_eq(ps_expert_should_migrate(1.0, 0.75, 0.5, 2), 0);
    ck_assert_int_eq(ps_expert_should_migrate(1.0, 0.75, 0.5, 3), 1);
    ck_assert_int_eq(ps_expert_should_migrate(1.0, 1.01, 0.0, 50), 0);
    /* Mixtral 8x7B's expert: 3 x 4096 x 14336 parameters x 14 bytes. */
    ps_transformer m;
    ck_assert_int_eq(ps_transformer_builtin("mixtral-8x7b", &m), 0);
    ck_assert_double_eq(ps_expert_migration_bytes(&m), 3.0 * 4096 * 14336 * 14);
}
END_TEST

/* ---- synthetic traces and the PRNG ---------------------------------------------------------- */

START_TEST(experts_rng_reference)
{
    /* splitmix64's first output from the state 0 (its reference sequence). */
    ps__rng r;
    ps__rng_seed(&r, 0);
    ck_assert_uint_eq(r.s[0], 0xe220a8397b1dcdafu);
    for (int i = 0; i < 1000; i++) {
        double u = ps__rng_uniform(&r);
        ck_assert(u >= 0 && u < 1);
        ck_assert_uint_lt(ps__rng_below(&r, 7), 7);
    }
}
END_TEST

START_TEST(experts_synthetic)
{
    ps_expert_trace *a = NULL, *b = NULL;
    ck_assert_int_eq(ps_expert_trace_new(&a, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_new(&b, NULL), 0);
    /* Uniform: zipf:0 splits 1024 tokens evenly over 8 experts at every step. */
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:0,steps:3,tokens:1024", 2, 8), 0);
    int32_t s, l, e;
    ck_assert_int_eq(ps_expert_trace_shape(a, &s, &l, &e), 0);
    ck_assert_int_eq(s, 3);
    ck_assert_int_eq(l, 2);
    ck_assert_int_eq(e, 8);
    for (int32_t x = 0; x < 8; x++)
        ck_assert_double_eq(ps_expert_trace_tokens(a, 2, 1, x), 128);
    /* zipf:1 without drift: the ranks 1..4 get 12/25, 6/25, 4/25, 3/25 of 2500 tokens. */
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:1,steps:1,tokens:2500,seed:9", 1, 4), 0);
    double got[4];
    for (int32_t x = 0; x < 4; x++)
        got[x] = ps_expert_trace_tokens(a, 0, 0, x);
    for (int i = 1; i < 4; i++) /* sort descending */
        for (int k = i; k > 0 && got[k] > got[k - 1]; k--) {
            double y = got[k];
            got[k] = got[k - 1];
            got[k - 1] = y;
        }
    ck_assert_double_eq(got[0], 1200);
    ck_assert_double_eq(got[1], 600);
    ck_assert_double_eq(got[2], 400);
    ck_assert_double_eq(got[3], 300);
    /* Reproducible: the same spec twice is the same trace; another seed differs. */
    const char *spec = "zipf:1.2,drift:0.2,seed:42,steps:20";
    ck_assert_int_eq(ps_expert_trace_synthetic(a, spec, 3, 16), 0);
    ck_assert_int_eq(ps_expert_trace_synthetic(b, spec, 3, 16), 0);
    int differ = 0;
    for (int32_t st = 0; st < 20; st++)
        for (int32_t x = 0; x < 16; x++)
            ck_assert_double_eq(ps_expert_trace_tokens(a, st, 2, x),
                                ps_expert_trace_tokens(b, st, 2, x));
    ck_assert_int_eq(ps_expert_trace_synthetic(b, "zipf:1.2,drift:0.2,seed:43,steps:20", 3, 16), 0);
    for (int32_t x = 0; x < 16; x++)
        differ |= ps_expert_trace_tokens(a, 19, 2, x) != ps_expert_trace_tokens(b, 19, 2, x);
    ck_assert(differ);
    /* Bad specs name the word. */
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "uniform:1", 1, 4), PS_ECONFIG);
    ck_assert(strstr(ps_expert_trace_last_error(a), "does not start with zipf:S"));
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:1,skew:2", 1, 4), PS_ECONFIG);
    ck_assert(strstr(ps_expert_trace_last_error(a), "unknown key \"skew\""));
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:1,seed:1.5", 1, 4), PS_ECONFIG);
    ck_assert(strstr(ps_expert_trace_last_error(a), "seed needs an integer"));
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:1,drift", 1, 4), PS_ECONFIG);
    ck_assert_int_eq(ps_expert_trace_synthetic(a, "zipf:1,steps:1000000", 100, 256), PS_ERANGE);
    ps_expert_trace_free(a);
    ps_expert_trace_free(b);
}
END_TEST

START_TEST(experts_api_errors)
{
    ps_expert_group g = {4, 2, 0}, odd = {4, 3, 0};
    int32_t dev[8] = {0, 0, 1, 1, 2, 2, 3, 3}, bad[8] = {0, 0, 1, 1, 2, 2, 3, 4}, cap = 0;
    double w[8] = {1, 2, 3, 4, 5, 6, 7, 8}, loads[4], s;
    char err[128];
    ck_assert_int_eq(ps_expert_group_check(NULL, 8, NULL, NULL, 0), PS_EINVAL);
    ck_assert_int_eq(ps_expert_group_check(&g, 8, &cap, NULL, 0), 0);
    ck_assert_int_eq(cap, 2);
    ck_assert_int_eq(ps_expert_group_check(&g, 0, NULL, err, sizeof err), PS_ECONFIG);
    ck_assert_str_eq(err, "0 experts: expected 1 to 65536");
    ck_assert_int_eq(ps_expert_identity(8, &odd, dev), PS_ECONFIG);
    ck_assert_int_eq(ps_expert_identity(8, NULL, dev), PS_EINVAL);
    ck_assert_double_eq(ps_expert_device_loads(w, 8, dev, 4, loads), 15);
    ck_assert_double_eq(loads[0], 3);
    ck_assert_double_eq(ps_expert_device_loads(w, 8, bad, 4, loads), -1);
    ck_assert_double_eq(ps_expert_device_loads(NULL, 8, dev, 4, loads), -1);
    ck_assert_int_eq(ps_expert_align(NULL, dev, 8, &g, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_expert_align(dev, bad, 8, &g, NULL), PS_ECONFIG);
    ps_hardware hw = toy_hardware();
    ck_assert_int_eq(ps_expert_migration_s(dev, bad, 8, &g, 1, &hw, NULL, &s), PS_ECONFIG);
    ck_assert_int_eq(ps_expert_migration_s(dev, dev, 8, &odd, 1, &hw, NULL, &s), PS_EINVAL);
    ck_assert_int_eq(ps_expert_migration_s(dev, dev, 8, &g, 1, NULL, NULL, &s), PS_EINVAL);
    ps_transformer dense;
    ck_assert_int_eq(ps_transformer_builtin("llama3-8b", &dense), 0);
    ck_assert_double_eq(ps_expert_migration_bytes(&dense), 0);
    ck_assert_double_eq(ps_expert_migration_bytes(NULL), 0);
    ps_expert_layer_time t;
    ck_assert_int_eq(ps_expert_layer_time_get(&dense, &hw, 0, w, 8, dev, &g, &t, err, sizeof err),
                     PS_ECONFIG);
    ck_assert_str_eq(err, "model llama3-8b has no experts");
    ck_assert_int_eq(ps_expert_layer_time_get(NULL, &hw, 0, w, 8, dev, &g, &t, NULL, 0), PS_EINVAL);
    ps_expert_trace *tr = NULL;
    ck_assert_int_eq(ps_expert_trace_new(&tr, NULL), 0);
    ck_assert_int_eq(ps_expert_trace_shape(tr, NULL, NULL, NULL), PS_ESTATE);
    ck_assert_int_eq(ps_expert_trace_predict(tr, 0.5, w), PS_ESTATE);
    ck_assert_int_eq(ps_expert_trace_shape(NULL, NULL, NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_expert_trace_synthetic(tr, NULL, 1, 1), PS_EINVAL);
    ck_assert_int_eq(ps_expert_trace_synthetic(tr, "zipf:1", 0, 8), PS_ERANGE);
    ck_assert_double_eq(ps_expert_trace_tokens(NULL, 0, 0, 0), -1);
    ck_assert_str_eq(ps_expert_trace_last_error(NULL), "");
    ps_expert_trace_free(tr);
    ps_expert_trace_free(NULL);
}
END_TEST

START_TEST(experts_alloc_failure_walks)
{
    /* The synthetic generator and the relabelling clean up after any failed allocation. */
    int ok = 0;
    for (long n = 1; n < 20 && !ok; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator a = counting_allocator(&c);
        ps_expert_trace *t = NULL;
        int rc = ps_expert_trace_new(&t, &a);
        if (!rc)
            rc = ps_expert_trace_synthetic(t, "zipf:1,drift:0.1,steps:4", 3, 8);
        ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "fail at %ld: rc %d", n, rc);
        ok = rc == 0;
        ps_expert_trace_free(t);
        ck_assert_int_eq(c.live, 0);
    }
    ck_assert(ok);
    ps_expert_group g = {4, 2, 0};
    int32_t cur[8] = {0, 0, 1, 1, 2, 2, 3, 3};
    ok = 0;
    for (long n = 1; n < 10 && !ok; n++) {
        int32_t plan[8] = {3, 3, 2, 2, 1, 1, 0, 0};
        counting_alloc c = {0, n, 0, 0};
        ps_allocator a = counting_allocator(&c);
        int rc = ps_expert_align(cur, plan, 8, &g, &a);
        ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "fail at %ld: rc %d", n, rc);
        if (rc == PS_ENOMEM)
            ck_assert_int_eq(plan[0], 3); /* unchanged */
        ok = rc == 0;
        ck_assert_int_eq(c.live, 0);
    }
    ck_assert(ok);
}
END_TEST

static Suite *experts_suite(void)
{
    Suite *s = suite_create("experts");
    TCase *tc = tcase_create("trace");
    tcase_add_test(tc, experts_trace_lines);
    tcase_add_test(tc, experts_trace_csv);
    tcase_add_test(tc, experts_trace_bad_input);
    tcase_add_test(tc, experts_trace_alloc_failure);
    tcase_add_test(tc, experts_ema_hand);
    suite_add_tcase(s, tc);

    tc = tcase_create("place");
    tcase_add_test(tc, experts_place_hand);
    tcase_add_test(tc, experts_place_keeps_current);
    tcase_add_test(tc, experts_place_brute_force);
    tcase_add_test(tc, experts_place_never_worse);
    tcase_add_test(tc, experts_place_errors);
    tcase_add_test(tc, experts_place_alloc_failure);
    tcase_add_test(tc, experts_align_keeps_experts);
    suite_add_tcase(s, tc);

    tc = tcase_create("cost");
    tcase_add_test(tc, experts_layer_time_hand);
    tcase_add_test(tc, experts_migration_hand);
    suite_add_tcase(s, tc);

    tc = tcase_create("synthetic");
    tcase_add_test(tc, experts_rng_reference);
    tcase_add_test(tc, experts_synthetic);
    suite_add_tcase(s, tc);

    tc = tcase_create("api");
    tcase_add_test(tc, experts_api_errors);
    tcase_add_test(tc, experts_alloc_failure_walks);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(experts_suite());
}
