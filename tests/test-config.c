/*
 * Check suite "config": ps_problem_load_json(). Every expected message and value below is
 * written out by hand from the documented format (docs/config.md), not copied from output.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"
#include "io/config.h"

#include "common.h"

#include <cJSON.h>
#include <check.h>

#include "docblock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */

static ps_problem *new_problem(void)
{
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, NULL), 0);
    ck_assert_ptr_nonnull(pb);
    return pb;
}

static int load(ps_problem *pb, const char *text)
{
    return ps_problem_load_json(pb, text, strlen(text));
}

/* Loads text, expecting return code rc and exactly the message msg. */
#define ck_assert_load(pb, text, rc, msg)                                                          \
    do {                                                                                           \
        ck_assert_int_eq(load((pb), (text)), (rc));                                                \
        ck_assert_str_eq(ps_problem_last_error(pb), (msg));                                        \
    } while (0)

/* The parameters of ps_param, all of them. */
enum { N_PARAMS = PS_PARAM_SPLIT_BACKWARD + 1 };

/* The values a problem holds, to compare before and after a failing load. */
typedef struct snapshot {
    const char *schedule;
    long long ints[N_PARAMS];
    double costs[5];
    size_t n_stages;
    ps_stage_cost stages[4];
    ps_stage_mem mem; /* the uniform memory model */
    double mem_limit;
    size_t n_stage_mem;
    ps_stage_mem stage_mem[4];
    int moe_rc; /* ps_problem_get_moe() */
    ps_moe_model moe;
    int a2a_rc; /* ps_problem_a2a_info() */
    ps_a2a_info a2a;
    size_t n_stage_layers;
    int32_t stage_layers[4];
} snapshot;

static snapshot take(const ps_problem *pb)
{
    snapshot s;
    memset(&s, 0, sizeof s);
    s.schedule = ps_problem_schedule(pb);
    for (int i = 0; i < N_PARAMS; i++)
        s.ints[i] = ps_problem_get_int(pb, (ps_param)i);
    for (int k = 0; k < 5; k++)
        s.costs[k] = ps_problem_get_cost(pb, (ps_cost)k);
    const ps_stage_cost *c = NULL;
    s.n_stages = ps_problem_stage_costs(pb, &c);
    for (size_t i = 0; i < s.n_stages && i < 4; i++)
        s.stages[i] = c[i];
    /* There is no getter of the uniform model or of the count while per-stage values are set. */
    s.mem = pb->mem;
    s.mem_limit = ps_problem_mem_limit(pb);
    s.n_stage_mem = pb->n_stage_mem;
    for (size_t i = 0; i < s.n_stage_mem && i < 4; i++)
        s.stage_mem[i] = ps_problem_memory(pb, (int)i);
    s.moe_rc = ps_problem_get_moe(pb, &s.moe);
    s.a2a_rc = ps_problem_a2a_info(pb, &s.a2a);
    /* There is no getter of the layers per stage either. */
    s.n_stage_layers = pb->n_stage_layers;
    for (size_t i = 0; i < s.n_stage_layers && i < 4; i++)
        s.stage_layers[i] = pb->stage_layers[i];
    return s;
}

/* Field by field: the structs have padding. */
static void ck_moe_eq(const ps_moe_model *a, const ps_moe_model *b)
{
    ck_assert_int_eq(a->layers, b->layers);
    ck_assert_int_eq(a->dense_layers, b->dense_layers);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        ck_assert_msg(a->moe.t[k] == b->moe.t[k], "layer.%s: %.17g != %.17g", ps_op_name(k),
                      a->moe.t[k], b->moe.t[k]);
        ck_assert_msg(a->dense.t[k] == b->dense.t[k], "dense_layer.%s: %.17g != %.17g",
                      ps_op_name(k), a->dense.t[k], b->dense.t[k]);
    }
    ck_assert_double_eq(a->p2p, b->p2p);
    ck_assert_double_eq(a->slowdown, b->slowdown);
    ck_assert_int_eq(a->planner, b->planner);
}

static void ck_a2a_eq(const ps_a2a_info *a, const ps_a2a_info *b)
{
    ck_assert_int_eq(a->chosen, b->chosen);
    ck_assert_double_eq(a->flat_inter, b->flat_inter);
    ck_assert_double_eq(a->flat_intra, b->flat_intra);
    ck_assert_double_eq(a->hier_inter, b->hier_inter);
    ck_assert_double_eq(a->hier_intra, b->hier_intra);
    ck_assert_double_eq(a->flat_time, b->flat_time);
    ck_assert_double_eq(a->hier_time, b->hier_time);
}

static void ck_mem_eq(ps_stage_mem m, double f, double b, double w)
{
    ck_assert_double_eq(m.f, f);
    ck_assert_double_eq(m.b, b);
    ck_assert_double_eq(m.w, w);
}

static void ck_same(const snapshot *a, const snapshot *b)
{
    ck_assert_str_eq(a->schedule, b->schedule);
    for (int i = 0; i < N_PARAMS; i++)
        ck_assert_int_eq(a->ints[i], b->ints[i]);
    for (int k = 0; k < 5; k++)
        ck_assert_double_eq(a->costs[k], b->costs[k]);
    ck_assert_uint_eq(a->n_stages, b->n_stages);
    for (size_t i = 0; i < a->n_stages && i < 4; i++) {
        ck_assert_double_eq(a->stages[i].f, b->stages[i].f);
        ck_assert_double_eq(a->stages[i].b, b->stages[i].b);
        ck_assert_double_eq(a->stages[i].w, b->stages[i].w);
    }
    ck_mem_eq(a->mem, b->mem.f, b->mem.b, b->mem.w);
    ck_assert_double_eq(a->mem_limit, b->mem_limit);
    ck_assert_uint_eq(a->n_stage_mem, b->n_stage_mem);
    for (size_t i = 0; i < a->n_stage_mem && i < 4; i++)
        ck_mem_eq(a->stage_mem[i], b->stage_mem[i].f, b->stage_mem[i].b, b->stage_mem[i].w);
    ck_assert_int_eq(a->moe_rc, b->moe_rc);
    if (a->moe_rc == 0)
        ck_moe_eq(&a->moe, &b->moe);
    ck_assert_int_eq(a->a2a_rc, b->a2a_rc);
    if (a->a2a_rc == 0)
        ck_a2a_eq(&a->a2a, &b->a2a);
    ck_assert_uint_eq(a->n_stage_layers, b->n_stage_layers);
    for (size_t i = 0; i < a->n_stage_layers && i < 4; i++)
        ck_assert_int_eq(a->stage_layers[i], b->stage_layers[i]);
}

/* A MoE model given as durations, with values that no config below writes. */
static ps_moe_model prepared_moe(void)
{
    ps_moe_model m;
    memset(&m, 0, sizeof m);
    m.layers = 5;
    m.dense_layers = 1;
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        m.moe.t[k] = 0.125 * (k + 1);
        m.dense.t[k] = ps_op_is_comm(k) ? 0.0 : 0.25 * (k + 1);
    }
    m.p2p = 0.375;
    m.slowdown = 0.0625;
    m.planner = PS_PLANNER_MEGATRON;
    return m;
}

/* Sets non-default values everywhere so that a failing load can be shown to change none. */
static ps_problem *prepared_problem(void)
{
    ps_problem *pb = new_problem();
    static const ps_stage_cost two[2] = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
    static const ps_stage_mem mem2[2] = {{3.0, -2.0, -1.0}, {0.5, -0.25, -0.25}};
    ck_assert_int_eq(ps_problem_set_schedule(pb, "gpipe"), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_PP, 2), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_VPP, 1), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, 6), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, 3), 0);
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=2,b=3,w=4,c=0.5,fb=6"), 0);
    ck_assert_int_eq(ps_problem_set_stage_costs(pb, two, 2), 0);
    ck_assert_int_eq(ps_problem_set_memory(pb, 4.0, -1.0, -3.0), 0);
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, mem2, 2), 0);
    ck_assert_int_eq(ps_problem_set_mem_limit(pb, 40.0), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP, 3), 0);
    ck_assert_int_eq(ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, 1), 0);
    ps_moe_model m = prepared_moe();
    static const int32_t layers3[3] = {1, 2, 2};
    ck_assert_int_eq(ps_problem_set_moe(pb, &m), 0);
    ck_assert_int_eq(ps_problem_set_stage_layers(pb, layers3, 3), 0);
    return pb;
}

static const char known_root[] =
    ". Known keys of $: schedule, pp, vpp, microbatches, group_size, extra_warmup, split_backward, "
    "costs, stage_costs, memory, stage_memory, microbatch_weights, model, cluster, moe";
static const char known_costs[] = ". Known keys of $.costs: f, b, w, c, fb";

/* ---- valid configs -------------------------------------------------------------------------- */

START_TEST(config_full_valid)
{
    ps_problem *pb = new_problem();
    const char *text = "{\n"
                       "  \"schedule\": \"interleaved\",\n"
                       "  \"pp\": 8,\n"
                       "  \"vpp\": 2,\n"
                       "  \"microbatches\": 16,\n"
                       "  \"group_size\": 8,\n"
                       "  \"costs\": {\"f\": 1.5, \"b\": 2.25, \"w\": 0.75, \"c\": 0.125, "
                       "\"fb\": 3.5},\n"
                       "  \"stage_costs\": [{\"f\": 1, \"b\": 2, \"w\": 3}, {\"f\": 0.5, \"b\": "
                       "0, \"w\": 1e3}]\n"
                       "}\n";
    ck_assert_int_eq(load(pb, text), 0);
    ck_assert_str_eq(ps_problem_schedule(pb), "interleaved");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 8);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 2);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 16);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_GROUP_SIZE), 8);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1.5);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_B), 2.25);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_W), 0.75);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_C), 0.125);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 3.5);
    const ps_stage_cost *c = NULL;
    ck_assert_uint_eq(ps_problem_stage_costs(pb, &c), 2);
    ck_assert_double_eq(c[0].f, 1.0);
    ck_assert_double_eq(c[0].b, 2.0);
    ck_assert_double_eq(c[0].w, 3.0);
    ck_assert_double_eq(c[1].f, 0.5);
    ck_assert_double_eq(c[1].b, 0.0);
    ck_assert_double_eq(c[1].w, 1000.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_absent_keys_keep_values)
{
    ps_problem *pb = new_problem();
    snapshot before = take(pb);
    ck_assert_int_eq(load(pb, "{}"), 0);
    snapshot after = take(pb);
    ck_same(&before, &after);
    /* The documented defaults of a new problem. */
    ck_assert_str_eq(after.schedule, "1f1b");
    ck_assert_int_eq(after.ints[PS_PARAM_PP], 4);
    ck_assert_int_eq(after.ints[PS_PARAM_MICROBATCHES], 8);
    ck_assert_int_eq(after.ints[PS_PARAM_GROUP_SIZE], 0);
    ck_assert_double_eq(after.costs[PS_COST_F], 1.0);
    ck_assert_double_eq(after.costs[PS_COST_B], 1.0);
    ck_assert_double_eq(after.costs[PS_COST_W], 1.0);
    ck_assert_double_eq(after.costs[PS_COST_C], 0.0);
    ck_assert_double_eq(after.costs[PS_COST_FB], -1.0);
    ck_assert_uint_eq(after.n_stages, 0);
    ck_mem_eq(after.mem, 1.0, -0.5, -0.5);
    ck_assert_double_eq(after.mem_limit, 0.0);
    ck_assert_uint_eq(after.n_stage_mem, 0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_partial_keeps_others)
{
    ps_problem *pb = prepared_problem();
    ck_assert_int_eq(load(pb, "{\"pp\": 16, \"costs\": {\"w\": 0.25}}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 16);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_W), 0.25);
    /* Everything else is what prepared_problem() set. */
    ck_assert_str_eq(ps_problem_schedule(pb), "gpipe");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 6);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_GROUP_SIZE), 3);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 2.0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_B), 3.0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_C), 0.5);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 6.0);
    ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 2);
    ck_mem_eq(ps_problem_memory(pb, 0), 3.0, -2.0, -1.0);
    ck_mem_eq(ps_problem_memory(pb, 1), 0.5, -0.25, -0.25);
    ck_mem_eq(ps_problem_memory(pb, 2), 4.0, -1.0, -3.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 40.0);
    ps_problem_free(pb);
}
END_TEST

/* cJSON allocates through its own process-wide hooks; one that fails makes cJSON return NULL
 * as for a syntax error. A well-formed file must then read as out of memory (PS_ENOMEM, exit
 * status 3 in the CLI), not as "malformed JSON" at some column; a malformed one still reads as
 * malformed, and texts that cJSON refuses are never taken for an allocation failure. The
 * hooks are set only here (the suite runs its tests one at a time) and restored. */
static long cjson_fail_after = -1;
static void *cjson_failing_malloc(size_t n)
{
    if (cjson_fail_after == 0)
        return NULL;
    if (cjson_fail_after > 0)
        cjson_fail_after--;
    return malloc(n);
}

