/*
 * The keys of a config, each declared once (config.h says what comes from these tables). An
 * object's keys are listed in the order of its table in docs/config.md and of its "Known keys"
 * list; nothing else depends on that order. The offsets point into the target each object's
 * values are staged in: the ps__cfg_staged of the load, or the ps__cfg_fbw of one array entry.
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <math.h>
#include <string.h>

/* A key of the root that sets ps_param p. */
#define PARAM(p) .store = PS__CFG_I64, .at = PS__CFG_AT(ints[p]), .state = PS__CFG_STATE(int_st[p])

static const ps__cfg_key root_keys[] = {
    {.name = "schedule",
     .type = PS__CFG_STRING,
     .check = ps__cfg_check_schedule,
     .at = PS__CFG_AT(schedule),
     .range = "a family name or alias, see [schedule](#schedule)",
     .def = "`\"1f1b\"`",
     .meaning = "schedule family"},
    {.name = "pp",
     .type = PS__CFG_INT,
     .lo = 1,
     .hi = PS_MAX_PP,
     .limit = "PS_MAX_PP",
     PARAM(PS_PARAM_PP),
     .def = "4",
     .meaning = "pipeline ranks *p*"},
    {.name = "vpp",
     .type = PS__CFG_INT,
     .lo = 1,
     .hi = PS_MAX_VPP,
     .limit = "PS_MAX_VPP",
     PARAM(PS_PARAM_VPP),
     .def = "the family's own (1 unless the family fixes it)",
     .meaning = "chunks (virtual stages) per rank *v*"},
    {.name = "microbatches",
     .type = PS__CFG_INT,
     .lo = 1,
     .hi = PS_MAX_MICROBATCHES,
     .limit = "PS_MAX_MICROBATCHES",
     PARAM(PS_PARAM_MICROBATCHES),
     .def = "8",
     .meaning = "micro-batches per iteration *m*"},
    {.name = "group_size",
     .type = PS__CFG_INT,
     .hi = PS_MAX_MICROBATCHES,
     .limit = "PS_MAX_MICROBATCHES",
     PARAM(PS_PARAM_GROUP_SIZE),
     .def = "0",
     .meaning = "interleaved micro-batch group size *G*; 0 means *G = p*"},
    {.name = "extra_warmup",
     .type = PS__CFG_INT,
     .hi = PS_MAX_MICROBATCHES,
     .limit = "PS_MAX_MICROBATCHES",
     PARAM(PS_PARAM_EXTRA_WARMUP),
     .def = "the family's (1)",
     .meaning = "adaptive: extra warm-up forwards *δ*, see "
                "[below](#extra_warmup-and-split_backward)"},
    {.name = "split_backward",
     .type = PS__CFG_BOOL,
     PARAM(PS_PARAM_SPLIT_BACKWARD),
     .def = "`false`",
     .meaning = "adaptive: each cool-down backward as I then W"},
    {.name = "costs",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_COSTS,
     .def = "see its keys",
     .meaning = "durations of one chunk's actions"},
    {.name = "stage_costs",
     .type = PS__CFG_OBJECTS,
     .object = PS__CFG_STAGE_COST,
     .max_len = PS_MAX_STAGES,
     .limit = "PS_MAX_STAGES",
     .at = PS__CFG_AT(stage_costs),
     .state = PS__CFG_STATE(stage_costs_st),
     .def = "none",
     .meaning = "per-stage durations, see [stage_costs](#stage_costs)"},
    {.name = "memory",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_MEMORY,
     .def = "f 1, b −0.5, w −0.5, no limit",
     .meaning = "memory model of one chunk and the per-rank limit"},
    {.name = "stage_memory",
     .type = PS__CFG_OBJECTS,
     .object = PS__CFG_STAGE_MEM,
     .max_len = PS_MAX_STAGES,
     .limit = "PS_MAX_STAGES",
     .at = PS__CFG_AT(stage_mem),
     .state = PS__CFG_STATE(stage_mem_st),
     .def = "none",
     .meaning = "per-stage memory model, see [stage_memory](#stage_memory)"},
    {.name = "microbatch_weights",
     .type = PS__CFG_NUMBERS,
     .max_len = PS_MAX_MICROBATCHES,
     .limit = "PS_MAX_MICROBATCHES",
     .strict = true,
     .hi = PS_MAX_COST,
     .at = PS__CFG_AT(mb_weights),
     .state = PS__CFG_STATE(mb_weights_st),
     .def = "none (all 1)",
     .meaning = "cost weight of each micro-batch, one per micro-batch, see "
                "[microbatch_weights](#microbatch_weights)"},
    {.name = "model",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_MODEL,
     .check = ps__cfg_check_model,
     .def = "none",
     .meaning = "MoE model dimensions; needs `cluster`"},
    {.name = "cluster",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_CLUSTER,
     .check = ps__cfg_check_cluster,
     .def = "none",
     .meaning = "device and network figures; needs `model`"},
    {.name = "moe",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_MOE,
     .check = ps__cfg_check_moe,
     .def = "none",
     .meaning = "MoE durations, overrides, planner, layers per stage"},
};

