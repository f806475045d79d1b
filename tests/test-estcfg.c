/*
 * Check suite "estcfg": the estimate configuration (ps_estimate_config_load) and its tables in
 * docs/config.md. Expected models, presets and defaults come from the library's own tables by
 * another road (ps_transformer_builtin, ps_hardware_builtin, ps_train_init,
 * ps_transformer_from_hf) and the messages from the documented format, not from output.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"
#include "model/estimate_config.h"

#include <pipesched/model.h>

#include <check.h>

#include "common.h"

#include "docblock.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------------------------------- */

/* Reads a whole file (the tests run in tests/). Caller frees. */
typedef struct loaded {
    ps_transformer model;
    ps_hardware hw;
    ps_train train;
    char layout[64];
    char err[PS__ERRLEN];
} loaded;

static int load(const char *json, loaded *l)
{
    memset(l, 0, sizeof *l);
    return ps_estimate_config_load(json, strlen(json), &l->model, &l->hw, &l->train, l->layout,
                                   sizeof l->layout, l->err, sizeof l->err);
}

/* The file must be refused with PS_ECONFIG and exactly message want. */
static void refused(const char *json, const char *want)
{
    loaded l;
    ck_assert_int_eq(load(json, &l), PS_ECONFIG);
    ck_assert_str_eq(l.err, want);
}

static ps_transformer builtin_model(const char *name)
{
    ps_transformer t;
    ck_assert_int_eq(ps_transformer_builtin(name, &t), 0);
    return t;
}

static ps_hardware preset(const char *name)
{
    ps_hardware hw;
    ck_assert_int_eq(ps_hardware_builtin(name, &hw), 0);
    return hw;
}

static ps_train defaults(void)
{
    ps_train t;
    ps_train_init(&t);
    return t;
}

#define MIN "\"model\": \"llama3-8b\", \"hardware\": \"h100-sxm\""

/* ---- the forms of model and hardware ------------------------------------------------------- */

START_TEST(estcfg_names)
{
    loaded l;
    ck_assert_int_eq(load("{\"model\": \"llama3-70b\", \"hardware\": \"h100-sxm\"}", &l), 0);
    ps_transformer m = builtin_model("llama3-70b");
    ps_hardware hw = preset("h100-sxm");
    ps_train t = defaults();
    ck_assert_mem_eq(&l.model, &m, sizeof m);
    ck_assert_mem_eq(&l.hw, &hw, sizeof hw);
    ck_assert_mem_eq(&l.train, &t, sizeof t);
    ck_assert_ptr_null(l.train.layout);
    /* Names are case-insensitive, as the built-in tables are. */
    ck_assert_int_eq(load("{\"model\": \"LLAMA3-70B\", \"hardware\": \"H100-SXM\"}", &l), 0);
    ck_assert_mem_eq(&l.model, &m, sizeof m);
}
END_TEST

START_TEST(estcfg_model_base_overrides)
{
    loaded l;
    ck_assert_int_eq(load("{\"model\": {\"base\": \"llama3-8b\", \"layers\": 16, \"name\": "
                          "\"half-8b\", \"vocab\": 32000}, \"hardware\": \"h100-sxm\"}",
                          &l),
                     0);
    ps_transformer m = builtin_model("llama3-8b");
    m.layers = 16;
    m.vocab = 32000;
    snprintf(m.name, sizeof m.name, "half-8b");
    ck_assert_mem_eq(&l.model, &m, sizeof m);
}
END_TEST

START_TEST(estcfg_model_hf)
{
    size_t len;
    char *hf = test_read_file("data/hf/tinyllama-1.1b.json", &len);
    ps_transformer want;
    char err[PS__ERRLEN] = "";
    ck_assert_int_eq(ps_transformer_from_hf(hf, len, &want, err, sizeof err), 0);
    size_t cap = len + 128;
    char *json = malloc(cap);
    ck_assert_ptr_nonnull(json);
    snprintf(json, cap, "{\"model\": {\"hf\": %s}, \"hardware\": \"a100-80g\"}", hf);
    loaded l;
    ck_assert_int_eq(load(json, &l), 0);
    ck_assert_mem_eq(&l.model, &want, sizeof want);
    ps_hardware hw = preset("a100-80g");
    ck_assert_mem_eq(&l.hw, &hw, sizeof hw);
    free(json);
    free(hf);
}
END_TEST

