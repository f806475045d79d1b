/*
 * Check suite "model": the transformer model (include/pipesched/model.h): the built-in table,
 * ps_transformer_check, the parameter counts and the HuggingFace config.json loader. Counts are
 * worked out by hand in the comments or compared with the published sizes within a tolerance;
 * the HF files in data/hf/ are real configs (or trimmed ones) read field by field.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/model.h>

#include <check.h>

#include "common.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- helpers ------------------------------------------------------------------------------ */

/* Reads a whole file (paths are relative to tests/). Caller frees. */
static ps_transformer builtin(const char *name)
{
    ps_transformer t;
    ck_assert_int_eq(ps_transformer_builtin(name, &t), 0);
    return t;
}

static ps_param_count params(const ps_transformer *t)
{
    ps_param_count c;
    ck_assert_int_eq(ps_transformer_params(t, &c), 0);
    return c;
}

/* Loads data/hf/<file>; the load must succeed. */
static ps_transformer load_hf(const char *file)
{
    char path[256];
    snprintf(path, sizeof path, "data/hf/%s", file);
    size_t len;
    char *text = test_read_file(path, &len);
    ps_transformer t;
    char err[512] = "";
    int rc = ps_transformer_from_hf(text, len, &t, err, sizeof err);
    free(text);
    ck_assert_msg(rc == 0, "%s: %s (%d)", file, err, rc);
    return t;
}

