/*
 * The hardware presets and the hardware file, inside. Not installed.
 *
 * Every field of ps_hardware is declared once, in the key table of hardware.c: its name (the
 * JSON key), where it lives in the struct, its type and range, whether it is a published figure
 * (required in a file without "base") or an efficiency figure (calibration sets it; a file
 * without "base" gets the generic value), and the sentence that documents it. The loader, the
 * range checks of ps_hardware_check(), the "did you mean" suggestions and the tables of
 * docs/hardware.md all come from that table; test-hardware compares the docs with what
 * ps__hardware_doc_markdown() writes.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_HARDWARE_H
#define PS_MODEL_HARDWARE_H

#include <pipesched/model.h>

#include <stddef.h>

/* The name of the i-th table of docs/hardware.md ("keys", "presets"), NULL past the end. */
const char *ps__hardware_doc_table(size_t i);
/*
 * Writes the markdown of table `name` through write(ud, text), one or more calls, ending with a
 * newline: 0, or PS_ENOTFOUND for an unknown table. The text stands between the markers
 * "<!-- hw:NAME:begin -->" and "<!-- hw:NAME:end -->" of docs/hardware.md.
 */
int ps__hardware_doc_markdown(const char *name, void (*write)(void *ud, const char *text),
                              void *ud);

#endif /* PS_MODEL_HARDWARE_H */
