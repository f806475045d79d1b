/*
 * EDPB in the estimate (include/pipesched/balance.h, docs/balance.md, "In the estimate"): the
 * step time of a job whose micro-batches and expert loads are uneven, without and with the
 * balancing of D (data reordering) and E (expert placement), and the synthetic packed samples
 * for people without a samples file.
 *
 * The imbalance enters the estimate through its two knobs (model.h): the micro-batch weights
 * of one data-parallel replica, and the MoE layers' expert-GEMM and all-to-all factors. A
 * replica's micro-batch j weighs its slot's predicted time over the mean slot time, so the
 * mean micro-batch costs what the estimate's model says and the samples shape only the
 * spread; the step is the slowest replica's estimate (the gradient reduction waits for it).
 * An expert placement's factor is the slowest device's load over the mean, averaged over the
 * trace's MoE layers: the simulator has one MoE layer model, so the factor is exact for the
 * sum of the layers' times and spreads it evenly over the stages.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"
#include "model/estimate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- synthetic samples ---------------------------------------------------------------------- */

static int samples_number(const char *key, const char *v, size_t n, double lo, double hi,
                          int integer, double *out, char *err, size_t errlen)
{
    return ps__spec_number("synthetic samples", key, v, n, lo, hi, integer, out, err, errlen);
}

typedef struct samples_spec {
    double mu, sigma;
    uint64_t seed;
} samples_spec;

/* lognormal:MU,SIGMA[,seed:N] */
static int parse_samples_spec(const char *spec, samples_spec *o, char *err, size_t errlen)
{
    o->seed = 1;
    if (strncmp(spec, "lognormal:", 10))
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "synthetic samples: \"%.40s\" does not start with lognormal:MU,SIGMA "
                            "(e.g. lognormal:7,1.2,seed:3)",
                            spec);
    const char *p = spec + 10;
    size_t n = strcspn(p, ",");
    int rc = samples_number("lognormal's MU", p, n, -10, 30, 0, &o->mu, err, errlen);
    if (rc)
        return rc;
    if (!p[n])
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "synthetic samples: lognormal needs MU,SIGMA; SIGMA is missing");
    p += n + 1;
    n = strcspn(p, ",");
    if ((rc = samples_number("lognormal's SIGMA", p, n, 0, 10, 0, &o->sigma, err, errlen)))
        return rc;
    for (p += n; *p;) {
        p++; /* the comma */
        n = strcspn(p, ",");
        size_t k = strcspn(p, ":");
        if (k == 4 && k < n && !strncmp(p, "seed", 4)) {
            double x;
            if ((rc = samples_number("seed", p + 5, n - 5, 0, 9007199254740992.0, 1, &x, err,
                                     errlen)))
                return rc;
            o->seed = (uint64_t)x;
        } else {
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "synthetic samples: unknown word \"%.*s\" (lognormal:MU,SIGMA "
                                "then seed:N)",
                                (int)(n < 40 ? n : 40), p);
        }
        p += n;
    }
    return 0;
}

int ps_samples_synthetic(const char *spec, int32_t seq, ps_sample *out, size_t n, char *err,
                         size_t errlen)
{
    if (!spec || (n && !out))
        return PS_EINVAL;
    samples_spec o;
    int rc = parse_samples_spec(spec, &o, err, errlen);
    if (rc)
        return rc;
    if (seq < 1 || n < 1 || (double)n * seq > PS_MAX_SYNTHETIC_TOKENS)
        return ps__seterr_n(err, errlen, PS_ERANGE,
                            "synthetic samples: %zu samples of %d tokens is beyond the limit of "
                            "%.0f tokens (and both must be >= 1)",
                            n, (int)seq, PS_MAX_SYNTHETIC_TOKENS);
    ps__rng rng;
    ps__rng_seed(&rng, o.seed);
    double left = 0; /* of the document being packed */
    for (size_t i = 0; i < n; i++) {
        ps_sample *x = &out[i];
        x->tokens = x->sq = 0;
        x->docs = 0;
        double room = seq;
        while (room > 0) {
            if (left <= 0) {
                double len = floor(exp(o.mu + o.sigma * ps__rng_normal(&rng)) + 0.5);
                left = len < 1 ? 1 : len > PS_MAX_DOC_LEN ? PS_MAX_DOC_LEN : len;
            }
            double piece = left < room ? left : room;
            x->tokens += piece;
            x->sq += piece * piece;
            x->docs++;
            left -= piece;
            room -= piece;
        }
    }
    return 0;
}

