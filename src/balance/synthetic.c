/*
 * Synthetic routing traces for people without one (docs/balance.md), and the PRNG behind
 * them.
 *
 * The PRNG is xoshiro256** seeded through splitmix64 (D. Blackman and S. Vigna, "Scrambled
 * linear pseudorandom number generators", 2021; the reference code is public domain): a few
 * lines, fast, and the same sequence on every platform, which rand() does not promise.
 *
 * The trace: each layer ranks its experts in a random order (Fisher-Yates); expert e of rank
 * r_e (1 = the most popular) has the log-popularity -S.ln(r_e) + X.z_e(t), where z_e is a
 * Gaussian random walk (z_e(0) = 0, one N(0, 1) step per training step) and X the drift; at
 * every step the layer's K token copies are split in proportion to the popularities and
 * rounded to the nearest integer.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

void ps__rng_seed(ps__rng *r, uint64_t seed)
{
    for (int i = 0; i < 4; i++)
        r->s[i] = splitmix64(&seed);
}

static uint64_t rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

uint64_t ps__rng_next(ps__rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

double ps__rng_uniform(ps__rng *r)
{
    return (double)(ps__rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t ps__rng_below(ps__rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n; /* multiples of n below it are fair */
    uint64_t x;
    do
        x = ps__rng_next(r);
    while (x >= limit);
    return x % n;
}

double ps__rng_normal(ps__rng *r)
{
    double u = 1.0 - ps__rng_uniform(r); /* (0, 1]: the logarithm is finite */
    double v = ps__rng_uniform(r);
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* ---- the spec ------------------------------------------------------------------------------- */

typedef struct synth_spec {
    double skew, drift, tokens;
    long long seed, steps;
} synth_spec;

int ps__spec_number(const char *what, const char *key, const char *v, size_t n, double lo,
                    double hi, int integer, double *out, char *err, size_t errlen)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        goto bad;
    memcpy(buf, v, n);
    buf[n] = 0;
    if (strspn(buf, "0123456789.eE+-") < n)
        goto bad;
    char *end;
    double x = strtod(buf, &end);
    if (end == buf + n && x >= lo && x <= hi && (!integer || x == floor(x))) {
        *out = x;
        return 0;
    }
bad:
    return ps__seterr_n(err, errlen, PS_ECONFIG, "%s: %s needs %s in [%g, %g]; got \"%.*s\"", what,
                        key, integer ? "an integer" : "a number", lo, hi, (int)(n < 40 ? n : 40),
                        v);
}

static int spec_number(ps_expert_trace *t, const char *key, const char *v, size_t n, double lo,
                       double hi, int integer, double *out)
{
    return ps__spec_number("synthetic experts", key, v, n, lo, hi, integer, out, t->err,
                           sizeof t->err);
}

static int parse_spec(ps_expert_trace *t, const char *spec, synth_spec *o)
{
    *o = (synth_spec){.skew = 0, .drift = 0, .tokens = 1048576, .seed = 1, .steps = 50};
    if (strncmp(spec, "zipf:", 5))
        return ps__seterr(t->err, PS_ECONFIG,
                          "synthetic experts: \"%.40s\" does not start with zipf:S (e.g. "
                          "zipf:1.2,drift:0.05,seed:7)",
                          spec);
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ","), k = strcspn(p, ":");
        if (k >= n)
            return ps__seterr(t->err, PS_ECONFIG,
                              "synthetic experts: \"%.*s\" is not KEY:VALUE (keys: zipf, drift, "
                              "seed, steps, tokens)",
                              (int)(n < 40 ? n : 40), p);
        const char *v = p + k + 1;
        size_t vn = n - k - 1;
        double x;
        int rc;
        if (k == 4 && !strncmp(p, "zipf", 4))
            rc = spec_number(t, "zipf", v, vn, 0, 16, 0, &o->skew);
        else if (k == 5 && !strncmp(p, "drift", 5))
            rc = spec_number(t, "drift", v, vn, 0, 10, 0, &o->drift);
        else if (k == 6 && !strncmp(p, "tokens", 6))
            rc = spec_number(t, "tokens", v, vn, 1, 1e15, 0, &o->tokens);
        else if (k == 4 && !strncmp(p, "seed", 4)) {
            rc = spec_number(t, "seed", v, vn, 0, 9007199254740992.0, 1, &x);
            o->seed = (long long)x;
        } else if (k == 5 && !strncmp(p, "steps", 5)) {
            rc = spec_number(t, "steps", v, vn, 1, PS_MAX_TRACE_STEPS, 1, &x);
            o->steps = (long long)x;
        } else
            return ps__seterr(t->err, PS_ECONFIG,
                              "synthetic experts: unknown key \"%.*s\" (keys: zipf, drift, seed, "
                              "steps, tokens)",
                              (int)(k < 40 ? k : 40), p);
        if (rc)
            return rc;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* ---- the generator -------------------------------------------------------------------------- */

