/*
 * JSON configuration of a problem (docs/config.md). The text is parsed with cJSON, checked
 * completely into a staging struct, and only then applied through the ps_problem_set_*
 * functions, so that a failing load leaves the problem exactly as it was. Every problem found is
 * reported in one message, each under its JSON path, because a user fixing a config file wants
 * the whole list at once rather than one error per run.
 *
 * The MoE blocks ("model", "cluster", "moe") describe one MoE model together. Their durations
 * are derived (ps_moe_derive) or given, merged and checked while the config is checked, so
 * that a derivation failure is one more reported item and applying cannot meet a new error.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <cJSON.h>

#include <ctype.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* Larger texts are refused before parsing: no real config comes close. */
#define CONFIG_MAX_BYTES ((size_t)64 << 20)
/* Bytes of a user-supplied string (a key, a value) quoted in a message. */
#define SHOW_MAX 48
/* Bytes of the input quoted after "near" in a parse error. */
#define NEAR_MAX 16
/* Room for one path: a prefix, an index and a quoted, escaped key of SHOW_MAX bytes. */
#define PATH_LEN 320
/* Room for one reported item (path, message and a quoted value). */
#define ITEM_LEN 768
/* The limits of ps_moe_derive(): devices per node and nodes, bytes per element, latencies (in
 * microseconds) and peak TFLOP/s. Other dimensions are at most PS_MAX_COST. */
#define MAX_EP_COUNT 1e6
#define MAX_BYTES 64
#define MAX_LATENCY 1e9
#define MAX_TFLOPS 1e9
/* The largest compute slowdown ps_problem_set_moe() accepts. */
#define MAX_SLOWDOWN 100

enum {
    LEVEL_ROOT,
    LEVEL_COSTS,
    LEVEL_STAGE,
    LEVEL_MEMORY,
    LEVEL_STAGE_MEM,
    LEVEL_MODEL,
    LEVEL_CLUSTER,
    LEVEL_MOE,
    LEVEL_LAYER,
    LEVEL_DENSE_LAYER,
    LEVEL_COUNT
};

enum {
    KEY_SCHEDULE,
    KEY_PP,
    KEY_VPP,
    KEY_MICROBATCHES,
    KEY_GROUP_SIZE,
    KEY_EXTRA_WARMUP,
    KEY_SPLIT_BACKWARD,
    KEY_COSTS,
    KEY_STAGE_COSTS,
    KEY_MEMORY,
    KEY_STAGE_MEMORY,
    KEY_MODEL,
    KEY_CLUSTER,
    KEY_MOE,
    KEY_COUNT
};

static const char *const root_keys[] = {
    "schedule",       "pp",    "vpp",         "microbatches", "group_size",   "extra_warmup",
    "split_backward", "costs", "stage_costs", "memory",       "stage_memory", "model",
    "cluster",        "moe",   NULL};
/* Indexed by ps_cost. */
static const char *const cost_keys[] = {"f", "b", "w", "c", "fb", NULL};
static const char *const stage_keys[] = {"f", "b", "w", NULL};
/* f, b, w in ps_stage_mem order, then the per-rank limit. */
enum { MEM_LIMIT = 3 };
static const char *const memory_keys[] = {"f", "b", "w", "limit", NULL};

enum {
    MOE_A2A,
    MOE_PLANNER,
    MOE_P2P,
    MOE_SLOWDOWN,
    MOE_LAYERS,
    MOE_DENSE_LAYERS,
    MOE_STAGE_LAYERS,
    MOE_LAYER,
    MOE_DENSE_LAYER,
    MOE_KEY_COUNT
};
static const char *const moe_keys[] = {
    "a2a",          "planner",      "p2p",   "slowdown",    "layers",
    "dense_layers", "stage_layers", "layer", "dense_layer", NULL};
/* Indexed by ps_a2a and ps_planner. */
static const char *const a2a_names[] = {"auto", "flat", "hierarchical", NULL};
static const char *const planner_names[] = {"adaptive", "mindspeed", "megatron", "serial", NULL};

/*
 * The fields of "model" (ps_model_dims) and "cluster" (ps_cluster): how each is read, its
 * range, whether ps_moe_derive() needs it, and where it lives in the struct. A number field is
 * a double in [lo, hi] (or (lo, hi] when strict); a whole field is a whole number stored as a
 * double; an int32 field is an integer stored as int32_t; a flag is a boolean stored as 0/1.
 */
enum { FIELD_NUMBER, FIELD_WHOLE, FIELD_INT32, FIELD_FLAG };

typedef struct field {
    const char *name;
    unsigned char kind;
    bool required;
    bool strict; /* the lower bound itself is excluded */
    double lo, hi;
    size_t off;
} field;

static const field model_fields[] = {
    {"layers", FIELD_INT32, true, false, 1, PS_MAX_LAYERS, offsetof(ps_model_dims, layers)},
    {"dense_layers", FIELD_INT32, false, false, 0, PS_MAX_LAYERS,
     offsetof(ps_model_dims, dense_layers)},
    {"hidden", FIELD_NUMBER, true, true, 0, PS_MAX_COST, offsetof(ps_model_dims, hidden)},
    {"tokens", FIELD_NUMBER, true, true, 0, PS_MAX_COST, offsetof(ps_model_dims, tokens)},
    {"seq_len", FIELD_NUMBER, false, false, 0, PS_MAX_COST, offsetof(ps_model_dims, seq_len)},
    {"experts", FIELD_NUMBER, true, false, 1, PS_MAX_COST, offsetof(ps_model_dims, experts)},
    {"top_k", FIELD_NUMBER, true, false, 1, PS_MAX_COST, offsetof(ps_model_dims, top_k)},
    {"expert_ffn", FIELD_NUMBER, true, true, 0, PS_MAX_COST, offsetof(ps_model_dims, expert_ffn)},
    {"shared_experts", FIELD_NUMBER, false, false, 0, PS_MAX_COST,
     offsetof(ps_model_dims, shared_experts)},
    {"shared_ffn", FIELD_NUMBER, false, false, 0, PS_MAX_COST, offsetof(ps_model_dims, shared_ffn)},
    {"dense_ffn", FIELD_NUMBER, false, false, 0, PS_MAX_COST, offsetof(ps_model_dims, dense_ffn)},
    {"attn_flops", FIELD_NUMBER, false, false, 0, PS_MAX_COST, offsetof(ps_model_dims, attn_flops)},
    {"heads_dim", FIELD_NUMBER, false, false, 0, PS_MAX_COST, offsetof(ps_model_dims, heads_dim)},
    {"bytes", FIELD_NUMBER, false, false, 0, MAX_BYTES, offsetof(ps_model_dims, bytes)},
    {"permute_recompute", FIELD_FLAG, false, false, 0, 1,
     offsetof(ps_model_dims, permute_recompute)},
};
/* Indices into model_fields and cluster_fields of the fields that other checks relate. */
enum {
    MODEL_LAYERS = 0,
    MODEL_DENSE_LAYERS = 1,
    MODEL_EXPERTS = 5,
    MODEL_TOP_K = 6,
    MODEL_DENSE_FFN = 10
};

