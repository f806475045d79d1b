/*
 * The estimate configuration: one JSON file with the model, the hardware and the job
 * (ps_estimate_config_load and ps_estimate_config_load_keys, docs/config.md "Estimate
 * configuration").
 *
 * Every key is declared once, in one of three tables: the top-level blocks, the fields a
 * "model" object may override on its "base", and the keys of "train" (name, type, range,
 * meaning, where the value goes; the default is read from ps_train_init). The loader, the "did
 * you mean" suggestions and the tables of docs/config.md all read them. A "hardware" object is
 * a hardware file (docs/hardware.md) and is loaded by hardware.c's own code under the path
 * "$.hardware"; an "hf" object is a HuggingFace config.json, loaded by ps_transformer_from_hf.
 * The loader checks everything in one pass and reports every problem at once (the diag
 * collector); the outputs are written only when there was none.
 * SPDX-License-Identifier: MIT
 */
#include "model/estimate_config.h"

#include "internal.h"
#include "io/json_diag.h"
#include "model/keys.h"
#include "model/transformer.h"

#include <cJSON.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- the tables ------------------------------------------------------------------------------ */

/* The top-level blocks. */
static const struct {
    const char *name, *type, *doc;
} blocks[] = {
    {"model", "string or object",
     "a built-in model (docs/models.md), `{\"hf\": {...}}` (a HuggingFace config.json object) or "
     "`{\"base\": NAME, ...}` (a built-in model with fields overridden); required"},
    {"hardware", "string or object",
     "a hardware preset or a hardware object (the hardware file of docs/hardware.md); required"},
    {"train", "object", "the parallel setup and the job; every key optional"},
};
#define N_BLOCKS (sizeof blocks / sizeof blocks[0])

/* The fields a "model" object may set on its base; their ranges are transformer.c's. */
static const struct {
    const char *name;
    size_t offset;
    const char *doc;
} model_keys[] = {
#define M(f, d)                                                                                    \
    {                                                                                              \
#f, offsetof(ps_transformer, f), d                                                         \
    }
    M(layers, "decoder layers"),
    M(hidden, "hidden size"),
    M(ffn, "MLP size of the dense layers"),
    M(heads, "attention heads"),
    M(kv_heads, "key/value heads (= heads for MHA)"),
    M(head_dim, "head dimension; 0 = hidden / heads"),
    M(vocab, "vocabulary size"),
    M(tied_embeddings, "1: the output layer shares the embedding"),
    M(gated_mlp, "1: SwiGLU-style MLP (3 GEMMs); 0: GeLU (2)"),
    M(rms_norm, "1: RMSNorm; 0: LayerNorm"),
    M(max_seq, "maximum position embeddings, informational; 0 = unknown"),
    M(experts, "routed experts; 0 = dense"),
    M(top_k, "experts per token"),
    M(moe_ffn, "one routed expert's MLP size; 0 = ffn"),
    M(shared_experts, "shared experts"),
    M(shared_ffn, "one shared expert's MLP size; 0 = moe_ffn"),
    M(first_dense, "the first first_dense layers are dense"),
    M(q_lora_rank, "MLA query compression rank; 0 = none"),
    M(kv_lora_rank, "MLA key/value compression rank; 0 = none"),
    M(qk_nope_head_dim, "MLA query/key head dimension without RoPE"),
    M(qk_rope_head_dim, "MLA query/key head dimension with RoPE"),
    M(v_head_dim, "MLA value head dimension"),
    M(mtp_layers, "multi-token-prediction layers"),
#undef M
};
#define N_MODEL_KEYS (sizeof model_keys / sizeof model_keys[0])

/* Every int32_t field of ps_transformer has its row: the struct is the name and the fields. */
_Static_assert(sizeof(ps_transformer) ==
                   sizeof(((ps_transformer *)0)->name) + N_MODEL_KEYS * sizeof(int32_t),
               "every field of ps_transformer has a row in model_keys[]");

