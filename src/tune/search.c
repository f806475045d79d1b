/*
 * ps_tune_run: the candidates of the space (space.c) split over threads in chunks taken from
 * one counter; each thread checks, bounds and simulates its candidates with its own estimate
 * handle and keeps its own top K, Pareto front and rejection counts; the run then merges them.
 *
 * Why the answer does not depend on the threads: a thread prunes a candidate only against
 * configurations it found itself, which exist, so a pruned candidate is slower than K found
 * configurations and dominated by one found configuration (docs/tune.md); it is in neither
 * the merged top K nor the merged front. Every other candidate's outcome is a function of the
 * candidate alone, and the merge orders by (step time, peak memory, candidate number).
 * SPDX-License-Identifier: MIT
 */
#include "tune/tune_int.h"

#include "model/estimate.h"

#include <pipesched/balance.h>

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 256
#define UNITS_PER_THREAD 8 /* units (visit_unit) per thread at least, else chunks */
#define MAX_THREADS 256
#define KEY_LEN 200
#define EXAMPLE_LEN 320
#define LINE_LEN (512 + 2 * EXAMPLE_LEN + 128) /* one CSV line: knobs, reason, figures */

enum { ST_OK, ST_OVER_MEMORY, ST_REJECTED, ST_FAILED, ST_PRUNED };
static const char *const status_words[] = {"ok", "over-memory", "rejected", "failed", "pruned"};

/* One reason: the counted text, the first candidate's own message, the count. */
typedef struct reason {
    char key[KEY_LEN];
    char example[EXAMPLE_LEN];
    uint64_t count, first;
    double min_gib; /* memory reasons: the least memory needed among them; else 0 */
} reason;

/* One candidate's outcome, for the CSV. */
typedef struct record {
    double step, tok, mfu, peak;
    uint16_t
        reason; /* a PS__R_* or PS__R_CHEAP + the thread's reason index; global after the merge */
    uint8_t status, thread;
    int32_t recompute_layers; /* recompute fit: the layers found */
} record;

/* One chunk's CSV lines, waiting for the chunks before it (job.csv_write). */
typedef struct csv_slot {
    char *buf;
    size_t len, cap;
    uint64_t nth; /* the owned chunk whose lines it holds */
    int ready;
} csv_slot;

/*
 * The streamed CSV: the owned chunks' lines go out in chunk order through a window of slots.
 * A thread formats its chunk's lines into the slot of that chunk; the thread that completes
 * the next chunk to write writes it and every ready one after it. A thread takes a chunk
 * only when its slot is free (the chunk is less than next + n), so at most n chunks' lines
 * are held whatever the size of the space; the thread on the next chunk to write never
 * waits, so the window always moves.
 */
typedef struct csv_stream {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    csv_slot *slot;
    size_t n;           /* slots; 0: no stream */
    uint64_t next;      /* the next owned chunk to write */
    int writing;        /* a thread is writing (outside the lock) */
    int stop;           /* a write failed or a thread failed: nobody waits any more */
    size_t bytes, high; /* the slots' bytes allocated, now and at most */
} csv_stream;

/* A growing array of reasons. */
typedef struct reason_list {
    reason *v;
    size_t n, cap;
} reason_list;

typedef struct worker {
    struct ps_tune *t;
    int id;
    ps_estimate *e;
    ps_tune_row *top; /* sorted, at most K */
    size_t ntop;
    ps_tune_row *front; /* sorted by (step, peak, index), peaks decreasing */
    size_t nfront, capfront;
    uint64_t cheap[PS__R_CHEAP], cheap_first[PS__R_CHEAP];
    double mem_min;
    reason_list dyn;
    uint64_t simulated, failed, over, over_unsimulated, fitting, pruned, breaks;
    double need; /* least memory need seen: exact (simulated) or a lower bound */
    int need_exact;
    record *crec; /* with a CSV stream: the records of the chunk being visited, from clo */
    uint64_t clo;
    /* decode(): the block (candidate number / stride[PS_KNOB_SCHEDULE]) last decoded, + 1
     * (0: none), and its knobs up to the schedule */
    uint64_t dec_block;
    int32_t dec_knob[PS_KNOB_SCHEDULE + 1];
    int rc;
    char err[PS__ERRLEN];
    pthread_t th;
} worker;

struct ps_tune {
    ps_allocator al;
    ps__constraints k;
    ps__space sp;
    ps_tune_row *top, *front;
    size_t ntop, nfront, top_cap, front_cap; /* rows used, rows allocated */
    reason_list reasons;
    ps_tune_stats st;
    record *recs;
    uint64_t nrecs;
    worker *ws;    /* the workers of the run in progress (set_record finds a thread's chunk) */
    csv_stream cs; /* job.csv_write */
    _Atomic uint64_t next;      /* the next owned chunk, or with units the next unit */
    uint64_t units;             /* > 0: the threads take units, not chunks (visit_unit) */
    _Atomic uint64_t done;      /* candidates evaluated */
    _Atomic uint64_t best_bits; /* the best fitting step so far, as its bits (0: none) */
    _Atomic uint64_t kth_bits;  /* the least K-th best step of any thread or process (0: none) */
    ps__tune_part part;         /* this process's share of the space (1 of 1 by ps_tune_run) */
    /* The knobs after the schedule of every number below stride[PS_KNOB_SCHEDULE] (ninner of
     * them, PS_KNOBS - PS_KNOB_SCHEDULE - 1 values each), for decode(); NULL: too many. */
    int32_t *inner;
    uint64_t ninner;
    uint64_t owned;      /* the candidates of that share */
    double shared;       /* the last time the calling thread called part.share */
    double t0, reported; /* the start; the last progress call */
    /* ps_tune_set_imbalance: the inputs (borrowed; have_imb 0: none) and, during a run, the
     * samples' times sorted ascending as prefix sums (n_samples + 1) for the bound. */
    ps_edpb_input imb;
    int have_imb;
    double *prefix;
    size_t nprefix;
    int have;
    char err[PS__ERRLEN];
};

/* ---- handle ---------------------------------------------------------------------------------- */

void ps_tune_job_init(ps_tune_job *j)
{
    if (!j)
        return;
    memset(j, 0, sizeof *j);
    j->gpus = 8, j->gbs = 8, j->seq = 4096, j->top_k = 10;
}

int ps_tune_new(ps_tune **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_tune *t = ps__calloc(&al, 1, sizeof *t);
    if (!t)
        return PS_ENOMEM;
    t->al = al;
    *out = t;
    return 0;
}

static void clear_results(ps_tune *t)
{
    const ps_allocator *a = &t->al;
    ps__free(a, t->top, t->top_cap, sizeof *t->top);
    ps__free(a, t->front, t->front_cap, sizeof *t->front);
    ps__free(a, t->reasons.v, t->reasons.cap, sizeof *t->reasons.v);
    ps__free(a, t->recs, t->nrecs, sizeof *t->recs);
    t->top = t->front = NULL;
    t->ntop = t->nfront = t->top_cap = t->front_cap = 0;
    memset(&t->reasons, 0, sizeof t->reasons);
    t->recs = NULL;
    t->nrecs = 0;
    t->have = 0;
}

static void free_prefix(ps_tune *t)
{
    ps__free(&t->al, t->prefix, t->nprefix, sizeof *t->prefix);
    t->prefix = NULL;
    t->nprefix = 0;
}

#define INNER_KNOBS (PS_KNOBS - PS_KNOB_SCHEDULE - 1)
#define INNER_MAX ((uint64_t)1 << 16) /* the most numbers the inner table holds */

static void free_inner(ps_tune *t)
{
    ps__free(&t->al, t->inner, (size_t)t->ninner * INNER_KNOBS, sizeof *t->inner);
    t->inner = NULL;
    t->ninner = 0;
}

/* The inner table (ps_tune.inner) of the space just built; none (and no error) when a block
 * holds more than INNER_MAX numbers or memory is short: decode() then divides. */
static void build_inner(ps_tune *t)
{
    const ps__space *s = &t->sp;
    uint64_t n = s->stride[PS_KNOB_SCHEDULE];
    free_inner(t);
    if (n > INNER_MAX || !(t->inner = ps__alloc(&t->al, (size_t)n * INNER_KNOBS, sizeof *t->inner)))
        return;
    t->ninner = n;
    for (uint64_t r = 0; r < n; r++) { /* number r: the knobs up to the schedule at their first */
        ps_tune_config c;
        ps__space_decode(s, r, &c);
        memcpy(&t->inner[r * INNER_KNOBS], c.knob + PS_KNOB_SCHEDULE + 1,
               INNER_KNOBS * sizeof *t->inner);
    }
}

/*
 * ps__space_decode() of candidate idx, the same configuration: the knobs up to the schedule
 * are the worker's last block's when idx is in it (a chunk's candidates mostly are), the rest
 * come from the inner table: one division instead of one per knob, on the search's path of
 * every candidate that passes the block checks (about 10% of Pangu's CPU time before).
 */
static void decode(worker *w, uint64_t idx, ps_tune_config *c)
{
    const ps_tune *t = w->t;
    if (!t->inner) {
        ps__space_decode(&t->sp, idx, c);
        return;
    }
    uint64_t blk = idx / t->ninner, r = idx - blk * t->ninner;
    if (w->dec_block != blk + 1) {
        ps__space_decode(&t->sp, idx, c);
        memcpy(w->dec_knob, c->knob, sizeof w->dec_knob);
        w->dec_block = blk + 1;
        return;
    }
    memcpy(c->knob, w->dec_knob, sizeof w->dec_knob);
    memcpy(c->knob + PS_KNOB_SCHEDULE + 1, &t->inner[r * INNER_KNOBS],
           INNER_KNOBS * sizeof *t->inner);
    c->recompute_layers = 0;
}

