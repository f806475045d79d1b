/*
 * The schedule IR: flat per-rank action arrays, the stage -> rank placement and the
 * micro-batch paths. Generation dispatches to the registry; everything here is storage and
 * accessors.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <string.h>

int ps_schedule_new(ps_schedule **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_schedule *s = ps__calloc(&al, 1, sizeof *s);
    if (!s)
        return PS_ENOMEM;
    s->al = al;
    s->family = -1;
    *out = s;
    return 0;
}

void ps__schedule_drop_lowered(ps_schedule *s)
{
    ps__free(&s->al, s->lacts, s->lacts_cap, sizeof *s->lacts);
    ps__free(&s->al, s->loff, (size_t)s->pp + 1, sizeof *s->loff);
    ps__free(&s->al, s->llen, (size_t)s->pp, sizeof *s->llen);
    s->lacts = NULL;
    s->loff = s->llen = NULL;
    s->lacts_cap = 0;
    s->lowered = 0;
}

/* Frees the metadata block (placement, paths, offsets) and forgets its pointers. */
static void free_meta(ps_schedule *s)
{
    ps__free(&s->al, s->meta, s->meta_size, 1);
    s->meta = NULL;
    s->meta_size = 0;
    s->stage_rank = s->path_stages = s->path_off = s->path_len = NULL;
    s->path_mb0 = s->path_mbn = s->path_next = s->path_prev = s->path_pos = NULL;
    s->mb_path = NULL;
    s->off = s->len = NULL;
}

void ps__schedule_clear(ps_schedule *s)
{
    ps__schedule_drop_lowered(s);
    ps__free(&s->al, s->order, s->order_cap, sizeof *s->order);
    free_meta(s);
    ps__free(&s->al, s->acts, s->acts_cap, sizeof *s->acts);
    ps_allocator keep = s->al;
    uint64_t version = s->version + 1;
    memset(s, 0, sizeof *s);
    s->al = keep;
    s->version = version;
    s->family = -1;
}

void ps_schedule_free(ps_schedule *s)
{
    if (!s)
        return;
    ps__schedule_clear(s);
    ps_allocator a = s->al;
    ps__free(&a, s, 1, sizeof *s);
}

const char *ps_schedule_last_error(const ps_schedule *s)
{
    return s ? s->err : "invalid argument: NULL schedule";
}

/* Takes n elements of size bytes from the block at *at (8-byte aligned pieces). */
static void *carve(char **at, size_t n, size_t size)
{
    void *p = *at;
    *at += (n * size + 7) & ~(size_t)7;
    return p;
}

int ps__schedule_alloc(ps_schedule *s, int32_t pp, int32_t nstages, int32_t m, int32_t npaths,
                       const int64_t *cap, int64_t per_rank, int32_t path_total)
{
    const ps_allocator *a = &s->al;
    size_t np = (size_t)npaths, ns = (size_t)nstages, p = (size_t)pp;
    ps__schedule_drop_lowered(s);
    free_meta(s);
    s->order_ok = 0;
    s->order_len = 0;
    s->version++;
    int64_t total = 0;
    for (int32_t r = 0; r < pp; r++)
        total += cap ? cap[r] : per_rank;
#define PIECE(n, size) ((((size_t)(n)) * (size) + 7) & ~(size_t)7)
    size_t bytes = PIECE(ns, 4) + PIECE(path_total, 4) + PIECE(np + 1, 4) + 3 * PIECE(np, 4) +
                   3 * PIECE(np * ns, 4) + (npaths > 1 ? PIECE(m, 1) : 0) + PIECE(p + 1, 8) +
                   PIECE(p, 8);
#undef PIECE
    s->meta = ps__calloc(a, bytes, 1);
    if (!s->meta)
        goto oom;
    s->meta_size = bytes;
    char *at = s->meta;
    s->off = carve(&at, p + 1, sizeof *s->off);
    s->len = carve(&at, p, sizeof *s->len);
    s->stage_rank = carve(&at, ns, sizeof(int32_t));
    s->path_stages = carve(&at, (size_t)path_total, sizeof(int32_t));
    s->path_off = carve(&at, np + 1, sizeof(int32_t));
    s->path_len = carve(&at, np, sizeof(int32_t));
    s->path_mb0 = carve(&at, np, sizeof(int32_t));
    s->path_mbn = carve(&at, np, sizeof(int32_t));
    s->path_next = carve(&at, np * ns, sizeof(int32_t));
    s->path_prev = carve(&at, np * ns, sizeof(int32_t));
    s->path_pos = carve(&at, np * ns, sizeof(int32_t));
    s->mb_path = npaths > 1 ? carve(&at, (size_t)m, 1) : NULL;
    if (!s->acts || s->acts_cap < (size_t)total) {
        ps__free(a, s->acts, s->acts_cap, sizeof *s->acts);
        s->acts_cap = 0;
        s->acts = ps__alloc(a, (size_t)total, sizeof *s->acts);
        if (!s->acts)
            goto oom;
        s->acts_cap = (size_t)total;
    }
    s->pp = pp;
    s->nstages = nstages;
    s->m = m;
    s->npaths = npaths;
    s->param_copies = 1;
    s->group = 0;
    s->family = -1;
    s->placement = PS__PLACE_CUSTOM;
    s->path_off[np] = path_total;
    total = 0;
    for (int32_t r = 0; r < pp; r++) {
        s->off[r] = total;
        total += cap ? cap[r] : per_rank;
    }
    s->off[pp] = total;
    return 0;
oom:
    ps__schedule_clear(s);
    return ps__seterr(s->err, PS_ENOMEM, "out of memory allocating a schedule of %d ranks", pp);
}

