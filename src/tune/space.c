/*
 * The space of the search: every knob's value list, the numbering of the candidates, and the
 * cheap checks and bounds of one candidate (docs/tune.md states each list and each check).
 *
 * The value lists are what the machine and the model allow structurally (divisors of the
 * device count, tp within a node unless the user allows more, the families the engine has,
 * fp8 only when allowed and the hardware has it), narrowed by --fix/--allow/--max. Every
 * combination is a candidate; the checks below reject, one counted reason each, what
 * ps_estimate_run would refuse (same rules, same order of importance) and what cannot fit.
 * SPDX-License-Identifier: MIT
 */
#include "tune/tune_int.h"

#include "model/cost.h"
#include "model/estimate.h"

#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The families, with their vpp rule: 1 takes vpp = 1 only, 2 takes vpp = 2 (V placement),
 * -1 takes vpp > 1 only, 0 takes any, 3 takes 1 or 2. zb-auto is last and only in the space
 * when --allow names it (docs/tune.md); the estimate plans it on the loop placement with vpp
 * 1 and on the V with vpp 2 (place 3). */
static const struct {
    const char *name;
    int vpp;
    int place; /* 0 loop, 1 V, 2 bidirectional, 3 loop with vpp 1 and V with vpp 2 */
} families[PS__TUNE_FAMILIES] = {
    {"1f1b", 1, 0},      {"interleaved", -1, 0}, {"zb-h1", 1, 0},   {"zb-h2", 1, 0},
    {"zb-v", 2, 1},      {"v-half", 2, 1},       {"v-min", 2, 1},   {"dualpipe", 1, 2},
    {"dualpipev", 2, 1}, {"adaptive", 0, 0},     {"zb-auto", 3, 3},
};

enum {
    F_1F1B = 0,
    F_INTERLEAVED = 1,
    F_DUALPIPE = 7,
    F_DUALPIPEV = 8,
    F_ADAPTIVE = 9,
    F_ZB_AUTO = 10
};

static const char *const reason_text[PS__R_CHEAP] = {
    [PS__R_DEVICES] = "gpus not divisible by tp*pp*cp",
    [PS__R_PP1] = "pp = 1: only 1f1b (no pipeline to schedule)",
    [PS__R_VPP] =
        "the schedule does not take this vpp (1f1b, zb-h1, zb-h2, dualpipe: 1; zb-v, v-half, "
        "v-min, dualpipev: 2; zb-auto: 1 or 2; interleaved: > 1)",
    [PS__R_GROUP] = "group above 1 (a group size above pp): interleaved and adaptive with "
                    "vpp > 1 only",
    [PS__R_ADAPTIVE] = "warmup other than 1 or split-backward on: adaptive only",
    [PS__R_HEADS] = "heads not divisible by tp",
    [PS__R_KV] = "kv_heads and tp: neither divides the other",
    [PS__R_EXPERTS] = "experts not divisible by ep",
    [PS__R_EPETP] = "ep*etp does not divide dp*cp*tp",
    [PS__R_SEQ] = "seq not divisible by 2*cp",
    [PS__R_LAYERS] = "layers not divisible by pp*vpp (even split)",
    [PS__R_BALANCED] = "layout balanced: the layers divide evenly (the even split) or are fewer "
                       "than the stages",
    [PS__R_ENDS] = "layout first, last or first-last: no first/last stage layer counts give the "
                   "end rank(s) fewer layers than the middle ranks with the rest even, or the "
                   "split is the balanced one",
    [PS__R_STAGES] = "pp*vpp stages above the engine's limit",
    [PS__R_BATCH] = "gbs not divisible by dp*mbs",
    [PS__R_MICRO] = "micro-batches above the engine's limit",
    [PS__R_FAMILY_M] = "the schedule's conditions on pp and micro-batches (dualpipe: pp even, m "
                       "even, m >= 2pp; dualpipev: m >= 2pp; interleaved, adaptive with vpp > 1: "
                       "m >= the group size G, m mod G 0 or >= pp)",
    [PS__R_MEMORY] = "weights, gradients, optimizer state and overhead alone exceed the memory",
    [PS__R_FIT_AUTO] = "recompute fit with layout auto (the split depends on the recompute)",
    [PS__R_FIT_NONE] = "recompute fit: fits without recompute (the recompute none candidate)",
    [PS__R_FIT_FULL] = "recompute fit: only every layer recomputed can fit (the recompute full "
                       "candidate)",
};

const char *ps__tune_reason_text(int reason)
{
    return reason >= 0 && reason < PS__R_CHEAP ? reason_text[reason] : "";
}

/* ---- names and words ----------------------------------------------------------------------- */

