/*
 * Generator entry points of every schedule family (one file each) for the registry table.
 * Adding a family = one file and one row in registry.c.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_SCHEDULES_H
#define PS_SCHEDULES_H

#include "internal.h"

#define PS__FAMILY_DECL(n)                                                                         \
    int ps__##n##_check(const ps__params *p, char *why);                                           \
    int ps__##n##_generate(ps_schedule *s, const ps__params *p);

PS__FAMILY_DECL(gpipe)
PS__FAMILY_DECL(1f1b)
PS__FAMILY_DECL(interleaved)
PS__FAMILY_DECL(interleaved_rounds)
PS__FAMILY_DECL(looped_bfs)
PS__FAMILY_DECL(zb_h1)
PS__FAMILY_DECL(zb_h2)
PS__FAMILY_DECL(interleaved_zb)
PS__FAMILY_DECL(zb_v)
PS__FAMILY_DECL(v_half)
PS__FAMILY_DECL(v_min)
PS__FAMILY_DECL(zb_auto)
PS__FAMILY_DECL(dualpipe)
PS__FAMILY_DECL(dualpipev)
PS__FAMILY_DECL(adaptive)

/*
 * Walks Megatron's schedule table (interleaved.c, and PyTorch's rules in interleaved-rounds and
 * interleaved-zb with G = m / rounds): micro-batches in groups of G (the last group takes the
 * remainder); within a group, chunk 0 of every member, then chunk 1, ... The current entry is
 * (micro-batch gstart + in, chunk). Incremental, so that generation does no division per
 * action.
 */
typedef struct ps__table_it {
    int32_t m, v, G;
    int32_t gstart, gsize, chunk, in;
} ps__table_it;

static inline void ps__table_init(ps__table_it *t, int32_t m, int32_t v, int32_t G)
{
    t->m = m;
    t->v = v;
    t->G = G;
    t->gstart = 0;
    t->gsize = G < m ? G : m;
    t->chunk = 0;
    t->in = 0;
}

static inline void ps__table_next(ps__table_it *t)
{
    if (++t->in < t->gsize)
        return;
    t->in = 0;
    if (++t->chunk < t->v)
        return;
    t->chunk = 0;
    t->gstart += t->gsize;
    t->gsize = t->m - t->gstart < t->G ? t->m - t->gstart : t->G;
}

/*
 * Interleaved 1F1B's walk of the schedule table on every rank (interleaved.c): warm-up
 * warm_base + factor (p-r-1) forwards (capped at m v), steady steps of one forward and one
 * backward (one fused FB when fuse is set and their micro-batches differ), cool-down backwards
 * (I then W when split is set). Shared by interleaved, interleaved-rounds and adaptive; inline
 * so that each caller's constant fuse and split leave no branch in its loop.
 */
static inline void ps__interleaved_walk(ps_schedule *s, const ps__params *p, int32_t G, int factor,
                                        int64_t warm_base, int fuse, int split)
{
    int64_t total = (int64_t)p->m * p->v;
    int32_t v = p->v, pp = p->p;
    for (int32_t r = 0; r < pp; r++) {
        int64_t warm = warm_base + (int64_t)factor * (pp - r - 1);
        if (warm > total)
            warm = total;
        ps__table_it f, b;
        ps__table_init(&f, p->m, v, G);
        ps__table_init(&b, p->m, v, G);
        for (int64_t k = 0; k < warm; k++, ps__table_next(&f))
            ps__emit(s, r, PS_F, f.chunk * pp + r, f.gstart + f.in);
        for (int64_t k = 0; k + warm < total; k++, ps__table_next(&f), ps__table_next(&b)) {
            int32_t fmb = f.gstart + f.in, bmb = b.gstart + b.in;
            int32_t fst = f.chunk * pp + r, bst = (v - 1 - b.chunk) * pp + r;
            if (fuse && fmb != bmb) {
                ps__emit_fb(s, r, fst, fmb, PS_B, bst, bmb);
            } else {
                ps__emit(s, r, PS_F, fst, fmb);
                ps__emit(s, r, PS_B, bst, bmb);
            }
        }
        for (int64_t k = total - warm; k < total; k++, ps__table_next(&b)) {
            int32_t bmb = b.gstart + b.in, bst = (v - 1 - b.chunk) * pp + r;
            if (split) {
                ps__emit(s, r, PS_I, bst, bmb);
                ps__emit(s, r, PS_W, bst, bmb);
            } else {
                ps__emit(s, r, PS_B, bst, bmb);
            }
        }
    }
}

/* PyTorch's rounds = max(1, m // p) (interleaved-rounds, interleaved-zb). */
static inline int32_t ps__rounds(const ps__params *p)
{
    return p->m / p->p > 1 ? p->m / p->p : 1;
}

/* Their shared constraint, m a multiple of rounds, with the reason in why (interleaved.c). */
int ps__rounds_check(const ps__params *p, const char *family, char *why);
/* Megatron's interleaved rule for a family that runs its table (adaptive): the reason in why,
 * with the group size that would accept m. */
int ps__interleaved_table_check(const ps__params *p, char *why);

/* Shared by zb-h1 (c = 1) and zb-h2 (c = 2): see zb_h1.c. */
void ps__zb_h_emit(ps_schedule *s, const ps__params *p, int32_t c);

/*
 * One rank of DualPipe's 8-step program (dualpipe.c), shared by DualPipe and DualPipeV. The
 * program's rank count H and half rank h (the rank's position among them, h = H-1 being the
 * middle), C micro-batches per phase; phase k runs stage[k] on micro-batches mb0[k] ..
 * mb0[k] + C - 1, in order. Needs 0 <= h < H and C >= 2H - h. Appends to rank's list.
 * Returns 0, or PS_EINVALID with the broken invariant of the program in s->err (a bug: the
 * families' checks admit no other parameters).
 */
typedef struct ps__dual_rank {
    int32_t H, h, C;
    int32_t stage[2], mb0[2];
} ps__dual_rank;

int ps__dual_emit(ps_schedule *s, int32_t rank, const ps__dual_rank *d);

#endif
