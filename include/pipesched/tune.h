/*
 * pipesched tune — the search over parallel configurations (docs/tune.md).
 *
 * Part of libpipesched: include it after or instead of model.h. Given a model, a machine and
 * a job (devices, global batch, sequence length), ps_tune_run enumerates every combination of
 * the knobs below that the user's constraints leave, rejects what cannot run by cheap checks
 * (the divisibility rules of ps_estimate_run, a memory lower bound that is exact for the
 * weights, gradients and optimizer state), simulates every other candidate with
 * ps_estimate_run (never a closed form), and keeps the K fastest that fit, the Pareto front
 * of step time against peak memory, and the count of every rejection by reason.
 *
 * A branch-and-bound skips a candidate only when it provably belongs neither to the top K nor
 * to the front: its step-time lower bound (the model's FLOPs per device at the fastest peak,
 * plus the mean optimizer step of its pipeline ranks) exceeds the K-th best step time found so
 * far, and a configuration already found is faster than that bound with no more memory than
 * the candidate's memory lower bound. The answer is therefore the brute force's.
 *
 * Determinism: candidates are numbered in the mixed-radix order of the knobs (ps_tune_knob,
 * the first slowest; each knob's values ascending as ps_tune_value_name lists them); results
 * are ordered by step time, then peak memory, then that number. Threads change only the
 * search figures (time, pruned count), never the top K, the front or the rejection counts.
 *
 * Errors follow pipesched.h: 0 or a negative PS_E* code, the message on the handle
 * (ps_tune_last_error).
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_TUNE_H
#define PIPESCHED_TUNE_H

#include <pipesched/balance.h>
#include <pipesched/model.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The knobs, in the order that numbers the candidates (the first varies slowest). */
typedef enum ps_tune_knob {
    PS_KNOB_TP = 0,
    PS_KNOB_CP,
    PS_KNOB_PP,
    PS_KNOB_EP,
    PS_KNOB_ETP, /* 0 for a dense model (= tp) */
    PS_KNOB_VPP,
    PS_KNOB_SCHEDULE, /* an index into ps_tune_family_name */
    PS_KNOB_MBS,
    PS_KNOB_RECOMPUTE, /* a ps_recompute, or PS_TUNE_RECOMPUTE_FIT */
    PS_KNOB_DISTOPT,   /* 0 or 1: the distributed optimizer */
    PS_KNOB_PRECISION, /* a ps_precision */
    PS_KNOB_A2A,       /* a ps_a2a: flat or hierarchical for a MoE model, auto for a dense one */
    PS_KNOB_LAYOUT,    /* 0: Megatron's even split; 1: "balanced" (ps_layout_balanced_count);
                          2: "auto" (the automatic partition; only when allowed); 3, 4, 5:
                          "first", "last", "first-last" (ps_layout_end_counts) */
    PS_KNOB_GROUP,     /* interleaved/adaptive with vpp > 1: micro-batch group size in multiples
                          of pp (ps_train.group_size = value x pp; 1 = Megatron's default) */
    PS_KNOB_WARMUP,    /* adaptive: extra warm-up forwards delta (ps_train.extra_warmup); 1 =
                          the family's default */
    PS_KNOB_SPLIT,     /* adaptive: 1 = split backward (ps_train.split_backward) */
    PS_KNOBS
} ps_tune_knob;

/* The recompute knob's fourth value: full recompute of the fewest layers per stage that fit
 * (ps_train.recompute_layers, found by the search; ps_tune_config.recompute_layers). */
#define PS_TUNE_RECOMPUTE_FIT 3

/* One configuration: a value per knob. */
typedef struct ps_tune_config {
    int32_t knob[PS_KNOBS];
    /* Not a knob: with recompute PS_TUNE_RECOMPUTE_FIT, the layers per stage recomputed that
     * the search found (the least that fit); 0 otherwise. */
    int32_t recompute_layers;
} ps_tune_config;

/* Where a running search stands (ps_tune_job.progress). */
typedef struct ps_tune_progress {
    uint64_t done;      /* candidates evaluated (checked, bounded or simulated) */
    uint64_t total;     /* candidates of the space */
    double seconds;     /* since the search started */
    double best_step_s; /* the fastest fitting step any thread has found; 0: none yet */
} ps_tune_progress;

typedef void (*ps_tune_progress_fn)(void *ud, const ps_tune_progress *p);

