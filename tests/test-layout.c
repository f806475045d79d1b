/*
 * Check suite "layout": ps_layout_split, the layer partition from Megatron-LM's
 * --pipeline-model-parallel-layout string or from an even split. Every expected partition is
 * read off the string by hand (the comments unroll it) or worked from the even-split rule.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <pipesched/model.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAX_TEST_STAGES 64

/* One expected stage: first_layer, layers, embedding, mtp, loss. */
typedef struct want_stage {
    int32_t first_layer, layers, embedding, mtp, loss;
} want_stage;

/* Splits over pp ranks of vpp chunks and compares every stage with want[pp * vpp]. */
static void expect_split_pv(const char *layout, int32_t layers, int32_t mtp, int32_t first,
                            int32_t last, const want_stage *want, int32_t pp, int32_t vpp)
{
    ps_stage_layers out[MAX_TEST_STAGES];
    char err[256] = "";
    int32_t stages = pp * vpp;
    int rc = ps_layout_split(layout, pp, vpp, layers, mtp, first, last, out, err, sizeof err);
    ck_assert_msg(rc == 0, "%s: rc %d: %s", layout ? layout : "(even)", rc, err);
    for (int32_t i = 0; i < stages; i++) {
        ck_assert_msg(
            out[i].first_layer == want[i].first_layer && out[i].layers == want[i].layers &&
                out[i].embedding == want[i].embedding && out[i].mtp == want[i].mtp &&
                out[i].loss == want[i].loss,
            "%s: stage %d is {%d, %d, %d, %d, %d}, expected {%d, %d, %d, %d, %d}",
            layout ? layout : "(even)", (int)i, (int)out[i].first_layer, (int)out[i].layers,
            (int)out[i].embedding, (int)out[i].mtp, (int)out[i].loss, (int)want[i].first_layer,
            (int)want[i].layers, (int)want[i].embedding, (int)want[i].mtp, (int)want[i].loss);
    }
}

/* One virtual stage per rank (vpp = 1): `stages` ranks. */
static void expect_split(const char *layout, int32_t layers, int32_t mtp, int32_t first,
                         int32_t last, const want_stage *want, int32_t stages)
{
    expect_split_pv(layout, layers, mtp, first, last, want, stages, 1);
}

static void expect_error_pv(const char *layout, int32_t pp, int32_t vpp, int32_t layers,
                            int32_t mtp, int32_t first, int32_t last, int code, const char *message)
{
    ps_stage_layers out[MAX_TEST_STAGES];
    memset(out, 0x5a, sizeof out); /* what the caller had there: the split must zero it */
    char err[256] = "";
    int rc = ps_layout_split(layout, pp, vpp, layers, mtp, first, last, out, err, sizeof err);
    ck_assert_msg(rc == code, "%s: rc %d, expected %d (%s)", layout ? layout : "(even)", rc, code,
                  err);
    ck_assert_str_eq(err, message);
    /* A failed split leaves nothing half-filled. */
    int64_t stages = (int64_t)pp * vpp;
    for (int32_t i = 0; i < stages && i < MAX_TEST_STAGES && stages <= PS_MAX_STAGES; i++)
        ck_assert(out[i].layers == 0 && out[i].embedding == 0 && out[i].loss == 0);
}

static void expect_error(const char *layout, int32_t stages, int32_t layers, int32_t mtp,
                         int32_t first, int32_t last, int code, const char *message)
{
    expect_error_pv(layout, stages, 1, layers, mtp, first, last, code, message);
}

/* ---- valid layouts ------------------------------------------------------------------------- */

START_TEST(layout_simple)
{
    /* "Ettt|tttt|tL": E + 3 t, 4 t, 1 t + L. */
    const want_stage w[] = {{0, 3, 1, 0, 0}, {3, 4, 0, 0, 0}, {7, 1, 0, 0, 1}};
    expect_split("Ettt|tttt|tL", 8, 0, 0, 0, w, 3);
    /* One stage holds everything. */
    const want_stage one[] = {{0, 3, 1, 0, 1}};
    expect_split("EtttL", 3, 0, 0, 0, one, 1);
    /* No decoder layers at all. */
    const want_stage none[] = {{0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}};
    expect_split("E|L", 0, 0, 0, 0, none, 2);
}
END_TEST

START_TEST(layout_symbol_repetition)
{
    /* "Et*3|t*2,m|L" = "Ettt|ttm|L". */
    const want_stage w[] = {{0, 3, 1, 0, 0}, {3, 2, 0, 1, 0}, {5, 0, 0, 0, 1}};
    expect_split("Et*3|t*2,m|L", 5, 1, 0, 0, w, 3);
    /* "m*2" on the last stage: "Et*4|tm*2L" = "Etttt|tmmL". */
    const want_stage m2[] = {{0, 4, 1, 0, 0}, {4, 1, 0, 2, 1}};
    expect_split("Et*4|tm*2L", 5, 2, 0, 0, m2, 2);
    /* The separator repeats too (Megatron's "(.)*N"): "E|*2t|L" = "E||t|L", and a stage may
     * be empty (Megatron's docs: "E||t|L"). */
    const want_stage empty[] = {{0, 0, 1, 0, 0}, {0, 0, 0, 0, 0}, {0, 1, 0, 0, 0}, {1, 0, 0, 0, 1}};
    expect_split("E||t|L", 1, 0, 0, 0, empty, 4);
    expect_split("E|*2t|L", 1, 0, 0, 0, empty, 4);
    /* Commas are dropped wherever they stand, inside counts too: "E,t,*,1,0|L" = "Et*10|L". */
    const want_stage commas[] = {{0, 10, 1, 0, 0}, {10, 0, 0, 0, 1}};
    expect_split("E,t,*,1,0|L", 10, 0, 0, 0, commas, 2);
    /* Leading zeros are read as Megatron's int() reads them: "t*03" = "ttt". */
    const want_stage zeros[] = {{0, 3, 1, 0, 1}};
    expect_split("Et*03L", 3, 0, 0, 0, zeros, 1);
}
END_TEST

