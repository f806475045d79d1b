/*
 * pipesched performance and memory model — seconds and bytes for real models on real hardware.
 *
 * Part of libpipesched (no extra dependency): include it after or instead of pipesched.h.
 * Three plain structs describe a training run, each with a built-in table and a loader:
 *
 *   ps_transformer  the model: a HuggingFace config.json (ps_transformer_from_hf), a built-in
 *                   name (ps_transformer_builtin), or filled by hand;
 *   ps_hardware     the device and its network: a built-in preset (ps_hardware_builtin) or a
 *                   JSON file that names a base preset and overrides fields
 *                   (ps_hardware_from_json); the efficiency figures are what calibration sets;
 *   ps_train        the parallel setup and the job (tp, pp, vpp, cp, ep, batch sizes, ...),
 *                   filled by ps_train_init() and then by the caller.
 *
 * ps_estimate_run() derives from them the duration of every virtual stage's forward,
 * input-gradient and weight-gradient in seconds and the bytes every rank holds, simulates the
 * iteration with the engine (the schedule decides the bubble and the in-flight activations),
 * and reports step time, throughput, MFU, exposed communication by kind and memory by rank.
 * Formulas and their sources: docs/model.md.
 *
 * Errors follow pipesched.h: functions return 0 or a negative PS_E* code; the loaders write a
 * message naming the key and the value into err (errlen bytes, may be NULL); the estimate
 * keeps its message on the handle (ps_estimate_last_error).
 * SPDX-License-Identifier: MIT
 */
#ifndef PIPESCHED_MODEL_H
#define PIPESCHED_MODEL_H

#include <pipesched/pipesched.h>

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The model ------------------------------------------------------------------------------ */

/*
 * A decoder-only transformer, dense or MoE, with MHA, GQA or MLA attention. Field names follow
 * the HuggingFace config keys they come from (in brackets). A zero in an optional field means
 * "not used" or "derived" as its comment says.
 */
typedef struct ps_transformer {
    char name[64];
    int32_t layers;          /* decoder layers [num_hidden_layers] */
    int32_t hidden;          /* [hidden_size] */
    int32_t ffn;             /* MLP size of the dense layers [intermediate_size] */
    int32_t heads;           /* [num_attention_heads] */
    int32_t kv_heads;        /* [num_key_value_heads]; = heads for MHA */
    int32_t head_dim;        /* [head_dim]; 0 = hidden / heads */
    int32_t vocab;           /* [vocab_size] */
    int32_t tied_embeddings; /* 1: the output layer shares the embedding [tie_word_embeddings] */
    int32_t gated_mlp;       /* 1: SwiGLU-style MLP, 3 GEMMs; 0: GeLU, 2 GEMMs [hidden_act] */
    int32_t rms_norm;        /* 1: RMSNorm (h parameters a norm); 0: LayerNorm (2h) */
    int32_t max_seq;         /* [max_position_embeddings], informational; 0 = unknown */
    /* MoE (experts == 0: dense model). */
    int32_t experts;        /* routed experts [num_local_experts | n_routed_experts] */
    int32_t top_k;          /* [num_experts_per_tok] */
    int32_t moe_ffn;        /* one routed expert's MLP size [moe_intermediate_size]; 0 = ffn */
    int32_t shared_experts; /* [n_shared_experts] */
    int32_t shared_ffn;     /* one shared expert's MLP size; 0 = moe_ffn */
    int32_t first_dense;    /* the first first_dense layers are dense [first_k_dense_replace] */
    /* MLA (q_lora_rank == 0 and kv_lora_rank == 0: standard attention). */
    int32_t q_lora_rank, kv_lora_rank;
    int32_t qk_nope_head_dim, qk_rope_head_dim, v_head_dim;
    int32_t mtp_layers; /* multi-token-prediction layers [num_nextn_predict_layers] */
} ps_transformer;

/* Parameter counts of a model (whole model, not sharded). */
typedef struct ps_param_count {
    double embedding;   /* V h */
    double output;      /* V h, 0 when tied */
    double dense_layer; /* one dense layer (attention, MLP, norms) */
    double moe_layer;   /* one MoE layer, all experts (0 for a dense model) */
    double moe_expert;  /* of which routed-expert parameters (sharded over EP) */
    double mtp_layer;   /* one MTP layer (0 without) */
    double total;       /* everything, the final norm and the MTP layers included */
    /* Per token: embedding, attention, dense MLPs, top_k routed + shared experts, output; not
     * the MTP layers (docs/models.md says how each publisher counts). */
    double active;
} ps_param_count;