static const field cluster_fields[] = {
    {"devices_per_node", FIELD_WHOLE, true, false, 1, MAX_EP_COUNT,
     offsetof(ps_cluster, devices_per_node)},
    {"nodes", FIELD_WHOLE, true, false, 1, MAX_EP_COUNT, offsetof(ps_cluster, nodes)},
    {"bw_intra", FIELD_NUMBER, true, false, 0, PS_MAX_COST, offsetof(ps_cluster, bw_intra)},
    {"bw_inter", FIELD_NUMBER, true, false, 0, PS_MAX_COST, offsetof(ps_cluster, bw_inter)},
    {"lat_intra", FIELD_NUMBER, false, false, 0, MAX_LATENCY, offsetof(ps_cluster, lat_intra)},
    {"lat_inter", FIELD_NUMBER, false, false, 0, MAX_LATENCY, offsetof(ps_cluster, lat_inter)},
    {"tflops", FIELD_NUMBER, true, true, 0, MAX_TFLOPS, offsetof(ps_cluster, tflops)},
    {"efficiency", FIELD_NUMBER, true, true, 0, 1, offsetof(ps_cluster, efficiency)},
    {"slowdown", FIELD_NUMBER, false, false, 0, MAX_SLOWDOWN, offsetof(ps_cluster, slowdown)},
};
enum { CLUSTER_DEVICES = 0, CLUSTER_NODES = 1, CLUSTER_BW_INTRA = 2, CLUSTER_BW_INTER = 3 };

#define N_MODEL_FIELDS (sizeof model_fields / sizeof *model_fields)
#define N_CLUSTER_FIELDS (sizeof cluster_fields / sizeof *cluster_fields)
/* The most fields of one block, for the per-block "seen" flags. */
#define MAX_FIELDS 16
_Static_assert(N_MODEL_FIELDS <= MAX_FIELDS && N_CLUSTER_FIELDS <= MAX_FIELDS,
               "MAX_FIELDS is too small");

/* The key lists of the levels; NULL where level_key() computes them. */
static const char *const *const level_keys[LEVEL_COUNT] = {
    root_keys, cost_keys, stage_keys, memory_keys, stage_keys, NULL, NULL, moe_keys, NULL, NULL};
static const char *const level_names[LEVEL_COUNT] = {
    "$",         "$.costs", "$.stage_costs[i]", "$.memory",         "$.stage_memory[i]", "$.model",
    "$.cluster", "$.moe",   "$.moe.layer",      "$.moe.dense_layer"};

/*
 * Key i of level (NULL past the last). The keys of a layer's durations are the names of the
 * per-layer operations (ps_op_name), so that a new operation is a new key without an edit here.
 */
static const char *level_key(int level, int i)
{
    switch (level) {
    case LEVEL_MODEL:
        return (size_t)i < N_MODEL_FIELDS ? model_fields[i].name : NULL;
    case LEVEL_CLUSTER:
        return (size_t)i < N_CLUSTER_FIELDS ? cluster_fields[i].name : NULL;
    case LEVEL_LAYER:
    case LEVEL_DENSE_LAYER:
        return i < PS_OP_LAYER_COUNT ? ps_op_name(i) : NULL;
    default:
        return level_keys[level][i];
    }
}

/* The two per-stage arrays: the same shape, different value rules. */
typedef struct stage_array {
    const char *path; /* "$.stage_costs" */
    int level;
    bool memory; /* values may be negative and each entry must sum to 0 */
} stage_array;

static const stage_array stage_costs_array = {"$.stage_costs", LEVEL_STAGE, false};
static const stage_array stage_memory_array = {"$.stage_memory", LEVEL_STAGE_MEM, true};

/* The integer keys in root_keys order (KEY_PP .. KEY_EXTRA_WARMUP) and their accepted ranges. */
enum { N_INT_KEYS = KEY_EXTRA_WARMUP - KEY_PP + 1 };
static const struct {
    ps_param param;
    long long lo, hi;
} int_keys[N_INT_KEYS] = {
    {PS_PARAM_PP, 1, PS_MAX_PP},
    {PS_PARAM_VPP, 1, PS_MAX_VPP},
    {PS_PARAM_MICROBATCHES, 1, PS_MAX_MICROBATCHES},
    {PS_PARAM_GROUP_SIZE, 0, PS_MAX_MICROBATCHES},
    {PS_PARAM_EXTRA_WARMUP, 0, PS_MAX_MICROBATCHES},
};

/* What the MoE blocks gave, checked key by key; check_moe_model() combines them. */
typedef struct moe_input {
    bool model_seen, cluster_seen, moe_seen; /* the blocks are present */
    bool model_ok, cluster_ok;               /* ... and passed their own checks */
    bool moe_object;                         /* "moe" is an object (its keys were read) */
    ps_model_dims dims;
    ps_cluster cluster;
    bool seen[MOE_KEY_COUNT];  /* keys of "moe" present */
    bool valid[MOE_KEY_COUNT]; /* ... and valid */
    int a2a, planner;
    double p2p, slowdown;
    long long layers, dense_layers;
    const cJSON *stage_layers; /* the checked array */
    size_t n_stage_layers;
    long long stage_layer_sum;
    bool op_given[2][PS_OP_LAYER_COUNT]; /* [0] "layer", [1] "dense_layer" */
    double op[2][PS_OP_LAYER_COUNT];
} moe_input;

/* Everything a config sets, checked but not yet applied. */
typedef struct staged {
    const char *schedule; /* borrowed from the cJSON tree; NULL when absent */
    bool has_int[N_INT_KEYS];
    long long ints[N_INT_KEYS]; /* indexed by KEY_x - KEY_PP */
    bool has_split;
    bool split;
    bool has_cost[5];
    double costs[5];     /* indexed by ps_cost */
    const cJSON *stages; /* the checked "stage_costs" array; NULL when absent */
    size_t n_stages;
    const cJSON *mem_stages; /* the checked "stage_memory" array; NULL when absent */
    size_t n_mem_stages;
    ps_stage_mem base_mem; /* input: the problem's memory model, which "memory" merges into */
    bool has_mem;          /* "memory" gave f, b or w: mem is the merged triple */
    ps_stage_mem mem;
    bool has_limit;
    double limit;
    moe_input in;
    /* The result of the MoE blocks: the model to install, the all-to-all estimate it was
     * derived with (has_a2a) and its layers per stage (stage_layers; NULL = even split). */
    bool has_moe, has_a2a;
    ps_moe_model moe;
    ps_a2a_info a2a;
    const cJSON *stage_layers;
    size_t n_stage_layers;
} staged;

/*
 * The checks run twice when something is wrong: a first pass only counts, so that the message
 * can state the totals and choose its layout up front; the second pass writes the items. Both
 * passes visit the tree in the same order and report the same items.
 */
typedef struct diag {
    char *out; /* NULL in the counting pass */
    size_t errors, unknown, written;
    unsigned unsuggested; /* bit per level: an unknown key there had no suggestion */
    bool compact;         /* every item is an unknown key: list just the paths */
} diag;

/* ---- small string helpers -------------------------------------------------------------------- */

/* Appends s[0..n) to buf (size cap, NUL-terminated) as the inside of a JSON string literal. */
static void escape_into(char *buf, size_t cap, const char *s, size_t n)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < n && used + 7 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        char short_escape = 0;
        switch (ch) {
        case '"':
        case '\\':
            short_escape = (char)ch;
            break;
        case '\n':
            short_escape = 'n';
            break;
        case '\r':
            short_escape = 'r';
            break;
        case '\t':
            short_escape = 't';
            break;
        }
        if (short_escape) {
            buf[used++] = '\\';
            buf[used++] = short_escape;
        } else if (ch < 0x20 || ch == 0x7f) {
            used += (size_t)snprintf(buf + used, cap - used, "\\u%04x", ch);
        } else {
            buf[used++] = (char)ch;
        }
    }
    buf[used] = '\0';
}