START_TEST(estcfg_hardware_object)
{
    loaded l;
    ck_assert_int_eq(load("{\"model\": \"llama3-8b\", \"hardware\": {\"base\": \"h100-sxm\", "
                          "\"name\": \"h100-94g\", \"hbm_gib\": 94, \"gemm_eff\": 0.6}}",
                          &l),
                     0);
    ps_hardware hw = preset("h100-sxm");
    hw.hbm_gib = 94;
    hw.gemm_eff = 0.6;
    snprintf(hw.name, sizeof hw.name, "h100-94g");
    ck_assert_mem_eq(&l.hw, &hw, sizeof hw);
}
END_TEST

/* ---- train ----------------------------------------------------------------------------------- */

START_TEST(estcfg_train_defaults)
{
    loaded l;
    ck_assert_int_eq(load("{" MIN ", \"train\": {\"tp\": 2, \"gbs\": 1099511627776}}", &l), 0);
    ps_train t = defaults();
    t.tp = 2;
    t.gbs = 1099511627776LL; /* 2^40, beyond int32 */
    ck_assert_mem_eq(&l.train, &t, sizeof t);
    ck_assert_int_eq(load("{" MIN ", \"train\": {}}", &l), 0);
    t = defaults();
    ck_assert_mem_eq(&l.train, &t, sizeof t);
}
END_TEST

/* The bit of key name in ps_estimate_config_load_keys's mask, found through the names. */
static uint64_t key_bit(const char *name)
{
    for (size_t i = 0; ps_estimate_config_train_key(i); i++)
        if (strcmp(ps_estimate_config_train_key(i), name) == 0)
            return (uint64_t)1 << i;
    ck_abort_msg("no train key %s", name);
    return 0;
}

/* Which "train" keys a file names, from the one load (the CLI lays its flags over them). */
START_TEST(estcfg_named_keys)
{
    loaded l;
    memset(&l, 0, sizeof l);
    /* Every name is a distinct key of the docs' table, and there is room for them. */
    size_t n = 0;
    while (ps_estimate_config_train_key(n))
        n++;
    ck_assert_uint_le(n, 64);
    ck_assert_uint_eq(key_bit("gpus") & key_bit("tp"), 0);
    uint64_t named = 1;
    const char *json = "{" MIN ", \"train\": {\"gpus\": 8, \"tp\": 2, \"layout\": null}}";
    ck_assert_int_eq(ps_estimate_config_load_keys(json, strlen(json), &l.model, &l.hw, &l.train,
                                                  &named, l.layout, sizeof l.layout, l.err,
                                                  sizeof l.err),
                     0);
    /* null names the key too: the file chose the even split. */
    ck_assert_uint_eq(named, key_bit("gpus") | key_bit("tp") | key_bit("layout"));
    ck_assert_int_eq(l.train.gpus, 8);
    /* No "train": nothing named; the same load as ps_estimate_config_load. */
    json = "{" MIN "}";
    named = 1;
    ck_assert_int_eq(ps_estimate_config_load_keys(json, strlen(json), &l.model, &l.hw, &l.train,
                                                  &named, NULL, 0, l.err, sizeof l.err),
                     0);
    ck_assert_uint_eq(named, 0);
    /* An error names nothing; named_keys may be NULL. */
    json = "{" MIN ", \"train\": {\"gpus\": 8, \"tpp\": 2}}";
    named = 1;
    ck_assert_int_eq(ps_estimate_config_load_keys(json, strlen(json), &l.model, &l.hw, &l.train,
                                                  &named, NULL, 0, l.err, sizeof l.err),
                     PS_ECONFIG);
    ck_assert_uint_eq(named, 0);
    named = 1;
    ck_assert_int_eq(
        ps_estimate_config_load_keys(NULL, 0, &l.model, &l.hw, &l.train, &named, NULL, 0, NULL, 0),
        PS_EINVAL);
    ck_assert_uint_eq(named, 0);
    json = "{" MIN ", \"train\": {\"gpus\": 8}}";
    ck_assert_int_eq(ps_estimate_config_load_keys(json, strlen(json), &l.model, &l.hw, &l.train,
                                                  NULL, NULL, 0, l.err, sizeof l.err),
                     0);
}
END_TEST