/* The built-in model named `name` (case-insensitive; `ps_transformer_builtin_name`). Returns 0
 * or PS_ENOTFOUND. */
PS_EXTERN int ps_transformer_builtin(const char *name, ps_transformer *out);
/* The name of the i-th built-in model, NULL past the end. */
PS_EXTERN const char *ps_transformer_builtin_name(size_t i);
/* Reads a HuggingFace config.json. Unknown keys are ignored (HF configs carry many that do
 * not change the cost); missing required keys, wrong types and absurd values are PS_ECONFIG
 * with the key's JSON path in err ("$.hidden_size: ..."); malformed JSON is PS_EPARSE with the
 * line and column. */
PS_EXTERN int ps_transformer_from_hf(const char *json, size_t len, ps_transformer *out, char *err,
                                     size_t errlen);
/* Checks a model's fields (ranges, divisibility of heads by kv_heads, MoE and MLA
 * consistency): 0 or PS_ECONFIG with the field in err. */
PS_EXTERN int ps_transformer_check(const ps_transformer *t, char *err, size_t errlen);
/* Parameter counts of a checked model. */
PS_EXTERN int ps_transformer_params(const ps_transformer *t, ps_param_count *out);

/* ---- The hardware --------------------------------------------------------------------------- */

typedef enum ps_precision { PS_PREC_BF16 = 0, PS_PREC_FP8 = 1 } ps_precision;

typedef struct ps_hardware {
    char name[32];
    /* Published figures (docs/hardware.md gives the source of each). */
    double peak_tflops_bf16;  /* dense, per device */
    double peak_tflops_fp8;   /* dense, per device; 0 = no FP8 */
    double hbm_gib;           /* memory capacity per device, GiB */
    double hbm_gbps;          /* memory bandwidth per device, GB/s */
    int32_t devices_per_node; /* devices sharing the intra-node link */
    double intra_gbps;        /* intra-node (NVLink/HCCS) bandwidth per device, one way, GB/s */
    double inter_gbps;        /* inter-node bandwidth per device, one way, GB/s */
    double lat_intra_us;      /* latency of one collective step within a node */
    double lat_inter_us;      /* latency of one collective step across nodes */
    /* Efficiency figures: what calibration sets (docs/model.md). */
    double gemm_eff;      /* achieved fraction of peak of a large GEMM, (0, 1] */
    double gemm_half_dim; /* GEMM efficiency halves when its smallest dimension is this; 0 = flat */
    double attn_eff;      /* achieved fraction of peak of the attention kernel, (0, 1] */
    double mem_eff;       /* achieved fraction of HBM bandwidth of memory-bound kernels */
    double bus_eff_intra; /* achieved fraction of intra_gbps of a large collective */
    double bus_eff_inter; /* achieved fraction of inter_gbps of a large collective */
    double overhead_gib;  /* framework memory per device (context, allocator), GiB */
    double moe_layer_us;  /* the host's floor (us) of a MoE layer's forward and of its
                             backward: a pass takes max(device work, floor); the routing's
                             host synchronisation and dispatch launches */
    double grouped_gemm_eff; /* the MoE experts' grouped GEMM's efficiency as a fraction of a
                                dense GEMM's of the same size, (0, 1] */
} ps_hardware;

/* The built-in preset named `name` (case-insensitive): 0 or PS_ENOTFOUND. */
PS_EXTERN int ps_hardware_builtin(const char *name, ps_hardware *out);
/* The name of the i-th preset, NULL past the end. */
PS_EXTERN const char *ps_hardware_builtin_name(size_t i);
/* Reads a hardware file: {"base": "h100-sxm", "hbm_gib": 94, ...} (base optional; without it
 * every published figure is required). Keys are the field names above; unknown keys are
 * PS_ECONFIG with a suggestion. */
PS_EXTERN int ps_hardware_from_json(const char *json, size_t len, ps_hardware *out, char *err,
                                    size_t errlen);
/* Checks the fields' ranges: 0 or PS_ECONFIG with the field in err. */
PS_EXTERN int ps_hardware_check(const ps_hardware *hw, char *err, size_t errlen);