/* The job and the search's settings. */
typedef struct ps_tune_job {
    int32_t gpus;           /* devices, >= 1 */
    int32_t gpus_per_node;  /* 0 = the hardware's devices_per_node */
    int64_t gbs;            /* global batch, sequences */
    int32_t seq;            /* sequence length, tokens */
    double mem_reserve_gib; /* memory kept free on every device: the limit is hbm_gib - this */
    int32_t top_k;          /* rows kept, >= 1 */
    int32_t threads;        /* 0 = every online core */
    int32_t no_prune;       /* 1: simulate every candidate that passes the cheap checks */
    int32_t record_all;     /* 1: keep every candidate's outcome for ps_tune_write_csv */
    /* Optional: called on the thread that called ps_tune_run, between its chunks of
     * candidates, at most every 0.2 s, and once more after the last candidate (done = total)
     * when the search succeeds; ud is progress_ud. It must not call into the handle. */
    ps_tune_progress_fn progress;
    void *progress_ud;
    /* Optional: the CSV of ps_tune_write_csv (the header, then every candidate's line in
     * candidate order, the same bytes whatever the threads) written as the search goes, in
     * bounded memory: a thread's chunk of lines waits in a window of 2 x threads + 2 chunks
     * for the chunks before it, and a thread whose chunk would not fit waits. One call at a
     * time (from any thread of the search), each of whole lines; a nonzero return stops the
     * search, which returns PS_EIO. Needs no record_all. ud is csv_ud. */
    ps_write_fn csv_write;
    void *csv_ud;
} ps_tune_job;

/* Fills *j: gpus 8, gbs 8, seq 4096, no reserve, top 10, all cores, pruning on. */
PS_EXTERN void ps_tune_job_init(ps_tune_job *j);

/* Knob names ("tp", "cp", "pp", "ep", "etp", "vpp", "schedule", "mbs", "recompute",
 * "distributed-optimizer", "precision", "a2a", "layout", "group", "warmup", "split-backward"),
 * NULL past the end; the lookup is
 * case-sensitive and takes "distopt" too: the knob or PS_ENOTFOUND. */
PS_EXTERN const char *ps_tune_knob_name(int knob);
PS_EXTERN int ps_tune_knob_lookup(const char *name);
/* The families the search tries, in their order: 1f1b, interleaved, zb-h1, zb-h2, zb-v,
 * v-half, v-min, dualpipe, dualpipev, adaptive, and zb-auto (vpp 1 or 2; only when allowed);
 * NULL past the end. */
PS_EXTERN const char *ps_tune_family_name(size_t i);
/* A knob's value from a word: numbers for the sizes; a family name or alias (schedule);
 * none/selective/full/fit; 0/1/off/on/false/true (distributed optimizer); bf16/fp8;
 * auto/flat/hierarchical; even/balanced/auto/first/last/first-last (layout); 0/1/off/on
 * (split-backward). 0 or
 * PS_ECONFIG. */
PS_EXTERN int ps_tune_value_parse(int knob, const char *word, int32_t *out);
/* The word of a value (the family's name, "full", "fp8", ...; the number for the sizes) into
 * buf: its length, or PS_EINVAL. */
PS_EXTERN int ps_tune_value_name(int knob, int32_t value, char *buf, size_t cap);

/* The train of a configuration: ps_train_init's defaults, the job's gpus, gpus_per_node, gbs
 * and seq, and the knobs. schedule and a2a as their words; layout NULL (even), "balanced",
 * "auto", "first", "last" or "first-last" (static strings; the estimate splits the last three
 * with ps_layout_end_counts' first/last stage counts); recompute "fit" as full recompute of
 * c->recompute_layers layers; group k > 1 as group_size k x pp; warmup other than 1 as
 * extra_warmup; split-backward as is. */
PS_EXTERN void ps_tune_config_train(const ps_tune_job *j, const ps_tune_config *c, ps_train *out);

typedef struct ps_tune ps_tune;

PS_EXTERN int ps_tune_new(ps_tune **out, const ps_allocator *alloc);
PS_EXTERN void ps_tune_free(ps_tune *t);
PS_EXTERN const char *ps_tune_last_error(const ps_tune *t);

/* Constraints, kept until changed: the knob takes only these n values (n = 1: fixed; n = 0:
 * the constraint is removed), or values up to max (max <= 0: none). A value the machine or
 * the model cannot take is refused by ps_tune_run, naming it. PS_EINVAL, PS_ERANGE (n above
 * 64). */
PS_EXTERN int ps_tune_allow(ps_tune *t, int knob, const int32_t *values, size_t n);
PS_EXTERN int ps_tune_max(ps_tune *t, int knob, int32_t max);

/*
 * The imbalance of the next runs (docs/tune.md, "With the imbalance"): every candidate is
 * scored by ps_edpb_estimate with in (its own dp, micro-batches, mbs and EP group change the
 * round-robin, the reordering and the placement), and ranked by its balanced step time (the
 * placed experts and the reordered samples): its row holds the even estimate's figures but
 * the step time, tokens/s/GPU, model TFLOP/s and MFU of the balanced step. in is copied, its
 * samples and trace borrowed until the next call; NULL (or no samples and no trace) clears.
 * ps_tune_run then refuses (PS_ECONFIG) a sample count other than the job's gbs and a trace
 * of other experts or more layers than the model's MoE layers. Returns 0 or PS_EINVAL.
 */