void ps_tune_free(ps_tune *t)
{
    if (!t)
        return;
    clear_results(t);
    free_prefix(t);
    free_inner(t);
    ps_allocator a = t->al;
    ps__free(&a, t, 1, sizeof *t);
}

const char *ps_tune_last_error(const ps_tune *t)
{
    return t ? t->err : "invalid argument: NULL tune";
}

int ps_tune_allow(ps_tune *t, int knob, const int32_t *values, size_t n)
{
    if (!t || knob < 0 || knob >= PS_KNOBS || (n && !values))
        return PS_EINVAL;
    if (n > PS__TUNE_MAXALLOW)
        return ps__seterr(t->err, PS_ERANGE, "at most %d values of %s; got %zu", PS__TUNE_MAXALLOW,
                          ps_tune_knob_name(knob), n);
    if (n)
        memcpy(t->k.allow[knob], values, n * sizeof *values);
    t->k.nallow[knob] = (int32_t)n;
    return 0;
}

int ps_tune_max(ps_tune *t, int knob, int32_t max)
{
    if (!t || knob < 0 || knob >= PS_KNOBS)
        return PS_EINVAL;
    t->k.max[knob] = max;
    return 0;
}

const char *ps_tune_gap_name(int gap)
{
    static const char *const names[] = {"bubble", "tp", "cp", "ep", "pp", "dp", "optimizer"};
    return gap >= 0 && gap <= PS_GAP_OPTIMIZER ? names[gap] : NULL;
}

/* ---- ordering -------------------------------------------------------------------------------- */

/* The total order of results: step time, then peak memory, then the candidate number. */
static int before(const ps_tune_row *a, const ps_tune_row *b)
{
    if (a->result.step_time_s != b->result.step_time_s)
        return a->result.step_time_s < b->result.step_time_s;
    if (a->result.peak_gib != b->result.peak_gib)
        return a->result.peak_gib < b->result.peak_gib;
    return a->index < b->index;
}

static void top_insert(ps_tune_row *top, size_t *n, size_t k, const ps_tune_row *r)
{
    if (*n == k && !before(r, &top[k - 1]))
        return;
    size_t i = *n < k ? (*n)++ : k - 1;
    while (i > 0 && before(r, &top[i - 1])) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *r;
}

/* Inserts r into the front f[n] (sorted by `before`, peaks strictly decreasing) unless a point
 * before it has no more memory; drops the points after it with no less memory. */
static int front_insert(worker *w, const ps_tune_row *r)
{
    size_t n = w->nfront, i = 0;
    ps_tune_row *f = w->front;
    while (i < n && before(&f[i], r)) {
        if (f[i].result.peak_gib <= r->result.peak_gib)
            return 0;
        i++;
    }
    size_t j = i;
    while (j < n && f[j].result.peak_gib >= r->result.peak_gib)
        j++;
    /* f[i, j) are dominated by r: replace them by r. */
    if (j == i) {
        if (n == w->capfront) {
            size_t cap = w->capfront ? 2 * w->capfront : 16;
            ps_tune_row *g = ps__realloc(&w->t->al, f, w->capfront, cap, sizeof *f);
            if (!g)
                return PS_ENOMEM;
            w->front = f = g;
            w->capfront = cap;
        }
        memmove(f + i + 1, f + i, (n - i) * sizeof *f);
        w->nfront = n + 1;
    } else {
        memmove(f + i + 1, f + j, (n - j) * sizeof *f);
        w->nfront = n - (j - i) + 1;
    }
    f[i] = *r;
    return 0;
}

/* Whether a configuration on w's front is faster than lb with at most gib of memory. */
static int front_dominates(const worker *w, double lb, double gib)
{
    size_t i = 0;
    while (i < w->nfront && w->front[i].result.step_time_s < lb)
        i++;
    return i > 0 && w->front[i - 1].result.peak_gib <= gib;
}

/* ---- reasons --------------------------------------------------------------------------------- */

/* The index of key in l (added with count 0 when new), or -1 when out of memory. */
static long reason_find(const ps_allocator *a, reason_list *l, const char *key)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->v[i].key, key))
            return (long)i;
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        reason *v = ps__realloc(a, l->v, l->cap, cap, sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    reason *r = &l->v[l->n];
    memset(r, 0, sizeof *r);
    snprintf(r->key, sizeof r->key, "%s", key);
    r->first = UINT64_MAX;
    return (long)l->n++;
}

static void reason_count(reason *r, uint64_t idx, const char *example, double gib)
{
    r->count++;
    if (idx < r->first) {
        r->first = idx;
        snprintf(r->example, sizeof r->example, "%s", example);
    }
    if (gib > 0 && (r->min_gib == 0 || gib < r->min_gib))
        r->min_gib = gib;
}

/* The estimate's message with every number replaced by '#': one reason per rule. */
static void normalise(const char *msg, char *key, size_t cap)
{
    size_t n = 0;
    for (const char *p = msg; *p && n + 2 < cap;) {
        if (*p >= '0' && *p <= '9') {
            key[n++] = '#';
            while ((*p >= '0' && *p <= '9') || *p == '.')
                p++;
        } else {
            key[n++] = *p++;
        }
    }
    key[n] = 0;
}

/* ---- one candidate --------------------------------------------------------------------------- */

static int dominant_gap(const ps_estimate_result *r, double *sec)
{
    double v[] = {r->bubble_s,
                  r->exposed_s[PS_COMM_TP],
                  r->exposed_s[PS_COMM_CP],
                  r->exposed_s[PS_COMM_EP],
                  r->exposed_s[PS_COMM_PP],
                  r->exposed_s[PS_COMM_DP],
                  r->optimizer_s};
    int best = 0;
    for (int i = 1; i < 7; i++)
        if (v[i] > v[best])
            best = i;
    *sec = v[best];
    return best;
}

/* The records of candidate idx, visited by thread: in the whole space's array (job.record_all)
 * and in the thread's chunk (job.csv_write); NULL where there is none. */
static record *record_at(ps_tune *t, int thread, uint64_t idx, record **chunk)
{
    const worker *w = t->ws ? &t->ws[thread] : NULL;
    *chunk = w && w->crec ? &w->crec[idx - w->clo] : NULL;
    return t->recs ? &t->recs[idx] : NULL;
}

static void fill_record(record *x, int status, int reason_id, int thread,
                        const ps_estimate_result *r)
{
    int32_t rl = x->recompute_layers; /* set by evaluate before the outcome */
    memset(x, 0, sizeof *x);
    x->recompute_layers = rl;
    x->status = (uint8_t)status;
    x->reason = (uint16_t)reason_id;
    x->thread = (uint8_t)thread;
    if (r)
        x->step = r->step_time_s, x->tok = r->tokens_per_s_per_gpu, x->mfu = r->mfu,
        x->peak = r->peak_gib;
}

static void set_record(ps_tune *t, uint64_t idx, int status, int reason_id, int thread,
                       const ps_estimate_result *r)
{
    record *chunk, *x = record_at(t, thread, idx, &chunk);
    if (x)
        fill_record(x, status, reason_id, thread, r);
    if (chunk)
        fill_record(chunk, status, reason_id, thread, r);
}

/* Recompute fit: the layers found, before the outcome (set_record keeps them). */
static void set_layers(ps_tune *t, int thread, uint64_t idx, int32_t layers)
{
    record *chunk, *x = record_at(t, thread, idx, &chunk);
    if (x)
        x->recompute_layers = layers;
    if (chunk)
        chunk->recompute_layers = layers;
}

/* A dynamic reason of w (the estimate's refusal or the simulated memory): counted, recorded. */
static int count_dynamic(worker *w, uint64_t idx, int status, const char *key, const char *example,
                         double gib)
{
    long i = reason_find(&w->t->al, &w->dyn, key);
    if (i < 0)
        return PS_ENOMEM;
    if (i + PS__R_CHEAP > UINT16_MAX)
        return ps__seterr(w->err, PS_EINTERNAL, "tune: more than %d distinct reasons",
                          UINT16_MAX - PS__R_CHEAP);
    reason_count(&w->dyn.v[i], idx, example, gib);
    set_record(w->t, idx, status, PS__R_CHEAP + (int)i, w->id, NULL);
    return 0;
}

static void note_need(worker *w, double gib, int exact)
{
    if (w->need == 0 || gib < w->need || (gib == w->need && exact && !w->need_exact))
        w->need = gib, w->need_exact = exact;
}

/* A candidate whose peak memory (exact: simulated, or summed along the schedule without a
 * simulation, step 0) exceeds the limit. */