/* Loads an inline config that must fail with code; returns the message. */
static void hf_fails(const char *json, int code, const char *needle)
{
    ps_transformer t;
    memset(&t, 0x5a, sizeof t);
    ps_transformer before = t;
    char err[1024] = "";
    int rc = ps_transformer_from_hf(json, strlen(json), &t, err, sizeof err);
    ck_assert_msg(rc == code, "expected %d, got %d (%s) for %s", code, rc, err, json);
    ck_assert_msg(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
    ck_assert_msg(!memcmp(&t, &before, sizeof t), "a failed load changed the output");
}

static void within(double got, double want, double rel, const char *what)
{
    ck_assert_msg(fabs(got / want - 1.0) <= rel, "%s: %.6g is not within %.2g%% of %.6g", what, got,
                  rel * 100, want);
}

/* A minimal valid Llama-style config with one key's text replaced (for the error cases). */
#define LLAMA_KEYS                                                                                 \
    "\"hidden_size\": 64, \"intermediate_size\": 128, \"num_attention_heads\": 4, "                \
    "\"vocab_size\": 100, \"hidden_act\": \"silu\", \"rms_norm_eps\": 1e-5"

/* ---- built-ins ----------------------------------------------------------------------------- */

START_TEST(model_builtin_lookup)
{
    ps_transformer t;
    ck_assert_int_eq(ps_transformer_builtin("LLaMA3-8B", &t), 0);
    ck_assert_str_eq(t.name, "llama3-8b");
    ck_assert_int_eq(ps_transformer_builtin("llama3_8b", &t), PS_ENOTFOUND);
    ck_assert_int_eq(ps_transformer_builtin("", &t), PS_ENOTFOUND);
    ck_assert_int_eq(ps_transformer_builtin(NULL, &t), PS_EINVAL);
    ck_assert_int_eq(ps_transformer_builtin("llama3-8b", NULL), PS_EINVAL);
    size_t n = 0;
    while (ps_transformer_builtin_name(n))
        n++;
    ck_assert_uint_ge(n, 13);
    ck_assert_ptr_null(ps_transformer_builtin_name(n));
    ck_assert_ptr_null(ps_transformer_builtin_name((size_t)-1));
    /* Names are unique, case ignored. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            ck_assert_msg(
                strcasecmp(ps_transformer_builtin_name(i), ps_transformer_builtin_name(j)),
                "duplicate %s", ps_transformer_builtin_name(i));
}
END_TEST

/* Published sizes: total of the main model (MTP layers excluded, as the publications count). */
static const struct {
    const char *name;
    double total; /* parameters */
    const char *source;
} published[] = {
    {"gpt3-175b", 175e9, "Brown et al. 2020"},
    {"megatron-22b", 22e9, "Korthikanti et al. 2022, Table 3"},
    {"turing-530b", 530e9, "Smith et al. 2022"},
    {"megatron-1t", 1008.0e9, "Narayanan et al. 2021, Table 1"},
    {"llama3-8b", 8.03e9, "Llama 3 model card"},
    {"llama3-70b", 70.6e9, "Llama 3 model card"},
    {"llama3.1-405b", 405.9e9, "Llama 3.1 model card"},
    {"mixtral-8x7b", 46.7e9, "Jiang et al. 2024"},
    {"mixtral-8x22b", 141e9, "Mistral AI, Mixtral 8x22B"},
    {"qwen3-30b-a3b", 30.5e9, "Qwen3 model card"},
    {"qwen3-235b-a22b", 235e9, "Qwen3 model card"},
    {"deepseek-v3", 671e9, "DeepSeek-V3 report"},
    {"pangu-ultra-moe-718b", 718e9, "Pangu Ultra MoE report"},
};

START_TEST(model_builtin_published)
{
    size_t n = 0;
    while (ps_transformer_builtin_name(n))
        n++;
    ck_assert_uint_eq(n, sizeof published / sizeof published[0]);
    for (size_t i = 0; i < n; i++) {
        ps_transformer t = builtin(published[i].name);
        char err[256] = "";
        ck_assert_msg(ps_transformer_check(&t, err, sizeof err) == 0, "%s: %s", t.name, err);
        ps_param_count c = params(&t);
        double main_model = c.total - t.mtp_layers * c.mtp_layer;
        within(main_model, published[i].total, 0.02, published[i].name);
        ck_assert(c.active <= c.total);
    }
}
END_TEST

/* Every built-in appears in docs/models.md. */
START_TEST(model_builtin_documented)
{
    size_t len;
    char *doc = test_read_file("../docs/models.md", &len);
    for (size_t i = 0; ps_transformer_builtin_name(i); i++) {
        char cell[80];
        snprintf(cell, sizeof cell, "| %s |", ps_transformer_builtin_name(i));
        ck_assert_msg(strstr(doc, cell) != NULL, "docs/models.md lacks %s", cell);
    }
    free(doc);
}
END_TEST

/* ---- parameter counts ---------------------------------------------------------------------- */

START_TEST(model_params_llama3_8b)
{
    /*
     * Llama 3 8B: h 4096, 32 layers, a 32, g 8, d_h 128, f 14336, V 128256, untied, RMSNorm.
     *   embedding  128256 * 4096                    =   525,336,576 (output the same)
     *   attention  4096 * (32 + 8 + 8 + 32) * 128   =    41,943,040
     *   MLP        3 * 4096 * 14336                 =   176,160,768
     *   norms      2 * 4096                         =         8,192
     *   layer                                       =   218,112,000
     *   32 layers                                   = 6,979,584,000
     *   total = 6,979,584,000 + 2 * 525,336,576 + 4096 (final norm) = 8,030,261,248
     */
    ps_transformer t = builtin("llama3-8b");
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.embedding, 525336576.0);
    ck_assert_double_eq(c.output, 525336576.0);
    ck_assert_double_eq(c.dense_layer, 218112000.0);
    ck_assert_double_eq(c.moe_layer, 0.0);
    ck_assert_double_eq(c.moe_expert, 0.0);
    ck_assert_double_eq(c.mtp_layer, 0.0);
    ck_assert_double_eq(c.total, 8030261248.0);
    ck_assert_double_eq(c.active, c.total);
    within(c.total, 8.03e9, 0.001, "llama3-8b");
}
END_TEST

START_TEST(model_params_mixtral)
{
    /*
     * Mixtral 8x7B: as Llama 3 8B but V 32000 and the MLP an MoE of 8 experts of f 14336, top 2.
     *   attention 41,943,040; norms 8,192; one expert 3 * 4096 * 14336 = 176,160,768;
     *   8 experts 1,409,286,144; router 4096 * 8 = 32,768
     *   MoE layer = 41,943,040 + 8,192 + 1,409,286,144 + 32,768 = 1,451,270,144
     *   embedding 32000 * 4096 = 131,072,000 (output the same), final norm 4,096
     *   total  = 32 * 1,451,270,144 + 262,144,000 + 4,096 = 46,702,792,704   (published 46.7B)
     *   active layer = 41,943,040 + 8,192 + 32,768 + 2 * 176,160,768 = 394,305,536
     *   active = 32 * 394,305,536 + 262,148,096 = 12,879,925,248            (published 12.9B)
     */
    ps_transformer t = builtin("mixtral-8x7b");
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.moe_layer, 1451270144.0);
    ck_assert_double_eq(c.moe_expert, 1409286144.0);
    ck_assert_double_eq(c.total, 46702792704.0);
    ck_assert_double_eq(c.active, 12879925248.0);
    within(c.total, 46.7e9, 0.005, "mixtral total");
    within(c.active, 12.9e9, 0.005, "mixtral active");
}
END_TEST