/* ---- the estimate with imbalance ------------------------------------------------------------ */

typedef struct edpb {
    ps_estimate *e;
    const ps_transformer *model;
    const ps_hardware *hw;
    const ps_train *train;
    const ps_allocator *al;
    int32_t dp, m, mbs;
    size_t n;
    double *t;     /* n sample times, in units of the mean slot (a slot sums to its weight) */
    double *w;     /* dp x m slot weights */
    int32_t *rank; /* n: the assignment being scored */
    int32_t *slot;
    char *err;
    size_t errlen;
} edpb;

static int est_fail(edpb *x, int rc)
{
    return ps__seterr_n(x->err, x->errlen, rc, "%s", ps_estimate_last_error(x->e));
}

/* The estimate at factor f (both the GEMMs' and the all-to-all's) without weights. */
static int run_even(edpb *x, double f)
{
    int rc;
    if ((rc = ps_estimate_set_microbatch_weights(x->e, NULL, 0)) ||
        (rc = ps_estimate_set_moe_imbalance(x->e, f, f)) ||
        (rc = ps_estimate_run(x->e, x->model, x->hw, x->train)))
        return est_fail(x, rc);
    return 0;
}

/* Fills x->w from the assignment; returns the largest replica mean weight in *heavy. */
static void slot_weights(edpb *x, double *heavy)
{
    size_t slots = (size_t)x->dp * x->m;
    memset(x->w, 0, slots * sizeof *x->w);
    for (size_t i = 0; i < x->n; i++)
        x->w[(size_t)x->rank[i] * x->m + x->slot[i]] += x->t[i];
    /* Every slot the same: exactly the even estimate (a rounded mean would not be 1). */
    int even = 1;
    for (size_t q = 1; q < slots; q++)
        even &= x->w[q] == x->w[0];
    if (even)
        for (size_t q = 0; q < slots; q++)
            x->w[q] = 1;
    *heavy = 0;
    for (int32_t r = 0; r < x->dp; r++) {
        double sum = 0;
        for (int32_t j = 0; j < x->m; j++)
            sum += x->w[(size_t)r * x->m + j];
        *heavy = sum / x->m > *heavy ? sum / x->m : *heavy;
    }
}

/* The step time of the assignment at expert factor f: every replica's estimate with its slots'
 * weights (replicas with the same weights as one before are not run again), the slowest. */
static int score(edpb *x, double f, double *step, int32_t *slowest, double *heavy)
{
    slot_weights(x, heavy);
    *step = -1;
    int rc;
    if ((rc = ps_estimate_set_moe_imbalance(x->e, f, f)))
        return est_fail(x, rc);
    for (int32_t r = 0; r < x->dp; r++) {
        const double *w = x->w + (size_t)r * x->m;
        int seen = 0;
        for (int32_t q = 0; q < r && !seen; q++)
            seen = !memcmp(w, x->w + (size_t)q * x->m, (size_t)x->m * sizeof *w);
        if (seen)
            continue;
        ps_estimate_result res;
        if ((rc = ps_estimate_set_microbatch_weights(x->e, w, (size_t)x->m)) ||
            (rc = ps_estimate_run(x->e, x->model, x->hw, x->train)))
            return est_fail(x, rc);
        ps_estimate_result_get(x->e, &res);
        if (res.step_time_s > *step)
            *step = res.step_time_s, *slowest = r;
    }
    return 0;
}