static int over_memory(worker *w, uint64_t idx, int32_t rank, double gib, double step)
{
    const ps__space *s = &w->t->sp;
    char key[KEY_LEN], ex[EXAMPLE_LEN];
    snprintf(key, sizeof key, "pipeline rank %d needs more than %.1f GiB", rank, s->limit_gib);
    snprintf(ex, sizeof ex, "rank %d needs %.1f GiB > %.1f GiB", rank, gib, s->limit_gib);
    w->over++;
    w->over_unsimulated += step == 0.0;
    note_need(w, gib, 1);
    int rc = count_dynamic(w, idx, ST_OVER_MEMORY, key, ex, gib);
    record *chunk, *x = record_at(w->t, w->id, idx, &chunk);
    if (x)
        x->step = step, x->peak = gib;
    if (chunk)
        chunk->step = step, chunk->peak = gib;
    return rc;
}

/* Lowers *at, a positive double as its bits (0: none), to step when less. Positive doubles
 * order as their bits. */
static void publish_min(_Atomic uint64_t *at, double step)
{
    uint64_t bits;
    memcpy(&bits, &step, sizeof bits);
    uint64_t old = atomic_load(at);
    while ((old == 0 || bits < old) && !atomic_compare_exchange_weak(at, &old, bits))
        ;
}

/* Lowers the shared best step to step when faster. */
static void publish_best(ps_tune *t, double step)
{
    publish_min(&t->best_bits, step);
}

static double bits_value(uint64_t bits)
{
    double v;
    memcpy(&v, &bits, sizeof v);
    return bits ? v : 0.0;
}

/*
 * The K-th best step time that w may prune against: the least of its own K-th best and of the
 * K-th best of any other thread or process (kth_bits). Each is the K-th of K configurations
 * that exist, so a candidate slower than it is not in the top K whoever found them; INFINITY
 * while nobody has K.
 */
static double kth_best(const worker *w, size_t k)
{
    double own = w->ntop == k ? w->top[k - 1].result.step_time_s : INFINITY;
    uint64_t bits = atomic_load(&w->t->kth_bits);
    double any = bits ? bits_value(bits) : INFINITY;
    return any < own ? any : own;
}

static double now_s(void);

/* The progress call (worker 0 only), at most every 0.2 s unless final. */
static void report(ps_tune *t, int final)
{
    const ps_tune_job *j = &t->sp.job;
    double now = now_s();
    if (!j->progress || (!final && now - t->reported < 0.2))
        return;
    t->reported = now;
    ps_tune_progress p;
    uint64_t bits = atomic_load(&t->best_bits);
    p.done = atomic_load(&t->done);
    p.total = t->owned;
    if (!final && p.done >= p.total)
        return; /* the final call says it, once */
    p.seconds = now - t->t0;
    p.best_step_s = bits_value(bits);
    j->progress(j->progress_ud, &p);
}

/*
 * With the imbalance (ps_tune_set_imbalance), the step a candidate is ranked by is the
 * balanced one (ps_edpb_estimate: placed experts, reordered samples). The estimate's bound is
 * of micro-batches of weight 1 and even expert loads. Even loads are the fastest (the factors
 * are >= 1 and only lengthen durations), but a reordering may put light micro-batches where
 * the pipeline's ramps make them count, so the step may fall below the even one. Every
 * micro-batch weighs at least w = (the mbs lightest samples) / (the mean slot), and the bound
 * of durations all scaled by w (w <= 1) is at least w times the bound of the even durations
 * (the transfers and the tail are not scaled): so w times the even bound bounds the step.
 */
static double imbalance_bound(const ps_tune *t, int32_t mbs)
{
    size_t n = t->nprefix - 1;
    if (!t->imb.samples || mbs < 1 || (size_t)mbs > n || !(t->prefix[n] > 0))
        return 1.0;
    double mean_slot = t->prefix[n] * mbs / (double)n;
    double w = t->prefix[mbs] / mean_slot;
    return w < 1 ? w : 1.0;
}

/* The row of a candidate with the imbalance: the even estimate's figures with the balanced
 * step time, and the throughput and MFU of that step. */
static void balanced_result(const ps_estimate *e, const ps_edpb_result *ir, ps_estimate_result *out)
{
    ps_estimate_result_get(e, out);
    double even = out->step_time_s, step = ir->balanced_step_time_s;
    out->step_time_s = step;
    out->tokens_per_s_per_gpu *= even / step;
    out->model_tflops_per_gpu *= even / step;
    out->mfu *= even / step;
}

static int evaluate(worker *w, uint64_t idx)
{
    ps_tune *t = w->t;
    const ps__space *s = &t->sp;
    ps_tune_row row;
    ps__cheap ch;
    memset(&row, 0, sizeof row);
    row.index = idx;
    decode(w, idx, &row.config);
    int why = ps__space_check(s, &row.config, &ch);
    if (why < 0 && row.config.knob[PS_KNOB_RECOMPUTE] == PS_TUNE_RECOMPUTE_FIT) {
        double gib;
        int rc = ps__space_fit(s, w->e, &row.config, &why, &gib, w->err);
        if (rc)
            return rc;
        if (why < 0)
            set_layers(t, w->id, idx, row.config.recompute_layers);
    }
    if (why == PS__R_MEMORY) {
        note_need(w, ch.static_gib, 0);
        if (w->mem_min == 0 || ch.static_gib < w->mem_min)
            w->mem_min = ch.static_gib;
    }
    if (why >= 0) {
        w->cheap[why]++;
        if (idx < w->cheap_first[why])
            w->cheap_first[why] = idx;
        set_record(t, idx, ST_REJECTED, why, w->id, NULL);
        return 0;
    }
    size_t k = (size_t)s->job.top_k;
    ps_train tr;
    ps_tune_config_train(&s->job, &row.config, &tr);
    /* The bounds and the exact peak memory, from the stage costs and the schedule without a
     * simulation; what the estimate refuses here it refuses in the run below, which counts it. */
    ps__estimate_lb lb;
    int rc = ps__estimate_bound(w->e, s->m, s->hw, &tr, 1, &lb);
    if (rc == PS_ENOMEM || rc == PS_EINTERNAL)
        return ps__seterr(w->err, rc, "%s", ps_estimate_last_error(w->e));
    if (rc) {
        memset(&lb, 0, sizeof lb);
        lb.mem_gib = ch.static_gib;
    }
    if (t->have_imb) /* the lightest micro-batches the samples can make (imbalance_bound) */
        lb.step_s *= imbalance_bound(t, row.config.knob[PS_KNOB_MBS]);
    if (lb.step_s < ch.step_lb_s)
        lb.step_s = ch.step_lb_s; /* both are lower bounds */
    if (!lb.mem_exact && lb.mem_gib < ch.static_gib)
        lb.mem_gib = ch.static_gib; /* layout auto: no exact peak, the static part bounds it */
    /* The bound sums the durations in another order than the simulation, so it may exceed a
     * step it equals by a few ulps: pruning compares it less a margin far above rounding, so
     * that a tie with a found configuration never prunes a point of the front. */
    double prune_lb = lb.step_s * (1.0 - 1e-9);
    if (lb.mem_exact && lb.mem_gib > s->limit_gib)
        return over_memory(w, idx, lb.peak_rank, lb.mem_gib, 0.0);
    /* A candidate slower than the K-th best and dominated by a configuration on the front is
     * in neither (docs/tune.md). One the estimate refused is not pruned: the run below counts
     * its reason, whatever the threads found. */
    if (!rc && !s->job.no_prune && prune_lb > kth_best(w, k) &&
        front_dominates(w, prune_lb, lb.mem_gib)) {
        w->pruned++;
        set_record(t, idx, ST_PRUNED, 0, w->id, NULL);
        return 0;
    }
    w->simulated++;
    const char *msg;
    if (t->have_imb) {
        ps_edpb_result ir;
        w->err[0] = 0;
        rc = ps_edpb_estimate(w->e, s->m, s->hw, &tr, &t->imb, &ir, NULL, NULL, w->err,
                              sizeof w->err);
        msg = w->err;
        if (!rc)
            balanced_result(w->e, &ir, &row.result);
    } else {
        rc = ps_estimate_run(w->e, s->m, s->hw, &tr);
        msg = ps_estimate_last_error(w->e);
        if (!rc)
            ps_estimate_result_get(w->e, &row.result);
    }
    if (rc == PS_ENOMEM || rc == PS_EINTERNAL)
        return ps__seterr(w->err, rc, "%s", msg);
    if (rc) {
        char key[KEY_LEN];
        normalise(msg, key, sizeof key);
        w->failed++;
        return count_dynamic(w, idx, ST_FAILED, key, msg, 0);
    }
    if (row.result.step_time_s < lb.step_s * (1 - 1e-12) ||
        row.result.peak_gib < lb.mem_gib * (1 - 1e-12))
        w->breaks++;
    if (row.result.peak_gib > s->limit_gib)
        return over_memory(w, idx, row.result.peak_rank, row.result.peak_gib,
                           row.result.step_time_s);
    w->fitting++;
    note_need(w, row.result.peak_gib, 1);
    row.gap = dominant_gap(&row.result, &row.gap_s);
    set_record(t, idx, ST_OK, 0, w->id, &row.result);
    publish_best(t, row.result.step_time_s);
    top_insert(w->top, &w->ntop, k, &row);
    if (w->ntop == k)
        publish_min(&t->kth_bits, w->top[k - 1].result.step_time_s);
    return front_insert(w, &row);
}

/*
 * Evaluates the candidates [lo, hi) so that the ones that differ only in the distributed
 * optimizer come one after the other: their simulations are the same, and the estimate reuses
 * the one before (docs/tune.md, "Reuse"). In the numbering they are stride apart whenever a
 * later knob (precision, a2a, layout) takes two values. The order changes no result: every
 * outcome is a function of the candidate, and the merge orders by candidate number.
 */