typedef enum train_type {
    T_INT,    /* int32_t */
    T_INT64,  /* int64_t */
    T_BOOL,   /* int32_t 0 or 1, from true or false */
    T_CHOICE, /* int32_t, one of choices[] by name */
    T_NAME,   /* char[32], a schedule family or alias */
    T_LAYOUT, /* const char *, into the caller's buffer */
} train_type;

typedef struct choice {
    const char *name;
    int32_t value;
} choice;

static const choice precisions[] = {{"bf16", PS_PREC_BF16}, {"fp8", PS_PREC_FP8}, {NULL, 0}};
static const choice recomputes[] = {{"none", PS_RECOMPUTE_NONE},
                                    {"selective", PS_RECOMPUTE_SELECTIVE},
                                    {"full", PS_RECOMPUTE_FULL},
                                    {NULL, 0}};
static const choice a2as[] = {
    {"auto", PS_A2A_AUTO}, {"flat", PS_A2A_FLAT}, {"hierarchical", PS_A2A_HIERARCHICAL}, {NULL, 0}};

typedef struct train_key {
    const char *name; /* the JSON key */
    size_t offset;    /* in ps_train */
    train_type type;
    double lo, hi;         /* T_INT, T_INT64: the range [lo, hi] */
    const choice *choices; /* T_CHOICE */
    const char *doc;       /* the meaning column of docs/config.md */
} train_key;

#define AT(f) .name = #f, .offset = offsetof(ps_train, f)
#define INT(f, lo_, hi_) AT(f), .type = T_INT, .lo = lo_, .hi = hi_
#define BOOL(f) AT(f), .type = T_BOOL
#define CHOICE(f, list) AT(f), .type = T_CHOICE, .choices = list

/* The ranges are the command line's (src/cli/options.c), with 0 where ps_train gives 0 a
 * meaning ("the hardware's", "= tp", "even", "all"). */
static const train_key train_keys[] = {
    {INT(gpus, 1, 1 << 24), .doc = "devices in the job"},
    {INT(gpus_per_node, 0, 4096), .doc = "devices per node; 0 = the hardware's"},
    {INT(tp, 1, 4096), .doc = "tensor parallelism"},
    {INT(pp, 1, PS_MAX_PP), .doc = "pipeline ranks"},
    {INT(vpp, 1, PS_MAX_VPP), .doc = "chunks (virtual stages) per rank"},
    {INT(cp, 1, 4096), .doc = "context parallelism"},
    {INT(ep, 1, 1 << 20), .doc = "expert parallelism"},
    {INT(etp, 0, 4096), .doc = "expert tensor parallelism; 0 = tp"},
    {BOOL(sequence_parallel), .doc = "sequence parallelism with TP (acts when tp > 1)"},
    {AT(gbs), .type = T_INT64, .lo = 1, .hi = 1099511627776.0, .doc = "global batch, sequences"},
    {INT(mbs, 1, 1 << 20), .doc = "micro-batch size, sequences"},
    {INT(seq, 1, 1 << 26), .doc = "sequence length, tokens"},
    {CHOICE(precision, precisions), .doc = "precision of the GEMMs"},
    {CHOICE(recompute, recomputes), .doc = "activation recompute"},
    {INT(recompute_layers, 0, 1 << 20), .doc = "full recompute: layers per stage; 0 = all"},
    {BOOL(distributed_optimizer), .doc = "optimizer state sharded over data parallelism"},
    {BOOL(overlap_grad_reduce), .doc = "DP gradient reduce overlaps the last backwards"},
    {BOOL(overlap_param_gather), .doc = "parameter all-gather overlaps the forwards"},
    {AT(schedule), .type = T_NAME,
     .doc = "schedule family or alias; \"\" = interleaved if vpp > 1, else 1f1b"},
    {INT(group_size, 0, PS_MAX_MICROBATCHES),
     .doc = "interleaved/adaptive micro-batch group size (Megatron's "
            "microbatch_group_size_per_vp_stage); 0 = pp"},
    {CHOICE(a2a, a2as), .doc = "all-to-all of the MoE layers"},
    {BOOL(moe_token_drop),
     .doc = "MoE with a token capacity (drop and pad): no routing host synchronisation"},
    {AT(layout), .type = T_LAYOUT,
     .doc = "Megatron pipeline layout (docs/layout.md); null = even split"},
    {INT(first_stage_layers, 0, 1 << 20),
     .doc = "decoder layers of the first pipeline rank (over its vpp chunks); 0 = even"},
    {INT(last_stage_layers, 0, 1 << 20),
     .doc = "decoder layers of the last pipeline rank (over its vpp chunks); 0 = even"},
    {INT(extra_warmup, 0, PS_MAX_MICROBATCHES),
     .doc = "adaptive: extra warm-up forwards; 0 = the family's default (1)"},
    {BOOL(split_backward), .doc = "adaptive: each cool-down backward as I then W"},
};
#define N_TRAIN_KEYS (sizeof train_keys / sizeof train_keys[0])
_Static_assert(N_TRAIN_KEYS <= 64, "ps_estimate_config_load_keys gives one bit per train key");

