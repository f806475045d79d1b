/*
 * Internal declarations shared by the core library's files. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_INTERNAL_H
#define PS_INTERNAL_H

#include <pipesched/pipesched.h>

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PS__ERRLEN 4096

/* A function inlined into every caller, so that each instance drops the branches of the modes
 * its caller does not use (the engine's clocks, the planner's timings). */
#if defined(__GNUC__)
#define PS__HOT static inline __attribute__((always_inline))
#else
#define PS__HOT static inline
#endif

/*
 * The internal functions that libpipesched-exec, the executor's own library (src/exec/), calls
 * in libpipesched: the shared library exports them next to its API so that the executor, and
 * with it libuv, can live in a library of its own that only `pipesched run` loads. They are
 * no API: the two libraries come from one build (libpipesched-exec needs the libpipesched of
 * its own version). Nothing in the static copy (PS_STATIC) changes.
 */
#if defined(__GNUC__) && !defined(PS_STATIC)
#define PS__SIBLING __attribute__((visibility("default")))
#else
#define PS__SIBLING
#endif

/* ---- allocation (alloc.c) ------------------------------------------------------------------ */

/* Fills *dst from src, or with the default realloc/free allocator when src is NULL. */
PS__SIBLING void ps__alloc_init(ps_allocator *dst, const ps_allocator *src);
/* n * size bytes, or NULL (also on overflow). */
PS__SIBLING void *ps__alloc(const ps_allocator *a, size_t n, size_t size);
/* Same, zero-filled. */
PS__SIBLING void *ps__calloc(const ps_allocator *a, size_t n, size_t size);
/* Resizes p from on to nn elements of size bytes; NULL on failure (p untouched). */
void *ps__realloc(const ps_allocator *a, void *p, size_t on, size_t nn, size_t size);
/* Frees p, which holds n elements of size bytes (NULL allowed). */
PS__SIBLING void ps__free(const ps_allocator *a, void *p, size_t n, size_t size);
char *ps__strdup(const ps_allocator *a, const char *s);
void ps__strfree(const ps_allocator *a, char *s);

/* ---- error strings -------------------------------------------------------------------------- */

