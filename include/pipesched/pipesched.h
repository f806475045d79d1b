/*
 * pipesched — pipeline-parallel schedule engine.
 *
 * The one public header. It includes only <stddef.h> and <stdint.h> and compiles alone with
 * -std=c99 -pedantic. Every handle is opaque; every function that can fail returns 0 or a
 * negative PS_E* code (see ps_strerror()); the detailed message of the last failure on a
 * handle is available from ps_<handle>_last_error(). The library does no I/O, prints nothing
 * and never aborts.
 *
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_H
#define PIPESCHED_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && !defined(PS_STATIC)
#define PS_EXTERN __attribute__((visibility("default")))
#else
#define PS_EXTERN
#endif

#define PS_VERSION_MAJOR 0
#define PS_VERSION_MINOR 1
#define PS_VERSION_PATCH 0

/* ---------------------------------------------------------------------------------------------
 * Errors
 */

/* X(name, value, message): one table for the enum, ps_strerror() and ps_err_name(). */
#define PS_ERRNO_MAP(X)                                                                            \
    X(EINVAL, -1, "invalid argument")                                                              \
    X(ENOMEM, -2, "out of memory")                                                                 \
    X(ERANGE, -3, "size beyond the documented limit")                                              \
    X(EPARSE, -4, "malformed input")                                                               \
    X(ECONFIG, -5, "invalid configuration")                                                        \
    X(EUNSUPPORTED, -6, "parameters not accepted by the schedule family")                          \
    X(ENOTFOUND, -7, "unknown name")                                                               \
    X(EINVALID, -8, "schedule failed validation")                                                  \
    X(EDEADLOCK, -9, "schedule deadlocks")                                                         \
    X(EIO, -10, "output callback failed")                                                          \
    X(ESTATE, -11, "operation not valid in the current state")                                     \
    X(ECANCELED, -12, "execution canceled")                                                        \
    X(ESTALL, -13, "execution stalled (no progress within the stall timeout)")                     \
    X(EHOST, -14, "a host callback reported an error")                                             \
    X(ESYS, -15, "system resource unavailable (event loop, thread)")                               \
    X(EINTERNAL, -16, "internal error: a broken invariant (a bug in pipesched)")

typedef enum ps_errno {
    PS_OK = 0,
#define PS__ERRNO_ENUM(name, value, msg) PS_##name = (value),
    PS_ERRNO_MAP(PS__ERRNO_ENUM)
#undef PS__ERRNO_ENUM
} ps_errno;

/* A static English description of err ("unknown error" for values outside the table). */
PS_EXTERN const char *ps_strerror(int err);
/* The symbolic name of err without the PS_ prefix ("EINVAL"), or "UNKNOWN". */
PS_EXTERN const char *ps_err_name(int err);

/* ---------------------------------------------------------------------------------------------
 * Limits. Requests beyond them are refused with PS_ERANGE before anything is allocated.
 */
#define PS_MAX_PP 4096              /* pipeline ranks */
#define PS_MAX_VPP 64               /* chunks (virtual stages) per rank */
#define PS_MAX_STAGES 65536         /* virtual stages in total */
#define PS_MAX_MICROBATCHES 1048576 /* micro-batches per iteration */
#define PS_MAX_ACTIONS 100000000LL  /* compute actions in one schedule (~3.6 GB simulated) */
#define PS_MAX_COST 1e12            /* largest accepted duration, in cost units */
#define PS_MAX_LAYERS 65536         /* transformer layers of a MoE model */

/* ---------------------------------------------------------------------------------------------
 * Memory. Every handle takes an optional allocator (NULL = realloc/free). The function
 * follows Lua's lua_Alloc contract: nsize == 0 frees ptr and returns NULL; otherwise it returns
 * a block of nsize bytes holding the first min(osize, nsize) bytes of ptr (ptr may be NULL),
 * or NULL on failure, in which case ptr is untouched. The allocator is copied into the handle.
 */
typedef void *(*ps_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);
typedef struct ps_allocator {
    ps_alloc_fn fn;
    void *ud;
} ps_allocator;

/* ---------------------------------------------------------------------------------------------
 * Actions
 */
typedef enum ps_kind {
    PS_F = 0,      /* forward of one chunk */
    PS_I = 1,      /* backward for inputs (dX) */
    PS_W = 2,      /* backward for weights (dW) */
    PS_B = 3,      /* full backward (I + W) */
    PS_FB = 4,     /* fused pair: forward {stage, mb} with backward {bkind, bstage, bmb} */
    PS_SEND_F = 5, /* stage = sending stage, bstage = receiving stage */
    PS_RECV_F = 6, /* stage = receiving stage, bstage = sending stage */
    PS_SEND_B = 7,
    PS_RECV_B = 8,
    PS_KIND_COUNT = 9
} ps_kind;

/*
 * One action. For PS_FB the forward part is {stage, mb} and the backward part is
 * {bkind (PS_B or PS_I), bstage, bmb}. For the communication kinds bstage is the peer stage
 * and bmb equals mb. For the other kinds bkind/bstage/bmb are zero.
 */
