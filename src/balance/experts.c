/*
 * Expert placement: the experts of one MoE layer on the devices of the expert-parallel group
 * (include/pipesched/balance.h, docs/balance.md).
 *
 * The objective is the largest device load (the sum of its experts' predicted tokens): every
 * device waits for the slowest one at the next all-to-all. The construction follows MindSpeed's
 * two-level planner: longest-processing-time (LPT) greedy over the nodes, each holding at most
 * its devices' slots, then LPT over the devices inside each node; where MindSpeed solves the
 * device level exactly (a subset DP, exponential), we refine each level by local swaps, which
 * scales to 256 experts on 64 devices. Local swaps stop in local optima, so the result is the
 * best of three starts (two-level, flat LPT, Megatron's identity placement), each refined, and
 * a layer small enough (16 experts at most) is solved exactly by branch and bound.
 * SPDX-License-Identifier: MIT
 */
#include "balance/balance_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ps_expert_group_check(const ps_expert_group *g, int32_t experts, int32_t *capacity, char *err,
                          size_t errlen)
{
    if (!g)
        return PS_EINVAL;
    if (experts < 1 || experts > PS_MAX_EXPERTS)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "%d experts: expected 1 to %d", experts,
                            PS_MAX_EXPERTS);
    if (g->devices < 1 || g->nodes < 1 || g->devices % g->nodes)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "%d devices on %d nodes: the nodes must divide the devices", g->devices,
                            g->nodes);
    if (g->capacity < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "capacity %d: expected 0 (experts / devices) "
                            "or more",
                            g->capacity);
    int32_t cap = g->capacity;
    if (!cap && experts % g->devices)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "%d experts do not divide over %d devices: give a capacity (experts "
                            "per device) of at least %d",
                            experts, g->devices, (experts + g->devices - 1) / g->devices);
    if (!cap)
        cap = experts / g->devices;
    if ((double)cap * g->devices < experts)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "more experts (%d) than slots: %d devices x capacity %d = %.0f",
                            experts, g->devices, cap, (double)cap * g->devices);
    if (capacity)
        *capacity = cap;
    return 0;
}

int ps_expert_identity(int32_t experts, const ps_expert_group *g, int32_t *device_of)
{
    int32_t cap;
    if (!g || !device_of)
        return PS_EINVAL;
    int rc = ps_expert_group_check(g, experts, &cap, NULL, 0);
    if (rc)
        return rc;
    for (int32_t e = 0; e < experts; e++)
        device_of[e] = e / cap;
    return 0;
}

double ps_expert_device_loads(const double *load, int32_t experts, const int32_t *device_of,
                              int32_t devices, double *dev_load)
{
    if (!load || !device_of || !dev_load || devices < 1)
        return -1;
    memset(dev_load, 0, (size_t)devices * sizeof *dev_load);
    for (int32_t e = 0; e < experts; e++) {
        if (device_of[e] < 0 || device_of[e] >= devices)
            return -1;
        dev_load[device_of[e]] += load[e];
    }
    double top = 0;
    for (int32_t d = 0; d < devices; d++)
        top = dev_load[d] > top ? dev_load[d] : top;
    return top;
}

/* ---- the work space ------------------------------------------------------------------------- */

typedef struct item {
    double w;
    int32_t e;
} item;

/* What one placement needs, allocated once. Bins are nodes or devices. */
typedef struct work {
    const double *w;
    int32_t experts, devices, nodes, per_node, cap;
    item *sorted;     /* the experts by load, heaviest first (ties: lower index) */
    int32_t *node_of; /* an expert's node, during the node level */
    int32_t *members; /* the experts of one bin set, in sorted order */
    double *load;     /* per bin (devices >= nodes) */
    int32_t *count;   /* per bin */
    int32_t *cand;    /* a candidate placement */
} work;

static int by_load(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    return (x->e > y->e) - (x->e < y->e);
}

/* LPT over the bins [b0, b0 + n), each of at most cap items: the items (heaviest first) go
 * one by one to the least loaded bin that has room (ties: the lowest). */
static void lpt(work *k, const int32_t *items, int32_t nitems, int32_t b0, int32_t n, int32_t cap,
                int32_t *bin_of)
{
    for (int32_t b = b0; b < b0 + n; b++) {
        k->load[b] = 0;
        k->count[b] = 0;
    }
    for (int32_t i = 0; i < nitems; i++) {
        int32_t best = -1;
        for (int32_t b = b0; b < b0 + n; b++)
            if (k->count[b] < cap && (best < 0 || k->load[b] < k->load[best]))
                best = b;
        /* best >= 0: the caller checked that n . cap >= nitems */
        bin_of[items[i]] = best;
        k->load[best] += k->w[items[i]];
        k->count[best]++;
    }
}

/*
 * Local swaps over the bins [b0, b0 + n) holding `items`: while it lowers the most loaded bin
 * a, move one of a's items to a bin with room or swap it with a lighter item of another bin,
 * choosing the exchange whose larger new load is smallest. Every accepted exchange leaves both
 * bins below a's old load, so the loads sorted in decreasing order fall lexicographically and
 * the loop ends; the cap on rounds only bounds its time.
 */