static void visit_range(worker *w, uint64_t lo, uint64_t hi)
{
    const ps__space *s = &w->t->sp;
    uint64_t stride = s->stride[PS_KNOB_DISTOPT], nv = (uint64_t)s->nv[PS_KNOB_DISTOPT];
    for (uint64_t x = lo; x < hi && !w->rc; x++) {
        uint64_t digit = (x / stride) % nv;
        if (digit != 0 && x - lo >= stride)
            continue; /* visited with the first member of its group in [lo, hi) */
        for (uint64_t y = x; digit < nv && y < hi && !w->rc; digit++, y += stride)
            w->rc = evaluate(w, y);
    }
}

/* The calling thread's exchange with the other processes (part.share), at most every 0.05 s:
 * this process's K-th best out, the best K-th known anywhere in. */
static void share_bound(ps_tune *t, int final)
{
    if (!t->part.share)
        return;
    double now = now_s();
    if (!final && now - t->shared < 0.05)
        return;
    t->shared = now;
    double any = t->part.share(t->part.ud, bits_value(atomic_load(&t->kth_bits)));
    if (any > 0)
        publish_min(&t->kth_bits, any);
}

/*
 * The chunks of this process: the space is cut into chunks of CHUNK numbers, and process
 * `part` of `parts` owns chunks part, part + parts, part + 2 parts, ... (a static interleave,
 * docs/tune.md "Across processes"); its threads take the owned chunks in order from one
 * counter (t->next, in owned chunks).
 */
static int owned_chunk(const ps_tune *t, uint64_t nth, uint64_t *lo, uint64_t *hi)
{
    uint64_t total = t->sp.total, chunk = nth * t->part.parts + t->part.part;
    if (chunk >= (total + CHUNK - 1) / CHUNK)
        return 0;
    *lo = chunk * CHUNK;
    *hi = total - *lo < CHUNK ? total : *lo + CHUNK;
    return 1;
}

static uint64_t owned_chunks(const ps_tune *t)
{
    uint64_t chunks = (t->sp.total + CHUNK - 1) / CHUNK;
    return chunks / t->part.parts + (t->part.part < chunks % t->part.parts);
}

static uint64_t owned_candidates(const ps_tune *t)
{
    uint64_t total = t->sp.total, chunks = (total + CHUNK - 1) / CHUNK;
    uint64_t n = owned_chunks(t) * CHUNK;
    if (chunks && (chunks - 1) % t->part.parts == t->part.part)
        n -= chunks * CHUNK - total; /* the last chunk is short */
    return n;
}

/* Counts the candidates [lo, hi) as rejected for the cheap check `why`, without decoding them. */
static void reject_range(worker *w, uint64_t lo, uint64_t hi, int why)
{
    w->cheap[why] += hi - lo;
    if (lo < w->cheap_first[why])
        w->cheap_first[why] = lo;
    for (uint64_t x = lo; x < hi && (w->t->recs || w->crec); x++)
        set_record(w->t, x, ST_REJECTED, why, w->id, NULL);
}

/*
 * Visits [lo, hi) a block at a time, a block being the candidates that share the knobs up to
 * the schedule (stride[PS_KNOB_SCHEDULE] numbers; the distributed optimizer's groups lie
 * inside one). Most of a large space fails a check that reads only those knobs (gpus by
 * tp.pp.cp, the family's vpp, the heads by tp, ...: ps__space_reason_level), and then every
 * candidate of the block, or of the larger block of the knobs up to pp, fails it in the same
 * way: they are counted together from the block's first candidate, which is the only one
 * decoded. The other blocks are visited candidate by candidate. The counts, the first
 * candidate of each reason and the records are those of visiting every candidate.
 */
static void visit_chunk(worker *w, uint64_t lo, uint64_t hi)
{
    const ps__space *s = &w->t->sp;
    uint64_t x = lo;
    while (x < hi && !w->rc) {
        ps_tune_config c;
        ps__cheap ch;
        decode(w, x, &c);
        int why = ps__space_check(s, &c, &ch);
        int level = why >= 0 ? ps__space_reason_level(why) : PS_KNOBS - 1;
        uint64_t block = s->stride[level < PS_KNOB_SCHEDULE ? level : PS_KNOB_SCHEDULE];
        uint64_t end = (x / block + 1) * block;
        if (end > hi)
            end = hi;
        if (level <= PS_KNOB_SCHEDULE)
            reject_range(w, x, end, why);
        else
            visit_range(w, x, end);
        x = end;
    }
}

/* ---- the CSV's lines ------------------------------------------------------------------------- */

/* The header into line (LINE_LEN bytes); its length. */
static size_t csv_header_line(char *line)
{
    int n = snprintf(line, LINE_LEN, "index");
    for (int k = 0; k < PS_KNOBS; k++)
        n += snprintf(line + n, LINE_LEN - (size_t)n, ",%s", ps_tune_knob_name(k));
    n += snprintf(line + n, LINE_LEN - (size_t)n,
                  ",recompute_layers,status,reason,step_time_s,tokens_per_s_per_gpu,mfu,"
                  "peak_gib\n");
    return (size_t)n;
}

/* A CSV field at dst: quoted, quotes doubled (at most 2 EXAMPLE_LEN + 4 bytes); its length. */
static size_t csv_quote(char *dst, const char *s)
{
    size_t n = 0, cap = 2 * EXAMPLE_LEN + 4;
    dst[n++] = '"';
    for (; *s && n + 4 < cap; s++) {
        if (*s == '"')
            dst[n++] = '"';
        dst[n++] = *s;
    }
    dst[n++] = '"';
    return n;
}

/* Candidate i's line into line (LINE_LEN bytes): its knobs, record r, the reason's text key
 * (read for the statuses that have a reason); its length. */
static size_t csv_row_line(const ps__space *sp, uint64_t i, const record *r, const char *key,
                           char *line)
{
    ps_tune_config c;
    ps__space_decode(sp, i, &c);
    int n = snprintf(line, 512, "%llu", (unsigned long long)i);
    for (int k = 0; k < PS_KNOBS; k++) {
        char w[32];
        ps_tune_value_name(k, c.knob[k], w, sizeof w);
        n += snprintf(line + n, 512 - (size_t)n, ",%s", w);
    }
    n += snprintf(line + n, 512 - (size_t)n, ",%d,%s,", (int)r->recompute_layers,
                  status_words[r->status]);
    size_t len = (size_t)n;
    if (r->status != ST_OK && r->status != ST_PRUNED)
        len += csv_quote(line + len, key);
    char *at = line + len;
    size_t cap = LINE_LEN - len;
    if (r->status == ST_OK || (r->status == ST_OVER_MEMORY && r->step > 0))
        n = snprintf(at, cap, ",%.9g,%.9g,%.9g,%.9g\n", r->step, r->tok, r->mfu, r->peak);
    else if (r->status == ST_OVER_MEMORY) /* found without a simulation: no step time */
        n = snprintf(at, cap, ",,,,%.9g\n", r->peak);
    else
        n = snprintf(at, cap, ",,,,\n");
    return len + (size_t)n;
}

/* ---- the CSV as the search goes (job.csv_write) ---------------------------------------------- */

static int csv_open(ps_tune *t, int threads)
{
    csv_stream *cs = &t->cs;
    memset(cs, 0, sizeof *cs);
    size_t n = 2 * (size_t)threads + 2;
    cs->slot = ps__calloc(&t->al, n, sizeof *cs->slot);
    if (!cs->slot)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory for the CSV's window");
    if (pthread_mutex_init(&cs->mu, NULL)) {
        ps__free(&t->al, cs->slot, n, sizeof *cs->slot);
        cs->slot = NULL;
        return ps__seterr(t->err, PS_EINTERNAL, "cannot create the CSV's lock");
    }
    if (pthread_cond_init(&cs->cv, NULL)) {
        pthread_mutex_destroy(&cs->mu);
        ps__free(&t->al, cs->slot, n, sizeof *cs->slot);
        cs->slot = NULL;
        return ps__seterr(t->err, PS_EINTERNAL, "cannot create the CSV's condition");
    }
    cs->n = n;
    return 0;
}

/* Frees the window; the high-water mark stays (ps__tune_csv_high). */
static void csv_close(ps_tune *t)
{
    csv_stream *cs = &t->cs;
    if (!cs->n)
        return;
    for (size_t i = 0; i < cs->n; i++)
        ps__free(&t->al, cs->slot[i].buf, cs->slot[i].cap, 1);
    ps__free(&t->al, cs->slot, cs->n, sizeof *cs->slot);
    pthread_cond_destroy(&cs->cv);
    pthread_mutex_destroy(&cs->mu);
    cs->slot = NULL;
    cs->n = 0;
}

size_t ps__tune_csv_high(const ps_tune *t)
{
    return t ? t->cs.high : 0;
}

uint64_t ps__tune_chunks(const ps_tune *t)
{
    return t ? (t->sp.total + CHUNK - 1) / CHUNK : 0;
}

/* Nobody waits for a slot any more: a write or a thread failed. */
static void csv_stop(ps_tune *t)
{
    csv_stream *cs = &t->cs;
    if (!cs->n)
        return;
    pthread_mutex_lock(&cs->mu);
    cs->stop = 1;
    pthread_cond_broadcast(&cs->cv);
    pthread_mutex_unlock(&cs->mu);
}