START_TEST(config_cjson_out_of_memory)
{
    ps_problem *pb = new_problem();
    const char *good = "{\"schedule\": \"1f1b\", \"pp\": 4, \"microbatches\": 8}";
    cJSON_Hooks h = {cjson_failing_malloc, free};
    cJSON_InitHooks(&h);
    for (long k = 0; k < 6; k++) {
        cjson_fail_after = k;
        int rc = load(pb, good);
        ck_assert_msg(rc == PS_ENOMEM, "failing allocation %ld: %d %s", k, rc,
                      ps_problem_last_error(pb));
        ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "out of memory"));
    }
    cjson_fail_after = 0;
    ck_assert_int_eq(load(pb, "{\"pp\": 4,, }"), PS_EPARSE);
    ck_assert_ptr_nonnull(strstr(ps_problem_last_error(pb), "malformed JSON"));
    cjson_fail_after = -1;
    cJSON_InitHooks(NULL);
    ck_assert_int_eq(load(pb, good), 0);
    /* What cJSON refuses, the recogniser refuses too: a syntax error stays PS_EPARSE. */
    static const char *const bad[] = {"{\"a\": \"\\ud800\"}",
                                      "{\"a\": \"\\udc00x\"}",
                                      "{\"a\": \"\\ud800\\u0041\"}",
                                      "{\"a\": -}",
                                      "{\"a\": [1,]}",
                                      "{\"a\" 1}",
                                      "{1: 2}",
                                      "{\"a\": tru}",
                                      "{\"a\": \"\\x\"}",
                                      "{\"a\": \"\\u12g4\"}",
                                      "{\"a\": [1 2]}",
                                      "{\"a\": {\"b\": 1}",
                                      "[",
                                      "{\"a\": \"x}"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        int rc = load(pb, bad[k]);
        ck_assert_msg(rc != PS_ENOMEM, "%s read as out of memory", bad[k]);
    }
    char deep[2100];
    size_t n = 0;
    deep[n++] = '{';
    memcpy(deep + n, "\"a\":", 4);
    n += 4;
    for (int d = 0; d < 1000; d++)
        deep[n++] = '[';
    for (int d = 0; d < 1000; d++)
        deep[n++] = ']';
    deep[n++] = '}';
    deep[n] = 0;
    ck_assert_int_eq(load(pb, deep), PS_EPARSE); /* beyond cJSON's nesting limit */
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_schedule_alias)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{\"schedule\": \"Interleaved1F1B\"}"), 0);
    ck_assert_str_eq(ps_problem_schedule(pb), "interleaved-rounds");
    ck_assert_int_eq(load(pb, "{\"schedule\": \"megatron-interleaved\"}"), 0);
    ck_assert_str_eq(ps_problem_schedule(pb), "interleaved");
    ck_assert_int_eq(load(pb, "{\"schedule\": \"GPIPE\"}"), 0);
    ck_assert_str_eq(ps_problem_schedule(pb), "gpipe");
    ck_assert_int_eq(load(pb, "{\"schedule\": \"looped_bfs\"}"), 0);
    ck_assert_str_eq(ps_problem_schedule(pb), "looped-bfs");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_fb_negative_is_default)
{
    ps_problem *pb = prepared_problem();
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 6.0);
    ck_assert_int_eq(load(pb, "{\"costs\": {\"fb\": -0.5}}"), 0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), -1.0);
    ck_assert_int_eq(load(pb, "{\"costs\": {\"fb\": 0}}"), 0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 0.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_limits_inclusive)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{\"pp\": 4096, \"vpp\": 64, \"microbatches\": 1048576, "
                              "\"group_size\": 1048576, \"costs\": {\"f\": 1e12, \"b\": 0, "
                              "\"w\": 1000000000000, \"c\": 0, \"fb\": 1e12}}"),
                     0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4096);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 64);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 1048576);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_GROUP_SIZE), 1048576);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1e12);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_B), 0.0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_W), 1e12);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 1e12);
    ck_assert_int_eq(load(pb, "{\"pp\": 1, \"vpp\": 1, \"microbatches\": 1, \"group_size\": 0}"),
                     0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_GROUP_SIZE), 0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_not_nul_terminated)
{
    /* The text is exactly len bytes with no terminator, so an over-read shows under
     * valgrind; a NUL-terminated copy would hide one. */
    static const char src[] = "{\"pp\": 2, \"microbatches\": 3}";
    size_t len = sizeof src - 1;
    char *text = malloc(len);
    ck_assert_ptr_nonnull(text);
    memcpy(text, src, len);
    ps_problem *pb = new_problem();
    ck_assert_int_eq(ps_problem_load_json(pb, text, len), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 2);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 3);
    /* Only the first len bytes count: what follows them in memory is never looked at. */
    static const char longer[] = "{\"pp\": 5}garbage";
    ck_assert_int_eq(ps_problem_load_json(pb, longer, 9), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 5);
    free(text);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_whitespace_and_bom)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, " \r\n\t{ \"pp\" : 3 }\r\n\t "), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 3);
    ck_assert_int_eq(load(pb, "\xEF\xBB\xBF{\"pp\": 7}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 7);
    ps_problem_free(pb);
}
END_TEST

/* ---- types ---------------------------------------------------------------------------------- */

START_TEST(config_int_wrong_types)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": \"4\"}", PS_ECONFIG,
                   "$.pp: expected an integer, got string \"4\"");
    ck_assert_load(pb, "{\"vpp\": true}", PS_ECONFIG,
                   "$.vpp: expected an integer, got boolean true");
    ck_assert_load(pb, "{\"microbatches\": false}", PS_ECONFIG,
                   "$.microbatches: expected an integer, got boolean false");
    ck_assert_load(pb, "{\"group_size\": null}", PS_ECONFIG,
                   "$.group_size: expected an integer, got null");
    ck_assert_load(pb, "{\"pp\": [4]}", PS_ECONFIG, "$.pp: expected an integer, got an array");
    ck_assert_load(pb, "{\"pp\": {\"value\": 4}}", PS_ECONFIG,
                   "$.pp: expected an integer, got an object");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_cost_wrong_types)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"costs\": {\"f\": \"1\"}}", PS_ECONFIG,
                   "$.costs.f: expected a number, got string \"1\"");
    ck_assert_load(pb, "{\"costs\": {\"fb\": null}}", PS_ECONFIG,
                   "$.costs.fb: expected a number, got null");
    ck_assert_load(pb, "{\"costs\": {\"c\": true}}", PS_ECONFIG,
                   "$.costs.c: expected a number, got boolean true");
    ck_assert_load(pb, "{\"costs\": [1, 2, 3]}", PS_ECONFIG,
                   "$.costs: expected an object, got an array");
    ck_assert_load(pb, "{\"costs\": \"f=1\"}", PS_ECONFIG,
                   "$.costs: expected an object, got string \"f=1\"");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_schedule_wrong_type)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"schedule\": 1}", PS_ECONFIG,
                   "$.schedule: expected a string, got number 1");
    ck_assert_load(pb, "{\"schedule\": [\"1f1b\"]}", PS_ECONFIG,
                   "$.schedule: expected a string, got an array");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_stage_costs_wrong_types)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"stage_costs\": {\"f\": 1}}", PS_ECONFIG,
                   "$.stage_costs: expected an array, got an object");
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": 1, \"w\": 1}, 3]}", PS_ECONFIG,
                   "$.stage_costs[1]: expected an object with \"f\", \"b\" and \"w\", got "
                   "number 3");
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": \"2\", \"w\": 1}]}", PS_ECONFIG,
                   "$.stage_costs[0].b: expected a number, got string \"2\"");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_whole_numbers)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 2.5}", PS_ECONFIG, "$.pp: expected an integer, got 2.5");
    ck_assert_load(pb, "{\"microbatches\": 8.000001}", PS_ECONFIG,
                   "$.microbatches: expected an integer, got 8.000001");
    /* Whole numbers written as decimals or exponents are integers. */
    ck_assert_int_eq(load(pb, "{\"pp\": 4.0, \"microbatches\": 1e2, \"group_size\": -0}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES), 100);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_GROUP_SIZE), 0);
    ps_problem_free(pb);
}
END_TEST

/* ---- ranges --------------------------------------------------------------------------------- */

START_TEST(config_int_below_range)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 0}", PS_ECONFIG, "$.pp: must be >= 1, got 0");
    ck_assert_load(pb, "{\"vpp\": 0}", PS_ECONFIG, "$.vpp: must be >= 1, got 0");
    ck_assert_load(pb, "{\"microbatches\": -3}", PS_ECONFIG,
                   "$.microbatches: must be >= 1, got -3");
    ck_assert_load(pb, "{\"group_size\": -1}", PS_ECONFIG, "$.group_size: must be >= 0, got -1");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_int_beyond_limit)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 100000}", PS_ECONFIG, "$.pp: 100000 is beyond the limit 4096");
    ck_assert_load(pb, "{\"pp\": 4097}", PS_ECONFIG, "$.pp: 4097 is beyond the limit 4096");
    ck_assert_load(pb, "{\"vpp\": 65}", PS_ECONFIG, "$.vpp: 65 is beyond the limit 64");
    ck_assert_load(pb, "{\"microbatches\": 1048577}", PS_ECONFIG,
                   "$.microbatches: 1048577 is beyond the limit 1048576");
    ck_assert_load(pb, "{\"group_size\": 1048577}", PS_ECONFIG,
                   "$.group_size: 1048577 is beyond the limit 1048576");
    /* Far beyond what a long long holds: still a range error, never a wrapped value. */
    ck_assert_load(pb, "{\"pp\": 1e30}", PS_ECONFIG, "$.pp: 1e+30 is beyond the limit 4096");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_cost_out_of_range)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"costs\": {\"f\": -1}}", PS_ECONFIG, "$.costs.f: must be >= 0, got -1");
    ck_assert_load(pb, "{\"costs\": {\"c\": -0.25}}", PS_ECONFIG,
                   "$.costs.c: must be >= 0, got -0.25");
    ck_assert_load(pb, "{\"costs\": {\"w\": 2e12}}", PS_ECONFIG,
                   "$.costs.w: 2000000000000 is beyond the limit 1e+12");
    ck_assert_load(pb, "{\"costs\": {\"fb\": 1e13}}", PS_ECONFIG,
                   "$.costs.fb: 10000000000000 is beyond the limit 1e+12");
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_infinite_numbers)
{
    /* JSON has no NaN or infinity, but 1e400 overflows a double to infinity. */
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 1e400}", PS_ECONFIG,
                   "$.pp: expected an integer, got a number beyond the range of a double");
    ck_assert_load(pb, "{\"costs\": {\"f\": 1e400}}", PS_ECONFIG,
                   "$.costs.f: expected a finite number, got a number beyond the range of a "
                   "double");
    ck_assert_load(pb, "{\"costs\": {\"fb\": -1e400}}", PS_ECONFIG,
                   "$.costs.fb: expected a finite number, got a number beyond the range of a "
                   "double");
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": 1e999, \"w\": 1}]}", PS_ECONFIG,
                   "$.stage_costs[0].b: expected a finite number, got a number beyond the "
                   "range of a double");
    ck_assert_int_eq(load(pb, "{\"costs\": {\"f\": NaN}}"), PS_EPARSE);
    ck_assert_int_eq(load(pb, "{\"costs\": {\"f\": Infinity}}"), PS_EPARSE);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1.0);
    ps_problem_free(pb);
}
END_TEST

/* ---- unknown keys --------------------------------------------------------------------------- */

START_TEST(config_unknown_key_suggestion)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"micro_batches\": 8}", PS_ECONFIG,
                   "$.micro_batches: unknown key (did you mean \"microbatches\"?)");
    ck_assert_load(pb, "{\"group-size\": 8}", PS_ECONFIG,
                   "$.group-size: unknown key (did you mean \"group_size\"?)");
    ck_assert_load(pb, "{\"shedule\": \"1f1b\"}", PS_ECONFIG,
                   "$.shedule: unknown key (did you mean \"schedule\"?)");
    ck_assert_load(pb, "{\"p\": 8}", PS_ECONFIG, "$.p: unknown key (did you mean \"pp\"?)");
    ck_assert_load(pb, "{\"costs\": {\"fbb\": 1}}", PS_ECONFIG,
                   "$.costs.fbb: unknown key (did you mean \"fb\"?)");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_case_difference)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"PP\": 8}", PS_ECONFIG, "$.PP: unknown key (did you mean \"pp\"?)");
    ck_assert_load(pb, "{\"MicroBatches\": 8}", PS_ECONFIG,
                   "$.MicroBatches: unknown key (did you mean \"microbatches\"?)");
    ck_assert_load(pb, "{\"costs\": {\"F\": 1}}", PS_ECONFIG,
                   "$.costs.F: unknown key (did you mean \"f\"?)");
    ck_assert_load(pb, "{\"Stage_Costs\": []}", PS_ECONFIG,
                   "$.Stage_Costs: unknown key (did you mean \"stage_costs\"?)");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_without_suggestion)
{
    ps_problem *pb = new_problem();
    char want[512];
    snprintf(want, sizeof want, "$.seed: unknown key%s", known_root);
    ck_assert_load(pb, "{\"seed\": 1}", PS_ECONFIG, want);
    /* One letter is not "close" to another one-letter key. */
    snprintf(want, sizeof want, "$.costs.x: unknown key%s", known_costs);
    ck_assert_load(pb, "{\"costs\": {\"x\": 1}}", PS_ECONFIG, want);
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": 1, \"w\": 1, \"mem\": 3}]}",
                   PS_ECONFIG,
                   "$.stage_costs[0].mem: unknown key. Known keys of $.stage_costs[i]: f, b, w");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_all_collected)
{
    ps_problem *pb = new_problem();
    char want[1024];
    snprintf(want, sizeof want,
             "5 errors: $.pp: expected an integer, got string \"4\"; "
             "$.micro_batches: unknown key (did you mean \"microbatches\"?); "
             "$.costs.f: must be >= 0, got -1; $.costs.X: unknown key; $.foo: unknown key%s%s",
             known_root, known_costs);
    ck_assert_load(pb,
                   "{\"pp\": \"4\", \"micro_batches\": 8, \"costs\": {\"f\": -1, \"X\": 2}, "
                   "\"foo\": 1}",
                   PS_ECONFIG, want);
    ck_assert_load(pb, "{\"ppp\": 1, \"vp\": 2}", PS_ECONFIG,
                   "2 unknown keys: $.ppp (did you mean \"pp\"?), $.vp (did you mean \"pp\"?)");
    ck_assert_load(pb,
                   "{\"stage_costs\": [{\"f\": 1, \"b\": 1, \"w\": 1}, {\"f\": 1, \"b\": 1, "
                   "\"W\": 1}, {\"f\": 1, \"b\": 1, \"w\": 1, \"bb\": 0}]}",
                   PS_ECONFIG,
                   "3 errors: $.stage_costs[1].W: unknown key (did you mean \"w\"?); "
                   "$.stage_costs[1].w: required key missing; "
                   "$.stage_costs[2].bb: unknown key (did you mean \"b\"?)");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_hybrid_parallel_config)
{
    /* A user's DeepSpeed / Megatron-style config, of which we know only three keys. */
    static const char text[] =
        "{\n"
        "  \"schedule\": \"1f1b\",\n"
        "  \"tensor_model_parallel_size\": 8,\n"
        "  \"pp\": 4,\n"
        "  \"pipeline_model_parallel_size\": 4,\n"
        "  \"data_parallel_size\": 16,\n"
        "  \"microbatches\": 32,\n"
        "  \"train_batch_size\": 2048,\n"
        "  \"train_micro_batch_size_per_gpu\": 4,\n"
        "  \"gradient_accumulation_steps\": 32,\n"
        "  \"optimizer\": {\n"
        "    \"type\": \"AdamW\",\n"
        "    \"params\": {\"lr\": 0.0003, \"betas\": [0.9, 0.95], \"eps\": 1e-8,\n"
        "               \"weight_decay\": 0.1}\n"
        "  },\n"
        "  \"scheduler\": {\"type\": \"WarmupDecayLR\", \"params\": {\"warmup_num_steps\": 2000,\n"
        "                \"total_num_steps\": 500000}},\n"
        "  \"zero_optimization\": {\n"
        "    \"stage\": 1,\n"
        "    \"reduce_bucket_size\": 500000000,\n"
        "    \"overlap_comm\": true,\n"
        "    \"contiguous_gradients\": true\n"
        "  },\n"
        "  \"bf16\": {\"enabled\": true},\n"
        "  \"gradient_clipping\": 1.0,\n"
        "  \"steps_per_print\": 10\n"
        "}\n";
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    char want[1024];
    snprintf(want, sizeof want,
             "12 unknown keys: $.tensor_model_parallel_size, $.pipeline_model_parallel_size, "
             "$.data_parallel_size, $.train_batch_size, $.train_micro_batch_size_per_gpu, "
             "$.gradient_accumulation_steps, $.optimizer, "
             "$.scheduler (did you mean \"schedule\"?), $.zero_optimization, $.bf16, "
             "$.gradient_clipping, $.steps_per_print%s",
             known_root);
    ck_assert_int_eq(load(pb, text), PS_ECONFIG);
    ck_assert_str_eq(ps_problem_last_error(pb), want);
    snapshot after = take(pb);
    ck_same(&before, &after);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_hybrid_parallel_twelve)
{
    /* Twelve unknown keys around valid ones, including a nested unknown key in "costs". */
    static const char text[] =
        "{\"schedule\": \"interleaved\", \"pp\": 4, \"vpp\": 2, \"microbatches\": 8,\n"
        " \"tensor_model_parallel_size\": 8, \"sequence_parallel\": true,\n"
        " \"data_parallel_size\": 16, \"global_batch_size\": 1024,\n"
        " \"micro_batch_size\": 1, \"seq_length\": 4096, \"num_layers\": 48,\n"
        " \"hidden_size\": 8192, \"optimizer\": {\"type\": \"adam\"},\n"
        " \"zero_optimization\": {\"stage\": 1}, \"fp16\": {\"enabled\": false},\n"
        " \"costs\": {\"f\": 1, \"b\": 2, \"w\": 1, \"comm\": 0.1}}";
    ps_problem *pb = new_problem();
    char want[1024];
    snprintf(want, sizeof want,
             "12 unknown keys: $.tensor_model_parallel_size, $.sequence_parallel, "
             "$.data_parallel_size, $.global_batch_size, $.micro_batch_size, $.seq_length, "
             "$.num_layers, $.hidden_size, $.optimizer, $.zero_optimization, $.fp16, "
             "$.costs.comm%s%s",
             known_root, known_costs);
    ck_assert_load(pb, text, PS_ECONFIG, want);
    ck_assert_str_eq(ps_problem_schedule(pb), "1f1b");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_many_truncated)
{
    /* More unknown keys than the message holds: the count comes first, and the cut is marked. */
    enum { KEYS = 500 };
    char *text = malloc(KEYS * 32 + 8);
    ck_assert_ptr_nonnull(text);
    size_t n = 0;
    text[n++] = '{';
    for (int i = 0; i < KEYS; i++)
        n += (size_t)sprintf(text + n, "%s\"unknown_key_%03d\": %d", i ? ", " : "", i, i);
    text[n++] = '}';
    text[n] = '\0';
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, text), PS_ECONFIG);
    const char *msg = ps_problem_last_error(pb);
    const char *head = "500 unknown keys: $.unknown_key_000, $.unknown_key_001, ";
    ck_assert_int_eq(strncmp(msg, head, strlen(head)), 0);
    /* The buffer is used up to its last few bytes, and the cut says so. */
    ck_assert_uint_gt(strlen(msg), PS__ERRLEN - 8);
    ck_assert_uint_lt(strlen(msg), PS__ERRLEN);
    ck_assert_str_eq(msg + strlen(msg) - 4, " ...");
    free(text);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_key_escaped)
{
    ps_problem *pb = new_problem();
    char want[512];
    snprintf(want, sizeof want, "$[\"a \\\"b\\\"\\n\"]: unknown key%s", known_root);
    ck_assert_load(pb, "{\"a \\\"b\\\"\\n\": 1}", PS_ECONFIG, want);
    /* A long key is cut to 48 bytes in the message. */
    char text[256], key[101];
    memset(key, 'k', 100);
    key[100] = '\0';
    snprintf(text, sizeof text, "{\"%s\": 1}", key);
    snprintf(want, sizeof want, "$[\"%.48s...\"]: unknown key%s", key, known_root);
    ck_assert_load(pb, text, PS_ECONFIG, want);
    snprintf(want, sizeof want, "$[\"\"]: unknown key%s", known_root);
    ck_assert_load(pb, "{\"\": 1}", PS_ECONFIG, want);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_duplicate_key)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 2, \"pp\": 3}", PS_ECONFIG, "$.pp: duplicate key");
    ck_assert_load(pb, "{\"costs\": {\"f\": 2, \"f\": 3}}", PS_ECONFIG, "$.costs.f: duplicate key");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_unknown_schedule)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"schedule\": \"no-such-family\"}", PS_ECONFIG,
                   "$.schedule: unknown schedule \"no-such-family\" (`pipesched list` shows the "
                   "families)");
    ck_assert_load(pb, "{\"schedule\": \"interleavd\"}", PS_ECONFIG,
                   "$.schedule: unknown schedule \"interleavd\" (did you mean \"interleaved\"? "
                   "`pipesched list` shows the families)");
    ck_assert_load(pb, "{\"schedule\": \"\"}", PS_ECONFIG,
                   "$.schedule: unknown schedule \"\" (`pipesched list` shows the families)");
    ck_assert_str_eq(ps_problem_schedule(pb), "1f1b");
    ps_problem_free(pb);
}
END_TEST

