/*
 * V-Half, and the V-shape building-block scheduler it shares with V-Min (v_min.c).
 *
 * From "Pipeline Parallelism with Controllable Memory" (Qi et al., 2024) and its greedy
 * generator (sail-sg/zero-bubble-pipeline-parallelism, scheduler/zbv_greedy.py). Rank r holds
 * chunk 0 (stage r) and chunk 1 (stage 2p-1-r). Time is cut into unit slots; per micro-batch a
 * rank runs four passes, named as in the paper: F (chunk 0 forward), f (chunk 1 forward), B
 * (chunk 1 input gradient), b (chunk 0 input gradient), plus one weight gradient W per
 * backward. The building block puts micro-batch 0's passes on rank i, n = p, at
 *
 *   V-Half: F 2i, f 3n-i-2, B 3n+d+2i-1, b 6n+d-i-2     d = 3 if n is even, else 0
 *   V-Min:  F i,  f 2n-i-1, B 2n+d+i,    b 4n+d-i-1     d = 2 if n % 3 == 0, else 0
 *
 * and micro-batch k at the same slots + 6k (the four residues mod 6 differ on every rank, so
 * the blocks interlock). Then, as the reference does:
 *
 *   1. put_w: each free slot takes a W while a backward is waiting for one;
 *   2. squeeze with Ws: visiting passes in slot order, every pass of the warm-up (before rank
 *      0's first b) and of the cool-down (from the last micro-batch's first F on) moves to the
 *      earliest free slot after its dependencies where the rank's activation count (F, f +1;
 *      W -1) stays within the limit; then every rank is compacted (as soon as possible, unit
 *      costs, in its slot order);
 *   3. the Ws are dropped, the cool-down is squeezed again with each free slot after a
 *      backward counting as a W, the Ws are put back and the ranks compacted again;
 *   4. the Ws are put back per chunk (chunk 1's first) and each rank reads off its list in
 *      slot order.
 *
 * The limit is the largest peak over all ranks before the pass, which is what the reference
 * compares against: a rank whose own steady state needs less may fill up to it during
 * warm-up (V-Min's rank 0 peaks one below the largest rank when p % 3 == 2).
 *
 * Cost. The reference re-walks a whole rank for every tentative slot, cubic in p or worse
 * (it timed out at 64 x 1024). Here every rank keeps its slot array, a two-level bitmap of
 * free slots and a segment tree over buckets of 16 slots whose root is the rank's peak, so a
 * tentative move costs O(log slots). With implicit Ws the count after slot t is C(t) + P(t):
 * C sums +1 per forward and -1 per backward, and P, the backward passes still waiting for
 * their W, follows Lindley's recursion P(t) = max(P(t-1) + d, 0) with d = +1 at a backward
 * and -1 at a free slot. Maps of that form compose, so a node keeps its sums and the two
 * maxima of C + P (one that grows with the incoming backlog, one that does not). With
 * explicit Ws d is 0 and a W counts -1 in C.
 *
 * Long runs. Once warm-up and cool-down are far enough apart, one more micro-batch only
 * inserts one steady-state period (six actions) into every rank's list. So the steps above
 * run on at most mb = 2p + 8 (V-Min: 1.5p + 8) micro-batches and the lists are stretched to
 * m (see base_microbatches()). Time O(p (p + mb) log p + p m); scratch memory about 6 bytes
 * per slot, a rank's timeline being about 8 mb + 6p slots, and 36 per action of the base run.
 * SPDX-License-Identifier: MIT
 */
#include "vshape.h"

#include <limits.h>
#include <string.h>

/* Passes, numbered as the reference: F, f, B, b, W. A slot holds pass + 1, or 0 when free. */
enum { P_F0 = 0, P_F1 = 1, P_B1 = 2, P_B0 = 3, P_W = 4 };
enum { K_FREE = 0, K_F0 = 1, K_F1 = 2, K_B1 = 3, K_B0 = 4, K_W = 5 };