void ps__schedule_index_paths(ps_schedule *s)
{
    size_t ns = (size_t)s->nstages;
    for (int32_t k = 0; k < s->npaths; k++) {
        int32_t *nx = s->path_next + k * ns, *pv = s->path_prev + k * ns,
                *pos = s->path_pos + k * ns;
        const int32_t *st = s->path_stages + s->path_off[k];
        for (size_t i = 0; i < ns; i++)
            nx[i] = pv[i] = pos[i] = -1;
        for (int32_t i = 0; i < s->path_len[k]; i++) {
            pos[st[i]] = i;
            pv[st[i]] = i > 0 ? st[i - 1] : -1;
            nx[st[i]] = i + 1 < s->path_len[k] ? st[i + 1] : -1;
        }
        if (s->mb_path)
            for (int32_t j = 0; j < s->path_mbn[k]; j++)
                s->mb_path[s->path_mb0[k] + j] = (uint8_t)k;
    }
}

void ps__schedule_single_path(ps_schedule *s)
{
    for (int32_t i = 0; i < s->nstages; i++)
        s->path_stages[i] = i;
    s->path_off[0] = 0;
    s->path_off[1] = s->nstages;
    s->path_len[0] = s->nstages;
    s->path_mb0[0] = 0;
    s->path_mbn[0] = s->m;
    ps__schedule_index_paths(s);
}

const char *ps_schedule_family(const ps_schedule *s)
{
    if (!s)
        return NULL;
    return s->family >= 0 ? ps__families[s->family].name : "custom";
}

int ps_schedule_pp(const ps_schedule *s)
{
    return s ? s->pp : 0;
}
int ps_schedule_num_stages(const ps_schedule *s)
{
    return s ? s->nstages : 0;
}
int ps_schedule_microbatches(const ps_schedule *s)
{
    return s ? s->m : 0;
}
int ps_schedule_group_size(const ps_schedule *s)
{
    return s ? s->group : 0;
}
int ps_schedule_param_copies(const ps_schedule *s)
{
    return s ? s->param_copies : 0;
}
int ps_schedule_num_paths(const ps_schedule *s)
{
    return s ? s->npaths : 0;
}
int ps_schedule_is_lowered(const ps_schedule *s)
{
    return s ? s->lowered : 0;
}

int ps_schedule_vpp(const ps_schedule *s)
{
    if (!s || s->pp <= 0 || s->nstages % s->pp)
        return 0;
    return s->nstages / s->pp / (s->placement == PS__PLACE_BIDIR ? 2 : 1);
}

int ps_schedule_stage_rank(const ps_schedule *s, int stage)
{
    if (!s || stage < 0 || stage >= s->nstages)
        return -1;
    return s->stage_rank[stage];
}

int ps_schedule_path(const ps_schedule *s, int i, const int32_t **stages, int *n, int *first_mb,
                     int *count)
{
    if (!s || i < 0 || i >= s->npaths)
        return PS_EINVAL;
    if (stages)
        *stages = s->path_stages + s->path_off[i];
    if (n)
        *n = s->path_len[i];
    if (first_mb)
        *first_mb = s->path_mb0[i];
    if (count)
        *count = s->path_mbn[i];
    return 0;
}

int ps_schedule_path_neighbor(const ps_schedule *s, int stage, int mb, int dir)
{
    if (!s || !s->path_next || stage < 0 || stage >= s->nstages || mb < 0 || mb >= s->m || !dir)
        return -1;
    return ps__path_peer(s, dir > 0 ? 0 : 1, stage, mb);
}

size_t ps_schedule_rank_length(const ps_schedule *s, int rank)
{
    if (!s || rank < 0 || rank >= s->pp)
        return 0;
    return (size_t)s->len[rank];
}

const ps_action *ps_schedule_rank_actions(const ps_schedule *s, int rank)
{
    if (!s || rank < 0 || rank >= s->pp)
        return NULL;
    return s->acts + s->off[rank];
}

size_t ps_schedule_total_actions(const ps_schedule *s)
{
    size_t t = 0;
    if (!s)
        return 0;
    for (int32_t r = 0; r < s->pp; r++)
        t += (size_t)s->len[r];
    return t;
}

size_t ps_schedule_lowered_length(const ps_schedule *s, int rank)
{
    if (!s || !s->lowered || rank < 0 || rank >= s->pp)
        return 0;
    return (size_t)s->llen[rank];
}

const ps_action *ps_schedule_lowered_actions(const ps_schedule *s, int rank)
{
    if (!s || !s->lowered || rank < 0 || rank >= s->pp)
        return NULL;
    return s->lacts + s->loff[rank];
}
