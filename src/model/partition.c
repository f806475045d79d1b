/*
 * The automatic layer partition: how many decoder layers each virtual stage holds so that the
 * simulated step time is the smallest the search finds. The embedding stays on stage 0, the
 * output layer, the loss and the MTP layers on the last stage; only the decoder layers move,
 * and a stage may hold none (Megatron's layouts allow empty stages: "E||t|L").
 *
 * The objective is the estimate's whole simulated step time (pipeline, bubble, DP reduction,
 * optimizer), never a closed form, so every candidate is one simulation. The search:
 *
 *   start   the even split when the layers divide, and the "balanced" split (each boundary
 *           where the cumulative work of the layers, the embedding on the first stage and the
 *           output layer on the last, is nearest to its share of the total); the better one
 *           (the even split on a tie) is where the search starts, so the result is never
 *           worse than the even split;
 *   adjacent  passes over the boundaries in order (stage k to k + 1, then k + 1 to k), each
 *           move of one layer kept when the step time strictly decreases (first improvement);
 *   any two   when a whole adjacent pass keeps nothing, moves of one layer between two stages
 *           further apart (source ascending, then destination ascending); the first kept move
 *           goes back to the adjacent passes; none kept ends the search.
 *
 * Every kept move strictly decreases the step time, so no split is visited twice as a start of
 * a pass and the search ends; the bound ps__partition_bound (8 stages^2 moves) caps it for
 * inputs where it would take long. Ties keep the earlier split, so the result depends only on
 * the inputs.
 *
 * The local search can stop on a plateau (docs/layout.md). When the splits are few (at most
 * p->exhaustive: C(layers + stages - 1, stages - 1)), every split is simulated instead, after
 * the start and in reverse lexicographic order, and the least step time wins (the start, then
 * the earliest split, on a tie): the brute-force minimum.
 * SPDX-License-Identifier: MIT
 */
#include "model/partition.h"

#include <string.h>

int64_t ps__partition_bound(int32_t stages)
{
    return 8 * (int64_t)stages * stages;
}

int64_t ps__partition_splits(int32_t layers, int32_t stages, int64_t cap)
{
    if (stages <= 1 || layers <= 0)
        return 1;
    int64_t n = (int64_t)layers + stages - 1, k = stages - 1, c = 1;
    if (k > n - k)
        k = n - k;
    /* c = C(n - k + i, i) after step i: integral at every step, and at most cap * n. */
    for (int64_t i = 1; i <= k; i++) {
        c = c * (n - k + i) / i;
        if (c > cap)
            return cap + 1;
    }
    return c;
}

/* The search's state: best is the current split, cand mirrors it between moves. */
typedef struct search {
    const ps__partition *p;
    int32_t *best, *cand;
    double best_step;
    int64_t evals, moves, budget;
    int last_is_best; /* 1 when the last evaluation was of best */
} search;

static int evaluate(search *s, const int32_t *counts, double *step)
{
    s->evals++;
    return s->p->eval(s->p->ctx, counts, step);
}

/* Cumulative work of the first c decoder layers. */
static double prefix_work(const ps__partition *p, int32_t c)
{
    int32_t dense = c < p->first_moe ? c : p->first_moe;
    double w = dense * p->dense_work;
    return c > dense ? w + (c - dense) * p->moe_work : w;
}

/* The balanced split into out: boundary k (after stage k - 1) at the layer count whose
 * cumulative work, the embedding included, is nearest to k / stages of the total (the smaller
 * count on a tie); boundaries never go back, so counts are >= 0. */
static void balanced(const ps__partition *p, int32_t *out)
{
    int32_t n = p->stages, prev = 0;
    double total = p->head_work + prefix_work(p, p->layers) + p->tail_work;
    for (int32_t k = 1; k < n; k++) {
        double target = total * k / n;
        int32_t c = prev;
        double dist = p->head_work + prefix_work(p, c) - target;
        dist = dist < 0 ? -dist : dist;
        while (c < p->layers) {
            double d = p->head_work + prefix_work(p, c + 1) - target;
            d = d < 0 ? -d : d;
            if (!(d < dist))
                break;
            dist = d;
            c++;
        }
        out[k - 1] = c - prev;
        prev = c;
    }
    out[n - 1] = p->layers - prev;
}

/* Moves one layer from stage src to dst and keeps the move when the step time strictly
 * decreases. Returns 1 (kept), 0 (not kept or src empty) or an error of eval. */
static int try_move(search *s, int32_t src, int32_t dst)
{
    if (s->best[src] == 0)
        return 0;
    s->cand[src]--, s->cand[dst]++;
    s->moves++;
    double step;
    int rc = evaluate(s, s->cand, &step);
    if (rc)
        return rc;
    if (step < s->best_step) {
        s->best[src] = s->cand[src], s->best[dst] = s->cand[dst];
        s->best_step = step;
        s->last_is_best = 1;
        return 1;
    }
    s->cand[src]++, s->cand[dst]--;
    s->last_is_best = 0;
    return 0;
}