START_TEST(estcfg_train_every_key)
{
    loaded l;
    ck_assert_int_eq(
        load("{" MIN ", \"train\": {\"gpus\": 64, \"gpus_per_node\": 4, \"tp\": 4, \"pp\": 8, "
             "\"vpp\": 5, \"cp\": 2, \"ep\": 8, \"etp\": 1, \"sequence_parallel\": false, "
             "\"gbs\": 128, \"mbs\": 2, \"seq\": 8192, \"precision\": \"fp8\", "
             "\"recompute\": \"full\", \"recompute_layers\": 3, \"distributed_optimizer\": true, "
             "\"overlap_grad_reduce\": false, \"overlap_param_gather\": false, "
             "\"schedule\": \"interleaved\", \"a2a\": \"hierarchical\", \"layout\": \"Et|tL\", "
             "\"first_stage_layers\": 3, \"last_stage_layers\": 2}}",
             &l),
        0);
    const ps_train *t = &l.train;
    ck_assert_int_eq(t->gpus, 64);
    ck_assert_int_eq(t->gpus_per_node, 4);
    ck_assert_int_eq(t->tp, 4);
    ck_assert_int_eq(t->pp, 8);
    ck_assert_int_eq(t->vpp, 5);
    ck_assert_int_eq(t->cp, 2);
    ck_assert_int_eq(t->ep, 8);
    ck_assert_int_eq(t->etp, 1);
    ck_assert_int_eq(t->sequence_parallel, 0);
    ck_assert_int_eq(t->gbs, 128);
    ck_assert_int_eq(t->mbs, 2);
    ck_assert_int_eq(t->seq, 8192);
    ck_assert_int_eq(t->precision, PS_PREC_FP8);
    ck_assert_int_eq(t->recompute, PS_RECOMPUTE_FULL);
    ck_assert_int_eq(t->recompute_layers, 3);
    ck_assert_int_eq(t->distributed_optimizer, 1);
    ck_assert_int_eq(t->overlap_grad_reduce, 0);
    ck_assert_int_eq(t->overlap_param_gather, 0);
    ck_assert_str_eq(t->schedule, "interleaved");
    ck_assert_int_eq(t->a2a, PS_A2A_HIERARCHICAL);
    /* The layout lives in the caller's buffer. */
    ck_assert_ptr_eq(t->layout, l.layout);
    ck_assert_str_eq(l.layout, "Et|tL");
    ck_assert_int_eq(t->first_stage_layers, 3);
    ck_assert_int_eq(t->last_stage_layers, 2);
    /* null is the even split. */
    ck_assert_int_eq(load("{" MIN ", \"train\": {\"layout\": null}}", &l), 0);
    ck_assert_ptr_null(l.train.layout);
}
END_TEST

START_TEST(estcfg_example_file)
{
    size_t len;
    char *json = test_read_file("../docs/examples/estimate-llama3-70b.json", &len);
    loaded l;
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(
        ps_estimate_config_load(json, len, &l.model, &l.hw, &l.train, NULL, 0, l.err, sizeof l.err),
        0);
    free(json);
    ps_transformer m = builtin_model("llama3-70b");
    ck_assert_mem_eq(&l.model, &m, sizeof m);
    ps_train t = defaults();
    t.gpus = 64;
    t.tp = 4;
    t.pp = 4;
    t.vpp = 5;
    t.cp = 2;
    t.gbs = 128;
    t.mbs = 1;
    t.seq = 8192;
    t.distributed_optimizer = 1;
    ck_assert_mem_eq(&l.train, &t, sizeof t);
}
END_TEST

/* ---- errors ---------------------------------------------------------------------------------- */