#define COST(k) .hi = PS_MAX_COST, .at = PS__CFG_AT(costs[k]), .state = PS__CFG_STATE(cost_st[k])

static const ps__cfg_key cost_keys[] = {
    {.name = "f", COST(PS_COST_F), .def = "1", .meaning = "forward of one chunk"},
    {.name = "b", COST(PS_COST_B), .def = "1", .meaning = "backward for inputs (dX) of one chunk"},
    {.name = "w",
     COST(PS_COST_W),
     .def = "1",
     .meaning = "backward for weights (dW) of one chunk; a full backward costs `b + w`"},
    {.name = "c", COST(PS_COST_C), .def = "0", .meaning = "one cross-rank transfer"},
    /* Any finite negative number stands for the default. */
    {.name = "fb",
     COST(PS_COST_FB),
     .lo = -INFINITY,
     .def = "−1",
     .meaning = "a fused forward + backward pair; a negative value (stored as −1) means the "
                "default, the forward part plus the backward part"},
};

/* f, b or w of a ps__cfg_fbw: its value and its state (st[i] goes with the i-th of f, b, w). */
#define FBW(field, i)                                                                              \
    .at = offsetof(ps__cfg_fbw, v.field), .state = offsetof(ps__cfg_fbw, st[i]) + 1
#define FBW_OBJECT "an object with \"f\", \"b\" and \"w\""

static const ps__cfg_key stage_cost_keys[] = {
    {.name = "f",
     .hi = PS_MAX_COST,
     .required = true,
     FBW(f, 0),
     .meaning = "forward of one chunk of the stage"},
    {.name = "b",
     .hi = PS_MAX_COST,
     .required = true,
     FBW(b, 1),
     .meaning = "backward for inputs (dX)"},
    {.name = "w",
     .hi = PS_MAX_COST,
     .required = true,
     FBW(w, 2),
     .meaning = "backward for weights (dW)"},
};

static const ps__cfg_key stage_mem_keys[] = {
    {.name = "f",
     .type = PS__CFG_SIGNED,
     .hi = PS_MAX_COST,
     .required = true,
     FBW(f, 0),
     .meaning = "memory a forward of one chunk of the stage adds"},
    {.name = "b",
     .type = PS__CFG_SIGNED,
     .hi = PS_MAX_COST,
     .required = true,
     FBW(b, 1),
     .meaning = "memory a backward for inputs (I) adds"},
    {.name = "w",
     .type = PS__CFG_SIGNED,
     .hi = PS_MAX_COST,
     .required = true,
     FBW(w, 2),
     .meaning = "memory a backward for weights (W) adds"},
};

#define MEM(field, i)                                                                              \
    .type = PS__CFG_SIGNED, .hi = PS_MAX_COST, .at = PS__CFG_AT(mem_in.v.field),                   \
    .state = PS__CFG_STATE(mem_in.st[i])

