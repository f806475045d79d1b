/*
 * Looped BFS (Lamy-Poirier, arXiv 2211.05953; PyTorch ScheduleLoopedBFS): loop placement;
 * each rank runs all forwards of its first local stage, then of the next, ...; then the
 * backwards of its local stages in reverse order, micro-batches in reverse order.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__looped_bfs_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__looped_bfs_generate(ps_schedule *s, const ps__params *p)
{
    for (int32_t r = 0; r < p->p; r++) {
        for (int32_t c = 0; c < p->v; c++)
            for (int32_t j = 0; j < p->m; j++)
                ps__emit(s, r, PS_F, c * p->p + r, j);
        for (int32_t c = p->v - 1; c >= 0; c--)
            for (int32_t j = p->m - 1; j >= 0; j--)
                ps__emit(s, r, PS_B, c * p->p + r, j);
    }
    return 0;
}