START_TEST(model_params_deepseek_v3)
{
    /*
     * DeepSeek-V3: h 7168, a 128, MLA q_lora 1536, kv_lora 512, nope 128, rope 64, v 128.
     *   q    7168 * 1536 + 1536 + 1536 * 128 * 192        =     48,760,320
     *   kv   7168 * 576 + 512 + 512 * 128 * 256            =     20,906,496
     *   o    128 * 128 * 7168                              =    117,440,512
     *   attention                                          =    187,107,328
     *   dense layer  + 3 * 7168 * 18432 + 2 * 7168         =    583,483,392
     *   expert 3 * 7168 * 2048 = 44,040,192; 256 routed    = 11,274,289,152
     *   MoE layer attention + norms 14,336 + routed + 1 shared + router 7168 * 256
     *                                                      = 11,507,286,016
     *   MTP layer MoE layer + eh_proj 2 * 7168^2 + 3 norms = 11,610,067,968
     *   embedding 129280 * 7168 = 926,679,040 (output the same)
     *   main  = 3 * dense + 58 * MoE + 2 * 926,679,040 + 7168 = 671,026,404,352
     *   total = main + MTP                                     = 682,636,472,320
     * DeepSeek's weights README: 671B main model, 11.5B unique MTP parameters, so 682.5B.
     *   active = 3 * dense + 58 * (attention + norms + router + 9 experts) + 2 V h + h
     *          = 37,552,282,624; without the input embedding 36,625,603,584 (README: 36.6B,
     *          "including 0.9B for the output head").
     */
    ps_transformer t = builtin("deepseek-v3");
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.dense_layer, 583483392.0);
    ck_assert_double_eq(c.moe_layer, 11507286016.0);
    ck_assert_double_eq(c.moe_expert, 11274289152.0);
    ck_assert_double_eq(c.mtp_layer, 11610067968.0);
    ck_assert_double_eq(c.total, 682636472320.0);
    ck_assert_double_eq(c.active, 37552282624.0);
    within(c.total, 671e9 + 11.5e9, 0.005, "deepseek-v3 total with MTP");
    within(c.total - c.mtp_layer, 671e9, 0.001, "deepseek-v3 main model");
    within(c.active - c.embedding, 36.6e9, 0.005, "deepseek-v3 active without embedding");
}
END_TEST

START_TEST(model_params_tied_and_layernorm)
{
    /*
     * GPT-3 175B: tied, LayerNorm (2h a norm), GeLU MLP 2 h 4h.
     *   layer = 4 h^2 + 8 h^2 + 4 h = 12 * 12288^2 + 4 * 12288 = 1,811,988,480
     *   total = 96 * layer + 50257 * 12288 + 2 * 12288 = 174,568,476,672
     */
    ps_transformer t = builtin("gpt3-175b");
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.output, 0.0);
    ck_assert_double_eq(c.dense_layer, 1811988480.0);
    ck_assert_double_eq(c.total, 174568476672.0);
}
END_TEST