typedef struct ps_action {
    uint8_t kind;
    uint8_t bkind;
    uint16_t reserved;
    int32_t stage;
    int32_t mb;
    int32_t bstage;
    int32_t bmb;
} ps_action;

/* The kind's token: "F", "I", "W", "B", "OVERLAP_F_B", "SEND_F", ... */
PS_EXTERN const char *ps_kind_name(int kind);

/*
 * Writes the PyTorch action string of a ("2F3", "1SEND_B0", "(0F7;7B3)OVERLAP_F_B") into
 * buf (always NUL-terminated when n > 0). Returns the length the full string needs, not
 * counting the NUL (like snprintf), or PS_EINVAL.
 */
PS_EXTERN int ps_action_format(const ps_action *a, char *buf, size_t n);

/*
 * Parses one action string, whole (full match, surrounding spaces allowed). The legacy token
 * "BW" is read as a full backward (PS_B). An empty string is PS_ENOTFOUND (an idle cell). On
 * PS_EPARSE, *err_col (if not NULL) receives the 0-based offset of the first offending byte.
 */
PS_EXTERN int ps_action_parse(const char *s, size_t len, ps_action *out, size_t *err_col);

/* ---------------------------------------------------------------------------------------------
 * Problem: the parameters of a schedule and its cost model.
 */
typedef struct ps_problem ps_problem;

typedef enum ps_param {
    PS_PARAM_PP = 0,  /* pipeline ranks p (default 4) */
    PS_PARAM_VPP = 1, /* chunks per rank v (default 0 = the family default: 1, or 2 for V) */
    PS_PARAM_MICROBATCHES = 2,  /* micro-batches m (default 8) */
    PS_PARAM_GROUP_SIZE = 3,    /* interleaved micro-batch group size G (0 = default p) */
    PS_PARAM_EXTRA_WARMUP = 4,  /* adaptive: extra warm-up forwards delta (-1 = default 1) */
    PS_PARAM_SPLIT_BACKWARD = 5 /* adaptive: 1 = I/W split in the cool-down, Ws fill bubbles */
} ps_param;

typedef enum ps_cost {
    PS_COST_F = 0, /* forward of one chunk (default 1) */
    PS_COST_B = 1, /* backward for inputs of one chunk (default 1) */
    PS_COST_W = 2, /* backward for weights of one chunk (default 1) */
    PS_COST_C = 3, /* cross-rank transfer (default 0) */
    PS_COST_FB = 4 /* fused pair; negative = default (forward + backward part) */
} ps_cost;

/* Three per-stage values for F, I (b) and W: durations, or memory deltas. */
typedef struct ps_fbw {
    double f, b, w;
} ps_fbw;

typedef ps_fbw ps_stage_cost;

/* Creates a problem with the defaults above and schedule "1f1b". Caller frees with
 * ps_problem_free(). Returns 0, PS_EINVAL (out NULL) or PS_ENOMEM. */
PS_EXTERN int ps_problem_new(ps_problem **out, const ps_allocator *alloc);
PS_EXTERN void ps_problem_free(ps_problem *pb);
/* The message of the last failure on pb ("" if none). Borrowed until the next call on pb. */
PS_EXTERN const char *ps_problem_last_error(const ps_problem *pb);

/*
 * Applies a JSON configuration (see docs/config.md): keys "schedule", "pp", "vpp",
 * "microbatches", "group_size", "costs" {"f","b","w","c","fb"}, "stage_costs" [{"f","b","w"}],
 * "memory" {"f","b","w","limit"}, "stage_memory" [{"f","b","w"}], "microbatch_weights"
 * [numbers], "extra_warmup", "split_backward", and the MoE blocks "model", "cluster", "moe"
 * (docs/config.md). Keys not present keep their current value. Unknown keys, wrong types and
 * out-of-range values are PS_ECONFIG with a message naming every offending JSON path; malformed
 * JSON is PS_EPARSE with line and column. On failure pb is unchanged.
 */
PS_EXTERN int ps_problem_load_json(ps_problem *pb, const char *text, size_t len);

/* Sets the schedule family by name or alias (case-insensitive). PS_ENOTFOUND if unknown. */
PS_EXTERN int ps_problem_set_schedule(ps_problem *pb, const char *name);
/* The canonical family name. Borrowed from the registry (static). */
PS_EXTERN const char *ps_problem_schedule(const ps_problem *pb);
/* PS_ERANGE when v is outside [1, limit] (group size: [0, PS_MAX_MICROBATCHES]). */
PS_EXTERN int ps_problem_set_int(ps_problem *pb, ps_param which, long long v);
PS_EXTERN long long ps_problem_get_int(const ps_problem *pb, ps_param which);
/* Costs must be finite, >= 0 and <= PS_MAX_COST (PS_COST_FB also accepts < 0: default). */
PS_EXTERN int ps_problem_set_cost(ps_problem *pb, ps_cost which, double v);
PS_EXTERN double ps_problem_get_cost(const ps_problem *pb, ps_cost which);
/*
 * Per-stage costs (one entry per virtual stage; they replace f, b, w). n == 0 clears them.
 * The array is copied. Its length is checked against the stage count when the schedule is
 * generated or simulated.
 */