/* ---- parse errors --------------------------------------------------------------------------- */

START_TEST(config_malformed_line_column)
{
    ps_problem *pb = new_problem();
    /* Line 3 is `  "vpp": x`: the x is its 10th character. */
    ck_assert_load(pb, "{\n  \"pp\": 4,\n  \"vpp\": x\n}\n", PS_EPARSE,
                   "line 3, column 10: malformed JSON near \"x\"");
    /* A trailing comma: the error is at the closing brace on line 3, column 1. */
    ck_assert_load(pb, "{\n  \"pp\": 4,\n}", PS_EPARSE,
                   "line 3, column 1: malformed JSON near \"}\"");
    /* A missing colon on line 2. */
    ck_assert_load(pb, "{\n  \"pp\" 4\n}", PS_EPARSE,
                   "line 2, column 8: malformed JSON near \"4\"");
    /* Columns count characters: the two-byte "é" is one column. */
    ck_assert_load(pb, "{\"schedule\": \"\xC3\xA9\", \"pp\": x}", PS_EPARSE,
                   "line 1, column 25: malformed JSON near \"x}\"");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_truncated)
{
    ps_problem *pb = new_problem();
    /* The input ends inside the object: the error points at its last character. */
    ck_assert_load(pb, "{\"pp\": 4", PS_EPARSE, "line 1, column 8: malformed JSON near \"4\"");
    ck_assert_load(pb, "{\"costs\": {\"f\": 1}", PS_EPARSE,
                   "line 1, column 18: malformed JSON near \"}\"");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_trailing_garbage)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"pp\": 2}\n  x", PS_EPARSE,
                   "line 2, column 3: unexpected data after the JSON value near \"x\"");
    ck_assert_load(pb, "{\"pp\": 2}{\"pp\": 3}", PS_EPARSE,
                   "line 1, column 10: unexpected data after the JSON value near "
                   "\"{\\\"pp\\\": 3}\"");
    ck_assert_load(pb, "{} // comment", PS_EPARSE,
                   "line 1, column 4: unexpected data after the JSON value near \"// comment\"");
    /* Nothing was applied. */
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_non_object_top_level)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "[{\"pp\": 2}]", PS_ECONFIG, "$: expected an object, got an array");
    ck_assert_load(pb, "42", PS_ECONFIG, "$: expected an object, got number 42");
    ck_assert_load(pb, "\"pp\"", PS_ECONFIG, "$: expected an object, got string \"pp\"");
    ck_assert_load(pb, "null", PS_ECONFIG, "$: expected an object, got null");
    ck_assert_load(pb, "true", PS_ECONFIG, "$: expected an object, got boolean true");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_empty_input)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "", PS_EPARSE, "line 1, column 1: empty input (expected a JSON object)");
    ck_assert_load(pb, " \n\t", PS_EPARSE,
                   "line 1, column 1: empty input (expected a JSON object)");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_nul_bytes)
{
    ps_problem *pb = new_problem();
    static const char raw[] = "{\"pp\": 2}\0";
    ck_assert_int_eq(ps_problem_load_json(pb, raw, sizeof raw - 1), PS_EPARSE);
    ck_assert_str_eq(ps_problem_last_error(pb),
                     "line 1, column 10: NUL byte in the input near \"\\u0000\"");
    /* An escaped NUL would cut the key "pp\u0000x" down to "pp" inside cJSON. */
    ck_assert_load(pb, "{\"pp\\u0000x\": 2}", PS_EPARSE,
                   "line 1, column 5: \\u0000 in a string is not supported near "
                   "\"\\\\u0000x\\\": 2}\"");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    /* An escaped backslash followed by "u0000" is ordinary text. */
    ck_assert_load(pb, "{\"schedule\": \"a\\\\u0000\"}", PS_ECONFIG,
                   "$.schedule: unknown schedule \"a\\\\u0000\" (`pipesched list` shows the "
                   "families)");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_too_long)
{
    const size_t limit = (size_t)64 << 20;
    char *text = malloc(limit + 1);
    ck_assert_ptr_nonnull(text);
    memset(text, ' ', limit + 1);
    text[0] = '{';
    text[1] = '}';
    ps_problem *pb = new_problem();
    ck_assert_int_eq(ps_problem_load_json(pb, text, limit + 1), PS_ERANGE);
    ck_assert_str_eq(ps_problem_last_error(pb),
                     "config is 67108865 bytes; the limit is 67108864 (64 MiB)");
    /* Exactly the limit is accepted. */
    ck_assert_int_eq(ps_problem_load_json(pb, text, limit), 0);
    free(text);
    ps_problem_free(pb);
}
END_TEST

/* ---- atomicity ------------------------------------------------------------------------------ */

START_TEST(config_failure_keeps_values)
{
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    /* Every key but one is valid: nothing may be applied. */
    ck_assert_load(pb,
                   "{\"schedule\": \"interleaved\", \"pp\": 8, \"vpp\": 2, \"microbatches\": 16, "
                   "\"group_size\": 8, \"costs\": {\"f\": 9, \"b\": 9, \"w\": 9, \"c\": 9, "
                   "\"fb\": 9}, \"stage_costs\": [{\"f\": 7, \"b\": 7, \"w\": 7}], "
                   "\"cost\": 1}",
                   PS_ECONFIG, "$.cost: unknown key (did you mean \"costs\"?)");
    snapshot after = take(pb);
    ck_same(&before, &after);
    /* A bad stage cost after valid scalars. */
    ck_assert_int_eq(load(pb, "{\"pp\": 8, \"stage_costs\": [{\"f\": 1, \"b\": 1, \"w\": -1}]}"),
                     PS_ECONFIG);
    after = take(pb);
    ck_same(&before, &after);
    /* A parse error after valid keys. */
    ck_assert_int_eq(load(pb, "{\"pp\": 8, \"vpp\": 2,, }"), PS_EPARSE);
    after = take(pb);
    ck_same(&before, &after);
    /* A stage_memory entry that does not sum to 0, after valid memory keys and stage costs. */
    ck_assert_load(pb,
                   "{\"memory\": {\"f\": 2, \"b\": -1, \"w\": -1, \"limit\": 9}, "
                   "\"stage_costs\": [{\"f\": 7, \"b\": 7, \"w\": 7}], "
                   "\"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0}, "
                   "{\"f\": 1, \"b\": -1, \"w\": 1}]}",
                   PS_ECONFIG,
                   "$.stage_memory[1]: f + b + w must be 0, got f = 1, b = -1, w = 1, sum 1");
    after = take(pb);
    ck_same(&before, &after);
    /* A memory sum error after valid stage memory. */
    ck_assert_int_eq(load(pb, "{\"stage_memory\": [], \"memory\": {\"f\": 5}}"), PS_ECONFIG);
    after = take(pb);
    ck_same(&before, &after);
    ps_problem_free(pb);
}
END_TEST

/* ---- stage costs ---------------------------------------------------------------------------- */

START_TEST(config_stage_costs_ok)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{\"costs\": {\"f\": 3, \"c\": 0.5, \"fb\": 2.5},\n"
                              " \"stage_costs\": [{\"w\": 0.5, \"f\": 1, \"b\": 2},\n"
                              "                 {\"f\": 1.25, \"b\": 2.5, \"w\": 0},\n"
                              "                 {\"f\": 0, \"b\": 0, \"w\": 1e12}]}"),
                     0);
    const ps_stage_cost *c = NULL;
    ck_assert_uint_eq(ps_problem_stage_costs(pb, &c), 3);
    ck_assert_double_eq(c[0].f, 1.0);
    ck_assert_double_eq(c[0].b, 2.0);
    ck_assert_double_eq(c[0].w, 0.5);
    ck_assert_double_eq(c[1].f, 1.25);
    ck_assert_double_eq(c[1].b, 2.5);
    ck_assert_double_eq(c[1].w, 0.0);
    ck_assert_double_eq(c[2].f, 0.0);
    ck_assert_double_eq(c[2].b, 0.0);
    ck_assert_double_eq(c[2].w, 1e12);
    /* c and fb come from "costs" alongside the per-stage values. */
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 3.0);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_C), 0.5);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_FB), 2.5);
    /* An empty array clears them. */
    ck_assert_int_eq(load(pb, "{\"stage_costs\": []}"), 0);
    ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_stage_costs_errors)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb,
                   "{\"stage_costs\": [{\"f\": 1, \"b\": 1, \"w\": 1}, {\"f\": 1, \"b\": 1, "
                   "\"w\": 1}, {\"f\": 1, \"b\": 1, \"w\": 1}, {\"f\": 1, \"b\": 1, \"w\": -1}]}",
                   PS_ECONFIG, "$.stage_costs[3].w: must be >= 0, got -1");
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": 1}]}", PS_ECONFIG,
                   "$.stage_costs[0].w: required key missing");
    ck_assert_load(pb, "{\"stage_costs\": [{}]}", PS_ECONFIG,
                   "3 errors: $.stage_costs[0].f: required key missing; "
                   "$.stage_costs[0].b: required key missing; "
                   "$.stage_costs[0].w: required key missing");
    ck_assert_load(pb, "{\"stage_costs\": [{\"f\": 1, \"b\": 2e12, \"w\": 1, \"w\": 2}]}",
                   PS_ECONFIG,
                   "2 errors: $.stage_costs[0].b: 2000000000000 is beyond the limit 1e+12; "
                   "$.stage_costs[0].w: duplicate key");
    ck_assert_load(pb, "{\"stage_costs\": [null]}", PS_ECONFIG,
                   "$.stage_costs[0]: expected an object with \"f\", \"b\" and \"w\", got null");
    ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 0);
    ps_problem_free(pb);
}
END_TEST

/* Builds {"key": [entry, entry, ...]} with n copies of entry. Caller frees. */
static char *stage_array(const char *key, size_t n, const char *entry)
{
    size_t el = strlen(entry);
    char *text = malloc(32 + strlen(key) + n * (el + 1));
    ck_assert_ptr_nonnull(text);
    size_t used = (size_t)sprintf(text, "{\"%s\": [", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            text[used++] = ',';
        memcpy(text + used, entry, el);
        used += el;
    }
    strcpy(text + used, "]}");
    return text;
}

START_TEST(config_stage_costs_limit)
{
    counting_alloc cnt = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&cnt);
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, &al), 0);

    /* One entry too many: refused from the length alone, before any allocation. The entries
     * are not even valid, and they are not examined. */
    char *text = stage_array("stage_costs", PS_MAX_STAGES + 1, "{}");
    cnt.calls = 0;
    ck_assert_load(pb, text, PS_ECONFIG, "$.stage_costs: 65537 entries is beyond the limit 65536");
    ck_assert_int_eq(cnt.calls, 0);
    free(text);

    text = stage_array("stage_costs", PS_MAX_STAGES, "{\"f\":1,\"b\":2,\"w\":3}");
    ck_assert_int_eq(load(pb, text), 0);
    const ps_stage_cost *c = NULL;
    ck_assert_uint_eq(ps_problem_stage_costs(pb, &c), PS_MAX_STAGES);
    ck_assert_double_eq(c[PS_MAX_STAGES - 1].f, 1.0);
    ck_assert_double_eq(c[PS_MAX_STAGES - 1].b, 2.0);
    ck_assert_double_eq(c[PS_MAX_STAGES - 1].w, 3.0);
    free(text);
    ps_problem_free(pb);
    ck_assert_int_eq(cnt.live, 0);
    ck_assert_uint_eq(cnt.bytes, 0);
}
END_TEST

/* ---- memory --------------------------------------------------------------------------------- */