START_TEST(estcfg_error_unknown_keys)
{
    refused("{" MIN ", \"trian\": {}}", "$.trian: unknown key (did you mean \"train\"?)");
    refused("{" MIN ", \"train\": {\"tpp\": 2}}",
            "$.train.tpp: unknown key (did you mean \"tp\"?)");
    refused("{\"model\": {\"base\": \"llama3-8b\", \"layer\": 2}, \"hardware\": \"h100-sxm\"}",
            "$.model.layer: unknown key (did you mean \"layers\"?)");
    refused("{\"model\": \"llama3-8b\", \"hardware\": {\"base\": \"h100-sxm\", \"hbm\": 2}}",
            "$.hardware.hbm: unknown key");
    refused("{" MIN ", \"train\": {\"tpp\": 2, \"ppp\": 2}}",
            "2 unknown keys: $.train.tpp (did you mean \"tp\"?), $.train.ppp (did you mean "
            "\"pp\"?)");
}
END_TEST

START_TEST(estcfg_error_unknown_names)
{
    refused("{\"model\": \"llama3-8c\", \"hardware\": \"h100-sxm\"}",
            "$.model: unknown model \"llama3-8c\" (did you mean \"llama3-8b\"?)");
    refused("{\"model\": {\"base\": \"llama3-8c\"}, \"hardware\": \"h100-sxm\"}",
            "$.model.base: unknown model \"llama3-8c\" (did you mean \"llama3-8b\"?)");
    refused("{\"model\": \"llama3-8b\", \"hardware\": \"h100-sxn\"}",
            "$.hardware: unknown preset \"h100-sxn\" (did you mean \"h100-sxm\"?)");
    refused("{" MIN ", \"train\": {\"recompute\": \"partial\"}}",
            "$.train.recompute: unknown recompute \"partial\"");
    refused("{" MIN ", \"train\": {\"a2a\": \"Flat\"}}",
            "$.train.a2a: unknown a2a \"Flat\" (did you mean \"flat\"?)");
}
END_TEST

START_TEST(estcfg_error_types)
{
    refused("{" MIN ", \"train\": {\"tp\": \"4\"}}",
            "$.train.tp: expected an integer, got string \"4\"");
    refused("{" MIN ", \"train\": {\"distributed_optimizer\": 1}}",
            "$.train.distributed_optimizer: expected true or false, got number 1");
    refused("{" MIN ", \"train\": {\"precision\": 8}}",
            "$.train.precision: expected a string, got number 8");
    refused("{" MIN ", \"train\": {\"layout\": 1}}",
            "$.train.layout: expected a string or null, got number 1");
    refused("{" MIN ", \"train\": []}", "$.train: expected an object, got an array");
    refused("{\"model\": 7, \"hardware\": \"h100-sxm\"}",
            "$.model: expected a model name or an object, got number 7");
    refused("{\"model\": \"llama3-8b\", \"hardware\": true}",
            "$.hardware: expected a preset name or an object, got boolean true");
    refused("[]", "$: expected an object, got an array");
}
END_TEST

START_TEST(estcfg_error_ranges)
{
    refused("{" MIN ", \"train\": {\"tp\": 0}}", "$.train.tp: must be >= 1, got 0");
    refused("{" MIN ", \"train\": {\"pp\": 4097}}", "$.train.pp: 4097 is beyond the limit 4096");
    refused("{" MIN ", \"train\": {\"gbs\": 1.5}}", "$.train.gbs: expected an integer, got 1.5");
    refused("{\"model\": {\"base\": \"llama3-8b\", \"layers\": 0}, \"hardware\": \"h100-sxm\"}",
            "$.model.layers: must be >= 1, got 0");
    refused("{\"model\": \"llama3-8b\", \"hardware\": {\"base\": \"h100-sxm\", \"hbm_gib\": -1}}",
            "$.hardware.hbm_gib: must be > 0, got -1");
    refused("{\"model\": \"llama3-8b\", \"hardware\": {\"base\": \"h100-sxm\", \"overhead_gib\": "
            "90}}",
            "$.hardware.overhead_gib: must be < hbm_gib (80), got 90");
    refused("{" MIN ", \"train\": {\"schedule\": \"" /* 32 bytes */
            "abcdefghijabcdefghijabcdefghijab\"}}",
            "$.train.schedule: longer than 31 bytes");
}
END_TEST