#define BK_SHIFT 4
#define BK (1 << BK_SHIFT)
#define NEG (INT32_MIN / 4) /* minus infinity that survives a few additions */

/*
 * A run of slots as a map of the incoming backlog x: the count at its slots is at most
 * max(x + ma, mb) above the count before it, and the backlog leaving it is max(x + s, g);
 * c and s are the sums of the count and backlog steps.
 */
typedef struct vs_node {
    int32_t c, s, g, ma, mb;
} vs_node;

typedef struct vs {
    const ps_allocator *al;
    int32_t n, m;
    int32_t T;      /* slots per rank (a multiple of 64) */
    int32_t nb;     /* buckets per rank */
    int32_t P;      /* tree leaves per rank: a power of two >= nb */
    int32_t nw;     /* words of the free-slot bitmap per rank, then nw / 64 summary words */
    size_t bstride; /* bitmap words per rank in all */
    size_t per;     /* elements per rank: m each of F, f, B, b, then 2m W */
    int32_t *tim, *end, *count, *last, *fen;
    uint64_t *order, *freebits;
    uint8_t *slot;
    vs_node *tree;
} vs;

/* Step of the count and of the backlog per slot kind; [1] with explicit Ws, [0] without. */
static const int8_t step_c[2][6] = {{0, 1, 1, -1, -1, 0}, {0, 1, 1, 0, 0, -1}};
static const int8_t step_d[2][6] = {{-1, 0, 0, 1, 1, 0}, {0, 0, 0, 0, 0, 0}};

static inline int32_t max32(int32_t a, int32_t b)
{
    return a > b ? a : b;
}

static inline vs_node node_comb(vs_node l, vs_node r)
{
    vs_node o;
    o.c = l.c + r.c;
    o.s = l.s + r.s;
    o.g = max32(l.g + r.s, r.g);
    o.ma = max32(l.ma, l.c + l.s + r.ma);
    o.mb = max32(l.mb, l.c + max32(l.g + r.ma, r.mb));
    return o;
}

static const vs_node node_empty = {0, 0, 0, NEG, NEG};

static vs_node bucket_fold(const uint8_t *k, int wmode)
{
    vs_node a = node_empty;
    if (wmode) { /* no backlog: only the running sum and its maximum */
        const int8_t *sc = step_c[1];
        for (int i = 0; i < BK; i++) {
            a.c += sc[k[i]];
            a.ma = max32(a.ma, a.c);
        }
        a.mb = a.ma;
        return a;
    }
    const int8_t *sc = step_c[0], *sd = step_d[0];
    for (int i = 0; i < BK; i++) {
        a.c += sc[k[i]];
        a.s += sd[k[i]];
        a.g = max32(a.g + sd[k[i]], 0);
        a.ma = max32(a.ma, a.c + a.s);
        a.mb = max32(a.mb, a.c + a.g);
    }
    return a;
}

/* node_comb() when s = g = 0 and ma = mb (explicit Ws). */
static inline vs_node node_comb_w(vs_node l, vs_node r)
{
    vs_node o = l;
    o.c = l.c + r.c;
    o.ma = o.mb = max32(l.ma, l.c + r.ma);
    return o;
}

static inline uint8_t *rank_slots(const vs *v, int32_t r)
{
    return v->slot + (size_t)r * (size_t)v->T;
}

static inline vs_node *rank_tree(const vs *v, int32_t r)
{
    return v->tree + (size_t)r * 2 * (size_t)v->P;
}

static void tree_update(vs *v, int32_t r, int32_t b, int wmode)
{
    vs_node *t = rank_tree(v, r);
    size_t i = (size_t)v->P + (size_t)b;
    t[i] = bucket_fold(rank_slots(v, r) + ((size_t)b << BK_SHIFT), wmode);
    if (wmode)
        for (i >>= 1; i; i >>= 1)
            t[i] = node_comb_w(t[2 * i], t[2 * i + 1]);
    else
        for (i >>= 1; i; i >>= 1)
            t[i] = node_comb(t[2 * i], t[2 * i + 1]);
}

