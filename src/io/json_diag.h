/*
 * Diagnostics of a JSON document checked against a schema (the configuration loader's): JSON
 * paths, quoted values, "did you mean" suggestions by edit distance, and the collector that
 * turns every problem found into one message.
 *
 * The collector exists because a user fixing a config file wants the whole list at once, and
 * because the message's layout depends on totals known only at the end ("3 errors: ..." with
 * "; " between the items, or "2 unknown keys: ..." listing just the paths when every problem
 * is an unknown key). A checker reports each problem once, as it meets it; the collector keeps
 * both layouts of what fits in a message and picks one when asked to render. So the checks run
 * once, with no counting pass, and never allocate.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_IO_JSON_DIAG_H
#define PS_IO_JSON_DIAG_H

#include "internal.h"

#include <cJSON.h>

#include <stdbool.h>
#include <stddef.h>

#if defined(__GNUC__)
#define PS__PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define PS__PRINTF(f, a)
#endif

/* Bytes of a user-supplied string (a key, a value) quoted in a message. */
#define PS__JSON_SHOW_MAX 48
/* Room for one path: a prefix, an index and a quoted, escaped key of PS__JSON_SHOW_MAX bytes. */
#define PS__JSON_PATH_LEN 320
/* Room for one reported item (path, message and a quoted value). */
#define PS__JSON_ITEM_LEN 768

/* ---- parsing ------------------------------------------------------------------------------- */

/*
 * Parses text (len bytes) as one JSON value into *root, which the caller frees with
 * cJSON_Delete. On failure *root is NULL, err (PS__ERRLEN bytes) says "line L, column C: what
 * near \"...\"" and the result is PS_EPARSE: a NUL byte, empty input, malformed JSON, data after
 * the value, or "\u0000" in a string (cJSON keeps C strings, so it would cut the string there).
 * PS_ENOMEM when cJSON ran out of memory on a well-formed text (cJSON allocates with its own,
 * process-wide hooks, not the handle's allocator: json_diag.c says why).
 * Every JSON file pipesched reads goes through here, so they all report a bad file alike.
 */
int ps__json_parse(const char *text, size_t len, cJSON **root, char *err);

/* ---- strings ------------------------------------------------------------------------------- */

/* Appends s[0..n) to buf (size cap, NUL-terminated) as the inside of a JSON string literal. */
void ps__json_escape(char *buf, size_t cap, const char *s, size_t n);
/* Appends "\"s\"" to buf, cut to PS__JSON_SHOW_MAX bytes with "..." so huge values stay readable.
 */
void ps__json_quote(char *buf, size_t cap, const char *s);
/* Writes the path of key under parent (PS__JSON_PATH_LEN bytes): "$.pp" for plain names,
 * "$[\"a b\"]" for the others. */
void ps__json_key_path(char *buf, const char *parent, const char *key);
/* Describes a value for "got ...": a type name, with the value itself when it is short. */
void ps__json_describe(char *buf, size_t cap, const cJSON *it);

/* ---- suggestions ----------------------------------------------------------------------------- */

/*
 * Whether candidate is a plausible correction of word, and a better one than *best edits (start
 * with 3): at most 2 edits (1 when neither has more than 3 characters) and fewer edits than the
 * longer string has characters, letter case ignored and '-' equal to '_'. On true, *best is the
 * candidate's distance.
 */
bool ps__json_close_to(const char *word, const char *candidate, size_t *best);
/* The closest of the names name(ud, 0), name(ud, 1), ... (up to the first NULL), or NULL. */
const char *ps__json_suggest(const char *word, const char *(*name)(const void *ud, size_t i),
                             const void *ud);

/* ---- the collector --------------------------------------------------------------------------- */

typedef struct ps__json_diag {
    size_t errors;  /* every problem reported */
    size_t unknown; /* ... of which unknown keys */
    /* The start of the message in both layouts: "path: message" items separated by "; ", and
     * (while every item is an unknown key) the paths alone separated by ", ". Each keeps what
     * fits in a message; the rest is counted only. */
    size_t full_len, compact_len;
    char full[PS__ERRLEN];
    char compact[PS__ERRLEN];
} ps__json_diag;

void ps__json_diag_init(ps__json_diag *d);
/* True when another item could not be seen in the message: a checker may skip formatting it
 * (it must still report it, for the count). */
bool ps__json_diag_quiet(const ps__json_diag *d);
/* "path: message". */
void ps__json_error(ps__json_diag *d, const char *path, const char *fmt, ...) PS__PRINTF(3, 4);
/* "path: expected <expected>, got <what it is>". */
void ps__json_type_error(ps__json_diag *d, const char *path, const char *expected, const cJSON *it);
/* "parent.key: unknown key" and hint (NULL: none) as " (did you mean \"hint\"?)". */
void ps__json_unknown_key(ps__json_diag *d, const char *parent, const char *key, const char *hint);
/*
 * Writes the message into out (a PS__ERRLEN buffer, through ps__adderr so that a cut is
 * marked): "N unknown keys: " and the paths when every one of N > 1 problems is an unknown key,
 * else "N errors: " (N > 1) and the items. The caller may append to it.
 */
void ps__json_diag_render(const ps__json_diag *d, char *out);

#endif /* PS_IO_JSON_DIAG_H */