START_TEST(layout_group_repetition)
{
    /* "E|(tt|)*3L" = "E|tt|tt|tt|L": 5 stages. */
    const want_stage w[] = {
        {0, 0, 1, 0, 0}, {0, 2, 0, 0, 0}, {2, 2, 0, 0, 0}, {4, 2, 0, 0, 0}, {6, 0, 0, 0, 1}};
    expect_split("E|(tt|)*3L", 6, 0, 0, 0, w, 5);
    /* A repetition inside a group: "(t*2|)*2" = "tt|tt|"; "E(t*2|)*2tL" = "Ett|tt|tL". */
    const want_stage inner[] = {{0, 2, 1, 0, 0}, {2, 2, 0, 0, 0}, {4, 1, 0, 0, 1}};
    expect_split("E(t*2|)*2tL", 5, 0, 0, 0, inner, 3);
    /* Megatron's docstring: "(|ab)*2,cd" -> "|ab|abcd"; here "E(|tt)*2,L" = "E|tt|ttL". */
    const want_stage lead[] = {{0, 0, 1, 0, 0}, {0, 2, 0, 0, 0}, {2, 2, 0, 0, 1}};
    expect_split("E(|tt)*2,L", 4, 0, 0, 0, lead, 3);
}
END_TEST

START_TEST(layout_nested_groups)
{
    /* "(t|)*2" = "t|t|", so "(t(t|)*2)*2" = "tt|t|tt|t|" and "E(t(t|)*2)*2L" =
     * "Ett|t|tt|t|L": stages "Ett", "t", "tt", "t", "L". */
    const want_stage w[] = {
        {0, 2, 1, 0, 0}, {2, 1, 0, 0, 0}, {3, 2, 0, 0, 0}, {5, 1, 0, 0, 0}, {6, 0, 0, 0, 1}};
    expect_split("E(t(t|)*2)*2L", 6, 0, 0, 0, w, 5);
    /* Three levels: "((t)*2)*3" = 6 t, "(((t)*2)*3|)*2" = "tttttt|tttttt|". */
    const want_stage deep[] = {{0, 6, 1, 0, 0}, {6, 6, 0, 0, 0}, {12, 0, 0, 0, 1}};
    expect_split("E(((t)*2)*3|)*2L", 12, 0, 0, 0, deep, 3);
}
END_TEST

/*
 * Megatron's example (docs, "Custom Pipeline Model Parallel Layout"): DeepSeek-V3, 61 decoder
 * layers and 1 MTP layer on PP16 VPP2. "Et*3|(tt|)*29,m|L" = "Ettt" | 29 x "tt" | "m" | "L":
 * 32 virtual stages; virtual stage s runs on rank s mod 16 as its chunk s / 16, so rank 0
 * holds E + 3 t and 2 t, rank 14 holds 2 t and m, rank 15 holds 2 t and L, as the docs' table.
 */
START_TEST(layout_deepseek_v3)
{
    want_stage w[32];
    w[0] = (want_stage){0, 3, 1, 0, 0};
    for (int s = 1; s <= 29; s++)
        w[s] = (want_stage){3 + 2 * (s - 1), 2, 0, 0, 0};
    w[30] = (want_stage){61, 0, 0, 1, 0};
    w[31] = (want_stage){61, 0, 0, 0, 1};
    expect_split("Et*3|(tt|)*29,m|L", 61, 1, 0, 0, w, 32);
    /* The table, by rank: rank 0 chunk 1 is virtual stage 16 (2 t from layer 33), rank 14
     * chunk 1 is stage 30 (m), rank 15 chunk 1 is stage 31 (L), rank 15 chunk 0 is stage 15. */
    ck_assert_int_eq(w[16].layers, 2);
    ck_assert_int_eq(w[16].first_layer, 33);
    ck_assert_int_eq(w[15].layers, 2);
}
END_TEST

/* ---- invalid layouts ----------------------------------------------------------------------- */

