/*
 * The search over parallel configurations (include/pipesched/tune.h): what its files share.
 *
 * space.c builds the value list of every knob (the machine's and the model's candidates,
 * narrowed by the user's constraints), numbers the candidates in mixed radix, and runs the
 * cheap checks and the bounds on one candidate; search.c splits the numbers over threads,
 * simulates the survivors with ps_estimate_run, and merges the threads' top K, fronts and
 * rejection counts. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_TUNE_INT_H
#define PS_TUNE_INT_H

#include "internal.h"

#include <pipesched/tune.h>

#define PS__TUNE_MAXV 1024   /* values of one knob */
#define PS__TUNE_MAXALLOW 64 /* values of one --allow */
#define PS__TUNE_FAMILIES 11
#define PS__TUNE_LAYOUTS 6 /* even, balanced, auto, first, last, first-last */

/* The cheap checks, in the order they run: each a counted rejection reason (search.c keeps
 * the estimate's own refusals and the simulated memory after these). */
enum {
    PS__R_DEVICES,  /* gpus % (tp.pp.cp) */
    PS__R_PP1,      /* pp = 1 runs 1f1b alone */
    PS__R_VPP,      /* the family does not take this vpp */
    PS__R_HEADS,    /* heads % tp */
    PS__R_KV,       /* kv_heads and tp */
    PS__R_EXPERTS,  /* experts % ep */
    PS__R_EPETP,    /* ep.etp does not divide dp.cp.tp */
    PS__R_SEQ,      /* seq % 2cp */
    PS__R_GROUP,    /* a group size above pp outside interleaved/adaptive with vpp > 1 */
    PS__R_ADAPTIVE, /* warmup other than 1 or split backward outside adaptive */
    PS__R_LAYERS,   /* layers % (pp.vpp) */
    PS__R_BALANCED, /* balanced: the even split, or fewer layers than stages */
    PS__R_FIT_AUTO, /* recompute fit with layout auto */
    PS__R_ENDS,     /* layout first/last/first-last: no such split, or it is balanced's */
    PS__R_STAGES,   /* stages above PS_MAX_STAGES */
    PS__R_BATCH,    /* gbs % (dp.mbs) */
    PS__R_MICRO,    /* micro-batches above PS_MAX_MICROBATCHES */
    PS__R_FAMILY_M, /* the family's conditions on pp and m */
    PS__R_MEMORY,   /* weights + gradients + optimizer + overhead above the limit */
    PS__R_FIT_NONE, /* recompute fit: the candidate fits without recompute */
    PS__R_FIT_FULL, /* recompute fit: only every layer recomputed fits (or nothing does) */
    PS__R_CHEAP
};

/* The reason's text (the counted line). */
const char *ps__tune_reason_text(int reason);

/* The space of one run. */
typedef struct ps__space {
    const ps_transformer *m;
    const ps_hardware *hw;
    ps_tune_job job;
    int32_t gpn;
    double limit_gib;
    int32_t vals[PS_KNOBS][PS__TUNE_MAXV];
    int32_t nv[PS_KNOBS];
    uint64_t stride[PS_KNOBS]; /* candidate number = sum of value index x stride */
    uint64_t total;
    double flops;        /* model FLOPs of one iteration */
    double flops_rec[4]; /* the FLOPs recompute adds, by ps_recompute: 0, the attention core's
                            forward (selective), every layer's forward (full); 0 for fit (at
                            least one layer per stage, bounded by the estimate's own bound) */
    /* Parameters of one layer (whole model): dense part and routed experts, dense and MoE. */
    double dl, el, dm, em;
} ps__space;

/* The user's constraints (ps_tune_allow, ps_tune_max). */
typedef struct ps__constraints {
    int32_t allow[PS_KNOBS][PS__TUNE_MAXALLOW];
    int32_t nallow[PS_KNOBS];
    int32_t max[PS_KNOBS];
} ps__constraints;

/* Builds the value lists of (m, hw, job) under k into *s. PS_ECONFIG with err (PS__ERRLEN)
 * naming the knob whose list is empty, or the invalid input. */
int ps__space_build(ps__space *s, const ps_transformer *m, const ps_hardware *hw,
                    const ps_tune_job *job, const ps__constraints *k, char *err);
/* The configuration numbered idx. */
void ps__space_decode(const ps__space *s, uint64_t idx, ps_tune_config *c);

/* What the cheap checks give of one candidate. */
typedef struct ps__cheap {
    int32_t dp;
    int64_t micro;
    double static_gib; /* the largest rank's weights + gradients + optimizer + overhead */
    double step_lb_s;  /* a lower bound on the step time */
} ps__cheap;

/* Runs the cheap checks on c: -1 when it passes (and *out filled), else the PS__R_* reason. */
int ps__space_check(const ps__space *s, const ps_tune_config *c, ps__cheap *out);