/* ---- The parallel setup and the job --------------------------------------------------------- */

typedef enum ps_recompute {
    PS_RECOMPUTE_NONE = 0,
    PS_RECOMPUTE_SELECTIVE = 1, /* attention's core recomputed (Korthikanti et al.) */
    PS_RECOMPUTE_FULL = 2       /* whole layers recomputed; recompute_layers per stage, 0 = all */
} ps_recompute;

typedef struct ps_train {
    int32_t gpus;          /* devices in the job */
    int32_t gpus_per_node; /* 0 = the hardware's devices_per_node */
    int32_t tp, pp, vpp, cp, ep;
    int32_t etp;                   /* expert tensor parallelism; 0 = tp */
    int32_t sequence_parallel;     /* 1: TP with sequence parallelism (default 1 when tp > 1) */
    int64_t gbs;                   /* global batch, sequences */
    int32_t mbs;                   /* micro-batch size, sequences */
    int32_t seq;                   /* sequence length, tokens */
    int32_t precision;             /* ps_precision of the GEMMs */
    int32_t recompute;             /* ps_recompute */
    int32_t recompute_layers;      /* PS_RECOMPUTE_FULL: layers recomputed per stage, 0 = all */
    int32_t distributed_optimizer; /* 1: optimizer state sharded over data parallelism */
    int32_t overlap_grad_reduce;   /* 1: DP gradient reduce overlaps the last backwards */
    int32_t overlap_param_gather;  /* 1: parameter all-gather overlaps the forwards */
    char schedule[32];             /* family or alias; "" = interleaved if vpp > 1, else 1f1b */
    int32_t group_size;            /* interleaved/adaptive micro-batch group size (Megatron's
                                      microbatch_group_size_per_vp_stage); 0 = pp */
    int32_t a2a;                   /* ps_a2a for the MoE layers */
    int32_t moe_token_drop;        /* 1: MoE layers with a token capacity (token drop and
                                      padding, the routing's sizes known in advance): no host
                                      synchronisation, moe_layer_us not spent; 0: dropless
                                      (Megatron's default) */
    /* Megatron pipeline layout string, borrowed; NULL = the even split; "auto" = the split of
     * the decoder layers that minimises the simulated step time (embedding on the first, output
     * layer, loss and MTP layers on the last virtual stage, empty stages allowed; never worse
     * than the even split; read it with ps_estimate_stage_layers; docs/layout.md). */
    const char *layout;
    /* Decoder layers of the first / last pipeline rank, split evenly over its vpp chunks
     * (Megatron's --decoder-first/last-pipeline-num-layers; ps_layout_split); 0 = even. */
    int32_t first_stage_layers;
    int32_t last_stage_layers;
    /* Adaptive Pipe's options (docs/config.md, extra_warmup and split_backward; the adaptive
     * family only): extra warm-up forwards delta, 0 = the family's default (1), N >= 1 sets
     * delta = N; split_backward 1: each cool-down backward as I then W. */
    int32_t extra_warmup;
    int32_t split_backward;
} ps_train;

/* Fills *t with the defaults: 8 GPUs, tp = pp = vpp = cp = ep = 1, sequence parallelism on
 * (it acts when tp > 1), gbs 8, mbs 1, seq 4096, bf16, no recompute, the distributed optimizer
 * off (as in Megatron-LM), both overlaps on, schedule "", a2a auto, an even split. */
PS_EXTERN void ps_train_init(ps_train *t);

/* ---- Layer partition ------------------------------------------------------------------------ */

/* What one virtual (model) stage holds. */
typedef struct ps_stage_layers {
    int32_t first_layer; /* index of its first decoder layer */
    int32_t layers;      /* decoder layers */
    int32_t embedding;   /* 1 on the stage with the input embedding */
    int32_t mtp;         /* MTP layers */
    int32_t loss;        /* 1 on the stage with the output layer and the loss */
} ps_stage_layers;

