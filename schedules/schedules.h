/*
 * Generator entry points of every schedule family (one file each) for the registry table.
 * Adding a family = one file and one row in registry.c.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_SCHEDULES_H
#define PS_SCHEDULES_H

#include "../src/internal.h"

#define PS__FAMILY_DECL(n)                                                                         \
    int ps__##n##_check(const ps__params *p, char *why);                                           \
    int ps__##n##_generate(ps_schedule *s, const ps__params *p);

PS__FAMILY_DECL(gpipe)
PS__FAMILY_DECL(1f1b)
PS__FAMILY_DECL(interleaved)
PS__FAMILY_DECL(interleaved_rounds)
PS__FAMILY_DECL(looped_bfs)
PS__FAMILY_DECL(zb_h1)
PS__FAMILY_DECL(zb_h2)
PS__FAMILY_DECL(interleaved_zb)
PS__FAMILY_DECL(zb_v)
PS__FAMILY_DECL(v_half)
PS__FAMILY_DECL(v_min)
PS__FAMILY_DECL(zb_auto)

/* Shared by zb-h1 (c = 1) and zb-h2 (c = 2): see zb_h1.c. */
void ps__zb_h_emit(ps_schedule *s, const ps__params *p, int32_t c);

#endif
