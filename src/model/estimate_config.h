/*
 * The estimate configuration, inside: the tables of docs/config.md's "Estimate configuration".
 * Not installed. The keys are declared once, in estimate_config.c; test-estcfg compares the
 * docs with what ps__estimate_config_doc_markdown() writes.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_ESTIMATE_CONFIG_H
#define PS_MODEL_ESTIMATE_CONFIG_H

#include <pipesched/model.h>

#include <stddef.h>

/* The name of the i-th table ("blocks", "model", "train"), NULL past the end. */
const char *ps__estimate_config_doc_table(size_t i);
/*
 * Writes the markdown of table `name` through write(ud, text), ending with a newline: 0, or
 * PS_ENOTFOUND for an unknown table. The text stands between the markers
 * "<!-- estcfg:NAME:begin -->" and "<!-- estcfg:NAME:end -->" of docs/config.md.
 */
int ps__estimate_config_doc_markdown(const char *name, void (*write)(void *ud, const char *text),
                                     void *ud);

#endif /* PS_MODEL_ESTIMATE_CONFIG_H */