/*
 * Splits `layers` decoder layers and `mtp` MTP layers over the pp * vpp virtual stages of `pp`
 * pipeline ranks with `vpp` chunks each, into out[pp * vpp], in model order: virtual stage
 * s = c * pp + r is chunk c of rank r (Megatron's interleaved placement).
 * layout: Megatron's --pipeline-model-parallel-layout string ("E", "t", "m", "L", "|" between
 * stages, "*N" repetition, parentheses; an empty string is parsed and refused, NULL means no
 * layout), which must have pp * vpp stages; or NULL for Megatron's even split: without first /
 * last, layers must divide evenly over the pp * vpp stages; first / last (> 0) are the decoder
 * layers of the first / last pipeline RANK (Megatron's --decoder-first/last-pipeline-num-layers),
 * the layers left are split evenly over the ranks between them, and every rank splits its
 * layers evenly over its vpp chunks, with Megatron's conditions (docs/layout.md). Returns 0;
 * PS_EINVAL (out NULL), PS_ERANGE (pp or vpp below 1, pp * vpp above PS_MAX_STAGES) or
 * PS_ECONFIG with the column in err when the string does not parse or does not match the
 * counts, or the counts do not divide as Megatron requires; out is zeroed on error.
 * layout "balanced" (not a Megatron string): the split closest to even, for any layer count:
 * every stage holds layers / (pp.vpp) decoder layers and the remainder one more each, stages
 * 1, 2, ... first, then stage 0, never the last (ps_layout_balanced_count). layout "first",
 * "last", "first-last": the even split with the first / last counts of ps_layout_end_counts.
 */
PS_EXTERN int ps_layout_split(const char *layout, int32_t pp, int32_t vpp, int32_t layers,
                              int32_t mtp, int32_t first, int32_t last, ps_stage_layers *out,
                              char *err, size_t errlen);

/* The decoder layers of virtual stage s of `stages` in the "balanced" layout (0 when out of
 * range). */
PS_EXTERN int32_t ps_layout_balanced_count(int32_t layers, int32_t stages, int32_t s);

/*
 * The layouts "first", "last" and "first-last" (not Megatron strings; pipesched tune's layout
 * knob): Megatron's first / last stage layer counts (--decoder-first/last-pipeline-num-layers)
 * that give the first pipeline rank, the last, or both (the same count each) fewer decoder
 * layers than the ranks between them, which split the rest evenly; of these, the split closest
 * to even (the end ranks' count the largest that leaves an even rest). ps_layout_split takes
 * the names and splits as with those counts (docs/layout.md).
 * ps_layout_ends: PS_LAYOUT_FIRST, PS_LAYOUT_LAST, both or'ed, for "first", "last",
 * "first-last"; 0 for any other string or NULL.
 * ps_layout_end_counts: the counts for `ends` (1, 2 or 3 as above) into *first / *last (0 for
 * an end not set): 0; PS_ECONFIG when no such split exists (pp below 2, or 3 for both; vpp
 * not dividing the layers; no count leaves an even rest), both 0; PS_EINVAL for a NULL
 * pointer or another `ends`.
 */
#define PS_LAYOUT_FIRST 1
#define PS_LAYOUT_LAST 2
PS_EXTERN int ps_layout_ends(const char *layout);
PS_EXTERN int ps_layout_end_counts(int ends, int32_t pp, int32_t vpp, int32_t layers,
                                   int32_t *first, int32_t *last);

/*
 * Writes the Megatron --pipeline-model-parallel-layout string of s[stages] into buf (cap
 * bytes, NUL-terminated): per stage "E", "t*N" (or "t"), "m*N" (or "m"), "L", stages joined by
 * "|" (an empty stage is empty: "E||t|L"), without groups or commas, so Megatron and
 * ps_layout_split read it back as the same split. Returns the string's length (without the
 * NUL); PS_EINVAL (s or buf NULL, cap 0), PS_ERANGE (stages outside [1, PS_MAX_STAGES], or cap
 * too small: buf then holds ""), PS_ECONFIG (a negative count, the embedding elsewhere than
 * exactly stage 0, the loss elsewhere than exactly the last stage, MTP layers in two stages or
 * before decoder layers: what a layout cannot say).
 */
PS_EXTERN int ps_layout_format(const ps_stage_layers *s, int32_t stages, char *buf, size_t cap);

/* ---- The estimate --------------------------------------------------------------------------- */

/* Communication kinds in the exposed-time breakdown. */
enum { PS_COMM_TP, PS_COMM_CP, PS_COMM_EP, PS_COMM_PP, PS_COMM_DP, PS_COMM_KINDS };