START_TEST(model_params_errors)
{
    ps_transformer t = builtin("llama3-8b");
    ps_param_count c;
    ck_assert_int_eq(ps_transformer_params(NULL, &c), PS_EINVAL);
    ck_assert_int_eq(ps_transformer_params(&t, NULL), PS_EINVAL);
    t.heads = 0;
    ck_assert_int_eq(ps_transformer_params(&t, &c), PS_ECONFIG);
}
END_TEST

/* ---- checks -------------------------------------------------------------------------------- */

/* Checks t and expects PS_ECONFIG with needle in the message. */
static void check_fails(const ps_transformer *t, const char *needle)
{
    char err[512] = "";
    ck_assert_int_eq(ps_transformer_check(t, err, sizeof err), PS_ECONFIG);
    ck_assert_msg(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
}

START_TEST(model_check_ranges)
{
    ps_transformer t = builtin("llama3-8b");
    t.layers = 0;
    check_fails(&t, "layers: 0 is out of range [1, 100000]");
    t = builtin("llama3-8b");
    t.hidden = 2000000;
    check_fails(&t, "hidden: 2000000 is out of range");
    t = builtin("llama3-8b");
    t.gated_mlp = 2;
    check_fails(&t, "gated_mlp: 2");
    t = builtin("llama3-8b");
    memset(t.name, 'x', sizeof t.name);
    check_fails(&t, "name: not NUL-terminated");
    ck_assert_int_eq(ps_transformer_check(NULL, NULL, 0), PS_EINVAL);
    /* err may be NULL. */
    ck_assert_int_eq(ps_transformer_check(&t, NULL, 0), PS_ECONFIG);
}
END_TEST

START_TEST(model_check_attention)
{
    ps_transformer t = builtin("llama3-8b");
    t.kv_heads = 3;
    check_fails(&t, "kv_heads: 3 does not divide heads (32)");
    t = builtin("llama3-8b");
    t.kv_heads = 64;
    check_fails(&t, "kv_heads: 64");
    t = builtin("llama3-8b");
    t.hidden = 4100; /* 4100 / 32 is not an integer and head_dim is derived */
    check_fails(&t, "head_dim: 0");
    t.head_dim = 128;
    ck_assert_int_eq(ps_transformer_check(&t, NULL, 0), 0);
    t = builtin("deepseek-v3");
    t.v_head_dim = 0;
    check_fails(&t, "kv_lora_rank: 512 (MLA) needs");
    t = builtin("deepseek-v3");
    t.kv_lora_rank = 0;
    check_fails(&t, "q_lora_rank: 1536 without kv_lora_rank");
}
END_TEST

START_TEST(model_check_moe)
{
    ps_transformer t = builtin("mixtral-8x7b");
    t.top_k = 9;
    check_fails(&t, "top_k: 9 is out of range [1, experts = 8]");
    t.top_k = 0;
    check_fails(&t, "top_k: 0");
    t = builtin("deepseek-v3");
    t.first_dense = 62;
    check_fails(&t, "first_dense: 62 exceeds layers (61)");
    t = builtin("llama3-8b");
    t.top_k = 2;
    check_fails(&t, "experts: 0 (dense) with MoE fields set (top_k 2");
    t = builtin("llama3-8b");
    t.ffn = 0;
    check_fails(&t, "ffn: 0 in a dense model");
    t = builtin("deepseek-v3");
    t.ffn = 0;
    check_fails(&t, "ffn: 0 while the first_dense layers need it");
    t = builtin("deepseek-v3");
    t.mtp_layers = 101;
    check_fails(&t, "mtp_layers: 101");
}
END_TEST

/* ---- HuggingFace configs ------------------------------------------------------------------- */

START_TEST(model_hf_gpt2)
{
    /*
     * GPT-2 small: 12 layers, h 768, 12 heads, n_inner null (4h), V 50257, tied, LayerNorm.
     *   layer = 12 * 768^2 + 4 * 768 = 7,080,960; 12 layers 84,971,520
     *   total = 84,971,520 + 50257 * 768 (38,597,376) + 2 * 768 = 123,570,432
     * The published 124,439,808 adds what the model leaves out: position embeddings
     * 1024 * 768 = 786,432 and biases 12 * (2304 + 768 + 3072 + 768) = 82,944.
     */
    ps_transformer t = load_hf("gpt2.json");
    ck_assert_str_eq(t.name, "gpt2");
    ck_assert_int_eq(t.layers, 12);
    ck_assert_int_eq(t.hidden, 768);
    ck_assert_int_eq(t.ffn, 3072);
    ck_assert_int_eq(t.heads, 12);
    ck_assert_int_eq(t.kv_heads, 12);
    ck_assert_int_eq(t.head_dim, 0);
    ck_assert_int_eq(t.vocab, 50257);
    ck_assert_int_eq(t.tied_embeddings, 1);
    ck_assert_int_eq(t.gated_mlp, 0);
    ck_assert_int_eq(t.rms_norm, 0);
    ck_assert_int_eq(t.max_seq, 1024);
    ck_assert_int_eq(t.experts, 0);
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.total, 123570432.0);
    ck_assert_double_eq(c.total + 786432.0 + 82944.0, 124439808.0);
}
END_TEST