START_TEST(config_memory_ok)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{\"memory\": {\"f\": 4, \"b\": -3, \"w\": -1, \"limit\": 12.5},\n"
                              " \"stage_memory\": [{\"w\": -0.5, \"f\": 2, \"b\": -1.5},\n"
                              "                  {\"f\": 1, \"b\": 0, \"w\": -1}]}"),
                     0);
    ck_mem_eq(ps_problem_memory(pb, 0), 2.0, -1.5, -0.5);
    ck_mem_eq(ps_problem_memory(pb, 1), 1.0, 0.0, -1.0);
    /* Beyond the per-stage entries: the uniform values of "memory". */
    ck_mem_eq(ps_problem_memory(pb, 2), 4.0, -3.0, -1.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 12.5);
    /* Nothing else moved. */
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1.0);
    ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 0);
    /* An empty array clears the per-stage values; a limit of 0 means none. */
    ck_assert_int_eq(load(pb, "{\"stage_memory\": [], \"memory\": {\"limit\": 0}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 4.0, -3.0, -1.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 0.0);
    /* Either sign is accepted, and the bounds are inclusive. */
    ck_assert_int_eq(load(pb, "{\"memory\": {\"f\": -2, \"b\": 1e12, \"w\": -999999999998, "
                              "\"limit\": 1e12}}"),
                     0);
    ck_mem_eq(ps_problem_memory(pb, 0), -2.0, 1e12, -999999999998.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 1e12);
    /* The sum is 0 within 1e-9 of the largest value, as for ps_problem_set_memory(). */
    ck_assert_int_eq(load(pb, "{\"stage_memory\": [{\"f\": 0.3, \"b\": -0.1, \"w\": -0.2}]}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 0.3, -0.1, -0.2);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_memory_merge)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{\"memory\": {\"f\": 2, \"b\": -1, \"w\": -1}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 2.0, -1.0, -1.0);
    ps_problem_free(pb);

    /* The keys not given are the problem's current values: here the defaults 1, -0.5, -0.5. */
    pb = new_problem();
    ck_assert_load(pb, "{\"memory\": {\"f\": 2}}", PS_ECONFIG,
                   "$.memory: f + b + w must be 0, got f = 2, b = -0.5, w = -0.5, sum 1 "
                   "(b and w are the current values)");
    ck_assert_load(pb, "{\"memory\": {\"f\": 2, \"b\": -1}}", PS_ECONFIG,
                   "$.memory: f + b + w must be 0, got f = 2, b = -1, w = -0.5, sum 0.5 "
                   "(w is the current value)");
    ck_assert_load(pb, "{\"memory\": {\"w\": 1}}", PS_ECONFIG,
                   "$.memory: f + b + w must be 0, got f = 1, b = -0.5, w = 1, sum 1.5 "
                   "(f and b are the current values)");
    ck_mem_eq(ps_problem_memory(pb, 0), 1.0, -0.5, -0.5);
    /* Two keys that keep the sum with the current third. */
    ck_assert_int_eq(load(pb, "{\"memory\": {\"b\": 0, \"w\": -1}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 1.0, 0.0, -1.0);
    ck_assert_int_eq(load(pb, "{\"memory\": {\"f\": 3, \"b\": -2}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 3.0, -2.0, -1.0);
    /* Only a limit: f, b and w stay. An empty object changes nothing. */
    ck_assert_int_eq(load(pb, "{\"memory\": {\"limit\": 7}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 3.0, -2.0, -1.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 7.0);
    ck_assert_int_eq(load(pb, "{\"memory\": {}}"), 0);
    ck_mem_eq(ps_problem_memory(pb, 0), 3.0, -2.0, -1.0);
    ck_assert_double_eq(ps_problem_mem_limit(pb), 7.0);
    /* Merging uses the uniform values even while per-stage values are set. */
    static const ps_stage_mem one = {5.0, -5.0, 0.0};
    ck_assert_int_eq(ps_problem_set_stage_memory(pb, &one, 1), 0);
    ck_assert_load(pb, "{\"memory\": {\"f\": 5}}", PS_ECONFIG,
                   "$.memory: f + b + w must be 0, got f = 5, b = -2, w = -1, sum 2 "
                   "(b and w are the current values)");
    ck_mem_eq(ps_problem_memory(pb, 0), 5.0, -5.0, 0.0);
    ck_mem_eq(ps_problem_memory(pb, 1), 3.0, -2.0, -1.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_memory_wrong_types)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"memory\": [1, -0.5, -0.5]}", PS_ECONFIG,
                   "$.memory: expected an object, got an array");
    ck_assert_load(pb, "{\"memory\": 1}", PS_ECONFIG, "$.memory: expected an object, got number 1");
    ck_assert_load(pb, "{\"memory\": {\"f\": \"1\", \"b\": -0.5, \"w\": -0.5}}", PS_ECONFIG,
                   "$.memory.f: expected a number, got string \"1\"");
    ck_assert_load(pb, "{\"memory\": {\"limit\": true}}", PS_ECONFIG,
                   "$.memory.limit: expected a number, got boolean true");
    ck_assert_load(pb, "{\"memory\": {\"w\": null}}", PS_ECONFIG,
                   "$.memory.w: expected a number, got null");
    ck_assert_load(pb, "{\"stage_memory\": {\"f\": 1}}", PS_ECONFIG,
                   "$.stage_memory: expected an array, got an object");
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0}, 3]}", PS_ECONFIG,
                   "$.stage_memory[1]: expected an object with \"f\", \"b\" and \"w\", got "
                   "number 3");
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 1, \"b\": null, \"w\": -1}]}", PS_ECONFIG,
                   "$.stage_memory[0].b: expected a number, got null");
    ck_mem_eq(ps_problem_memory(pb, 0), 1.0, -0.5, -0.5);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_memory_ranges)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"memory\": {\"limit\": -1}}", PS_ECONFIG,
                   "$.memory.limit: must be >= 0, got -1");
    ck_assert_load(pb, "{\"memory\": {\"limit\": 2e12}}", PS_ECONFIG,
                   "$.memory.limit: 2000000000000 is beyond the limit 1e+12");
    ck_assert_load(pb, "{\"memory\": {\"limit\": 1e400}}", PS_ECONFIG,
                   "$.memory.limit: expected a finite number, got a number beyond the range of "
                   "a double");
    ck_assert_load(pb, "{\"memory\": {\"f\": 2e12, \"b\": -1e12, \"w\": -1e12}}", PS_ECONFIG,
                   "$.memory.f: 2000000000000 is beyond the limit 1e+12");
    ck_assert_load(pb, "{\"memory\": {\"b\": -1e400}}", PS_ECONFIG,
                   "$.memory.b: expected a finite number, got a number beyond the range of a "
                   "double");
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 2e12, \"b\": -2e12, \"w\": 0}]}", PS_ECONFIG,
                   "2 errors: $.stage_memory[0].f: 2000000000000 is beyond the limit 1e+12; "
                   "$.stage_memory[0].b: -2000000000000 is beyond the limit -1e+12");
    ck_assert_double_eq(ps_problem_mem_limit(pb), 0.0);
    ck_mem_eq(ps_problem_memory(pb, 0), 1.0, -0.5, -0.5);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_memory_unknown_keys)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"memory\": {\"limt\": 4}}", PS_ECONFIG,
                   "$.memory.limt: unknown key (did you mean \"limit\"?)");
    ck_assert_load(pb, "{\"memory\": {\"F\": 1}}", PS_ECONFIG,
                   "$.memory.F: unknown key (did you mean \"f\"?)");
    ck_assert_load(pb, "{\"memory\": {\"x\": 1}}", PS_ECONFIG,
                   "$.memory.x: unknown key. Known keys of $.memory: f, b, w, limit");
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0, \"mem\": 1}]}",
                   PS_ECONFIG,
                   "$.stage_memory[0].mem: unknown key. Known keys of $.stage_memory[i]: f, b, w");
    ck_assert_load(pb, "{\"memroy\": {}, \"Stage_Memory\": []}", PS_ECONFIG,
                   "2 unknown keys: $.memroy (did you mean \"memory\"?), $.Stage_Memory (did you "
                   "mean \"stage_memory\"?)");
    /* Unknown keys do not hide a sum error next to them, nor the reverse. */
    ck_assert_load(pb, "{\"memory\": {\"f\": 2, \"limt\": 3}}", PS_ECONFIG,
                   "2 errors: $.memory.limt: unknown key (did you mean \"limit\"?); $.memory: "
                   "f + b + w must be 0, got f = 2, b = -0.5, w = -0.5, sum 1 (b and w are the "
                   "current values)");
    /* A duplicate: reported once, without a sum check on the ambiguous values. */
    ck_assert_load(pb, "{\"memory\": {\"f\": 2, \"b\": -1, \"w\": -1, \"f\": 3}}", PS_ECONFIG,
                   "$.memory.f: duplicate key");
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0, \"w\": 1}]}",
                   PS_ECONFIG, "$.stage_memory[0].w: duplicate key");
    ck_assert_double_eq(ps_problem_mem_limit(pb), 0.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_stage_memory_errors)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb,
                   "{\"stage_memory\": [{\"f\": 1, \"b\": -0.5, \"w\": -0.5}, "
                   "{\"f\": 2, \"b\": -1, \"w\": 0}]}",
                   PS_ECONFIG,
                   "$.stage_memory[1]: f + b + w must be 0, got f = 2, b = -1, w = 0, sum 1");
    ck_assert_load(pb,
                   "{\"stage_memory\": [{\"f\": 1, \"b\": 1, \"w\": 1}, "
                   "{\"f\": 1, \"b\": -1, \"w\": 0}, {\"f\": -1, \"b\": 0.25, \"w\": 0.5}]}",
                   PS_ECONFIG,
                   "2 errors: $.stage_memory[0]: f + b + w must be 0, got f = 1, b = 1, w = 1, "
                   "sum 3; $.stage_memory[2]: f + b + w must be 0, got f = -1, b = 0.25, "
                   "w = 0.5, sum -0.25");
    /* A missing key is reported, and no sum is checked on the two that are there. */
    ck_assert_load(pb, "{\"stage_memory\": [{\"f\": 1, \"b\": 1}]}", PS_ECONFIG,
                   "$.stage_memory[0].w: required key missing");
    ck_assert_load(pb, "{\"stage_memory\": [{}]}", PS_ECONFIG,
                   "3 errors: $.stage_memory[0].f: required key missing; "
                   "$.stage_memory[0].b: required key missing; "
                   "$.stage_memory[0].w: required key missing");
    ck_mem_eq(ps_problem_memory(pb, 0), 1.0, -0.5, -0.5);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_stage_memory_limit)
{
    counting_alloc cnt = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&cnt);
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, &al), 0);

    /* One entry too many: refused from the length alone, before any allocation. */
    char *text = stage_array("stage_memory", PS_MAX_STAGES + 1, "{}");
    cnt.calls = 0;
    ck_assert_load(pb, text, PS_ECONFIG, "$.stage_memory: 65537 entries is beyond the limit 65536");
    ck_assert_int_eq(cnt.calls, 0);
    free(text);

    text = stage_array("stage_memory", PS_MAX_STAGES, "{\"f\":2,\"b\":-1,\"w\":-1}");
    ck_assert_int_eq(load(pb, text), 0);
    ck_mem_eq(ps_problem_memory(pb, PS_MAX_STAGES - 1), 2.0, -1.0, -1.0);
    ck_mem_eq(ps_problem_memory(pb, PS_MAX_STAGES), 1.0, -0.5, -0.5);
    free(text);
    ps_problem_free(pb);
    ck_assert_int_eq(cnt.live, 0);
    ck_assert_uint_eq(cnt.bytes, 0);
}
END_TEST

/* ---- micro-batch weights -------------------------------------------------------------------- */

START_TEST(config_microbatch_weights)
{
    counting_alloc cnt = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&cnt);
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
    ck_assert_int_eq(load(pb, "{\"microbatches\": 3, \"microbatch_weights\": [1, 2.5, 1e-3]}"), 0);
    const double *w = NULL;
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &w), 3);
    ck_assert_double_eq(w[0], 1);
    ck_assert_double_eq(w[1], 2.5);
    ck_assert_double_eq(w[2], 1e-3);
    /* every bad entry is named; the weights stay as they were */
    ck_assert_load(pb, "{\"microbatch_weights\": [1, 0, \"2\", -1, 2e12, null]}", PS_ECONFIG,
                   "5 errors: $.microbatch_weights[1]: must be > 0, got 0; "
                   "$.microbatch_weights[2]: expected a number, got string \"2\"; "
                   "$.microbatch_weights[3]: must be > 0, got -1; "
                   "$.microbatch_weights[4]: 2000000000000 is beyond the limit 1e+12; "
                   "$.microbatch_weights[5]: expected a number, got null");
    ck_assert_load(pb, "{\"microbatch_weights\": {\"0\": 1}}", PS_ECONFIG,
                   "$.microbatch_weights: expected an array, got an object");
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &w), 3);
    ck_assert_double_eq(w[1], 2.5);
    /* a failing load elsewhere keeps them too; an empty array removes them */
    ck_assert_int_eq(load(pb, "{\"microbatch_weights\": [4, 4], \"pp\": 0}"), PS_ECONFIG);
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &w), 3);
    ck_assert_int_eq(load(pb, "{\"microbatch_weights\": []}"), 0);
    ck_assert_uint_eq(ps_problem_microbatch_weights(pb, NULL), 0);
    /* beyond the limit: refused from the length alone, before any allocation */
    char *text = malloc((size_t)PS_MAX_MICROBATCHES * 2 + 64);
    ck_assert_ptr_nonnull(text);
    char *at = text + sprintf(text, "{\"microbatch_weights\": [");
    for (long i = 0; i <= PS_MAX_MICROBATCHES; i++)
        at += sprintf(at, i ? ",1" : "1");
    sprintf(at, "]}");
    cnt.calls = 0;
    ck_assert_load(pb, text, PS_ECONFIG,
                   "$.microbatch_weights: 1048577 entries is beyond the limit 1048576");
    ck_assert_int_eq(cnt.calls, 0);
    free(text);
    ps_problem_free(pb);
    ck_assert_int_eq(cnt.live, 0);
    ck_assert_uint_eq(cnt.bytes, 0);
}
END_TEST

/* Each allocation of a load with weights and stage costs fails in turn: the load reports it
 * and the problem keeps its weights. */
START_TEST(config_microbatch_weights_allocation_failure)
{
    static const char text[] = "{\"stage_costs\": [{\"f\": 1, \"b\": 2, \"w\": 3}],\n"
                               " \"microbatch_weights\": [0.5, 1.5]}";
    long n;
    for (n = 1; n < 100; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb = NULL;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        static const double one[1] = {3};
        ck_assert_int_eq(ps_problem_set_microbatch_weights(pb, one, 1), 0);
        cnt.calls = 0;
        cnt.fail_at = n;
        int rc = load(pb, text);
        cnt.fail_at = 0;
        const double *w = NULL;
        if (rc == 0) {
            ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &w), 2);
            ck_assert_double_eq(w[1], 1.5);
            ps_problem_free(pb);
            ck_assert_int_eq(cnt.live, 0);
            break;
        }
        ck_assert_int_eq(rc, PS_ENOMEM);
        ck_assert_uint_eq(ps_problem_microbatch_weights(pb, &w), 1);
        ck_assert_double_eq(w[0], 3);
        ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 0);
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
    }
    ck_assert_int_gt(n, 2);
    ck_assert_int_lt(n, 100);
}
END_TEST

/* ---- adaptive parameters ----------------------------------------------------------------------
 */

START_TEST(config_adaptive_params)
{
    ps_problem *pb = new_problem();
    /* The defaults: -1 (the family's 1) and off. */
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), -1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 0);
    ck_assert_int_eq(load(pb, "{\"extra_warmup\": 2, \"split_backward\": true}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), 2);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 1);
    /* Absent keys keep their values. */
    ck_assert_int_eq(load(pb, "{\"pp\": 2}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), 2);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 1);
    ck_assert_int_eq(load(pb, "{\"extra_warmup\": 0, \"split_backward\": false}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 0);
    ck_assert_int_eq(load(pb, "{\"extra_warmup\": 1048576}"), 0);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), 1048576);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_adaptive_params_errors)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"extra_warmup\": -1}", PS_ECONFIG,
                   "$.extra_warmup: must be >= 0, got -1");
    ck_assert_load(pb, "{\"extra_warmup\": 1048577}", PS_ECONFIG,
                   "$.extra_warmup: 1048577 is beyond the limit 1048576");
    ck_assert_load(pb, "{\"extra_warmup\": 1.5}", PS_ECONFIG,
                   "$.extra_warmup: expected an integer, got 1.5");
    ck_assert_load(pb, "{\"extra_warmup\": true}", PS_ECONFIG,
                   "$.extra_warmup: expected an integer, got boolean true");
    ck_assert_load(pb, "{\"split_backward\": 1}", PS_ECONFIG,
                   "$.split_backward: expected a boolean, got number 1");
    ck_assert_load(pb, "{\"split_backward\": \"true\"}", PS_ECONFIG,
                   "$.split_backward: expected a boolean, got string \"true\"");
    ck_assert_load(pb, "{\"split_backward\": null}", PS_ECONFIG,
                   "$.split_backward: expected a boolean, got null");
    ck_assert_load(pb, "{\"extra-warmup\": 1, \"splitbackward\": true}", PS_ECONFIG,
                   "2 unknown keys: $.extra-warmup (did you mean \"extra_warmup\"?), "
                   "$.splitbackward (did you mean \"split_backward\"?)");
    ck_assert_load(pb, "{\"split_backward\": true, \"split_backward\": false}", PS_ECONFIG,
                   "$.split_backward: duplicate key");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_EXTRA_WARMUP), -1);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 0);
    ps_problem_free(pb);
}
END_TEST

/* ---- MoE model given as durations ------------------------------------------------------------ */

/* The operation keys of a layer, written out (ps_op order) rather than taken from ps_op_name(). */
static const char *const op_keys[PS_OP_LAYER_COUNT] = {
    "attn",   "dispatch",   "mlp",     "shared", "combine",   "combine_b", "shared_dx",
    "mlp_dx", "dispatch_b", "attn_dx", "mlp_dw", "shared_dw", "attn_dw",   "redispatch"};

static const char known_layer[] =
    "attn, dispatch, mlp, shared, combine, combine_b, shared_dx, mlp_dx, dispatch_b, attn_dx, "
    "mlp_dw, shared_dw, attn_dw, redispatch";

/* A model and a cluster with every required key, for the tests of the other keys. */
#define MODEL_JSON                                                                                 \
    "\"model\": {\"layers\": 4, \"hidden\": 1024, \"tokens\": 512, \"experts\": 8, \"top_k\": "    \
    "4, \"expert_ffn\": 256}"
#define CLUSTER_JSON                                                                               \
    "\"cluster\": {\"devices_per_node\": 4, \"nodes\": 2, \"bw_intra\": 100, \"bw_inter\": 25, "   \
    "\"tflops\": 100, \"efficiency\": 0.5}"