/* Waits until owned chunk nth's slot is free: 0, or 1 when the stream stopped. */
static int csv_begin(worker *w, uint64_t nth, uint64_t lo, uint64_t hi)
{
    csv_stream *cs = &w->t->cs;
    pthread_mutex_lock(&cs->mu);
    while (!cs->stop && nth >= cs->next + cs->n)
        pthread_cond_wait(&cs->cv, &cs->mu);
    int stop = cs->stop;
    pthread_mutex_unlock(&cs->mu);
    memset(w->crec, 0, (size_t)(hi - lo) * sizeof *w->crec);
    w->clo = lo;
    return stop;
}

/* Appends len bytes to slot s, growing it. */
static int slot_put(ps_tune *t, csv_slot *s, const char *data, size_t len)
{
    if (s->len + len > s->cap) {
        size_t cap = s->cap ? s->cap : 64 * LINE_LEN;
        while (cap < s->len + len)
            cap *= 2;
        char *b = ps__realloc(&t->al, s->buf, s->cap, cap, 1);
        if (!b)
            return PS_ENOMEM;
        csv_stream *cs = &t->cs;
        pthread_mutex_lock(&cs->mu);
        cs->bytes += cap - s->cap;
        if (cs->bytes > cs->high)
            cs->high = cs->bytes;
        pthread_mutex_unlock(&cs->mu);
        s->buf = b, s->cap = cap;
    }
    memcpy(s->buf + s->len, data, len);
    s->len += len;
    return 0;
}

/* Owned chunk nth's lines out: to the process's hook (part.csv_chunk) or to job.csv_write. */
static int csv_emit(ps_tune *t, uint64_t nth, const char *text, size_t len)
{
    if (t->part.csv_chunk)
        return t->part.csv_chunk(t->part.csv_ud, nth * t->part.parts + t->part.part, text, len);
    return len ? t->sp.job.csv_write(t->sp.job.csv_ud, text, len) : 0;
}

/* Writes the ready chunks from the next one on, unless another thread is writing them. */
static int csv_flush(worker *w)
{
    ps_tune *t = w->t;
    csv_stream *cs = &t->cs;
    int rc = 0;
    pthread_mutex_lock(&cs->mu);
    while (!cs->writing && !cs->stop) {
        csv_slot *s = &cs->slot[cs->next % cs->n];
        if (!s->ready || s->nth != cs->next)
            break;
        cs->writing = 1;
        pthread_mutex_unlock(&cs->mu);
        int bad = csv_emit(t, s->nth, s->buf, s->len);
        pthread_mutex_lock(&cs->mu);
        cs->writing = 0;
        s->ready = 0;
        cs->next++;
        if (bad) {
            cs->stop = 1;
            rc = ps__seterr(w->err, PS_EIO, "tune: writing the CSV failed (at candidate %llu)",
                            (unsigned long long)((s->nth * t->part.parts + t->part.part) * CHUNK));
        }
        pthread_cond_broadcast(&cs->cv);
    }
    pthread_mutex_unlock(&cs->mu);
    return rc;
}

/* The lines of owned chunk nth ([lo, hi), visited) into its slot, then written in turn. */
static int csv_end(worker *w, uint64_t nth, uint64_t lo, uint64_t hi)
{
    ps_tune *t = w->t;
    csv_stream *cs = &t->cs;
    csv_slot *s = &cs->slot[nth % cs->n];
    char line[LINE_LEN];
    s->len = 0;
    for (uint64_t x = lo; x < hi; x++) {
        const record *r = &w->crec[x - lo];
        const char *key = "";
        if (r->status != ST_OK && r->status != ST_PRUNED)
            key = r->reason < PS__R_CHEAP ? ps__tune_reason_text(r->reason)
                                          : w->dyn.v[r->reason - PS__R_CHEAP].key;
        if (slot_put(t, s, line, csv_row_line(&t->sp, x, r, key, line)))
            return ps__seterr(w->err, PS_ENOMEM, "out of memory for the CSV's lines");
    }
    pthread_mutex_lock(&cs->mu);
    s->nth = nth;
    s->ready = 1;
    pthread_mutex_unlock(&cs->mu);
    return csv_flush(w);
}

int ps__tune_csv_header(ps_write_fn write, void *ud)
{
    char line[LINE_LEN];
    return write(ud, line, csv_header_line(line)) ? PS_EIO : 0;
}

/* n more candidates evaluated; the first thread reports the progress. */
static void count_done(worker *w, uint64_t n)
{
    atomic_fetch_add(&w->t->done, n);
    if (w->id == 0)
        report(w->t, 0);
}

/* Visits [lo, hi) a chunk at a time, counting each done. */
static void visit_span(worker *w, uint64_t lo, uint64_t hi)
{
    for (uint64_t x = lo; x < hi && !w->rc;) {
        uint64_t end = hi - x < CHUNK ? hi : x + CHUNK;
        visit_chunk(w, x, end);
        count_done(w, end - x);
        x = end;
    }
}

/*
 * Unit u: the candidates with one value each of tp, cp, ep and expert tp (u numbers them in
 * that order), over every pp and the knobs after (one span of stride[PS_KNOB_ETP] numbers per
 * pp). Everything that sets a MoE model's layer costs (ps_moe_model) but pp lies in one unit:
 * the tp, cp, ep and expert tp, and inside each span the micro-batch size, recompute,
 * precision and all-to-all. Every thread keeps the overlap plans of the models it meets
 * (ps_estimate's simulator), and pp varies only the stages' layer counts, so a thread that
 * takes a whole unit plans each of its models once, where threads taking consecutive chunks
 * each met every model of every pp and planned it again (Pangu's space: 44% more CPU time
 * with 2 threads than with 1, before units).
 */
static void visit_unit(worker *w, uint64_t u)
{
    const ps__space *s = &w->t->sp;
    uint64_t base = 0;
    static const int key[] = {PS_KNOB_ETP, PS_KNOB_EP, PS_KNOB_CP, PS_KNOB_TP};
    for (size_t q = 0; q < sizeof key / sizeof *key; q++) {
        uint64_t n = (uint64_t)s->nv[key[q]];
        base += (u % n) * s->stride[key[q]];
        u /= n;
    }
    for (int32_t p = 0; p < s->nv[PS_KNOB_PP] && !w->rc; p++) {
        uint64_t lo = base + (uint64_t)p * s->stride[PS_KNOB_PP];
        visit_span(w, lo, lo + s->stride[PS_KNOB_ETP]);
    }
}

static void *work(void *arg)
{
    worker *w = arg;
    ps_tune *t = w->t;
    uint64_t lo, hi, nth;
    while (t->units && !w->rc && (nth = atomic_fetch_add(&t->next, 1)) < t->units)
        visit_unit(w, nth);
    while (!t->units && !w->rc && owned_chunk(t, nth = atomic_fetch_add(&t->next, 1), &lo, &hi)) {
        if (t->cs.n && csv_begin(w, nth, lo, hi))
            break;
        visit_chunk(w, lo, hi);
        if (t->cs.n && !w->rc)
            w->rc = csv_end(w, nth, lo, hi);
        count_done(w, hi - lo);
        if (w->id == 0)
            share_bound(t, 0);
    }
    if (w->rc) {
        atomic_store(&t->next, UINT64_MAX / 2); /* the others stop at their next chunk */
        csv_stop(t);
    }
    return NULL;
}

/* ---- the run --------------------------------------------------------------------------------- */

static int thread_count(const ps_tune_job *j, uint64_t chunks)
{
    long n = j->threads > 0 ? j->threads : sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    if ((uint64_t)n > chunks)
        n = chunks ? (long)chunks : 1;
    return (int)n;
}

static void free_workers(ps_tune *t, worker *w, int n)
{
    for (int i = 0; i < n; i++) {
        ps_estimate_free(w[i].e);
        ps__free(&t->al, w[i].top, (size_t)t->sp.job.top_k, sizeof *w[i].top);
        ps__free(&t->al, w[i].front, w[i].capfront, sizeof *w[i].front);
        ps__free(&t->al, w[i].dyn.v, w[i].dyn.cap, sizeof *w[i].dyn.v);
        ps__free(&t->al, w[i].crec, CHUNK, sizeof *w[i].crec);
    }
    ps__free(&t->al, w, (size_t)n, sizeof *w);
    t->ws = NULL;
}

static int start_workers(ps_tune *t, worker **out, int n)
{
    worker *w = ps__calloc(&t->al, (size_t)n, sizeof *w);
    if (!w)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory for %d threads", n);
    *out = w;
    t->ws = w;
    for (int i = 0; i < n; i++) {
        w[i].t = t;
        if (t->cs.n && !(w[i].crec = ps__alloc(&t->al, CHUNK, sizeof *w[i].crec)))
            return ps__seterr(t->err, PS_ENOMEM, "out of memory for thread %d", i);
        w[i].id = i;
        for (int r = 0; r < PS__R_CHEAP; r++)
            w[i].cheap_first[r] = UINT64_MAX;
        w[i].top = ps__alloc(&t->al, (size_t)t->sp.job.top_k, sizeof *w[i].top);
        if (!w[i].top || ps_estimate_new(&w[i].e, &t->al))
            return ps__seterr(t->err, PS_ENOMEM, "out of memory for thread %d", i);
    }
    return 0;
}