START_TEST(estcfg_error_structure)
{
    refused("{}", "2 errors: $: missing \"model\" (required); $: missing \"hardware\" (required)");
    refused("{" MIN ", \"train\": {\"tp\": 2, \"tp\": 4}}", "$.train.tp: duplicate key");
    refused("{\"model\": {\"layers\": 2}, \"hardware\": \"h100-sxm\"}",
            "$.model: needs \"base\" (a built-in model) or \"hf\" (a config.json object)");
    refused("{\"model\": {\"hf\": {}, \"layers\": 2}, \"hardware\": \"h100-sxm\"}",
            "$.model: with \"hf\", no other key (the config is the model)");
    refused("{\"model\": {\"base\": \"llama3-8b\", \"hf\": {}}, \"hardware\": \"h100-sxm\"}",
            "$.model.hf: not with \"base\": the HuggingFace config is the whole model");
    refused("{\"model\": {\"hf\": 3}, \"hardware\": \"h100-sxm\"}",
            "$.model.hf: expected an object (a HuggingFace config.json), got number 3");
    /* The rules between fields of the model: kv_heads must divide heads (32 for llama3-8b). */
    loaded l;
    ck_assert_int_eq(load("{\"model\": {\"base\": \"llama3-8b\", \"kv_heads\": 5}, "
                          "\"hardware\": \"h100-sxm\"}",
                          &l),
                     PS_ECONFIG);
    ck_assert_msg(strncmp(l.err, "$.model: ", 9) == 0 && strstr(l.err, "kv_heads"), "%s", l.err);
    /* An HF config's own problems, each under its key's path (docs/models.md: the activation,
     * then the required keys). */
    refused("{\"model\": {\"hf\": {}}, \"hardware\": \"h100-sxm\"}",
            "6 errors: $.model.hf.hidden_act: missing (needed to tell a gated MLP from a plain "
            "one); $.model.hf.num_hidden_layers: missing (required); $.model.hf.hidden_size: "
            "missing (required); $.model.hf.num_attention_heads: missing (required); "
            "$.model.hf.vocab_size: missing (required); $.model.hf.intermediate_size: missing "
            "(required: the MLP size)");
}
END_TEST

/* A Llama-style config.json inline, every key but num_attention_heads. */
#define HF_KEYS                                                                                    \
    "\"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, "                  \
    "\"vocab_size\": 100, \"hidden_act\": \"silu\""

/* The inline HF config's problems name the key inside it, and join the file's other problems
 * in one message; the cross-field checks name the struct's field under $.model.hf. */
START_TEST(estcfg_error_hf_paths)
{
    refused("{\"model\": {\"hf\": {" HF_KEYS ", \"num_attention_heads\": \"8\"}}, "
            "\"hardware\": \"h100-sxm\"}",
            "$.model.hf.num_attention_heads: expected a positive integer, got string \"8\"");
    refused("{\"model\": {\"hf\": {" HF_KEYS ", \"num_attention_heads\": 4, "
            "\"tie_word_embeddings\": 1}}, \"hardware\": \"h100-sxm\", \"train\": {\"tp\": \"2\"}}",
            "2 errors: $.model.hf.tie_word_embeddings: expected true or false, got number 1; "
            "$.train.tp: expected an integer, got string \"2\"");
    refused("{\"model\": {\"hf\": {" HF_KEYS ", \"num_attention_heads\": 4, "
            "\"num_key_value_heads\": 3}}, \"hardware\": \"h100-sxm\"}",
            "$.model.hf: kv_heads: 3 does not divide heads (4)");
    /* The config is read in place, so a syntax error is the file's, at its own line and
     * column: line 2, "  {\"hidden_size\" 64}" stops at the 6 of 64, column 18. */
    loaded l;
    ck_assert_int_eq(
        load("{\"model\": {\"hf\":\n  {\"hidden_size\" 64}}, \"hardware\": \"h100-sxm\"}", &l),
        PS_EPARSE);
    ck_assert_msg(strncmp(l.err, "line 2, column 18: malformed JSON", 33) == 0, "%s", l.err);
    /* A valid one loads as ps_transformer_from_hf reads it. */
    const char *hf = "{" HF_KEYS ", \"num_attention_heads\": 4}";
    ps_transformer want;
    char err[256];
    ck_assert_int_eq(ps_transformer_from_hf(hf, strlen(hf), &want, err, sizeof err), 0);
    ck_assert_int_eq(load("{\"model\": {\"hf\": {" HF_KEYS ", \"num_attention_heads\": 4}}, "
                          "\"hardware\": \"h100-sxm\"}",
                          &l),
                     0);
    ck_assert_mem_eq(&l.model, &want, sizeof want);
}
END_TEST