static const char *const knob_names[PS_KNOBS] = {"tp",        "cp",
                                                 "pp",        "ep",
                                                 "etp",       "vpp",
                                                 "schedule",  "mbs",
                                                 "recompute", "distributed-optimizer",
                                                 "precision", "a2a",
                                                 "layout",    "group",
                                                 "warmup",    "split-backward"};

const char *ps_tune_knob_name(int knob)
{
    return knob >= 0 && knob < PS_KNOBS ? knob_names[knob] : NULL;
}

int ps_tune_knob_lookup(const char *name)
{
    if (!name)
        return PS_EINVAL;
    for (int k = 0; k < PS_KNOBS; k++)
        if (!strcmp(name, knob_names[k]))
            return k;
    if (!strcmp(name, "distopt"))
        return PS_KNOB_DISTOPT;
    return PS_ENOTFOUND;
}

const char *ps_tune_family_name(size_t i)
{
    return i < PS__TUNE_FAMILIES ? families[i].name : NULL;
}

static const char *const recompute_words[] = {"none", "selective", "full", "fit"};
static const char *const precision_words[] = {"bf16", "fp8"};
static const char *const a2a_words[] = {"auto", "flat", "hierarchical"};
static const char *const layout_words[] = {"even",  "balanced", "auto",
                                           "first", "last",     "first-last"};

static int word_index(const char *const *words, int n, const char *w)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(words[i], w))
            return i;
    return -1;
}

int ps_tune_value_parse(int knob, const char *word, int32_t *out)
{
    if (!word || !out || knob < 0 || knob >= PS_KNOBS)
        return PS_EINVAL;
    int i = -1;
    switch (knob) {
    case PS_KNOB_SCHEDULE: {
        ps_family_info fi;
        if (ps_family_lookup(word, &fi) < 0)
            return PS_ECONFIG;
        for (int f = 0; f < PS__TUNE_FAMILIES; f++)
            if (!strcmp(fi.name, families[f].name))
                i = f;
        break;
    }
    case PS_KNOB_RECOMPUTE:
        i = word_index(recompute_words, 4, word);
        break;
    case PS_KNOB_PRECISION:
        i = word_index(precision_words, 2, word);
        break;
    case PS_KNOB_A2A:
        i = word_index(a2a_words, 3, word);
        break;
    case PS_KNOB_LAYOUT:
        i = word_index(layout_words, PS__TUNE_LAYOUTS, word);
        break;
    case PS_KNOB_SPLIT:
    case PS_KNOB_DISTOPT: {
        static const char *const words[] = {"0", "off", "false", "no", "1", "on", "true", "yes"};
        i = word_index(words, 8, word);
        if (i >= 0)
            i = i >= 4;
        break;
    }
    default: {
        long long v = 0;
        const char *p = word;
        if (!*p)
            return PS_ECONFIG;
        for (; *p >= '0' && *p <= '9' && v <= 1LL << 31; p++)
            v = v * 10 + (*p - '0');
        if (*p || v > INT32_MAX)
            return PS_ECONFIG;
        i = (int)v;
    }
    }
    if (i < 0)
        return PS_ECONFIG;
    *out = i;
    return 0;
}

int ps_tune_value_name(int knob, int32_t v, char *buf, size_t cap)
{
    if (!buf || !cap || knob < 0 || knob >= PS_KNOBS)
        return PS_EINVAL;
    const char *w = NULL;
    if (knob == PS_KNOB_SCHEDULE && v >= 0 && v < PS__TUNE_FAMILIES)
        w = families[v].name;
    else if (knob == PS_KNOB_RECOMPUTE && v >= 0 && v < 4)
        w = recompute_words[v];
    else if (knob == PS_KNOB_PRECISION && v >= 0 && v < 2)
        w = precision_words[v];
    else if (knob == PS_KNOB_A2A && v >= 0 && v < 3)
        w = a2a_words[v];
    else if (knob == PS_KNOB_LAYOUT && v >= 0 && v < PS__TUNE_LAYOUTS)
        w = layout_words[v];
    else if (knob == PS_KNOB_DISTOPT || knob == PS_KNOB_SPLIT)
        w = v ? "on" : "off";
    int n = w ? snprintf(buf, cap, "%s", w) : snprintf(buf, cap, "%d", (int)v);
    return n < 0 ? PS_EINVAL : n;
}

