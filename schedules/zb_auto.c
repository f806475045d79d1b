/*
 * Placeholder while the family is being written (not registered yet).
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <stdio.h>

int ps__zb_auto_check(const ps__params *p, char *why)
{
    (void)p;
    snprintf(why, PS__ERRLEN, "not implemented yet");
    return -1;
}

int ps__zb_auto_generate(ps_schedule *s, const ps__params *p)
{
    (void)s;
    (void)p;
    return PS_EUNSUPPORTED;
}