static void tree_build(vs *v, int32_t r, int wmode)
{
    vs_node *t = rank_tree(v, r);
    const uint8_t *sl = rank_slots(v, r);
    for (int32_t b = 0; b < v->P; b++)
        t[v->P + b] = b < v->nb ? bucket_fold(sl + ((size_t)b << BK_SHIFT), wmode) : node_empty;
    for (int32_t i = v->P - 1; i > 0; i--)
        t[i] = wmode ? node_comb_w(t[2 * i], t[2 * i + 1]) : node_comb(t[2 * i], t[2 * i + 1]);
}

/* The rank's peak: the count starts at 0 with no backlog, so only mb applies. */
static inline int32_t tree_peak(const vs *v, int32_t r)
{
    return max32(rank_tree(v, r)[1].mb, 0);
}

/*
 * Free-slot bitmap: bit t of a rank's words is set when slot t is free, and bit i of its
 * summary words when word i has a set bit, so that the next free slot skips packed stretches
 * 4096 slots at a time.
 */
static inline void mark(vs *v, int32_t r, int32_t t, int free_)
{
    uint64_t *w = v->freebits + (size_t)r * v->bstride, *sum = w + v->nw;
    size_t i = (size_t)t >> 6;
    uint64_t bit = (uint64_t)1 << (t & 63), sbit = (uint64_t)1 << (i & 63);
    if (free_) {
        w[i] |= bit;
        sum[i >> 6] |= sbit;
    } else {
        w[i] &= ~bit;
        if (!w[i])
            sum[i >> 6] &= ~sbit;
    }
}

static inline int ctz64(uint64_t x)
{
#if defined(__GNUC__)
    return __builtin_ctzll(x);
#else
    int n = 0;
    while (!(x & 1)) {
        x >>= 1;
        n++;
    }
    return n;
#endif
}

/* The first free slot in [x, lim), or lim. */
static int32_t next_free(const vs *v, int32_t r, int32_t x, int32_t lim)
{
    const uint64_t *w = v->freebits + (size_t)r * v->bstride, *sum = w + v->nw;
    if (x >= lim)
        return lim;
    uint64_t bits = w[x >> 6] >> (x & 63);
    if (bits) {
        int32_t t = x + ctz64(bits);
        return t < lim ? t : lim;
    }
    for (int32_t j = (x >> 6) + 1; j << 6 < lim; j = (j | 63) + 1) {
        uint64_t sw = sum[j >> 6] >> (j & 63);
        if (sw) {
            j += ctz64(sw);
            if (j << 6 >= lim)
                break;
            int32_t t = (j << 6) + ctz64(w[j]);
            return t < lim ? t : lim;
        }
    }
    return lim;
}

/* Fenwick tree over a rank's buckets counting its backward passes (B and b). */
static void fen_add(vs *v, int32_t r, int32_t b, int32_t d)
{
    int32_t *f = v->fen + (size_t)r * (size_t)(v->nb + 1);
    for (int32_t i = b + 1; i <= v->nb; i += i & -i)
        f[i] += d;
}

static void fen_build(vs *v, int32_t r)
{
    int32_t *f = v->fen + (size_t)r * (size_t)(v->nb + 1);
    const uint8_t *sl = rank_slots(v, r);
    memset(f, 0, sizeof *f * (size_t)(v->nb + 1));
    for (int32_t b = 0; b < v->nb; b++) {
        int32_t c = 0;
        for (int i = 0; i < BK; i++)
            c += sl[(b << BK_SHIFT) + i] == K_B1 || sl[(b << BK_SHIFT) + i] == K_B0;
        f[b + 1] += c;
        int32_t up = (b + 1) + ((b + 1) & -(b + 1));
        if (up <= v->nb)
            f[up] += f[b + 1];
    }
}

