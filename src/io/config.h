/*
 * The JSON configuration loader (docs/config.md), inside. Not installed.
 *
 * Every key is declared once, as a ps__cfg_key in the table of its object (config_keys.c): its
 * name, JSON type, range, the rules that relate it to the other keys of its object, where the
 * checked value is staged, and the text of its row in docs/config.md. From that one table come
 * the checks (type, range, required, duplicate and unknown keys, config_check.c), the "did you
 * mean" suggestions and the lists of known keys, and the key tables of docs/config.md
 * (config_doc.c, which test-config compares with the file). No other code knows a key's
 * position in its table: handlers find their values through the offsets of the declarations.
 *
 * Loading runs in three phases (config.c): parse; check every key once, staging what passed
 * into a ps__cfg_staged and reporting every problem to a collector (json_diag.h); then, only if
 * nothing was reported, apply the staged values to the problem through its setters, undoing
 * them if a setter fails. So a config with errors never touches the problem. The MoE blocks are
 * combined into one model after the whole root was read (config_moe.c), since their rules
 * relate keys of different blocks that may come in any order.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_IO_CONFIG_H
#define PS_IO_CONFIG_H

#include "json_diag.h"

#include <cJSON.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The limits of ps_moe_derive(): devices per node and nodes, bytes per element, latencies (in
 * microseconds) and peak TFLOP/s. Other dimensions are at most PS_MAX_COST. */
#define PS__CFG_MAX_EP 1e6
#define PS__CFG_MAX_BYTES 64
#define PS__CFG_MAX_LATENCY 1e9
#define PS__CFG_MAX_TFLOPS 1e9
/* The largest compute slowdown ps_problem_set_moe() accepts. */
#define PS__CFG_MAX_SLOWDOWN 100
/* The most keys of one object (the model has 15). */
#define PS__CFG_MAX_KEYS 16
/* The ps_param values a config sets, pp .. split_backward. */
#define PS__CFG_N_PARAMS (PS_PARAM_SPLIT_BACKWARD + 1)

/*
 * The objects of a config. The order is that of the "Known keys of ..." lists at the end of a
 * message; ps__cfg_objects[] is indexed by these with designated initializers.
 */
typedef enum ps__cfg_object_id {
    PS__CFG_ROOT,
    PS__CFG_COSTS,
    PS__CFG_STAGE_COST, /* an entry of "stage_costs" */
    PS__CFG_MEMORY,
    PS__CFG_STAGE_MEM, /* an entry of "stage_memory" */
    PS__CFG_MODEL,
    PS__CFG_CLUSTER,
    PS__CFG_MOE,
    PS__CFG_LAYER,
    PS__CFG_DENSE_LAYER,
    PS__CFG_OBJECT_COUNT
} ps__cfg_object_id;

/* What a key's value is in JSON, and so how it is checked. */
typedef enum ps__cfg_type {
    PS__CFG_NUMBER,  /* a finite number in [lo, hi], or (lo, hi] when strict */
    PS__CFG_SIGNED,  /* a finite number of either sign, of magnitude at most hi */
    PS__CFG_INT,     /* a whole number in [lo, hi] */
    PS__CFG_BOOL,    /* true or false, staged as 0 or 1 */
    PS__CFG_CHOICE,  /* one of the strings choice(0), choice(1), ...; staged as the index */
    PS__CFG_STRING,  /* a string, checked and staged by check */
    PS__CFG_OBJECT,  /* an object of the keys of object (check, when set, reads it) */
    PS__CFG_OBJECTS, /* an array of at most max_len objects of the keys of object, whose
                        values are staged as a ps__cfg_array of ps_fbw */
    PS__CFG_INTS,    /* an array of at most max_len whole numbers in [lo, hi], staged as a
                        ps__cfg_array of int32_t */
    PS__CFG_NUMBERS  /* an array of at most max_len finite numbers in [lo, hi] ((lo, hi] when
                        strict), staged as a ps__cfg_array of double */
} ps__cfg_type;

/* How a scalar is staged at its offset. */
typedef enum ps__cfg_store { PS__CFG_F64, PS__CFG_I64, PS__CFG_I32 } ps__cfg_store;

/* What the check of a key found: absent, present but wrong (or repeated), or staged. */
enum { PS__CFG_ABSENT = 0, PS__CFG_BAD = 1, PS__CFG_OK = 2 };
typedef unsigned char ps__cfg_state;