PS_EXTERN int ps_problem_set_stage_costs(ps_problem *pb, const ps_stage_cost *c, size_t n);
/* Number of per-stage costs; *out (if not NULL) borrows them until the next change of pb. */
PS_EXTERN size_t ps_problem_stage_costs(const ps_problem *pb, const ps_stage_cost **out);
/* Parses "f=1,b=2,w=1,c=0,fb=2.5" (any subset) and applies it; PS_ECONFIG names the key. */
PS_EXTERN int ps_problem_set_costs_string(ps_problem *pb, const char *spec);

/*
 * Memory model (zero-bubble style): a forward adds mem_f to its rank's memory, an I adds
 * mem_b, a W adds mem_w, a full B adds mem_b + mem_w; mem_f + mem_b + mem_w must be 0 (within
 * 1e-9 of the largest). Defaults 1, -0.5, -0.5 per chunk. Per-stage values replace them.
 */
typedef ps_fbw ps_stage_mem;

/* PS_ECONFIG when the three do not sum to 0 or are not finite / beyond PS_MAX_COST. */
PS_EXTERN int ps_problem_set_memory(ps_problem *pb, double mem_f, double mem_b, double mem_w);
/* One entry per virtual stage (n == 0 clears); copied; the count is checked at generation. */
PS_EXTERN int ps_problem_set_stage_memory(ps_problem *pb, const ps_stage_mem *m, size_t n);
/* The memory model of stage (per-stage values when set, else the scalars). */
PS_EXTERN ps_stage_mem ps_problem_memory(const ps_problem *pb, int stage);
/* Per-rank memory limit; 0 = none (the default). The simulator rejects a schedule whose
 * memory exceeds it (PS_EINVALID naming the rank and the action); zb-auto schedules under it. */
PS_EXTERN int ps_problem_set_mem_limit(ps_problem *pb, double limit);
PS_EXTERN double ps_problem_mem_limit(const ps_problem *pb);
/* Parses "f=1,b=-0.5,w=-0.5" (any subset; the result must still sum to 0). */
PS_EXTERN int ps_problem_set_memory_string(ps_problem *pb, const char *spec);

/*
 * Per-micro-batch cost weights, for uneven micro-batches (packed sequences whose documents
 * differ in length cost differently). Micro-batch j's F, I, W and B cost their stage's cost
 * times w[j]. A fused pair costs its forward part with the forward's weight and its backward
 * part with the backward's: f·w_i + b·w_j (+ w·w_j for a full backward) when the pair costs
 * the sum of its parts; a pair of its own duration D (the fb cost, or the overlap planner's
 * plan in MoE mode) costs D·(f·w_i + b'·w_j)/(f + b'), its parts' unfused durations weighted.
 * Memory and the transfer cost c are not weighted. Every family is simulated with them and
 * zb-auto schedules with them. All weights 1 give exactly the unweighted durations.
 *
 * w holds n positive finite numbers of at most PS_MAX_COST, one per micro-batch; it is copied,
 * and n == 0 clears them (every micro-batch costs the same, the default). Returns 0, PS_EINVAL
 * (pb NULL, or w NULL with n > 0), PS_ERANGE naming the index of a bad entry or an n above
 * PS_MAX_MICROBATCHES, or PS_ENOMEM; on failure pb is unchanged. The count is checked against
 * the micro-batch count when a schedule is generated or simulated (PS_ECONFIG).
 */
PS_EXTERN int ps_problem_set_microbatch_weights(ps_problem *pb, const double *w, size_t n);
/* Number of micro-batch weights (0: none); *out (if not NULL) borrows them until the next
 * change of pb. */
PS_EXTERN size_t ps_problem_microbatch_weights(const ps_problem *pb, const double **out);
/* Parses "w0,w1,..." (numbers separated by commas) and applies it as above; PS_ECONFIG names
 * the index and the column of an entry that is not a positive finite number. */
PS_EXTERN int ps_problem_set_microbatch_weights_string(ps_problem *pb, const char *spec);

/* ---------------------------------------------------------------------------------------------
 * Registry of schedule families.
 */
typedef struct ps_family_info {
    const char *name;        /* canonical name, e.g. "interleaved" */
    const char *aliases;     /* comma-separated, e.g. "Interleaved1F1B,vpp" */
    const char *description; /* one line */
    const char *constraints; /* one line, human readable */
    const char *placement;   /* "loop", "v" or "bidirectional" */
} ps_family_info;

