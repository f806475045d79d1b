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

void ps__schedule_clear(ps_schedule *s)
{
    const ps_allocator *a = &s->al;
    size_t np = (size_t)s->npaths, ns = (size_t)s->nstages;
    ps__schedule_drop_lowered(s);
    ps__free(a, s->stage_rank, ns, sizeof(int32_t));
    ps__free(a, s->path_stages, s->path_off ? (size_t)s->path_off[np] : 0, sizeof(int32_t));
    ps__free(a, s->path_off, np + 1, sizeof(int32_t));
    ps__free(a, s->path_len, np, sizeof(int32_t));
    ps__free(a, s->path_mb0, np, sizeof(int32_t));
    ps__free(a, s->path_mbn, np, sizeof(int32_t));
    ps__free(a, s->path_next, np * ns, sizeof(int32_t));
    ps__free(a, s->path_prev, np * ns, sizeof(int32_t));
    ps__free(a, s->path_pos, np * ns, sizeof(int32_t));
    ps__free(a, s->mb_path, (size_t)s->m, 1);
    ps__free(a, s->acts, s->acts_cap, sizeof *s->acts);
    ps__free(a, s->off, (size_t)s->pp + 1, sizeof *s->off);
    ps__free(a, s->len, (size_t)s->pp, sizeof *s->len);
    ps_allocator keep = s->al;
    memset(s, 0, sizeof *s);
    s->al = keep;
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

int ps__schedule_alloc(ps_schedule *s, int32_t pp, int32_t nstages, int32_t m, int32_t npaths,
                       const int64_t *cap, int64_t per_rank, int32_t path_total)
{
    const ps_allocator *a = &s->al;
    size_t np = (size_t)npaths, ns = (size_t)nstages;
    ps__schedule_clear(s);
    s->pp = pp;
    s->nstages = nstages;
    s->m = m;
    s->npaths = npaths;
    s->param_copies = 1;
    s->off = ps__alloc(a, (size_t)pp + 1, sizeof *s->off);
    s->len = ps__calloc(a, (size_t)pp, sizeof *s->len);
    s->stage_rank = ps__alloc(a, ns, sizeof(int32_t));
    s->path_off = ps__calloc(a, np + 1, sizeof(int32_t));
    s->path_len = ps__calloc(a, np, sizeof(int32_t));
    s->path_mb0 = ps__calloc(a, np, sizeof(int32_t));
    s->path_mbn = ps__calloc(a, np, sizeof(int32_t));
    s->path_next = ps__alloc(a, np * ns, sizeof(int32_t));
    s->path_prev = ps__alloc(a, np * ns, sizeof(int32_t));
    s->path_pos = ps__alloc(a, np * ns, sizeof(int32_t));
    if (!s->off || !s->len || !s->stage_rank || !s->path_off || !s->path_len || !s->path_mb0 ||
        !s->path_mbn || !s->path_next || !s->path_prev || !s->path_pos)
        goto oom;
    s->path_stages = ps__alloc(a, (size_t)path_total, sizeof(int32_t));
    if (!s->path_stages)
        goto oom;
    s->path_off[np] = path_total; /* so that clear() knows the size even if unfinished */
    if (npaths > 1) {
        s->mb_path = ps__calloc(a, (size_t)m, 1);
        if (!s->mb_path)
            goto oom;
    }
    int64_t total = 0;
    for (int32_t r = 0; r < pp; r++) {
        s->off[r] = total;
        total += cap ? cap[r] : per_rank;
    }
    s->off[pp] = total;
    s->acts = ps__alloc(a, (size_t)total, sizeof *s->acts);
    if (!s->acts)
        goto oom;
    s->acts_cap = (size_t)total;
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

int ps_schedule_pp(const ps_schedule *s) { return s ? s->pp : 0; }
int ps_schedule_num_stages(const ps_schedule *s) { return s ? s->nstages : 0; }
int ps_schedule_microbatches(const ps_schedule *s) { return s ? s->m : 0; }
int ps_schedule_group_size(const ps_schedule *s) { return s ? s->group : 0; }
int ps_schedule_param_copies(const ps_schedule *s) { return s ? s->param_copies : 0; }
int ps_schedule_num_paths(const ps_schedule *s) { return s ? s->npaths : 0; }
int ps_schedule_is_lowered(const ps_schedule *s) { return s ? s->lowered : 0; }

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