/* Appends "\"s\"" to buf, cut to SHOW_MAX bytes with "..." so that huge values stay readable. */
static void quote_into(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "\"");
    escape_into(buf, cap, s, n > SHOW_MAX ? SHOW_MAX : n);
    used = strlen(buf);
    snprintf(buf + used, cap - used, "%s\"", n > SHOW_MAX ? "..." : "");
}

static bool is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-'))
            return false;
    return true;
}

/* Writes the path of key under parent: "$.pp" for plain names, "$[\"a b\"]" for the others. */
static void key_path(char *buf, const char *parent, const char *key)
{
    if (is_identifier(key) && strlen(key) <= SHOW_MAX) {
        snprintf(buf, PATH_LEN, "%s.%s", parent, key);
    } else {
        snprintf(buf, PATH_LEN, "%s[", parent);
        quote_into(buf, PATH_LEN, key);
        size_t used = strlen(buf);
        snprintf(buf + used, PATH_LEN - used, "]");
    }
}

/* Describes a value for "got ...": a type name, with the value itself when it is short. */
static void describe(char *buf, size_t cap, const cJSON *it)
{
    buf[0] = '\0';
    if (cJSON_IsString(it)) {
        snprintf(buf, cap, "string ");
        quote_into(buf, cap, it->valuestring);
    } else if (cJSON_IsNumber(it)) {
        snprintf(buf, cap, "number %.15g", it->valuedouble);
    } else if (cJSON_IsBool(it)) {
        snprintf(buf, cap, "boolean %s", cJSON_IsTrue(it) ? "true" : "false");
    } else if (cJSON_IsNull(it)) {
        snprintf(buf, cap, "null");
    } else if (cJSON_IsArray(it)) {
        snprintf(buf, cap, "an array");
    } else if (cJSON_IsObject(it)) {
        snprintf(buf, cap, "an object");
    } else {
        snprintf(buf, cap, "an unsupported value");
    }
}

/*
 * Levenshtein distance between a and b, compared case-insensitively and with '-' equal to '_'
 * (the registry's rule for names), or 3 when it is certainly above 2. Only short strings are
 * compared, so fixed rows suffice.
 */
static int fold(int ch)
{
    ch = tolower((unsigned char)ch);
    return ch == '-' ? '_' : ch;
}

static size_t distance(const char *a, const char *b)
{
    enum { MAXLEN = 64, FAR = 3 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXLEN || lb > MAXLEN || (la > lb ? la - lb : lb - la) >= FAR)
        return FAR;
    size_t row[MAXLEN + 1], prev[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof *row);
    }
    return prev[lb];
}

/*
 * Whether candidate is a plausible correction of word: at most 2 edits (1 when neither has more
 * than 3 characters), and fewer edits than the longer string has characters. Otherwise "x"
 * would "look like" every one-letter key and "foo" like "moe".
 */
static bool close_to(const char *word, const char *candidate, size_t *best)
{
    size_t d = distance(word, candidate);
    size_t lw = strlen(word), lc = strlen(candidate);
    size_t longer = lw > lc ? lw : lc;
    if (d > (longer > 3 ? 2u : 1u) || d >= longer || d >= *best)
        return false;
    *best = d;
    return true;
}

static const char *suggest_key(const char *key, int level)
{
    const char *hit = NULL;
    size_t best = 3;
    const char *k;
    for (int i = 0; (k = level_key(level, i)) != NULL; i++)
        if (close_to(key, k, &best))
            hit = k;
    return hit;
}