/* The expert factors of the trace under the identity placement and the placer's. */
static int expert_factors(edpb *x, const ps_edpb_input *in, ps_edpb_result *out)
{
    const ps_transformer *m = x->model;
    int32_t steps, layers, experts;
    if (ps_expert_trace_shape(in->trace, &steps, &layers, &experts))
        return ps__seterr_n(x->err, x->errlen, PS_ECONFIG, "expert load: the trace is empty");
    int32_t moe_layers = m->experts > 0 ? m->layers - m->first_dense : 0;
    if (m->experts < 1)
        return ps__seterr_n(x->err, x->errlen, PS_ECONFIG,
                            "expert load: model %s is dense: it has no experts to place", m->name);
    if (experts != m->experts || layers > moe_layers)
        return ps__seterr_n(x->err, x->errlen, PS_ECONFIG,
                            "expert load: the trace has %d layers of %d experts; model %s has %d "
                            "MoE layers of %d experts",
                            (int)layers, (int)experts, m->name, (int)moe_layers, (int)m->experts);
    const ps_train *tr = x->train;
    int32_t ep = tr->ep, etp = tr->etp > 0 ? tr->etp : tr->tp;
    int32_t gpn = tr->gpus_per_node > 0 ? tr->gpus_per_node : x->hw->devices_per_node;
    /* The EP group's ranks are etp apart (the estimate's MoE model): per_node on a node. */
    int32_t per_node = gpn / etp > 0 ? gpn / etp : 1;
    per_node = ep < per_node ? ep : per_node;
    ps_expert_group g = {ep, ep % per_node == 0 ? ep / per_node : 1, 0};
    int rc = ps_expert_group_check(&g, experts, NULL, x->err, x->errlen);
    if (rc)
        return rc;
    size_t cells = (size_t)layers * (size_t)experts;
    double *pred = ps__alloc(x->al, cells, sizeof *pred);
    double *dev = ps__alloc(x->al, (size_t)ep, sizeof *dev);
    int32_t *place = ps__alloc(x->al, (size_t)experts, sizeof *place);
    if (!pred || !dev || !place) {
        rc = ps__seterr_n(x->err, x->errlen, PS_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = ps_expert_trace_predict(in->trace, in->theta, pred))) {
        ps__seterr_n(x->err, x->errlen, rc, "expert load: theta %g must be in [0, 1)", in->theta);
        goto out;
    }
    double sum_id = 0, sum_pl = 0;
    for (int32_t l = 0; l < layers; l++) {
        const double *load = pred + (size_t)l * (size_t)experts;
        double total = 0;
        for (int32_t k = 0; k < experts; k++)
            total += load[k];
        double mean = total / ep;
        if ((rc = ps_expert_identity(experts, &g, place)))
            goto out;
        double top_id = ps_expert_device_loads(load, experts, place, ep, dev);
        if ((rc = ps_expert_place(load, experts, &g, NULL, place, x->al, x->err, x->errlen)))
            goto out;
        double top_pl = ps_expert_device_loads(load, experts, place, ep, dev);
        sum_id += mean > 0 ? top_id / mean : 1.0;
        sum_pl += mean > 0 ? top_pl / mean : 1.0;
    }
    /* max >= mean, but the division may round below 1. */
    out->expert_factor = sum_id / layers < 1 ? 1 : sum_id / layers;
    out->expert_factor_balanced = sum_pl / layers < 1 ? 1 : sum_pl / layers;
out:
    ps__free(x->al, pred, cells, sizeof *pred);
    ps__free(x->al, dev, (size_t)ep, sizeof *dev);
    ps__free(x->al, place, (size_t)experts, sizeof *place);
    return rc;
}

/* The sample times in slot units: a slot's weight is the sum of its samples'. */
static int sample_units(edpb *x, const ps_edpb_input *in)
{
    ps_sample_model sm;
    int rc = ps_sample_model_derive(x->model, x->hw, &sm, x->err, x->errlen);
    if (rc)
        return rc;
    double total = 0;
    for (size_t i = 0; i < x->n; i++)
        total += (x->t[i] = ps_sample_time(&sm, &in->samples[i]));
    double mean_slot = total / ((double)x->dp * x->m);
    if (!(mean_slot > 0) || !isfinite(mean_slot))
        return ps__seterr_n(x->err, x->errlen, PS_ECONFIG,
                            "samples: their predicted times sum to %g: nothing to weigh", total);
    for (size_t i = 0; i < x->n; i++)
        x->t[i] /= mean_slot;
    return 0;
}

/* The baseline: sample i to rank i mod dp, a rank's k-th sample to its slot k / mbs. */
static void round_robin(edpb *x)
{
    for (size_t i = 0; i < x->n; i++) {
        x->rank[i] = (int32_t)(i % (size_t)x->dp);
        x->slot[i] = (int32_t)(i / (size_t)x->dp / (size_t)x->mbs);
    }
}