PS_EXTERN size_t ps_family_count(void);
/* Fills *out with family i (static strings). PS_EINVAL when i is out of range. */
PS_EXTERN int ps_family_get(size_t i, ps_family_info *out);
/* Finds a family by name or alias, case-insensitively. Returns its index or PS_ENOTFOUND. */
PS_EXTERN int ps_family_lookup(const char *name, ps_family_info *out);

/* The parameters of a family beyond pp and microbatches: what it requires and what it takes. */
typedef struct ps_family_params {
    int vpp;             /* the vpp it requires (2 for the V families), 0 when any vpp goes */
    int default_vpp;     /* the vpp it uses when the problem leaves vpp at 0 */
    int model_copies;    /* 2 when every rank holds two copies of the model (DualPipe), else 1 */
    int cost_aware;      /* 1: its schedule changes with the problem's costs and memory */
    const char *options; /* the optional parameters it takes, comma-separated, by their
                            configuration names ("group_size", "extra_warmup,split_backward");
                            "" for none. The others are refused with PS_EUNSUPPORTED. Static. */
} ps_family_params;

/* Fills *out with the parameters of family i. PS_EINVAL when i is out of range or out NULL. */
PS_EXTERN int ps_family_params_get(size_t i, ps_family_params *out);

/* ---------------------------------------------------------------------------------------------
 * Schedule: p ordered action lists, the stage -> rank placement and the micro-batch paths.
 */
typedef struct ps_schedule ps_schedule;

/* Creates an empty schedule handle. Caller frees with ps_schedule_free(). */
PS_EXTERN int ps_schedule_new(ps_schedule **out, const ps_allocator *alloc);
PS_EXTERN void ps_schedule_free(ps_schedule *s);
/* The message of the last failure on s ("" if none). Borrowed until the next call on s. */
PS_EXTERN const char *ps_schedule_last_error(const ps_schedule *s);

/*
 * Generates the compute-only schedule of pb's family. PS_EUNSUPPORTED (with the reason, e.g.
 * "interleaved needs m >= pp when vpp > 1; got m=3, pp=4") when the family rejects the
 * parameters; PS_ERANGE beyond the limits. Replaces whatever s held.
 */
PS_EXTERN int ps_schedule_generate(ps_schedule *s, const ps_problem *pb);

typedef enum ps_csv_format {
    PS_CSV_AUTO = 0,         /* compute_comms if any SEND/RECV cell is present */
    PS_CSV_COMPUTE_ONLY = 1, /* PyTorch "compute_only" */
    PS_CSV_COMPUTE_COMMS = 2 /* PyTorch "compute_comms" */
} ps_csv_format;

/*
 * Loads a PyTorch-style CSV table (one row per rank, one action per cell, empty = idle).
 * pp = number of rows, stages = largest stage + 1, micro-batches = largest index + 1 unless
 * microbatches > 0 is given; the placement is inferred (a stage on two ranks is an error).
 * Errors name the line and column. The schedule's family is "custom".
 */
PS_EXTERN int ps_schedule_load_csv(ps_schedule *s, const char *text, size_t len, ps_csv_format fmt,
                                   int microbatches);

/* Adds SEND/RECV actions (kept beside the compute lists). PS_EDEADLOCK if impossible. */
PS_EXTERN int ps_schedule_lower(ps_schedule *s);

/*
 * Checks the schedule: every micro-batch runs every stage of its path exactly once forward
 * and once backward (one B, or one I and one W), each stage on one rank, every dependency
 * satisfiable in each rank's order (a deadlock names each rank's blocked head action and what
 * it waits for), and, when lowered, SEND/RECV matched in order on every rank pair.
 * Returns 0, PS_EINVALID or PS_EDEADLOCK.
 */
PS_EXTERN int ps_schedule_validate(ps_schedule *s);

PS_EXTERN const char *ps_schedule_family(const ps_schedule *s); /* "custom" when loaded */
PS_EXTERN int ps_schedule_pp(const ps_schedule *s);
PS_EXTERN int ps_schedule_vpp(const ps_schedule *s); /* stages / pp (0 if uneven) */
PS_EXTERN int ps_schedule_num_stages(const ps_schedule *s);
PS_EXTERN int ps_schedule_microbatches(const ps_schedule *s);
PS_EXTERN int ps_schedule_group_size(const ps_schedule *s);            /* 0 when not applicable */
PS_EXTERN int ps_schedule_stage_rank(const ps_schedule *s, int stage); /* -1 if out of range */
/* Number of distinct model copies a rank holds (2 for bidirectional placements). */
PS_EXTERN int ps_schedule_param_copies(const ps_schedule *s);
PS_EXTERN int ps_schedule_num_paths(const ps_schedule *s);
/* Path i: *stages borrows the ordered stage list (length *n); micro-batches
 * [*first_mb, *first_mb + *count). PS_EINVAL when i is out of range. */
PS_EXTERN int ps_schedule_path(const ps_schedule *s, int i, const int32_t **stages, int *n,
                               int *first_mb, int *count);
/* The stage after (dir > 0) or before (dir < 0) `stage` on micro-batch mb's path: where its
 * forward output goes, or where its input gradient goes. -1 at the path's ends, off the path
 * or on bad arguments. The dependencies of the engine follow it. */
