/*
 * ps_transformer_from_hf(): a ps_transformer from a HuggingFace config.json (docs/models.md
 * lists the keys). The phases: parse the text with cJSON, read the keys of the table below
 * into the struct (checking each value's type and range under the key the user wrote), read
 * the keys that need more than a number (the activation, the norm, the MoE layer pattern),
 * fill what the config left out with the defaults of its model family, and check the result
 * with ps_transformer_check().
 *
 * Every problem of the reading phases is reported, in one message, through the JSON
 * diagnostics collector of src/io (json_diag.h), under the key's JSON path ("$.hidden_size" in
 * a config.json; ps__transformer_read_hf takes the path of a config nested in another file,
 * "$.model.hf.hidden_size" in an estimate configuration); keys the model does not use are
 * ignored, since real configs carry dozens of them (tokenizer ids, rope scaling, dtypes).
 * SPDX-License-Identifier: MIT
 */
#include "model/transformer.h"

#include "io/json_diag.h"

#include <cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* Larger texts are refused before parsing: a config.json is a few kilobytes. */
#define HF_MAX_BYTES ((size_t)16 << 20)

/* ---- the keys ------------------------------------------------------------------------------ */

typedef enum read_kind {
    READ_INT,      /* an integer in the field's range */
    READ_INT_NULL, /* the same, or null for 0 (DeepSeek's q_lora_rank, GPT-2's n_inner) */
    READ_BOOL,     /* true or false */
} read_kind;

typedef struct hf_key {
    const char *key;
    size_t offset; /* offsetof(ps_transformer, field) */
    read_kind kind;
} hf_key;

#define KEY(k, f, kind)                                                                            \
    {                                                                                              \
        k, offsetof(ps_transformer, f), kind                                                       \
    }

/*
 * The keys read into a field as they are. Several keys may fill one field (GPT-2's names,
 * each MoE family's name for the expert count); when two are present they must agree.
 */
static const hf_key keys[] = {
    KEY("num_hidden_layers", layers, READ_INT),
    KEY("n_layer", layers, READ_INT),
    KEY("hidden_size", hidden, READ_INT),
    KEY("n_embd", hidden, READ_INT),
    KEY("intermediate_size", ffn, READ_INT),
    KEY("n_inner", ffn, READ_INT_NULL),
    KEY("num_attention_heads", heads, READ_INT),
    KEY("n_head", heads, READ_INT),
    KEY("num_key_value_heads", kv_heads, READ_INT_NULL),
    KEY("head_dim", head_dim, READ_INT_NULL),
    KEY("vocab_size", vocab, READ_INT),
    KEY("tie_word_embeddings", tied_embeddings, READ_BOOL),
    KEY("max_position_embeddings", max_seq, READ_INT),
    KEY("n_positions", max_seq, READ_INT),
    KEY("num_local_experts", experts, READ_INT_NULL),
    KEY("n_routed_experts", experts, READ_INT_NULL),
    KEY("num_experts", experts, READ_INT_NULL),
    KEY("num_experts_per_tok", top_k, READ_INT_NULL),
    KEY("moe_intermediate_size", moe_ffn, READ_INT_NULL),
    KEY("n_shared_experts", shared_experts, READ_INT_NULL),
    KEY("shared_expert_intermediate_size", shared_ffn, READ_INT_NULL),
    KEY("first_k_dense_replace", first_dense, READ_INT_NULL),
    KEY("q_lora_rank", q_lora_rank, READ_INT_NULL),
    KEY("kv_lora_rank", kv_lora_rank, READ_INT_NULL),
    KEY("qk_nope_head_dim", qk_nope_head_dim, READ_INT_NULL),
    KEY("qk_rope_head_dim", qk_rope_head_dim, READ_INT_NULL),
    KEY("v_head_dim", v_head_dim, READ_INT_NULL),
    KEY("num_nextn_predict_layers", mtp_layers, READ_INT_NULL),
};

#undef KEY

#define N_KEYS (sizeof keys / sizeof keys[0])
/* Slots for "which key set this field", indexed by the field's offset in int32_t units. */
#define N_SLOTS (sizeof(ps_transformer) / sizeof(int32_t))

/* Model families whose configs leave out the norm or the activation: RMSNorm and SiLU. */
static const char *const rms_silu_families[] = {"llama", "mistral",  "mixtral",
                                                "qwen",  "deepseek", "pangu"};