START_TEST(layout_syntax_errors)
{
    expect_error("Etx|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: unknown character 'x' at column 3 (E, t, m, L, |, (, ), *, comma)");
    expect_error("Et t|L", 2, 2, 0, 0, 0, PS_ECONFIG,
                 "layout: unknown character ' ' at column 3 (E, t, m, L, |, (, ), *, comma)");
    expect_error("E\x01|L", 2, 0, 0, 0, 0, PS_ECONFIG, "layout: unknown byte 0x01 at column 2");
    expect_error("E(tt|L", 2, 2, 0, 0, 0, PS_ECONFIG, "layout: '(' at column 2 is never closed");
    expect_error("E(t(t)*2|L", 2, 3, 0, 0, 0, PS_ECONFIG,
                 "layout: '(' at column 2 is never closed");
    expect_error("Et)*2|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: ')' at column 3 has no matching '('");
    expect_error("E(tt)|L", 2, 2, 0, 0, 0, PS_ECONFIG,
                 "layout: the group closed at column 5 needs a count: (...)*N");
    expect_error("E()*2|L", 2, 0, 0, 0, 0, PS_ECONFIG, "layout: the group at column 2 is empty");
    /* Megatron drops the comma first: "(,)" is an empty group. */
    expect_error("E(,)*2|L", 2, 0, 0, 0, 0, PS_ECONFIG, "layout: the group at column 2 is empty");
    expect_error("Et*|L", 2, 1, 0, 0, 0, PS_ECONFIG, "layout: '*' at column 3 needs a count");
    expect_error("Et*0|L", 2, 0, 0, 0, 0, PS_ECONFIG,
                 "layout: the count 0 at column 3; a repetition is at least 1");
    expect_error("*2E|L", 2, 0, 0, 0, 0, PS_ECONFIG,
                 "layout: '*' at column 1 repeats nothing (it follows a symbol, '|' or ')')");
    expect_error("E(*2t)*2|L", 2, 2, 0, 0, 0, PS_ECONFIG,
                 "layout: '*' at column 3 repeats nothing (it follows a symbol, '|' or ')')");
    expect_error("Et*2*3|L", 2, 6, 0, 0, 0, PS_ECONFIG,
                 "layout: '*' at column 5 repeats nothing (it follows a symbol, '|' or ')')");
}
END_TEST