START_TEST(estcfg_error_layout_buffer)
{
    loaded l;
    const char *json = "{" MIN ", \"train\": {\"layout\": \"Et|tL\"}}";
    memset(&l, 0, sizeof l);
    ck_assert_int_eq(ps_estimate_config_load(json, strlen(json), &l.model, &l.hw, &l.train,
                                             l.layout, 5, l.err, sizeof l.err),
                     PS_ECONFIG);
    ck_assert_str_eq(l.err, "$.train.layout: 5 bytes do not fit the caller's buffer of 5");
    ck_assert_int_eq(ps_estimate_config_load(json, strlen(json), &l.model, &l.hw, &l.train, NULL, 0,
                                             l.err, sizeof l.err),
                     PS_ECONFIG);
    ck_assert_str_eq(l.err, "$.train.layout: 5 bytes do not fit the caller's buffer of 0");
    ck_assert_int_eq(ps_estimate_config_load(json, strlen(json), &l.model, &l.hw, &l.train,
                                             l.layout, 6, l.err, sizeof l.err),
                     0);
    ck_assert_str_eq(l.train.layout, "Et|tL");
}
END_TEST

/* Every problem at once, and the outputs left as they were. */
START_TEST(estcfg_error_all_at_once)
{
    loaded l;
    memset(&l, 0x5a, sizeof l);
    loaded before = l;
    const char *json = "{\"model\": \"gpt-9\", \"hardware\": {\"base\": \"h100-sxm\", "
                       "\"hbm_gib\": 0}, \"train\": {\"tp\": -1, \"precision\": \"fp4\"}}";
    ck_assert_int_eq(ps_estimate_config_load(json, strlen(json), &l.model, &l.hw, &l.train,
                                             l.layout, sizeof l.layout, l.err, sizeof l.err),
                     PS_ECONFIG);
    ck_assert_str_eq(l.err, "4 errors: $.model: unknown model \"gpt-9\"; $.hardware.hbm_gib: must "
                            "be > 0, got 0; $.train.tp: must be >= 1, got -1; $.train.precision: "
                            "unknown precision \"fp4\" (did you mean \"fp8\"?)");
    ck_assert_mem_eq(&l.model, &before.model, sizeof l.model);
    ck_assert_mem_eq(&l.hw, &before.hw, sizeof l.hw);
    ck_assert_mem_eq(&l.train, &before.train, sizeof l.train);
}
END_TEST

START_TEST(estcfg_error_parse_and_arguments)
{
    loaded l;
    ck_assert_int_eq(load("{\n  \"model\": \"llama3-8b\",\n  \"hardware\" \"h100-sxm\"\n}", &l),
                     PS_EPARSE);
    ck_assert_msg(strncmp(l.err, "line 3, column ", 15) == 0, "%s", l.err);
    ck_assert_int_eq(
        ps_estimate_config_load(NULL, 0, &l.model, &l.hw, &l.train, NULL, 0, l.err, sizeof l.err),
        PS_EINVAL);
    ck_assert_str_eq(l.err, "estimate configuration: NULL text or output");
    const char *json = "{" MIN "}";
    ck_assert_int_eq(
        ps_estimate_config_load(json, strlen(json), NULL, &l.hw, &l.train, NULL, 0, NULL, 0),
        PS_EINVAL);
    ck_assert_int_eq(
        ps_estimate_config_load(json, strlen(json), &l.model, NULL, &l.train, NULL, 0, NULL, 0),
        PS_EINVAL);
    ck_assert_int_eq(
        ps_estimate_config_load(json, strlen(json), &l.model, &l.hw, NULL, NULL, 0, NULL, 0),
        PS_EINVAL);
    /* No err buffer: the code alone. */
    ck_assert_int_eq(ps_estimate_config_load("{}", 2, &l.model, &l.hw, &l.train, NULL, 0, NULL, 0),
                     PS_ECONFIG);
}
END_TEST

