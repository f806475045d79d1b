/*
 * pipesched balance — load balancing of a training step (docs/balance.md).
 *
 * Part of libpipesched: include it after or instead of model.h. Two parts of the global load
 * balancing that the Pangu Ultra MoE work calls EDPB, each a planner that the simulator can
 * score:
 *
 *   D  data reordering: every sample of a global batch to a data-parallel rank and a
 *      micro-batch slot, from a linear model of each sample's compute time;
 *   E  expert placement: the experts of each MoE layer on the expert-parallel devices, from
 *      a prediction (EMA) of each expert's load, node level first and device level inside each
 *      node, moving a layer only when the gain pays for the migration.
 *
 * Errors follow pipesched.h: functions return 0 or a negative PS_E* code, with a message that
 * names the line, key or value at fault.
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_BALANCE_H
#define PIPESCHED_BALANCE_H

#include <pipesched/model.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- D: data reordering --------------------------------------------------------------------- */

/*
 * A sample of a global batch: a packed sequence of documents. Its predicted compute time is
 * linear in its token count and in the sum of its documents' squared lengths (causal attention
 * with a reset mask costs each document's length squared): a.sq + c.tokens + d.
 */
typedef struct ps_sample {
    double tokens; /* sum of the document lengths */
    double sq;     /* sum of the squared document lengths */
    int32_t docs;  /* documents in the sample */
} ps_sample;

typedef struct ps_sample_model {
    double a; /* per squared token of a document (attention) */
    double c; /* per token (the GEMMs and everything else linear in tokens) */
    double d; /* per sample */
} ps_sample_model;

/* The largest document length a samples file may give. */
#define PS_MAX_DOC_LEN 1000000000

/*
 * Parses a samples file: one sample per line, its document lengths as whole numbers >= 1 and
 * <= PS_MAX_DOC_LEN separated by commas ("512,2048,128"; spaces and tabs around a number, a
 * final newline and CRLF line ends are accepted). With out NULL (cap 0) it only checks the
 * text and counts the samples into *n; else it fills out[0 .. *n) (cap at least the count).
 * Returns 0, PS_EINVAL (text or n NULL, or cap below the count), or PS_EPARSE with a message in
 * err (errlen bytes, may be NULL) that names the line and the column: a length below 1 (a
 * negative one too) or beyond the limit, something that is not a number, an empty line, or an
 * empty file.
 */
PS_EXTERN int ps_samples_parse(const char *text, size_t len, ps_sample *out, size_t cap, size_t *n,
                               char *err, size_t errlen);

/* The predicted time of sample x under model m. */
PS_EXTERN double ps_sample_time(const ps_sample_model *m, const ps_sample *x);

/*
 * The sample model of a transformer on a device: c = the model FLOPs of one token without
 * attention (ps_estimate's formula: 6 times the GEMM parameters a token passes through) at the
 * hardware's bf16 peak times gemm_eff, a = the causal attention FLOPs per squared document
 * length at the peak times attn_eff, d = 0. Seconds of one device for the whole model, forward
 * and backward: a, c and d scale together with the parallel setup, which changes the unit of
 * the step time but not the assignment. Returns 0, PS_EINVAL, or PS_ECONFIG (message in err)
 * for a model or hardware that fails its check.
 */
PS_EXTERN int ps_sample_model_derive(const ps_transformer *t, const ps_hardware *hw,
                                     ps_sample_model *out, char *err, size_t errlen);

/*
 * Data reordering: assigns n = dp . microbatches . mbs samples to data-parallel ranks and
 * micro-batch slots (slot j of a rank is its micro-batch j, mbs samples each). Every rank runs
 * the pipeline of the problem (its family, pp, vpp and costs; its micro-batch count and weights
 * are replaced) with micro-batch weights proportional to its slots' times: the problem's
 * costs give how one micro-batch's time splits over the stages and phases, scaled so that a
 * micro-batch's durations over all its stages sum to its slot's time (the transfer cost c is in
 * the samples' unit). The step time is the slowest rank's simulated makespan.
 *
 * The search: longest processing time first (each sample, longest first, to the slot with the
 * least time that has room), then local improvement judged by the simulated makespan: on the
 * slowest rank, reorder its micro-batches (swap two slots), swap samples between two of its
 * slots, and swap one of its samples with a shorter one of another rank, each move kept when
 * the slowest rank gets faster and no rank it touches reaches the old step time. It stops at a
 * local optimum or after max_evals simulations. Lossless: only who runs which sample changes.
 */
