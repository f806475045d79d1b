/*
 * V-Min: the V-shape building block with about a third of 1F1B's activation memory, then
 * squeezed. The scheduler is shared with V-Half (v_half.c, see there).
 * SPDX-License-Identifier: MIT
 */
#include "vshape.h"

int ps__v_min_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__v_min_generate(ps_schedule *s, const ps__params *p)
{
    return ps__vshape_generate(s, p, PS__VSHAPE_MIN);
}