/* Slot of the rank's k-th backward pass (0-based) in slot order; the rank has more than k. */
static int32_t kth_backward(const vs *v, int32_t r, int32_t k)
{
    const int32_t *f = v->fen + (size_t)r * (size_t)(v->nb + 1);
    int32_t pos = 0, rem = k + 1, step = 1;
    while (step * 2 <= v->nb)
        step *= 2;
    for (; step; step >>= 1)
        if (pos + step <= v->nb && f[pos + step] < rem) {
            pos += step;
            rem -= f[pos];
        }
    const uint8_t *sl = rank_slots(v, r) + ((size_t)pos << BK_SHIFT);
    for (int i = 0; i < BK; i++)
        if ((sl[i] == K_B1 || sl[i] == K_B0) && --rem == 0)
            return (pos << BK_SHIFT) + i;
    return INT32_MAX; /* not reached */
}

/* The last slot of the rank's four passes (the W lists end later). */
static int32_t rank_bound(const vs *v, int32_t r)
{
    const int32_t *tm = v->tim + (size_t)r * v->per;
    int32_t b = 0;
    for (int ty = 0; ty < 4; ty++)
        b = max32(b, tm[(size_t)(ty + 1) * (size_t)v->m - 1]);
    return b;
}

/* Fills rank r's slots and free bitmap from the times of its four passes (and Ws). */
static void build_rank(vs *v, int32_t r, int with_w)
{
    uint8_t *sl = rank_slots(v, r);
    const int32_t *tm = v->tim + (size_t)r * v->per;
    memset(sl, 0, (size_t)v->T);
    uint64_t *w = v->freebits + (size_t)r * v->bstride;
    memset(w, 0xff, sizeof *w * (size_t)v->nw);
    memset(w + v->nw, 0, sizeof *w * (v->bstride - (size_t)v->nw));
    for (int32_t i = 0; i < v->nw; i++)
        w[v->nw + (i >> 6)] |= (uint64_t)1 << (i & 63);
    size_t n = (size_t)v->m * (with_w ? 6 : 4);
    for (size_t j = 0; j < n; j++) {
        int ty = j < 4 * (size_t)v->m ? (int)(j / (size_t)v->m) : P_W;
        sl[tm[j]] = (uint8_t)(ty + 1);
        mark(v, r, tm[j], 0);
    }
}

/*
 * The reference's put_w on rank r: walking the slots up to the last pass, each free slot
 * takes a W while some backward still waits for one; the rest follow the last pass.
 */
static void put_w(vs *v, int32_t r)
{
    uint8_t *sl = rank_slots(v, r);
    int32_t *tw = v->tim + (size_t)r * v->per + 4 * (size_t)v->m;
    int32_t bound = rank_bound(v, r), pend = 0, kw = 0, t;
    for (t = 0; t <= bound; t++) {
        if (sl[t] == K_B1 || sl[t] == K_B0) {
            pend++;
        } else if (sl[t] == K_FREE && pend) {
            sl[t] = K_W;
            mark(v, r, t, 0);
            tw[kw++] = t;
            pend--;
        }
    }
    for (; pend; t++, pend--) {
        sl[t] = K_W;
        mark(v, r, t, 0);
        tw[kw++] = t;
    }
}

/* order[i]: bits 0-31 the element index, 32-47 the rank, 48-55 the pass. */
static inline uint64_t pack(size_t id, int32_t r, int ty)
{
    return (uint64_t)id | (uint64_t)r << 32 | (uint64_t)ty << 48;
}

/*
 * Sorts the elements by (slot, rank), the order in which the reference visits them (a rank
 * has one element per slot), by counting: O(elements + slots).
 */
