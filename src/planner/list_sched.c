/*
 * The two-stream machine that turns orders into times, and the list scheduler built on it.
 *
 * Each stream runs its order one operation at a time; an operation starts when its stream is
 * free and its predecessors have ended. While the communication stream is busy, compute runs
 * (1 + slowdown) times slower (ps_moe_model.slowdown), so the clock moves from one end of an
 * operation to the next and the running compute operation keeps its unstretched work left.
 *
 * The list scheduler is the same machine with one change: a free stream takes the ready
 * operation of highest priority from the rest of its order instead of the next one, and moves
 * it there, so the order it leaves behind is the schedule. Sharing the machine keeps the
 * schedules and their times consistent by construction.
 * SPDX-License-Identifier: MIT
 */
#include "planner.h"

#include <math.h>
#include <string.h>

static int ready(const ps_plan *pl, int32_t k, int use_x)
{
    const ps__plan_node *x = &pl->n[k];
    for (int i = 0; i < x->ndep; i++)
        if (!pl->fin[x->dep[i]])
            return 0;
    return !(use_x && x->xdep >= 0 && !pl->fin[x->xdep]);
}

/*
 * Times of the orders o[0] (compute) and o[1] (communication) into st/en. Returns the
 * makespan, or -1 when the orders contradict the dependencies. With greedy set, the orders
 * are built instead: whenever a stream is free it takes the ready operation of highest
 * priority (prefer_feed: operations feeding the communication stream first).
 */
static double run(ps_plan *pl, int32_t *o[2], const size_t len[2], int use_x, int greedy,
                  int prefer_feed)
{
    const double slow = 1.0 + pl->slowdown;
    size_t i[2] = {0, 0};
    int32_t cur[2] = {-1, -1};
    double rem = 0, end1 = 0, t = 0, makespan = 0;
    memset(pl->fin, 0, pl->nn);
    for (;;) {
        for (int s = 0; s < 2; s++) {
            if (cur[s] >= 0 || i[s] >= len[s])
                continue;
            if (greedy) {
                size_t pick = len[s];
                for (size_t q = i[s]; q < len[s]; q++) {
                    int32_t k = o[s][q];
                    if (!ready(pl, k, use_x))
                        continue;
                    if (pick == len[s]) {
                        pick = q;
                        continue;
                    }
                    const ps__plan_node *a = &pl->n[k], *b = &pl->n[o[s][pick]];
                    int af = prefer_feed && a->feeds, bf = prefer_feed && b->feeds;
                    if (af > bf || (af == bf && a->prio > b->prio + 1e-12))
                        pick = q;
                }
                if (pick == len[s])
                    continue;
                int32_t k = o[s][pick];
                memmove(&o[s][i[s] + 1], &o[s][i[s]], (pick - i[s]) * sizeof(int32_t));
                o[s][i[s]] = k;
            } else if (!ready(pl, o[s][i[s]], use_x)) {
                continue;
            }
            int32_t k = o[s][i[s]];
            cur[s] = k;
            pl->st[k] = t;
            if (s == 0)
                rem = pl->n[k].dur;
            else
                end1 = t + pl->n[k].dur;
        }
        if (cur[0] < 0 && cur[1] < 0) {
            if (i[0] == len[0] && i[1] == len[1])
                return makespan;
            return -1.0;
        }
        double t0 = INFINITY, t1 = cur[1] >= 0 ? end1 : INFINITY;
        if (cur[0] >= 0)
            t0 = t + rem * (cur[1] >= 0 ? slow : 1.0);
        double tn = t0 < t1 ? t0 : t1;
        if (cur[0] >= 0)
            rem -= (tn - t) / (cur[1] >= 0 ? slow : 1.0);
        t = tn;
        if (cur[1] >= 0 && t1 <= tn) {
            pl->en[cur[1]] = t;
            pl->fin[cur[1]] = 1;
            cur[1] = -1;
            i[1]++;
        }
        if (cur[0] >= 0 && t0 <= tn) {
            pl->en[cur[0]] = t;
            pl->fin[cur[0]] = 1;
            cur[0] = -1;
            i[0]++;
        }
        if (t > makespan)
            makespan = t;
    }
}

double ps__list_sched_time(ps_plan *pl, int use_x)
{
    return run(pl, pl->ord, pl->len, use_x, 0, 0);
}

double ps__list_sched_build(ps_plan *pl, int prefer_feed)
{
    return run(pl, pl->ord, pl->len, 0, 1, prefer_feed);
}