/* What a config's reading found, beyond the fields themselves. */
typedef struct hf_read {
    ps_transformer *t;
    ps__json_diag *diag;
    const char *parent;           /* the JSON path of the config object */
    char path[PS__JSON_PATH_LEN]; /* the last path at() wrote */
    const char *set_by[N_SLOTS];  /* the key that filled each field, NULL = none */
    bool present[N_SLOTS];        /* a key of the field was in the config, valid or not */
    const char *model_type;       /* NULL when absent */
    bool gpt2;                    /* GPT-2's key names (n_embd, ...) or model_type "gpt2" */
} hf_read;

/* ---- parsing ------------------------------------------------------------------------------- */

static int parse(const char *json, size_t len, cJSON **root, char *err, size_t errlen)
{
    if (len > HF_MAX_BYTES)
        return ps__seterr_n(err, errlen, PS_ERANGE, "config.json of %zu bytes (at most %zu)", len,
                            HF_MAX_BYTES);
    char msg[PS__ERRLEN];
    int rc = ps__json_parse(json, len, root, msg);
    if (rc)
        return ps__seterr_n(err, errlen, rc, "%s", msg);
    if (!cJSON_IsObject(*root)) {
        char got[PS__JSON_ITEM_LEN];
        ps__json_describe(got, sizeof got, *root);
        return ps__seterr_n(err, errlen, PS_ECONFIG, "config.json: expected a JSON object, got %s",
                            got);
    }
    return 0;
}

/* ---- reading the keys ---------------------------------------------------------------------- */

/* The JSON path of the config's key (valid until the next call). */
static const char *at(hf_read *r, const char *key)
{
    ps__json_key_path(r->path, r->parent, key);
    return r->path;
}

static int32_t *slot(ps_transformer *t, size_t offset)
{
    return (int32_t *)(void *)((char *)t + offset);
}

/* Reads one table key into its field, or reports why its value does not fit the field. */
static void read_key(hf_read *r, const hf_key *k, const cJSON *it)
{
    const ps__transformer_field *f = ps__transformer_field_at(k->offset);
    if (!f) { /* the table names only fields of the field table: a broken invariant */
        ps__json_error(r->diag, at(r, k->key), "internal error: no field at offset %zu", k->offset);
        return;
    }
    int32_t v = 0;
    if (k->kind == READ_BOOL) {
        if (!cJSON_IsBool(it)) {
            ps__json_type_error(r->diag, at(r, k->key), "true or false", it);
            return;
        }
        v = cJSON_IsTrue(it) ? 1 : 0;
    } else if (k->kind == READ_INT_NULL && cJSON_IsNull(it)) {
        v = 0;
    } else {
        if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble)) {
            ps__json_type_error(r->diag, at(r, k->key),
                                f->min > 0 ? "a positive integer" : "a non-negative integer", it);
            return;
        }
        double d = it->valuedouble;
        if (d < f->min || d > f->max) {
            ps__json_error(r->diag, at(r, k->key),
                           "%.15g is out of range [%" PRId32 ", %" PRId32 "]", d, f->min, f->max);
            return;
        }
        v = (int32_t)d;
    }
    size_t s = k->offset / sizeof(int32_t);
    if (r->set_by[s] && *slot(r->t, k->offset) != v) {
        ps__json_error(r->diag, at(r, k->key), "%" PRId32 " conflicts with %s (%" PRId32 ")", v,
                       r->set_by[s], *slot(r->t, k->offset));
        return;
    }
    *slot(r->t, k->offset) = v;
    r->set_by[s] = k->key;
}

static void read_table_keys(hf_read *r, const cJSON *root)
{
    for (size_t i = 0; i < N_KEYS; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, keys[i].key);
        if (it) {
            r->present[keys[i].offset / sizeof(int32_t)] = true;
            read_key(r, &keys[i], it);
        }
    }
}

static bool was_set(const hf_read *r, size_t offset)
{
    return r->set_by[offset / sizeof(int32_t)] != NULL;
}

/* The string at key, or NULL (absent); a value of another type is reported. */
static const char *read_string(hf_read *r, const cJSON *root, const char *key)
{
    const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!it)
        return NULL;
    if (!cJSON_IsString(it)) {
        ps__json_type_error(r->diag, at(r, key), "a string", it);
        return NULL;
    }
    return it->valuestring;
}

static bool starts_with(const char *s, const char *prefix)
{
    return !strncmp(s, prefix, strlen(prefix));
}

static bool rms_silu_family(const hf_read *r)
{
    if (!r->model_type)
        return false;
    for (size_t i = 0; i < sizeof rms_silu_families / sizeof rms_silu_families[0]; i++)
        if (starts_with(r->model_type, rms_silu_families[i]))
            return true;
    return false;
}

