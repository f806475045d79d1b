/*
 * The V-shape building-block scheduler shared by V-Half and V-Min (v_half.c holds it).
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_VSHAPE_H
#define PS_VSHAPE_H

#include "schedules.h"

/* The building block to repeat. */
enum { PS__VSHAPE_HALF = 0, PS__VSHAPE_MIN = 1 };

/*
 * Emits the V-shape schedule built from block (PS__VSHAPE_*) into s, whose IR the registry
 * allocated with V placement, v = 2 and 3 actions per (stage, micro-batch). Any p, m >= 1.
 * Returns 0 or PS_ENOMEM (nothing is left allocated).
 */
int ps__vshape_generate(ps_schedule *s, const ps__params *p, int block);

#endif
