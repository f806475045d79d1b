/*
 * The transformer model: the built-in table, the checks of a model's fields and its parameter
 * counts (docs/models.md lists the table with the counts; the formulas are those of
 * docs/model.md's memory section).
 *
 * Every dimension of a built-in comes from the model's published config.json or paper, named in
 * the row's source; the test suite checks each total against the published size.
 * SPDX-License-Identifier: MIT
 */
#include "model/transformer.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* ---- the built-in models ------------------------------------------------------------------- */

typedef struct builtin {
    const char *source; /* where the dimensions come from */
    ps_transformer model;
} builtin;

/*
 * One row per model. Fields left out are 0: no MoE, no MLA, head_dim = hidden / heads. GPT-style
 * models (GeLU MLP of 4h, LayerNorm, tied embeddings, vocabulary padded to 51200 by Megatron)
 * have no biases or learned position embeddings here: they are below 0.05% of the total.
 */
static const builtin builtins[] = {
    {.source = "Brown et al. 2020, arXiv 2005.14165, Table 2.1; GPT-2 BPE vocabulary",
     .model = {.name = "gpt3-175b",
               .layers = 96,
               .hidden = 12288,
               .ffn = 49152,
               .heads = 96,
               .kv_heads = 96,
               .vocab = 50257,
               .tied_embeddings = 1,
               .max_seq = 2048}},
    {.source = "Korthikanti et al. 2022, arXiv 2205.05198, Table 3",
     .model = {.name = "megatron-22b",
               .layers = 48,
               .hidden = 6144,
               .ffn = 24576,
               .heads = 64,
               .kv_heads = 64,
               .vocab = 51200,
               .tied_embeddings = 1,
               .max_seq = 2048}},
    {.source = "Smith et al. 2022, arXiv 2201.11990, Sec. 3.1; Narayanan et al. 2021, Table 1",
     .model = {.name = "turing-530b",
               .layers = 105,
               .hidden = 20480,
               .ffn = 81920,
               .heads = 128,
               .kv_heads = 128,
               .vocab = 51200,
               .tied_embeddings = 1,
               .max_seq = 2048}},
    {.source = "Narayanan et al. 2021, arXiv 2104.04473, Table 1 (the 1008B row)",
     .model = {.name = "megatron-1t",
               .layers = 128,
               .hidden = 25600,
               .ffn = 102400,
               .heads = 160,
               .kv_heads = 160,
               .vocab = 51200,
               .tied_embeddings = 1,
               .max_seq = 2048}},
    {.source = "https://huggingface.co/meta-llama/Meta-Llama-3-8B/blob/main/config.json",
     .model = {.name = "llama3-8b",
               .layers = 32,
               .hidden = 4096,
               .ffn = 14336,
               .heads = 32,
               .kv_heads = 8,
               .vocab = 128256,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 8192}},
    {.source = "https://huggingface.co/meta-llama/Meta-Llama-3-70B/blob/main/config.json",
     .model = {.name = "llama3-70b",
               .layers = 80,
               .hidden = 8192,
               .ffn = 28672,
               .heads = 64,
               .kv_heads = 8,
               .vocab = 128256,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 8192}},
    {.source = "https://huggingface.co/meta-llama/Llama-3.1-405B/blob/main/config.json",
     .model = {.name = "llama3.1-405b",
               .layers = 126,
               .hidden = 16384,
               .ffn = 53248,
               .heads = 128,
               .kv_heads = 8,
               .vocab = 128256,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 131072}},
    {.source = "https://huggingface.co/mistralai/Mixtral-8x7B-v0.1/blob/main/config.json",
     .model = {.name = "mixtral-8x7b",
               .layers = 32,
               .hidden = 4096,
               .ffn = 14336,
               .heads = 32,
               .kv_heads = 8,
               .vocab = 32000,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 32768,
               .experts = 8,
               .top_k = 2}},
    {.source = "https://huggingface.co/mistralai/Mixtral-8x22B-v0.1/blob/main/config.json",
     .model = {.name = "mixtral-8x22b",
               .layers = 56,
               .hidden = 6144,
               .ffn = 16384,
               .heads = 48,
               .kv_heads = 8,
               .vocab = 32000,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 65536,
               .experts = 8,
               .top_k = 2}},
    {.source = "https://huggingface.co/Qwen/Qwen3-30B-A3B/blob/main/config.json",
     .model = {.name = "qwen3-30b-a3b",
               .layers = 48,
               .hidden = 2048,
               .ffn = 6144,
               .heads = 32,
               .kv_heads = 4,
               .head_dim = 128,
               .vocab = 151936,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 40960,
               .experts = 128,
               .top_k = 8,
               .moe_ffn = 768}},
    {.source = "https://huggingface.co/Qwen/Qwen3-235B-A22B/blob/main/config.json",
     .model = {.name = "qwen3-235b-a22b",
               .layers = 94,
               .hidden = 4096,
               .ffn = 12288,
               .heads = 64,
               .kv_heads = 4,
               .head_dim = 128,
               .vocab = 151936,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 40960,
               .experts = 128,
               .top_k = 8,
               .moe_ffn = 1536}},
    {.source = "https://huggingface.co/deepseek-ai/DeepSeek-V3/blob/main/config.json",
     .model = {.name = "deepseek-v3",
               .layers = 61,
               .hidden = 7168,
               .ffn = 18432,
               .heads = 128,
               .kv_heads = 128,
               .vocab = 129280,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 163840,
               .experts = 256,
               .top_k = 8,
               .moe_ffn = 2048,
               .shared_experts = 1,
               .first_dense = 3,
               .q_lora_rank = 1536,
               .kv_lora_rank = 512,
               .qk_nope_head_dim = 128,
               .qk_rope_head_dim = 64,
               .v_head_dim = 128,
               .mtp_layers = 1}},
    {.source = "openPangu-Ultra-MoE-718B configuration (ai.gitcode.com/ascend-tribe/"
               "openpangu-ultra-moe-718b-model); arXiv 2505.04519",
     .model = {.name = "pangu-ultra-moe-718b",
               .layers = 61,
               .hidden = 7680,
               .ffn = 18432,
               .heads = 128,
               .kv_heads = 128,
               .vocab = 153600,
               .gated_mlp = 1,
               .rms_norm = 1,
               .max_seq = 131072,
               .experts = 256,
               .top_k = 8,
               .moe_ffn = 2048,
               .shared_experts = 1,
               .first_dense = 3,
               .q_lora_rank = 1536,
               .kv_lora_rank = 512,
               .qk_nope_head_dim = 128,
               .qk_rope_head_dim = 64,
               .v_head_dim = 128,
               .mtp_layers = 1}},
};