/* The family name or alias closest to name, copied into buf (size cap), or NULL. */
static const char *suggest_family(const char *name, char *buf, size_t cap)
{
    const char *hit = NULL;
    size_t best = 3;
    ps_family_info fi;
    for (size_t i = 0; ps_family_get(i, &fi) == 0; i++) {
        if (close_to(name, fi.name, &best)) {
            snprintf(buf, cap, "%s", fi.name);
            hit = buf;
        }
        for (const char *a = fi.aliases; *a;) {
            const char *e = strchr(a, ',');
            size_t n = e ? (size_t)(e - a) : strlen(a);
            char alias[72];
            if (n < sizeof alias) {
                memcpy(alias, a, n);
                alias[n] = '\0';
                if (close_to(name, alias, &best)) {
                    snprintf(buf, cap, "%s", alias);
                    hit = buf;
                }
            }
            a += n + (e ? 1 : 0);
        }
    }
    return hit;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The index of key among the keys of level, or -1. */
static int key_index(int level, const char *key)
{
    const char *k;
    for (int i = 0; (k = level_key(level, i)) != NULL; i++)
        if (strcmp(k, key) == 0)
            return i;
    return -1;
}

/* ---- reporting ---------------------------------------------------------------------------- */

static void add_item(diag *d, const char *item)
{
    if (d->written++)
        ps__adderr(d->out, "%s", d->compact ? ", " : "; ");
    ps__adderr(d->out, "%s", item);
}

static void report(diag *d, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void report(diag *d, const char *path, const char *fmt, ...)
{
    d->errors++;
    if (!d->out)
        return;
    char item[ITEM_LEN];
    int n = snprintf(item, sizeof item, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item + n, sizeof item - (size_t)n, fmt, ap);
    va_end(ap);
    add_item(d, item);
}

static void report_unknown(diag *d, const char *parent, const char *key, int level)
{
    const char *hint = suggest_key(key, level);
    d->errors++;
    d->unknown++;
    if (!hint)
        d->unsuggested |= 1u << level;
    if (!d->out)
        return;
    char path[PATH_LEN], item[ITEM_LEN];
    key_path(path, parent, key);
    snprintf(item, sizeof item, "%s%s", path, d->compact ? "" : ": unknown key");
    if (hint) {
        size_t used = strlen(item);
        snprintf(item + used, sizeof item - used, " (did you mean \"%s\"?)", hint);
    }
    add_item(d, item);
}

static void report_type(diag *d, const char *path, const char *expected, const cJSON *it)
{
    char got[ITEM_LEN / 2];
    if (!d->out) {
        d->errors++;
        return;
    }
    describe(got, sizeof got, it);
    report(d, path, "expected %s, got %s", expected, got);
}

/* ---- checks ------------------------------------------------------------------------------- */

/* An integer in [lo, hi]: a JSON number without a fractional part. */
/*
 * Walks the members of an object whose keys belong to a level: unknown keys are reported (with
 * suggestions) and skipped, a repeated key is reported and yielded as WALK_DUPLICATE, every
 * other key once as WALK_KEY, with its index in k and its JSON path ("parent.key") in path.
 */
typedef struct key_walk {
    diag *d;
    const char *parent;
    int level;
    const cJSON *next, *it; /* the member after the current one; the current one */
    int k;
    unsigned long long seen; /* bit k: key k was met */
    char path[PATH_LEN];
} key_walk;

enum { WALK_END, WALK_KEY, WALK_DUPLICATE };
_Static_assert(KEY_COUNT <= 64 && MAX_FIELDS <= 64 && PS_OP_LAYER_COUNT <= 64 &&
                   MOE_KEY_COUNT <= 64,
               "key_walk.seen holds one bit per key");

static void walk_init(key_walk *w, diag *d, const cJSON *obj, const char *parent, int level)
{
    w->d = d;
    w->parent = parent;
    w->level = level;
    w->next = obj->child;
    w->it = NULL;
    w->k = -1;
    w->seen = 0;
}

static int walk_next(key_walk *w)
{
    while ((w->it = w->next) != NULL) {
        w->next = w->it->next;
        int k = key_index(w->level, w->it->string);
        if (k < 0) {
            report_unknown(w->d, w->parent, w->it->string, w->level);
            continue;
        }
        w->k = k;
        snprintf(w->path, sizeof w->path, "%s.%s", w->parent, level_key(w->level, k));
        if (w->seen >> k & 1) {
            report(w->d, w->path, "duplicate key");
            return WALK_DUPLICATE;
        }
        w->seen |= 1ull << k;
        return WALK_KEY;
    }
    return WALK_END;
}

static bool walk_seen(const key_walk *w, int k)
{
    return w->seen >> k & 1;
}

/* Reports "required key missing" for each key k < n with required(k) that the walk did not meet. */
static void walk_require(key_walk *w, int n, const field *fields)
{
    char path[PATH_LEN];
    for (int k = 0; k < n; k++) {
        if (walk_seen(w, k) || (fields && !fields[k].required))
            continue;
        snprintf(path, sizeof path, "%s.%s", w->parent, level_key(w->level, k));
        report(w->d, path, "required key missing");
    }
}

static bool check_int(diag *d, const char *path, const cJSON *it, long long lo, long long hi,
                      long long *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "an integer", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected an integer, got a number beyond the range of a double");
        return false;
    }
    if (v != floor(v)) {
        report(d, path, "expected an integer, got %.15g", v);
        return false;
    }
    if (v < (double)lo) {
        report(d, path, "must be >= %lld, got %.15g", lo, v);
        return false;
    }
    if (v > (double)hi) {
        report(d, path, "%.15g is beyond the limit %lld", v, hi);
        return false;
    }
    *out = (long long)v;
    return true;
}

/*
 * A finite number in [lo, hi], or (lo, hi] when strict. Messages name the bound that was
 * crossed: "must be >= 0, got -1", "must be > 0, got 0", "2 is beyond the limit 1".
 */
static bool check_number(diag *d, const char *path, const cJSON *it, double lo, bool strict,
                         double hi, double *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (strict ? !(v > lo) : v < lo) {
        report(d, path, "must be %s %g, got %.15g", strict ? ">" : ">=", lo, v);
        return false;
    }
    if (v > hi) {
        report(d, path, "%.15g is beyond the limit %g", v, hi);
        return false;
    }
    *out = v;
    return true;
}

/* A finite cost in [0, PS_MAX_COST]; negative_ok admits any finite negative (the fb default). */
static bool check_cost(diag *d, const char *path, const cJSON *it, bool negative_ok, double *out)
{
    return check_number(d, path, it, negative_ok ? -HUGE_VAL : 0.0, false, PS_MAX_COST, out);
}

static bool check_bool(diag *d, const char *path, const cJSON *it, bool *out)
{
    if (!cJSON_IsBool(it)) {
        report_type(d, path, "a boolean", it);
        return false;
    }
    *out = cJSON_IsTrue(it);
    return true;
}

/*
 * One of the strings names[] (exactly), whose index goes to *out. An unknown value is reported
 * with the closest name, if one is close, and the list of names.
 */
static bool check_choice(diag *d, const char *path, const cJSON *it, const char *const *names,
                         int *out)
{
    if (!cJSON_IsString(it)) {
        report_type(d, path, "a string", it);
        return false;
    }
    for (int i = 0; names[i]; i++) {
        if (strcmp(names[i], it->valuestring) == 0) {
            *out = i;
            return true;
        }
    }
    if (!d->out) {
        d->errors++;
        return false;
    }
    char value[PATH_LEN] = "", hint[80] = "", list[160] = "";
    quote_into(value, sizeof value, it->valuestring);
    size_t best = 3;
    for (int i = 0; names[i]; i++) {
        if (close_to(it->valuestring, names[i], &best))
            snprintf(hint, sizeof hint, "did you mean \"%s\"? ", names[i]);
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", names[i]);
    }
    report(d, path, "unknown value %s (%sknown: %s)", value, hint, list);
    return false;
}

static void check_schedule(diag *d, const char *path, const cJSON *it, staged *st)
{
    if (!cJSON_IsString(it)) {
        report_type(d, path, "a string", it);
        return;
    }
    if (ps_family_lookup(it->valuestring, NULL) >= 0) {
        st->schedule = it->valuestring;
        return;
    }
    if (!d->out) {
        d->errors++;
        return;
    }
    char name[PATH_LEN] = "", hint[80], more[120] = "";
    quote_into(name, sizeof name, it->valuestring);
    if (suggest_family(it->valuestring, hint, sizeof hint))
        snprintf(more, sizeof more, "did you mean \"%s\"? ", hint);
    report(d, path, "unknown schedule %s (%s`pipesched list` shows the families)", name, more);
}

static void check_costs(diag *d, const cJSON *obj, staged *st)
{
    if (!cJSON_IsObject(obj)) {
        report_type(d, "$.costs", "an object", obj);
        return;
    }
    key_walk w;
    walk_init(&w, d, obj, "$.costs", LEVEL_COSTS);
    for (int r; (r = walk_next(&w)) != WALK_END;)
        if (r == WALK_KEY)
            st->has_cost[w.k] = check_cost(d, w.path, w.it, w.k == PS_COST_FB, &st->costs[w.k]);
}

/* A memory amount: finite, of either sign, with magnitude at most PS_MAX_COST. */
static bool check_signed(diag *d, const char *path, const cJSON *it, double *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (fabs(v) > PS_MAX_COST) {
        report(d, path, "%.15g is beyond the limit %s%g", v, v < 0 ? "-" : "", PS_MAX_COST);
        return false;
    }
    *out = v;
    return true;
}

/*
 * The rule of ps_problem_set_memory(), written the same way so that a triple accepted here is
 * accepted there: f + b + w is 0 within 1e-9 of the largest magnitude.
 */
static bool sums_to_zero(double f, double b, double w)
{
    double big = fabs(f);
    if (fabs(b) > big)
        big = fabs(b);
    if (fabs(w) > big)
        big = fabs(w);
    return !(fabs(f + b + w) > 1e-9 * big);
}

/*
 * Reports a triple that does not sum to 0 under path. given (NULL = all) says which values the
 * config wrote; the others are the problem's current ones, and the message says so.
 */
static void report_sum(diag *d, const char *path, const ps_stage_mem *m, const bool *given)
{
    if (!d->out) {
        d->errors++;
        return;
    }
    char note[64] = "";
    const char *missing[3];
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (given && !given[k])
            missing[n++] = stage_keys[k];
    if (n == 1)
        snprintf(note, sizeof note, " (%s is the current value)", missing[0]);
    else if (n == 2)
        snprintf(note, sizeof note, " (%s and %s are the current values)", missing[0], missing[1]);
    else if (n == 3)
        snprintf(note, sizeof note, " (all three are the current values)");
    report(d, path, "f + b + w must be 0, got f = %.15g, b = %.15g, w = %.15g, sum %.15g%s", m->f,
           m->b, m->w, m->f + m->b + m->w, note);
}

static void check_memory(diag *d, const cJSON *obj, staged *st)
{
    if (!cJSON_IsObject(obj)) {
        report_type(d, "$.memory", "an object", obj);
        return;
    }
    bool given[3] = {false}, bad = false;
    double v[3];
    key_walk w;
    walk_init(&w, d, obj, "$.memory", LEVEL_MEMORY);
    for (int r; (r = walk_next(&w)) != WALK_END;) {
        int k = w.k;
        if (r == WALK_DUPLICATE)
            bad = bad || k != MEM_LIMIT;
        else if (k == MEM_LIMIT)
            st->has_limit = check_cost(d, w.path, w.it, false, &st->limit);
        else if (check_signed(d, w.path, w.it, &v[k]))
            given[k] = true;
        else
            bad = true;
    }
    /* The sum is only meaningful once every value given is a valid number. */
    if (bad || !(given[0] || given[1] || given[2]))
        return;
    ps_stage_mem m = {given[0] ? v[0] : st->base_mem.f, given[1] ? v[1] : st->base_mem.b,
                      given[2] ? v[2] : st->base_mem.w};
    if (!sums_to_zero(m.f, m.b, m.w)) {
        report_sum(d, "$.memory", &m, given);
        return;
    }
    st->has_mem = true;
    st->mem = m;
}

static void check_stage(diag *d, const stage_array *sa, size_t i, const cJSON *obj)
{
    char parent[48];
    snprintf(parent, sizeof parent, "%s[%zu]", sa->path, i);
    if (!cJSON_IsObject(obj)) {
        report_type(d, parent, "an object with \"f\", \"b\" and \"w\"", obj);
        return;
    }
    bool valid[3] = {false};
    double v[3];
    key_walk w;
    walk_init(&w, d, obj, parent, sa->level);
    for (int r; (r = walk_next(&w)) != WALK_END;) {
        int k = w.k;
        valid[k] = r == WALK_KEY && (sa->memory ? check_signed(d, w.path, w.it, &v[k])
                                                : check_cost(d, w.path, w.it, false, &v[k]));
    }
    walk_require(&w, 3, NULL);
    if (sa->memory && valid[0] && valid[1] && valid[2] && !sums_to_zero(v[0], v[1], v[2])) {
        ps_stage_mem m = {v[0], v[1], v[2]};
        report_sum(d, parent, &m, NULL);
    }
}

/* Checks "stage_costs" or "stage_memory"; returns the entry count when all is well, else -1. */
static long check_stage_array(diag *d, const stage_array *sa, const cJSON *arr)
{
    if (!cJSON_IsArray(arr)) {
        report_type(d, sa->path, "an array", arr);
        return -1;
    }
    /* Count first: the length is checked before anything is allocated or examined for it. */
    size_t n = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        n++;
    if (n > PS_MAX_STAGES) {
        report(d, sa->path, "%zu entries is beyond the limit %d", n, PS_MAX_STAGES);
        return -1;
    }
    size_t before = d->errors, i = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        check_stage(d, sa, i++, it);
    return d->errors == before ? (long)n : -1;
}

/* ---- the MoE blocks ------------------------------------------------------------------------ */

/* Reads field f of a "model" or "cluster" block from it into base (a ps_model_dims or a
 * ps_cluster). */
static bool check_field(diag *d, const char *path, const field *f, const cJSON *it, void *base)
{
    char *at = (char *)base + f->off;
    long long n;
    bool flag;
    double v;
    switch (f->kind) {
    case FIELD_INT32:
        if (!check_int(d, path, it, (long long)f->lo, (long long)f->hi, &n))
            return false;
        *(int32_t *)(void *)at = (int32_t)n;
        return true;
    case FIELD_WHOLE:
        if (!check_int(d, path, it, (long long)f->lo, (long long)f->hi, &n))
            return false;
        *(double *)(void *)at = (double)n;
        return true;
    case FIELD_FLAG:
        if (!check_bool(d, path, it, &flag))
            return false;
        *(int32_t *)(void *)at = flag ? 1 : 0;
        return true;
    default:
        if (!check_number(d, path, it, f->lo, f->strict, f->hi, &v))
            return false;
        *(double *)(void *)at = v;
        return true;
    }
}

/*
 * Checks a "model" or "cluster" object field by field into base, which starts zeroed (0 is each
 * optional field's default). Required fields that are missing are reported. valid[k] says
 * whether field k was given and valid. Returns whether the block had no error.
 */
static bool check_fields(diag *d, const cJSON *obj, int level, const field *fields, size_t n,
                         void *base, bool *valid)
{
    const char *parent = level_names[level];
    if (!cJSON_IsObject(obj)) {
        report_type(d, parent, "an object", obj);
        return false;
    }
    size_t before = d->errors;
    key_walk w;
    walk_init(&w, d, obj, parent, level);
    for (int r; (r = walk_next(&w)) != WALK_END;)
        valid[w.k] = r == WALK_KEY && check_field(d, w.path, &fields[w.k], w.it, base);
    walk_require(&w, (int)n, fields);
    return d->errors == before;
}

static void check_model(diag *d, const cJSON *obj, moe_input *in)
{
    bool valid[MAX_FIELDS] = {false};
    in->model_seen = true;
    in->model_ok =
        check_fields(d, obj, LEVEL_MODEL, model_fields, N_MODEL_FIELDS, &in->dims, valid);
    const ps_model_dims *m = &in->dims;
    if (valid[MODEL_LAYERS] && valid[MODEL_DENSE_LAYERS] && m->dense_layers > m->layers) {
        report(d, "$.model.dense_layers", "must be <= $.model.layers (%d), got %d", (int)m->layers,
               (int)m->dense_layers);
        in->model_ok = false;
    }
    if (valid[MODEL_EXPERTS] && valid[MODEL_TOP_K] && m->top_k > m->experts) {
        report(d, "$.model.top_k", "must be <= $.model.experts (%.15g), got %.15g", m->experts,
               m->top_k);
        in->model_ok = false;
    }
    /* Dense layers need an FFN size; a model without them does not. */
    if (valid[MODEL_DENSE_LAYERS] && m->dense_layers > 0 && !(m->dense_ffn > 0)) {
        if (valid[MODEL_DENSE_FFN])
            report(d, "$.model.dense_ffn", "must be > 0 when $.model.dense_layers > 0, got 0");
        else if (!cJSON_HasObjectItem(obj, "dense_ffn"))
            report(d, "$.model.dense_ffn", "required key missing (the model has %d dense layers)",
                   (int)m->dense_layers);
        in->model_ok = false;
    }
}

static void check_cluster(diag *d, const cJSON *obj, moe_input *in)
{
    bool valid[MAX_FIELDS] = {false};
    in->cluster_seen = true;
    in->cluster_ok =
        check_fields(d, obj, LEVEL_CLUSTER, cluster_fields, N_CLUSTER_FIELDS, &in->cluster, valid);
    /* A bandwidth may be 0 only where nothing travels over it: within a node of one device, or
     * between the nodes of a one-node group. */
    const ps_cluster *c = &in->cluster;
    if (valid[CLUSTER_DEVICES] && valid[CLUSTER_BW_INTRA] && c->devices_per_node > 1 &&
        !(c->bw_intra > 0)) {
        report(d, "$.cluster.bw_intra", "must be > 0 when $.cluster.devices_per_node > 1, got 0");
        in->cluster_ok = false;
    }
    if (valid[CLUSTER_NODES] && valid[CLUSTER_BW_INTER] && c->nodes > 1 && !(c->bw_inter > 0)) {
        report(d, "$.cluster.bw_inter", "must be > 0 when $.cluster.nodes > 1, got 0");
        in->cluster_ok = false;
    }
}

/* "moe.layer" (dense = 0) or "moe.dense_layer" (dense = 1): durations by operation name. */
static bool check_layer(diag *d, const cJSON *obj, int dense, moe_input *in)
{
    int level = dense ? LEVEL_DENSE_LAYER : LEVEL_LAYER;
    const char *parent = level_names[level];
    if (!cJSON_IsObject(obj)) {
        report_type(d, parent, "an object", obj);
        return false;
    }
    size_t before = d->errors;
    key_walk w;
    walk_init(&w, d, obj, parent, level);
    for (int r; (r = walk_next(&w)) != WALK_END;) {
        int k = w.k;
        double v;
        in->op_given[dense][k] = false;
        if (r == WALK_DUPLICATE || !check_cost(d, w.path, w.it, false, &v))
            continue;
        if (dense && ps_op_is_comm(k) && v > 0) {
            report(d, w.path, "must be 0 (a dense layer has no all-to-all), got %.15g", v);
            continue;
        }
        in->op_given[dense][k] = true;
        in->op[dense][k] = v;
    }
    return d->errors == before;
}

/* "moe.stage_layers": whole numbers of layers, one per model stage; their sum is checked
 * against the model's layer count by check_moe_model(). */
static bool check_stage_layers(diag *d, const cJSON *arr, moe_input *in)
{
    static const char path[] = "$.moe.stage_layers";
    if (!cJSON_IsArray(arr)) {
        report_type(d, path, "an array", arr);
        return false;
    }
    size_t n = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        n++;
    if (n > PS_MAX_STAGES) {
        report(d, path, "%zu entries is beyond the limit %d", n, PS_MAX_STAGES);
        return false;
    }
    size_t before = d->errors, i = 0;
    long long sum = 0, v;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char item[48];
        snprintf(item, sizeof item, "%s[%zu]", path, i);
        if (check_int(d, item, it, 0, PS_MAX_LAYERS, &v))
            sum += v;
    }
    if (d->errors != before)
        return false;
    in->stage_layers = arr;
    in->n_stage_layers = n;
    in->stage_layer_sum = sum;
    return true;
}