#undef AT
#undef INT
#undef BOOL
#undef CHOICE

static const char *block_name(const void *ud, size_t i)
{
    (void)ud;
    return i < N_BLOCKS ? blocks[i].name : NULL;
}

/* The keys of a "model" object: "base", "name", "hf", then the fields. */
static const char *model_key_name(const void *ud, size_t i)
{
    (void)ud;
    static const char *const special[] = {"base", "name", "hf"};
    if (i < 3)
        return special[i];
    return i - 3 < N_MODEL_KEYS ? model_keys[i - 3].name : NULL;
}

static const char *train_key_name(const void *ud, size_t i)
{
    (void)ud;
    return i < N_TRAIN_KEYS ? train_keys[i].name : NULL;
}

static const char *choice_name(const void *ud, size_t i)
{
    const choice *c = ud;
    for (size_t j = 0; j <= i; j++)
        if (!c[j].name)
            return NULL;
    return c[i].name;
}

static const char *builtin_model_name(const void *ud, size_t i)
{
    (void)ud;
    return ps_transformer_builtin_name(i);
}

static const char *preset_name(const void *ud, size_t i)
{
    (void)ud;
    return ps_hardware_builtin_name(i);
}

/* Reports an unknown word (a model, a preset, a choice) with the closest of names. */
static void unknown_word(ps__json_diag *d, const char *path, const char *what, const char *word,
                         const char *(*names)(const void *, size_t), const void *ud)
{
    char quoted[PS__JSON_SHOW_MAX + 8] = "";
    ps__json_quote(quoted, sizeof quoted, word);
    const char *hint = ps__json_suggest(word, names, ud);
    if (hint)
        ps__json_error(d, path, "unknown %s %s (did you mean \"%s\"?)", what, quoted, hint);
    else
        ps__json_error(d, path, "unknown %s %s", what, quoted);
}

/* ---- the model ------------------------------------------------------------------------------- */

/* Runs a library loader that writes its own message (ps_transformer_from_hf,
 * ps_transformer_check) and reports a failure to d as one item under path. */
static void report_rc(ps__json_diag *d, const char *path, int rc, const char *msg)
{
    if (rc)
        ps__json_error(d, path, "%s", *msg ? msg : ps_strerror(rc));
}

/* The HuggingFace config object hf, read in place: its problems under $.model.hf.KEY, then
 * ps_transformer_check's (which name the struct's fields) under $.model.hf. */
static void load_hf(ps__json_diag *d, const cJSON *hf, ps_transformer *out)
{
    if (!cJSON_IsObject(hf)) {
        ps__json_type_error(d, "$.model.hf", "an object (a HuggingFace config.json)", hf);
        return;
    }
    ps_transformer t;
    if (ps__transformer_read_hf(hf, "$.model.hf", d, &t))
        return;
    char msg[PS__ERRLEN] = "";
    int rc = ps_transformer_check(&t, msg, sizeof msg);
    report_rc(d, "$.model.hf", rc, msg);
    if (!rc)
        *out = t;
}