#define N_BUILTINS (sizeof builtins / sizeof builtins[0])

int ps_transformer_builtin(const char *name, ps_transformer *out)
{
    if (!name || !out)
        return PS_EINVAL;
    for (size_t i = 0; i < N_BUILTINS; i++) {
        if (!strcasecmp(name, builtins[i].model.name)) {
            *out = builtins[i].model;
            return 0;
        }
    }
    return PS_ENOTFOUND;
}

const char *ps_transformer_builtin_name(size_t i)
{
    return i < N_BUILTINS ? builtins[i].model.name : NULL;
}

/* ---- the fields' ranges -------------------------------------------------------------------- */

#define FIELD(f, lo, hi)                                                                           \
    {                                                                                              \
#f, offsetof(ps_transformer, f), (lo), (hi)                                                \
    }

/*
 * Every int32_t field and its range, the one declaration the checks and the HF loader share.
 * The limits are far beyond any real model and keep every count well inside a double's exact
 * integers (the largest product, vocab * hidden, is below 2^47).
 */
static const ps__transformer_field fields[] = {
    FIELD(layers, 1, 100000),
    FIELD(hidden, 1, 1000000),
    FIELD(ffn, 0, 10000000),
    FIELD(heads, 1, 100000),
    FIELD(kv_heads, 1, 100000),
    FIELD(head_dim, 0, 100000),
    FIELD(vocab, 1, 100000000),
    FIELD(tied_embeddings, 0, 1),
    FIELD(gated_mlp, 0, 1),
    FIELD(rms_norm, 0, 1),
    FIELD(max_seq, 0, INT32_MAX),
    FIELD(experts, 0, 100000),
    FIELD(top_k, 0, 100000),
    FIELD(moe_ffn, 0, 10000000),
    FIELD(shared_experts, 0, 100000),
    FIELD(shared_ffn, 0, 10000000),
    FIELD(first_dense, 0, 100000),
    FIELD(q_lora_rank, 0, 1000000),
    FIELD(kv_lora_rank, 0, 1000000),
    FIELD(qk_nope_head_dim, 0, 100000),
    FIELD(qk_rope_head_dim, 0, 100000),
    FIELD(v_head_dim, 0, 100000),
    FIELD(mtp_layers, 0, 100),
};

#undef FIELD

#define N_FIELDS (sizeof fields / sizeof fields[0])

