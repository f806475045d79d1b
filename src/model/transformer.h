/*
 * The model's internal names, shared by transformer.c (the built-in table, the checks, the
 * parameter counts) and hf.c (the HuggingFace config.json loader). Not installed.
 *
 * The ranges of the ps_transformer fields are declared once, in transformer.c's field table:
 * ps_transformer_check() applies them by field name, and the HF loader applies the same
 * limits to the key that fills a field, so that a config's absurd value is reported under the
 * key the user wrote.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_MODEL_TRANSFORMER_H
#define PS_MODEL_TRANSFORMER_H

#include "internal.h"
#include "io/json_diag.h"

#include <pipesched/model.h>

#include <cJSON.h>

#include <stddef.h>
#include <stdint.h>

/* One int32_t field of ps_transformer and its accepted range. */
typedef struct ps__transformer_field {
    const char *name; /* the field's name in model.h */
    size_t offset;    /* offsetof(ps_transformer, field) */
    int32_t min, max;
} ps__transformer_field;

/* The field stored at offset (an offsetof(ps_transformer, ...)), or NULL. */
const ps__transformer_field *ps__transformer_field_at(size_t offset);

/*
 * Reads the HuggingFace config.json object root (docs/models.md) into *out, reporting every
 * problem to d under the key's JSON path below parent ("$" for a config.json file,
 * "$.model.hf" for the config inside an estimate configuration), so that a nested config is
 * read without being printed and parsed again. Returns 0, or PS_ECONFIG when it reported a
 * problem (*out is then unchanged). ps_transformer_check is the caller's to run.
 */
int ps__transformer_read_hf(const cJSON *root, const char *parent, ps__json_diag *d,
                            ps_transformer *out);

#endif /* PS_MODEL_TRANSFORMER_H */