START_TEST(model_hf_llama_gqa)
{
    /*
     * TinyLlama 1.1B: 22 layers, h 2048, a 32, g 4, d_h 64, f 5632, V 32000, untied.
     *   attention 2 * 2048 * 36 * 64 = 9,437,184; MLP 3 * 2048 * 5632 = 34,603,008; norms 4,096
     *   layer 44,044,288; 22 layers 968,974,336
     *   total = 968,974,336 + 2 * 65,536,000 + 2048 = 1,100,048,384
     */
    ps_transformer t = load_hf("tinyllama-1.1b.json");
    ck_assert_str_eq(t.name, "TinyLlama/TinyLlama-1.1B-intermediate-step-1431k-3T");
    ck_assert_int_eq(t.layers, 22);
    ck_assert_int_eq(t.hidden, 2048);
    ck_assert_int_eq(t.ffn, 5632);
    ck_assert_int_eq(t.heads, 32);
    ck_assert_int_eq(t.kv_heads, 4);
    ck_assert_int_eq(t.vocab, 32000);
    ck_assert_int_eq(t.tied_embeddings, 0);
    ck_assert_int_eq(t.gated_mlp, 1);
    ck_assert_int_eq(t.rms_norm, 1);
    ck_assert_int_eq(t.max_seq, 2048);
    ck_assert_double_eq(params(&t).total, 1100048384.0);
}
END_TEST

/* The fields of a loaded config against a built-in from the same published config.json. */
static void same_model(const ps_transformer *a, const ps_transformer *b)
{
#define SAME(f) ck_assert_msg(a->f == b->f, #f ": %d vs %d", (int)a->f, (int)b->f)
    SAME(layers);
    SAME(hidden);
    SAME(ffn);
    SAME(heads);
    SAME(kv_heads);
    SAME(head_dim);
    SAME(vocab);
    SAME(tied_embeddings);
    SAME(gated_mlp);
    SAME(rms_norm);
    SAME(max_seq);
    SAME(experts);
    SAME(top_k);
    SAME(moe_ffn);
    SAME(shared_experts);
    SAME(shared_ffn);
    SAME(first_dense);
    SAME(q_lora_rank);
    SAME(kv_lora_rank);
    SAME(qk_nope_head_dim);
    SAME(qk_rope_head_dim);
    SAME(v_head_dim);
    SAME(mtp_layers);
#undef SAME
}