typedef struct ps_data_config {
    int32_t dp;           /* data-parallel ranks, >= 1 */
    int32_t microbatches; /* micro-batch slots per rank, >= 1 */
    int32_t mbs;          /* samples per micro-batch slot, >= 1 */
    int64_t max_evals;    /* simulations the search may run; 0 = 3e5 / (1 + A / 50) for a
                             schedule of A actions (about 0.3 s), at least 1000 */
} ps_data_config;

typedef struct ps_data_result {
    double step_time;          /* of the assignment returned */
    double baseline_step_time; /* of the input order dealt round-robin: sample i to rank i mod dp,
                                  a rank's k-th sample to its slot k / mbs */
    double lpt_step_time;      /* of the longest-processing-time start */
    int64_t evals;             /* simulations run (all three included) */
} ps_data_result;

/*
 * Balances the samples of times[0 .. n) (each finite and >= 0) under cfg and the pipeline of
 * pb: rank[i] and slot[i] receive sample i's data-parallel rank and micro-batch slot, *out the
 * step times. The result is never worse than the baseline (the baseline is returned when
 * nothing beats it). Returns 0, PS_EINVAL (a NULL pointer), PS_ECONFIG (n is not dp .
 * microbatches . mbs, a time that is negative or not finite, a problem whose schedule cannot be
 * generated with that many micro-batches; message in err), PS_ENOMEM, or a simulation's error.
 * Allocations go through pb's allocator.
 */
PS_EXTERN int ps_balance_data(const ps_problem *pb, const double *times, size_t n,
                              const ps_data_config *cfg, int32_t *rank, int32_t *slot,
                              ps_data_result *out, char *err, size_t errlen);

/* ---- E: expert placement -------------------------------------------------------------------- */

/*
 * A routing trace: the tokens each expert of each MoE layer received at each training step,
 * steps x layers x experts numbers (a missing entry of a CSV trace is 0). The EMA predictor
 * turns it into one predicted load per expert and layer; the placement puts the experts of a
 * layer on the devices of the expert-parallel group so that the most loaded device carries as
 * little as possible. docs/balance.md gives the formats, the recurrence and the algorithm.
 */
typedef struct ps_expert_trace ps_expert_trace;

/* Bounds of a trace; a file beyond them is refused before anything is allocated. */
#define PS_MAX_EXPERTS 65536
#define PS_MAX_MOE_LAYERS 4096
#define PS_MAX_TRACE_STEPS 1000000
#define PS_MAX_TRACE_CELLS (1L << 28) /* steps x layers x experts */
#define PS_MAX_TRACE_TOKENS 1e15      /* tokens of one expert in one layer and step */

/* Creates an empty trace. Returns 0, PS_EINVAL (out NULL) or PS_ENOMEM; caller frees with
 * ps_expert_trace_free (which accepts NULL). */
PS_EXTERN int ps_expert_trace_new(ps_expert_trace **out, const ps_allocator *alloc);
PS_EXTERN void ps_expert_trace_free(ps_expert_trace *t);
/* The message of the last failure ("line 3, column 9: ..."), "" when none. Borrowed. */
PS_EXTERN const char *ps_expert_trace_last_error(const ps_expert_trace *t);

/*
 * Reads a trace from text (len bytes, no NUL needed), replacing what t held. Two formats,
 * told apart by the first line that is neither blank nor a '#' comment:
 *   - the header `step,layer,expert,tokens`, then one CSV row per (step, layer, expert): three
 *     integers from 0 and a number of tokens >= 0; a combination given twice is an error;
 *   - otherwise one line per MoE layer of per-expert tokens, separated by commas or blanks: one
 *     step, every line with the same count of numbers.
 * Returns 0; PS_EINVAL (t or text NULL); PS_EPARSE with the line and column for a malformed
 * or negative number, a ragged line, a repeated row, an empty trace; PS_ERANGE beyond the
 * bounds above; PS_ENOMEM. On failure t is empty.
 */
PS_EXTERN int ps_expert_trace_load(ps_expert_trace *t, const char *text, size_t len);

/* Sets the largest number ps_expert_trace_load accepts (a larger one is PS_ERANGE with its line
 * and column): PS_MAX_TRACE_TOKENS by default; a file of other numbers read in the same format
 * (a placement read back: device indices) sets its own, up to DBL_MAX, and checks them itself.
 * Returns 0, or PS_EINVAL (t NULL, max not a number > 0). */