static size_t sort_by_slot(vs *v, int with_w)
{
    int npass = with_w ? 5 : 4;
    memset(v->count, 0, sizeof *v->count * ((size_t)v->T + 1));
    for (int32_t r = 0; r < v->n; r++) {
        const int32_t *tm = v->tim + (size_t)r * v->per;
        size_t n = (size_t)v->m * (with_w ? 6 : 4);
        for (size_t j = 0; j < n; j++)
            v->count[tm[j] + 1]++;
    }
    for (int32_t t = 0; t < v->T; t++)
        v->count[t + 1] += v->count[t];
    for (int32_t r = 0; r < v->n; r++) {
        size_t base = (size_t)r * v->per;
        for (int ty = 0; ty < npass; ty++) {
            size_t k0 = base + (size_t)ty * (size_t)v->m;
            size_t kn = ty == P_W ? 2 * (size_t)v->m : (size_t)v->m;
            for (size_t k = 0; k < kn; k++)
                v->order[v->count[v->tim[k0 + k]]++] = pack(k0 + k, r, ty);
        }
    }
    return (size_t)v->n * (size_t)v->m * (with_w ? 6 : 4);
}

/*
 * The reference's eager_execution_time with unit costs: every element starts as soon as its
 * predecessors (the pass's previous stage on the path, the same rank's earlier pass of the
 * micro-batch, the same pass of the previous micro-batch) and the rank's previous element
 * are done. Times only decrease. W elements, when present, follow their predecessor W only.
 */
static void compact(vs *v, int with_w)
{
    size_t total = sort_by_slot(v, with_w), per = v->per, m = (size_t)v->m;
    memset(v->last, 0, sizeof *v->last * (size_t)v->n);
    for (size_t i = 0; i < total; i++) {
        uint64_t o = v->order[i];
        size_t id = (size_t)(uint32_t)o;
        int32_t r = (int32_t)(o >> 32 & 0xffff);
        int ty = (int)(o >> 48);
        size_t k = id - (size_t)r * per - (size_t)ty * m;
        int32_t e = v->last[r];
        if ((ty == P_F0 || ty == P_B1) && r > 0)
            e = max32(e, v->end[id - per]);
        else if ((ty == P_F1 || ty == P_B0) && r < v->n - 1)
            e = max32(e, v->end[id + per]);
        if (ty >= P_F1 && ty <= P_B0)
            e = max32(e, v->end[id - m]);
        if (k > 0)
            e = max32(e, v->end[id - 1]);
        v->end[id] = e + 1;
        v->last[r] = e + 1;
    }
    for (int32_t r = 0; r < v->n; r++) {
        size_t base = (size_t)r * per, n = m * (with_w ? 6 : 4);
        for (size_t j = 0; j < n; j++)
            v->tim[base + j] = v->end[base + j] - 1;
    }
}

/*
 * Moves the element of kind k on rank r from slot t0 to the free slot t1 < t0 when the
 * rank's peak stays within limit; returns 1 when moved.
 */
static int try_move(vs *v, int32_t r, uint8_t k, int32_t t0, int32_t t1, int wmode, int32_t limit)
{
    uint8_t *sl = rank_slots(v, r);
    int backward = k == K_B1 || k == K_B0;
    /* With explicit Ws a backward moves no count and a W only lowers it. */
    int touch = !wmode || !backward;
    int check = !wmode || k == K_F0 || k == K_F1;
    sl[t1] = k;
    sl[t0] = K_FREE;
    if (touch) {
        tree_update(v, r, t1 >> BK_SHIFT, wmode);
        if (t0 >> BK_SHIFT != t1 >> BK_SHIFT)
            tree_update(v, r, t0 >> BK_SHIFT, wmode);
    }
    if (check && tree_peak(v, r) > limit) {
        sl[t1] = K_FREE;
        sl[t0] = k;
        tree_update(v, r, t1 >> BK_SHIFT, wmode);
        if (t0 >> BK_SHIFT != t1 >> BK_SHIFT)
            tree_update(v, r, t0 >> BK_SHIFT, wmode);
        return 0;
    }
    mark(v, r, t1, 0);
    mark(v, r, t0, 1);
    if (wmode && backward && t0 >> BK_SHIFT != t1 >> BK_SHIFT) {
        fen_add(v, r, t1 >> BK_SHIFT, 1);
        fen_add(v, r, t0 >> BK_SHIFT, -1);
    }
    return 1;
}