static void check_moe(diag *d, const cJSON *obj, moe_input *in)
{
    in->moe_seen = true;
    if (!cJSON_IsObject(obj)) {
        report_type(d, "$.moe", "an object", obj);
        return;
    }
    in->moe_object = true;
    key_walk w;
    walk_init(&w, d, obj, "$.moe", LEVEL_MOE);
    for (int r; (r = walk_next(&w)) != WALK_END;) {
        int k = w.k;
        const char *path = w.path;
        const cJSON *it = w.it;
        if (r == WALK_DUPLICATE) {
            in->valid[k] = false;
            continue;
        }
        in->seen[k] = true;
        bool ok = false;
        switch (k) {
        case MOE_A2A:
            ok = check_choice(d, path, it, a2a_names, &in->a2a);
            break;
        case MOE_PLANNER:
            ok = check_choice(d, path, it, planner_names, &in->planner);
            break;
        case MOE_P2P:
            ok = check_cost(d, path, it, false, &in->p2p);
            break;
        case MOE_SLOWDOWN:
            ok = check_number(d, path, it, 0, false, MAX_SLOWDOWN, &in->slowdown);
            break;
        case MOE_LAYERS:
            ok = check_int(d, path, it, 1, PS_MAX_LAYERS, &in->layers);
            break;
        case MOE_DENSE_LAYERS:
            ok = check_int(d, path, it, 0, PS_MAX_LAYERS, &in->dense_layers);
            break;
        case MOE_STAGE_LAYERS:
            ok = check_stage_layers(d, it, in);
            break;
        case MOE_LAYER:
        case MOE_DENSE_LAYER:
            ok = check_layer(d, it, k == MOE_DENSE_LAYER, in);
            break;
        }
        in->valid[k] = ok;
    }
    if (in->valid[MOE_LAYERS] && in->valid[MOE_DENSE_LAYERS] && in->dense_layers > in->layers) {
        report(d, "$.moe.dense_layers", "must be <= $.moe.layers (%lld), got %lld", in->layers,
               in->dense_layers);
        in->valid[MOE_DENSE_LAYERS] = false;
    }
}