PS_EXTERN int ps_schedule_path_neighbor(const ps_schedule *s, int stage, int mb, int dir);
/* Compute actions of a rank, borrowed until s changes. */
PS_EXTERN size_t ps_schedule_rank_length(const ps_schedule *s, int rank);
PS_EXTERN const ps_action *ps_schedule_rank_actions(const ps_schedule *s, int rank);
PS_EXTERN size_t ps_schedule_total_actions(const ps_schedule *s);
PS_EXTERN int ps_schedule_is_lowered(const ps_schedule *s);
/* Compute + communication actions of a rank after ps_schedule_lower() (0 / NULL before). */
PS_EXTERN size_t ps_schedule_lowered_length(const ps_schedule *s, int rank);
PS_EXTERN const ps_action *ps_schedule_lowered_actions(const ps_schedule *s, int rank);

/* ---------------------------------------------------------------------------------------------
 * Simulator: event-driven, virtual time.
 */
typedef struct ps_sim ps_sim;

typedef struct ps_metrics {
    double makespan;     /* end of the last action; the iteration starts at 0 */
    double bubble;       /* largest idle over ranks */
    double bubble_ratio; /* 1 - sum(busy) / (p * makespan) */
    int pp;
} ps_metrics;

typedef struct ps_rank_metrics {
    double busy;              /* sum of the rank's action durations */
    double span;              /* end of its last action - start of its first */
    double idle;              /* span - busy */
    int64_t peak_activations; /* max chunks whose forward ran and whose W/B has not */
    double peak_memory;       /* max of the memory model's running sum (ps_problem_set_memory) */
    int param_copies;
} ps_rank_metrics;

PS_EXTERN int ps_sim_new(ps_sim **out, const ps_allocator *alloc);
PS_EXTERN void ps_sim_free(ps_sim *sim);
PS_EXTERN const char *ps_sim_last_error(const ps_sim *sim);
/*
 * Simulates s under pb's costs. s is borrowed: it must stay alive while the results of sim
 * are used; once s is regenerated or reloaded, the accessors below answer PS_ESTATE / NULL.
 * PS_EINVALID when a rank's memory exceeds pb's memory limit: the message names the rank and
 * the first action above it, and the timeline stays available.
 * PS_EDEADLOCK names each rank's blocked action; PS_ECONFIG when the per-stage costs do not match
 * the stage count.
 */
PS_EXTERN int ps_sim_run(ps_sim *sim, const ps_schedule *s, const ps_problem *pb);
/*
 * Whether the next runs of sim keep the timeline, every action's start and end (keep 1, the
 * default), or only what the metrics need (keep 0): ps_sim_metrics, ps_sim_rank_metrics,
 * ps_sim_comm and the PS_FORMAT_METRICS export answer as usual, while ps_sim_starts and
 * ps_sim_ends return NULL and the exports that print times (timed table, JSON with a
 * simulation, trace) return PS_ESTATE. Saves 16 bytes per action: 128 MiB of the 370 MiB that
 * pp128/vpp8/m4096 takes. Returns 0 or PS_EINVAL (sim NULL).
 */
PS_EXTERN int ps_sim_keep_timeline(ps_sim *sim, int keep);
PS_EXTERN int ps_sim_metrics(const ps_sim *sim, ps_metrics *out);
PS_EXTERN int ps_sim_rank_metrics(const ps_sim *sim, int rank, ps_rank_metrics *out);
/* Start and end times of rank's compute actions, aligned with ps_schedule_rank_actions();
 * NULL for a bad rank, without a current run, or when the run kept no timeline. */
PS_EXTERN const double *ps_sim_starts(const ps_sim *sim, int rank);
PS_EXTERN const double *ps_sim_ends(const ps_sim *sim, int rank);
/* Duration under pb's costs of action a on a schedule with the given stage count. */
PS_EXTERN double ps_sim_duration(const ps_sim *sim, const ps_action *a);

/* ---------------------------------------------------------------------------------------------
 * MoE layer model and the communication-overlap planner.
 *
 * A MoE layer is a chain of sub-operations on two streams of a device, compute and
 * communication (all-to-all). When a problem carries a MoE model, the simulator takes the
 * durations of F, I, W, B and fused FB actions from the planner instead of the f/b/w costs.
 */