START_TEST(config_moe_direct)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ck_assert_int_eq(
        load(pb, "{\"moe\": {\"layers\": 6, \"dense_layers\": 2,\n"
                 "  \"layer\": {\"attn\": 1.5, \"dispatch\": 0.75, \"mlp\": 2, \"combine\": 0.5, "
                 "\"mlp_dw\": 0.25},\n"
                 "  \"dense_layer\": {\"attn\": 1.25, \"mlp\": 3, \"dispatch\": 0},\n"
                 "  \"p2p\": 0.125, \"slowdown\": 0.5, \"planner\": \"mindspeed\",\n"
                 "  \"stage_layers\": [2, 0, 3, 1]}}"),
        0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_int_eq(m.layers, 6);
    ck_assert_int_eq(m.dense_layers, 2);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        double want = 0.0, want_dense = 0.0;
        switch (k) {
        case PS_OP_ATTN:
            want = 1.5;
            want_dense = 1.25;
            break;
        case PS_OP_DISPATCH:
            want = 0.75;
            break;
        case PS_OP_MLP:
            want = 2.0;
            want_dense = 3.0;
            break;
        case PS_OP_COMBINE:
            want = 0.5;
            break;
        case PS_OP_MLP_DW:
            want = 0.25;
            break;
        }
        ck_assert_double_eq(m.moe.t[k], want);
        ck_assert_double_eq(m.dense.t[k], want_dense);
    }
    ck_assert_double_eq(m.p2p, 0.125);
    ck_assert_double_eq(m.slowdown, 0.5);
    ck_assert_int_eq(m.planner, PS_PLANNER_MINDSPEED);
    /* Durations given directly have no all-to-all estimate. */
    ps_a2a_info info;
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), PS_ENOTFOUND);
    ck_assert_uint_eq(pb->n_stage_layers, 4);
    ck_assert_int_eq(pb->stage_layers[0], 2);
    ck_assert_int_eq(pb->stage_layers[1], 0);
    ck_assert_int_eq(pb->stage_layers[2], 3);
    ck_assert_int_eq(pb->stage_layers[3], 1);
    /* Nothing else moved. */
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 4);
    ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 1.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_direct_defaults)
{
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    /* Operations not given are 0; no dense layers, the adaptive planner, no p2p, no slowdown. */
    ck_assert_int_eq(load(pb, "{\"moe\": {\"layers\": 3, \"layer\": {}}}"), 0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_int_eq(m.layers, 3);
    ck_assert_int_eq(m.dense_layers, 0);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        ck_assert_double_eq(m.moe.t[k], 0.0);
        ck_assert_double_eq(m.dense.t[k], 0.0);
    }
    ck_assert_double_eq(m.p2p, 0.0);
    ck_assert_double_eq(m.slowdown, 0.0);
    ck_assert_int_eq(m.planner, PS_PLANNER_ADAPTIVE);
    /* The model is replaced as a whole: the layers per stage set before are gone. */
    ck_assert_uint_eq(pb->n_stage_layers, 0);
    /* The rest of the problem is as before. */
    snapshot after = take(pb);
    before.moe = after.moe;
    before.n_stage_layers = 0;
    ck_same(&before, &after);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_every_op)
{
    /* Every operation name is a key of "layer", and every compute one of "dense_layer". */
    char text[2048];
    size_t n = (size_t)snprintf(text, sizeof text,
                                "{\"moe\": {\"layers\": 2, \"dense_layers\": 1, \"layer\": {");
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"%s\": %d", k ? ", " : "", op_keys[k],
                              k + 1);
    n += (size_t)snprintf(text + n, sizeof text - n, "}, \"dense_layer\": {");
    bool first = true;
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        if (k == PS_OP_DISPATCH || k == PS_OP_COMBINE || k == PS_OP_COMBINE_B ||
            k == PS_OP_DISPATCH_B || k == PS_OP_REDISPATCH)
            continue;
        n += (size_t)snprintf(text + n, sizeof text - n, "%s\"%s\": %d", first ? "" : ", ",
                              op_keys[k], 100 + k);
        first = false;
    }
    snprintf(text + n, sizeof text - n, "}}}");
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, text), 0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
        ck_assert_str_eq(ps_op_name(k), op_keys[k]);
        ck_assert_double_eq(m.moe.t[k], k + 1);
        ck_assert_double_eq(m.dense.t[k], ps_op_is_comm(k) ? 0.0 : 100.0 + k);
    }
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_planners)
{
    static const struct {
        const char *name;
        int planner;
    } cases[] = {{"adaptive", PS_PLANNER_ADAPTIVE},
                 {"mindspeed", PS_PLANNER_MINDSPEED},
                 {"megatron", PS_PLANNER_MEGATRON},
                 {"serial", PS_PLANNER_SERIAL}};
    ps_problem *pb = new_problem();
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[128];
        snprintf(text, sizeof text,
                 "{\"moe\": {\"layers\": 1, \"layer\": {}, \"planner\": \"%s\"}}", cases[i].name);
        ck_assert_int_eq(load(pb, text), 0);
        ps_moe_model m;
        ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
        ck_assert_int_eq(m.planner, cases[i].planner);
    }
    ck_assert_load(pb, "{\"moe\": {\"layers\": 1, \"layer\": {}, \"planner\": \"megatorn\"}}",
                   PS_ECONFIG,
                   "$.moe.planner: unknown value \"megatorn\" (did you mean \"megatron\"? known: "
                   "adaptive, mindspeed, megatron, serial)");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 1, \"layer\": {}, \"planner\": \"greedy\"}}",
                   PS_ECONFIG,
                   "$.moe.planner: unknown value \"greedy\" (known: adaptive, mindspeed, megatron, "
                   "serial)");
    /* Values are case-sensitive, like keys; a case slip gets a suggestion. */
    ck_assert_load(pb, "{\"moe\": {\"layers\": 1, \"layer\": {}, \"planner\": \"Serial\"}}",
                   PS_ECONFIG,
                   "$.moe.planner: unknown value \"Serial\" (did you mean \"serial\"? known: "
                   "adaptive, mindspeed, megatron, serial)");
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_kept_or_replaced)
{
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    /* A config without MoE blocks keeps the model and its layers per stage. */
    ck_assert_int_eq(load(pb, "{\"pp\": 2, \"costs\": {\"f\": 2}}"), 0);
    snapshot after = take(pb);
    ck_same(&before, &after);
    /* An empty "stage_layers" asks for the even split. */
    ck_assert_int_eq(load(pb, "{\"moe\": {\"layers\": 5, \"layer\": {\"attn\": 1}, "
                              "\"stage_layers\": []}}"),
                     0);
    ck_assert_uint_eq(pb->n_stage_layers, 0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_double_eq(m.moe.t[PS_OP_ATTN], 1.0);
    ck_assert_double_eq(m.moe.t[PS_OP_MLP], 0.0); /* not kept from the earlier model */
    ck_assert_int_eq(m.planner, PS_PLANNER_ADAPTIVE);
    ps_problem_free(pb);
}
END_TEST

/* ---- MoE: unknown keys, types, ranges ----------------------------------------------------------
 */

START_TEST(config_moe_unknown_keys)
{
    ps_problem *pb = new_problem();
    char want[1024];
    ck_assert_load(
        pb,
        "{\"model\": {\"layers\": 4, \"hiden\": 1024, \"hidden\": 1024, \"tokens\": 512, "
        "\"experts\": 8, \"top_k\": 4, \"expert_ffn\": 256}, " CLUSTER_JSON "}",
        PS_ECONFIG, "$.model.hiden: unknown key (did you mean \"hidden\"?)");
    ck_assert_load(pb,
                   "{\"model\": {\"layers\": 4, \"hidden\": 1024, \"tokens\": 512, \"experts\": 8, "
                   "\"top_k\": 4, \"expert_ffn\": 256, \"num_layers\": 4}, " CLUSTER_JSON "}",
                   PS_ECONFIG,
                   "$.model.num_layers: unknown key. Known keys of $.model: layers, dense_layers, "
                   "hidden, tokens, seq_len, experts, top_k, expert_ffn, shared_experts, "
                   "shared_ffn, dense_ffn, attn_flops, heads_dim, bytes, permute_recompute");
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 4, \"nodes\": 2, "
                   "\"bw_intra\": 100, \"bw_inter\": 25, \"tflops\": 100, \"efficiency\": 0.5, "
                   "\"efficency\": 0.5, \"latency\": 3}}",
                   PS_ECONFIG,
                   "2 unknown keys: $.cluster.efficency (did you mean \"efficiency\"?), "
                   "$.cluster.latency. Known keys of $.cluster: devices_per_node, nodes, "
                   "bw_intra, bw_inter, lat_intra, lat_inter, tflops, efficiency, slowdown");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"palnner\": \"serial\"}}",
                   PS_ECONFIG, "$.moe.palnner: unknown key (did you mean \"planner\"?)");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"alltoall\": \"flat\"}}",
                   PS_ECONFIG,
                   "$.moe.alltoall: unknown key. Known keys of $.moe: a2a, planner, p2p, "
                   "slowdown, layers, dense_layers, stage_layers, layer, dense_layer");
    snprintf(want, sizeof want,
             "2 unknown keys: $.moe.layer.dispatc (did you mean \"dispatch\"?), "
             "$.moe.layer.p2p. Known keys of $.moe.layer: %s",
             known_layer);
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {\"dispatc\": 1, \"p2p\": 1}}}",
                   PS_ECONFIG, want);
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"dense_layer\": {\"Attn\": 1}}}",
                   PS_ECONFIG, "$.moe.dense_layer.Attn: unknown key (did you mean \"attn\"?)");
    snprintf(want, sizeof want,
             "$.moe.dense_layer.mlp_dgrad: unknown key. Known keys of "
             "$.moe.dense_layer: %s",
             known_layer);
    ck_assert_load(pb,
                   "{\"moe\": {\"layers\": 2, \"layer\": {}, \"dense_layer\": {\"mlp_dgrad\": 1}}}",
                   PS_ECONFIG, want);
    /* Unknown root keys close to the new ones. */
    ck_assert_load(pb, "{\"modle\": {}, \"clusters\": {}, \"MoE\": {}}", PS_ECONFIG,
                   "3 unknown keys: $.modle (did you mean \"model\"?), $.clusters (did you mean "
                   "\"cluster\"?), $.MoE (did you mean \"moe\"?)");
    /* Duplicates in each block. */
    ck_assert_load(
        pb, "{\"moe\": {\"layers\": 2, \"layers\": 3, \"layer\": {\"mlp\": 1, \"mlp\": 2}}}",
        PS_ECONFIG, "2 errors: $.moe.layers: duplicate key; $.moe.layer.mlp: duplicate key");
    /* A duplicate is reported even when the first of the two was bad. */
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {\"mlp\": -1, \"mlp\": 2}}}",
                   PS_ECONFIG,
                   "2 errors: $.moe.layer.mlp: must be >= 0, got -1; $.moe.layer.mlp: duplicate "
                   "key");
    ck_assert_load(
        pb,
        "{\"model\": {\"layers\": 4, \"hidden\": 1024, \"hidden\": 1024, \"tokens\": 512, "
        "\"experts\": 8, \"top_k\": 4, \"expert_ffn\": 256}, " CLUSTER_JSON "}",
        PS_ECONFIG, "$.model.hidden: duplicate key");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_wrong_types)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"model\": 5, " CLUSTER_JSON "}", PS_ECONFIG,
                   "$.model: expected an object, got number 5");
    ck_assert_load(pb, "{" MODEL_JSON ", \"cluster\": [1]}", PS_ECONFIG,
                   "$.cluster: expected an object, got an array");
    ck_assert_load(pb, "{\"moe\": [1]}", PS_ECONFIG, "$.moe: expected an object, got an array");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": []}}", PS_ECONFIG,
                   "$.moe.layer: expected an object, got an array");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"dense_layer\": 0}}", PS_ECONFIG,
                   "$.moe.dense_layer: expected an object, got number 0");
    ck_assert_load(pb, "{\"moe\": {\"layers\": \"2\", \"layer\": {}}}", PS_ECONFIG,
                   "$.moe.layers: expected an integer, got string \"2\"");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"dense_layers\": 0.5, \"layer\": {}}}",
                   PS_ECONFIG, "$.moe.dense_layers: expected an integer, got 0.5");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {\"mlp\": \"1\"}}}", PS_ECONFIG,
                   "$.moe.layer.mlp: expected a number, got string \"1\"");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"planner\": 1}}", PS_ECONFIG,
                   "$.moe.planner: expected a string, got number 1");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"p2p\": \"0.1\"}}", PS_ECONFIG,
                   "$.moe.p2p: expected a number, got string \"0.1\"");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"slowdown\": false}}", PS_ECONFIG,
                   "$.moe.slowdown: expected a number, got boolean false");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"stage_layers\": {}}}",
                   PS_ECONFIG, "$.moe.stage_layers: expected an array, got an object");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"stage_layers\": [1, \"1\"]}}",
                   PS_ECONFIG, "$.moe.stage_layers[1]: expected an integer, got string \"1\"");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"stage_layers\": [1.5, 0.5]}}",
                   PS_ECONFIG,
                   "2 errors: $.moe.stage_layers[0]: expected an integer, got 1.5; "
                   "$.moe.stage_layers[1]: expected an integer, got 0.5");
    ck_assert_load(
        pb,
        "{\"model\": {\"layers\": 4, \"hidden\": \"1024\", \"tokens\": 512, \"experts\": "
        "8, \"top_k\": 4, \"expert_ffn\": 256}, " CLUSTER_JSON "}",
        PS_ECONFIG, "$.model.hidden: expected a number, got string \"1024\"");
    ck_assert_load(pb,
                   "{\"model\": {\"layers\": 4.5, \"hidden\": 1024, \"tokens\": 512, \"experts\": "
                   "8, \"top_k\": 4, \"expert_ffn\": 256, \"permute_recompute\": 1}, " CLUSTER_JSON
                   "}",
                   PS_ECONFIG,
                   "2 errors: $.model.layers: expected an integer, got 4.5; "
                   "$.model.permute_recompute: expected a boolean, got number 1");
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 4, \"nodes\": 2.5, "
                   "\"bw_intra\": 100, \"bw_inter\": 25, \"tflops\": 100, \"efficiency\": 0.5, "
                   "\"slowdown\": null}}",
                   PS_ECONFIG,
                   "2 errors: $.cluster.nodes: expected an integer, got 2.5; "
                   "$.cluster.slowdown: expected a number, got null");
    ck_assert_load(pb, "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"a2a\": true}}", PS_ECONFIG,
                   "$.moe.a2a: expected a string, got boolean true");
    ck_assert_load(pb, "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"a2a\": \"hierarchial\"}}",
                   PS_ECONFIG,
                   "$.moe.a2a: unknown value \"hierarchial\" (did you mean \"hierarchical\"? "
                   "known: auto, flat, hierarchical)");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

/* Loads {"model": {<model>}, "cluster": {<cluster>}} with the required keys of MODEL_JSON and
 * CLUSTER_JSON, extra keys added to one block, expecting exactly msg. */
static void ck_model_error(ps_problem *pb, const char *model_extra, const char *cluster_extra,
                           const char *msg)
{
    char text[1024];
    snprintf(text, sizeof text,
             "{\"model\": {\"layers\": 4, \"hidden\": 1024, \"tokens\": 512, \"experts\": 8, "
             "\"top_k\": 4, \"expert_ffn\": 256%s%s}, \"cluster\": {\"devices_per_node\": 4, "
             "\"nodes\": 2, \"bw_intra\": 100, \"bw_inter\": 25, \"tflops\": 100, "
             "\"efficiency\": 0.5%s%s}}",
             model_extra ? ", " : "", model_extra ? model_extra : "", cluster_extra ? ", " : "",
             cluster_extra ? cluster_extra : "");
    ck_assert_load(pb, text, PS_ECONFIG, msg);
}

