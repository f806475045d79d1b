/*
 * The key tables of docs/config.md, written from the declarations of config_keys.c so that the
 * reference cannot drift from what the loader accepts: test-config compares each table with the
 * text between its markers in the file, and can rewrite them (docs/config.md says how).
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

typedef struct doc_out {
    void (*write)(void *ud, const char *text);
    void *ud;
} doc_out;

/* One cell: room for the longest meaning with its separators. */
#define CELL 512

static void put(const doc_out *o, const char *fmt, ...) PS__PRINTF(2, 3);

static void put(const doc_out *o, const char *fmt, ...)
{
    char line[4 * CELL];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->write(o->ud, line);
}

/* Appends to a cell. */
static void cat(char *cell, const char *fmt, ...) PS__PRINTF(2, 3);

static void cat(char *cell, const char *fmt, ...)
{
    size_t used = strlen(cell);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cell + used, CELL - used, fmt, ap);
    va_end(ap);
}

/* A bound as the docs write it: powers of ten from 10⁶ up as "10¹²", a minus sign as "−". */
static void number(char *cell, double v)
{
    static const char *const sup[10] = {"⁰", "¹", "²", "³", "⁴", "⁵", "⁶", "⁷", "⁸", "⁹"};
    const char *sign = v < 0 ? "−" : "";
    double a = fabs(v);
    int e = a >= 1e6 ? (int)lround(log10(a)) : 0;
    if (e > 0 && e < 100 && pow(10, e) == a) {
        cat(cell, "%s10", sign);
        if (e >= 10)
            cat(cell, "%s", sup[e / 10]);
        cat(cell, "%s", sup[e % 10]);
    } else {
        cat(cell, "%s%.15g", sign, a);
    }
}

/* The upper bound: another key's value, or the number with the name of its limit. */
static void upper(char *cell, const ps__cfg_key *k)
{
    if (k->at_most) {
        cat(cell, "`%s`", k->at_most);
        return;
    }
    number(cell, k->hi);
    if (k->limit && k->type != PS__CFG_OBJECTS && k->type != PS__CFG_INTS &&
        k->type != PS__CFG_NUMBERS)
        cat(cell, " (`%s`)", k->limit);
}

static const char *type_name(const ps__cfg_key *k)
{
    switch (k->type) {
    case PS__CFG_NUMBER:
    case PS__CFG_SIGNED:
        return "number";
    case PS__CFG_INT:
        return "integer";
    case PS__CFG_BOOL:
        return "boolean";
    case PS__CFG_CHOICE:
    case PS__CFG_STRING:
        return "string";
    case PS__CFG_OBJECT:
        return "object";
    case PS__CFG_OBJECTS:
        return "array of objects";
    case PS__CFG_INTS:
        return "array of integers";
    case PS__CFG_NUMBERS:
        return "array of numbers";
    }
    return "";
}

/* The range column of k; also (may be NULL) is the same key of the object the table covers too. */
static void range(char *cell, const ps__cfg_key *k, const ps__cfg_key *also, const char *also_path)
{
    cell[0] = '\0';
    switch (k->type) {
    case PS__CFG_NUMBER:
        if (k->lo == -INFINITY) {
            cat(cell, "≤ ");
        } else {
            cat(cell, "%s", k->strict ? "> " : "");
            number(cell, k->lo);
            cat(cell, "%s", k->strict ? ", ≤ " : " … ");
        }
        upper(cell, k);
        break;
    case PS__CFG_SIGNED:
        number(cell, -k->hi);
        cat(cell, " … ");
        upper(cell, k);
        break;
    case PS__CFG_INT:
        number(cell, k->lo);
        cat(cell, " … ");
        upper(cell, k);
        break;
    case PS__CFG_BOOL:
        cat(cell, "`true`, `false`");
        break;
    case PS__CFG_CHOICE:
        for (int i = 0; k->choice(i); i++)
            cat(cell, "%s`\"%s\"`", i ? ", " : "", k->choice(i));
        break;
    case PS__CFG_OBJECTS:
    case PS__CFG_INTS:
    case PS__CFG_NUMBERS:
        cat(cell, "at most ");
        number(cell, (double)k->max_len);
        cat(cell, " entries (`%s`)", k->limit);
        if (k->type != PS__CFG_OBJECTS) {
            cat(cell, ", each %s", k->strict ? "> " : "");
            number(cell, k->lo);
            cat(cell, "%s", k->strict ? ", ≤ " : " … ");
            number(cell, k->hi);
        }
        break;
    case PS__CFG_OBJECT:
        if (!k->range) {
            const char *doc = ps__cfg_objects[k->object].doc;
            if (doc)
                cat(cell, "see [%s](#%s)", doc, doc);
            else
                cat(cell, "see below");
        }
        break;
    case PS__CFG_STRING:
        break;
    }
    if (k->range)
        cat(cell, "%s", k->range);
    if (k->positive_if) {
        cat(cell, "; > 0 when `%s` > ", k->positive_if);
        number(cell, k->above);
    }
    if (k->zero_reason)
        cat(cell, "; only 0 (%s)", k->zero_reason);
    if (also && also->zero_reason)
        cat(cell, "; only 0 in `%s`", also_path + 2);
}

static void table(const doc_out *o, int id)
{
    const ps__cfg_object *ob = &ps__cfg_objects[id];
    ps__cfg_key buf[PS__CFG_MAX_KEYS], also_buf[PS__CFG_MAX_KEYS];
    size_t n, n_also = 0;
    const ps__cfg_key *keys = ps__cfg_keys(id, buf, &n);
    const ps__cfg_key *also = ob->doc_also ? ps__cfg_keys(ob->doc_also, also_buf, &n_also) : NULL;
    bool unit = false, stream = false;
    for (size_t i = 0; i < n; i++) {
        unit = unit || keys[i].unit;
        stream = stream || keys[i].stream;
    }
    put(o, "| key | type | range | default |%s%s meaning |\n", unit ? " unit |" : "",
        stream ? " stream |" : "");
    put(o, "|-----|------|-------|---------|%s%s---------|\n", unit ? "------|" : "",
        stream ? "--------|" : "");
    for (size_t i = 0; i < n; i++) {
        const ps__cfg_key *k = &keys[i];
        char r[CELL], extra[CELL] = "";
        range(r, k, i < n_also ? &also[i] : NULL,
              ob->doc_also ? ps__cfg_objects[ob->doc_also].path : NULL);
        if (unit)
            cat(extra, " %s |", k->unit ? k->unit : "");
        if (stream)
            cat(extra, " %s |", k->stream ? k->stream : "");
        put(o, "| `%s` | %s | %s | %s |%s %s |\n", k->name, type_name(k), r,
            k->required ? "**required**"
            : k->def    ? k->def
                        : "",
            extra, k->meaning ? k->meaning : "");
    }
}

const char *ps__config_doc_table(size_t i)
{
    for (int id = 0; id < PS__CFG_OBJECT_COUNT; id++)
        if (ps__cfg_objects[id].doc && i-- == 0)
            return ps__cfg_objects[id].doc;
    return NULL;
}

int ps__config_doc_markdown(const char *name, void (*write)(void *ud, const char *text), void *ud)
{
    doc_out o = {write, ud};
    for (int id = 0; id < PS__CFG_OBJECT_COUNT; id++) {
        if (ps__cfg_objects[id].doc && strcmp(ps__cfg_objects[id].doc, name) == 0) {
            table(&o, id);
            return 0;
        }
    }
    return PS_ENOTFOUND;
}