/*
 * The reference's reorder (the paper's squeeze) on the slots as they stand: with explicit Ws
 * (wmode) warm-up and cool-down, without them the cool-down only.
 */
static void squeeze(vs *v, int wmode)
{
    int32_t limit = 0, n = v->n;
    size_t per = v->per, m = (size_t)v->m;
    for (int32_t r = 0; r < n; r++) {
        tree_build(v, r, wmode);
        if (wmode)
            fen_build(v, r);
        limit = max32(limit, tree_peak(v, r));
    }
    size_t total = sort_by_slot(v, wmode);
    int phase = 0;
    for (size_t i = 0; i < total; i++) {
        uint64_t o = v->order[i];
        size_t id = (size_t)(uint32_t)o;
        int32_t r = (int32_t)(o >> 32 & 0xffff);
        int ty = (int)(o >> 48);
        size_t k = id - (size_t)r * per - (size_t)ty * m;
        /* Warm-up until rank 0's first b; the steady state until the last micro-batch's
         * first F (kept as it is); the cool-down after. */
        if (ty == P_B0 && r == 0 && phase == 0)
            phase = 1;
        if (phase == 1) {
            if (ty == P_F0 && k == m - 1)
                phase = 2;
            continue;
        }
        if (phase == 0 && !wmode)
            continue;
        int32_t dep = -1;
        if ((ty == P_F0 || ty == P_B1) && r > 0)
            dep = max32(dep, v->tim[id - per]);
        else if ((ty == P_F1 || ty == P_B0) && r < n - 1)
            dep = max32(dep, v->tim[id + per]);
        if (ty >= P_F1 && ty <= P_B0)
            dep = max32(dep, v->tim[id - m]);
        if (ty == P_W) /* the k-th W follows the k-th backward of the rank */
            dep = max32(dep, kth_backward(v, r, (int32_t)k));
        if (k > 0)
            dep = max32(dep, v->tim[id - 1]);
        int32_t t0 = v->tim[id];
        for (int32_t t1 = next_free(v, r, dep + 1, t0); t1 < t0; t1 = next_free(v, r, t1 + 1, t0)) {
            if (try_move(v, r, (uint8_t)(ty + 1), t0, t1, wmode, limit)) {
                v->tim[id] = t1;
                break;
            }
        }
    }
}

static inline void put_act(ps_action *a, int kind, int32_t stage, int32_t mb)
{
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->stage = stage;
    a->mb = mb;
}

/* Step 4: Ws back per chunk (chunk 1's first), and rank r's list in slot order into out. */
static void rank_list(vs *v, int32_t r, ps_action *out)
{
    build_rank(v, r, 0);
    const uint8_t *sl = rank_slots(v, r);
    int32_t st0 = r, st1 = 2 * v->n - 1 - r, bound = rank_bound(v, r);
    int32_t kf0 = 0, kf1 = 0, kb1 = 0, kb0 = 0, w1 = 0, w0 = 0;
    for (int32_t t = 0; t <= bound; t++) {
        switch (sl[t]) {
        case K_F0:
            put_act(out++, PS_F, st0, kf0++);
            break;
        case K_F1:
            put_act(out++, PS_F, st1, kf1++);
            break;
        case K_B1:
            put_act(out++, PS_I, st1, kb1++);
            break;
        case K_B0:
            put_act(out++, PS_I, st0, kb0++);
            break;
        default:
            if (w1 < kb1)
                put_act(out++, PS_W, st1, w1++);
            else if (w0 < kb0)
                put_act(out++, PS_W, st0, w0++);
            break;
        }
    }
    while (w1 < kb1)
        put_act(out++, PS_W, st1, w1++);
    while (w0 < kb0)
        put_act(out++, PS_W, st0, w0++);
}