START_TEST(config_moe_model_ranges)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb,
                   "{\"model\": {\"layers\": 0, \"hidden\": 0, \"tokens\": -1, \"experts\": 0.5, "
                   "\"top_k\": 0, \"expert_ffn\": 0}, " CLUSTER_JSON "}",
                   PS_ECONFIG,
                   "6 errors: $.model.layers: must be >= 1, got 0; $.model.hidden: must be > 0, "
                   "got 0; $.model.tokens: must be > 0, got -1; $.model.experts: must be >= 1, "
                   "got 0.5; $.model.top_k: must be >= 1, got 0; $.model.expert_ffn: must be > "
                   "0, got 0");
    ck_assert_load(pb,
                   "{\"model\": {\"layers\": 65537, \"hidden\": 1e13, \"tokens\": 1e400, "
                   "\"experts\": 8, \"top_k\": 9, \"expert_ffn\": 256}, " CLUSTER_JSON "}",
                   PS_ECONFIG,
                   "4 errors: $.model.layers: 65537 is beyond the limit 65536; $.model.hidden: "
                   "10000000000000 is beyond the limit 1e+12; $.model.tokens: expected a finite "
                   "number, got a number beyond the range of a double; $.model.top_k: must be <= "
                   "$.model.experts (8), got 9");
    ck_model_error(pb, "\"dense_layers\": 5, \"dense_ffn\": 512", NULL,
                   "$.model.dense_layers: must be <= $.model.layers (4), got 5");
    ck_model_error(pb, "\"dense_layers\": -1", NULL, "$.model.dense_layers: must be >= 0, got -1");
    ck_model_error(pb, "\"seq_len\": -1, \"shared_experts\": -2, \"bytes\": 65", NULL,
                   "3 errors: $.model.seq_len: must be >= 0, got -1; $.model.shared_experts: "
                   "must be >= 0, got -2; $.model.bytes: 65 is beyond the limit 64");
    ck_model_error(pb, "\"shared_ffn\": -1, \"attn_flops\": -1, \"heads_dim\": 2e12", NULL,
                   "3 errors: $.model.shared_ffn: must be >= 0, got -1; $.model.attn_flops: "
                   "must be >= 0, got -1; $.model.heads_dim: 2000000000000 is beyond the limit "
                   "1e+12");
    ck_model_error(pb, "\"dense_ffn\": -4096", NULL, "$.model.dense_ffn: must be >= 0, got -4096");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_cluster_ranges)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 0, \"nodes\": 2000000, "
                   "\"bw_intra\": -1, \"bw_inter\": 25, \"tflops\": 0, \"efficiency\": 1.5}}",
                   PS_ECONFIG,
                   "5 errors: $.cluster.devices_per_node: must be >= 1, got 0; $.cluster.nodes: "
                   "2000000 is beyond the limit 1000000; $.cluster.bw_intra: must be >= 0, got "
                   "-1; $.cluster.tflops: must be > 0, got 0; $.cluster.efficiency: 1.5 is "
                   "beyond the limit 1");
    ck_model_error(pb, NULL, "\"lat_intra\": -5, \"lat_inter\": 2e9, \"slowdown\": 101",
                   "3 errors: $.cluster.lat_intra: must be >= 0, got -5; $.cluster.lat_inter: "
                   "2000000000 is beyond the limit 1e+09; $.cluster.slowdown: 101 is beyond the "
                   "limit 100");
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 4, \"nodes\": 2, "
                   "\"bw_intra\": 100, \"bw_inter\": 25, \"tflops\": 2e9, \"efficiency\": 0}}",
                   PS_ECONFIG,
                   "2 errors: $.cluster.tflops: 2000000000 is beyond the limit 1e+09; "
                   "$.cluster.efficiency: must be > 0, got 0");
    /* A bandwidth of 0 is refused where something travels over it. */
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 4, \"nodes\": 2, "
                   "\"bw_intra\": 0, \"bw_inter\": 0, \"tflops\": 100, \"efficiency\": 0.5}}",
                   PS_ECONFIG,
                   "2 errors: $.cluster.bw_intra: must be > 0 when $.cluster.devices_per_node > "
                   "1, got 0; $.cluster.bw_inter: must be > 0 when $.cluster.nodes > 1, got 0");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_duration_ranges)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb,
                   "{\"moe\": {\"layers\": 2, \"layer\": {\"dispatch\": -1, \"mlp\": 2e12, "
                   "\"attn\": 1e400}}}",
                   PS_ECONFIG,
                   "3 errors: $.moe.layer.dispatch: must be >= 0, got -1; $.moe.layer.mlp: "
                   "2000000000000 is beyond the limit 1e+12; $.moe.layer.attn: expected a finite "
                   "number, got a number beyond the range of a double");
    /* A dense layer has no all-to-all: its communication entries may only be 0. */
    ck_assert_load(pb,
                   "{\"moe\": {\"layers\": 2, \"layer\": {}, \"dense_layer\": {\"combine\": 1, "
                   "\"redispatch\": 0.5, \"dispatch\": 0}}}",
                   PS_ECONFIG,
                   "2 errors: $.moe.dense_layer.combine: must be 0 (a dense layer has no "
                   "all-to-all), got 1; $.moe.dense_layer.redispatch: must be 0 (a dense layer "
                   "has no all-to-all), got 0.5");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"p2p\": -1, \"slowdown\": 101}}",
                   PS_ECONFIG,
                   "2 errors: $.moe.p2p: must be >= 0, got -1; $.moe.slowdown: 101 is beyond the "
                   "limit 100");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 0, \"layer\": {}}}", PS_ECONFIG,
                   "$.moe.layers: must be >= 1, got 0");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 65537, \"layer\": {}}}", PS_ECONFIG,
                   "$.moe.layers: 65537 is beyond the limit 65536");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"dense_layers\": 3, \"layer\": {}}}", PS_ECONFIG,
                   "$.moe.dense_layers: must be <= $.moe.layers (2), got 3");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"dense_layers\": -1, \"layer\": {}}}",
                   PS_ECONFIG, "$.moe.dense_layers: must be >= 0, got -1");
    /* The bounds are inclusive. */
    ck_assert_int_eq(load(pb, "{\"moe\": {\"layers\": 65536, \"dense_layers\": 65536, \"layer\": "
                              "{\"mlp\": 1e12, \"attn\": 0}, \"p2p\": 1e12, \"slowdown\": 100}}"),
                     0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_int_eq(m.layers, 65536);
    ck_assert_int_eq(m.dense_layers, 65536);
    ck_assert_double_eq(m.moe.t[PS_OP_MLP], 1e12);
    ck_assert_double_eq(m.p2p, 1e12);
    ck_assert_double_eq(m.slowdown, 100.0);
    ps_problem_free(pb);
}
END_TEST

/* ---- MoE: required keys and the rules between blocks --------------------------------------- */

START_TEST(config_moe_model_needs_cluster)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{" MODEL_JSON "}", PS_ECONFIG,
                   "$.cluster: required key missing (\"model\" is given, and the durations are "
                   "derived from both)");
    ck_assert_load(pb, "{" CLUSTER_JSON "}", PS_ECONFIG,
                   "$.model: required key missing (\"cluster\" is given, and the durations are "
                   "derived from both)");
    /* With "moe": still not enough; and "moe.layers" belongs to the model then. */
    ck_assert_load(pb,
                   "{" MODEL_JSON ", \"moe\": {\"layers\": 4, \"dense_layers\": 0, \"layer\": "
                   "{}}}",
                   PS_ECONFIG,
                   "3 errors: $.cluster: required key missing (\"model\" is given, and the "
                   "durations are derived from both); $.moe.layers: not allowed with \"model\" "
                   "(the layer count is $.model.layers); $.moe.dense_layers: not allowed with "
                   "\"model\" (the dense layer count is $.model.dense_layers)");
    /* The blocks may come in any order: the rules between them are checked after all. */
    ck_assert_load(pb, "{\"moe\": {\"layers\": 4}, " MODEL_JSON "}", PS_ECONFIG,
                   "2 errors: $.cluster: required key missing (\"model\" is given, and the "
                   "durations are derived from both); $.moe.layers: not allowed with \"model\" "
                   "(the layer count is $.model.layers)");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_required_keys)
{
    ps_problem *pb = new_problem();
    ck_assert_load(pb, "{\"model\": {}, " CLUSTER_JSON "}", PS_ECONFIG,
                   "6 errors: $.model.layers: required key missing; $.model.hidden: required key "
                   "missing; $.model.tokens: required key missing; $.model.experts: required key "
                   "missing; $.model.top_k: required key missing; $.model.expert_ffn: required "
                   "key missing");
    ck_assert_load(pb, "{" MODEL_JSON ", \"cluster\": {\"lat_intra\": 1}}", PS_ECONFIG,
                   "6 errors: $.cluster.devices_per_node: required key missing; $.cluster.nodes: "
                   "required key missing; $.cluster.bw_intra: required key missing; "
                   "$.cluster.bw_inter: required key missing; $.cluster.tflops: required key "
                   "missing; $.cluster.efficiency: required key missing");
    /* Dense layers need their FFN size. */
    ck_model_error(pb, "\"dense_layers\": 3", NULL,
                   "$.model.dense_ffn: required key missing (the model has 3 dense layers)");
    ck_model_error(pb, "\"dense_layers\": 3, \"dense_ffn\": 0", NULL,
                   "$.model.dense_ffn: must be > 0 when $.model.dense_layers > 0, got 0");
    /* Without "model", "moe" gives the durations and the layer count. */
    ck_assert_load(pb, "{\"moe\": {}}", PS_ECONFIG,
                   "2 errors: $.moe.layer: required key missing (without \"model\" and "
                   "\"cluster\", the durations are given here); $.moe.layers: required key "
                   "missing (without \"model\", the layer count is given here)");
    ck_assert_load(pb, "{\"moe\": {\"layer\": {\"mlp\": 1}}}", PS_ECONFIG,
                   "$.moe.layers: required key missing (without \"model\", the layer count is "
                   "given here)");
    /* ... and an all-to-all choice has nothing to choose for. */
    ck_assert_load(pb, "{\"moe\": {\"layers\": 2, \"layer\": {}, \"a2a\": \"flat\"}}", PS_ECONFIG,
                   "$.moe.a2a: applies only to durations derived from \"model\" and \"cluster\"");
    ck_assert_int_eq(ps_problem_get_moe(pb, &(ps_moe_model){0}), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

/* ---- MoE: layers per stage ------------------------------------------------------------------- */

/* {"moe": {"layers": layers, "layer": {}, "stage_layers": [first, 0, 0, ...]}} with n entries.
 * Caller frees. */
static char *stage_layers_text(long layers, size_t n, long first)
{
    char *text = malloc(96 + n * 3);
    ck_assert_ptr_nonnull(text);
    size_t used = (size_t)sprintf(text,
                                  "{\"moe\": {\"layers\": %ld, \"layer\": {}, "
                                  "\"stage_layers\": [%ld",
                                  layers, first);
    for (size_t i = 1; i < n; i++) {
        memcpy(text + used, ",0", 2);
        used += 2;
    }
    strcpy(text + used, "]}}");
    return text;
}

START_TEST(config_moe_stage_layers)
{
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    ck_assert_load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}, \"stage_layers\": [1, 1, 1]}}",
                   PS_ECONFIG,
                   "$.moe.stage_layers: the entries sum to 3, but the model has 4 layers");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}, \"stage_layers\": [-1, 5]}}",
                   PS_ECONFIG, "$.moe.stage_layers[0]: must be >= 0, got -1");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}, \"stage_layers\": [65537]}}",
                   PS_ECONFIG, "$.moe.stage_layers[0]: 65537 is beyond the limit 65536");
    ck_assert_load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}, \"stage_layers\": [null, 4]}}",
                   PS_ECONFIG, "$.moe.stage_layers[0]: expected an integer, got null");
    /* The sum is checked against the model's layers when they come from "model" too. */
    ck_assert_load(pb, "{" MODEL_JSON ", \"moe\": {\"stage_layers\": [2, 3]}}", PS_ECONFIG,
                   "2 errors: $.cluster: required key missing (\"model\" is given, and the "
                   "durations are derived from both); $.moe.stage_layers: the entries sum to 5, "
                   "but the model has 4 layers");
    snapshot after = take(pb);
    ck_same(&before, &after);
    /* Empty stages are allowed. */
    ck_assert_int_eq(
        load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}, \"stage_layers\": [0, 4, 0]}}"), 0);
    ck_assert_uint_eq(pb->n_stage_layers, 3);
    ck_assert_int_eq(pb->stage_layers[0], 0);
    ck_assert_int_eq(pb->stage_layers[1], 4);
    ck_assert_int_eq(pb->stage_layers[2], 0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_stage_layers_limit)
{
    counting_alloc cnt = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&cnt);
    ps_problem *pb = NULL;
    ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
    /* One entry too many: refused from the length alone, before any allocation. */
    char *text = stage_layers_text(1, PS_MAX_STAGES + 1, 1);
    cnt.calls = 0;
    ck_assert_load(pb, text, PS_ECONFIG,
                   "$.moe.stage_layers: 65537 entries is beyond the limit 65536");
    ck_assert_int_eq(cnt.calls, 0);
    free(text);
    text = stage_layers_text(1, PS_MAX_STAGES, 1);
    ck_assert_int_eq(load(pb, text), 0);
    ck_assert_uint_eq(pb->n_stage_layers, PS_MAX_STAGES);
    ck_assert_int_eq(pb->stage_layers[0], 1);
    ck_assert_int_eq(pb->stage_layers[PS_MAX_STAGES - 1], 0);
    free(text);
    ps_problem_free(pb);
    ck_assert_int_eq(cnt.live, 0);
    ck_assert_uint_eq(cnt.bytes, 0);
}
END_TEST

/* ---- MoE: atomicity ----------------------------------------------------------------------------
 */

START_TEST(config_moe_failure_keeps_model)
{
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    static const char *const failing[] = {
        /* a valid MoE model next to an unknown root key */
        "{\"moe\": {\"layers\": 4, \"layer\": {\"mlp\": 9}, \"stage_layers\": [4]}, \"foo\": 1}",
        /* a valid MoE model next to a bad stage cost */
        "{\"moe\": {\"layers\": 4, \"layer\": {\"mlp\": 9}}, \"stage_costs\": [{\"f\": -1, "
        "\"b\": 1, \"w\": 1}]}",
        /* stage layers that do not add up */
        "{\"moe\": {\"layers\": 4, \"layer\": {\"mlp\": 9}, \"stage_layers\": [1, 2]}}",
        /* a bad duration among good ones, with good scalars */
        "{\"pp\": 8, \"extra_warmup\": 0, \"moe\": {\"layers\": 4, \"layer\": {\"mlp\": 9, "
        "\"attn\": -2}}}",
        /* a dense all-to-all */
        "{\"moe\": {\"layers\": 4, \"layer\": {}, \"dense_layer\": {\"dispatch\": 1}}}",
        /* a model without a cluster */
        "{" MODEL_JSON ", \"moe\": {\"planner\": \"serial\"}}",
        /* a parse error after a valid model */
        "{\"moe\": {\"layers\": 4, \"layer\": {}}, }",
    };
    for (size_t i = 0; i < sizeof failing / sizeof *failing; i++) {
        int rc = load(pb, failing[i]);
        ck_assert_msg(rc == PS_ECONFIG || rc == PS_EPARSE, "config %zu: rc %d", i, rc);
        snapshot after = take(pb);
        ck_same(&before, &after);
    }
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_allocation_failure)
{
    /* Three steps allocate; a failure in the last must undo the first two. */
    static const char text[] =
        "{\"pp\": 2, \"split_backward\": true,\n"
        " \"stage_costs\": [{\"f\": 1, \"b\": 2, \"w\": 3}, {\"f\": 4, \"b\": 5, \"w\": 6},\n"
        "                 {\"f\": 7, \"b\": 8, \"w\": 9}],\n"
        " \"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0}, {\"f\": 3, \"b\": -2, \"w\": -1}],\n"
        " \"moe\": {\"layers\": 7, \"layer\": {\"mlp\": 2}, \"stage_layers\": [1, 2, 3, 1]}}";
    long n, failed[3] = {0, 0, 0};
    static const char *const messages[3] = {"$.stage_costs: out of memory for 3 entries",
                                            "$.stage_memory: out of memory for 2 entries",
                                            "$.moe.stage_layers: out of memory for 4 entries"};
    for (n = 1; n < 100; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb = NULL;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        static const ps_stage_cost one = {0.5, 0.5, 0.5};
        static const int32_t five[1] = {5};
        ps_moe_model m = prepared_moe();
        ck_assert_int_eq(ps_problem_set_stage_costs(pb, &one, 1), 0);
        ck_assert_int_eq(ps_problem_set_moe(pb, &m), 0);
        ck_assert_int_eq(ps_problem_set_stage_layers(pb, five, 1), 0);
        snapshot before = take(pb);

        cnt.calls = 0;
        cnt.fail_at = n;
        int rc = load(pb, text);
        cnt.fail_at = 0;
        if (rc == 0) {
            ck_assert_uint_eq(ps_problem_stage_costs(pb, NULL), 3);
            ck_mem_eq(ps_problem_memory(pb, 1), 3.0, -2.0, -1.0);
            ck_assert_uint_eq(pb->n_stage_layers, 4);
            ck_assert_int_eq(pb->stage_layers[2], 3);
            ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
            ck_assert_int_eq(m.layers, 7);
            ck_assert_double_eq(m.moe.t[PS_OP_MLP], 2.0);
            ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_SPLIT_BACKWARD), 1);
            ps_problem_free(pb);
            ck_assert_int_eq(cnt.live, 0);
            ck_assert_uint_eq(cnt.bytes, 0);
            break;
        }
        ck_assert_int_eq(rc, PS_ENOMEM);
        const char *msg = ps_problem_last_error(pb);
        int which = -1;
        for (int i = 0; i < 3; i++)
            if (strcmp(msg, messages[i]) == 0)
                which = i;
        ck_assert_msg(which >= 0, "unexpected message: %s", msg);
        failed[which]++;
        snapshot after = take(pb);
        ck_same(&before, &after);
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
    }
    ck_assert_int_lt(n, 100);
    /* Each step was made to fail, the last after both others had been applied. */
    ck_assert_int_gt(failed[0], 0);
    ck_assert_int_gt(failed[1], 0);
    ck_assert_int_gt(failed[2], 0);
}
END_TEST