typedef enum ps_op {
    /* forward of one layer */
    PS_OP_ATTN = 0,     /* attention, norm, router, permute (compute) */
    PS_OP_DISPATCH = 1, /* all-to-all to the experts (communication); needs ATTN */
    PS_OP_MLP = 2,      /* routed experts, or the FFN of a dense layer (compute); needs DISPATCH */
    PS_OP_SHARED = 3,   /* shared expert (compute); needs ATTN only */
    PS_OP_COMBINE = 4,  /* all-to-all back (communication); needs MLP */
    /* backward, input gradients */
    PS_OP_COMBINE_B = 5,  /* all-to-all of the output gradient (communication) */
    PS_OP_SHARED_DX = 6,  /* shared expert dX (compute); needs the layer's output gradient */
    PS_OP_MLP_DX = 7,     /* expert dX (compute); needs COMBINE_B (and REDISPATCH) */
    PS_OP_DISPATCH_B = 8, /* all-to-all back to the tokens (communication); needs MLP_DX */
    PS_OP_ATTN_DX = 9,    /* attention dX (compute); needs DISPATCH_B and SHARED_DX */
    /* backward, weight gradients (deferrable; a split backward leaves them to its W) */
    PS_OP_MLP_DW = 10,    /* needs MLP_DX */
    PS_OP_SHARED_DW = 11, /* needs SHARED_DX */
    PS_OP_ATTN_DW = 12,   /* needs ATTN_DX */
    /* permute recomputation: the backward re-dispatches the expert input (communication) */
    PS_OP_REDISPATCH = 13,
    PS_OP_LAYER_COUNT = 14, /* the per-layer operations above */
    PS_OP_P2P = 14,         /* pipeline send of a chunk's result (communication), per chunk */
    PS_OP_COUNT = 15
} ps_op;

/* "attn", "dispatch", ..., "p2p"; NULL out of range. */
PS_EXTERN const char *ps_op_name(int op);
/* 1 for the operations that run on the communication stream. */
PS_EXTERN int ps_op_is_comm(int op);

/* Durations of one layer's sub-operations, indexed by ps_op (< PS_OP_LAYER_COUNT). */
typedef struct ps_layer_cost {
    double t[PS_OP_LAYER_COUNT];
} ps_layer_cost;

typedef enum ps_planner {
    PS_PLANNER_ADAPTIVE = 0,  /* list scheduling + local search over both streams (default) */
    PS_PLANNER_MINDSPEED = 1, /* MindSpeed's fixed fused order (reference 4.3) */
    PS_PLANNER_MEGATRON = 2,  /* Megatron combined-1F1B fixed order */
    PS_PLANNER_SERIAL = 3     /* no overlap: everything one after the other */
} ps_planner;

/* "adaptive", "mindspeed", "megatron", "serial"; NULL out of range. */
PS_EXTERN const char *ps_planner_name(int planner);

typedef struct ps_moe_model {
    int32_t layers;       /* transformer layers of the model, split over the model stages */
    int32_t dense_layers; /* the first dense_layers of them are dense */
    ps_layer_cost moe;    /* one MoE layer */
    ps_layer_cost dense;  /* one dense layer (its communication entries must be 0) */
    double p2p;           /* send of a chunk's output / input gradient (0 = not modelled) */
    double slowdown;      /* compute runs (1 + slowdown) times longer while communication runs */
    int32_t planner;      /* ps_planner */
} ps_moe_model;

/* Installs a copy of m (NULL removes the model). PS_ECONFIG/PS_ERANGE name the bad field. */
PS_EXTERN int ps_problem_set_moe(ps_problem *pb, const ps_moe_model *m);
/* Copies the model into *out; PS_ENOTFOUND when pb has none. */
PS_EXTERN int ps_problem_get_moe(const ps_problem *pb, ps_moe_model *out);
/*
 * Layers per model stage (n entries, summing to the model's layers; n == 0 clears: layers are
 * then split as evenly as possible, the stages with fewer layers first). Copied.
 */
PS_EXTERN int ps_problem_set_stage_layers(ps_problem *pb, const int32_t *layers, size_t n);

/*
 * The split of pb's MoE layers over `stages` model stages: first layer, layer count and dense
 * layer count of each (arrays of `stages` entries). PS_ENOTFOUND without a model, PS_ECONFIG
 * when stage_layers does not have `stages` entries summing to the layers.
 */
PS_EXTERN int ps_problem_stage_split(const ps_problem *pb, int stages, int32_t *first,
                                     int32_t *count, int32_t *dense);

/* Model and cluster dimensions from which ps_moe_derive() computes the durations. */
typedef struct ps_model_dims {
    double hidden;         /* hidden size H */
    double tokens;         /* tokens per micro-batch per device S */
    double seq_len;        /* sequence length (attention scores), 0 = tokens */
    double experts;        /* routed experts E */
    double top_k;          /* experts per token k */
    double expert_ffn;     /* expert FFN intermediate size */
    double shared_experts; /* shared experts (0 = none) */
    double shared_ffn;     /* shared expert FFN size (0 = expert_ffn) */
    double dense_ffn;      /* FFN size of the dense layers */
    double attn_flops;     /* forward GEMM FLOPs per token of attention (0 = 8 H^2) */
    double heads_dim;      /* heads x (qk + v head dims) for the score FLOPs (0 = 2 H) */
    double bytes;          /* bytes per element of the all-to-all payload (default 2) */
    int32_t layers, dense_layers;
    int32_t permute_recompute; /* 1: the backward re-dispatches (one more all-to-all) */
} ps_model_dims;