START_TEST(model_hf_mixtral)
{
    ps_transformer t = load_hf("mixtral-8x7b.json");
    ck_assert_str_eq(t.name, "mixtral");
    ck_assert_int_eq(t.experts, 8);
    ck_assert_int_eq(t.top_k, 2);
    ck_assert_int_eq(t.moe_ffn, 0);
    ps_transformer ref = builtin("mixtral-8x7b");
    same_model(&t, &ref);
}
END_TEST

START_TEST(model_hf_qwen3_moe)
{
    ps_transformer t = load_hf("qwen3-30b-a3b.json");
    ck_assert_int_eq(t.experts, 128);
    ck_assert_int_eq(t.head_dim, 128);
    ck_assert_int_eq(t.moe_ffn, 768);
    ps_transformer ref = builtin("qwen3-30b-a3b");
    same_model(&t, &ref);
}
END_TEST

START_TEST(model_hf_deepseek_v3)
{
    ps_transformer t = load_hf("deepseek-v3.json");
    ck_assert_str_eq(t.name, "deepseek_v3");
    ck_assert_int_eq(t.q_lora_rank, 1536);
    ck_assert_int_eq(t.kv_lora_rank, 512);
    ck_assert_int_eq(t.qk_rope_head_dim, 64);
    ck_assert_int_eq(t.mtp_layers, 1);
    ck_assert_int_eq(t.first_dense, 3);
    ps_transformer ref = builtin("deepseek-v3");
    same_model(&t, &ref);
    ck_assert_double_eq(params(&t).total, 682636472320.0); /* as model_params_deepseek_v3 */
}
END_TEST

START_TEST(model_hf_deepseek_v2_lite)
{
    /*
     * DeepSeek-V2-Lite: MLA without query compression (q_lora_rank null), h 2048, a 16.
     *   attention: q_proj 2048 * 16 * 192 = 6,291,456; kv_a 2048 * 576 = 1,179,648 + norm 512;
     *              kv_b 512 * 16 * 256 = 2,097,152; o 16 * 128 * 2048 = 4,194,304
     *              = 13,763,072
     *   dense layer = 13,763,072 + 3 * 2048 * 10944 + 4096 = 81,007,104
     *   expert 3 * 2048 * 1408 = 8,650,752; MoE layer = 13,763,072 + 4096 + 64 experts
     *   553,648,128 + 2 shared 17,301,504 + router 131,072 = 584,847,872
     *   total = 81,007,104 + 26 * 584,847,872 + 2 * 102400 * 2048 + 2048 = 15,706,484,224
     *   (published 15.7B)
     */
    ps_transformer t = load_hf("deepseek-v2-lite.json");
    ck_assert_str_eq(t.name, "deepseek-ai/DeepSeek-V2-Lite");
    ck_assert_int_eq(t.q_lora_rank, 0);
    ck_assert_int_eq(t.shared_experts, 2);
    ck_assert_int_eq(t.mtp_layers, 0);
    ps_param_count c = params(&t);
    ck_assert_double_eq(c.dense_layer, 81007104.0);
    ck_assert_double_eq(c.moe_layer, 584847872.0);
    ck_assert_double_eq(c.total, 15706484224.0);
}
END_TEST