/* Runs the workers: the first on this thread, the others on their own. */
static int run_workers(ps_tune *t, worker *w, int n)
{
    int started = 1, rc = 0;
    for (int i = 1; i < n; i++, started++)
        if (pthread_create(&w[i].th, NULL, work, &w[i])) {
            rc = ps__seterr(t->err, PS_EINTERNAL, "cannot start thread %d of %d", i, n);
            atomic_store(&t->next, UINT64_MAX / 2);
            break;
        }
    work(&w[0]);
    for (int i = 1; i < started; i++)
        pthread_join(w[i].th, NULL);
    for (int i = 0; i < n && !rc; i++)
        if (w[i].rc)
            rc = ps__seterr(t->err, w[i].rc, "%s", w[i].err);
    return rc;
}

static int cmp_row(const void *a, const void *b)
{
    return before(a, b) ? -1 : before(b, a) ? 1 : 0;
}

static int cmp_reason(const void *a, const void *b)
{
    const reason *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first ? 1 : 0;
}

/* The merged top K and front. */
static int merge_rows(ps_tune *t, worker *w, int n)
{
    size_t k = (size_t)t->sp.job.top_k, all = 0;
    t->top = ps__alloc(&t->al, k, sizeof *t->top);
    for (int i = 0; i < n; i++)
        all += w[i].nfront;
    ps_tune_row *f = ps__alloc(&t->al, all ? all : 1, sizeof *f);
    if (!t->top || !f) {
        ps__free(&t->al, f, all ? all : 1, sizeof *f);
        return ps__seterr(t->err, PS_ENOMEM, "out of memory merging the results");
    }
    size_t nt = 0, nf = 0;
    for (int i = 0; i < n; i++) {
        for (size_t j = 0; j < w[i].ntop; j++)
            top_insert(t->top, &nt, k, &w[i].top[j]);
        if (w[i].nfront) /* a worker with no front may hold no array */
            memcpy(f + nf, w[i].front, w[i].nfront * sizeof *f);
        nf += w[i].nfront;
    }
    if (nf)
        qsort(f, nf, sizeof *f, cmp_row);
    size_t kept = 0;
    for (size_t i = 0; i < nf; i++)
        if (kept == 0 || f[i].result.peak_gib < f[kept - 1].result.peak_gib)
            f[kept++] = f[i];
    t->top_cap = k;
    t->ntop = nt;
    t->front = f;
    t->front_cap = all ? all : 1;
    t->nfront = kept;
    return 0;
}

/* The merged reasons: the cheap checks', then every thread's own, summed by text; each
 * record's reason becomes the index of its reason in the merged list. */