typedef struct ps_cluster {
    double devices_per_node; /* G: EP ranks per node */
    double nodes;            /* N: nodes in the EP group */
    double bw_intra;         /* GB/s per device within a node */
    double bw_inter;         /* GB/s per device across nodes */
    double lat_intra;        /* microseconds per intra-node collective step */
    double lat_inter;        /* microseconds per inter-node collective step */
    double tflops;           /* peak TFLOP/s of one device */
    double efficiency;       /* achieved fraction of the peak (0, 1] */
    double slowdown;         /* compute slowdown while communication runs (0 on NPUs) */
} ps_cluster;

typedef enum ps_a2a {
    PS_A2A_AUTO = 0, /* the cheaper of the two */
    PS_A2A_FLAT = 1,
    PS_A2A_HIERARCHICAL =
        2 /* inter-node all-gather + intra-node all-to-all (reduce-scatter back) */
} ps_a2a;

/* The all-to-all estimate of one MoE layer's dispatch, per device. */
typedef struct ps_a2a_info {
    int32_t chosen;                /* PS_A2A_FLAT or PS_A2A_HIERARCHICAL */
    double flat_inter, flat_intra; /* bytes sent across / within nodes, flat */
    double hier_inter, hier_intra; /* the same, hierarchical */
    double flat_time, hier_time;   /* milliseconds */
} ps_a2a_info;

/*
 * Derives per-layer durations in milliseconds (FLOPs / (tflops x efficiency); backward dX and
 * dW each cost one forward GEMM; attention scores have no dW) and the all-to-all times
 * (volumes in DESIGN.md), choosing the algorithm as asked. Writes *out (planner ADAPTIVE,
 * p2p 0) and, if info is not NULL, *info. PS_ECONFIG names a missing or bad dimension in
 * err (PS__ERRLEN-sized buffer of at least 256 bytes, may be NULL).
 */
PS_EXTERN int ps_moe_derive(const ps_model_dims *model, const ps_cluster *cluster, int a2a,
                            ps_moe_model *out, ps_a2a_info *info, char *err, size_t errlen);

/* ps_moe_derive() then ps_problem_set_moe(); remembers *info for ps_problem_a2a_info(). */
PS_EXTERN int ps_problem_set_moe_dims(ps_problem *pb, const ps_model_dims *model,
                                      const ps_cluster *cluster, int a2a);
/* The all-to-all estimate of the last ps_problem_set_moe_dims(); PS_ENOTFOUND when the model
 * was given as durations (or there is none). */
PS_EXTERN int ps_problem_a2a_info(const ps_problem *pb, ps_a2a_info *out);

/* One planned step: the sub-operations of a forward chunk and/or a backward chunk. */
typedef struct ps_plan ps_plan;

typedef struct ps_plan_op {
    uint8_t op;     /* ps_op */
    uint8_t stream; /* 0 compute, 1 communication */
    uint8_t part;   /* 0 the forward chunk, 1 the backward chunk */
    uint8_t dense;  /* 1 when the layer is dense */
    int32_t layer;  /* layer index within the model */
    double start, end;
} ps_plan_op;

typedef struct ps_plan_stats {
    double duration; /* end of the last operation (the step starts at 0) */
    double compute;  /* sum of compute durations (stretched by the slowdown) */
    double comm;     /* sum of all-to-all durations */
    double exposed;  /* all-to-all time during which the compute stream is idle */
    double overlap;  /* 1 - exposed / comm (1 when comm = 0) */
    double p2p, p2p_exposed;
} ps_plan_stats;

PS_EXTERN int ps_plan_new(ps_plan **out, const ps_allocator *alloc);
PS_EXTERN void ps_plan_free(ps_plan *pl);
PS_EXTERN const char *ps_plan_last_error(const ps_plan *pl);
/*
 * Plans one step under pb's MoE model with planner method (ps_planner): the forward of model
 * stage fstage (-1: none) and the backward of model stage bstage (-1: none), whose kind
 * bkind is PS_B (with weight gradients), PS_I (without) or PS_W (the weight gradients
 * alone). stages is the number of model stages the layers are split over. PS_ENOTFOUND when
 * pb has no MoE model; PS_EINVAL on bad stages.
 */
PS_EXTERN int ps_plan_step(ps_plan *pl, const ps_problem *pb, int method, int stages, int fstage,
                           int bkind, int bstage);
PS_EXTERN int ps_plan_stats_get(const ps_plan *pl, ps_plan_stats *out);
/* The planned operations in start order (borrowed until the next ps_plan_step). */
PS_EXTERN size_t ps_plan_ops(const ps_plan *pl, const ps_plan_op **ops);

/* Exposed communication of a simulation with a MoE model, summed over ranks, per phase. */
typedef enum ps_phase {
    PS_PHASE_WARMUP = 0,   /* a rank's actions before its first backward */
    PS_PHASE_STEADY = 1,   /* from its first backward to its last forward */
    PS_PHASE_COOLDOWN = 2, /* after its last forward */
    PS_PHASE_ALL = 3,
    PS_PHASE_COUNT = 4
} ps_phase;

