/*
 * ZB-H2: the handcrafted zero-bubble schedule with a warm-up of 2(p-r-1) forwards and W
 * deferred by 2r micro-batches (rule and notes in zb_h1.c). Zero bubble when f = b = w, at
 * about twice 1F1B's activation memory (2p-1 on rank 0).
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

int ps__zb_h2_check(const ps__params *p, char *why)
{
    (void)p;
    (void)why;
    return 0;
}

int ps__zb_h2_generate(ps_schedule *s, const ps__params *p)
{
    ps__zb_h_emit(s, p, 2);
    return 0;
}