/* The activations a config names, and whether each makes the MLP gated. */
typedef struct activation {
    const char *name;
    bool prefix; /* matches every name that starts with it (gelu_new, gelu_pytorch_tanh, ...) */
    int32_t gated;
} activation;

static const activation activations[] = {
    {"silu", false, 1}, {"swish", false, 1}, {"swiglu", false, 1},
    {"gelu", true, 0},  {"relu", true, 0},
};

#define N_ACTIVATIONS (sizeof activations / sizeof activations[0])

static const char *activation_name(const void *ud, size_t i)
{
    (void)ud;
    return i < N_ACTIVATIONS ? activations[i].name : NULL;
}

/*
 * hidden_act (GPT-2: activation_function): SiLU-family names mean a gated MLP (3 GEMMs), GeLU
 * and ReLU names a plain one (2 GEMMs). Gemma's configs name a GeLU for a gated MLP, so the
 * Gemma family is gated whatever the name.
 */
static void read_activation(hf_read *r, const cJSON *root)
{
    const char *key = "hidden_act";
    const char *act = read_string(r, root, key);
    if (!act && !cJSON_GetObjectItemCaseSensitive(root, key)) {
        key = "activation_function";
        act = read_string(r, root, key);
    }
    if (!act) {
        if (cJSON_GetObjectItemCaseSensitive(root, key))
            return; /* reported as a type error */
        if (rms_silu_family(r) || r->gpt2) {
            r->t->gated_mlp = r->gpt2 ? 0 : 1;
            return;
        }
        ps__json_error(r->diag, at(r, "hidden_act"),
                       "missing (needed to tell a gated MLP from a plain one)");
        return;
    }
    for (size_t i = 0; i < N_ACTIVATIONS; i++) {
        const activation *a = &activations[i];
        if (a->prefix ? starts_with(act, a->name) : !strcmp(act, a->name)) {
            bool gemma = r->model_type && starts_with(r->model_type, "gemma");
            r->t->gated_mlp = gemma ? 1 : a->gated;
            return;
        }
    }
    char shown[PS__JSON_ITEM_LEN] = "";
    ps__json_quote(shown, sizeof shown, act);
    const char *hint = ps__json_suggest(act, activation_name, NULL);
    ps__json_error(r->diag, at(r, key),
                   "unknown activation %s%s%s%s (known: silu, swish, swiglu, gelu*, relu*)", shown,
                   hint ? " (did you mean \"" : "", hint ? hint : "", hint ? "\"?)" : "");
}

/* rms_norm_eps means RMSNorm, layer_norm_eps (GPT-2: layer_norm_epsilon) LayerNorm; without
 * either, the family decides (RMSNorm for Llama, Mistral, Qwen, DeepSeek; else LayerNorm). */
static void read_norm(hf_read *r, const cJSON *root)
{
    if (cJSON_GetObjectItemCaseSensitive(root, "rms_norm_eps"))
        r->t->rms_norm = 1;
    else if (cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps") ||
             cJSON_GetObjectItemCaseSensitive(root, "layer_norm_epsilon"))
        r->t->rms_norm = 0;
    else
        r->t->rms_norm = rms_silu_family(r) ? 1 : 0;
}

/*
 * The layer patterns the model cannot describe: it knows a run of first_dense dense layers
 * followed by MoE layers. Qwen's decoder_sparse_step (MoE every n-th layer) and mlp_only_layers
 * (a list of dense layers), and DeepSeek's moe_layer_freq, must say "every layer".
 */
static void read_moe_pattern(hf_read *r, const cJSON *root)
{
    static const char *const every_layer[] = {"decoder_sparse_step", "moe_layer_freq"};
    for (size_t i = 0; i < sizeof every_layer / sizeof every_layer[0]; i++) {
        const cJSON *it = cJSON_GetObjectItemCaseSensitive(root, every_layer[i]);
        if (!it || cJSON_IsNull(it) || r->t->experts == 0)
            continue;
        if (!cJSON_IsNumber(it) || it->valuedouble != 1.0) {
            char got[PS__JSON_ITEM_LEN];
            ps__json_describe(got, sizeof got, it);
            ps__json_error(r->diag, at(r, every_layer[i]),
                           "%s is not supported (only 1: every layer after the first dense ones "
                           "is an MoE layer)",
                           got);
        }
    }
    const cJSON *dense = cJSON_GetObjectItemCaseSensitive(root, "mlp_only_layers");
    if (dense && !cJSON_IsNull(dense) && r->t->experts > 0 &&
        (!cJSON_IsArray(dense) || cJSON_GetArraySize(dense) > 0)) {
        char got[PS__JSON_ITEM_LEN];
        ps__json_describe(got, sizeof got, dense);
        ps__json_error(r->diag, at(r, "mlp_only_layers"),
                       "%s is not supported (only an empty list; use first_k_dense_replace for "
                       "leading dense layers)",
                       got);
    }
}