static void refine(work *k, const int32_t *items, int32_t nitems, int32_t b0, int32_t n,
                   int32_t cap, int32_t *bin_of)
{
    const double *w = k->w;
    for (int32_t round = 0; round < 4 * nitems + 16; round++) {
        int32_t a = b0;
        for (int32_t b = b0 + 1; b < b0 + n; b++)
            if (k->load[b] > k->load[a])
                a = b;
        double la = k->load[a], best = la - 1e-12 * (la > 1 ? la : 1);
        int32_t bi = -1, bj = -1, bb = -1; /* the move or swap found */
        for (int32_t x = 0; x < nitems; x++) {
            int32_t i = items[x];
            if (bin_of[i] != a)
                continue;
            for (int32_t b = b0; b < b0 + n; b++) { /* moves */
                double nb = k->load[b] + w[i], m = nb > la - w[i] ? nb : la - w[i];
                if (b != a && k->count[b] < cap && m < best) {
                    best = m;
                    bi = i, bj = -1, bb = b;
                }
            }
            for (int32_t y = 0; y < nitems; y++) { /* swaps */
                int32_t j = items[y], b = bin_of[j];
                double d = w[i] - w[j];
                if (b == a || d <= 0)
                    continue;
                double nb = k->load[b] + d, m = nb > la - d ? nb : la - d;
                if (m < best) {
                    best = m;
                    bi = i, bj = j, bb = b;
                }
            }
        }
        if (bi < 0)
            return;
        double d = w[bi] - (bj >= 0 ? w[bj] : 0);
        k->load[a] -= d;
        k->load[bb] += d;
        bin_of[bi] = bb;
        if (bj >= 0)
            bin_of[bj] = a;
        else
            k->count[a]--, k->count[bb]++;
    }
}

/* Loads and counts of the devices under placement p; returns the largest load. */
static double tally(work *k, const int32_t *p)
{
    for (int32_t d = 0; d < k->devices; d++)
        k->load[d] = 0, k->count[d] = 0;
    for (int32_t e = 0; e < k->experts; e++) {
        k->load[p[e]] += k->w[e];
        k->count[p[e]]++;
    }
    double top = 0;
    for (int32_t d = 0; d < k->devices; d++)
        top = k->load[d] > top ? k->load[d] : top;
    return top;
}

/* The two-level construction into k->cand. */
static void two_level(work *k)
{
    int32_t E = k->experts, G = k->per_node;
    for (int32_t i = 0; i < E; i++)
        k->members[i] = k->sorted[i].e;
    lpt(k, k->members, E, 0, k->nodes, G * k->cap, k->node_of);
    refine(k, k->members, E, 0, k->nodes, G * k->cap, k->node_of);
    for (int32_t n = 0; n < k->nodes; n++) {
        int32_t m = 0;
        for (int32_t i = 0; i < E; i++) /* the node's experts, heaviest first */
            if (k->node_of[k->sorted[i].e] == n)
                k->members[m++] = k->sorted[i].e;
        lpt(k, k->members, m, n * G, G, k->cap, k->cand);
        refine(k, k->members, m, n * G, G, k->cap, k->cand);
    }
}

/* Swaps between any two devices, on k->cand. */
static void refine_all(work *k)
{
    for (int32_t i = 0; i < k->experts; i++)
        k->members[i] = k->sorted[i].e;
    tally(k, k->cand);
    refine(k, k->members, k->experts, 0, k->devices, k->cap, k->cand);
}

/* ---- the exact search for small layers ------------------------------------------------------ */

#define EXACT_MAX_EXPERTS 16
#define EXACT_MAX_NODES 2000000L

typedef struct exact {
    work *k;
    int32_t assign[EXACT_MAX_EXPERTS]; /* by sorted position */
    int32_t *best_assign;              /* by expert */
    double best;
    long visits;
} exact;

/* Places sorted item i onwards; the current largest load is top. Devices with the same count
 * and load are interchangeable, so only the first of them is tried. */
static void exact_from(exact *x, int32_t i, double top)
{
    work *k = x->k;
    if (x->visits++ > EXACT_MAX_NODES)
        return;
    if (i == k->experts) {
        if (top < x->best) {
            x->best = top;
            for (int32_t j = 0; j < k->experts; j++)
                x->best_assign[k->sorted[j].e] = x->assign[j];
        }
        return;
    }
    double w = k->sorted[i].w, margin = 1e-12 * (x->best > 1 ? x->best : 1);
    for (int32_t d = 0; d < k->devices; d++) {
        if (k->count[d] >= k->cap)
            continue;
        int same = 0;
        for (int32_t c = 0; c < d && !same; c++)
            same = k->count[c] == k->count[d] && k->load[c] == k->load[d];
        double nl = k->load[d] + w;
        if (same || (nl > top ? nl : top) >= x->best - margin)
            continue;
        k->load[d] = nl;
        k->count[d]++;
        x->assign[i] = d;
        exact_from(x, i + 1, nl > top ? nl : top);
        k->load[d] -= w;
        k->count[d]--;
    }
}

