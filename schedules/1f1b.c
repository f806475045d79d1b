/*
 * 1F1B (PipeDream-flush): rank r runs min(p-r-1, m) warm-up forwards, then alternates one
 * forward and one backward, then drains the remaining backwards. Works for any m >= 1
 * (also m < p, where the warm-up is cut at m).
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__1f1b_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__1f1b_generate(ps_schedule *s, const ps__params *p)
{
    for (int32_t r = 0; r < p->p; r++) {
        int32_t warm = p->p - r - 1 < p->m ? p->p - r - 1 : p->m;
        for (int32_t j = 0; j < warm; j++)
            ps__emit(s, r, PS_F, r, j);
        for (int32_t i = 0; i + warm < p->m; i++) {
            ps__emit(s, r, PS_F, r, warm + i);
            ps__emit(s, r, PS_B, r, i);
        }
        for (int32_t i = p->m - warm; i < p->m; i++)
            ps__emit(s, r, PS_B, r, i);
    }
    return 0;
}
