/*
 * The key-table machinery the model's JSON files share: the hardware file (hardware.c) and the
 * estimate configuration (estimate_config.c). Not installed.
 *
 * Each file declares its keys once in a table of its own (name, offset, type, range, default,
 * meaning); what the tables have in common lives here, so that a value out of range, a duplicate
 * key and a docs table read the same whichever file they come from. Implemented in hardware.c,
 * the first user; a hardware object nested in another file is loaded by the same code as a
 * hardware file, only under another JSON path.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_KEYS_H
#define PS_MODEL_KEYS_H

#include "io/json_diag.h"

#include <pipesched/model.h>

#include <cJSON.h>

#include <stdbool.h>

/*
 * Reports to d (under path) what is wrong with v as a value in [lo, hi] ((lo, hi] when lo_open),
 * an integer when integer: not finite, not whole, below or beyond the range. Returns whether v
 * is acceptable.
 */
bool ps__key_check_number(ps__json_diag *d, const char *path, bool integer, double lo, bool lo_open,
                          double hi, double v);

/* Whether an earlier member of the object root than it has the same key. */
bool ps__json_repeated(const cJSON *root, const cJSON *it);

/*
 * Loads the hardware object obj (docs/hardware.md) found at JSON path parent ("$" for a hardware
 * file, "$.hardware" inside an estimate configuration), reporting every problem to d under that
 * path. *out is written only when obj had no problem.
 */
void ps__hardware_load(ps__json_diag *d, const cJSON *obj, const char *parent, ps_hardware *out);

/* Formats one piece of a generated docs table and passes it to write(ud, text). */
void ps__doc_emit(void (*write)(void *, const char *), void *ud, const char *fmt, ...)
    PS__PRINTF(3, 4);

#endif /* PS_MODEL_KEYS_H */