int ps_expert_trace_synthetic(ps_expert_trace *t, const char *spec, int32_t layers, int32_t experts)
{
    if (!t || !spec)
        return PS_EINVAL;
    ps__trace_clear(t);
    t->err[0] = 0;
    synth_spec o;
    int rc = parse_spec(t, spec, &o);
    if (rc)
        return rc;
    if (layers < 1 || layers > PS_MAX_MOE_LAYERS || experts < 1 || experts > PS_MAX_EXPERTS ||
        (double)o.steps * layers * experts > (double)PS_MAX_TRACE_CELLS)
        return ps__seterr(t->err, PS_ERANGE,
                          "synthetic experts: %lld steps x %d layers x %d experts is beyond the "
                          "limits (docs/balance.md)",
                          o.steps, layers, experts);
    size_t cells = (size_t)layers * (size_t)experts;
    double *logw = ps__alloc(&t->al, cells, sizeof *logw);
    double *walk = ps__calloc(&t->al, cells, sizeof *walk);
    int32_t *order = ps__alloc(&t->al, (size_t)experts, sizeof *order);
    if (!logw || !walk || !order || (rc = ps__trace_reset(t, (int32_t)o.steps, layers, experts))) {
        rc = ps__seterr(t->err, PS_ENOMEM, "out of memory for a synthetic trace");
        goto out;
    }
    ps__rng rng;
    ps__rng_seed(&rng, (uint64_t)o.seed);
    for (int32_t l = 0; l < layers; l++) {
        for (int32_t e = 0; e < experts; e++)
            order[e] = e;
        for (int32_t i = experts - 1; i > 0; i--) { /* Fisher-Yates */
            int32_t j = (int32_t)ps__rng_below(&rng, (uint64_t)i + 1), x = order[i];
            order[i] = order[j];
            order[j] = x;
        }
        for (int32_t r = 0; r < experts; r++) /* order[r] has rank r + 1 */
            logw[(size_t)l * (size_t)experts + (size_t)order[r]] = -o.skew * log(r + 1.0);
    }
    for (long long s = 0; s < o.steps; s++) {
        for (int32_t l = 0; l < layers; l++) {
            const double *lw = logw + (size_t)l * (size_t)experts;
            double *z = walk + (size_t)l * (size_t)experts;
            double *out = t->tokens + ((size_t)s * (size_t)layers + (size_t)l) * (size_t)experts;
            double top = -INFINITY, sum = 0;
            for (int32_t e = 0; e < experts; e++) {
                if (s > 0 && o.drift > 0)
                    z[e] += ps__rng_normal(&rng);
                out[e] = lw[e] + o.drift * z[e];
                top = out[e] > top ? out[e] : top;
            }
            for (int32_t e = 0; e < experts; e++) /* relative to the top: no overflow */
                sum += (out[e] = exp(out[e] - top));
            for (int32_t e = 0; e < experts; e++)
                out[e] = floor(o.tokens * out[e] / sum + 0.5);
        }
    }
out:
    ps__free(&t->al, logw, cells, sizeof *logw);
    ps__free(&t->al, walk, cells, sizeof *walk);
    ps__free(&t->al, order, (size_t)experts, sizeof *order);
    if (rc)
        ps__trace_clear(t);
    return rc;
}