static int check_input(const ps_edpb_input *in, const ps_estimate_result *even, const ps_train *tr,
                       char *err, size_t errlen)
{
    if (in->samples) {
        double want = (double)even->dp * even->microbatches * tr->mbs;
        if ((double)in->n_samples != want)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "samples: %zu given; the global batch is dp %d x %d "
                                "micro-batches x mbs %d = %.0f samples",
                                in->n_samples, (int)even->dp, (int)even->microbatches, (int)tr->mbs,
                                want);
        for (size_t i = 0; i < in->n_samples; i++)
            if (!(in->samples[i].tokens > 0) || !(in->samples[i].sq > 0) ||
                !isfinite(in->samples[i].tokens) || !isfinite(in->samples[i].sq))
                return ps__seterr_n(err, errlen, PS_ECONFIG,
                                    "samples: sample %zu has %g tokens and %g squared: both must "
                                    "be finite and > 0",
                                    i, in->samples[i].tokens, in->samples[i].sq);
    }
    if (in->trace && !(in->theta >= 0 && in->theta < 1))
        return ps__seterr_n(err, errlen, PS_ERANGE, "expert load: theta %g must be in [0, 1)",
                            in->theta);
    if (in->max_evals < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "max_evals must be >= 0");
    return 0;
}

static void edpb_free(edpb *x)
{
    size_t slots = (size_t)x->dp * x->m;
    ps__free(x->al, x->t, x->n, sizeof *x->t);
    ps__free(x->al, x->w, slots, sizeof *x->w);
    ps__free(x->al, x->rank, x->n, sizeof *x->rank);
    ps__free(x->al, x->slot, x->n, sizeof *x->slot);
}

/* The data half: the three assignments scored (baseline at both expert factors, the balanced
 * one at the placed factor), ps__balance_data on the estimate's own problem at that factor. */
static int data_half(edpb *x, const ps_edpb_input *in, ps_edpb_result *out, int32_t *rank,
                     int32_t *slot)
{
    size_t slots = (size_t)x->dp * x->m;
    x->t = ps__alloc(x->al, x->n, sizeof *x->t);
    x->w = ps__alloc(x->al, slots, sizeof *x->w);
    x->rank = ps__alloc(x->al, x->n, sizeof *x->rank);
    x->slot = ps__alloc(x->al, x->n, sizeof *x->slot);
    if (!x->t || !x->w || !x->rank || !x->slot)
        return ps__seterr_n(x->err, x->errlen, PS_ENOMEM, "out of memory");
    int rc = sample_units(x, in);
    if (rc)
        return rc;
    round_robin(x);
    double fi = out->expert_factor, fp = out->expert_factor_balanced;
    if ((rc = score(x, fi, &out->imbalanced_step_time_s, &out->slowest_replica,
                    &out->data_imbalance)))
        return rc;
    if (fp == fi)
        out->experts_step_time_s = out->imbalanced_step_time_s;
    else if ((rc = score(x, fp, &out->experts_step_time_s, &out->slowest_replica,
                         &out->data_imbalance)))
        return rc;
    /* The reordering, on the pipeline with the placed experts and unit weights. */
    if ((rc = run_even(x, fp)))
        return rc;
    ps_data_config cfg = {x->dp, x->m, x->mbs, in->max_evals};
    ps_data_result dr;
    if ((rc = ps__balance_data(ps_estimate_problem(x->e), x->t, x->n, &cfg, 1, x->rank, x->slot,
                               &dr, x->err, x->errlen)))
        return rc;
    out->evals = dr.evals;
    if ((rc = score(x, fp, &out->balanced_step_time_s, &out->slowest_replica_balanced,
                    &out->data_imbalance_balanced)))
        return rc;
    /* Never worse than the baseline at the same factor: the reordering's own judge is the
     * pipeline alone, the estimate adds the replica's gradient reduction and optimizer tail. */
    if (out->balanced_step_time_s > out->experts_step_time_s) {
        round_robin(x);
        out->balanced_step_time_s = out->experts_step_time_s;
        out->data_imbalance_balanced = out->data_imbalance;
        out->slowest_replica_balanced = out->slowest_replica;
    }
    if (rank && slot) {
        memcpy(rank, x->rank, x->n * sizeof *rank);
        memcpy(slot, x->slot, x->n * sizeof *slot);
    }
    return 0;
}

static int edpb_run(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                    const ps_train *train, const ps_edpb_input *in, ps_edpb_result *out,
                    int32_t *rank, int32_t *slot, char *err, size_t errlen);

int ps_edpb_estimate(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                     const ps_train *train, const ps_edpb_input *in, ps_edpb_result *out,
                     int32_t *rank, int32_t *slot, char *err, size_t errlen)
{
    if (!e || !model || !hw || !train || !in || !out || (in->n_samples && !in->samples))
        return PS_EINVAL;
    int rc = edpb_run(e, model, hw, train, in, out, rank, slot, err, errlen);
    if (rc) { /* e keeps no imbalance: a later run or bound on it must not see one */
        ps_estimate_set_microbatch_weights(e, NULL, 0);
        ps_estimate_set_moe_imbalance(e, 1, 1);
    }
    return rc;
}