static void load_model_field(ps__json_diag *d, const char *path, const cJSON *it, size_t offset,
                             ps_transformer *out)
{
    const ps__transformer_field *f = ps__transformer_field_at(offset);
    if (!f) {
        ps__json_error(d, path, "internal error: no field at offset %zu", offset);
        return;
    }
    if (!cJSON_IsNumber(it)) {
        ps__json_type_error(d, path, "an integer", it);
        return;
    }
    if (!ps__key_check_number(d, path, true, f->min, false, f->max, it->valuedouble))
        return;
    int32_t v = (int32_t)it->valuedouble;
    memcpy((char *)out + offset, &v, sizeof v);
}

static void load_model_members(ps__json_diag *d, const cJSON *obj, ps_transformer *out)
{
    for (const cJSON *it = obj->child; it; it = it->next) {
        char path[PS__JSON_PATH_LEN];
        ps__json_key_path(path, "$.model", it->string);
        if (ps__json_repeated(obj, it)) {
            ps__json_error(d, path, "duplicate key");
            continue;
        }
        if (strcmp(it->string, "base") == 0)
            continue; /* read first */
        if (strcmp(it->string, "hf") == 0) {
            ps__json_error(d, path, "not with \"base\": the HuggingFace config is the whole model");
            continue;
        }
        if (strcmp(it->string, "name") == 0) {
            size_t n = cJSON_IsString(it) ? strlen(it->valuestring) : 0;
            if (!cJSON_IsString(it))
                ps__json_type_error(d, path, "a string", it);
            else if (n == 0 || n >= sizeof out->name)
                ps__json_error(d, path, "must have 1 to %zu bytes, got %zu", sizeof out->name - 1,
                               n);
            else
                memcpy(out->name, it->valuestring, n + 1);
            continue;
        }
        size_t i = 0;
        while (i < N_MODEL_KEYS && strcmp(model_keys[i].name, it->string) != 0)
            i++;
        if (i == N_MODEL_KEYS)
            ps__json_unknown_key(d, "$.model", it->string,
                                 ps__json_suggest(it->string, model_key_name, NULL));
        else
            load_model_field(d, path, it, model_keys[i].offset, out);
    }
}

/* "model": a built-in name, {"hf": {...}}, or {"base": NAME, ...fields}. */
static void load_model(ps__json_diag *d, const cJSON *it, ps_transformer *out)
{
    if (cJSON_IsString(it)) {
        if (ps_transformer_builtin(it->valuestring, out) != 0)
            unknown_word(d, "$.model", "model", it->valuestring, builtin_model_name, NULL);
        return;
    }
    if (!cJSON_IsObject(it)) {
        ps__json_type_error(d, "$.model", "a model name or an object", it);
        return;
    }
    const cJSON *hf = cJSON_GetObjectItemCaseSensitive(it, "hf");
    const cJSON *base = cJSON_GetObjectItemCaseSensitive(it, "base");
    if (hf && !base) {
        if (cJSON_GetArraySize(it) != 1) {
            ps__json_error(d, "$.model", "with \"hf\", no other key (the config is the model)");
            return;
        }
        load_hf(d, hf, out);
        return;
    }
    if (!base) {
        ps__json_error(d, "$.model",
                       "needs \"base\" (a built-in model) or \"hf\" (a config.json object)");
        return;
    }
    if (!cJSON_IsString(base)) {
        ps__json_type_error(d, "$.model.base", "a string (a built-in model)", base);
        return;
    }
    if (ps_transformer_builtin(base->valuestring, out) != 0) {
        unknown_word(d, "$.model.base", "model", base->valuestring, builtin_model_name, NULL);
        return;
    }
    size_t before = d->errors;
    load_model_members(d, it, out);
    if (d->errors != before)
        return;
    char msg[PS__ERRLEN] = "";
    report_rc(d, "$.model", ps_transformer_check(out, msg, sizeof msg), msg);
}

/* ---- the hardware ---------------------------------------------------------------------------- */