typedef struct ps_estimate_result {
    double step_time_s;
    double tokens_per_s_per_gpu;
    double model_tflops_per_gpu;     /* model FLOPs (no recompute) per second per GPU */
    double mfu;                      /* model_tflops_per_gpu / the precision's peak */
    double bubble_s;                 /* the largest idle time of a rank within the pipeline */
    double compute_s;                /* the busiest rank's compute */
    double exposed_s[PS_COMM_KINDS]; /* exposed communication by kind (docs/model.md) */
    double optimizer_s;              /* the optimizer step */
    int32_t dp, microbatches;        /* derived */
    double peak_gib;                 /* the largest rank's total */
    int32_t peak_rank;
    int32_t fits; /* 1 when every rank's total fits hbm_gib */
} ps_estimate_result;

/* Bytes one pipeline rank holds at its peak, by kind. */
typedef struct ps_rank_memory {
    double weights, grads, optimizer, activations, overhead, total; /* GiB */
    int64_t peak_inflight; /* in-flight chunks at the peak, read off the simulated timeline */
} ps_rank_memory;

typedef struct ps_estimate ps_estimate;

/* Creates an estimate handle. Caller frees with ps_estimate_free(). */
PS_EXTERN int ps_estimate_new(ps_estimate **out, const ps_allocator *alloc);
PS_EXTERN void ps_estimate_free(ps_estimate *e);
PS_EXTERN const char *ps_estimate_last_error(const ps_estimate *e);
/*
 * Derives the per-stage durations and bytes of (model, hw, train), generates, validates and
 * simulates the schedule. The inputs are copied. PS_ECONFIG names what does not divide or
 * does not fit (gpus by tp.pp.cp, heads by tp, experts by ep, the batch by dp.mbs, ...);
 * PS_EUNSUPPORTED/PS_EINVALID come from the schedule family. A configuration whose memory
 * does not fit is not an error: the result says fits = 0. Reuse one handle for many runs: it
 * keeps its tables, and the schedule while the shape (family, pp, vpp, micro-batches) stays
 * the same, so a run that changes only the costs simulates without generating; the results
 * are those of a fresh handle, bit for bit.
 */
PS_EXTERN int ps_estimate_run(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                              const ps_train *train);
/*
 * Uneven micro-batches for the next runs of e (issue 15; docs/balance.md, "In the estimate"):
 * one weight per micro-batch of a replica, the part of micro-batch j of every stage costing
 * its duration times w[j] (ps_problem_set_microbatch_weights). The run then simulates one
 * data-parallel replica whose micro-batches have these weights. n must equal the run's
 * micro-batches (gbs / (dp . mbs)), else the run is PS_ECONFIG; n 0 (w may be NULL) clears.
 * Copied. Returns 0; PS_EINVAL (e NULL, or w NULL with n > 0); PS_ERANGE (more than
 * PS_MAX_MICROBATCHES, a weight not finite, not > 0 or above PS_MAX_COST); PS_ENOMEM.
 */
PS_EXTERN int ps_estimate_set_microbatch_weights(ps_estimate *e, const double *w, size_t n);
/*
 * Uneven expert loads for the next runs of e: every MoE layer's routed-expert GEMMs (forward,
 * input and weight gradient) take gemm_factor times the even load's time and its all-to-all
 * operations a2a_factor times theirs (the slowest EP device's load over the mean; 1 and 1:
 * even). The overlap planner then schedules the layer with these durations. Returns 0;
 * PS_EINVAL (e NULL); PS_ERANGE (a factor not in [1, 1e6]).
 */
PS_EXTERN int ps_estimate_set_moe_imbalance(ps_estimate *e, double gemm_factor, double a2a_factor);
PS_EXTERN int ps_estimate_result_get(const ps_estimate *e, ps_estimate_result *out);
PS_EXTERN int ps_estimate_rank_memory(const ps_estimate *e, int rank, ps_rank_memory *out);
/* The split of the last run (the layout's, the even one or the automatic one): *out points
 * at one ps_stage_layers per virtual stage of one model copy (pp * vpp), borrowed until the
 * next run or free. Returns that count; PS_EINVAL (e or out NULL), PS_ESTATE (no successful
 * run; *out NULL). */