PS_EXTERN int ps_expert_trace_set_max(ps_expert_trace *t, double max);

/*
 * Fills t with a synthetic trace of `layers` MoE layers of `experts` experts, replacing what
 * it held. spec: `zipf:S` then any of `,drift:X`, `,seed:N`, `,steps:T`, `,tokens:K`
 * (docs/balance.md): at every step a layer's K token copies (default 1048576) go to its
 * experts in proportion to rank^-S (each layer ranks its experts in its own random order)
 * times exp(X . z), z a per-expert Gaussian random walk (drift X default 0); T steps
 * (default 50); seed N (default 1) makes it reproducible on every platform (xoshiro256**).
 * Returns 0; PS_EINVAL (NULL); PS_ECONFIG for a malformed spec, naming the word; PS_ERANGE
 * beyond the bounds; PS_ENOMEM.
 */
PS_EXTERN int ps_expert_trace_synthetic(ps_expert_trace *t, const char *spec, int32_t layers,
                                        int32_t experts);

/* The trace's size; any pointer may be NULL. Returns 0, PS_EINVAL (t NULL), PS_ESTATE (empty). */
PS_EXTERN int ps_expert_trace_shape(const ps_expert_trace *t, int32_t *steps, int32_t *layers,
                                    int32_t *experts);
/* The tokens expert e of layer l received at step s, or -1 outside the trace. */
PS_EXTERN double ps_expert_trace_tokens(const ps_expert_trace *t, int32_t s, int32_t l, int32_t e);

/*
 * The EMA prediction of every expert's load after the trace's last step, into
 * out[layers * experts] (layer-major). With EL_t the tokens of step t and theta in [0, 1):
 *   P_1 = EL_0,   P_{t+1} = theta . P_t + (1 - theta) . EL_t   (t = 1 .. steps - 1),
 * and the prediction is P_steps (one step: the step itself). Returns 0; PS_EINVAL (NULL);
 * PS_ERANGE (theta outside [0, 1)); PS_ESTATE (empty trace).
 */
PS_EXTERN int ps_expert_trace_predict(const ps_expert_trace *t, double theta, double *out);

/* The expert-parallel group: devices on nodes, the same count on each, and the experts a
 * device holds (capacity; 0 = experts / devices, which must then divide). */
typedef struct ps_expert_group {
    int32_t devices, nodes, capacity;
} ps_expert_group;

/* Checks g against a layer of `experts` experts: nodes divide devices, capacity x devices >=
 * experts. Returns 0 and the capacity in force in *capacity (may be NULL), or PS_ECONFIG with
 * the reason in err. */
PS_EXTERN int ps_expert_group_check(const ps_expert_group *g, int32_t experts, int32_t *capacity,
                                    char *err, size_t errlen);

/* Megatron's placement: device d holds experts d.c .. d.c + c - 1 (c the capacity in force).
 * Returns 0 or PS_ECONFIG (ps_expert_group_check). */
PS_EXTERN int ps_expert_identity(int32_t experts, const ps_expert_group *g, int32_t *device_of);

/* Sums load[e] over the experts of each device into dev_load[devices]; returns the largest
 * sum, or -1 when an expert's device is outside [0, devices). */
PS_EXTERN double ps_expert_device_loads(const double *load, int32_t experts,
                                        const int32_t *device_of, int32_t devices,
                                        double *dev_load);

/*
 * Places the `experts` experts of one layer with predicted loads load[] (>= 0) on g's devices
 * into device_of[experts]. current (NULL: none) is the placement in force: refined by the
 * swaps, it is the first start, so that a result no better than it keeps it, and one that is
 * better moves few experts (ps_expert_align then relabels). The construction: node level first
 * (longest-processing-time greedy, each node holding at most its devices' capacity, then local
 * swaps between the most loaded node and the others), then device level inside each node (the same
 * greedy and swaps), then swaps between any two devices; the result is the best of that, plain LPT
 * over all devices (with the swaps) and the identity placement, by the largest device load, and for
 * a layer of at most 16 experts a branch and bound proves the optimum. Deterministic. Returns 0;
 * PS_EINVAL (NULL); PS_ECONFIG (the group does not hold the experts, a negative load, a current
 * placement off the group or over capacity; the reason in err); PS_ENOMEM.
 */