/* vsnprintf into buf (size PS__ERRLEN); returns code so callers can `return ps__err(...)`. */
PS__SIBLING int ps__seterr(char *buf, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* vsnprintf into a caller's buffer of errlen bytes (err may be NULL: nothing is written);
 * returns code. For the functions whose message goes to the caller, not to a handle. */
int ps__seterr_n(char *err, size_t errlen, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
/* Appends to buf (bounded); says "..." once the buffer is full. */
PS__SIBLING void ps__adderr(char *buf, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- problem -------------------------------------------------------------------------------- */

struct ps_problem {
    ps_allocator al;
    int family; /* registry index */
    long long pp, vpp, m, group;
    double cost[5]; /* indexed by ps_cost */
    ps_stage_cost *stage_costs;
    size_t n_stage_costs;
    ps_stage_mem mem;        /* uniform memory model */
    ps_stage_mem *stage_mem; /* per-stage memory model, n_stage_mem entries */
    size_t n_stage_mem;
    double mem_limit;       /* 0 = none */
    long long extra_warmup; /* adaptive delta; -1 = default (1) */
    int split_bwd;          /* adaptive --split-backward */
    /* MoE model (has_moe), its layers per model stage (optional) and the all-to-all estimate
     * it was derived with (has_a2a). */
    int has_moe, has_a2a;
    ps_moe_model moe;
    int32_t *stage_layers;
    size_t n_stage_layers;
    ps_a2a_info a2a;
    /* Per-stage durations added to the planned F, I and W of a MoE model (n_moe_extra entries,
     * 0 = none): what a stage runs besides its layers (the embedding, the output layer and the
     * loss). Set only through ps__problem_set_moe_extra(), not by configs. */
    ps_stage_cost *moe_extra;
    size_t n_moe_extra;
    /* Per-micro-batch cost weights (n_mb_weights entries, 0 = every micro-batch costs the
     * same): ps_problem_set_microbatch_weights(). */
    double *mb_weights;
    size_t n_mb_weights;
    char err[PS__ERRLEN];
};

/* Per-stage durations that the simulator adds, in MoE mode, to each stage's planned F, I and W
 * (and to the parts of fused pairs); one entry per virtual stage, n == 0 clears. Copied.
 * PS_ERANGE names a value that is not finite or outside [0, PS_MAX_COST]. */
int ps__problem_set_moe_extra(ps_problem *pb, const ps_stage_cost *c, size_t n);

/* ---- schedule ------------------------------------------------------------------------------- */

enum { PS__PLACE_LOOP = 0, PS__PLACE_V = 1, PS__PLACE_BIDIR = 2, PS__PLACE_CUSTOM = 3 };

struct ps_schedule {
    ps_allocator al;
    int family; /* registry index, -1 = custom */
    int32_t pp, nstages, m, group, placement, param_copies;
    int32_t *stage_rank; /* nstages */

    /* Paths: path k visits path_stages[path_off[k] .. +path_len[k]) in order and is taken
     * by micro-batches [path_mb0[k], path_mb0[k] + path_mbn[k]). path_next/path_prev hold,
     * for path k and stage s at [k * nstages + s], the next/previous stage (-1 at the ends),
     * and path_pos the position of s in the path (-1 when s is not on it). */
    int32_t npaths;
    int32_t *path_stages, *path_off, *path_len, *path_mb0, *path_mbn;
    int32_t *path_next, *path_prev, *path_pos;
    uint8_t *mb_path; /* m entries when npaths > 1, else NULL */

    /* Compute actions: rank r's list is acts[off[r] .. off[r] + len[r]). */
    ps_action *acts;
    size_t acts_cap;
    int64_t *off, *len;

    /* stage_rank, the path tables, mb_path, off and len live in one block (meta, meta_size
     * bytes); acts is kept across regenerations while big enough, because fresh pages cost
     * more than the generation itself at small sizes. */
    void *meta;
    size_t meta_size;

    /* The engine's issue order, recorded by the last successful validation: pairs (rank, n),
     * "rank runs its next n actions". Any topological order gives the same as-soon-as-possible
     * times, so the simulator replays it instead of re-deriving readiness. Cleared whenever
     * the compute lists change. */
    int32_t *order;
    size_t order_len, order_cap;
    int order_ok;
    /* Bumped whenever the compute lists change, so that a simulator can tell that its
     * timeline no longer matches. */
    uint64_t version;

    /* Lowered lists (compute + SEND/RECV), same layout. */
    int lowered;
    ps_action *lacts;
    size_t lacts_cap;
    int64_t *loff, *llen;

    char err[PS__ERRLEN];
};

/* Frees the lowered lists (possibly half-built) and marks s as not lowered. */
void ps__schedule_drop_lowered(ps_schedule *s);
/* Frees everything s holds (not s itself) and resets it to empty. */
void ps__schedule_clear(ps_schedule *s);
/*
 * Allocates the IR of a schedule with pp ranks, nstages stages, m micro-batches and npaths
 * paths, and room for cap[r] actions on rank r (cap may be NULL with per_rank > 0 for a
 * uniform capacity). Paths, placement and action lists are left empty for the caller.
 */
int ps__schedule_alloc(ps_schedule *s, int32_t pp, int32_t nstages, int32_t m, int32_t npaths,
                       const int64_t *cap, int64_t per_rank, int32_t path_total);
/* Fills path_next/prev/pos and mb_path from path_stages/off/len/mb0/mbn. */
void ps__schedule_index_paths(ps_schedule *s);
/* Sets one path covering all stages in order and all micro-batches. */
void ps__schedule_single_path(ps_schedule *s);

/*
 * Index of (stage, mb) in the per-(stage, micro-batch) tables of the engine, the simulator
 * and the validator (m = micro-batch count). Stage-major: a rank walks its stages' rows in
 * micro-batch order, which streams; micro-batch-major measured 1.3x slower at 128 x 4096.
 */
static inline size_t ps__sm(size_t m, int32_t stage, int32_t mb)
{
    return (size_t)stage * m + (size_t)mb;
}

static inline int32_t ps__path_of(const ps_schedule *s, int32_t mb)
{
    return s->mb_path ? (int32_t)s->mb_path[mb] : 0;
}

/* The stage after (dir 0) or before (dir 1) stage on mb's path; -1 at either end. */
static inline int32_t ps__path_peer(const ps_schedule *s, int dir, int32_t stage, int32_t mb)
{
    size_t at = (size_t)ps__path_of(s, mb) * (size_t)s->nstages + (size_t)stage;
    return dir == 0 ? s->path_next[at] : s->path_prev[at];
}

/* 1 when mb's path passes through stage. */
static inline int ps__on_path(const ps_schedule *s, int32_t stage, int32_t mb)
{
    return s->path_pos[(size_t)ps__path_of(s, mb) * (size_t)s->nstages + (size_t)stage] >= 0;
}

/*
 * The results action a hands on: for each, dir (0 = forward output to the next stage, 1 =
 * input gradient to the previous one), stage and micro-batch. Returns how many (0, 1, or 2
 * for a fused pair).
 */
static inline int ps__action_outputs(const ps_action *a, int dir[2], int32_t stage[2],
                                     int32_t mb[2])
{
    int n = 0;
    if (a->kind == PS_F || a->kind == PS_FB) {
        dir[n] = 0, stage[n] = a->stage, mb[n++] = a->mb;
    }
    if (a->kind == PS_I || a->kind == PS_B) {
        dir[n] = 1, stage[n] = a->stage, mb[n++] = a->mb;
    }
    if (a->kind == PS_FB) {
        dir[n] = 1, stage[n] = a->bstage, mb[n++] = a->bmb;
    }
    return n;
}

static inline void ps__emit(ps_schedule *s, int32_t rank, int kind, int32_t stage, int32_t mb)
{
    ps_action *a = &s->acts[s->off[rank] + s->len[rank]++];
    a->kind = (uint8_t)kind;
    a->bkind = 0;
    a->reserved = 0;
    a->stage = stage;
    a->mb = mb;
    a->bstage = 0;
    a->bmb = 0;
}

static inline void ps__emit_fb(ps_schedule *s, int32_t rank, int32_t fstage, int32_t fmb, int bkind,
                               int32_t bstage, int32_t bmb)
{
    ps_action *a = &s->acts[s->off[rank] + s->len[rank]++];
    a->kind = PS_FB;
    a->bkind = (uint8_t)bkind;
    a->reserved = 0;
    a->stage = fstage;
    a->mb = fmb;
    a->bstage = bstage;
    a->bmb = bmb;
}

/* ---- MoE model and planner (planner/: moe.c, plan.c, stage.c) ------------------------------ */

/* The flat and hierarchical all-to-all volumes and times of one dispatch (no validation). */
void ps__a2a_estimate(const ps_model_dims *md, const ps_cluster *cl, ps_a2a_info *out);
/* Plans the forward of layers [fl0, fl0+fn) and/or the backward (bkind B, I or W) of layers
 * [bl0, bl0+bn) (fn or bn 0: that part is absent). */
int ps__plan_layers(ps_plan *pl, const ps_moe_model *m, int method, int32_t fl0, int32_t fn,
                    int bkind, int32_t bl0, int32_t bn);
const ps_plan_stats *ps__plan_stats(const ps_plan *pl);
/* First layer and layer count of model stage `stage` of `stages` (checked stage_layers, or the
 * even split with the shorter stages first). */
void ps__stage_layer_range(const ps_problem *pb, int32_t stages, int32_t stage, int32_t *l0,
                           int32_t *n);
/* The durations of F (f), I (b) and W (w) of every stage of a schedule with nstages stages and
 * `copies` model copies under pb's MoE model, as the simulator prices them: planned, plus the
 * stage's extras (ps__problem_set_moe_extra; PS_ECONFIG when their count is not nstages).
 * zb-auto schedules with them. */
int ps__moe_stage_fbw(const ps_problem *pb, int32_t nstages, int32_t copies, ps_stage_cost *out,
                      char *err);
/* Walks the model stages in order: given the previous stage's first layer and count in *l0 and
 * *n (0 and 0 before stage 0), sets stage st's and its dense layer count *nd; O(1). */
void ps__stage_next(const ps_problem *pb, int32_t ms, int32_t st, int32_t *l0, int32_t *n,
                    int32_t *nd);
/* PS_ECONFIG (message in err) when pb's stage_layers do not fit `stages` model stages. */
int ps__check_stage_layers(const ps_problem *pb, int32_t stages, char *err);

/* ---- registry (schedules/registry.c) -------------------------------------------------------- */

typedef struct ps__params {
    int32_t p, v, m, group; /* group already defaulted (0 when not used) */
    int32_t delta;          /* adaptive: extra warm-up forwards (defaulted to 1) */
    int32_t split;          /* adaptive: split backward in the cool-down */
    const ps_problem *pb;
} ps__params;

/* Optional parameters a family takes (the registry refuses them for the others). */
enum {
    PS__OPT_GROUP = 1,   /* group_size */
    PS__OPT_ADAPTIVE = 2 /* extra_warmup, split_backward */
};

typedef struct ps__family {
    const char *name, *aliases, *description, *constraints;
    int placement; /* PS__PLACE_* */
    int fixed_vpp; /* 0 = any v, else v must equal it */
    int units;     /* max actions per (stage, micro-batch) on its rank */
    int options;   /* PS__OPT_*: which optional parameters the family takes */
    int costs;     /* 1: the generator plans with the problem's costs and memory (ps__params.pb),
                      so its schedule changes with them; 0: a function of ps__params alone */
    /* Returns 0 or writes the reason for rejecting p into why (PS__ERRLEN). */
    int (*check)(const ps__params *p, char *why);
    /* Emits the actions into s, whose IR is allocated with placement and paths set. */
    int (*generate)(ps_schedule *s, const ps__params *p);
} ps__family;

extern const ps__family ps__families[];
extern const size_t ps__nfamilies;

/* ---- engine, validation --------------------------------------------------------------------- */

/* ps_action_parse() that also says what is wrong (*why, a static string) on PS_EPARSE;
 * csv.c puts the reason into its line/column message. */
int ps__action_parse_why(const char *s, size_t len, ps_action *out, size_t *err_col,
                         const char **why);
/* Writes the action string of a into buf (at least 64 bytes). */
PS__SIBLING void ps__action_str(const ps_action *a, char *buf, size_t n);

/* The factor by which the micro-batch weights scale action a's duration in sim (1 without
 * weights; a fused pair's weighted duration over its unweighted one). a must be an action of
 * sim's schedule. */
double ps__sim_scale(const ps_sim *sim, const ps_action *a);
/* The simulator's cost c (or another ps_cost) and the schedule its timeline belongs to. */
double ps__sim_cost(const ps_sim *sim, int which);
PS__SIBLING const ps_schedule *ps__sim_schedule(const ps_sim *sim);
/* The planned operations of action a when sim ran with a MoE model (NULL, *n = 0, otherwise):
 * times relative to the action's start, layers relative to the first layer of the part's
 * stage, which first_layer[part] receives. */
const ps_plan_op *ps__sim_moe_ops(const ps_sim *sim, const ps_action *a, size_t *n,
                                  int32_t first_layer[2]);
/*
 * The pipeline transfers on the critical path of sim's timeline (which must be current):
 * walking back from the action that ends last (the lowest rank on a tie), each action's start
 * is explained by what bound it: the end of the rank's previous action, or the arrival of an
 * input (its producer's end, plus c from another rank), same-rank causes first on a tie. The
 * walk stops at an action that starts at 0. *transfers receives the number of inputs on the
 * path that came from another rank, so that the makespan is the durations on the path plus
 * *transfers times c. PS_ESTATE without a current timeline.
 */
int ps__sim_critical_transfers(const ps_sim *sim, int64_t *transfers);
/* Forgets the overlap plans sim keeps from run to run in MoE mode: its next run plans every
 * step again (what a first run costs, for benchmarks). */
void ps__sim_forget_plans(ps_sim *sim);
/* Replaces sim's timeline (which must be current) by start/end / unit, indexed like the
 * schedule's action array, and recomputes busy times and metrics (the executor's measured
 * run). Peaks are kept. PS_ESTATE when sim holds no current timeline. */
PS__SIBLING int ps__sim_set_timeline(ps_sim *sim, const double *start, const double *end,
                                     double unit);

#endif /* PS_INTERNAL_H */