/*
 * Checks a derived model against the rules of ps_problem_set_moe(), for the durations the
 * config did not override (those were checked as they were read). A derivation that broke them
 * is reported under "$.model", since no key of the config holds the bad value.
 */
static void check_derived(diag *d, const moe_input *in, const ps_moe_model *m)
{
    for (int dense = 0; dense < 2; dense++) {
        const ps_layer_cost *lc = dense ? &m->dense : &m->moe;
        const char *name = dense ? "dense_layer" : "layer";
        for (int k = 0; k < PS_OP_LAYER_COUNT; k++) {
            double v = lc->t[k];
            if (in->op_given[dense][k])
                continue;
            if (!isfinite(v) || v < 0 || v > PS_MAX_COST)
                report(d, "$.model", "the derived duration %s.%s is %g, outside [0, %g]", name,
                       ps_op_name(k), v, PS_MAX_COST);
            else if (dense && ps_op_is_comm(k) && v > 0)
                report(d, "$.model",
                       "the derived duration dense_layer.%s is %g; a dense layer has no "
                       "all-to-all",
                       ps_op_name(k), v);
        }
    }
    if (!in->valid[MOE_P2P] && !(isfinite(m->p2p) && m->p2p >= 0 && m->p2p <= PS_MAX_COST))
        report(d, "$.model", "the derived p2p is %g, outside [0, %g]", m->p2p, PS_MAX_COST);
    if (!in->valid[MOE_SLOWDOWN] &&
        !(isfinite(m->slowdown) && m->slowdown >= 0 && m->slowdown <= MAX_SLOWDOWN))
        report(d, "$.model", "the derived slowdown is %g, outside [0, %d]", m->slowdown,
               MAX_SLOWDOWN);
    if (!in->valid[MOE_PLANNER] &&
        (m->planner < PS_PLANNER_ADAPTIVE || m->planner > PS_PLANNER_SERIAL))
        report(d, "$.model", "the derivation chose an unknown planner %d", (int)m->planner);
}

/*
 * Combines the three MoE blocks into one model, after the whole root has been read (the rules
 * relate keys of different blocks, which may come in any order). With "model" and "cluster" the
 * durations are derived, then overridden by the keys of "moe.layer" and "moe.dense_layer";
 * without them "moe" gives the durations. On success st->has_moe is set.
 */
