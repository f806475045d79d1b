/*
 * The communication-overlap planner (work in progress).
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

struct ps_plan {
    ps_allocator al;
    char err[PS__ERRLEN];
};

int ps_plan_new(ps_plan **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    ps__alloc_init(&al, alloc);
    ps_plan *pl = ps__calloc(&al, 1, sizeof *pl);
    if (!pl)
        return PS_ENOMEM;
    pl->al = al;
    *out = pl;
    return 0;
}

void ps_plan_free(ps_plan *pl)
{
    if (!pl)
        return;
    ps_allocator a = pl->al;
    ps__free(&a, pl, 1, sizeof *pl);
}

const char *ps_plan_last_error(const ps_plan *pl)
{
    return pl ? pl->err : "invalid argument: NULL plan";
}

int ps_plan_step(ps_plan *pl, const ps_problem *pb, int method, int stages, int fstage, int bkind,
                 int bstage)
{
    (void)pb, (void)method, (void)stages, (void)fstage, (void)bkind, (void)bstage;
    return pl ? PS_EUNSUPPORTED : PS_EINVAL;
}

int ps_plan_stats_get(const ps_plan *pl, ps_plan_stats *out)
{
    (void)pl, (void)out;
    return PS_ESTATE;
}

size_t ps_plan_ops(const ps_plan *pl, const ps_plan_op **ops)
{
    (void)pl;
    if (ops)
        *ops = NULL;
    return 0;
}

int ps_sim_comm(const ps_sim *sim, ps_comm_metrics *out)
{
    (void)sim, (void)out;
    return PS_ENOTFOUND;
}