static int merge_reasons(ps_tune *t, worker *w, int n)
{
    reason_list *l = &t->reasons;
    for (int r = 0; r < PS__R_CHEAP; r++) {
        uint64_t count = 0, first = UINT64_MAX;
        double min_gib = 0;
        for (int i = 0; i < n; i++) {
            count += w[i].cheap[r];
            if (w[i].cheap_first[r] < first)
                first = w[i].cheap_first[r];
            if (r == PS__R_MEMORY && w[i].mem_min > 0 && (min_gib == 0 || w[i].mem_min < min_gib))
                min_gib = w[i].mem_min;
        }
        if (!count)
            continue;
        long at = reason_find(&t->al, l, ps__tune_reason_text(r));
        if (at < 0)
            return ps__seterr(t->err, PS_ENOMEM, "out of memory merging the reasons");
        l->v[at].count = count, l->v[at].first = first, l->v[at].min_gib = min_gib;
    }
    for (int i = 0; i < n; i++)
        for (size_t j = 0; j < w[i].dyn.n; j++) {
            const reason *d = &w[i].dyn.v[j];
            long at = reason_find(&t->al, l, d->key);
            if (at < 0)
                return ps__seterr(t->err, PS_ENOMEM, "out of memory merging the reasons");
            reason *g = &l->v[at];
            g->count += d->count;
            if (d->first < g->first) {
                g->first = d->first;
                memcpy(g->example, d->example, sizeof g->example);
            }
            if (d->min_gib > 0 && (g->min_gib == 0 || d->min_gib < g->min_gib))
                g->min_gib = d->min_gib;
        }
    /* Most frequent first; then the records learn their reason's place in that order. */
    if (l->n) /* no reason at all: l->v may be NULL */
        qsort(l->v, l->n, sizeof *l->v, cmp_reason);
    if (!t->recs)
        return 0;
    size_t dyn = 0;
    for (int i = 0; i < n; i++)
        dyn += w[i].dyn.n;
    size_t nmap = PS__R_CHEAP + dyn;
    uint16_t *map = ps__alloc(&t->al, nmap, sizeof *map);
    if (!map)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory merging the reasons");
    /* map[r] for the cheap reasons, then each thread's reasons in turn from base[thread]. */
    size_t base[MAX_THREADS], at = PS__R_CHEAP;
    for (size_t j = 0; j < nmap; j++) {
        const char *key = j < PS__R_CHEAP ? ps__tune_reason_text((int)j) : NULL;
        if (!key) {
            int i = 0;
            size_t off = j - PS__R_CHEAP;
            while (off >= w[i].dyn.n)
                off -= w[i].dyn.n, i++;
            key = w[i].dyn.v[off].key;
        }
        map[j] = 0;
        for (size_t g = 0; g < l->n; g++)
            if (!strcmp(l->v[g].key, key))
                map[j] = (uint16_t)g;
    }
    for (int i = 0; i < n; i++)
        base[i] = at, at += w[i].dyn.n;
    for (uint64_t x = 0; x < t->nrecs; x++) {
        record *r = &t->recs[x];
        if (r->status == ST_OK || r->status == ST_PRUNED)
            continue;
        r->reason = r->reason < PS__R_CHEAP ? map[r->reason]
                                            : map[base[r->thread] + r->reason - PS__R_CHEAP];
    }
    ps__free(&t->al, map, nmap, sizeof *map);
    return 0;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void merge_stats(ps_tune *t, worker *w, int n, double seconds)
{
    ps_tune_stats *st = &t->st;
    memset(st, 0, sizeof *st);
    st->candidates = t->owned;
    for (int i = 0; i < n; i++) {
        for (int r = 0; r < PS__R_CHEAP; r++)
            st->rejected += w[i].cheap[r];
        st->simulated += w[i].simulated;
        st->failed += w[i].failed;
        st->over_memory += w[i].over;
        st->fitting += w[i].fitting;
        st->pruned += w[i].pruned;
        st->bound_breaks += w[i].breaks;
        st->reused += ps__estimate_reused(w[i].e); /* each worker has a fresh handle */
        st->over_unsimulated += w[i].over_unsimulated;
        if (w[i].need > 0 && (st->min_need_gib == 0 || w[i].need < st->min_need_gib ||
                              (w[i].need == st->min_need_gib && w[i].need_exact))) {
            st->min_need_gib = w[i].need;
            st->min_need_exact = w[i].need_exact;
        }
    }
    st->seconds = seconds;
    st->candidates_per_s = seconds > 0 ? (double)st->candidates / seconds : 0;
    st->simulated_per_s = seconds > 0 ? (double)st->simulated / seconds : 0;
    st->threads = n;
    st->processes = 1;
    st->limit_gib = t->sp.limit_gib;
}

int ps_tune_set_imbalance(ps_tune *t, const ps_edpb_input *in)
{
    if (!t || (in && in->n_samples && !in->samples))
        return PS_EINVAL;
    t->have_imb = in && (in->samples || in->trace);
    if (t->have_imb)
        t->imb = *in;
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* What every candidate shares: the sample count is the global batch, the trace fits the
 * model; the sorted sample times' prefix sums for imbalance_bound. */
static int imbalance_setup(ps_tune *t, const ps_transformer *m, const ps_hardware *hw,
                           const ps_tune_job *job)
{
    const ps_edpb_input *in = &t->imb;
    free_prefix(t);
    if (!(in->theta >= 0 && in->theta < 1) || in->max_evals < 0)
        return ps__seterr(t->err, PS_ECONFIG,
                          "imbalance: theta %g must be in [0, 1) and max_evals %lld >= 0",
                          in->theta, (long long)in->max_evals);
    if (in->trace) {
        int32_t steps, layers, experts, moe = m->experts > 0 ? m->layers - m->first_dense : 0;
        if (ps_expert_trace_shape(in->trace, &steps, &layers, &experts))
            return ps__seterr(t->err, PS_ECONFIG, "expert load: the trace is empty");
        if (experts != m->experts || layers > moe)
            return ps__seterr(t->err, PS_ECONFIG,
                              "expert load: the trace has %d layers of %d experts; model %s has "
                              "%d MoE layers of %d experts",
                              (int)layers, (int)experts, m->name, (int)moe, (int)m->experts);
    }
    if (!in->samples)
        return 0;
    if ((double)in->n_samples != (double)job->gbs)
        return ps__seterr(t->err, PS_ECONFIG,
                          "samples: %zu given; the global batch is gbs %lld samples (dp x "
                          "micro-batches x mbs for every candidate)",
                          in->n_samples, (long long)job->gbs);
    ps_sample_model sm;
    int rc = ps_sample_model_derive(m, hw, &sm, t->err, sizeof t->err);
    if (rc)
        return rc;
    size_t n = in->n_samples;
    t->prefix = ps__alloc(&t->al, n + 1, sizeof *t->prefix);
    if (!t->prefix)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory");
    t->nprefix = n + 1;
    for (size_t i = 0; i < n; i++)
        t->prefix[i + 1] = ps_sample_time(&sm, &in->samples[i]);
    qsort(t->prefix + 1, n, sizeof *t->prefix, cmp_double);
    t->prefix[0] = 0;
    for (size_t i = 1; i <= n; i++)
        t->prefix[i] += t->prefix[i - 1];
    return 0;
}

int ps_tune_run(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                const ps_tune_job *job)
{
    ps__tune_part whole = {0, 1, NULL, NULL, NULL, NULL};
    return ps__tune_run_part(t, model, hw, job, &whole);
}

int ps__tune_run_part(ps_tune *t, const ps_transformer *model, const ps_hardware *hw,
                      const ps_tune_job *job, const ps__tune_part *part)
{
    if (!t)
        return PS_EINVAL;
    clear_results(t);
    t->err[0] = 0;
    t->sp.total = 0; /* no chunks (ps__tune_chunks) until the space is built */
    if (!model || !hw || !job || !part || part->parts < 1 || part->part >= part->parts)
        return ps__seterr(t->err, PS_EINVAL, "ps_tune_run needs a model, hardware and a job");
    t->part = *part;
    int rc = ps__space_build(&t->sp, model, hw, job, &t->k, t->err);
    if (!rc && t->have_imb)
        rc = imbalance_setup(t, model, hw, job);
    if (rc) {
        t->sp.total = 0; /* no chunks (ps__tune_chunks) */
        return rc;
    }
    if (job->record_all) {
        if (t->sp.total > SIZE_MAX / sizeof *t->recs)
            return ps__seterr(t->err, PS_ENOMEM, "%llu candidates are too many to record",
                              (unsigned long long)t->sp.total);
        t->recs = ps__calloc(&t->al, (size_t)t->sp.total, sizeof *t->recs);
        if (!t->recs)
            return ps__seterr(t->err, PS_ENOMEM, "out of memory recording %llu candidates",
                              (unsigned long long)t->sp.total);
        t->nrecs = t->sp.total;
    }
    int n = thread_count(job, owned_chunks(t));
    t->owned = owned_candidates(t);
    build_inner(t);
    worker *w = NULL;
    double t0 = now_s();
    atomic_store(&t->next, 0);
    /* Several threads of one process without a CSV stream (which goes in chunk order) take
     * units (visit_unit) when there are UNITS_PER_THREAD of them per thread at least, so that
     * the last units do not leave threads idle; one thread, a CSV, a share of several
     * processes or a space of fewer units (tp, cp, ep and expert tp mostly fixed) takes
     * chunks. */
    uint64_t units = (uint64_t)t->sp.nv[PS_KNOB_TP] * (uint64_t)t->sp.nv[PS_KNOB_CP] *
                     (uint64_t)t->sp.nv[PS_KNOB_EP] * (uint64_t)t->sp.nv[PS_KNOB_ETP];
    t->units =
        n > 1 && !job->csv_write && part->parts == 1 && units >= UNITS_PER_THREAD * (uint64_t)n
            ? units
            : 0;
    atomic_store(&t->done, 0);
    atomic_store(&t->best_bits, 0);
    atomic_store(&t->kth_bits, 0);
    t->t0 = t->reported = t0;
    t->shared = 0;
    t->cs.high = 0;
    if (job->csv_write && !part->csv_chunk) /* a process of several: its hook writes */
        rc = ps__tune_csv_header(job->csv_write, job->csv_ud)
                 ? ps__seterr(t->err, PS_EIO, "tune: writing the CSV's header failed")
                 : 0;
    if (!rc && job->csv_write)
        rc = csv_open(t, n);
    if (!rc)
        rc = start_workers(t, &w, n);
    if (!rc)
        rc = run_workers(t, w, n);
    if (!rc && t->cs.n && t->cs.next != owned_chunks(t))
        rc = ps__seterr(t->err, PS_EINTERNAL, "tune: %llu of %llu chunks of the CSV written",
                        (unsigned long long)t->cs.next, (unsigned long long)owned_chunks(t));
    csv_close(t);
    double seconds = now_s() - t0;
    if (!rc)
        rc = merge_rows(t, w, n);
    if (!rc)
        rc = merge_reasons(t, w, n);
    if (!rc)
        merge_stats(t, w, n, seconds);
    if (w)
        free_workers(t, w, n);
    if (rc) {
        clear_results(t);
        return rc;
    }
    t->have = 1;
    report(t, 1);
    return 0;
}

/* ---- results --------------------------------------------------------------------------------- */

int ps_tune_stats_get(const ps_tune *t, ps_tune_stats *out)
{
    if (!t || !out)
        return PS_EINVAL;
    if (!t->have)
        return PS_ESTATE;
    *out = t->st;
    return 0;
}

size_t ps_tune_top_count(const ps_tune *t)
{
    return t && t->have ? t->ntop : 0;
}

int ps_tune_top(const ps_tune *t, size_t i, ps_tune_row *out)
{
    if (!t || !out)
        return PS_EINVAL;
    if (!t->have)
        return PS_ESTATE;
    if (i >= t->ntop)
        return PS_EINVAL;
    *out = t->top[i];
    return 0;
}

size_t ps_tune_front_count(const ps_tune *t)
{
    return t && t->have ? t->nfront : 0;
}

int ps_tune_front(const ps_tune *t, size_t i, ps_tune_row *out)
{
    if (!t || !out)
        return PS_EINVAL;
    if (!t->have)
        return PS_ESTATE;
    if (i >= t->nfront)
        return PS_EINVAL;
    *out = t->front[i];
    return 0;
}

size_t ps_tune_reason_count(const ps_tune *t)
{
    return t && t->have ? t->reasons.n : 0;
}

int ps_tune_reason(const ps_tune *t, size_t i, const char **text, const char **example,
                   uint64_t *count)
{
    if (!t)
        return PS_EINVAL;
    if (!t->have)
        return PS_ESTATE;
    if (i >= t->reasons.n)
        return PS_EINVAL;
    const reason *r = &t->reasons.v[i];
    if (text)
        *text = r->key;
    if (example)
        *example = r->example;
    if (count)
        *count = r->count;
    return 0;
}

int ps_tune_write_csv(const ps_tune *t, ps_write_fn write, void *ud)
{
    if (!t || !write)
        return PS_EINVAL;
    if (!t->have || !t->recs)
        return PS_ESTATE;
    char line[LINE_LEN];
    if (write(ud, line, csv_header_line(line)))
        return PS_EIO;
    for (uint64_t i = 0; i < t->nrecs; i++) {
        const record *r = &t->recs[i];
        const char *key =
            r->status != ST_OK && r->status != ST_PRUNED ? t->reasons.v[r->reason].key : "";
        if (write(ud, line, csv_row_line(&t->sp, i, r, key, line)))
            return PS_EIO;
    }
    return 0;
}

size_t ps_tune_pareto3(const double *step, const double *peak, const int32_t *gpus, size_t n,
                       unsigned char *on)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        on[i] = 1;
        for (size_t j = 0; j < n && on[i]; j++) {
            int le = step[j] <= step[i] && peak[j] <= peak[i] && gpus[j] <= gpus[i];
            int lt = step[j] < step[i] || peak[j] < peak[i] || gpus[j] < gpus[i];
            if (le && lt)
                on[i] = 0;
        }
        count += on[i];
    }
    return count;
}

/* ---- across processes: one share's results as a buffer, and their merge ---------------------- */

#define PACK_MAGIC 0x31454e5554535050ull /* "PPSTUNE1" */

/* A pack: this head, then the top rows, the front rows, the reasons and the records of the
 * share's own candidates in number order (or, when rc < 0, the message). */
typedef struct pack_head {
    uint64_t magic;
    int32_t rc;
    uint32_t part, parts;
    uint64_t total, ntop, nfront, nreasons, nrecs, msg_len;
    ps_tune_stats st;
} pack_head;

int ps__tune_fail(ps_tune *t, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    return rc;
}

int ps__tune_pack(const ps_tune *t, int rc, void **out, size_t *len)
{
    if (!t || !out || !len)
        return PS_EINVAL;
    pack_head h;
    memset(&h, 0, sizeof h);
    h.magic = PACK_MAGIC;
    h.rc = rc;
    if (rc < 0) {
        h.msg_len = strlen(t->err) + 1;
    } else {
        if (!t->have)
            return PS_ESTATE;
        h.part = t->part.part, h.parts = t->part.parts, h.total = t->sp.total;
        h.ntop = t->ntop, h.nfront = t->nfront, h.nreasons = t->reasons.n;
        h.nrecs = t->recs ? t->owned : 0;
        h.st = t->st;
    }
    size_t n = sizeof h + h.ntop * sizeof *t->top + h.nfront * sizeof *t->front +
               h.nreasons * sizeof *t->reasons.v + h.nrecs * sizeof *t->recs + h.msg_len;
    char *buf = malloc(n), *at = buf;
    if (!buf)
        return PS_ENOMEM;
#define PUT(src, bytes) (memcpy(at, (src), (bytes)), at += (bytes))
    PUT(&h, sizeof h);
    if (rc < 0) {
        PUT(t->err, h.msg_len);
    } else {
        if (h.ntop)
            PUT(t->top, h.ntop * sizeof *t->top);
        if (h.nfront)
            PUT(t->front, h.nfront * sizeof *t->front);
        if (h.nreasons)
            PUT(t->reasons.v, h.nreasons * sizeof *t->reasons.v);
        uint64_t lo, hi;
        for (uint64_t c = 0; h.nrecs && owned_chunk(t, c, &lo, &hi); c++)
            PUT(t->recs + lo, (hi - lo) * sizeof *t->recs);
    }
#undef PUT
    *out = buf;
    *len = n;
    return 0;
}