START_TEST(model_hf_defaults)
{
    /* Llama family without rms_norm_eps, hidden_act or num_key_value_heads: RMSNorm, SiLU, MHA.
     */
    const char *json = "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
                       "\"intermediate_size\": 128, \"num_attention_heads\": 4, "
                       "\"vocab_size\": 100, \"num_key_value_heads\": null}";
    ps_transformer t;
    char err[256] = "";
    ck_assert_int_eq(ps_transformer_from_hf(json, strlen(json), &t, err, sizeof err), 0);
    ck_assert_str_eq(t.name, "llama");
    ck_assert_int_eq(t.rms_norm, 1);
    ck_assert_int_eq(t.gated_mlp, 1);
    ck_assert_int_eq(t.kv_heads, 4);
    ck_assert_int_eq(t.tied_embeddings, 0);
    /* Unknown family, LayerNorm, gelu_pytorch_tanh: a plain MLP; no name: "hf-model". */
    json = "{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, "
           "\"num_attention_heads\": 4, \"vocab_size\": 100, \"layer_norm_eps\": 1e-5, "
           "\"hidden_act\": \"gelu_pytorch_tanh\"}";
    ck_assert_int_eq(ps_transformer_from_hf(json, strlen(json), &t, err, sizeof err), 0);
    ck_assert_str_eq(t.name, "hf-model");
    ck_assert_int_eq(t.rms_norm, 0);
    ck_assert_int_eq(t.gated_mlp, 0);
    /* Qwen2-MoE: shared_expert_intermediate_size means one shared expert of that size. */
    json = "{\"model_type\": \"qwen2_moe\", \"num_hidden_layers\": 2, \"hidden_size\": 64, "
           "\"intermediate_size\": 128, \"num_attention_heads\": 4, \"vocab_size\": 100, "
           "\"num_experts\": 4, \"num_experts_per_tok\": 2, \"moe_intermediate_size\": 32, "
           "\"shared_expert_intermediate_size\": 96}";
    ck_assert_int_eq(ps_transformer_from_hf(json, strlen(json), &t, err, sizeof err), 0);
    ck_assert_int_eq(t.shared_experts, 1);
    ck_assert_int_eq(t.shared_ffn, 96);
}
END_TEST

START_TEST(model_hf_errors)
{
    /* Every problem under the key's JSON path in the file. Missing key. */
    hf_fails("{" LLAMA_KEYS "}", PS_ECONFIG, "$.num_hidden_layers: missing (required)");
    /* Wrong type. */
    hf_fails("{\"num_hidden_layers\": \"32\", " LLAMA_KEYS "}", PS_ECONFIG,
             "$.num_hidden_layers: expected a positive integer, got string \"32\"");
    hf_fails("{\"num_hidden_layers\": 2.5, " LLAMA_KEYS "}", PS_ECONFIG,
             "num_hidden_layers: expected a positive integer, got number 2.5");
    hf_fails("{\"num_hidden_layers\": 2, \"tie_word_embeddings\": 1, " LLAMA_KEYS "}", PS_ECONFIG,
             "$.tie_word_embeddings: expected true or false, got number 1");
    /* Absurd values. */
    hf_fails("{\"num_hidden_layers\": 1000000, " LLAMA_KEYS "}", PS_ECONFIG,
             "num_hidden_layers: 1000000 is out of range [1, 100000]");
    hf_fails("{\"num_hidden_layers\": 1e300, " LLAMA_KEYS "}", PS_ECONFIG,
             "num_hidden_layers: 1e+300 is out of range");
    hf_fails("{\"num_hidden_layers\": 0, " LLAMA_KEYS "}", PS_ECONFIG,
             "num_hidden_layers: 0 is out of range [1, 100000]");
    /* Every problem in one message. */
    hf_fails("{\"num_hidden_layers\": -1, \"hidden_size\": 64, \"intermediate_size\": true, "
             "\"num_attention_heads\": 4, \"vocab_size\": 100, \"hidden_act\": \"silu\"}",
             PS_ECONFIG, "2 errors: ");
    /* Unknown activation, with a suggestion. */
    hf_fails("{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, "
             "\"num_attention_heads\": 4, \"vocab_size\": 100, \"hidden_act\": \"sillu\"}",
             PS_ECONFIG, "$.hidden_act: unknown activation \"sillu\" (did you mean \"silu\"?)");
    hf_fails("{\"num_hidden_layers\": 2, \"hidden_size\": 64, \"intermediate_size\": 128, "
             "\"num_attention_heads\": 4, \"vocab_size\": 100}",
             PS_ECONFIG, "hidden_act: missing");
    /* Aliases that disagree. */
    hf_fails("{\"num_hidden_layers\": 2, \"n_layer\": 3, " LLAMA_KEYS "}", PS_ECONFIG,
             "$.n_layer: 3 conflicts with num_hidden_layers (2)");
    /* Layer patterns the model cannot describe. */
    hf_fails("{\"num_hidden_layers\": 4, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
             "\"decoder_sparse_step\": 2, " LLAMA_KEYS "}",
             PS_ECONFIG, "$.decoder_sparse_step: number 2 is not supported");
    hf_fails("{\"num_hidden_layers\": 4, \"num_experts\": 4, \"num_experts_per_tok\": 2, "
             "\"mlp_only_layers\": [0], " LLAMA_KEYS "}",
             PS_ECONFIG, "$.mlp_only_layers: an array is not supported");
    /* Cross-field checks come from ps_transformer_check. */
    hf_fails("{\"num_hidden_layers\": 2, \"num_key_value_heads\": 3, " LLAMA_KEYS "}", PS_ECONFIG,
             "kv_heads: 3 does not divide heads (4)");
    /* Not an object. */
    hf_fails("[1, 2]", PS_ECONFIG, "expected a JSON object, got an array");
}
END_TEST