static void check_moe_model(diag *d, staged *st)
{
    const moe_input *in = &st->in;
    bool derived = in->model_seen || in->cluster_seen;
    if (!derived && !in->moe_seen)
        return;
    size_t before = d->errors;
    ps_moe_model m;
    ps_a2a_info info;
    memset(&m, 0, sizeof m);
    memset(&info, 0, sizeof info);
    long long layers = -1; /* the model's layer count, once known to be valid */
    bool inputs_ok;

    if (derived) {
        if (!in->cluster_seen)
            report(d, "$.cluster",
                   "required key missing (\"model\" is given, and the durations are derived "
                   "from both)");
        if (!in->model_seen)
            report(d, "$.model",
                   "required key missing (\"cluster\" is given, and the durations are derived "
                   "from both)");
        if (in->seen[MOE_LAYERS])
            report(d, "$.moe.layers",
                   "not allowed with \"model\" (the layer count is "
                   "$.model.layers)");
        if (in->seen[MOE_DENSE_LAYERS])
            report(d, "$.moe.dense_layers",
                   "not allowed with \"model\" (the dense layer count "
                   "is $.model.dense_layers)");
        if (in->model_ok)
            layers = in->dims.layers;
        inputs_ok = in->model_ok && in->cluster_ok && (!in->seen[MOE_A2A] || in->valid[MOE_A2A]);
        if (inputs_ok) {
            char err[512] = "";
            int a2a = in->valid[MOE_A2A] ? in->a2a : PS_A2A_AUTO;
            int rc = ps_moe_derive(&in->dims, &in->cluster, a2a, &m, &info, err, sizeof err);
            if (rc) {
                report(d, "$.model", "%s", err[0] ? err : ps_strerror(rc));
                inputs_ok = false;
            } else {
                m.layers = in->dims.layers;
                m.dense_layers = in->dims.dense_layers;
            }
        }
    } else {
        if (in->moe_object && !in->seen[MOE_LAYER])
            report(d, "$.moe.layer",
                   "required key missing (without \"model\" and \"cluster\", the durations are "
                   "given here)");
        if (in->moe_object && !in->seen[MOE_LAYERS])
            report(d, "$.moe.layers",
                   "required key missing (without \"model\", the layer count is given here)");
        if (in->valid[MOE_A2A])
            report(d, "$.moe.a2a",
                   "applies only to durations derived from \"model\" and "
                   "\"cluster\"");
        if (in->valid[MOE_LAYERS])
            layers = in->layers;
        m.layers = (int32_t)in->layers;
        m.dense_layers = in->valid[MOE_DENSE_LAYERS] ? (int32_t)in->dense_layers : 0;
        inputs_ok = in->moe_object;
    }

    if (layers > 0 && in->valid[MOE_STAGE_LAYERS] && in->n_stage_layers > 0 &&
        in->stage_layer_sum != layers)
        report(d, "$.moe.stage_layers", "the entries sum to %lld, but the model has %lld layers",
               in->stage_layer_sum, layers);

    /* The overrides, over the derived values or over zeros. */
    for (int dense = 0; dense < 2; dense++)
        for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
            if (in->op_given[dense][k])
                (dense ? &m.dense : &m.moe)->t[k] = in->op[dense][k];
    if (in->valid[MOE_P2P])
        m.p2p = in->p2p;
    if (in->valid[MOE_SLOWDOWN])
        m.slowdown = in->slowdown;
    if (in->valid[MOE_PLANNER])
        m.planner = in->planner;
    if (derived && inputs_ok)
        check_derived(d, in, &m);

    if (!inputs_ok || d->errors != before)
        return;
    for (int k = 0; k < MOE_KEY_COUNT; k++)
        if (in->seen[k] && !in->valid[k])
            return;
    st->has_moe = true;
    st->moe = m;
    st->has_a2a = derived;
    st->a2a = info;
    st->stage_layers = in->valid[MOE_STAGE_LAYERS] ? in->stage_layers : NULL;
    st->n_stage_layers = in->valid[MOE_STAGE_LAYERS] ? in->n_stage_layers : 0;
}

static void check_root(diag *d, const cJSON *root, staged *st)
{
    key_walk w;
    walk_init(&w, d, root, "$", LEVEL_ROOT);
    for (int r; (r = walk_next(&w)) != WALK_END;) {
        if (r == WALK_DUPLICATE)
            continue;
        int k = w.k;
        const char *path = w.path;
        const cJSON *it = w.it;
        switch (k) {
        case KEY_SCHEDULE:
            check_schedule(d, path, it, st);
            break;
        case KEY_PP:
        case KEY_VPP:
        case KEY_MICROBATCHES:
        case KEY_GROUP_SIZE:
        case KEY_EXTRA_WARMUP: {
            int i = k - KEY_PP;
            st->has_int[i] = check_int(d, path, it, int_keys[i].lo, int_keys[i].hi, &st->ints[i]);
            break;
        }
        case KEY_SPLIT_BACKWARD:
            st->has_split = check_bool(d, path, it, &st->split);
            break;
        case KEY_COSTS:
            check_costs(d, it, st);
            break;
        case KEY_STAGE_COSTS: {
            long n = check_stage_array(d, &stage_costs_array, it);
            if (n >= 0) {
                st->stages = it;
                st->n_stages = (size_t)n;
            }
            break;
        }
        case KEY_MEMORY:
            check_memory(d, it, st);
            break;
        case KEY_STAGE_MEMORY: {
            long n = check_stage_array(d, &stage_memory_array, it);
            if (n >= 0) {
                st->mem_stages = it;
                st->n_mem_stages = (size_t)n;
            }
            break;
        }
        case KEY_MODEL:
            check_model(d, it, &st->in);
            break;
        case KEY_CLUSTER:
            check_cluster(d, it, &st->in);
            break;
        case KEY_MOE:
            check_moe(d, it, &st->in);
            break;
        }
    }
    check_moe_model(d, st);
}

/* An empty staging struct for pb: "memory" merges into pb's current memory model. */
static void stage_init(staged *st, const ps_problem *pb)
{
    memset(st, 0, sizeof *st);
    st->base_mem = pb->mem;
}

/* Writes the full message of a failed check into pb->err: totals first, then every item. */
static int report_all(ps_problem *pb, const cJSON *root)
{
    diag count = {0};
    staged st;
    stage_init(&st, pb);
    check_root(&count, root, &st);

    diag d = {0};
    d.out = pb->err;
    d.compact = count.errors > 1 && count.errors == count.unknown;
    pb->err[0] = '\0';
    if (d.compact)
        ps__adderr(pb->err, "%zu unknown keys: ", count.errors);
    else if (count.errors > 1)
        ps__adderr(pb->err, "%zu errors: ", count.errors);
    stage_init(&st, pb);
    check_root(&d, root, &st);

    /* When a key had no close match, list what is accepted at its level instead. */
    for (int level = 0; level < LEVEL_COUNT; level++) {
        if (!(count.unsuggested & (1u << level)))
            continue;
        ps__adderr(pb->err, ". Known keys of %s:", level_names[level]);
        const char *k;
        for (int i = 0; (k = level_key(level, i)) != NULL; i++)
            ps__adderr(pb->err, "%s %s", i ? "," : "", k);
    }
    return PS_ECONFIG;
}

/* ---- parsing and applying ------------------------------------------------------------------ */

/* Reports a parse problem at byte offset off of text as "line L, column C: what near ...". */
static int parse_error(ps_problem *pb, const char *text, size_t len, size_t off, const char *what)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            /* Columns count characters: UTF-8 continuation bytes do not start one. */
            col++;
        }
    }
    /* Up to NEAR_MAX bytes of the rest of the line, escaped (at most 6 characters each). */
    char near[NEAR_MAX * 6 + 1] = "";
    size_t n = 0;
    while (off + n < len && n < NEAR_MAX && text[off + n] != '\n' && text[off + n] != '\r')
        n++;
    escape_into(near, sizeof near, text + off, n);
    return ps__seterr(pb->err, PS_EPARSE, "line %zu, column %zu: %s%s%s%s", line, col, what,
                      n ? " near \"" : "", near, n ? "\"" : "");
}

/*
 * cJSON stores keys and strings as C strings, so "\u0000" would silently cut them ("pp\u0000x"
 * would read as "pp"). Refuse it instead. Called on text that parsed, where every backslash is
 * inside a string; returns the offset of the escape or len when there is none.
 */
static size_t find_nul_escape(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\\')
            continue;
        if (i + 5 < len && text[i + 1] == 'u' && !memcmp(text + i + 2, "0000", 4))
            return i;
        i++; /* skip the escaped character, so that "\\u0000" is not mistaken for one */
    }
    return len;
}

/* The "f", "b" and "w" of a checked stage entry. */
static void triple(const cJSON *it, double *f, double *b, double *w)
{
    *f = cJSON_GetObjectItemCaseSensitive(it, "f")->valuedouble;
    *b = cJSON_GetObjectItemCaseSensitive(it, "b")->valuedouble;
    *w = cJSON_GetObjectItemCaseSensitive(it, "w")->valuedouble;
}

/* Copies a checked array of {"f","b","w"} entries and hands it to set (the per-stage costs
 * or memory setter); key names it in the out-of-memory message. */