static const ps__cfg_key memory_keys[] = {
    {.name = "f",
     MEM(f, 0),
     .def = "1",
     .meaning = "memory a forward of one chunk adds to its rank"},
    {.name = "b",
     MEM(b, 1),
     .def = "−0.5",
     .meaning = "memory a backward for inputs (I) adds; a full backward (B) adds `b + w`"},
    {.name = "w", MEM(w, 2), .def = "−0.5", .meaning = "memory a backward for weights (W) adds"},
    {.name = "limit",
     .hi = PS_MAX_COST,
     .at = PS__CFG_AT(limit),
     .state = PS__CFG_STATE(limit_st),
     .def = "0",
     .meaning = "the most memory a rank may hold; 0 means no limit"},
};

#define DIMS(field) .at = PS__CFG_AT(in.dims.field)

static const ps__cfg_key model_keys[] = {
    {.name = "layers",
     .type = PS__CFG_INT,
     .store = PS__CFG_I32,
     .required = true,
     .lo = 1,
     .hi = PS_MAX_LAYERS,
     .limit = "PS_MAX_LAYERS",
     DIMS(layers),
     .meaning = "transformer layers of the model, split over the model stages"},
    {.name = "dense_layers",
     .type = PS__CFG_INT,
     .store = PS__CFG_I32,
     .hi = PS_MAX_LAYERS,
     .at_most = "layers",
     DIMS(dense_layers),
     .def = "0",
     .noun = "dense layers",
     .meaning = "the first `dense_layers` layers are dense (no experts, no all-to-all)"},
    {.name = "hidden",
     .required = true,
     .strict = true,
     .hi = PS_MAX_COST,
     DIMS(hidden),
     .meaning = "hidden size *H*"},
    {.name = "tokens",
     .required = true,
     .strict = true,
     .hi = PS_MAX_COST,
     DIMS(tokens),
     .meaning = "tokens per micro-batch **per device** *S* (with sequence parallelism: sequence "
                "length × micro-batch size / TP)"},
    {.name = "seq_len",
     .hi = PS_MAX_COST,
     DIMS(seq_len),
     .def = "0 = `tokens`",
     .meaning = "sequence length, for the attention-score FLOPs"},
    {.name = "experts",
     .required = true,
     .lo = 1,
     .hi = PS_MAX_COST,
     DIMS(experts),
     .meaning = "routed experts *E*"},
    {.name = "top_k",
     .required = true,
     .lo = 1,
     .hi = PS_MAX_COST,
     .at_most = "experts",
     DIMS(top_k),
     .meaning = "routed experts per token *k*"},
    {.name = "expert_ffn",
     .required = true,
     .strict = true,
     .hi = PS_MAX_COST,
     DIMS(expert_ffn),
     .meaning = "intermediate size of one routed expert"},
    {.name = "shared_experts",
     .hi = PS_MAX_COST,
     DIMS(shared_experts),
     .def = "0",
     .meaning = "shared experts (0 = none)"},
    {.name = "shared_ffn",
     .hi = PS_MAX_COST,
     DIMS(shared_ffn),
     .def = "0 = `expert_ffn`",
     .meaning = "intermediate size of one shared expert"},
    {.name = "dense_ffn",
     .hi = PS_MAX_COST,
     .positive_if = "dense_layers",
     .above = 0,
     DIMS(dense_ffn),
     .def = "0",
     .meaning = "FFN intermediate size of the dense layers; required when there are dense "
                "layers"},
    {.name = "attn_flops",
     .hi = PS_MAX_COST,
     DIMS(attn_flops),
     .def = "0 = 8 *H*²",
     .meaning = "forward GEMM FLOPs per token of the attention projections (Q, K, V, output; "
                "MLA: the down and up projections too)"},
    {.name = "heads_dim",
     .hi = PS_MAX_COST,
     DIMS(heads_dim),
     .def = "0 = 2 *H*",
     .meaning = "heads × (qk head dim + v head dim), for the attention-score FLOPs"},
    {.name = "bytes",
     .hi = PS__CFG_MAX_BYTES,
     DIMS(bytes),
     .def = "0 = 2",
     .meaning = "bytes per element of the all-to-all payload (2 for bf16)"},
    {.name = "permute_recompute",
     .type = PS__CFG_BOOL,
     .store = PS__CFG_I32,
     DIMS(permute_recompute),
     .def = "`false`",
     .meaning = "the backward recomputes the permutation and re-dispatches (one more "
                "all-to-all per layer)"},
};