/* ---- docs/config.md --------------------------------------------------------------------------
 *
 * The tables of the section "Estimate configuration" are written from the declarations
 * (ps__estimate_config_doc_markdown) and must stand verbatim between
 * "<!-- estcfg:NAME:begin -->" and "<!-- estcfg:NAME:end -->". After a change of a key, rewrite
 * them from tests/ with:
 *
 *     PS_ESTCFG_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-estcfg
 */

static const char config_md[] = "../docs/config.md";

START_TEST(estcfg_doc_tables)
{
    docblock_check(config_md, "estcfg", ps__estimate_config_doc_table,
                   ps__estimate_config_doc_markdown, "PS_ESTCFG_DOC_UPDATE",
                   "PS_ESTCFG_DOC_UPDATE=1 CK_RUN_CASE=docs ../build/tests/test-estcfg");
}
END_TEST

/* The train table names every key the loader takes: each row's key loads. */
START_TEST(estcfg_doc_train_keys_load)
{
    docblock_text t = {NULL, 0, 0};
    ck_assert_int_eq(ps__estimate_config_doc_markdown("train", docblock_add, &t), 0);
    size_t rows = 0;
    for (const char *p = t.s; (p = strstr(p, "\n| `")) != NULL; p++) {
        const char *k0 = p + 4, *k1 = strchr(k0, '`');
        ck_assert_ptr_nonnull(k1);
        char key[64], json[256];
        snprintf(key, sizeof key, "%.*s", (int)(k1 - k0), k0);
        rows++;
        /* A value of every type: the first one that loads. */
        static const char *const values[] = {"1", "true", "\"bf16\"", "\"none\"", "\"auto\""};
        int ok = 0;
        for (size_t v = 0; v < sizeof values / sizeof values[0] && !ok; v++) {
            snprintf(json, sizeof json, "{" MIN ", \"train\": {\"%s\": %s}}", key, values[v]);
            loaded l;
            ok = load(json, &l) == 0;
        }
        ck_assert_msg(ok, "the documented key %s does not load", key);
    }
    ck_assert_uint_eq(rows, 27); /* every field of ps_train */
    free(t.s);
}
END_TEST

static Suite *estcfg_suite(void)
{
    Suite *s = suite_create("estcfg");
    TCase *tc = tcase_create("forms");
    tcase_add_test(tc, estcfg_names);
    tcase_add_test(tc, estcfg_model_base_overrides);
    tcase_add_test(tc, estcfg_model_hf);
    tcase_add_test(tc, estcfg_named_keys);
    tcase_add_test(tc, estcfg_hardware_object);
    suite_add_tcase(s, tc);

    tc = tcase_create("train");
    tcase_add_test(tc, estcfg_train_defaults);
    tcase_add_test(tc, estcfg_train_every_key);
    tcase_add_test(tc, estcfg_example_file);
    suite_add_tcase(s, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, estcfg_error_unknown_keys);
    tcase_add_test(tc, estcfg_error_unknown_names);
    tcase_add_test(tc, estcfg_error_types);
    tcase_add_test(tc, estcfg_error_ranges);
    tcase_add_test(tc, estcfg_error_structure);
    tcase_add_test(tc, estcfg_error_hf_paths);
    tcase_add_test(tc, estcfg_error_layout_buffer);
    tcase_add_test(tc, estcfg_error_all_at_once);
    tcase_add_test(tc, estcfg_error_parse_and_arguments);
    suite_add_tcase(s, tc);

    tc = tcase_create("docs");
    tcase_add_test(tc, estcfg_doc_tables);
    tcase_add_test(tc, estcfg_doc_train_keys_load);
    suite_add_tcase(s, tc);

    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(estcfg_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