START_TEST(model_hf_parse_errors)
{
    /* The colon is missing after "hidden_size" on line 3: cJSON stops at the 2 of 4096, the
     * 17th character of "  \"hidden_size\" 4096". */
    hf_fails("{\n  \"num_hidden_layers\": 2,\n  \"hidden_size\" 4096\n}", PS_EPARSE,
             "line 3, column 17: malformed JSON");
    hf_fails("", PS_EPARSE, "line 1, column 1: empty input");
    hf_fails("{} x", PS_EPARSE, "line 1, column 4: unexpected data after the JSON value");
    const char nul[] = "{\"a\": 1}\0";
    ps_transformer t;
    char err[256] = "";
    ck_assert_int_eq(ps_transformer_from_hf(nul, sizeof nul - 1, &t, err, sizeof err), PS_EPARSE);
    ck_assert_ptr_nonnull(strstr(err, "NUL byte"));
    ck_assert_int_eq(ps_transformer_from_hf(NULL, 0, &t, err, sizeof err), PS_EINVAL);
    ck_assert_int_eq(ps_transformer_from_hf("{}", 2, NULL, err, sizeof err), PS_EINVAL);
    /* err may be NULL; a short buffer is cut, not overrun. */
    ck_assert_int_eq(ps_transformer_from_hf("{", 1, &t, NULL, 0), PS_EPARSE);
    char small[8];
    ck_assert_int_eq(ps_transformer_from_hf("{", 1, &t, small, sizeof small), PS_EPARSE);
    ck_assert_uint_eq(strlen(small), sizeof small - 1);
}
END_TEST

/* ---- suite --------------------------------------------------------------------------------- */

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    TCase *tc = tcase_create("builtin");
    tcase_add_test(tc, model_builtin_lookup);
    tcase_add_test(tc, model_builtin_published);
    tcase_add_test(tc, model_builtin_documented);
    suite_add_tcase(s, tc);
    tc = tcase_create("params");
    tcase_add_test(tc, model_params_llama3_8b);
    tcase_add_test(tc, model_params_mixtral);
    tcase_add_test(tc, model_params_deepseek_v3);
    tcase_add_test(tc, model_params_tied_and_layernorm);
    tcase_add_test(tc, model_params_errors);
    suite_add_tcase(s, tc);
    tc = tcase_create("check");
    tcase_add_test(tc, model_check_ranges);
    tcase_add_test(tc, model_check_attention);
    tcase_add_test(tc, model_check_moe);
    suite_add_tcase(s, tc);
    tc = tcase_create("hf");
    tcase_add_test(tc, model_hf_gpt2);
    tcase_add_test(tc, model_hf_llama_gqa);
    tcase_add_test(tc, model_hf_mixtral);
    tcase_add_test(tc, model_hf_qwen3_moe);
    tcase_add_test(tc, model_hf_deepseek_v3);
    tcase_add_test(tc, model_hf_deepseek_v2_lite);
    tcase_add_test(tc, model_hf_defaults);
    tcase_add_test(tc, model_hf_errors);
    tcase_add_test(tc, model_hf_parse_errors);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(model_suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