/* The EP group sizes are whole numbers staged as doubles, as ps_cluster holds them. */
#define CLUSTER(field) .at = PS__CFG_AT(in.cluster.field)

static const ps__cfg_key cluster_keys[] = {
    {.name = "devices_per_node",
     .type = PS__CFG_INT,
     .required = true,
     .lo = 1,
     .hi = PS__CFG_MAX_EP,
     CLUSTER(devices_per_node),
     .meaning = "*G*: EP ranks per node"},
    {.name = "nodes",
     .type = PS__CFG_INT,
     .required = true,
     .lo = 1,
     .hi = PS__CFG_MAX_EP,
     CLUSTER(nodes),
     .meaning = "*N*: nodes in the EP group"},
    /* A bandwidth may be 0 only where nothing travels over it: within a node of one device,
     * or between the nodes of a one-node group. */
    {.name = "bw_intra",
     .required = true,
     .hi = PS_MAX_COST,
     .positive_if = "devices_per_node",
     .above = 1,
     CLUSTER(bw_intra),
     .unit = "GB/s",
     .meaning = "bandwidth per device within a node"},
    {.name = "bw_inter",
     .required = true,
     .hi = PS_MAX_COST,
     .positive_if = "nodes",
     .above = 1,
     CLUSTER(bw_inter),
     .unit = "GB/s",
     .meaning = "bandwidth per device across nodes"},
    {.name = "lat_intra",
     .hi = PS__CFG_MAX_LATENCY,
     CLUSTER(lat_intra),
     .def = "0",
     .unit = "µs",
     .meaning = "latency of one intra-node collective step"},
    {.name = "lat_inter",
     .hi = PS__CFG_MAX_LATENCY,
     CLUSTER(lat_inter),
     .def = "0",
     .unit = "µs",
     .meaning = "latency of one inter-node collective step"},
    {.name = "tflops",
     .required = true,
     .strict = true,
     .hi = PS__CFG_MAX_TFLOPS,
     CLUSTER(tflops),
     .unit = "TFLOP/s",
     .meaning = "peak throughput of one device (dense, in the training precision)"},
    {.name = "efficiency",
     .required = true,
     .strict = true,
     .hi = 1,
     CLUSTER(efficiency),
     .meaning = "achieved fraction of the peak"},
    {.name = "slowdown",
     .hi = PS__CFG_MAX_SLOWDOWN,
     CLUSTER(slowdown),
     .def = "0",
     .meaning = "compute runs (1 + `slowdown`) times longer while communication runs: 0 where "
                "collectives have their own engines (Ascend), > 0 where they take compute "
                "units (GPUs, e.g. SMs given to communication)"},
};

/* The values of "moe.a2a", by ps_a2a. */
static const char *a2a_name(int a2a)
{
    static const char *const names[] = {
        [PS_A2A_AUTO] = "auto", [PS_A2A_FLAT] = "flat", [PS_A2A_HIERARCHICAL] = "hierarchical"};
    return a2a >= 0 && (size_t)a2a < sizeof names / sizeof *names ? names[a2a] : NULL;
}

#define LAYER_DOC "see [moe.layer](#moelayer-and-moedense_layer)"
#define MOE(field) .at = PS__CFG_AT(in.field), .state = PS__CFG_STATE(in.field##_st)

