/*
 * The executor's results: its status, the measured timeline and its metrics, and the
 * measured timeline loaded into a simulator (whose metrics and exporters then describe the
 * real run).
 * SPDX-License-Identifier: MIT
 */
#include "exec_int.h"

int ps_exec_status(const ps_exec *x)
{
    return x ? x->status : PS_EINVAL;
}

const char *ps_exec_last_error(const ps_exec *x)
{
    return x ? x->err : "invalid argument: NULL executor";
}

const double *ps_exec_starts(const ps_exec *x, int rank)
{
    if (!x || rank < 0 || rank >= x->s->pp)
        return NULL;
    return x->start + x->s->off[rank];
}

const double *ps_exec_ends(const ps_exec *x, int rank)
{
    if (!x || rank < 0 || rank >= x->s->pp)
        return NULL;
    return x->end + x->s->off[rank];
}

int ps_exec_metrics(const ps_exec *x, double unit, ps_metrics *out)
{
    if (!x || !out || !(unit > 0))
        return PS_EINVAL;
    if (x->status != 0)
        return PS_ESTATE;
    const ps_schedule *s = x->s;
    double makespan = 0.0, bubble = 0.0, busy = 0.0;
    int n_local = 0;
    for (int32_t r = 0; r < s->pp; r++) {
        if (x->remote[r])
            continue;
        n_local++;
        if (!s->len[r])
            continue;
        double rb = 0.0;
        for (int64_t i = s->off[r]; i < s->off[r] + s->len[r]; i++)
            rb += (x->end[i] - x->start[i]) / unit;
        busy += rb;
        double last = x->end[s->off[r] + s->len[r] - 1] / unit;
        double span = last - x->start[s->off[r]] / unit;
        if (last > makespan)
            makespan = last;
        if (span - rb > bubble)
            bubble = span - rb;
    }
    out->makespan = makespan;
    out->bubble = bubble;
    out->bubble_ratio = makespan > 0 ? 1.0 - busy / ((double)n_local * makespan) : 0.0;
    out->pp = s->pp;
    return 0;
}

int ps_exec_measured(const ps_exec *x, double unit, ps_sim *sim)
{
    if (!x || !sim || !(unit > 0))
        return PS_EINVAL;
    if (x->status != 0 || !x->all_local || ps__sim_schedule(sim) != x->s)
        return PS_ESTATE;
    return ps__sim_set_timeline(sim, x->start, x->end, unit);
}