const ps__transformer_field *ps__transformer_field_at(size_t offset)
{
    for (size_t i = 0; i < N_FIELDS; i++)
        if (fields[i].offset == offset)
            return &fields[i];
    return NULL;
}

static int32_t field_value(const ps_transformer *t, const ps__transformer_field *f)
{
    int32_t v;
    memcpy(&v, (const char *)t + f->offset, sizeof v);
    return v;
}

/* ---- checks -------------------------------------------------------------------------------- */

static int check_name(const ps_transformer *t, char *err, size_t errlen)
{
    if (!memchr(t->name, '\0', sizeof t->name))
        return ps__seterr_n(err, errlen, PS_ECONFIG, "name: not NUL-terminated within %zu bytes",
                            sizeof t->name);
    return 0;
}

static int check_ranges(const ps_transformer *t, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_FIELDS; i++) {
        int32_t v = field_value(t, &fields[i]);
        if (v < fields[i].min || v > fields[i].max)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "%s: %" PRId32 " is out of range [%" PRId32 ", %" PRId32 "]",
                                fields[i].name, v, fields[i].min, fields[i].max);
    }
    return 0;
}

static int check_attention(const ps_transformer *t, char *err, size_t errlen)
{
    if (t->kv_heads > t->heads || t->heads % t->kv_heads)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "kv_heads: %" PRId32 " does not divide heads (%" PRId32 ")",
                            t->kv_heads, t->heads);
    if (t->kv_lora_rank > 0) {
        /* MLA: the head dimensions come from its own fields, head_dim is unused. */
        if (t->qk_nope_head_dim == 0 || t->qk_rope_head_dim == 0 || t->v_head_dim == 0)
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "kv_lora_rank: %" PRId32 " (MLA) needs qk_nope_head_dim, qk_rope_head_dim and "
                "v_head_dim, got %" PRId32 ", %" PRId32 ", %" PRId32,
                t->kv_lora_rank, t->qk_nope_head_dim, t->qk_rope_head_dim, t->v_head_dim);
        return 0;
    }
    if (t->q_lora_rank > 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "q_lora_rank: %" PRId32 " without kv_lora_rank (MLA needs both)",
                            t->q_lora_rank);
    if (t->head_dim == 0 && t->hidden % t->heads)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "head_dim: 0 (hidden / heads) needs heads (%" PRId32
                            ") to divide hidden (%" PRId32 ")",
                            t->heads, t->hidden);
    return 0;
}

static int check_moe(const ps_transformer *t, char *err, size_t errlen)
{
    if (t->experts == 0) {
        if (t->top_k || t->shared_experts || t->first_dense || t->moe_ffn || t->shared_ffn)
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "experts: 0 (dense) with MoE fields set (top_k %" PRId32 ", shared_experts %" PRId32
                ", first_dense %" PRId32 ", moe_ffn %" PRId32 ", shared_ffn %" PRId32 ")",
                t->top_k, t->shared_experts, t->first_dense, t->moe_ffn, t->shared_ffn);
        if (t->ffn == 0)
            return ps__seterr_n(err, errlen, PS_ECONFIG, "ffn: 0 in a dense model (its MLP size)");
        return 0;
    }
    if (t->top_k < 1 || t->top_k > t->experts)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "top_k: %" PRId32 " is out of range [1, experts = %" PRId32 "]",
                            t->top_k, t->experts);
    if (t->first_dense > t->layers)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "first_dense: %" PRId32 " exceeds layers (%" PRId32 ")", t->first_dense,
                            t->layers);
    if (t->ffn == 0 && (t->first_dense > 0 || t->moe_ffn == 0))
        return ps__seterr_n(err, errlen, PS_ECONFIG, "ffn: 0 while %s",
                            t->first_dense > 0 ? "the first_dense layers need it"
                                               : "moe_ffn (0) falls back on it");
    return 0;
}

static int check_mtp(const ps_transformer *t, char *err, size_t errlen)
{
    if (t->mtp_layers > t->layers)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "mtp_layers: %" PRId32 " exceeds layers (%" PRId32 ")", t->mtp_layers,
                            t->layers);
    return 0;
}

int ps_transformer_check(const ps_transformer *t, char *err, size_t errlen)
{
    if (!t)
        return ps__seterr_n(err, errlen, PS_EINVAL, "model: NULL");
    int rc = check_name(t, err, errlen);
    if (!rc)
        rc = check_ranges(t, err, errlen);
    if (!rc)
        rc = check_attention(t, err, errlen);
    if (!rc)
        rc = check_moe(t, err, errlen);
    if (!rc)
        rc = check_mtp(t, err, errlen);
    return rc;
}

/* ---- parameter counts ---------------------------------------------------------------------- */