static void vs_free(vs *v)
{
    const ps_allocator *al = v->al;
    size_t elems = (size_t)v->n * v->per;
    ps__free(al, v->tim, elems, sizeof *v->tim);
    ps__free(al, v->end, elems, sizeof *v->end);
    ps__free(al, v->order, elems, sizeof *v->order);
    ps__free(al, v->count, (size_t)v->T + 1, sizeof *v->count);
    ps__free(al, v->last, (size_t)v->n, sizeof *v->last);
    ps__free(al, v->fen, (size_t)v->n * (size_t)(v->nb + 1), sizeof *v->fen);
    ps__free(al, v->freebits, (size_t)v->n * v->bstride, sizeof *v->freebits);
    ps__free(al, v->slot, (size_t)v->n * (size_t)v->T, 1);
    ps__free(al, v->tree, (size_t)v->n * 2 * (size_t)v->P, sizeof *v->tree);
    memset(v, 0, sizeof *v);
}

static int vs_alloc(vs *v, const ps_allocator *al, int32_t n, int32_t m)
{
    memset(v, 0, sizeof *v);
    v->al = al;
    v->n = n;
    v->m = m;
    v->per = 6 * (size_t)m;
    /* Pattern slots end before 6(m-1) + 6n + 2 and the Ws after them by 2m at most; squeezing
     * and compaction only move elements earlier. */
    int64_t T = 8 * (int64_t)m + 6 * (int64_t)n + 4;
    v->T = (int32_t)((T + 63) / 64 * 64);
    v->nb = v->T >> BK_SHIFT;
    v->nw = v->T / 64;
    v->bstride = (size_t)v->nw + ((size_t)v->nw + 63) / 64;
    v->P = 1;
    while (v->P < v->nb)
        v->P *= 2;
    size_t nr = (size_t)n, elems = nr * v->per;
    v->tim = ps__alloc(al, elems, sizeof *v->tim);
    v->end = ps__alloc(al, elems, sizeof *v->end);
    v->order = ps__alloc(al, elems, sizeof *v->order);
    v->count = ps__alloc(al, (size_t)v->T + 1, sizeof *v->count);
    v->last = ps__alloc(al, nr, sizeof *v->last);
    v->fen = ps__alloc(al, nr * (size_t)(v->nb + 1), sizeof *v->fen);
    v->freebits = ps__alloc(al, nr * v->bstride, sizeof *v->freebits);
    v->slot = ps__alloc(al, nr * (size_t)v->T, 1);
    v->tree = ps__alloc(al, nr * 2 * (size_t)v->P, sizeof *v->tree);
    if (!v->tim || !v->end || !v->order || !v->count || !v->last || !v->fen || !v->freebits ||
        !v->slot || !v->tree) {
        vs_free(v);
        return PS_ENOMEM;
    }
    return 0;
}

/* Steps 0-3 for v->n ranks and v->m micro-batches: the final slots are in v->tim. */
static void vs_schedule(vs *v, int block)
{
    int32_t n = v->n, d;
    if (block == PS__VSHAPE_HALF)
        d = n % 2 == 0 ? 3 : 0;
    else
        d = n % 3 == 0 ? 2 : 0;
    for (int32_t r = 0; r < n; r++) {
        int32_t off[4];
        if (block == PS__VSHAPE_HALF) {
            off[P_F0] = 2 * r;
            off[P_F1] = 3 * n - r - 2;
            off[P_B1] = 3 * n + d + 2 * r - 1;
            off[P_B0] = 6 * n + d - r - 2;
        } else {
            off[P_F0] = r;
            off[P_F1] = 2 * n - r - 1;
            off[P_B1] = 2 * n + d + r;
            off[P_B0] = 4 * n + d - r - 1;
        }
        int32_t *tm = v->tim + (size_t)r * v->per;
        for (int ty = 0; ty < 4; ty++)
            for (int32_t k = 0; k < v->m; k++)
                tm[(size_t)ty * (size_t)v->m + (size_t)k] = off[ty] + 6 * k;
    }

    for (int32_t r = 0; r < n; r++) {
        build_rank(v, r, 0);
        put_w(v, r);
    }
    squeeze(v, 1);
    compact(v, 1);

    for (int32_t r = 0; r < n; r++)
        build_rank(v, r, 0);
    squeeze(v, 0);
    for (int32_t r = 0; r < n; r++)
        put_w(v, r);
    compact(v, 1);
}