void ps_tune_config_train(const ps_tune_job *j, const ps_tune_config *c, ps_train *t)
{
    ps_train_init(t);
    const int32_t *k = c->knob;
    t->gpus = j->gpus;
    t->gpus_per_node = j->gpus_per_node;
    t->gbs = j->gbs;
    t->seq = j->seq;
    t->tp = k[PS_KNOB_TP], t->cp = k[PS_KNOB_CP], t->pp = k[PS_KNOB_PP];
    t->ep = k[PS_KNOB_EP], t->etp = k[PS_KNOB_ETP], t->vpp = k[PS_KNOB_VPP];
    t->mbs = k[PS_KNOB_MBS];
    t->recompute = k[PS_KNOB_RECOMPUTE];
    if (t->recompute == PS_TUNE_RECOMPUTE_FIT) {
        t->recompute = PS_RECOMPUTE_FULL;
        t->recompute_layers = c->recompute_layers;
    }
    t->distributed_optimizer = k[PS_KNOB_DISTOPT];
    t->precision = k[PS_KNOB_PRECISION];
    t->a2a = k[PS_KNOB_A2A];
    int32_t lay = k[PS_KNOB_LAYOUT];
    t->layout = lay > 0 && lay < PS__TUNE_LAYOUTS ? layout_words[lay] : NULL;
    if (k[PS_KNOB_GROUP] > 1)
        t->group_size = k[PS_KNOB_GROUP] * k[PS_KNOB_PP];
    if (k[PS_KNOB_WARMUP] != 1)
        t->extra_warmup = k[PS_KNOB_WARMUP];
    t->split_backward = k[PS_KNOB_SPLIT];
    int f = k[PS_KNOB_SCHEDULE];
    snprintf(t->schedule, sizeof t->schedule, "%s",
             f >= 0 && f < PS__TUNE_FAMILIES ? families[f].name : "");
}

/* ---- the value lists ------------------------------------------------------------------------ */

/* Appends the divisors of n up to hi (ascending). */
static void divisors(int32_t *out, int32_t *nv, int64_t n, int64_t hi)
{
    for (int64_t d = 1; d <= n && d <= hi && *nv < PS__TUNE_MAXV; d++)
        if (n % d == 0)
            out[(*nv)++] = (int32_t)d;
}