static void load_hardware(ps__json_diag *d, const cJSON *it, ps_hardware *out)
{
    if (cJSON_IsString(it)) {
        if (ps_hardware_builtin(it->valuestring, out) != 0)
            unknown_word(d, "$.hardware", "preset", it->valuestring, preset_name, NULL);
        return;
    }
    if (!cJSON_IsObject(it)) {
        ps__json_type_error(d, "$.hardware", "a preset name or an object", it);
        return;
    }
    ps__hardware_load(d, it, "$.hardware", out);
}

/* ---- the job --------------------------------------------------------------------------------- */

typedef struct layout_out {
    char *buf;
    size_t cap;
} layout_out;

static void set_i32(ps_train *t, const train_key *k, int32_t v)
{
    memcpy((char *)t + k->offset, &v, sizeof v);
}

static void load_train_value(ps__json_diag *d, const char *path, const train_key *k,
                             const cJSON *it, ps_train *t, layout_out *layout)
{
    switch (k->type) {
    case T_INT:
    case T_INT64:
        if (!cJSON_IsNumber(it)) {
            ps__json_type_error(d, path, "an integer", it);
        } else if (ps__key_check_number(d, path, true, k->lo, false, k->hi, it->valuedouble)) {
            if (k->type == T_INT64)
                t->gbs = (int64_t)it->valuedouble; /* gbs is the one int64_t key */
            else
                set_i32(t, k, (int32_t)it->valuedouble);
        }
        return;
    case T_BOOL:
        if (!cJSON_IsBool(it))
            ps__json_type_error(d, path, "true or false", it);
        else
            set_i32(t, k, cJSON_IsTrue(it) ? 1 : 0);
        return;
    case T_CHOICE:
        if (!cJSON_IsString(it)) {
            ps__json_type_error(d, path, "a string", it);
            return;
        }
        for (const choice *c = k->choices; c->name; c++) {
            if (strcmp(c->name, it->valuestring) == 0) {
                set_i32(t, k, c->value);
                return;
            }
        }
        unknown_word(d, path, k->name, it->valuestring, choice_name, k->choices);
        return;
    case T_NAME:
        if (!cJSON_IsString(it))
            ps__json_type_error(d, path, "a string", it);
        else if (strlen(it->valuestring) >= sizeof t->schedule)
            ps__json_error(d, path, "longer than %zu bytes", sizeof t->schedule - 1);
        else
            snprintf(t->schedule, sizeof t->schedule, "%s", it->valuestring);
        return;
    case T_LAYOUT:
        if (cJSON_IsNull(it)) {
            t->layout = NULL;
        } else if (!cJSON_IsString(it)) {
            ps__json_type_error(d, path, "a string or null", it);
        } else if (!layout->buf || strlen(it->valuestring) >= layout->cap) {
            ps__json_error(d, path, "%zu bytes do not fit the caller's buffer of %zu",
                           strlen(it->valuestring), layout->buf ? layout->cap : 0);
        } else {
            memcpy(layout->buf, it->valuestring, strlen(it->valuestring) + 1);
            t->layout = layout->buf;
        }
        return;
    }
}

/* Loads "train" into *t; sets bit i of *named for each key train_keys[i] it names. */
static void load_train(ps__json_diag *d, const cJSON *obj, ps_train *t, uint64_t *named,
                       layout_out *layout)
{
    if (!cJSON_IsObject(obj)) {
        ps__json_type_error(d, "$.train", "an object", obj);
        return;
    }
    for (const cJSON *it = obj->child; it; it = it->next) {
        char path[PS__JSON_PATH_LEN];
        ps__json_key_path(path, "$.train", it->string);
        if (ps__json_repeated(obj, it)) {
            ps__json_error(d, path, "duplicate key");
            continue;
        }
        size_t i = 0;
        while (i < N_TRAIN_KEYS && strcmp(train_keys[i].name, it->string) != 0)
            i++;
        if (i == N_TRAIN_KEYS) {
            ps__json_unknown_key(d, "$.train", it->string,
                                 ps__json_suggest(it->string, train_key_name, NULL));
        } else {
            *named |= (uint64_t)1 << i;
            load_train_value(d, path, &train_keys[i], it, t, layout);
        }
    }
}