PS_EXTERN int ps_expert_place(const double *load, int32_t experts, const ps_expert_group *g,
                              const int32_t *current, int32_t *device_of, const ps_allocator *alloc,
                              char *err, size_t errlen);

/* One MoE layer's time per training step on the slowest device of a placement, with a
 * model and hardware (docs/balance.md): each device's expert GEMMs (forward and both
 * gradients, per expert as src/model's GEMM model times them) plus its all-to-all (dispatch
 * and combine in the forward and the backward, tokens x hidden x 2 bytes each, the share from
 * other nodes over the inter-node link). */
typedef struct ps_expert_layer_time {
    int32_t device;         /* the slowest device */
    double gemm_s;          /* its expert GEMMs, seconds per step */
    double a2a_s;           /* its all-to-all, seconds per step */
    double layer_s;         /* gemm_s + a2a_s */
    double a2a_bytes;       /* the bytes it receives per step */
    double a2a_inter_bytes; /* of which from other nodes */
} ps_expert_layer_time;

/* Returns 0; PS_EINVAL (NULL); PS_ECONFIG (a dense model, experts other than the model's, a
 * checked group that does not hold them, a device out of range; reason in err). */
PS_EXTERN int ps_expert_layer_time_get(const ps_transformer *model, const ps_hardware *hw,
                                       int32_t precision, const double *load, int32_t experts,
                                       const int32_t *device_of, const ps_expert_group *g,
                                       ps_expert_layer_time *out, char *err, size_t errlen);

/* Bytes that moving one expert carries: its parameters times 14 (bf16 weights, fp32 master
 * weights and Adam's two moments; the gradients are recomputed every step). 0 for a dense
 * model. */
PS_EXTERN double ps_expert_migration_bytes(const ps_transformer *model);

/* Seconds to move a layer from placement `from` to `to` (device_of arrays of `experts`): every
 * device sends the experts that leave it and receives those that arrive, bytes_per_expert
 * each, over the intra-node link when both devices share a node and the inter-node link
 * otherwise; the time is the busiest device's, sending and receiving at once, plus one latency
 * per link used. *moved (may be NULL) receives the count of experts that move. Returns 0,
 * PS_EINVAL, or PS_ECONFIG (a device out of range). */
PS_EXTERN int ps_expert_migration_s(const int32_t *from, const int32_t *to, int32_t experts,
                                    const ps_expert_group *g, double bytes_per_expert,
                                    const ps_hardware *hw, int32_t *moved, double *seconds);

/* Relabels the devices of `placement` (whole nodes among nodes, devices among the devices of a
 * node: the loads and the cross-node shares stay the same) so that as many experts as a greedy
 * matching finds stay where `current` has them, nodes first. Returns 0, PS_EINVAL,
 * PS_ECONFIG (a device out of range) or PS_ENOMEM (placement unchanged). */
PS_EXTERN int ps_expert_align(const int32_t *current, int32_t *placement, int32_t experts,
                              const ps_expert_group *g, const ps_allocator *alloc);

/* The migration rule: 1 when horizon steps of the gain (before_s - after_s per step) exceed
 * the migration's seconds, else 0. */
PS_EXTERN int ps_expert_should_migrate(double before_s, double after_s, double migration_s,
                                       int32_t horizon);

/* ---- EDPB in the estimate ------------------------------------------------------------------- */

/* The most tokens ps_samples_synthetic packs (samples x seq). */
#define PS_MAX_SYNTHETIC_TOKENS 4294967296.0

/*
 * Synthetic packed samples for people without a samples file (docs/balance.md): spec
 * `lognormal:MU,SIGMA` then optionally `,seed:N` (default 1; MU in [-10, 30], SIGMA in [0,
 * 10]). Document lengths are drawn as round(exp(MU + SIGMA . z)), z standard normal (the
 * xoshiro256** generator and Box-Muller of the synthetic expert traces, seeded by N), at least 1
 * and at most PS_MAX_DOC_LEN, and packed in order into n samples of exactly seq tokens each: a
 * document that does not fit the rest of a sample is cut there and its remainder starts the
 * next sample (the cut pieces are documents of their own: attention restarts at a sample's
 * start). Fills out[0 .. n). Returns 0; PS_EINVAL (spec NULL, out NULL with n > 0);
 * PS_ECONFIG for a malformed spec, naming the word; PS_ERANGE (seq or n below 1, or n . seq
 * above PS_MAX_SYNTHETIC_TOKENS).
 */