/*
 * Micro-batches beyond which a longer run only repeats the steady state. With the full
 * computation, going from m to m + 1 inserts, on every rank, one period in front of the
 * chunk-0 forward of micro-batch m / 2 and renumbers what follows by one, from m = 2p + 2 on
 * for V-Half (even p; 2p odd) and about 4p/3 + 2 on for V-Min (every p <= 64, every m up to
 * 4p + 16). The stretched lists equal the full computation for every p <= 96 at six values
 * of m from mb - 1 to 2 mb + 3 and at sizes up to p = 1000. With a margin:
 */
static int32_t base_microbatches(int32_t p, int block)
{
    return block == PS__VSHAPE_HALF ? 2 * p + 8 : (3 * p + 1) / 2 + 8;
}

static int same_shifted(const ps_action *a, const ps_action *b)
{
    return a->kind == b->kind && a->stage == b->stage && a->mb + 1 == b->mb;
}

/*
 * Where rank r's list (6mb actions) takes extra periods: at its chunk-0 forward of
 * micro-batch mb / 2, provided the list repeats itself there (one period back, two ahead);
 * -1 otherwise.
 */
static int64_t period_cut(const ps_action *a, int32_t r, int32_t mb)
{
    int64_t n = 6 * (int64_t)mb, x = 0;
    while (x < n && !(a[x].kind == PS_F && a[x].stage == r && a[x].mb == mb / 2))
        x++;
    if (x < 6 || x + 18 > n)
        return -1;
    for (int64_t i = x - 6; i < x + 12; i++)
        if (!same_shifted(&a[i], &a[i + 6]))
            return -1;
    return x;
}

int ps__vshape_generate(ps_schedule *s, const ps__params *p, int block)
{
    int32_t n = p->p, m = p->m, mb = base_microbatches(n, block);
    if (mb > m)
        mb = m;
    for (;;) {
        /* Schedule mb micro-batches, then stretch each rank's steady state to m. */
        size_t per = 6 * (size_t)mb;
        vs v;
        if (vs_alloc(&v, &s->al, n, mb))
            return PS_ENOMEM;
        ps_action *base = ps__alloc(&s->al, (size_t)n * per, sizeof *base);
        if (!base) {
            vs_free(&v);
            return PS_ENOMEM;
        }
        vs_schedule(&v, block);
        for (int32_t r = 0; r < n; r++)
            rank_list(&v, r, base + (size_t)r * per);
        vs_free(&v);
        int ok = 1;
        for (int32_t r = 0; r < n && ok && mb < m; r++)
            ok = period_cut(base + (size_t)r * per, r, mb) >= 0;
        if (!ok) { /* never seen; the full computation is right anyway */
            ps__free(&s->al, base, (size_t)n * per, sizeof *base);
            mb = m;
            continue;
        }
        int32_t extra = m - mb;
        for (int32_t r = 0; r < n; r++) {
            const ps_action *a = base + (size_t)r * per;
            ps_action *out = s->acts + s->off[r];
            size_t x = extra ? (size_t)period_cut(a, r, mb) : per;
            memcpy(out, a, x * sizeof *a);
            out += x;
            for (int32_t q = 0; q < extra; q++)
                for (size_t i = x; i < x + 6; i++, out++) {
                    *out = a[i];
                    out->mb += q;
                }
            for (size_t i = x; i < per; i++, out++) {
                *out = a[i];
                out->mb += extra;
            }
            s->len[r] = 6 * (int64_t)m;
        }
        ps__free(&s->al, base, (size_t)n * per, sizeof *base);
        return 0;
    }
}

int ps__v_half_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__v_half_generate(ps_schedule *s, const ps__params *p)
{
    return ps__vshape_generate(s, p, PS__VSHAPE_HALF);
}