/* The last knob (in the numbering's order) that the checks up to and including `reason` read:
 * every candidate that shares the values of the knobs 0 .. that one with a candidate rejected
 * for `reason` is rejected for it too (search.c skips them together). PS_KNOBS - 1 for the
 * reasons whose checks read every knob. */
int ps__space_reason_level(int reason);

/* The largest rank's weights + gradients + optimizer + overhead (GiB) and the step-time lower
 * bound of c, whose divisibility holds (for the tests: equal to the estimate's own). */
void ps__space_bounds(const ps__space *s, const ps_tune_config *c, int32_t dp, double *static_gib,
                      double *step_lb_s);

/* ---- across processes (libpipesched-tune-mpi, src/tune/mpi.c) ----------------------------- */

/*
 * One process's share of a search: process part of parts evaluates the chunks of candidate
 * numbers part, part + parts, ... (search.c). share, when set, is called on the thread that
 * called ps__tune_run_part between its chunks (at most every 0.05 s) with the least K-th best
 * step time this process knows (0: none) and returns the least known by any process (0: none),
 * which the threads then prune against (every such value is the K-th of K configurations that
 * exist, so pruning still changes no answer). It must not call into the handle.
 */
typedef struct ps__tune_part {
    uint32_t part, parts;
    double (*share)(void *ud, double kth);
    void *ud;
    /* With job.csv_write: called with the CSV lines of each owned chunk (number chunk of the
     * whole space), in chunk order, one call at a time, from any thread of the search; nonzero
     * stops the search (PS_EIO). NULL: the lines go to job.csv_write, the header first. */
    int (*csv_chunk)(void *ud, uint64_t chunk, const char *text, size_t len);
    void *csv_ud;
} ps__tune_part;

/* The CSV's header line written (PS_EIO when write fails). */
PS__SIBLING int ps__tune_csv_header(ps_write_fn write, void *ud);
/* The most bytes the last run's CSV window held (job.csv_write; 0 without). */
PS__SIBLING size_t ps__tune_csv_high(const ps_tune *t);
/* The chunks of the last run's space (0 when it failed to build). */
PS__SIBLING uint64_t ps__tune_chunks(const ps_tune *t);

/* ps_tune_run over the share *part only: the handle then holds that share's top K, front,
 * reasons, records (with job.record_all: of its own candidates; the others read as "ok" with
 * no figures) and stats (candidates: the share's). ps_tune_run is this with 1 part of 1. */
PS__SIBLING int ps__tune_run_part(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                                  const ps_tune_job *job, const ps__tune_part *part);

/* The results of t's last run (rc 0), or the failure rc with t's message (rc < 0), as one
 * buffer for another process of the same build (native byte order and layout): *out, *len;
 * the caller frees *out with free(). 0 or PS_ENOMEM. */
PS__SIBLING int ps__tune_pack(const ps_tune *t, int rc, void **out, size_t *len);
/* The rc a pack carries and its message (borrowed from the pack), or PS_EINVAL for a buffer
 * that is no pack. */
PS__SIBLING int ps__tune_pack_rc(const void *pack, size_t len, const char **msg);
/* Sets t's message (printf-style) and returns rc. */
PS__SIBLING int ps__tune_fail(ps_tune *t, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Merges the n packs of the other shares of t's last run (each of rc 0, from runs of the same
 * space and number of parts) into t, which then holds what ps_tune_run over the whole space
 * holds: the same top K, front, reasons and records; stats summed (threads: their sum;
 * processes: n + 1; seconds: the given wall time). PS_EINVAL for a pack of another space or
 * share, PS_ESTATE without a run, PS_ENOMEM. */
PS__SIBLING int ps__tune_merge(ps_tune *t, const void *const *packs, const size_t *lens, size_t n,
                               double seconds);
/* Recompute "fit" (c->knob[PS_KNOB_RECOMPUTE] = PS_TUNE_RECOMPUTE_FIT): sets
 * c->recompute_layers to the fewest layers per stage whose full recompute brings the exact peak
 * memory (ps__estimate_bound on e) under the limit, by bisection (the peak does not grow with
 * the layers recomputed: test-tune checks it). *why: -1 when found; PS__R_FIT_NONE when the
 * candidate fits without recompute, PS__R_FIT_FULL when no count below the largest stage's
 * layers fits (the full candidate), each with *gib the peak that decided; also -1 (with
 * recompute_layers 1) when the estimate refuses the configuration, which its run then counts.
 * Returns 0, or PS_ENOMEM / PS_EINTERNAL with the message in err. */
struct ps_estimate;
int ps__space_fit(const ps__space *s, struct ps_estimate *e, ps_tune_config *c, int *why,
                  double *gib, char *err);

#endif