/* ---- the file -------------------------------------------------------------------------------- */

typedef struct loaded {
    ps_transformer model;
    ps_hardware hw;
    ps_train train;
    uint64_t named_keys; /* bit i: "train" names train_keys[i] */
} loaded;

static void load_root(ps__json_diag *d, const cJSON *root, loaded *l, layout_out *layout)
{
    if (!cJSON_IsObject(root)) {
        ps__json_type_error(d, "$", "an object", root);
        return;
    }
    for (const cJSON *it = root->child; it; it = it->next) {
        char path[PS__JSON_PATH_LEN];
        ps__json_key_path(path, "$", it->string);
        if (ps__json_repeated(root, it))
            ps__json_error(d, path, "duplicate key");
        else if (strcmp(it->string, "model") == 0)
            load_model(d, it, &l->model);
        else if (strcmp(it->string, "hardware") == 0)
            load_hardware(d, it, &l->hw);
        else if (strcmp(it->string, "train") == 0)
            load_train(d, it, &l->train, &l->named_keys, layout);
        else
            ps__json_unknown_key(d, "$", it->string,
                                 ps__json_suggest(it->string, block_name, NULL));
    }
    for (size_t i = 0; i < 2; i++) /* model and hardware are required */
        if (!cJSON_GetObjectItemCaseSensitive(root, blocks[i].name))
            ps__json_error(d, "$", "missing \"%s\" (required)", blocks[i].name);
}

const char *ps_estimate_config_train_key(size_t i)
{
    return train_key_name(NULL, i);
}

int ps_estimate_config_load(const char *json, size_t len, ps_transformer *model, ps_hardware *hw,
                            ps_train *train, char *layout_buf, size_t layout_cap, char *err,
                            size_t errlen)
{
    return ps_estimate_config_load_keys(json, len, model, hw, train, NULL, layout_buf, layout_cap,
                                        err, errlen);
}

int ps_estimate_config_load_keys(const char *json, size_t len, ps_transformer *model,
                                 ps_hardware *hw, ps_train *train, uint64_t *named_keys,
                                 char *layout_buf, size_t layout_cap, char *err, size_t errlen)
{
    if (named_keys)
        *named_keys = 0;
    if (!json || !model || !hw || !train)
        return ps__seterr_n(err, errlen, PS_EINVAL, "%s",
                            "estimate configuration: NULL text or output");
    char msg[PS__ERRLEN];
    cJSON *root = NULL;
    int rc = ps__json_parse(json, len, &root, msg);
    if (rc)
        return ps__seterr_n(err, errlen, rc, "%s", msg);
    loaded l;
    memset(&l, 0, sizeof l);
    ps_train_init(&l.train);
    layout_out layout = {layout_buf, layout_cap};
    ps__json_diag d;
    ps__json_diag_init(&d);
    load_root(&d, root, &l, &layout);
    cJSON_Delete(root);
    if (d.errors) {
        ps__json_diag_render(&d, msg);
        return ps__seterr_n(err, errlen, PS_ECONFIG, "%s", msg);
    }
    *model = l.model;
    *hw = l.hw;
    *train = l.train;
    if (named_keys)
        *named_keys = l.named_keys;
    return 0;
}

/* ---- docs/config.md -------------------------------------------------------------------------- */

typedef void (*doc_write)(void *, const char *);

static void doc_blocks(doc_write write, void *ud)
{
    ps__doc_emit(write, ud, "| key | type | meaning |\n|---|---|---|\n");
    for (size_t i = 0; i < N_BLOCKS; i++)
        ps__doc_emit(write, ud, "| `%s` | %s | %s |\n", blocks[i].name, blocks[i].type,
                     blocks[i].doc);
}