static int edpb_run(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                    const ps_train *train, const ps_edpb_input *in, ps_edpb_result *out,
                    int32_t *rank, int32_t *slot, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->expert_factor = out->expert_factor_balanced = 1;
    out->data_imbalance = out->data_imbalance_balanced = 1;
    edpb x;
    memset(&x, 0, sizeof x);
    x.e = e, x.model = model, x.hw = hw, x.train = train, x.al = ps__estimate_allocator(e);
    x.err = err, x.errlen = errlen;
    int rc = run_even(&x, 1);
    if (rc)
        return rc;
    ps_estimate_result even;
    ps_estimate_result_get(e, &even);
    out->even_step_time_s = even.step_time_s;
    if ((rc = check_input(in, &even, train, err, errlen)))
        return rc;
    x.dp = even.dp, x.m = even.microbatches, x.mbs = train->mbs;
    x.n = in->samples ? in->n_samples : 0;
    if (in->trace && (rc = expert_factors(&x, in, out)))
        return rc;
    if (in->samples) {
        rc = data_half(&x, in, out, rank, slot);
        edpb_free(&x);
    } else {
        double fi = out->expert_factor, fp = out->expert_factor_balanced;
        if (!(rc = run_even(&x, fi))) {
            ps_estimate_result r;
            ps_estimate_result_get(e, &r);
            out->imbalanced_step_time_s = r.step_time_s;
            if (!(rc = run_even(&x, fp))) {
                ps_estimate_result_get(e, &r);
                out->experts_step_time_s = out->balanced_step_time_s = r.step_time_s;
            }
        }
    }
    if (rc)
        return rc;
    return run_even(&x, 1); /* e ends holding the even estimate */
}

int ps_edpb_slot_weights(const ps_transformer *model, const ps_hardware *hw, const ps_sample *x,
                         size_t n, const int32_t *rank, const int32_t *slot, int32_t dp,
                         int32_t microbatches, double *w, char *err, size_t errlen)
{
    if (!model || !hw || !x || !w || !rank != !slot)
        return PS_EINVAL;
    if (dp < 1 || microbatches < 1 || n == 0 || n % ((size_t)dp * (size_t)microbatches))
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "slot weights: %zu samples do not fill dp %d x %d micro-batches", n,
                            (int)dp, (int)microbatches);
    edpb b;
    memset(&b, 0, sizeof b);
    b.model = model, b.hw = hw, b.err = err, b.errlen = errlen;
    b.dp = dp, b.m = microbatches, b.n = n;
    b.mbs = (int32_t)(n / ((size_t)dp * (size_t)microbatches));
    ps_allocator al;
    ps__alloc_init(&al, NULL);
    b.al = &al;
    b.t = ps__alloc(b.al, n, sizeof *b.t);
    b.rank = ps__alloc(b.al, n, sizeof *b.rank);
    b.slot = ps__alloc(b.al, n, sizeof *b.slot);
    int rc = 0;
    if (!b.t || !b.rank || !b.slot) {
        rc = ps__seterr_n(err, errlen, PS_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (rank && (rank[i] < 0 || rank[i] >= dp || slot[i] < 0 || slot[i] >= microbatches)) {
            rc = ps__seterr_n(err, errlen, PS_ECONFIG,
                              "slot weights: sample %zu at rank %d, slot %d: outside dp %d x %d", i,
                              (int)rank[i], (int)slot[i], (int)dp, (int)microbatches);
            goto out;
        }
    }
    ps_edpb_input in = {x, n, NULL, 0.9, 0};
    if ((rc = sample_units(&b, &in)))
        goto out;
    if (rank) {
        memcpy(b.rank, rank, n * sizeof *rank);
        memcpy(b.slot, slot, n * sizeof *slot);
    } else {
        round_robin(&b);
    }
    b.w = w; /* the caller's dp x microbatches */
    double heavy;
    slot_weights(&b, &heavy);
out:
    ps__free(b.al, b.t, n, sizeof *b.t);
    ps__free(b.al, b.rank, n, sizeof *b.rank);
    ps__free(b.al, b.slot, n, sizeof *b.slot);
    return rc;
}