static const ps__cfg_key moe_keys[] = {
    {.name = "a2a",
     .type = PS__CFG_CHOICE,
     .store = PS__CFG_I32,
     .choice = a2a_name,
     MOE(a2a),
     .def = "`\"auto\"`",
     .meaning = "all-to-all algorithm of the derivation; only with `model` and `cluster`"},
    {.name = "planner",
     .type = PS__CFG_CHOICE,
     .store = PS__CFG_I32,
     .choice = ps_planner_name,
     MOE(planner),
     .def = "`\"adaptive\"`",
     .meaning = "overlap planner (`ps_planner`): list scheduling and local search; MindSpeed's "
                "fixed order; Megatron's combined-1F1B order; no overlap"},
    {.name = "p2p",
     .hi = PS_MAX_COST,
     MOE(p2p),
     .def = "0",
     .meaning = "pipeline send of a chunk's output or input gradient, per chunk (0 = not "
                "modelled)"},
    {.name = "slowdown",
     .hi = PS__CFG_MAX_SLOWDOWN,
     MOE(slowdown),
     .def = "`cluster.slowdown`, or 0",
     .meaning = "compute slowdown while communication runs; overrides the cluster's"},
    {.name = "layers",
     .type = PS__CFG_INT,
     .store = PS__CFG_I64,
     .lo = 1,
     .hi = PS_MAX_LAYERS,
     .limit = "PS_MAX_LAYERS",
     MOE(layers),
     .def = "**required** without `model`",
     .meaning = "layer count; not allowed with `model` (it is `model.layers` then)"},
    {.name = "dense_layers",
     .type = PS__CFG_INT,
     .store = PS__CFG_I64,
     .hi = PS_MAX_LAYERS,
     .at_most = "layers",
     MOE(dense_layers),
     .def = "0",
     .meaning = "dense layer count; not allowed with `model`"},
    {.name = "stage_layers",
     .type = PS__CFG_INTS,
     .max_len = PS_MAX_STAGES,
     .limit = "PS_MAX_STAGES",
     .hi = PS_MAX_LAYERS,
     MOE(stage_layers),
     .def = "even split",
     .meaning = "layers per model stage, see [below](#layers-per-stage)"},
    {.name = "layer",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_LAYER,
     .state = PS__CFG_STATE(in.layer_st),
     .range = LAYER_DOC,
     .def = "**required** without `model`",
     .meaning = "durations of one MoE layer's operations"},
    {.name = "dense_layer",
     .type = PS__CFG_OBJECT,
     .object = PS__CFG_DENSE_LAYER,
     .state = PS__CFG_STATE(in.dense_layer_st),
     .range = LAYER_DOC,
     .def = "all 0",
     .meaning = "durations of one dense layer's operations"},
};

/* What each per-layer operation is (the keys themselves are the names of ps_op_name()). */
static const char *const op_meanings[PS_OP_LAYER_COUNT] = {
    [PS_OP_ATTN] = "attention, norm, router, permutation (forward)",
    [PS_OP_DISPATCH] = "all-to-all to the experts; after `attn`",
    [PS_OP_MLP] = "routed experts, or the FFN of a dense layer; after `dispatch`",
    [PS_OP_SHARED] = "shared expert; after `attn` only",
    [PS_OP_COMBINE] = "all-to-all back; after `mlp`",
    [PS_OP_COMBINE_B] = "backward: all-to-all of the output gradient",
    [PS_OP_SHARED_DX] = "shared expert, input gradient",
    [PS_OP_MLP_DX] = "experts, input gradient; after `combine_b`",
    [PS_OP_DISPATCH_B] = "all-to-all back to the tokens; after `mlp_dx`",
    [PS_OP_ATTN_DX] = "attention, input gradient; after `dispatch_b` and `shared_dx`",
    [PS_OP_MLP_DW] = "experts, weight gradient (deferrable)",
    [PS_OP_SHARED_DW] = "shared expert, weight gradient (deferrable)",
    [PS_OP_ATTN_DW] = "attention, weight gradient (deferrable)",
    [PS_OP_REDISPATCH] = "permutation recomputation: the backward re-dispatches the expert input",
};