typedef struct ps__cfg_ctx ps__cfg_ctx;
typedef struct ps__cfg_key ps__cfg_key;

struct ps__cfg_key {
    const char *name;
    ps__cfg_type type;
    ps__cfg_store store;
    bool required;
    bool strict; /* NUMBER: the lower bound itself is excluded */
    double lo, hi;
    size_t max_len; /* OBJECTS, INTS, NUMBERS: the most entries */
    int object;     /* OBJECT, OBJECTS: a ps__cfg_object_id */
    const char *(*choice)(int i);
    /* Checks the value and stages it itself; returns whether it was valid. */
    bool (*check)(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                  void *target);
    size_t at;    /* offset of the staged value in the object's target */
    size_t state; /* 1 + offset of the key's ps__cfg_state in the target; 0 = not kept */

    /* Rules that relate the key to another key of its object, checked after all of them were
     * read and only when the other key's value is valid. A broken rule is reported and changes
     * no state. zero_reason is checked with the value itself. */
    const char *at_most;     /* the value is at most the value of that key */
    const char *positive_if; /* the value must be > 0 when that key's is > above, and the key
                                is then required */
    double above;
    const char *zero_reason; /* the value must be 0, because of this */

    /* Its row in docs/config.md. */
    const char *limit;   /* the name of hi, as in "1 … 4096 (`PS_MAX_PP`)" */
    const char *range;   /* the range column where the type has none (strings, objects) */
    const char *def;     /* the default column; "**required**" when the key is required */
    const char *unit;    /* the unit column (shown when a key of the object has one) */
    const char *stream;  /* the stream column (likewise) */
    const char *meaning; /* what the key sets */
    const char *noun;    /* what its value counts, for the messages of positive_if rules that
                            name it: "the model has 3 dense layers" */
};

/* An object of a config and the target its keys' offsets point into. */
typedef struct ps__cfg_object {
    const char *path;     /* "$.costs"; "$.stage_costs[i]" for the entries of an array */
    const char *expected; /* the type error's "expected ..."; NULL: "an object" */
    const char *owner;    /* "the model": who has the count of a positive_if rule */
    const ps__cfg_key *keys;
    size_t n_keys;
    /* Instead of keys: fills key i (< n_keys) (the layer objects take their keys from the
     * operation names of ps_op_name(), so that a new operation is a new key). */
    void (*key_at)(size_t i, ps__cfg_key *out);
    /* A check of the whole object, after its keys and rules. */
    void (*after)(ps__cfg_ctx *c, const char *path, void *target);
    const char *doc; /* the table's name in docs/config.md; NULL: in another object's table */
    int doc_also;    /* a ps__cfg_object_id whose zero rules the table also shows; 0: none */
} ps__cfg_object;

extern const ps__cfg_object ps__cfg_objects[PS__CFG_OBJECT_COUNT];

/* The keys of object id: the static table, or buf (PS__CFG_MAX_KEYS entries) filled. */
const ps__cfg_key *ps__cfg_keys(int id, ps__cfg_key *buf, size_t *n);
/* Name i of the keys of the object whose id *id (an int) is, NULL past the last: the name
 * function of ps__json_suggest(). */
const char *ps__cfg_key_name(const void *id, size_t i);

/* ---- staging ------------------------------------------------------------------------------- */

/* A checked array: n entries (ps_fbw, int32_t or double; NULL when n is 0 or memory ran
 * out). */
typedef struct ps__cfg_array {
    void *v;
    size_t n;
    long long sum; /* INTS: the sum of the entries */
} ps__cfg_array;

/* The f, b and w of an entry or of "memory", and what their checks found: st[i] is the state
 * of the i-th member of v (f, b, w), as their declarations say (config_keys.c). */
typedef struct ps__cfg_fbw {
    ps_fbw v;
    ps__cfg_state st[3];
} ps__cfg_fbw;