static int has(const int32_t *v, int32_t n, int32_t x)
{
    for (int32_t i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* The word list of v[n] for a message. */
static void list_words(int knob, const int32_t *v, int32_t n, char *buf, size_t cap)
{
    size_t used = 0;
    buf[0] = 0;
    for (int32_t i = 0; i < n && used + 40 < cap; i++) {
        char w[32];
        ps_tune_value_name(knob, v[i], w, sizeof w);
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? ", " : "", w);
    }
}

/* The machine's and the model's candidates of knob k, before the constraints. `allowed`: the
 * user named values of k (tp above a node then becomes a candidate). */
static int candidates(const ps__space *s, int k, int allowed, int32_t *v, int32_t *n)
{
    const ps_transformer *m = s->m;
    int64_t g = s->job.gpus;
    *n = 0;
    switch (k) {
    case PS_KNOB_TP:
        divisors(v, n, g, allowed ? g : s->gpn);
        break;
    case PS_KNOB_CP:
        divisors(v, n, g, g);
        break;
    case PS_KNOB_PP:
        divisors(v, n, g, m->layers < PS_MAX_PP ? m->layers : PS_MAX_PP);
        break;
    case PS_KNOB_EP:
        if (m->experts > 0)
            divisors(v, n, m->experts, g);
        else
            v[(*n)++] = 1;
        break;
    case PS_KNOB_ETP:
        if (m->experts > 0)
            divisors(v, n, g, allowed ? g : s->gpn);
        else
            v[(*n)++] = 0;
        break;
    case PS_KNOB_VPP:
        /* 2 always: the V families' placement, with the balanced layout where it does not
         * divide the layers. */
        v[(*n)++] = 1;
        for (int32_t d = 2; d <= m->layers && d <= PS_MAX_VPP; d++)
            if (m->layers % d == 0 || d == 2)
                v[(*n)++] = d;
        break;
    case PS_KNOB_SCHEDULE:
        /* zb-auto plans each candidate with its costs under the device's memory (a schedule
         * per candidate, none kept): only when --allow names it. */
        for (int32_t f = 0; f < PS__TUNE_FAMILIES; f++)
            if (f != F_ZB_AUTO || allowed)
                v[(*n)++] = f;
        break;
    case PS_KNOB_MBS:
        divisors(v, n, s->job.gbs, 1 << 20);
        break;
    case PS_KNOB_RECOMPUTE:
        v[0] = PS_RECOMPUTE_NONE, v[1] = PS_RECOMPUTE_SELECTIVE, v[2] = PS_RECOMPUTE_FULL;
        v[3] = PS_TUNE_RECOMPUTE_FIT;
        *n = 4;
        break;
    case PS_KNOB_DISTOPT:
        v[0] = 0, v[1] = 1, *n = 2;
        break;
    case PS_KNOB_PRECISION:
        v[(*n)++] = PS_PREC_BF16;
        if (allowed && s->hw->peak_tflops_fp8 > 0)
            v[(*n)++] = PS_PREC_FP8;
        break;
    case PS_KNOB_A2A:
        if (m->experts > 0)
            v[0] = PS_A2A_FLAT, v[1] = PS_A2A_HIERARCHICAL, *n = 2;
        else
            v[(*n)++] = PS_A2A_AUTO;
        break;
    case PS_KNOB_LAYOUT:
        /* "auto" (the estimate's automatic partition) only when --allow names it: it simulates
         * several splits per candidate and has no exact memory or step bound (docs/tune.md). */
        v[0] = 0, v[1] = 1, *n = 2;
        if (allowed)
            v[(*n)++] = 2;
        /* Megatron's first/last stage counts: the end rank(s) with fewer layers, the split
         * closest to even of that shape (ps_layout_end_counts; docs/tune.md). */
        for (int32_t x = 3; x < PS__TUNE_LAYOUTS; x++)
            v[(*n)++] = x;
        break;
    case PS_KNOB_GROUP:
        /* Megatron takes a group size G in [pp, m] with m mod G 0 or >= pp; m is a multiple of
         * pp here, so the multiples of pp are the sizes that apply (docs/tune.md). 2 pp leaves
         * pp forwards of slack for the transfers around the ring; more only adds memory. A
         * knob doubles the candidates for a gain below 1%, so pp alone unless --allow names
         * more. */
        v[(*n)++] = 1;
        if (allowed)
            for (int32_t x = 2; x <= 64; x++)
                v[(*n)++] = x;
        break;
    case PS_KNOB_WARMUP:
        /* Adaptive Pipe's extra warm-up forwards delta (the family's default 1): each more
         * holds one more micro-batch of activations; like the group, a second value doubles
         * the candidates, so 1 alone unless --allow names more (docs/tune.md). */
        v[(*n)++] = 1;
        if (allowed)
            for (int32_t x = 2; x <= 16; x++)
                v[(*n)++] = x;
        break;
    case PS_KNOB_SPLIT:
        v[(*n)++] = 0;
        if (allowed)
            v[(*n)++] = 1;
        break;
    }
    return 0;
}

static int check_job(const ps_tune_job *j, char *err)
{
    if (j->gpus < 1)
        return ps__seterr(err, PS_ECONFIG, "gpus must be >= 1; got %d", j->gpus);
    if (j->gbs < 1 || j->seq < 1)
        return ps__seterr(err, PS_ECONFIG, "gbs and seq must be >= 1; got gbs %lld, seq %d",
                          (long long)j->gbs, j->seq);
    if (j->top_k < 1)
        return ps__seterr(err, PS_ECONFIG, "top must be >= 1; got %d", j->top_k);
    if (j->threads < 0 || j->gpus_per_node < 0)
        return ps__seterr(err, PS_ECONFIG, "threads and gpus_per_node must be >= 0; got %d, %d",
                          j->threads, j->gpus_per_node);
    if (!(j->mem_reserve_gib >= 0))
        return ps__seterr(err, PS_ECONFIG, "mem_reserve_gib must be >= 0; got %g",
                          j->mem_reserve_gib);
    return 0;
}

int ps__space_build(ps__space *s, const ps_transformer *m, const ps_hardware *hw,
                    const ps_tune_job *job, const ps__constraints *k, char *err)
{
    int rc;
    if ((rc = check_job(job, err)))
        return rc;
    if ((rc = ps_transformer_check(m, err, PS__ERRLEN)) ||
        (rc = ps_hardware_check(hw, err, PS__ERRLEN)))
        return rc;
    memset(s, 0, sizeof *s);
    s->m = m, s->hw = hw, s->job = *job;
    s->gpn = job->gpus_per_node > 0 ? job->gpus_per_node : hw->devices_per_node;
    if (s->gpn < 1)
        return ps__seterr(err, PS_ECONFIG, "devices per node must be >= 1; got %d", s->gpn);
    s->limit_gib = hw->hbm_gib - job->mem_reserve_gib;
    if (!(s->limit_gib > 0))
        return ps__seterr(err, PS_ECONFIG,
                          "mem_reserve_gib %g leaves no memory of the %g GiB of %s",
                          job->mem_reserve_gib, hw->hbm_gib, hw->name);
    if (k->nallow[PS_KNOB_PRECISION] &&
        has(k->allow[PS_KNOB_PRECISION], k->nallow[PS_KNOB_PRECISION], PS_PREC_FP8) &&
        !(hw->peak_tflops_fp8 > 0))
        return ps__seterr(err, PS_ECONFIG,
                          "precision fp8 is allowed, but hardware %s has no "
                          "FP8 peak (peak_tflops_fp8 = 0)",
                          hw->name);
    uint64_t total = 1;
    for (int i = PS_KNOBS - 1; i >= 0; i--) {
        int32_t cand[PS__TUNE_MAXV], nc;
        int named = k->nallow[i] > 0;
        candidates(s, i,
                   named && (i != PS_KNOB_PRECISION || has(k->allow[i], k->nallow[i], PS_PREC_FP8)),
                   cand, &nc);
        int32_t *v = s->vals[i], n = 0;
        for (int32_t c = 0; c < nc; c++)
            if ((!named || has(k->allow[i], k->nallow[i], cand[c])) &&
                (k->max[i] <= 0 || cand[c] <= k->max[i]))
                v[n++] = cand[c];
        if (n == 0) {
            char cw[512], aw[512];
            list_words(i, cand, nc, cw, sizeof cw);
            if (named)
                list_words(i, k->allow[i], k->nallow[i], aw, sizeof aw);
            else
                aw[0] = 0;
            char mx[48] = "";
            if (k->max[i] > 0)
                snprintf(mx, sizeof mx, "%sat most %d", named ? " and " : "", (int)k->max[i]);
            return ps__seterr(err, PS_ECONFIG,
                              "no value of %s is left: its candidates are %s%s; the constraints "
                              "allow %s%s",
                              knob_names[i], nc ? cw : "none",
                              i == PS_KNOB_TP && !named ? " (tp within a node; --allow tp=N "
                                                          "for more)"
                                                        : "",
                              aw, mx);
        }
        s->nv[i] = n;
        s->stride[i] = total;
        if (total > UINT64_MAX / (uint64_t)n)
            return ps__seterr(err, PS_ERANGE, "the space has more than 2^64 candidates");
        total *= (uint64_t)n;
    }
    s->total = total;
    double tokens = (double)job->gbs * job->seq;
    s->flops = ps__model_flops(m, tokens, job->seq);
    /* The attention term of the model FLOPs is the part linear in seq; a third of each part
     * (forward, input gradient, weight gradient) is the forward. */
    s->flops_rec[PS_RECOMPUTE_SELECTIVE] = (s->flops - ps__model_flops(m, tokens, 0)) / 3.0;
    s->flops_rec[PS_RECOMPUTE_FULL] =
        (s->flops - 6.0 * (double)m->vocab * m->hidden * tokens) / 3.0;
    ps__layer_params(m, 0, &s->dl, &s->el);
    ps__layer_params(m, 1, &s->dm, &s->em);
    return 0;
}

void ps__space_decode(const ps__space *s, uint64_t idx, ps_tune_config *c)
{
    for (int i = 0; i < PS_KNOBS; i++) {
        uint64_t d = idx / s->stride[i];
        idx -= d * s->stride[i];
        c->knob[i] = s->vals[i][d];
    }
    c->recompute_layers = 0;
}

/* ---- checks and bounds ---------------------------------------------------------------------- */

/* The split of a candidate: the layout knob, and for first/last the layers per chunk of the
 * first rank, of a middle rank and of the last (ps_layout_end_counts). */
typedef struct split {
    int32_t layout, pp, nst;
    int32_t a[3];
} split;

static void split_of(const ps__space *s, const int32_t *k, int32_t nst, split *x)
{
    x->layout = k[PS_KNOB_LAYOUT], x->pp = k[PS_KNOB_PP], x->nst = nst;
    if (x->layout >= 3) {
        int32_t vpp = nst / x->pp, f = 0, l = 0, layers = s->m->layers;
        ps_layout_end_counts(x->layout - 2, x->pp, vpp, layers, &f, &l); /* checked before */
        int32_t mid = (layers - f - l) / vpp / (x->pp - (f > 0) - (l > 0));
        x->a[0] = f > 0 ? f / vpp : mid, x->a[1] = mid, x->a[2] = l > 0 ? l / vpp : mid;
    }
}

/* The first decoder layer and the count of virtual stage st of x: the even split, the
 * balanced one (layout.c, ps_layout_balanced_count: the stages before st hold q layers each
 * and the extra ones of them one more), or first/last (chunk c of rank r is stage c.pp + r;
 * each chunk of ranks holds layers / vpp). */
static void stage_span(int32_t layers, const split *x, int32_t st, int32_t *first, int32_t *count)
{
    int32_t nst = x->nst, q = layers / nst;
    if (x->layout >= 3) {
        int32_t pp = x->pp, r = st % pp, vpp = nst / pp;
        *count = x->a[r == 0 ? 0 : r == pp - 1 ? 2 : 1];
        *first = st / pp * (layers / vpp) + (r > 0 ? x->a[0] + (r - 1) * x->a[1] : 0);
        return;
    }
    if (!x->layout) {
        *first = st * q, *count = q;
        return;
    }
    int32_t r = layers % nst, before = 0;
    if (r > 0 && st > 0)
        before = (st - 1 < r ? st - 1 : r) + (r == nst - 1 ? 1 : 0); /* stages 1.. and 0 */
    *first = st * q + before;
    *count = ps_layout_balanced_count(layers, nst, st);
}

/* Parameters (dense / expert, sharded) of virtual stages st of one model copy, split evenly:
 * what estimate.c's rank_params counts (decoder layers, embedding, final norm and an untied
 * output layer; no MTP layers). */
static void stage_params(const ps__space *s, const int32_t *k, const split *x, int32_t st,
                         int tied_here, double *pd, double *pe)
{
    const ps_transformer *m = s->m;
    int32_t tp = k[PS_KNOB_TP], first, count, nst = x->nst;
    stage_span(m->layers, x, st, &first, &count);
    double etp = k[PS_KNOB_ETP] > 0 ? k[PS_KNOB_ETP] : tp;
    double emb = (double)m->vocab * m->hidden / tp;
    for (int32_t l = first; l < first + count; l++) {
        int moe = ps__is_moe_layer(m, l);
        *pd += (moe ? s->dm : s->dl) / tp;
        *pe += moe ? s->em / ((double)k[PS_KNOB_EP] * etp) : 0.0;
    }
    if (st == 0)
        *pd += emb;
    if (st == nst - 1) {
        *pd += m->hidden / (double)tp;
        if (!tied_here)
            *pd += emb;
    }
}

void ps__space_bounds(const ps__space *s, const ps_tune_config *c, int32_t dp, double *static_gib,
                      double *step_lb_s)
{
    const int32_t *k = c->knob;
    const ps_hardware *hw = s->hw;
    int32_t pp = k[PS_KNOB_PP], f = k[PS_KNOB_SCHEDULE];
    int place = families[f].place == 3 ? k[PS_KNOB_VPP] == 2 : families[f].place;
    int32_t vpp = place == 1 ? 2 : k[PS_KNOB_VPP];
    int32_t nst = pp * vpp;
    split x;
    split_of(s, k, nst, &x);
    double tp = k[PS_KNOB_TP], etp = k[PS_KNOB_ETP] > 0 ? k[PS_KNOB_ETP] : tp;
    double dd = (double)dp * k[PS_KNOB_CP], edp = dd * tp / (k[PS_KNOB_EP] * etp);
    int dist = k[PS_KNOB_DISTOPT];
    double worst = 0.0, sum = 0.0, opt_sum = 0.0;
    for (int32_t r = 0; r < pp; r++) {
        int32_t st[PS_MAX_VPP];
        int32_t n = 0;
        if (place == 0) {
            for (int32_t ch = 0; ch < vpp; ch++)
                st[n++] = ch * pp + r;
        } else if (place == 1) {
            st[n++] = r, st[n++] = 2 * pp - 1 - r;
        } else {
            st[n++] = r, st[n++] = pp - 1 - r;
        }
        int has_emb = 0;
        for (int32_t i = 0; i < n; i++)
            has_emb |= st[i] == 0;
        double pd = 0.0, pe = 0.0;
        for (int32_t i = 0; i < n; i++)
            stage_params(s, k, &x, st[i], s->m->tied_embeddings && has_emb, &pd, &pe);
        double p = pd + pe;
        double held = dist ? pd / dd + pe / edp : p;
        double gib = (6.0 * p + 12.0 * held) / GIB + hw->overhead_gib;
        if (gib > worst)
            worst = gib;
        sum += gib;
        opt_sum += 16.0 * held / (hw->hbm_gbps * 1e9 * hw->mem_eff);
    }
    /* Layout auto chooses the split: the largest rank holds at least the mean, which no split
     * changes (each rank's figure is linear in its parameters, and the stages' ranks and the
     * embedding's place do not depend on the split). */
    *static_gib = k[PS_KNOB_LAYOUT] == 2 ? sum / pp : worst;
    /* Every device's compute is at least its share of the model FLOPs at the fastest rate any
     * of its kernels reaches (a GEMM at the precision's peak times gemm_eff, the attention core
     * at the BF16 peak times attn_eff; the shape efficiency and everything memory-bound only
     * slow it); a rank ends its step after its compute and then its optimizer step, so the
     * step is at least the mean over ranks of both (docs/tune.md). */
    double gemm = hw->peak_tflops_bf16;
    if (k[PS_KNOB_PRECISION] == PS_PREC_FP8 && hw->peak_tflops_fp8 > gemm)
        gemm = hw->peak_tflops_fp8;
    double peak = gemm * hw->gemm_eff, attn = hw->peak_tflops_bf16 * hw->attn_eff;
    if (attn > peak)
        peak = attn;
    double flops = s->flops + s->flops_rec[k[PS_KNOB_RECOMPUTE]];
    *step_lb_s = flops / ((double)s->job.gpus * peak * 1e12) + opt_sum / pp;
}

/* The checks of ps__space_check read, in their order: gpus % (tp.pp.cp) the knobs up to pp; the
 * family's rules on pp and vpp, heads and kv_heads by tp, the experts by ep, ep.etp against
 * dp.cp.tp and seq by cp the knobs up to the schedule; from the layer split on (layout) every
 * knob. Keep this table in step with the checks (tests/test-tune.c checks it on whole spaces). */
int ps__space_reason_level(int reason)
{
    if (reason == PS__R_DEVICES)
        return PS_KNOB_PP;
    if (reason >= PS__R_PP1 && reason <= PS__R_SEQ)
        return PS_KNOB_SCHEDULE;
    return PS_KNOBS - 1;
}

int ps__space_check(const ps__space *s, const ps_tune_config *c, ps__cheap *out)
{
    const ps_transformer *m = s->m;
    const int32_t *k = c->knob;
    int32_t tp = k[PS_KNOB_TP], cp = k[PS_KNOB_CP], pp = k[PS_KNOB_PP], ep = k[PS_KNOB_EP];
    int32_t vpp = k[PS_KNOB_VPP], f = k[PS_KNOB_SCHEDULE], mbs = k[PS_KNOB_MBS];
    int32_t etp = k[PS_KNOB_ETP] > 0 ? k[PS_KNOB_ETP] : tp;
    int64_t tpc = (int64_t)tp * pp * cp;
    if (s->job.gpus % tpc)
        return PS__R_DEVICES;
    if (pp == 1 && (f != F_1F1B || vpp != 1))
        return PS__R_PP1;
    int rule = families[f].vpp;
    if ((rule == 3 && vpp > 2) || (rule > 0 && rule < 3 && vpp != rule) || (rule < 0 && vpp < 2))
        return PS__R_VPP;
    int32_t dp = (int32_t)(s->job.gpus / tpc);
    int32_t g = m->kv_heads > 0 ? m->kv_heads : m->heads;
    if (m->heads % tp)
        return PS__R_HEADS;
    if (g >= tp ? g % tp : tp % g)
        return PS__R_KV;
    if (m->experts > 0) {
        if (m->experts % ep)
            return PS__R_EXPERTS;
        if (((int64_t)dp * cp * tp) % ((int64_t)ep * etp))
            return PS__R_EPETP;
    }
    if (cp > 1 && s->job.seq % (2 * cp))
        return PS__R_SEQ;
    /* After the checks that read only the knobs up to the schedule (ps__space_reason_level):
     * these read the group and adaptive's options, which vary inside such a block. */
    int32_t group = k[PS_KNOB_GROUP];
    if (group > 1 && !((f == F_INTERLEAVED || f == F_ADAPTIVE) && vpp > 1))
        return PS__R_GROUP;
    if ((k[PS_KNOB_WARMUP] != 1 || k[PS_KNOB_SPLIT]) && f != F_ADAPTIVE)
        return PS__R_ADAPTIVE;
    int64_t copies = families[f].place == 2 ? 2 : 1;
    int64_t nst = (int64_t)pp * vpp;
    if (!k[PS_KNOB_LAYOUT] && m->layers % nst)
        return PS__R_LAYERS;
    if (k[PS_KNOB_LAYOUT] == 1 && (m->layers % nst == 0 || m->layers < nst))
        return PS__R_BALANCED;
    if (k[PS_KNOB_LAYOUT] == 2 && k[PS_KNOB_RECOMPUTE] == PS_TUNE_RECOMPUTE_FIT)
        return PS__R_FIT_AUTO;
    if (k[PS_KNOB_LAYOUT] >= 3) {
        /* first/last: Megatron's rule leaves no such split, or (vpp 1 only) it is the balanced
         * one: the last rank one layer short of the others when the layers are 1 short of a
         * multiple of pp, both ends one short when 2 short (test-layout checks the rule). */
        int ends = k[PS_KNOB_LAYOUT] - 2;
        int32_t fl, ll, r = m->layers % pp;
        if (ps_layout_end_counts(ends, pp, vpp, m->layers, &fl, &ll) ||
            (vpp == 1 && ((ends == 2 && r == pp - 1) || (ends == 3 && r == pp - 2))))
            return PS__R_ENDS;
    }
    if ((int64_t)pp * vpp * copies > PS_MAX_STAGES)
        return PS__R_STAGES;
    if (s->job.gbs % ((int64_t)dp * mbs))
        return PS__R_BATCH;
    int64_t micro = s->job.gbs / ((int64_t)dp * mbs);
    if (micro > PS_MAX_MICROBATCHES)
        return PS__R_MICRO;
    if ((f == F_DUALPIPE && (pp % 2 || micro % 2 || micro < 2 * pp)) ||
        (f == F_DUALPIPEV && micro < 2 * pp) ||
        ((f == F_INTERLEAVED || f == F_ADAPTIVE) && vpp > 1 &&
         (micro < (int64_t)group * pp ||
          (micro % ((int64_t)group * pp) && micro % ((int64_t)group * pp) < pp))))
        return PS__R_FAMILY_M;
    out->dp = dp;
    out->micro = micro;
    ps__space_bounds(s, c, dp, &out->static_gib, &out->step_lb_s);
    if (out->static_gib > s->limit_gib)
        return PS__R_MEMORY;
    return -1;
}

/* ---- recompute "fit" ------------------------------------------------------------------------ */

/* The exact peak memory (GiB) of c with recompute r and n layers per stage recomputed: 0 with
 * *gib set, 1 when the estimate refuses it, or PS_ENOMEM / PS_EINTERNAL. */
static int fit_peak(const ps__space *s, struct ps_estimate *e, const ps_tune_config *c, int32_t r,
                    int32_t n, double *gib, char *err)
{
    ps_tune_config x = *c;
    x.knob[PS_KNOB_RECOMPUTE] = r == PS_RECOMPUTE_FULL ? PS_TUNE_RECOMPUTE_FIT : r;
    x.recompute_layers = n;
    ps_train tr;
    ps_tune_config_train(&s->job, &x, &tr);
    ps__estimate_lb lb;
    int rc = ps__estimate_bound(e, s->m, s->hw, &tr, 1, &lb);
    if (rc == PS_ENOMEM || rc == PS_EINTERNAL)
        return ps__seterr(err, rc, "%s", ps_estimate_last_error(e));
    if (rc || !lb.mem_exact)
        return 1;
    *gib = lb.mem_gib;
    return 0;
}

/*
 * Memory does not grow with the layers recomputed: a recomputed layer keeps its input instead
 * of its activations and frees its weight-gradient inputs, and the working set of full
 * recompute (one layer's activations) is the same for every count from 1. So the fewest that
 * fit is found by bisection over [1, L-1], L the largest stage's layers (from L on every stage
 * recomputes all its layers: the "full" candidate).
 */
int ps__space_fit(const ps__space *s, struct ps_estimate *e, ps_tune_config *c, int *why,
                  double *gib, char *err)
{
    const int32_t *k = c->knob;
    int32_t f = k[PS_KNOB_SCHEDULE];
    int32_t nst = k[PS_KNOB_PP] * (families[f].place == 1 ? 2 : k[PS_KNOB_VPP]);
    int32_t most = 0, first, count;
    split x;
    split_of(s, k, nst, &x);
    for (int32_t st = 0; st < nst; st++) {
        stage_span(s->m->layers, &x, st, &first, &count);
        most = count > most ? count : most;
    }
    c->recompute_layers = 1;
    *why = -1;
    *gib = 0.0;
    double g;
    int rc = fit_peak(s, e, c, PS_RECOMPUTE_NONE, 0, &g, err);
    if (rc)
        return rc < 0 ? rc : 0;
    if (g <= s->limit_gib) {
        *why = PS__R_FIT_NONE, *gib = g;
        return 0;
    }
    int32_t lo = 1, hi = most - 1;
    if (hi < lo || (rc = fit_peak(s, e, c, PS_RECOMPUTE_FULL, hi, &g, err)) || g > s->limit_gib) {
        if (rc < 0)
            return rc;
        *why = PS__R_FIT_FULL, *gib = g;
        return 0;
    }
    /* mem(hi) fits; the answer is in [lo, hi]. */
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if ((rc = fit_peak(s, e, c, PS_RECOMPUTE_FULL, mid, &g, err)) < 0)
            return rc;
        if (rc == 0 && g <= s->limit_gib)
            hi = mid;
        else
            lo = mid + 1;
    }
    c->recompute_layers = lo;
    return 0;
}