START_TEST(layout_absurd_repetition)
{
    expect_error("Et*1000001|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: the count 1000001 at column 3 exceeds 1000000");
    expect_error("Et*99999999999999999999|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: the count at column 3 has more than 7 digits");
    /* (t*1000|) unrolls to 1001 symbols; 1000 of them are 1 001 000 > 1 000 000. */
    expect_error("E(t*1000|)*1000L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: unrolled past 1000000 symbols at column 10 (too many repetitions)");
    /* 10^12 symbols are refused when the third ')' is read, before anything is walked. */
    expect_error("E((((t)*1000)*1000)*1000)*1000|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: unrolled past 1000000 symbols at column 19 (too many repetitions)");
    /* Commas count too: a group of one t and 2000 commas, 1000 times. */
    char commas[2100];
    memset(commas, ',', sizeof commas);
    memcpy(commas, "E(t", 3);
    memcpy(commas + 2003, ")*1000|L", 9);
    expect_error(commas, 2, 1000, 0, 0, 0, PS_ECONFIG,
                 "layout: unrolled past 1000000 symbols at column 2004 (too many repetitions)");
    /* The cap is inclusive: "Et*999997|L" unrolls to 1 + 999 997 + 1 + 1 = 1 000 000 symbols;
     * one t more and the L at column 11 is one too many. */
    ps_stage_layers out[2];
    char err[256] = "";
    ck_assert_int_eq(ps_layout_split("Et*999997|L", 2, 1, 999997, 0, 0, 0, out, err, sizeof err),
                     0);
    ck_assert_int_eq(out[0].layers, 999997);
    expect_error("Et*999998|L", 2, 999998, 0, 0, 0, PS_ECONFIG,
                 "layout: unrolled past 1000000 symbols at column 11 (too many repetitions)");
    /* Commas alone count as well: "Et|L" and then commas, the 999 997th of them (column
     * 1 000 001) is one past the cap. */
    size_t len = 4 + 1000000;
    char *many = malloc(len + 1);
    ck_assert_ptr_nonnull(many);
    memcpy(many, "Et|L", 4);
    memset(many + 4, ',', len - 4);
    many[len] = '\0';
    expect_error(many, 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: unrolled past 1000000 symbols at column 1000001 (too many repetitions)");
    free(many);
    /* 17 nested groups. */
    char deep[80] = "E";
    size_t n = 1;
    for (int i = 0; i < 17; i++)
        deep[n++] = '(';
    deep[n++] = 't';
    for (int i = 0; i < 17; i++) {
        memcpy(deep + n, ")*1", 3);
        n += 3;
    }
    memcpy(deep + n, "|L", 3);
    expect_error(deep, 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: groups nest deeper than 16 at column 18");
}
END_TEST

START_TEST(layout_count_mismatch)
{
    expect_error("Et|t|L", 2, 2, 0, 0, 0, PS_ECONFIG, "layout: 3 stages, but the split has 2");
    expect_error("E|(tt|)*3L", 4, 6, 0, 0, 0, PS_ECONFIG, "layout: 5 stages, but the split has 4");
    expect_error("Ett|L", 2, 3, 0, 0, 0, PS_ECONFIG,
                 "layout: 2 decoder layers (t), but the model has 3");
    expect_error("Ett|mL", 2, 2, 2, 0, 0, PS_ECONFIG,
                 "layout: 1 MTP layers (m), but the model has 2");
    expect_error("Ett|L", 2, 2, 1, 0, 0, PS_ECONFIG,
                 "layout: 0 MTP layers (m), but the model has 1");
}
END_TEST

START_TEST(layout_placement_errors)
{
    expect_error("Et|EL", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: a second E at column 4 (the embedding appears once)");
    expect_error("E*2t|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: a second E at column 1 (the embedding appears once)");
    expect_error("tE|L", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: E at column 2 must be the first layer of stage 0");
    expect_error("|Et|L", 3, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: E at column 2 must be the first layer of stage 0");
    expect_error("tt|L", 2, 2, 0, 0, 0, PS_ECONFIG, "layout: no E (the embedding) in the layout");
    expect_error("Ett|t", 2, 3, 0, 0, 0, PS_ECONFIG, "layout: no L (the loss) in the layout");
    expect_error("Et|L|", 3, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: L is in stage 1; the loss is on the last stage (2)");
    expect_error("Et|Lt", 2, 2, 0, 0, 0, PS_ECONFIG,
                 "layout: 't' at column 5 comes after L (the loss is the last layer)");
    expect_error("Et|LL", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: a second L at column 5 (the loss appears once)");
    expect_error("Et|L*2", 2, 1, 0, 0, 0, PS_ECONFIG,
                 "layout: a second L at column 4 (the loss appears once)");
    expect_error("Etm|tL", 2, 2, 1, 0, 0, PS_ECONFIG,
                 "layout: 't' at column 5 comes after an MTP layer (decoder layers come first)");
    expect_error("Etm|mL", 2, 1, 2, 0, 0, PS_ECONFIG,
                 "layout: 'm' at column 5 is in stage 1, but the MTP layers are in stage 0 (all "
                 "in one stage)");
}
END_TEST

START_TEST(layout_argument_errors)
{
    ps_stage_layers out[2];
    char err[256] = "";
    ck_assert_int_eq(ps_layout_split("E|L", 2, 1, 0, 0, 0, 0, NULL, err, sizeof err), PS_EINVAL);
    ck_assert_str_eq(err, "layout: out is NULL");
    ck_assert_int_eq(ps_layout_split("EL", 0, 1, 0, 0, 0, 0, out, err, sizeof err), PS_ERANGE);
    ck_assert_str_eq(err, "pp and vpp must be >= 1 and pp*vpp <= 65536; got pp 0, vpp 1");
    ck_assert_int_eq(ps_layout_split("EL", 1, 0, 0, 0, 0, 0, out, err, sizeof err), PS_ERANGE);
    ck_assert_str_eq(err, "pp and vpp must be >= 1 and pp*vpp <= 65536; got pp 1, vpp 0");
    ck_assert_int_eq(ps_layout_split(NULL, PS_MAX_STAGES + 1, 1, 0, 0, 0, 0, out, err, sizeof err),
                     PS_ERANGE);
    /* The product is checked without overflowing. */
    ck_assert_int_eq(ps_layout_split(NULL, 65536, 65536, 0, 0, 0, 0, out, err, sizeof err),
                     PS_ERANGE);
    expect_error(NULL, 2, -1, 0, 0, 0, PS_ECONFIG,
                 "layer counts must be >= 0; got layers -1, mtp 0, first 0, last 0");
    expect_error(NULL, 2, 4, 0, 0, -2, PS_ECONFIG,
                 "layer counts must be >= 0; got layers 4, mtp 0, first 0, last -2");
    expect_error("Ett|L", 2, 2, 0, 2, 0, PS_ECONFIG,
                 "a layout fixes every stage: first (2) and last (0) stage layers must be 0");
    /* err may be NULL, and a short err is cut, not overrun. */
    ck_assert_int_eq(ps_layout_split("Ex|L", 2, 1, 0, 0, 0, 0, out, NULL, 0), PS_ECONFIG);
    char small[8];
    ck_assert_int_eq(ps_layout_split("Ex|L", 2, 1, 0, 0, 0, 0, out, small, sizeof small),
                     PS_ECONFIG);
    ck_assert_str_eq(small, "layout:");
}
END_TEST

/* ---- the even split ------------------------------------------------------------------------ */

START_TEST(layout_even_divisible)
{
    /* 8 layers over 4 stages: 2 each; MTP with the loss on the last stage. */
    const want_stage w[] = {{0, 2, 1, 0, 0}, {2, 2, 0, 0, 0}, {4, 2, 0, 0, 0}, {6, 2, 0, 1, 1}};
    expect_split(NULL, 8, 1, 0, 0, w, 4);
    const want_stage one[] = {{0, 5, 1, 0, 1}};
    expect_split(NULL, 5, 0, 0, 0, one, 1);
    expect_split(NULL, 5, 0, 5, 5, one, 1);
    const want_stage zero[] = {{0, 0, 1, 0, 0}, {0, 0, 0, 0, 1}};
    expect_split(NULL, 0, 0, 0, 0, zero, 2);
    /* Megatron refuses layers that do not divide (num_layers % pp, then % vpp). */
    expect_error(NULL, 4, 7, 0, 0, 0, PS_ECONFIG,
                 "7 layers do not divide evenly over 4 stages (set first/last stage layers or a "
                 "layout)");
    /* DeepSeek-V3's 61 layers over 32 virtual stages. */
    expect_error(NULL, 32, 61, 1, 0, 0, PS_ECONFIG,
                 "61 layers do not divide evenly over 32 stages (set first/last stage layers or "
                 "a layout)");
}
END_TEST

/* layout "balanced": q = layers / stages each, the remainder one more on stages 1, 2, ...,
 * then stage 0, never the last. */
START_TEST(layout_balanced)
{
    /* 6 layers over 4 stages: q 1, r 2: stages 1 and 2 take one more. */
    const want_stage six[] = {{0, 1, 1, 0, 0}, {1, 2, 0, 0, 0}, {3, 2, 0, 0, 0}, {5, 1, 0, 0, 1}};
    expect_split("balanced", 6, 0, 0, 0, six, 4);
    /* 7 over 4: r 3 = stages - 1: stages 1, 2 and then 0 take one more; 1 MTP layer last. */
    const want_stage seven[] = {{0, 2, 1, 0, 0}, {2, 2, 0, 0, 0}, {4, 2, 0, 0, 0}, {6, 1, 0, 1, 1}};
    expect_split("balanced", 7, 1, 0, 0, seven, 4);
    /* Layers that divide: the even split. */
    const want_stage even[] = {{0, 2, 1, 0, 0}, {2, 2, 0, 0, 0}, {4, 2, 0, 0, 1}};
    expect_split("balanced", 6, 0, 0, 0, even, 3);
    /* DeepSeek-V3's and Pangu Ultra MoE's 61 layers over pp 16, vpp 2 (32 virtual stages):
     * stages 1 to 29 take 2 layers, stages 0, 30 and 31 one (29 * 2 + 3 = 61). */
    want_stage w[32];
    int32_t first = 0;
    for (int32_t s = 0; s < 32; s++) {
        int32_t n = s >= 1 && s <= 29 ? 2 : 1;
        w[s] = (want_stage){first, n, s == 0, 0, s == 31};
        first += n;
        ck_assert_int_eq(ps_layout_balanced_count(61, 32, s), n);
    }
    ck_assert_int_eq(first, 61);
    expect_split_pv("balanced", 61, 0, 0, 0, w, 16, 2);
    ck_assert_int_eq(ps_layout_balanced_count(61, 32, 32), 0);
    ck_assert_int_eq(ps_layout_balanced_count(61, 0, 0), 0);
    /* A fixed first or last rank and a layout: refused as for any layout. */
    expect_error("balanced", 4, 7, 0, 2, 0, PS_ECONFIG,
                 "a layout fixes every stage: first (2) and last (0) stage layers must be 0");
}
END_TEST

START_TEST(layout_even_first_last)
{
    /* 9 layers, first 1, last 2: 6 left over 3 stages = 2 each. */
    const want_stage fl[] = {
        {0, 1, 1, 0, 0}, {1, 2, 0, 0, 0}, {3, 2, 0, 0, 0}, {5, 2, 0, 0, 0}, {7, 2, 0, 0, 1}};
    expect_split(NULL, 9, 0, 1, 2, fl, 5);
    /* 10 layers, first 1: 9 over 3 = 3. */
    const want_stage f[] = {{0, 1, 1, 0, 0}, {1, 3, 0, 0, 0}, {4, 3, 0, 0, 0}, {7, 3, 0, 0, 1}};
    expect_split(NULL, 10, 0, 1, 0, f, 4);
    /* 10 layers, last 2, MTP 1: 8 over 2 = 4. */
    const want_stage l[] = {{0, 4, 1, 0, 0}, {4, 4, 0, 0, 0}, {8, 2, 0, 1, 1}};
    expect_split(NULL, 10, 1, 0, 2, l, 3);
    /* Two stages, both fixed: they must sum to the layers. */
    const want_stage two[] = {{0, 2, 1, 0, 0}, {2, 3, 0, 0, 1}};
    expect_split(NULL, 5, 0, 2, 3, two, 2);
    expect_error(NULL, 2, 5, 0, 2, 2, PS_ECONFIG,
                 "first (2) and last (2) stage layers leave 1 of the 5 layers without a stage");
    expect_error(NULL, 4, 10, 0, 1, 2, PS_ECONFIG,
                 "7 layers do not divide evenly over the 2 middle ranks (set first/last stage "
                 "layers or a layout)");
    expect_error(NULL, 3, 3, 0, 2, 2, PS_ECONFIG,
                 "first (2) and last (2) stage layers exceed the 3 layers");
    /* Megatron refuses middle ranks left without a layer ("Mismatch: 0 middle layers
     * remaining but 1 middle PP stages available"). */
    expect_error(NULL, 3, 5, 0, 2, 3, PS_ECONFIG,
                 "first (2) and last (3) stage layers leave no layer for the 1 middle ranks");
    expect_error(NULL, 1, 4, 0, 3, 0, PS_ECONFIG,
                 "one pipeline rank holds all 4 layers; first (3) and last (0) must be 0 or 4");
}
END_TEST

/*
 * Interleaved (vpp > 1): Megatron's first/last count the layers of the first/last pipeline
 * rank, and each rank splits its layers evenly over its chunks
 * (transformer_block.py get_num_layers_to_build: the rank's count // vp_size;
 * transformer_layer.py get_transformer_layer_offset: chunk c of rank r starts at
 * c * (layers / vpp) + first / vpp + (r - 1) * (middle rank's layers / vpp)). Virtual stage
 * s = c * pp + r; the rows below are stages 0-3 (chunk 0 of ranks 0-3), then 4-7 (chunk 1).
 */
START_TEST(layout_even_first_last_interleaved)
{
    /* pp 4, vpp 2, 20 layers, first 4, last 4: 12 left over 2 middle ranks = 6 each, 3 per
     * chunk; ranks 0 and 3 hold 2 per chunk. Chunk 0 holds layers 0-9 (2 + 3 + 3 + 2), chunk 1
     * layers 10-19; rank 2's chunk 1 starts at 10 + 2 + 1 * 3 = 15 by Megatron's offset. */
    const want_stage fl[] = {{0, 2, 1, 0, 0},  {2, 3, 0, 0, 0},  {5, 3, 0, 0, 0},
                             {8, 2, 0, 0, 0},  {10, 2, 0, 0, 0}, {12, 3, 0, 0, 0},
                             {15, 3, 0, 0, 0}, {18, 2, 0, 0, 1}};
    expect_split_pv(NULL, 20, 0, 4, 4, fl, 4, 2);
    /* First only: 14 layers, first 2: 12 over 3 ranks = 4, 2 per chunk; rank 0 1 per chunk.
     * Chunk 1 starts at 14 / 2 = 7; rank 3's chunk 0 at 1 + 2 * 2 = 5. */
    const want_stage f[] = {{0, 1, 1, 0, 0}, {1, 2, 0, 0, 0}, {3, 2, 0, 0, 0},  {5, 2, 0, 0, 0},
                            {7, 1, 0, 0, 0}, {8, 2, 0, 0, 0}, {10, 2, 0, 0, 0}, {12, 2, 0, 0, 1}};
    expect_split_pv(NULL, 14, 0, 2, 0, f, 4, 2);
    /* Last only, with an MTP layer: 10 layers, last 4: 6 over 3 ranks = 2, 1 per chunk; rank
     * 3 holds 2 per chunk; the MTP layer and the loss on the last virtual stage. */
    const want_stage l[] = {{0, 1, 1, 0, 0}, {1, 1, 0, 0, 0}, {2, 1, 0, 0, 0}, {3, 2, 0, 0, 0},
                            {5, 1, 0, 0, 0}, {6, 1, 0, 0, 0}, {7, 1, 0, 0, 0}, {8, 2, 0, 1, 1}};
    expect_split_pv(NULL, 10, 1, 0, 4, l, 4, 2);
    /* Without first/last: 16 layers over 8 virtual stages, 2 each. */
    const want_stage even[] = {{0, 2, 1, 0, 0},  {2, 2, 0, 0, 0}, {4, 2, 0, 0, 0},
                               {6, 2, 0, 0, 0},  {8, 2, 0, 0, 0}, {10, 2, 0, 0, 0},
                               {12, 2, 0, 0, 0}, {14, 2, 0, 0, 1}};
    expect_split_pv(NULL, 16, 0, 0, 0, even, 4, 2);
    /* One rank holds every layer and splits them over its chunks. */
    const want_stage one[] = {{0, 2, 1, 0, 0}, {2, 2, 0, 0, 1}};
    expect_split_pv(NULL, 4, 0, 4, 0, one, 1, 2);
}
END_TEST

/* Megatron's conditions with vpp > 1 (transformer_config.py, __post_init__, "Uneven PP"), in
 * its order: first and last divisible by vpp, the layers left divisible over the middle ranks,
 * each middle rank's layers divisible by vpp. */
START_TEST(layout_even_first_last_interleaved_errors)
{
    expect_error_pv(NULL, 4, 2, 15, 0, 3, 0, PS_ECONFIG,
                    "first stage layers (3) do not divide evenly over the 2 virtual stages of "
                    "the first rank");
    expect_error_pv(NULL, 4, 2, 15, 0, 0, 3, PS_ECONFIG,
                    "last stage layers (3) do not divide evenly over the 2 virtual stages of "
                    "the last rank");
    /* 15 - 4 - 4 = 7 over 2 middle ranks. */
    expect_error_pv(NULL, 4, 2, 15, 0, 4, 4, PS_ECONFIG,
                    "7 layers do not divide evenly over the 2 middle ranks (set first/last "
                    "stage layers or a layout)");
    /* 14 - 4 - 4 = 6 over 2 middle ranks = 3 each, not divisible by vpp 2. */
    expect_error_pv(NULL, 4, 2, 14, 0, 4, 4, PS_ECONFIG,
                    "3 layers per middle rank do not divide evenly over its 2 virtual stages");
    /* 8 - 4 - 4 = 0 for 2 middle ranks. */
    expect_error_pv(NULL, 4, 2, 8, 0, 4, 4, PS_ECONFIG,
                    "first (4) and last (4) stage layers leave no layer for the 2 middle ranks");
    /* pp 2: both ends fixed must hold every layer. */
    expect_error_pv(NULL, 2, 2, 8, 0, 4, 2, PS_ECONFIG,
                    "first (4) and last (2) stage layers leave 2 of the 8 layers without a stage");
    /* Without first/last: 12 layers over 4 ranks of 2 chunks (Megatron: 12 % 4, then 3 % 2). */
    expect_error_pv(NULL, 4, 2, 12, 0, 0, 0, PS_ECONFIG,
                    "12 layers do not divide evenly over 8 stages (set first/last stage layers "
                    "or a layout)");
    expect_error_pv(NULL, 1, 2, 5, 0, 5, 0, PS_ECONFIG,
                    "5 layers do not divide evenly over 2 stages (set first/last stage layers or "
                    "a layout)");
    /* A layout needs pp * vpp stages. */
    expect_error_pv("Et|t|t|tL", 2, 1, 4, 0, 0, 0, PS_ECONFIG,
                    "layout: 4 stages, but the split has 2");
    const want_stage lay[] = {{0, 1, 1, 0, 0}, {1, 1, 0, 0, 0}, {2, 1, 0, 0, 0}, {3, 1, 0, 0, 1}};
    expect_split_pv("Et|t|t|tL", 4, 0, 0, 0, lay, 2, 2);
}
END_TEST

/* Layouts "first", "last", "first-last": by hand, then against a brute force over every count
 * Megatron's rule accepts. */
START_TEST(layout_ends_hand)
{
    int32_t f, l;
    /* 80 layers, pp 4, vpp 5 (16 per chunk): first a per chunk with 80/5 - a = 3 m, m > a:
     * a = 1 (m 5); a = 4 gives m = 4, the even split. */
    ck_assert_int_eq(ps_layout_end_counts(PS_LAYOUT_FIRST, 4, 5, 80, &f, &l), 0);
    ck_assert_int_eq(f, 5);
    ck_assert_int_eq(l, 0);
    ck_assert_int_eq(ps_layout_end_counts(PS_LAYOUT_LAST, 4, 5, 80, &f, &l), 0);
    ck_assert_int_eq(f, 0);
    ck_assert_int_eq(l, 5);
    /* Both ends, pp 4, vpp 1: 80 - 2a = 2m, m > a: a = 19 (m 21). */
    ck_assert_int_eq(ps_layout_end_counts(3, 4, 1, 80, &f, &l), 0);
    ck_assert_int_eq(f, 19);
    ck_assert_int_eq(l, 19);
    /* 61 layers, pp 16, vpp 1: 61 - a = 15 m: a = 1 (m 4); a = 16 would need m = 3 < a. */
    ck_assert_int_eq(ps_layout_end_counts(PS_LAYOUT_FIRST, 16, 1, 61, &f, &l), 0);
    ck_assert_int_eq(f, 1);
    /* ... both ends: 61 - 2a is odd, 14 m even: none. vpp 2 does not divide 61: none. */
    ck_assert_int_eq(ps_layout_end_counts(3, 16, 1, 61, &f, &l), PS_ECONFIG);
    ck_assert_int_eq(f + l, 0);
    ck_assert_int_eq(ps_layout_end_counts(PS_LAYOUT_LAST, 16, 2, 61, &f, &l), PS_ECONFIG);
    /* pp 1 has no end rank apart from the rest; both ends need a middle rank. */
    ck_assert_int_eq(ps_layout_end_counts(PS_LAYOUT_FIRST, 1, 1, 8, &f, &l), PS_ECONFIG);
    ck_assert_int_eq(ps_layout_end_counts(3, 2, 1, 8, &f, &l), PS_ECONFIG);
    ck_assert_int_eq(ps_layout_end_counts(0, 4, 1, 8, &f, &l), PS_EINVAL);
    ck_assert_int_eq(ps_layout_end_counts(4, 4, 1, 8, &f, &l), PS_EINVAL);
    ck_assert_int_eq(ps_layout_end_counts(1, 4, 1, 8, NULL, &l), PS_EINVAL);
    ck_assert_int_eq(ps_layout_ends("first"), PS_LAYOUT_FIRST);
    ck_assert_int_eq(ps_layout_ends("last"), PS_LAYOUT_LAST);
    ck_assert_int_eq(ps_layout_ends("first-last"), 3);
    ck_assert_int_eq(ps_layout_ends("balanced"), 0);
    ck_assert_int_eq(ps_layout_ends(NULL), 0);
    ck_assert_int_eq(ps_layout_ends("First"), 0);
    /* The split of the name. 10 layers, pp 4, first: 10 - a = 3 m, a = 1 (m 3): 1, 3, 3, 3,
     * the MTP layer on the last stage. */
    const want_stage ten[] = {{0, 1, 1, 0, 0}, {1, 3, 0, 0, 0}, {4, 3, 0, 0, 0}, {7, 3, 0, 1, 1}};
    expect_split("first", 10, 1, 0, 0, ten, 4);
    /* 20 layers, pp 4, vpp 2, both ends: 10 - 2a = 2m: a = 2 (m 3): 2, 3, 3, 2 | 2, 3, 3, 2. */
    want_stage w[8];
    for (int32_t st = 0, at = 0; st < 8; st++) {
        int32_t n = st % 4 == 0 || st % 4 == 3 ? 2 : 3;
        w[st] = (want_stage){at, n, st == 0, 0, st == 7};
        at += n;
    }
    expect_split_pv("first-last", 20, 0, 0, 0, w, 4, 2);
    expect_error_pv("first-last", 4, 1, 9, 0, 0, 0, PS_ECONFIG,
                    "layout first-last: no first/last stage layer counts put fewer layers on the "
                    "first and the last rank than on the middle ranks with the rest even "
                    "(Megatron's rule) for 9 layers on pp 4, vpp 1");
    expect_error_pv("last", 4, 1, 8, 0, 0, 3, PS_ECONFIG,
                    "a layout fixes every stage: first (0) and last (3) stage layers must be 0");
}
END_TEST

/* Every layer count up to 64, pp up to 16 and vpp up to 8: the counts equal the brute force's
 * (every first/last count in [1, layers] that Megatron's rule of ps_layout_split accepts,
 * with the end rank's chunks below a middle rank's; the largest), and the split equals the
 * balanced one exactly where tune's rule says (vpp 1: the last rank alone when layers mod pp
 * is pp - 1, both ends when it is pp - 2). */
START_TEST(layout_ends_brute)
{
    static ps_stage_layers a[PS_MAX_STAGES], b[PS_MAX_STAGES];
    long legal = 0, dups = 0;
    for (int32_t layers = 1; layers <= 64; layers++)
        for (int32_t pp = 1; pp <= 16; pp++)
            for (int32_t vpp = 1; vpp <= 8; vpp++)
                for (int ends = 1; ends <= 3; ends++) {
                    int32_t best = 0;
                    for (int32_t x = 1; x <= layers; x++) {
                        int32_t f = ends & 1 ? x : 0, l = ends & 2 ? x : 0;
                        if (ps_layout_split(NULL, pp, vpp, layers, 0, f, l, a, NULL, 0))
                            continue;
                        /* chunk 0 of a middle rank: the last, the first, or rank 1 */
                        int32_t mid = a[ends == 1 ? pp - 1 : ends == 2 ? 0 : 1].layers;
                        if (pp > (ends == 3 ? 2 : 1) && x / vpp < mid)
                            best = x;
                    }
                    int32_t f, l;
                    int rc = ps_layout_end_counts(ends, pp, vpp, layers, &f, &l);
                    ck_assert_msg(rc == (best ? 0 : PS_ECONFIG), "%d layers pp %d vpp %d ends %d",
                                  layers, pp, vpp, ends);
                    if (!best)
                        continue;
                    legal++;
                    ck_assert_int_eq(f, ends & 1 ? best : 0);
                    ck_assert_int_eq(l, ends & 2 ? best : 0);
                    static const char *const name[] = {"", "first", "last", "first-last"};
                    ck_assert_int_eq(
                        ps_layout_split(name[ends], pp, vpp, layers, 0, 0, 0, a, NULL, 0), 0);
                    ck_assert_int_eq(ps_layout_split(NULL, pp, vpp, layers, 0, f, l, b, NULL, 0),
                                     0);
                    int same = 1, as_balanced = 1;
                    for (int32_t s = 0; s < pp * vpp; s++) {
                        same &= a[s].layers == b[s].layers && a[s].first_layer == b[s].first_layer;
                        as_balanced &= a[s].layers == ps_layout_balanced_count(layers, pp * vpp, s);
                    }
                    ck_assert(same);
                    int32_t r = layers % pp;
                    int rule =
                        vpp == 1 && ((ends == 2 && r == pp - 1) || (ends == 3 && r == pp - 2));
                    ck_assert_msg(as_balanced == rule, "%d layers pp %d vpp %d ends %d: %d", layers,
                                  pp, vpp, ends, as_balanced);
                    dups += as_balanced;
                }
    ck_assert_int_gt(legal, 1000);
    ck_assert_int_gt(dups, 10);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("layout");
    TCase *parse = tcase_create("parse");
    tcase_add_test(parse, layout_simple);
    tcase_add_test(parse, layout_symbol_repetition);
    tcase_add_test(parse, layout_group_repetition);
    tcase_add_test(parse, layout_nested_groups);
    tcase_add_test(parse, layout_deepseek_v3);
    suite_add_tcase(su, parse);
    TCase *errors = tcase_create("errors");
    tcase_add_test(errors, layout_syntax_errors);
    tcase_add_test(errors, layout_absurd_repetition);
    tcase_add_test(errors, layout_count_mismatch);
    tcase_add_test(errors, layout_placement_errors);
    tcase_add_test(errors, layout_argument_errors);
    suite_add_tcase(su, errors);
    TCase *even = tcase_create("even");
    tcase_add_test(even, layout_even_divisible);
    tcase_add_test(even, layout_even_first_last);
    tcase_add_test(even, layout_balanced);
    tcase_add_test(even, layout_even_first_last_interleaved);
    tcase_add_test(even, layout_even_first_last_interleaved_errors);
    tcase_add_test(even, layout_ends_hand);
    tcase_add_test(even, layout_ends_brute);
    suite_add_tcase(su, even);
    return run_suite(su);
}