PS_EXTERN int ps_tune_set_imbalance(ps_tune *t, const ps_edpb_input *in);

/* The dominant gap of a configuration: what its step spends most on besides compute. */
enum { PS_GAP_BUBBLE, PS_GAP_TP, PS_GAP_CP, PS_GAP_EP, PS_GAP_PP, PS_GAP_DP, PS_GAP_OPTIMIZER };
PS_EXTERN const char *ps_tune_gap_name(int gap);

typedef struct ps_tune_row {
    ps_tune_config config;
    uint64_t index; /* the candidate's number */
    ps_estimate_result result;
    int32_t gap;  /* PS_GAP_* */
    double gap_s; /* its seconds */
} ps_tune_row;

typedef struct ps_tune_stats {
    uint64_t candidates;   /* the product of the knobs' value lists */
    uint64_t rejected;     /* by the cheap checks */
    uint64_t simulated;    /* ps_estimate_run calls */
    uint64_t failed;       /* simulated, refused by the estimate (schedule constraints) */
    uint64_t over_memory;  /* peak above the limit: simulated, or over_unsimulated */
    uint64_t fitting;      /* simulated and fitting */
    uint64_t pruned;       /* skipped by the bound (depends on threads and timing) */
    uint64_t bound_breaks; /* simulated steps below their lower bound: 0, or a bug */
    double seconds;        /* wall time of the search */
    double candidates_per_s, simulated_per_s;
    int32_t threads;
    double limit_gib;          /* hbm_gib - mem_reserve_gib */
    double min_need_gib;       /* the least memory any candidate needs (exact or a lower bound) */
    int32_t min_need_exact;    /* 1: min_need_gib is a simulated peak; 0: a lower bound */
    uint64_t reused;           /* of simulated: the inputs were the simulation before's, bit for
                                  bit, and its timeline was reused (depends on the threads) */
    uint64_t over_unsimulated; /* of over_memory: found by the exact peak memory, which needs the
                                  schedule but no simulation, so not in simulated */
    int32_t processes;         /* the MPI processes of ps_tune_mpi_run (tune_mpi.h), else 1;
                                  threads is then their sum */
} ps_tune_stats;

/*
 * Searches. PS_ECONFIG (message on the handle) when the model, hardware or job are invalid,
 * when a constraint leaves no value of a knob (naming the knob, its candidates and what the
 * constraint allowed), or when fp8 is allowed on hardware without an FP8 peak. A search in
 * which nothing fits is not an error: ps_tune_top_count is 0 and the stats say the least memory
 * needed. PS_ENOMEM; PS_EINTERNAL (a thread could not start).
 */
PS_EXTERN int ps_tune_run(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                          const ps_tune_job *job);
PS_EXTERN int ps_tune_stats_get(const ps_tune *t, ps_tune_stats *out);
/* The top rows (fastest first) and the front (fastest first, so peak memory decreasing). */
PS_EXTERN size_t ps_tune_top_count(const ps_tune *t);
PS_EXTERN int ps_tune_top(const ps_tune *t, size_t i, ps_tune_row *out);
PS_EXTERN size_t ps_tune_front_count(const ps_tune *t);
PS_EXTERN int ps_tune_front(const ps_tune *t, size_t i, ps_tune_row *out);
/* The Pareto front of n points against step time, peak memory and GPU count (tune --gpus with
 * several counts): on[i] = 1 when no other point is at least as good in all three (step[j] <=
 * step[i], peak[j] <= peak[i], gpus[j] <= gpus[i]) and better in one, else 0. Points equal in
 * all three are all on it. Returns how many are on it; O(n^2). */
PS_EXTERN size_t ps_tune_pareto3(const double *step, const double *peak, const int32_t *gpus,
                                 size_t n, unsigned char *on);
/* The rejection reasons, most frequent first (ties: first seen in candidate order): the text
 * (borrowed until the next run), an example (the first candidate's own message) and the count. */
PS_EXTERN size_t ps_tune_reason_count(const ps_tune *t);
PS_EXTERN int ps_tune_reason(const ps_tune *t, size_t i, const char **text, const char **example,
                             uint64_t *count);
/* With job.record_all: every candidate as one CSV line in candidate order (a header first):
 * the knobs, the status (ok, over-memory, rejected, failed, pruned), the reason, step time,
 * tokens/s/GPU, MFU and peak GiB. PS_ESTATE without a recorded run; PS_EIO when write fails. */
PS_EXTERN int ps_tune_write_csv(const ps_tune *t, ps_write_fn write, void *ud);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_TUNE_H */