/* What the MoE blocks gave, key by key; ps__cfg_moe_combine() makes one model of it. */
typedef struct ps__cfg_moe_in {
    bool model_seen, cluster_seen, moe_seen; /* the blocks are present */
    bool model_ok, cluster_ok;               /* ... and passed their own checks */
    bool moe_object;                         /* "moe" is an object (its keys were read) */
    ps_model_dims dims;
    ps_cluster cluster;
    int32_t a2a, planner;
    double p2p, slowdown;
    long long layers, dense_layers;
    ps__cfg_array stage_layers;
    ps__cfg_state a2a_st, planner_st, p2p_st, slowdown_st, layers_st, dense_layers_st,
        stage_layers_st, layer_st, dense_layer_st;
    double op[2][PS_OP_LAYER_COUNT]; /* [0] "layer", [1] "dense_layer" */
    ps__cfg_state op_st[2][PS_OP_LAYER_COUNT];
} ps__cfg_moe_in;

/* Everything a config sets, checked but not yet applied: the target of the root's keys. */
typedef struct ps__cfg_staged {
    const char *schedule; /* borrowed from the cJSON tree; NULL when absent */
    long long ints[PS__CFG_N_PARAMS];
    ps__cfg_state int_st[PS__CFG_N_PARAMS];
    double costs[5]; /* indexed by ps_cost */
    ps__cfg_state cost_st[5];
    ps__cfg_array stage_costs, stage_mem, mb_weights;
    ps__cfg_state stage_costs_st, stage_mem_st, mb_weights_st;
    ps_stage_mem base_mem; /* the problem's memory model, which "memory" merges into */
    ps__cfg_fbw mem_in;    /* "memory"'s f, b and w as given */
    double limit;
    ps__cfg_state limit_st;
    bool has_mem; /* "memory" gave f, b or w: mem is the merged triple */
    ps_stage_mem mem;
    ps__cfg_moe_in in;
    /* The result of the MoE blocks: the model to install, the all-to-all estimate it was
     * derived with (has_a2a) and its layers per stage (NULL: the even split). */
    bool has_moe, has_a2a;
    ps_moe_model moe;
    ps_a2a_info a2a;
    const int32_t *stage_layers;
    size_t n_stage_layers;
    /* The first array that memory ran out for (reported only when nothing else is wrong). */
    bool oom;
    size_t oom_n;
    char oom_path[PS__JSON_PATH_LEN];
} ps__cfg_staged;

/* The offsets of the declarations: a value and a state in the staging struct. */
#define PS__CFG_AT(field) offsetof(ps__cfg_staged, field)
#define PS__CFG_STATE(field) (offsetof(ps__cfg_staged, field) + 1)

/* ---- checking ------------------------------------------------------------------------------ */

struct ps__cfg_ctx {
    ps__json_diag *d;
    ps__cfg_staged *st;
    const ps_allocator *al; /* for the staged arrays */
    unsigned unsuggested;   /* bit per object id: an unknown key there had no suggestion */
};

/*
 * Checks the object obj at path against the keys of object id, staging the values into target:
 * unknown and repeated keys, each value, missing required keys, the rules between keys, then
 * the object's own check. Returns whether nothing was reported.
 */
bool ps__cfg_check_object(ps__cfg_ctx *c, int id, const char *path, const cJSON *obj, void *target);
/* The value of a staged scalar key, as a double. */
double ps__cfg_value(const ps__cfg_key *k, const void *target);

/* config_moe.c: the handlers of the "model", "cluster" and "moe" blocks, and what combines them
 * after the whole root was read (sets st->has_moe and the rest of the result on success). */
bool ps__cfg_check_model(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                         void *target);
bool ps__cfg_check_cluster(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                           void *target);
bool ps__cfg_check_moe(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                       void *target);
void ps__cfg_moe_combine(ps__cfg_ctx *c);

/* config_check.c: the handler of "schedule" and the object checks of the f + b + w rule. */
bool ps__cfg_check_schedule(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                            void *target);
void ps__cfg_memory_sum(ps__cfg_ctx *c, const char *path, void *target);
void ps__cfg_entry_sum(ps__cfg_ctx *c, const char *path, void *target);

/* ---- documentation (config_doc.c) ------------------------------------------------------------ */

/* The name of key table i of docs/config.md ("root", "costs", ...); NULL past the last. */
const char *ps__config_doc_table(size_t i);
/*
 * Writes key table name as markdown (header, separator, one row per key, each line ending in
 * "\n") through write. The table stands in docs/config.md between the lines
 * "<!-- keys:NAME:begin -->" and "<!-- keys:NAME:end -->". Returns 0, or PS_ENOTFOUND.
 */
int ps__config_doc_markdown(const char *name, void (*write)(void *ud, const char *text), void *ud);

#endif /* PS_IO_CONFIG_H */