/* _name_or_path, else model_type, else "hf-model"; cut to the field's size. */
static void read_name(hf_read *r, const cJSON *root)
{
    const char *name = read_string(r, root, "_name_or_path");
    if (!name || !*name)
        name = r->model_type && *r->model_type ? r->model_type : "hf-model";
    snprintf(r->t->name, sizeof r->t->name, "%s", name);
}

/* ---- defaults ------------------------------------------------------------------------------ */

/* Reports a field no key mentioned (a key with a wrong value was reported already). */
static void require(hf_read *r, size_t offset, const char *key)
{
    if (!r->present[offset / sizeof(int32_t)])
        ps__json_error(r->diag, at(r, key), "missing (required)");
}

/* What a config may leave out, filled as its family's code does. */
static void fill_defaults(hf_read *r)
{
    ps_transformer *t = r->t;
    require(r, offsetof(ps_transformer, layers), "num_hidden_layers");
    require(r, offsetof(ps_transformer, hidden), "hidden_size");
    require(r, offsetof(ps_transformer, heads), "num_attention_heads");
    require(r, offsetof(ps_transformer, vocab), "vocab_size");
    if (t->kv_heads == 0)
        t->kv_heads = t->heads; /* absent or null: MHA */
    if (t->ffn == 0 && r->gpt2)
        t->ffn = 4 * t->hidden; /* GPT-2: n_inner null means 4 n_embd */
    else if (!r->present[offsetof(ps_transformer, ffn) / sizeof(int32_t)] &&
             !(t->experts > 0 && t->first_dense == 0 && t->moe_ffn > 0))
        ps__json_error(r->diag, at(r, "intermediate_size"), "missing (required: the MLP size)");
    if (!was_set(r, offsetof(ps_transformer, tied_embeddings)))
        t->tied_embeddings = r->gpt2 ? 1 : 0; /* GPT-2 ties its head to the embedding */
    if (t->shared_ffn > 0 && !was_set(r, offsetof(ps_transformer, shared_experts)))
        t->shared_experts = 1; /* Qwen2-MoE: one shared expert of that size */
}

/* ---- the entry points ---------------------------------------------------------------------- */

/* Reads the config into *r->t; PS_ECONFIG when it reported a problem. */
static int read_config(hf_read *r, const cJSON *root)
{
    size_t before = r->diag->errors;
    r->model_type = read_string(r, root, "model_type");
    r->gpt2 = (r->model_type && !strcmp(r->model_type, "gpt2")) ||
              cJSON_GetObjectItemCaseSensitive(root, "n_embd") != NULL;
    read_table_keys(r, root);
    read_activation(r, root);
    read_norm(r, root);
    read_moe_pattern(r, root);
    read_name(r, root);
    fill_defaults(r);
    return r->diag->errors != before ? PS_ECONFIG : 0;
}

int ps__transformer_read_hf(const cJSON *root, const char *parent, ps__json_diag *d,
                            ps_transformer *out)
{
    ps_transformer t;
    memset(&t, 0, sizeof t);
    hf_read r = {.t = &t, .diag = d, .parent = parent};
    int rc = read_config(&r, root);
    if (!rc)
        *out = t;
    return rc;
}

int ps_transformer_from_hf(const char *json, size_t len, ps_transformer *out, char *err,
                           size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    if (!json || !out)
        return ps__seterr_n(err, errlen, PS_EINVAL, "config.json: NULL %s",
                            json ? "output" : "text");
    cJSON *root = NULL;
    int rc = parse(json, len, &root, err, errlen);
    if (rc)
        goto out;
    ps_transformer t;
    ps__json_diag d;
    ps__json_diag_init(&d);
    rc = ps__transformer_read_hf(root, "$", &d, &t);
    if (rc) {
        char msg[PS__ERRLEN] = "";
        ps__json_diag_render(&d, msg);
        ps__seterr_n(err, errlen, rc, "%s", msg);
        goto out;
    }
    rc = ps_transformer_check(&t, err, errlen);
    if (!rc)
        *out = t;
out:
    cJSON_Delete(root);
    return rc;
}