static void doc_model(doc_write write, void *ud)
{
    ps__doc_emit(write, ud, "| key | type | range | meaning |\n|---|---|---|---|\n");
    ps__doc_emit(write, ud,
                 "| `base` | string | a built-in model | the model the object starts "
                 "from; required without `hf` |\n");
    ps__doc_emit(write, ud,
                 "| `hf` | object | a config.json | a HuggingFace config.json; no "
                 "other key with it |\n");
    ps__doc_emit(write, ud,
                 "| `name` | string | 1 to %zu bytes | the name in reports; default: "
                 "the base's |\n",
                 sizeof((ps_transformer *)0)->name - 1);
    for (size_t i = 0; i < N_MODEL_KEYS; i++) {
        const ps__transformer_field *f = ps__transformer_field_at(model_keys[i].offset);
        ps__doc_emit(write, ud, "| `%s` | integer | %ld … %ld | %s |\n", model_keys[i].name,
                     f ? (long)f->min : 0L, f ? (long)f->max : 0L, model_keys[i].doc);
    }
}

/* The default of k, read from ps_train_init. */
static void train_default(char *buf, size_t n, const ps_train *t, const train_key *k)
{
    const char *at = (const char *)t + k->offset;
    int32_t v = 0;
    if (k->type == T_INT || k->type == T_BOOL || k->type == T_CHOICE)
        memcpy(&v, at, sizeof v);
    switch (k->type) {
    case T_INT:
        snprintf(buf, n, "%ld", (long)v);
        return;
    case T_INT64:
        snprintf(buf, n, "%lld", (long long)t->gbs);
        return;
    case T_BOOL:
        snprintf(buf, n, "%s", v ? "true" : "false");
        return;
    case T_CHOICE:
        for (const choice *c = k->choices; c->name; c++)
            if (c->value == v)
                snprintf(buf, n, "`\"%s\"`", c->name);
        return;
    case T_NAME:
        snprintf(buf, n, "`\"%s\"`", t->schedule);
        return;
    case T_LAYOUT:
        snprintf(buf, n, "%s", t->layout ? t->layout : "null");
        return;
    }
}

static void train_range(char *buf, size_t n, const train_key *k)
{
    buf[0] = '\0';
    switch (k->type) {
    case T_INT:
    case T_INT64:
        snprintf(buf, n, "%.15g … %.15g", k->lo, k->hi);
        return;
    case T_BOOL:
        snprintf(buf, n, "true, false");
        return;
    case T_CHOICE:
        for (const choice *c = k->choices; c->name; c++) {
            size_t used = strlen(buf);
            snprintf(buf + used, n - used, "%s`\"%s\"`", c == k->choices ? "" : ", ", c->name);
        }
        return;
    case T_NAME:
        snprintf(buf, n, "a family or alias");
        return;
    case T_LAYOUT:
        snprintf(buf, n, "a layout string");
        return;
    }
}

static void doc_train(doc_write write, void *ud)
{
    static const char *const types[] = {"integer", "integer", "boolean",
                                        "string",  "string",  "string or null"};
    ps_train t;
    ps_train_init(&t);
    ps__doc_emit(write, ud, "| key | type | range | default | meaning |\n|---|---|---|---|---|\n");
    for (size_t i = 0; i < N_TRAIN_KEYS; i++) {
        const train_key *k = &train_keys[i];
        char range[128], dflt[64] = "";
        train_range(range, sizeof range, k);
        train_default(dflt, sizeof dflt, &t, k);
        ps__doc_emit(write, ud, "| `%s` | %s | %s | %s | %s |\n", k->name, types[k->type], range,
                     dflt, k->doc);
    }
}

static const struct {
    const char *name;
    void (*write)(doc_write, void *);
} doc_tables[] = {{"blocks", doc_blocks}, {"model", doc_model}, {"train", doc_train}};

const char *ps__estimate_config_doc_table(size_t i)
{
    return i < sizeof doc_tables / sizeof doc_tables[0] ? doc_tables[i].name : NULL;
}

int ps__estimate_config_doc_markdown(const char *name, void (*write)(void *ud, const char *text),
                                     void *ud)
{
    for (size_t i = 0; i < sizeof doc_tables / sizeof doc_tables[0]; i++) {
        if (strcmp(doc_tables[i].name, name) == 0) {
            doc_tables[i].write(write, ud);
            return 0;
        }
    }
    return PS_ENOTFOUND;
}