/* One norm over n features: RMSNorm has a scale, LayerNorm a scale and a bias. */
static double norm_params(const ps_transformer *t, double n)
{
    return (t->rms_norm ? 1.0 : 2.0) * n;
}

/* An MLP of size f: gate, up and down projections when gated, up and down otherwise. */
static double mlp_params(const ps_transformer *t, double f)
{
    return (t->gated_mlp ? 3.0 : 2.0) * t->hidden * f;
}

/*
 * Multi-head latent attention, as DeepSeek-V3's modeling code builds it: q_a_proj h -> q_lora
 * and its norm, q_b_proj q_lora -> a (nope + rope) (or q_proj h -> a (nope + rope) without a
 * query compression), kv_a_proj_with_mqa h -> kv_lora + rope and its norm, kv_b_proj
 * kv_lora -> a (nope + v), o_proj a v -> h.
 */
static double mla_params(const ps_transformer *t)
{
    double h = t->hidden, a = t->heads;
    double qk = (double)t->qk_nope_head_dim + t->qk_rope_head_dim;
    double q = t->q_lora_rank > 0 ? h * t->q_lora_rank + norm_params(t, t->q_lora_rank) +
                                        (double)t->q_lora_rank * a * qk
                                  : h * a * qk;
    double kv = h * ((double)t->kv_lora_rank + t->qk_rope_head_dim) +
                norm_params(t, t->kv_lora_rank) +
                (double)t->kv_lora_rank * a * ((double)t->qk_nope_head_dim + t->v_head_dim);
    double o = a * t->v_head_dim * h;
    return q + kv + o;
}

/* Q and O project h -> a d_h, K and V h -> g d_h; no biases. */
static double attention_params(const ps_transformer *t)
{
    if (t->kv_lora_rank > 0)
        return mla_params(t);
    double head_dim = t->head_dim ? t->head_dim : t->hidden / t->heads;
    return 2.0 * t->hidden * ((double)t->heads + t->kv_heads) * head_dim;
}

/* The routed experts' MLP size and the shared experts' (each 0 = the size it falls back on). */
static double expert_ffn(const ps_transformer *t)
{
    return t->moe_ffn ? t->moe_ffn : t->ffn;
}

static double shared_ffn(const ps_transformer *t)
{
    return t->shared_ffn ? t->shared_ffn : expert_ffn(t);
}

int ps_transformer_params(const ps_transformer *t, ps_param_count *out)
{
    if (!t || !out)
        return PS_EINVAL;
    int rc = ps_transformer_check(t, NULL, 0);
    if (rc)
        return rc;
    memset(out, 0, sizeof *out);
    double h = t->hidden;
    double attention = attention_params(t);
    double layer_norms = 2.0 * norm_params(t, h); /* before attention and before the MLP */

    out->embedding = (double)t->vocab * h;
    out->output = t->tied_embeddings ? 0.0 : (double)t->vocab * h;
    out->dense_layer = attention + mlp_params(t, t->ffn) + layer_norms;

    int32_t dense_layers = t->layers, moe_layers = 0;
    double active_moe_layer = 0.0;
    if (t->experts > 0) {
        dense_layers = t->first_dense;
        moe_layers = t->layers - t->first_dense;
        double expert = mlp_params(t, expert_ffn(t));
        double shared = t->shared_experts * mlp_params(t, shared_ffn(t));
        double router = h * t->experts;
        out->moe_expert = t->experts * expert;
        out->moe_layer = attention + layer_norms + out->moe_expert + shared + router;
        active_moe_layer = out->moe_layer - out->moe_expert + t->top_k * expert;
    }
    if (t->mtp_layers > 0) {
        /* DeepSeek-V3's MTP module: enorm and hnorm on the embedding and the previous depth's
         * hidden state, eh_proj 2h -> h, a decoder layer of the kind of the last one, and the
         * shared head's norm; the embedding and the output head are the main model's. */
        double block = moe_layers > 0 ? out->moe_layer : out->dense_layer;
        out->mtp_layer = block + 2.0 * h * h + 3.0 * norm_params(t, h);
    }

    double final_norm = norm_params(t, h);
    double outer = out->embedding + out->output + final_norm;
    out->total = outer + dense_layers * out->dense_layer + moe_layers * out->moe_layer +
                 t->mtp_layers * out->mtp_layer;
    /* Per token, as the published "active" figures count it: embedding and output included,
     * MTP layers excluded (they are not part of the model that serves). */
    out->active = outer + dense_layers * out->dense_layer + moe_layers * active_moe_layer;
    return 0;
}