static int apply_stage_array(ps_problem *pb, const cJSON *arr, size_t n, const char *key,
                             int (*set)(ps_problem *, const ps_fbw *, size_t))
{
    ps_fbw *tmp = NULL;
    if (n) {
        tmp = ps__alloc(&pb->al, n, sizeof *tmp);
        if (!tmp)
            return ps__seterr(pb->err, PS_ENOMEM, "$.%s: out of memory for %zu entries", key, n);
        size_t i = 0;
        for (const cJSON *it = arr->child; it; it = it->next, i++)
            triple(it, &tmp[i].f, &tmp[i].b, &tmp[i].w);
    }
    int rc = set(pb, tmp, n);
    ps__free(&pb->al, tmp, n, sizeof *tmp);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.%s: out of memory for %zu entries", key, n);
    return rc;
}

/* Copies the checked "moe.stage_layers" (none: the even split) and hands it to the setter. */
static int apply_stage_layers(ps_problem *pb, const staged *st)
{
    size_t n = st->n_stage_layers;
    int32_t *tmp = NULL;
    if (n) {
        tmp = ps__alloc(&pb->al, n, sizeof *tmp);
        if (!tmp)
            return ps__seterr(pb->err, PS_ENOMEM,
                              "$.moe.stage_layers: out of memory for %zu entries", n);
        size_t i = 0;
        for (const cJSON *it = st->stage_layers->child; it; it = it->next, i++)
            tmp[i] = (int32_t)it->valuedouble;
    }
    int rc = ps_problem_set_stage_layers(pb, tmp, n);
    ps__free(&pb->al, tmp, n, sizeof *tmp);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.moe.stage_layers: out of memory for %zu entries", n);
    return rc;
}

/* The steps that cannot allocate, in a fixed order. */
static int apply_scalars(ps_problem *pb, const staged *st)
{
    int rc;
    if (st->schedule && (rc = ps_problem_set_schedule(pb, st->schedule)) != 0)
        return rc;
    for (int i = 0; i < N_INT_KEYS; i++)
        if (st->has_int[i] && (rc = ps_problem_set_int(pb, int_keys[i].param, st->ints[i])) != 0)
            return rc;
    if (st->has_split && (rc = ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, st->split)) != 0)
        return rc;
    for (int k = 0; k < 5; k++)
        if (st->has_cost[k] && (rc = ps_problem_set_cost(pb, (ps_cost)k, st->costs[k])) != 0)
            return rc;
    if (st->has_mem && (rc = ps_problem_set_memory(pb, st->mem.f, st->mem.b, st->mem.w)) != 0)
        return rc;
    if (st->has_limit && (rc = ps_problem_set_mem_limit(pb, st->limit)) != 0)
        return rc;
    if (st->has_moe) {
        if ((rc = ps_problem_set_moe(pb, &st->moe)) != 0)
            return rc;
        /* ps_problem_set_moe() forgets the estimate of an earlier derivation; a derived model
         * keeps the one it was derived with, as ps_problem_set_moe_dims() does (the overrides
         * do not change it: it describes the all-to-all algorithm and volumes). */
        if (st->has_a2a) {
            pb->a2a = st->a2a;
            pb->has_a2a = 1;
        }
    }
    return 0;
}

/*
 * Applies checked values through the setters. Three steps allocate (the per-stage costs, the
 * per-stage memory and the MoE model's layers per stage), so a later one can fail after an
 * earlier one has succeeded; the scalar setters (the MoE model among them) should not fail on
 * values that passed the same checks, but are not trusted to. The load is made atomic by undoing
 * rather than by ordering: the arrays being replaced are detached from pb before their setters
 * run (so the setters do not free them) and the scalars are saved. On any failure the new arrays
 * are freed and the old ones and the scalars put back, which needs no allocation and so cannot
 * fail itself; on success the old arrays are freed.
 */
static int apply(ps_problem *pb, const staged *st)
{
    ps_problem saved = *pb; /* the scalars, the MoE model and the old arrays; err is not restored */
    if (st->stages) {
        pb->stage_costs = NULL;
        pb->n_stage_costs = 0;
    }
    if (st->mem_stages) {
        pb->stage_mem = NULL;
        pb->n_stage_mem = 0;
    }
    if (st->has_moe) {
        pb->stage_layers = NULL;
        pb->n_stage_layers = 0;
    }
    int rc = 0;
    if (st->stages)
        rc = apply_stage_array(pb, st->stages, st->n_stages, "stage_costs",
                               ps_problem_set_stage_costs);
    if (!rc && st->mem_stages)
        rc = apply_stage_array(pb, st->mem_stages, st->n_mem_stages, "stage_memory",
                               ps_problem_set_stage_memory);
    if (!rc && st->has_moe)
        rc = apply_stage_layers(pb, st);
    if (!rc)
        rc = apply_scalars(pb, st);
    if (rc) {
        if (st->stages)
            ps__free(&pb->al, pb->stage_costs, pb->n_stage_costs, sizeof *pb->stage_costs);
        if (st->mem_stages)
            ps__free(&pb->al, pb->stage_mem, pb->n_stage_mem, sizeof *pb->stage_mem);
        if (st->has_moe)
            ps__free(&pb->al, pb->stage_layers, pb->n_stage_layers, sizeof *pb->stage_layers);
        memcpy(saved.err, pb->err, sizeof saved.err);
        *pb = saved;
        return rc;
    }
    if (st->stages)
        ps__free(&pb->al, saved.stage_costs, saved.n_stage_costs, sizeof *saved.stage_costs);
    if (st->mem_stages)
        ps__free(&pb->al, saved.stage_mem, saved.n_stage_mem, sizeof *saved.stage_mem);
    if (st->has_moe)
        ps__free(&pb->al, saved.stage_layers, saved.n_stage_layers, sizeof *saved.stage_layers);
    return 0;
}

int ps_problem_load_json(ps_problem *pb, const char *text, size_t len)
{
    if (!pb)
        return PS_EINVAL;
    if (!text)
        return ps__seterr(pb->err, PS_EINVAL, "invalid argument: NULL config text");
    if (len > CONFIG_MAX_BYTES)
        return ps__seterr(pb->err, PS_ERANGE, "config is %zu bytes; the limit is %zu (64 MiB)", len,
                          CONFIG_MAX_BYTES);
    /* A raw NUL would end a key or string early inside cJSON; JSON forbids it anyway. */
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return parse_error(pb, text, len, (size_t)(nul - text), "NUL byte in the input");

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t off = end ? (size_t)(end - text) : 0;
        bool empty = true;
        for (size_t i = 0; i < len && empty; i++)
            empty = is_space(text[i]);
        if (empty)
            return ps__seterr(pb->err, PS_EPARSE,
                              "line 1, column 1: empty input (expected a JSON object)");
        return parse_error(pb, text, len, off, "malformed JSON");
    }

    int rc = 0;
    /* cJSON stops after the value and, without require_null_terminated, ignores the rest. */
    size_t off = (size_t)(end - text);
    while (off < len && is_space(text[off]))
        off++;
    if (off < len) {
        rc = parse_error(pb, text, len, off, "unexpected data after the JSON value");
        goto out;
    }
    off = find_nul_escape(text, len);
    if (off < len) {
        rc = parse_error(pb, text, len, off, "\\u0000 in a string is not supported");
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        char got[ITEM_LEN / 2];
        describe(got, sizeof got, root);
        rc = ps__seterr(pb->err, PS_ECONFIG, "$: expected an object, got %s", got);
        goto out;
    }

    diag d = {0};
    staged st;
    stage_init(&st, pb);
    check_root(&d, root, &st);
    rc = d.errors ? report_all(pb, root) : apply(pb, &st);
out:
    cJSON_Delete(root);
    return rc;
}