/* ---- MoE: durations derived from model and cluster --------------------------------------------
 *
 * These tests need ps_moe_derive() (src/planner/moe.c). They compare the loaded model with a
 * direct call of ps_moe_derive() on the same dimensions (the loader's job is to pass the right
 * dimensions and apply the overrides), and check the all-to-all volumes against DESIGN.md's
 * formulas.
 */

/* The dimensions of MODEL_JSON and CLUSTER_JSON. */
static void base_dims(ps_model_dims *md, ps_cluster *cl)
{
    memset(md, 0, sizeof *md);
    memset(cl, 0, sizeof *cl);
    md->layers = 4;
    md->hidden = 1024;
    md->tokens = 512;
    md->experts = 8;
    md->top_k = 4;
    md->expert_ffn = 256;
    cl->devices_per_node = 4;
    cl->nodes = 2;
    cl->bw_intra = 100;
    cl->bw_inter = 25;
    cl->tflops = 100;
    cl->efficiency = 0.5;
}

static void derive_ok(const ps_model_dims *md, const ps_cluster *cl, int a2a, ps_moe_model *m,
                      ps_a2a_info *info)
{
    char err[512] = "";
    int rc = ps_moe_derive(md, cl, a2a, m, info, err, sizeof err);
    ck_assert_msg(rc == 0, "ps_moe_derive: %d %s", rc, err);
}

START_TEST(config_moe_derived)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{" MODEL_JSON ", " CLUSTER_JSON "}"), 0);
    ps_model_dims md;
    ps_cluster cl;
    base_dims(&md, &cl);
    ps_moe_model want, got;
    ps_a2a_info want_info, info;
    derive_ok(&md, &cl, PS_A2A_AUTO, &want, &want_info);
    ck_assert_int_eq(ps_problem_get_moe(pb, &got), 0);
    ck_moe_eq(&got, &want);
    ck_assert_int_eq(got.layers, 4);
    ck_assert_int_eq(got.dense_layers, 0);
    ck_assert_int_eq(got.planner, PS_PLANNER_ADAPTIVE);
    ck_assert_double_eq(got.p2p, 0.0);
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_a2a_eq(&info, &want_info);
    /* DESIGN.md: flat inter-node bytes S k (N-1)/N H bytes, hierarchical (N-1) S H bytes; here
     * S = 512, k = 4, N = 2, H = 1024 and 2 bytes per element (the default). */
    ck_assert_double_eq(info.flat_inter, 512.0 * 4 * 0.5 * 1024 * 2);
    ck_assert_double_eq(info.hier_inter, 1.0 * 512 * 1024 * 2);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_every_key)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(
        load(pb, "{\"model\": {\"layers\": 6, \"dense_layers\": 2, \"hidden\": 2048, \"tokens\": "
                 "1024, \"seq_len\": 4096, \"experts\": 16, \"top_k\": 6, \"expert_ffn\": 512, "
                 "\"shared_experts\": 2, \"shared_ffn\": 768, \"dense_ffn\": 8192, "
                 "\"attn_flops\": 3e7, \"heads_dim\": 5000, \"bytes\": 1, "
                 "\"permute_recompute\": true},\n"
                 " \"cluster\": {\"devices_per_node\": 8, \"nodes\": 3, \"bw_intra\": 150, "
                 "\"bw_inter\": 40, \"lat_intra\": 7, \"lat_inter\": 15, \"tflops\": 300, "
                 "\"efficiency\": 0.4, \"slowdown\": 0.25}}"),
        0);
    ps_model_dims md = {.hidden = 2048,
                        .tokens = 1024,
                        .seq_len = 4096,
                        .experts = 16,
                        .top_k = 6,
                        .expert_ffn = 512,
                        .shared_experts = 2,
                        .shared_ffn = 768,
                        .dense_ffn = 8192,
                        .attn_flops = 3e7,
                        .heads_dim = 5000,
                        .bytes = 1,
                        .layers = 6,
                        .dense_layers = 2,
                        .permute_recompute = 1};
    ps_cluster cl = {.devices_per_node = 8,
                     .nodes = 3,
                     .bw_intra = 150,
                     .bw_inter = 40,
                     .lat_intra = 7,
                     .lat_inter = 15,
                     .tflops = 300,
                     .efficiency = 0.4,
                     .slowdown = 0.25};
    ps_moe_model want, got;
    ps_a2a_info want_info, info;
    derive_ok(&md, &cl, PS_A2A_AUTO, &want, &want_info);
    ck_assert_int_eq(ps_problem_get_moe(pb, &got), 0);
    ck_moe_eq(&got, &want);
    ck_assert_int_eq(got.layers, 6);
    ck_assert_int_eq(got.dense_layers, 2);
    /* The cluster's slowdown is the model's; permute recomputation adds the re-dispatch. */
    ck_assert_double_eq(got.slowdown, 0.25);
    ck_assert_double_gt(got.moe.t[PS_OP_REDISPATCH], 0.0);
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_a2a_eq(&info, &want_info);
    /* S = 1024, k = 6, N = 3, H = 2048, 1 byte per element. */
    ck_assert_double_eq(info.flat_inter, 1024.0 * 6 * 2 / 3 * 2048 * 1);
    ck_assert_double_eq(info.hier_inter, 2.0 * 1024 * 2048 * 1);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_overrides)
{
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 4, \"nodes\": "
                              "2, \"bw_intra\": 100, \"bw_inter\": 25, \"tflops\": 100, "
                              "\"efficiency\": 0.5, \"slowdown\": 0.3},\n"
                              " \"moe\": {\"layer\": {\"dispatch\": 0.5, \"attn_dw\": 0, "
                              "\"redispatch\": 0.25}, \"dense_layer\": {\"mlp\": 7, "
                              "\"combine\": 0},\n"
                              "         \"p2p\": 0.75, \"slowdown\": 0.125, \"planner\": "
                              "\"serial\", \"stage_layers\": [1, 3]}}"),
                     0);
    ps_model_dims md;
    ps_cluster cl;
    base_dims(&md, &cl);
    cl.slowdown = 0.3;
    ps_moe_model want, got;
    ps_a2a_info want_info, info;
    derive_ok(&md, &cl, PS_A2A_AUTO, &want, &want_info);
    want.moe.t[PS_OP_DISPATCH] = 0.5;
    want.moe.t[PS_OP_ATTN_DW] = 0.0;
    want.moe.t[PS_OP_REDISPATCH] = 0.25;
    want.dense.t[PS_OP_MLP] = 7.0;
    want.p2p = 0.75;
    want.slowdown = 0.125;
    want.planner = PS_PLANNER_SERIAL;
    ck_assert_int_eq(ps_problem_get_moe(pb, &got), 0);
    ck_moe_eq(&got, &want);
    /* The estimate is the derivation's, before the overrides. */
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_a2a_eq(&info, &want_info);
    ck_assert_uint_eq(pb->n_stage_layers, 2);
    ck_assert_int_eq(pb->stage_layers[1], 3);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_a2a_choice)
{
    static const struct {
        const char *name;
        int a2a;
    } cases[] = {
        {"auto", PS_A2A_AUTO}, {"flat", PS_A2A_FLAT}, {"hierarchical", PS_A2A_HIERARCHICAL}};
    ps_problem *pb = new_problem();
    ps_model_dims md;
    ps_cluster cl;
    base_dims(&md, &cl);
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"a2a\": \"%s\"}}", cases[i].name);
        ck_assert_int_eq(load(pb, text), 0);
        ps_moe_model want, got;
        ps_a2a_info want_info, info;
        derive_ok(&md, &cl, cases[i].a2a, &want, &want_info);
        ck_assert_int_eq(ps_problem_get_moe(pb, &got), 0);
        ck_moe_eq(&got, &want);
        ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
        ck_a2a_eq(&info, &want_info);
        /* The chosen algorithm is the one asked for; auto takes the cheaper one. */
        int chosen = cases[i].a2a;
        if (chosen == PS_A2A_AUTO)
            chosen = info.hier_time < info.flat_time ? PS_A2A_HIERARCHICAL : PS_A2A_FLAT;
        ck_assert_int_eq(info.chosen, chosen);
        ck_assert_double_eq(got.moe.t[PS_OP_DISPATCH],
                            chosen == PS_A2A_FLAT ? info.flat_time : info.hier_time);
    }
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_single_node)
{
    /* One node: nothing crosses nodes, so the inter-node bandwidth may be 0. */
    ps_problem *pb = new_problem();
    ck_assert_int_eq(load(pb, "{" MODEL_JSON ", \"cluster\": {\"devices_per_node\": 8, \"nodes\": "
                              "1, \"bw_intra\": 100, \"bw_inter\": 0, \"tflops\": 100, "
                              "\"efficiency\": 1}}"),
                     0);
    ps_a2a_info info;
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_assert_double_eq(info.flat_inter, 0.0);
    ck_assert_double_eq(info.hier_inter, 0.0);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_out_of_range)
{
    /* Dimensions each in range whose durations are not: reported under "$.model", where no key
     * holds the bad value, and nothing is applied. */
    ps_problem *pb = prepared_problem();
    snapshot before = take(pb);
    ck_assert_int_eq(load(pb, "{\"model\": {\"layers\": 4, \"hidden\": 1e6, \"tokens\": 1e6, "
                              "\"experts\": 8, \"top_k\": 4, \"expert_ffn\": 1e6}, \"cluster\": "
                              "{\"devices_per_node\": 4, \"nodes\": 2, \"bw_intra\": 100, "
                              "\"bw_inter\": 25, \"tflops\": 1e-9, \"efficiency\": 1e-9}}"),
                     PS_ECONFIG);
    const char *msg = ps_problem_last_error(pb);
    ck_assert_msg(strstr(msg, "$.model: the derived duration layer.attn is ") != NULL, "%s", msg);
    ck_assert_msg(strstr(msg, ", outside [0, 1e+12]") != NULL, "%s", msg);
    snapshot after = take(pb);
    ck_same(&before, &after);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_moe_derived_failure_keeps_model)
{
    ps_problem *pb = prepared_problem();
    ck_assert_int_eq(load(pb, "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"stage_layers\": "
                              "[2, 2]}}"),
                     0);
    snapshot before = take(pb);
    ck_assert_int_eq(before.a2a_rc, 0);
    /* A derived model next to errors: the earlier model, its estimate and its layers stay. */
    static const char *const failing[] = {
        "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"layer\": {\"dispatch\": -1}}}",
        "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"stage_layers\": [1]}}",
        "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"a2a\": \"ring\"}}",
        "{" MODEL_JSON ", " CLUSTER_JSON ", \"moe\": {\"layers\": 4}}",
        "{" MODEL_JSON ", " CLUSTER_JSON ", \"pp\": 0}",
        "{\"moe\": {\"layers\": 4, \"layer\": {}}, \"costs\": {\"f\": -1}}",
    };
    for (size_t i = 0; i < sizeof failing / sizeof *failing; i++) {
        ck_assert_int_eq(load(pb, failing[i]), PS_ECONFIG);
        snapshot after = take(pb);
        ck_same(&before, &after);
    }
    /* Replacing it by durations drops the estimate. */
    ck_assert_int_eq(load(pb, "{\"moe\": {\"layers\": 4, \"layer\": {}}}"), 0);
    ps_a2a_info info;
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), PS_ENOTFOUND);
    ps_problem_free(pb);
}
END_TEST

/* ---- example configs ---------------------------------------------------------------------------
 */

/* Reads a whole file (the tests run in tests/). Caller frees. */
/*
 * Loads an example config. Its "schedule" is written to family; when the family is not built in
 * (the adaptive and dualpipe families came with the MoE work), the file is loaded without that
 * key, so that the rest of it is still checked.
 */
static int load_example(ps_problem *pb, const char *path, char *family, size_t cap)
{
    size_t len;
    char *text = test_read_file(path, &len);
    cJSON *root = cJSON_ParseWithLength(text, len);
    ck_assert_ptr_nonnull(root);
    const cJSON *sched = cJSON_GetObjectItemCaseSensitive(root, "schedule");
    ck_assert(cJSON_IsString(sched));
    snprintf(family, cap, "%s", sched->valuestring);
    int rc;
    if (ps_family_lookup(family, NULL) >= 0) {
        rc = ps_problem_load_json(pb, text, len);
    } else {
        cJSON_DeleteItemFromObjectCaseSensitive(root, "schedule");
        char *rest = cJSON_PrintUnformatted(root);
        ck_assert_ptr_nonnull(rest);
        rc = load(pb, rest);
        cJSON_free(rest);
    }
    cJSON_Delete(root);
    free(text);
    return rc;
}

START_TEST(config_example_pangu)
{
    ps_problem *pb = new_problem();
    char family[64];
    int rc = load_example(pb, "../docs/examples/pangu-ultra-moe-718b.json", family, sizeof family);
    ck_assert_msg(rc == 0, "%s", ps_problem_last_error(pb));
    ck_assert_str_eq(family, "adaptive");
    if (ps_family_lookup(family, NULL) >= 0)
        ck_assert_str_eq(ps_problem_schedule(pb), "adaptive");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 16);
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 2);
    /* Interleaved rule with vpp > 1: m a multiple of pp. */
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_MICROBATCHES) % 16, 0);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_int_eq(m.layers, 61);
    ck_assert_int_eq(m.dense_layers, 3);
    ck_assert_int_eq(m.planner, PS_PLANNER_ADAPTIVE);
    ck_assert_double_eq(m.slowdown, 0.0);
    /* One entry per model stage (pp x vpp), summing to the layers. */
    ck_assert_uint_eq(pb->n_stage_layers, 32);
    long sum = 0;
    for (size_t i = 0; i < pb->n_stage_layers; i++)
        sum += pb->stage_layers[i];
    ck_assert_int_eq(sum, 61);
    /* Reference 4.4: S = 2048 tokens, H = 7680, bf16, top-8 over N = 4 nodes: 188.7 MB flat and
     * 94.4 MB hierarchical inter-node, and the hierarchical algorithm is the cheaper. */
    ps_a2a_info info;
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_assert_double_eq(info.flat_inter, 2048.0 * 8 * 3 / 4 * 7680 * 2);
    ck_assert_double_eq(info.hier_inter, 3.0 * 2048 * 7680 * 2);
    ck_assert_int_eq(info.chosen, PS_A2A_HIERARCHICAL);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_example_deepseek)
{
    ps_problem *pb = new_problem();
    char family[64];
    int rc = load_example(pb, "../docs/examples/deepseek-v3.json", family, sizeof family);
    ck_assert_msg(rc == 0, "%s", ps_problem_last_error(pb));
    ck_assert_str_eq(family, "dualpipe");
    if (ps_family_lookup(family, NULL) >= 0)
        ck_assert_str_eq(ps_problem_schedule(pb), "dualpipe");
    ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 16);
    /* DualPipe: m even and at least 2 pp. */
    long long mb = ps_problem_get_int(pb, PS_PARAM_MICROBATCHES);
    ck_assert_int_eq(mb % 2, 0);
    ck_assert_int_ge(mb, 32);
    ps_moe_model m;
    ck_assert_int_eq(ps_problem_get_moe(pb, &m), 0);
    ck_assert_int_eq(m.layers, 61);
    ck_assert_int_eq(m.dense_layers, 3);
    /* 20 of 132 SMs communicate: compute runs 132/112 = 1.18 times longer. */
    ck_assert_double_eq_tol(m.slowdown, 132.0 / 112.0 - 1.0, 0.005);
    /* S = 4096, H = 7168, bf16, top-8 over N = 8 nodes: k = N, so both algorithms send
     * 7 S H bytes across nodes. */
    ps_a2a_info info;
    ck_assert_int_eq(ps_problem_a2a_info(pb, &info), 0);
    ck_assert_double_eq(info.flat_inter, 4096.0 * 8 * 7 / 8 * 7168 * 2);
    ck_assert_double_eq(info.hier_inter, 7.0 * 4096 * 7168 * 2);
    ps_problem_free(pb);
}
END_TEST