typedef struct ps_comm_metrics {
    double total[PS_PHASE_COUNT];   /* all-to-all time */
    double exposed[PS_PHASE_COUNT]; /* of it, not hidden under compute */
    double overlap[PS_PHASE_COUNT]; /* 1 - exposed / total (1 when total = 0) */
} ps_comm_metrics;

/* PS_ENOTFOUND when the simulated problem had no MoE model; PS_ESTATE without a timeline. */
PS_EXTERN int ps_sim_comm(const ps_sim *sim, ps_comm_metrics *out);

/* ---------------------------------------------------------------------------------------------
 * Export. Output goes through a write callback (the library does no I/O); a non-zero return
 * from it stops the export with PS_EIO.
 */
typedef int (*ps_write_fn)(void *ud, const char *data, size_t len);

typedef enum ps_format {
    PS_FORMAT_TABLE = 0,       /* one row per rank, one column per step */
    PS_FORMAT_TABLE_TIMED = 1, /* one column per time unit (needs sim) */
    PS_FORMAT_JSON = 2,        /* DESIGN's schedule JSON; start/end when sim is given */
    PS_FORMAT_CSV = 3,         /* PyTorch compute_only */
    PS_FORMAT_CSV_COMMS = 4,   /* PyTorch compute_comms (needs a lowered schedule) */
    PS_FORMAT_TRACE = 5,       /* Chrome trace JSON (needs sim) */
    PS_FORMAT_METRICS = 6      /* simulate --json metrics (needs sim) */
} ps_format;

/*
 * Writes s (and the timeline of sim, which may be NULL for untimed formats) in format fmt.
 * Returns 0, PS_EINVAL (bad arguments, a timed format without sim, csv-comms on a schedule
 * that is not lowered), PS_ESTATE (sim holds no current run of s, or, for the formats that
 * print times, a run that kept no timeline: ps_sim_keep_timeline), PS_ENOMEM or PS_EIO.
 */
PS_EXTERN int ps_export(const ps_schedule *s, const ps_sim *sim, ps_format fmt, ps_write_fn write,
                        void *ud);

/*
 * PS_FORMAT_TABLE_TIMED with rows of at most `width` characters ("rank r |" and the columns):
 * the time unit of a column grows until the makespan fits, and the legend line says when times
 * were rounded to it. width 0: ps_export's table (at most 4000 columns). A width too narrow
 * for one column still gets one. Returns what ps_export returns, and PS_EINVAL for a negative
 * width.
 */
PS_EXTERN int ps_export_timed_table(const ps_schedule *s, const ps_sim *sim, int width,
                                    ps_write_fn write, void *ud);

/* The trace's microseconds per time unit that ps_export's PS_FORMAT_TRACE writes: 1 cost unit
 * = 1 ms. */
#define PS_TRACE_US_PER_UNIT 1000.0

/* An event the host adds to a trace (ps_export_trace), in the simulation's time unit. */
typedef struct ps_trace_event {
    const char *name;  /* the event's name (any text, escaped) */
    const char *cat;   /* its category, what Perfetto filters on; NULL: "host" */
    int32_t rank;      /* the process: a pipeline rank of the schedule */
    int32_t track;     /* the rank's track: 0 compute, 1 communication */
    double start, dur; /* finite, >= 0 */
} ps_trace_event;

typedef struct ps_trace_options {
    /* Trace microseconds per time unit of the simulation: PS_TRACE_US_PER_UNIT (also what 0
     * means) when the costs are abstract units, 1e6 when they are seconds. */
    double us_per_unit;
    const ps_trace_event *events; /* written after the schedule's; NULL when nevents is 0 */
    size_t nevents;
} ps_trace_options;

/*
 * Writes the Chrome/Perfetto trace of s as simulated by sim: what ps_export writes for
 * PS_FORMAT_TRACE (a process "rank r" per pipeline rank, a "compute" track with every action
 * under its PyTorch name, "1F3" for stage 1's forward of micro-batch 3, and its kind as the
 * category; a "communication" track with the pipeline transfers that leave the rank when the
 * problem has a transfer cost c; with a MoE model, the planned operations on two more tracks),
 * with the time unit and the extra events of opt (NULL: exactly ps_export's trace). Chrome's
 * ts and dur are microseconds: a time t of the simulation is written as t * us_per_unit.
 * Returns 0; PS_EINVAL (s, sim or write NULL, us_per_unit negative or not finite, an event
 * with a NULL name, a rank outside the schedule, a track other than 0 or 1, a negative or
 * non-finite time); PS_ESTATE (sim holds no timeline of s); PS_ENOMEM; PS_EIO. Nothing is
 * written when an argument is refused.
 */
PS_EXTERN int ps_export_trace(const ps_schedule *s, const ps_sim *sim, const ps_trace_options *opt,
                              ps_write_fn write, void *ud);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_H */