/* Improves best[] (largest load best_top) to the optimum when the search ends in budget. */
static void exact_search(work *k, int32_t *best, double best_top)
{
    exact x = {.k = k, .best_assign = k->cand, .best = best_top, .visits = 0};
    for (int32_t d = 0; d < k->devices; d++)
        k->load[d] = 0, k->count[d] = 0;
    exact_from(&x, 0, 0);
    if (x.best < best_top)
        memcpy(best, k->cand, (size_t)k->experts * sizeof *best);
}

/* ---- the placement -------------------------------------------------------------------------- */

/* A current placement must name devices of the group and respect the capacity. */
static int check_current(const int32_t *current, int32_t experts, int32_t devices, int32_t cap,
                         char *err, size_t errlen)
{
    for (int32_t e = 0; e < experts; e++) {
        if (current[e] < 0 || current[e] >= devices)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "the current placement puts expert %d on device %d: expected 0 "
                                "to %d",
                                e, current[e], devices - 1);
        int32_t n = 0;
        for (int32_t x = 0; x <= e; x++)
            n += current[x] == current[e];
        if (n > cap)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "the current placement puts more than %d experts on device %d", cap,
                                current[e]);
    }
    return 0;
}

static void work_free(const ps_allocator *al, work *k)
{
    size_t E = (size_t)k->experts, D = (size_t)k->devices;
    ps__free(al, k->sorted, E, sizeof *k->sorted);
    ps__free(al, k->node_of, E, sizeof *k->node_of);
    ps__free(al, k->members, E, sizeof *k->members);
    ps__free(al, k->cand, E, sizeof *k->cand);
    ps__free(al, k->load, D, sizeof *k->load);
    ps__free(al, k->count, D, sizeof *k->count);
}

/* Keeps the candidate in k->cand as best when its largest load is lower. */
static void keep_better(work *k, int32_t *best, double *best_top)
{
    double top = tally(k, k->cand);
    if (top < *best_top) {
        *best_top = top;
        memcpy(best, k->cand, (size_t)k->experts * sizeof *best);
    }
}

int ps_expert_place(const double *load, int32_t experts, const ps_expert_group *g,
                    const int32_t *current, int32_t *device_of, const ps_allocator *alloc,
                    char *err, size_t errlen)
{
    if (!load || !g || !device_of)
        return PS_EINVAL;
    int32_t cap;
    int rc = ps_expert_group_check(g, experts, &cap, err, errlen);
    if (rc)
        return rc;
    if (current && (rc = check_current(current, experts, g->devices, cap, err, errlen)))
        return rc;
    for (int32_t e = 0; e < experts; e++)
        if (!(load[e] >= 0 && load[e] < 1e300))
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "expert %d has the load %g: expected a number >= 0 and below 1e300",
                                e, load[e]);
    ps_allocator al;
    ps__alloc_init(&al, alloc);
    work k = {.w = load,
              .experts = experts,
              .devices = g->devices,
              .nodes = g->nodes,
              .per_node = g->devices / g->nodes,
              .cap = cap};
    size_t E = (size_t)experts, D = (size_t)g->devices;
    k.sorted = ps__alloc(&al, E, sizeof *k.sorted);
    k.node_of = ps__alloc(&al, E, sizeof *k.node_of);
    k.members = ps__alloc(&al, E, sizeof *k.members);
    k.cand = ps__alloc(&al, E, sizeof *k.cand);
    k.load = ps__alloc(&al, D, sizeof *k.load);
    k.count = ps__alloc(&al, D, sizeof *k.count);
    if (!k.sorted || !k.node_of || !k.members || !k.cand || !k.load || !k.count) {
        work_free(&al, &k);
        return ps__seterr_n(err, errlen, PS_ENOMEM, "out of memory placing %d experts", experts);
    }
    for (int32_t e = 0; e < experts; e++)
        k.sorted[e] = (item){load[e], e};
    qsort(k.sorted, E, sizeof *k.sorted, by_load);

    /* The starts, each refined by swaps across all devices; a later one replaces the best
     * only when strictly better: the current placement (so that a placement as good as any
     * moves only the experts it must), the two-level construction, flat LPT, the identity. */
    double best_top = INFINITY;
    if (current) {
        memcpy(k.cand, current, E * sizeof *k.cand);
        refine_all(&k);
        keep_better(&k, device_of, &best_top);
    }
    two_level(&k);
    refine_all(&k);
    keep_better(&k, device_of, &best_top);
    for (int32_t i = 0; i < experts; i++)
        k.members[i] = k.sorted[i].e;
    lpt(&k, k.members, experts, 0, g->devices, cap, k.cand);
    refine_all(&k);
    keep_better(&k, device_of, &best_top);
    for (int32_t e = 0; e < experts; e++)
        k.cand[e] = e / cap;
    refine_all(&k);
    keep_better(&k, device_of, &best_top);
    if (experts <= EXACT_MAX_EXPERTS)
        exact_search(&k, device_of, best_top);
    work_free(&al, &k);
    return 0;
}