/* ---- arguments and allocation failure -------------------------------------------------------- */

START_TEST(config_null_arguments)
{
    ck_assert_int_eq(ps_problem_load_json(NULL, "{}", 2), PS_EINVAL);
    ps_problem *pb = new_problem();
    ck_assert_int_eq(ps_problem_load_json(pb, NULL, 0), PS_EINVAL);
    ck_assert_str_eq(ps_problem_last_error(pb), "invalid argument: NULL config text");
    ck_assert_int_eq(ps_problem_load_json(pb, NULL, 10), PS_EINVAL);
    ps_problem_free(pb);
}
END_TEST

START_TEST(config_allocation_failure)
{
    static const char text[] =
        "{\"pp\": 2, \"vpp\": 3, \"costs\": {\"f\": 5},\n"
        " \"stage_costs\": [{\"f\": 1, \"b\": 2, \"w\": 3}, {\"f\": 4, \"b\": 5, \"w\": 6},\n"
        "                 {\"f\": 7, \"b\": 8, \"w\": 9}]}";
    long n;
    for (n = 1; n < 100; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb = NULL;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        static const ps_stage_cost one = {0.5, 0.5, 0.5};
        ck_assert_int_eq(ps_problem_set_stage_costs(pb, &one, 1), 0);
        snapshot before = take(pb);

        cnt.calls = 0;
        cnt.fail_at = n;
        int rc = load(pb, text);
        cnt.fail_at = 0;
        if (rc == 0) {
            const ps_stage_cost *c = NULL;
            ck_assert_uint_eq(ps_problem_stage_costs(pb, &c), 3);
            ck_assert_double_eq(c[2].w, 9.0);
            ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 2);
            ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_VPP), 3);
            ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 5.0);
            ps_problem_free(pb);
            ck_assert_int_eq(cnt.live, 0);
            ck_assert_uint_eq(cnt.bytes, 0);
            break;
        }
        ck_assert_int_eq(rc, PS_ENOMEM);
        ck_assert_str_eq(ps_problem_last_error(pb), "$.stage_costs: out of memory for 3 entries");
        snapshot after = take(pb);
        ck_same(&before, &after);
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
    }
    /* At least one allocation was made and failed before the load could succeed. */
    ck_assert_int_gt(n, 1);
    ck_assert_int_lt(n, 100);
}
END_TEST

START_TEST(config_allocation_failure_both_arrays)
{
    /* Two steps allocate; a failure in the second must also undo the first. */
    static const char text[] =
        "{\"pp\": 2, \"costs\": {\"f\": 5}, \"memory\": {\"f\": 2, \"b\": -1, \"w\": -1, "
        "\"limit\": 30},\n"
        " \"stage_costs\": [{\"f\": 1, \"b\": 2, \"w\": 3}, {\"f\": 4, \"b\": 5, \"w\": 6},\n"
        "                 {\"f\": 7, \"b\": 8, \"w\": 9}],\n"
        " \"stage_memory\": [{\"f\": 1, \"b\": -1, \"w\": 0}, {\"f\": 3, \"b\": -2, \"w\": -1}]}";
    long n, costs_failed = 0, memory_failed = 0;
    for (n = 1; n < 100; n++) {
        counting_alloc cnt = {0, 0, 0, 0};
        ps_allocator al = counting_allocator(&cnt);
        ps_problem *pb = NULL;
        ck_assert_int_eq(ps_problem_new(&pb, &al), 0);
        static const ps_stage_cost one = {0.5, 0.5, 0.5};
        static const ps_stage_mem mem1 = {0.25, -0.125, -0.125};
        ck_assert_int_eq(ps_problem_set_stage_costs(pb, &one, 1), 0);
        ck_assert_int_eq(ps_problem_set_stage_memory(pb, &mem1, 1), 0);
        ck_assert_int_eq(ps_problem_set_mem_limit(pb, 3.0), 0);
        snapshot before = take(pb);

        cnt.calls = 0;
        cnt.fail_at = n;
        int rc = load(pb, text);
        cnt.fail_at = 0;
        if (rc == 0) {
            const ps_stage_cost *c = NULL;
            ck_assert_uint_eq(ps_problem_stage_costs(pb, &c), 3);
            ck_assert_double_eq(c[2].w, 9.0);
            ck_mem_eq(ps_problem_memory(pb, 0), 1.0, -1.0, 0.0);
            ck_mem_eq(ps_problem_memory(pb, 1), 3.0, -2.0, -1.0);
            ck_mem_eq(ps_problem_memory(pb, 2), 2.0, -1.0, -1.0);
            ck_assert_double_eq(ps_problem_mem_limit(pb), 30.0);
            ck_assert_int_eq(ps_problem_get_int(pb, PS_PARAM_PP), 2);
            ck_assert_double_eq(ps_problem_get_cost(pb, PS_COST_F), 5.0);
            ps_problem_free(pb);
            ck_assert_int_eq(cnt.live, 0);
            ck_assert_uint_eq(cnt.bytes, 0);
            break;
        }
        ck_assert_int_eq(rc, PS_ENOMEM);
        const char *msg = ps_problem_last_error(pb);
        if (strcmp(msg, "$.stage_costs: out of memory for 3 entries") == 0)
            costs_failed++;
        else if (strcmp(msg, "$.stage_memory: out of memory for 2 entries") == 0)
            memory_failed++;
        else
            ck_abort_msg("unexpected message: %s", msg);
        snapshot after = take(pb);
        ck_same(&before, &after);
        ps_problem_free(pb);
        ck_assert_int_eq(cnt.live, 0);
        ck_assert_uint_eq(cnt.bytes, 0);
    }
    ck_assert_int_lt(n, 100);
    /* Both steps were made to fail, the second after the first had been applied. */
    ck_assert_int_gt(costs_failed, 0);
    ck_assert_int_gt(memory_failed, 0);
}
END_TEST

/* ---- the key declarations and docs/config.md ---------------------------------------------
 *
 * The key tables of docs/config.md are written from the loader's declarations
 * (ps__config_doc_markdown) and must stand verbatim between their markers,
 * "<!-- keys:NAME:begin -->" and "<!-- keys:NAME:end -->". After a change of a declaration,
 * rewrite them from tests/ with:
 *
 *     PS_CONFIG_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-config
 */

static const char config_md[] = "../docs/config.md";

START_TEST(config_doc_tables)
{
    docblock_check(config_md, "keys", ps__config_doc_table, ps__config_doc_markdown,
                   "PS_CONFIG_DOC_UPDATE",
                   "PS_CONFIG_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-config");
}
END_TEST

/* The index of key name among keys, or n. */
static size_t key_index(const ps__cfg_key *keys, size_t n, const char *name)
{
    size_t i = 0;
    while (i < n && strcmp(keys[i].name, name) != 0)
        i++;
    return i;
}

START_TEST(config_keys_declared)
{
    bool reached[PS__CFG_OBJECT_COUNT] = {false}, documented[PS__CFG_OBJECT_COUNT] = {false};
    reached[PS__CFG_ROOT] = true;
    for (int id = 0; id < PS__CFG_OBJECT_COUNT; id++) {
        const ps__cfg_object *o = &ps__cfg_objects[id];
        ck_assert_msg(o->path != NULL && o->path[0] == '$', "object %d has no path", id);
        if (o->doc)
            documented[id] = true;
        if (o->doc_also)
            documented[o->doc_also] = true;
        ps__cfg_key buf[PS__CFG_MAX_KEYS];
        size_t n;
        const ps__cfg_key *keys = ps__cfg_keys(id, buf, &n);
        ck_assert_uint_gt(n, 0);
        ck_assert_uint_le(n, PS__CFG_MAX_KEYS);
        ck_assert_ptr_null(ps__cfg_key_name(&id, n));
        for (size_t i = 0; i < n; i++) {
            const ps__cfg_key *k = &keys[i];
            ck_assert_msg(k->name != NULL && k->meaning != NULL, "%s: key %zu", o->path, i);
            ck_assert_str_eq(ps__cfg_key_name(&id, i), k->name);
            ck_assert_msg(key_index(keys, i, k->name) == i, "%s.%s twice", o->path, k->name);
            ck_assert_msg(k->lo <= k->hi, "%s.%s: empty range", o->path, k->name);
            if (k->at_most)
                ck_assert_msg(key_index(keys, n, k->at_most) < n, "%s.%s: at_most %s", o->path,
                              k->name, k->at_most);
            if (k->positive_if) {
                size_t j = key_index(keys, n, k->positive_if);
                /* An optional key names the count in its "required key missing" message. */
                ck_assert_msg(j < n && (k->required || (keys[j].noun && o->owner)),
                              "%s.%s: positive_if", o->path, k->name);
            }
            switch (k->type) {
            case PS__CFG_CHOICE:
                ck_assert_ptr_nonnull(k->choice(0));
                break;
            case PS__CFG_STRING:
                ck_assert(k->check != NULL);
                break;
            case PS__CFG_INTS:
                ck_assert_msg(k->max_len > 0 && k->limit, "%s.%s: length", o->path, k->name);
                break;
            case PS__CFG_OBJECTS:
                ck_assert_msg(k->max_len > 0 && k->limit, "%s.%s: length", o->path, k->name);
                ck_assert_int_gt(k->object, PS__CFG_ROOT);
                ck_assert_int_lt(k->object, PS__CFG_OBJECT_COUNT);
                reached[k->object] = true;
                break;
            case PS__CFG_OBJECT:
                ck_assert_int_gt(k->object, PS__CFG_ROOT);
                ck_assert_int_lt(k->object, PS__CFG_OBJECT_COUNT);
                reached[k->object] = true;
                break;
            default:
                break;
            }
        }
    }
    for (int id = 0; id < PS__CFG_OBJECT_COUNT; id++) {
        ck_assert_msg(reached[id], "%s is no key's value", ps__cfg_objects[id].path);
        ck_assert_msg(documented[id], "%s has no table", ps__cfg_objects[id].path);
    }
    /* The keys of a layer are the operation names, written out here (ps_op order). */
    int layer = PS__CFG_LAYER, dense = PS__CFG_DENSE_LAYER;
    for (size_t k = 0; k < PS_OP_LAYER_COUNT; k++) {
        ck_assert_str_eq(ps__cfg_key_name(&layer, k), op_keys[k]);
        ck_assert_str_eq(ps__cfg_key_name(&dense, k), op_keys[k]);
    }
    /* The tables exist, and only they. */
    ck_assert_int_eq(ps__config_doc_markdown("no-such-table", docblock_add, NULL), PS_ENOTFOUND);
}
END_TEST

/* ---- suite ---------------------------------------------------------------------------------- */

static Suite *config_suite(void)
{
    Suite *s = suite_create("config");
    TCase *tc;

    tc = tcase_create("valid");
    tcase_add_test(tc, config_full_valid);
    tcase_add_test(tc, config_microbatch_weights);
    tcase_add_test(tc, config_microbatch_weights_allocation_failure);
    tcase_add_test(tc, config_absent_keys_keep_values);
    tcase_add_test(tc, config_partial_keeps_others);
    tcase_add_test(tc, config_schedule_alias);
    tcase_add_test(tc, config_cjson_out_of_memory);
    tcase_add_test(tc, config_fb_negative_is_default);
    tcase_add_test(tc, config_limits_inclusive);
    tcase_add_test(tc, config_not_nul_terminated);
    tcase_add_test(tc, config_whitespace_and_bom);
    suite_add_tcase(s, tc);

    tc = tcase_create("types");
    tcase_add_test(tc, config_int_wrong_types);
    tcase_add_test(tc, config_cost_wrong_types);
    tcase_add_test(tc, config_schedule_wrong_type);
    tcase_add_test(tc, config_stage_costs_wrong_types);
    tcase_add_test(tc, config_whole_numbers);
    suite_add_tcase(s, tc);

    tc = tcase_create("ranges");
    tcase_add_test(tc, config_int_below_range);
    tcase_add_test(tc, config_int_beyond_limit);
    tcase_add_test(tc, config_cost_out_of_range);
    tcase_add_test(tc, config_infinite_numbers);
    suite_add_tcase(s, tc);

    tc = tcase_create("unknown_keys");
    tcase_add_test(tc, config_unknown_key_suggestion);
    tcase_add_test(tc, config_unknown_case_difference);
    tcase_add_test(tc, config_unknown_without_suggestion);
    tcase_add_test(tc, config_unknown_all_collected);
    tcase_add_test(tc, config_hybrid_parallel_config);
    tcase_add_test(tc, config_hybrid_parallel_twelve);
    tcase_add_test(tc, config_unknown_many_truncated);
    tcase_add_test(tc, config_unknown_key_escaped);
    tcase_add_test(tc, config_duplicate_key);
    tcase_add_test(tc, config_unknown_schedule);
    suite_add_tcase(s, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, config_malformed_line_column);
    tcase_add_test(tc, config_truncated);
    tcase_add_test(tc, config_trailing_garbage);
    tcase_add_test(tc, config_non_object_top_level);
    tcase_add_test(tc, config_empty_input);
    tcase_add_test(tc, config_nul_bytes);
    tcase_add_test(tc, config_too_long);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("atomic");
    tcase_add_test(tc, config_failure_keeps_values);
    suite_add_tcase(s, tc);

    tc = tcase_create("stage_costs");
    tcase_add_test(tc, config_stage_costs_ok);
    tcase_add_test(tc, config_stage_costs_errors);
    tcase_add_test(tc, config_stage_costs_limit);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("memory");
    tcase_add_test(tc, config_memory_ok);
    tcase_add_test(tc, config_memory_merge);
    tcase_add_test(tc, config_memory_wrong_types);
    tcase_add_test(tc, config_memory_ranges);
    tcase_add_test(tc, config_memory_unknown_keys);
    tcase_add_test(tc, config_stage_memory_errors);
    tcase_add_test(tc, config_stage_memory_limit);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    tc = tcase_create("adaptive");
    tcase_add_test(tc, config_adaptive_params);
    tcase_add_test(tc, config_adaptive_params_errors);
    suite_add_tcase(s, tc);

    tc = tcase_create("moe");
    tcase_add_test(tc, config_moe_direct);
    tcase_add_test(tc, config_moe_direct_defaults);
    tcase_add_test(tc, config_moe_every_op);
    tcase_add_test(tc, config_moe_planners);
    tcase_add_test(tc, config_moe_kept_or_replaced);
    tcase_add_test(tc, config_moe_unknown_keys);
    tcase_add_test(tc, config_moe_wrong_types);
    tcase_add_test(tc, config_moe_model_ranges);
    tcase_add_test(tc, config_moe_cluster_ranges);
    tcase_add_test(tc, config_moe_duration_ranges);
    tcase_add_test(tc, config_moe_model_needs_cluster);
    tcase_add_test(tc, config_moe_required_keys);
    tcase_add_test(tc, config_moe_stage_layers);
    tcase_add_test(tc, config_moe_stage_layers_limit);
    tcase_add_test(tc, config_moe_failure_keeps_model);
    tcase_add_test(tc, config_moe_allocation_failure);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);

    /* These need ps_moe_derive() (src/planner/moe.c): durations derived from "model" and
     * "cluster". */
    tc = tcase_create("moe_derived");
    tcase_add_test(tc, config_moe_derived);
    tcase_add_test(tc, config_moe_derived_every_key);
    tcase_add_test(tc, config_moe_derived_overrides);
    tcase_add_test(tc, config_moe_derived_a2a_choice);
    tcase_add_test(tc, config_moe_derived_single_node);
    tcase_add_test(tc, config_moe_derived_out_of_range);
    tcase_add_test(tc, config_moe_derived_failure_keeps_model);
    tcase_add_test(tc, config_example_pangu);
    tcase_add_test(tc, config_example_deepseek);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, config_null_arguments);
    tcase_add_test(tc, config_allocation_failure);
    tcase_add_test(tc, config_allocation_failure_both_arrays);
    suite_add_tcase(s, tc);

    tc = tcase_create("docs");
    tcase_add_test(tc, config_keys_declared);
    tcase_add_test(tc, config_doc_tables);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(config_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
