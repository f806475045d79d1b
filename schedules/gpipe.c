/*
 * GPipe: every forward, then every backward (PyTorch ScheduleGPipe order: B0..B(m-1)).
 * Rank 0 holds all m activations at the turn; bubble (p-1)(f+b+w) with uniform costs.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__gpipe_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__gpipe_generate(ps_schedule *s, const ps__params *p)
{
    for (int32_t r = 0; r < p->p; r++) {
        for (int32_t j = 0; j < p->m; j++)
            ps__emit(s, r, PS_F, r, j);
        for (int32_t j = 0; j < p->m; j++)
            ps__emit(s, r, PS_B, r, j);
    }
    return 0;
}