/* The head of a pack whose length matches its counts, or NULL. */
static const pack_head *pack_parse(const void *pack, size_t len)
{
    pack_head h;
    if (!pack || len < sizeof h)
        return NULL;
    memcpy(&h, pack, sizeof h);
    if (h.magic != PACK_MAGIC)
        return NULL;
    uint64_t want = sizeof h;
    const uint64_t parts[][2] = {{h.ntop, sizeof(ps_tune_row)},
                                 {h.nfront, sizeof(ps_tune_row)},
                                 {h.nreasons, sizeof(reason)},
                                 {h.nrecs, sizeof(record)},
                                 {h.msg_len, 1}};
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (parts[i][0] > (UINT64_MAX - want) / parts[i][1])
            return NULL;
        want += parts[i][0] * parts[i][1];
    }
    if (want != len || (h.rc < 0 && (h.msg_len == 0 || ((const char *)pack)[len - 1])))
        return NULL;
    return pack; /* a malloc'd or received buffer: aligned for any type */
}

int ps__tune_pack_rc(const void *pack, size_t len, const char **msg)
{
    const pack_head *h = pack_parse(pack, len);
    if (!h)
        return PS_EINVAL;
    if (msg)
        *msg = h->rc < 0 ? (const char *)(h + 1) : "";
    return h->rc;
}

/* The index of key in the list l, which holds it. */
static uint16_t reason_index(const reason_list *l, const char *key)
{
    for (size_t g = 0; g < l->n; g++)
        if (!strcmp(l->v[g].key, key))
            return (uint16_t)g;
    return 0;
}

/* Adds the reasons v[n] to l (summed by text, as merge_reasons sums the threads'). */
static int add_reasons(ps_tune *t, reason_list *l, const reason *v, uint64_t n)
{
    for (uint64_t j = 0; j < n; j++) {
        long at = reason_find(&t->al, l, v[j].key);
        if (at < 0)
            return PS_ENOMEM;
        reason *g = &l->v[at];
        g->count += v[j].count;
        if (v[j].first < g->first) {
            g->first = v[j].first;
            memcpy(g->example, v[j].example, sizeof g->example);
        }
        if (v[j].min_gib > 0 && (g->min_gib == 0 || v[j].min_gib < g->min_gib))
            g->min_gib = v[j].min_gib;
    }
    return 0;
}

/* Record r's reason, an index into the list old, as an index into the list l. */
static void remap_record(record *r, const reason *old, const reason_list *l)
{
    if (r->status != ST_OK && r->status != ST_PRUNED)
        r->reason = reason_index(l, old[r->reason].key);
}

static void add_stats(ps_tune_stats *s, const ps_tune_stats *o)
{
    s->candidates += o->candidates;
    s->rejected += o->rejected;
    s->simulated += o->simulated;
    s->failed += o->failed;
    s->over_memory += o->over_memory;
    s->fitting += o->fitting;
    s->pruned += o->pruned;
    s->bound_breaks += o->bound_breaks;
    s->reused += o->reused;
    s->over_unsimulated += o->over_unsimulated;
    s->threads += o->threads;
    s->processes += o->processes;
    if (o->min_need_gib > 0 &&
        (s->min_need_gib == 0 || o->min_need_gib < s->min_need_gib ||
         (o->min_need_gib == s->min_need_gib && o->min_need_exact && !s->min_need_exact))) {
        s->min_need_gib = o->min_need_gib;
        s->min_need_exact = o->min_need_exact;
    }
}

int ps__tune_merge(ps_tune *t, const void *const *packs, const size_t *lens, size_t n,
                   double seconds)
{
    if (!t || (n && (!packs || !lens)))
        return PS_EINVAL;
    if (!t->have)
        return PS_ESTATE;
    const pack_head **h = ps__calloc(&t->al, n + 1, sizeof *h);
    if (!h)
        return ps__seterr(t->err, PS_ENOMEM, "out of memory merging the processes' results");
    size_t nfront = t->nfront, k = t->top_cap;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        h[i] = pack_parse(packs[i], lens[i]);
        if (!h[i] || h[i]->rc || h[i]->total != t->sp.total || h[i]->parts != t->part.parts ||
            h[i]->part == t->part.part || h[i]->ntop > k || (h[i]->nrecs > 0) != (t->recs != NULL))
            rc = ps__seterr(t->err, PS_EINVAL, "tune: result %zu of %zu is not of this search", i,
                            n);
        else
            nfront += h[i]->nfront;
        for (size_t j = 0; j < i && !rc; j++)
            if (h[j]->part == h[i]->part)
                rc = ps__seterr(t->err, PS_EINVAL, "tune: two results of share %u",
                                (unsigned)h[i]->part);
    }
    if (!rc && n + 1 != t->part.parts)
        rc = ps__seterr(t->err, PS_EINVAL, "tune: %zu results for %u shares", n + 1,
                        (unsigned)t->part.parts);
    ps_tune_row *front = rc ? NULL : ps__alloc(&t->al, nfront ? nfront : 1, sizeof *front);
    if (!rc && !front)
        rc = ps__seterr(t->err, PS_ENOMEM, "out of memory merging the processes' results");
    /* The reasons: the root's (sorted) first, then every pack's, summed by text. */
    reason_list l = {NULL, 0, 0};
    if (!rc && (add_reasons(t, &l, t->reasons.v, t->reasons.n)))
        rc = ps__seterr(t->err, PS_ENOMEM, "out of memory merging the reasons");
    for (size_t i = 0; i < n && !rc; i++) {
        const ps_tune_row *rows = (const ps_tune_row *)(h[i] + 1);
        const reason *rs = (const reason *)(rows + h[i]->ntop + h[i]->nfront);
        if (add_reasons(t, &l, rs, h[i]->nreasons))
            rc = ps__seterr(t->err, PS_ENOMEM, "out of memory merging the reasons");
    }
    if (rc) {
        ps__free(&t->al, front, nfront ? nfront : 1, sizeof *front);
        ps__free(&t->al, l.v, l.cap, sizeof *l.v);
        ps__free(&t->al, h, n + 1, sizeof *h);
        return rc;
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, cmp_reason);
    /* The top K and the front, ordered and filtered as merge_rows does the threads'. */
    size_t nf = t->nfront;
    if (nf)
        memcpy(front, t->front, nf * sizeof *front);
    for (size_t i = 0; i < n; i++) {
        const ps_tune_row *rows = (const ps_tune_row *)(h[i] + 1);
        for (uint64_t j = 0; j < h[i]->ntop; j++)
            top_insert(t->top, &t->ntop, k, &rows[j]);
        if (h[i]->nfront)
            memcpy(front + nf, rows + h[i]->ntop, h[i]->nfront * sizeof *front);
        nf += h[i]->nfront;
    }
    if (nf)
        qsort(front, nf, sizeof *front, cmp_row);
    size_t kept = 0;
    for (size_t i = 0; i < nf; i++)
        if (kept == 0 || front[i].result.peak_gib < front[kept - 1].result.peak_gib)
            front[kept++] = front[i];
    ps__free(&t->al, t->front, t->front_cap, sizeof *t->front);
    t->front = front;
    t->front_cap = nfront ? nfront : 1;
    t->nfront = kept;
    /* The records: the root's own renumbered, the others' copied into their chunks. */
    uint64_t lo, hi;
    for (uint64_t c = 0; t->recs && owned_chunk(t, c, &lo, &hi); c++)
        for (uint64_t x = lo; x < hi; x++)
            remap_record(&t->recs[x], t->reasons.v, &l);
    for (size_t i = 0; i < n; i++) {
        const ps_tune_row *rows = (const ps_tune_row *)(h[i] + 1);
        const reason *rs = (const reason *)(rows + h[i]->ntop + h[i]->nfront);
        const record *recs = (const record *)(rs + h[i]->nreasons);
        ps__tune_part own = t->part;
        t->part.part = h[i]->part; /* owned_chunk of that share */
        for (uint64_t c = 0, at = 0; h[i]->nrecs && owned_chunk(t, c, &lo, &hi); c++)
            for (uint64_t x = lo; x < hi && at < h[i]->nrecs; x++, at++) {
                t->recs[x] = recs[at];
                remap_record(&t->recs[x], rs, &l);
            }
        t->part = own;
    }
    ps__free(&t->al, t->reasons.v, t->reasons.cap, sizeof *t->reasons.v);
    t->reasons = l;
    /* The figures: summed; the candidates are the whole space's again. */
    for (size_t i = 0; i < n; i++)
        add_stats(&t->st, &h[i]->st);
    t->st.seconds = seconds;
    t->st.candidates_per_s = seconds > 0 ? (double)t->st.candidates / seconds : 0;
    t->st.simulated_per_s = seconds > 0 ? (double)t->st.simulated / seconds : 0;
    ps__free(&t->al, h, n + 1, sizeof *h);
    return 0;
}