/* Operation i of "moe.layer" (dense 0) or "moe.dense_layer" (dense 1): a duration. */
static void layer_key(size_t i, int dense, ps__cfg_key *k)
{
    memset(k, 0, sizeof *k);
    k->name = ps_op_name((int)i);
    k->type = PS__CFG_NUMBER;
    k->hi = PS_MAX_COST;
    k->at = PS__CFG_AT(in.op) + ((size_t)dense * PS_OP_LAYER_COUNT + i) * sizeof(double);
    k->state = PS__CFG_STATE(in.op_st) + (size_t)dense * PS_OP_LAYER_COUNT + i;
    if (dense && ps_op_is_comm((int)i))
        k->zero_reason = "a dense layer has no all-to-all";
    k->def = "derived, else 0";
    k->stream = ps_op_is_comm((int)i) ? "comm" : "compute";
    k->meaning = op_meanings[i];
}

static void moe_layer_key(size_t i, ps__cfg_key *k)
{
    layer_key(i, 0, k);
}

static void dense_layer_key(size_t i, ps__cfg_key *k)
{
    layer_key(i, 1, k);
}

#define KEYS(a) .keys = a, .n_keys = sizeof a / sizeof *a
_Static_assert(sizeof root_keys / sizeof *root_keys <= PS__CFG_MAX_KEYS &&
                   sizeof model_keys / sizeof *model_keys <= PS__CFG_MAX_KEYS &&
                   sizeof cluster_keys / sizeof *cluster_keys <= PS__CFG_MAX_KEYS &&
                   sizeof moe_keys / sizeof *moe_keys <= PS__CFG_MAX_KEYS &&
                   PS_OP_LAYER_COUNT <= PS__CFG_MAX_KEYS,
               "PS__CFG_MAX_KEYS is too small");

const ps__cfg_object ps__cfg_objects[PS__CFG_OBJECT_COUNT] = {
    [PS__CFG_ROOT] = {.path = "$", KEYS(root_keys), .doc = "root"},
    [PS__CFG_COSTS] = {.path = "$.costs", KEYS(cost_keys), .doc = "costs"},
    [PS__CFG_STAGE_COST] = {.path = "$.stage_costs[i]",
                            .expected = FBW_OBJECT,
                            KEYS(stage_cost_keys),
                            .doc = "stage_costs"},
    [PS__CFG_MEMORY] = {.path = "$.memory",
                        KEYS(memory_keys),
                        .after = ps__cfg_memory_sum,
                        .doc = "memory"},
    [PS__CFG_STAGE_MEM] = {.path = "$.stage_memory[i]",
                           .expected = FBW_OBJECT,
                           KEYS(stage_mem_keys),
                           .after = ps__cfg_entry_sum,
                           .doc = "stage_memory"},
    [PS__CFG_MODEL] = {.path = "$.model", .owner = "the model", KEYS(model_keys), .doc = "model"},
    [PS__CFG_CLUSTER] = {.path = "$.cluster",
                         .owner = "the cluster",
                         KEYS(cluster_keys),
                         .doc = "cluster"},
    [PS__CFG_MOE] = {.path = "$.moe", KEYS(moe_keys), .doc = "moe"},
    [PS__CFG_LAYER] = {.path = "$.moe.layer",
                       .n_keys = PS_OP_LAYER_COUNT,
                       .key_at = moe_layer_key,
                       .doc = "moe.layer",
                       .doc_also = PS__CFG_DENSE_LAYER},
    [PS__CFG_DENSE_LAYER] = {.path = "$.moe.dense_layer",
                             .n_keys = PS_OP_LAYER_COUNT,
                             .key_at = dense_layer_key},
};

const ps__cfg_key *ps__cfg_keys(int id, ps__cfg_key *buf, size_t *n)
{
    const ps__cfg_object *o = &ps__cfg_objects[id];
    *n = o->n_keys;
    if (o->keys)
        return o->keys;
    for (size_t i = 0; i < o->n_keys; i++)
        o->key_at(i, &buf[i]);
    return buf;
}

const char *ps__cfg_key_name(const void *id, size_t i)
{
    const ps__cfg_object *o = &ps__cfg_objects[*(const int *)id];
    if (i >= o->n_keys)
        return NULL;
    if (o->keys)
        return o->keys[i].name;
    ps__cfg_key k;
    o->key_at(i, &k);
    return k.name;
}