PS_EXTERN int ps_samples_synthetic(const char *spec, int32_t seq, ps_sample *out, size_t n,
                                   char *err, size_t errlen);

/* What makes a step uneven: the samples of the global batch (NULL: even micro-batches) and a
 * routing trace of the MoE layers (NULL: even expert loads). */
typedef struct ps_edpb_input {
    const ps_sample *samples; /* dp . microbatches . mbs samples, in input order */
    size_t n_samples;
    const ps_expert_trace *trace; /* the model's experts, at most its MoE layers (the first
                                     layers of the trace are averaged; docs/balance.md) */
    double theta;                 /* the EMA factor of the load prediction, [0, 1); 0.9 usual */
    int64_t max_evals;            /* ps_balance_data's budget (0: its default) */
} ps_edpb_input;

typedef struct ps_edpb_result {
    double even_step_time_s;        /* the estimate without imbalance */
    double imbalanced_step_time_s;  /* samples in input order round-robin, experts at the
                                       identity placement: no balancing */
    double experts_step_time_s;     /* experts placed by ps_expert_place, samples in input order */
    double balanced_step_time_s;    /* placed experts and the samples reordered (D and E) */
    double expert_factor;           /* identity: mean over the layers of max / mean device load */
    double expert_factor_balanced;  /* the same of the placement */
    double data_imbalance;          /* input order: the heaviest replica's mean weight */
    double data_imbalance_balanced; /* reordered */
    int32_t slowest_replica, slowest_replica_balanced; /* the replica that sets the step */
    int64_t evals;                                     /* ps_balance_data's simulations */
} ps_edpb_result;

/*
 * The step time of (model, hw, train) with the imbalance of in, without and with balancing
 * (docs/balance.md, "In the estimate"). The step time of an assignment of the samples is the
 * slowest data-parallel replica's estimate, each replica's micro-batch j weighing its slot's
 * predicted time (ps_sample_model_derive, ps_sample_time) over the mean slot time
 * (ps_estimate_set_microbatch_weights); the experts' factor is the mean over the trace's layers
 * of the largest EP device's predicted load (EMA, theta) over the mean, under the identity
 * placement or ps_expert_place's (ps_estimate_set_moe_imbalance); the EP group is the job's ep
 * devices on nodes of gpus_per_node / etp. The reordering is ps_balance_data on the estimate's
 * pipeline with the placed experts; a reordering whose estimate (with the replicas' data-parallel
 * tail) is slower than the input order is replaced by the input order. rank and slot (n_samples
 * each, both NULL or both given) receive the reordered assignment. Uniform samples and loads give
 * exactly the even step time. e ends holding the even estimate (no weights, factors 1). Returns
 * 0; PS_EINVAL (NULL); PS_ECONFIG (a sample count other than dp . microbatches . mbs, a sample
 * without tokens, a trace whose experts or layers do not match the model, a dense model with a
 * trace; message in err); PS_ERANGE (theta); PS_ENOMEM; the estimate's errors.
 */
PS_EXTERN int ps_edpb_estimate(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                               const ps_train *train, const ps_edpb_input *in, ps_edpb_result *out,
                               int32_t *rank, int32_t *slot, char *err, size_t errlen);

/*
 * The micro-batch weights ps_edpb_estimate gives an assignment of the n samples x (n a
 * multiple of dp . microbatches; mbs = n / (dp . microbatches)): w[r . microbatches + j] is the
 * predicted time of replica r's slot j (ps_sample_model_derive) over the mean slot time,
 * exactly 1 everywhere when every slot takes the same time. rank and slot (n each) give the
 * assignment, or both NULL for the input order round-robin. For drawing or simulating one
 * replica (ps_estimate_set_microbatch_weights with w + r . microbatches). Returns 0; PS_EINVAL;
 * PS_ECONFIG (n not a multiple, a rank or slot out of range, samples whose times sum to 0; the
 * reason in err); PS_ENOMEM.
 */
PS_EXTERN int ps_edpb_slot_weights(const ps_transformer *model, const ps_hardware *hw,
                                   const ps_sample *x, size_t n, const int32_t *rank,
                                   const int32_t *slot, int32_t dp, int32_t microbatches, double *w,
                                   char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_BALANCE_H */