PS_EXTERN int ps_estimate_stage_layers(const ps_estimate *e, const ps_stage_layers **out);
/* The schedule, problem and simulation of the last run, borrowed until the next run or free
 * (times in seconds): for exports, traces and drawings. NULL before a successful run. */
PS_EXTERN const ps_schedule *ps_estimate_schedule(const ps_estimate *e);
PS_EXTERN const ps_problem *ps_estimate_problem(const ps_estimate *e);
PS_EXTERN const ps_sim *ps_estimate_sim(const ps_estimate *e);
/*
 * Writes the last run's step as a Chrome/Perfetto trace (JSON for chrome://tracing or
 * ui.perfetto.dev) through write, in real time: ts and dur are the simulated seconds in
 * microseconds. First the pipeline as ps_export_trace writes it with us_per_unit 1e6 (a process
 * "rank r" per pipeline rank; on its "compute" track every forward, backward and weight
 * gradient under its PyTorch name, "1F3" for stage 1's forward of micro-batch 3, with its kind
 * as the category; on its "communication" track the pipeline transfers it sends, each the p2p
 * time of one activation; with a MoE model the planned operations on two more tracks), then
 * each rank's tail after its last action: its exposed data-parallel communication ("DP
 * communication (exposed)", category data_parallel, on the communication track: the part of
 * the gradient reduction that the last backwards do not hide, plus the parameter all-gather
 * when it does not overlap; no event when nothing is exposed), then its optimizer step
 * ("optimizer step", category optimizer, on the compute track). The latest tail ends at
 * step_time_s. Not events of their own: the TP and CP communication (inside the actions'
 * durations) and the part of the DP reduction that the backwards hide. Returns 0; PS_EINVAL
 * (e or write NULL); PS_ESTATE (no successful run); PS_ENOMEM; PS_EIO (write returned
 * non-zero).
 */
PS_EXTERN int ps_estimate_write_trace(const ps_estimate *e, ps_write_fn write, void *ud);

/*
 * Reads an estimate configuration (docs/config.md, "Estimate configuration"): one JSON object
 * with "model" (a built-in name, {"hf": {...config.json...}} or {"base": NAME, ...fields}),
 * "hardware" (a preset name or a hardware-file object) and "train" (the ps_train fields by
 * name; precision, recompute and a2a by their words; the booleans as true/false). "model" and
 * "hardware" are required; a "train" key the file omits keeps ps_train_init's default.
 *
 * ps_train.layout is a borrowed pointer, so the layout string is copied into the caller's
 * layout_buf (layout_cap bytes, NUL included) and train->layout points there: it lives as long
 * as the caller's buffer. layout_buf may be NULL (layout_cap 0) when the caller takes no
 * layout; a file with a layout longer than fits is PS_ECONFIG. Without a layout in the file,
 * train->layout is NULL and layout_buf is not written.
 *
 * Returns 0 and fills *model, *hw and *train (all three or none); PS_EINVAL for a NULL json,
 * model, hw or train; PS_EPARSE with the line and column for malformed JSON; PS_ECONFIG for
 * every problem at once, each under its JSON path ($.train.tp) with the value, unknown keys with
 * a suggestion. The message goes to err (errlen bytes; may be NULL).
 */
PS_EXTERN int ps_estimate_config_load(const char *json, size_t len, ps_transformer *model,
                                      ps_hardware *hw, ps_train *train, char *layout_buf,
                                      size_t layout_cap, char *err, size_t errlen);

/*
 * ps_estimate_config_load, telling also which keys the file's "train" names: bit i of
 * *named_keys (named_keys may be NULL) is set when "train" has the key
 * ps_estimate_config_train_key(i). A caller that lays its own settings over the file (the
 * CLI's flags) can then tell a value the file chose from ps_train_init's default without
 * parsing the text again. *named_keys is 0 on error.
 */
PS_EXTERN int ps_estimate_config_load_keys(const char *json, size_t len, ps_transformer *model,
                                           ps_hardware *hw, ps_train *train, uint64_t *named_keys,
                                           char *layout_buf, size_t layout_cap, char *err,
                                           size_t errlen);
/* The name of the i-th key of "train" (the order of docs/config.md's table; at most 64), NULL
 * past the end. */
PS_EXTERN const char *ps_estimate_config_train_key(size_t i);

#ifdef __cplusplus
}
#endif

#endif /* PIPESCHED_MODEL_H */