/* The start: the even split if it exists, the balanced split if it is strictly better. */
static int start(search *s, double *even_step)
{
    const ps__partition *p = s->p;
    int32_t n = p->stages;
    int rc;
    *even_step = -1;
    if (p->layers % n == 0) {
        for (int32_t i = 0; i < n; i++)
            s->best[i] = p->layers / n;
        if ((rc = evaluate(s, s->best, &s->best_step)))
            return rc;
        *even_step = s->best_step;
        s->last_is_best = 1;
    }
    balanced(p, s->cand);
    if (*even_step < 0 || memcmp(s->cand, s->best, (size_t)n * sizeof *s->cand) != 0) {
        double step;
        if ((rc = evaluate(s, s->cand, &step)))
            return rc;
        if (*even_step < 0 || step < s->best_step) {
            memcpy(s->best, s->cand, (size_t)n * sizeof *s->cand);
            s->best_step = step;
            s->last_is_best = 1;
        } else {
            s->last_is_best = 0;
        }
    }
    memcpy(s->cand, s->best, (size_t)n * sizeof *s->cand);
    return 0;
}

/* One pass of adjacent moves: 1 when a move was kept, 0 when none, or an error. */
static int adjacent_pass(search *s)
{
    int kept = 0;
    for (int32_t k = 0; k + 1 < s->p->stages; k++) {
        for (int dir = 0; dir < 2; dir++) {
            if (s->moves >= s->budget)
                return kept;
            int rc = dir == 0 ? try_move(s, k, k + 1) : try_move(s, k + 1, k);
            if (rc < 0)
                return rc;
            kept |= rc;
        }
    }
    return kept;
}

/* Moves between stages two or more apart until the first kept one: 1, 0 or an error. */
static int distant_moves(search *s)
{
    int32_t n = s->p->stages;
    for (int32_t src = 0; src < n; src++) {
        for (int32_t dst = 0; dst < n; dst++) {
            if (dst - src <= 1 && src - dst <= 1)
                continue;
            if (s->moves >= s->budget)
                return 0;
            int rc = try_move(s, src, dst);
            if (rc)
                return rc;
        }
    }
    return 0;
}

/* Every split, from (layers, 0, ..., 0) down to (0, ..., 0, layers): the next one moves one
 * layer off the rightmost non-empty stage before the last and puts the last stage's layers
 * after it. Keeps a split when its step time is strictly below the best. */
static int exhaustive(search *s)
{
    const ps__partition *p = s->p;
    int32_t n = p->stages, *c = s->cand;
    memset(c, 0, (size_t)n * sizeof *c);
    c[0] = p->layers;
    for (;;) {
        double step;
        int rc = evaluate(s, c, &step);
        if (rc)
            return rc;
        s->last_is_best = 0;
        if (step < s->best_step) {
            memcpy(s->best, c, (size_t)n * sizeof *c);
            s->best_step = step;
            s->last_is_best = 1;
        }
        int32_t j = n - 2;
        while (j >= 0 && c[j] == 0)
            j--;
        if (j < 0)
            return 0;
        int32_t last = c[n - 1];
        c[j]--;
        c[n - 1] = 0;
        c[j + 1] = last + 1;
    }
}

int ps__partition_search(const ps__partition *p, int32_t *best, int32_t *cand,
                         ps__partition_stats *stats)
{
    search s = {p, best, cand, 0.0, 0, 0, ps__partition_bound(p->stages), 0};
    double even_step;
    int rc = start(&s, &even_step);
    if (rc)
        return rc;
    double start_step = s.best_step;
    int64_t splits = p->stages > 1 ? ps__partition_splits(p->layers, p->stages, p->exhaustive)
                                   : p->exhaustive + 1;
    if (splits <= p->exhaustive) {
        if ((rc = exhaustive(&s)))
            return rc;
        if (!s.last_is_best && (rc = evaluate(&s, best, &s.best_step)))
            return rc;
        if (stats) {
            stats->evals = s.evals;
            stats->bound = splits + 3;
            stats->even_step = even_step;
            stats->start_step = start_step;
            stats->best_step = s.best_step;
        }
        return 0;
    }
    for (;;) {
        rc = adjacent_pass(&s);
        if (rc == 0)
            rc = distant_moves(&s);
        if (rc < 0)
            return rc;
        if (rc == 0)
            break;
    }
    if (!s.last_is_best && (rc = evaluate(&s, best, &s.best_step)))
        return rc;
    if (stats) {
        stats->evals = s.evals;
        stats->bound = s.budget + 3;
        stats->even_step = even_step;
        stats->start_step = start_step;
        stats->best_step = s.best_step;
    }
    return 0;
}
