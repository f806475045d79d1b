/*
 * Diagnostics of a checked JSON document: paths, quoting, suggestions and the collector of
 * reported problems (json_diag.h says why the collector keeps two layouts).
 * SPDX-License-Identifier: MIT
 */
#include "json_diag.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* ---- parsing ------------------------------------------------------------------------------- */

/* Bytes of the input quoted after "near" in a parse error. */
#define NEAR_MAX 16

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Reports a parse problem at byte offset off of text as "line L, column C: what near ...". */
static int parse_error(char *err, const char *text, size_t len, size_t off, const char *what)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            /* Columns count characters: UTF-8 continuation bytes do not start one. */
            col++;
        }
    }
    /* Up to NEAR_MAX bytes of the rest of the line, escaped (at most 6 characters each). */
    char near[NEAR_MAX * 6 + 1] = "";
    size_t n = 0;
    while (off + n < len && n < NEAR_MAX && text[off + n] != '\n' && text[off + n] != '\r')
        n++;
    ps__json_escape(near, sizeof near, text + off, n);
    return ps__seterr(err, PS_EPARSE, "line %zu, column %zu: %s%s%s%s", line, col, what,
                      n ? " near \"" : "", near, n ? "\"" : "");
}

/*
 * cJSON stores keys and strings as C strings, so "\u0000" would silently cut them ("pp\u0000x"
 * would read as "pp"). Refuse it instead. Called on text that parsed, where every backslash is
 * inside a string; returns the offset of the escape or len when there is none.
 */
static size_t find_nul_escape(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\\')
            continue;
        if (i + 5 < len && text[i + 1] == 'u' && !memcmp(text + i + 2, "0000", 4))
            return i;
        i++; /* skip the escaped character, so that "\\u0000" is not mistaken for one */
    }
    return len;
}

/*
 * cJSON allocates through process-wide hooks (cJSON_InitHooks) that carry no user pointer and
 * whose free passes no size, so they cannot reach a handle's allocator; setting them from the
 * library would also race with other threads parsing and override the host's own cJSON hooks.
 * pipesched leaves them alone. What it must not do is report cJSON's out-of-memory as a syntax
 * error: cJSON returns NULL for both, so a failed parse is checked again by the strict,
 * allocation-free recogniser below. When it finds the text well-formed, cJSON can only have
 * failed for want of memory (PS_ENOMEM). The recogniser is stricter than cJSON wherever they
 * differ (RFC 8259 numbers and whitespace, no raw control characters, no lone surrogates,
 * nesting below cJSON's limit of 1000), so a malformed text is never taken for an
 * allocation failure.
 */
#define WF_MAX_DEPTH 999

typedef struct wf {
    const char *t;
    size_t n, i;
} wf;

static void wf_space(wf *w)
{
    while (w->i < w->n && is_space(w->t[w->i]))
        w->i++;
}

static int wf_hex4(wf *w, unsigned *out)
{
    unsigned v = 0;
    if (w->n - w->i < 4)
        return 0;
    for (int k = 0; k < 4; k++) {
        char c = w->t[w->i++];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (unsigned)(c - 'A' + 10);
        else
            return 0;
    }
    *out = v;
    return 1;
}

static int wf_string(wf *w)
{
    w->i++; /* the opening quote */
    while (w->i < w->n) {
        unsigned char c = (unsigned char)w->t[w->i++];
        if (c == '"')
            return 1;
        if (c < 0x20)
            return 0;
        if (c != '\\')
            continue;
        if (w->i >= w->n)
            return 0;
        c = (unsigned char)w->t[w->i++];
        if (strchr("\"\\/bfnrt", c) && c)
            continue;
        unsigned u, lo;
        if (c != 'u' || !wf_hex4(w, &u) || (u >= 0xDC00 && u <= 0xDFFF))
            return 0;
        if (u >= 0xD800 && u <= 0xDBFF) { /* a high surrogate needs its low half */
            if (w->n - w->i < 2 || w->t[w->i] != '\\' || w->t[w->i + 1] != 'u')
                return 0;
            w->i += 2;
            if (!wf_hex4(w, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return 0;
        }
    }
    return 0;
}

static int wf_digits(wf *w)
{
    size_t at = w->i;
    while (w->i < w->n && w->t[w->i] >= '0' && w->t[w->i] <= '9')
        w->i++;
    return w->i > at;
}

static int wf_number(wf *w)
{
    if (w->t[w->i] == '-')
        w->i++;
    if (w->i < w->n && w->t[w->i] == '0')
        w->i++;
    else if (!wf_digits(w))
        return 0;
    if (w->i < w->n && w->t[w->i] == '.') {
        w->i++;
        if (!wf_digits(w))
            return 0;
    }
    if (w->i < w->n && (w->t[w->i] == 'e' || w->t[w->i] == 'E')) {
        w->i++;
        if (w->i < w->n && (w->t[w->i] == '+' || w->t[w->i] == '-'))
            w->i++;
        if (!wf_digits(w))
            return 0;
    }
    return 1;
}

static int wf_value(wf *w, int depth)
{
    wf_space(w);
    if (w->i >= w->n)
        return 0;
    char c = w->t[w->i];
    if (c == '"')
        return wf_string(w);
    if (c == '-' || (c >= '0' && c <= '9'))
        return wf_number(w);
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t l = strlen(words[k]);
        if (w->n - w->i >= l && !memcmp(w->t + w->i, words[k], l)) {
            w->i += l;
            return 1;
        }
    }
    if ((c != '[' && c != '{') || depth >= WF_MAX_DEPTH)
        return 0;
    char close = c == '[' ? ']' : '}';
    w->i++;
    wf_space(w);
    if (w->i < w->n && w->t[w->i] == close) {
        w->i++;
        return 1;
    }
    for (;;) {
        if (c == '{') {
            wf_space(w);
            if (w->i >= w->n || w->t[w->i] != '"' || !wf_string(w))
                return 0;
            wf_space(w);
            if (w->i >= w->n || w->t[w->i++] != ':')
                return 0;
        }
        if (!wf_value(w, depth + 1))
            return 0;
        wf_space(w);
        if (w->i >= w->n)
            return 0;
        char sep = w->t[w->i++];
        if (sep == close)
            return 1;
        if (sep != ',')
            return 0;
    }
}

/* 1 when text begins with one well-formed JSON value (what follows it is not looked at). */
static int well_formed(const char *text, size_t len)
{
    wf w = {text, len, 0};
    if (len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) /* cJSON skips a UTF-8 BOM */
        w.i = 3;
    return wf_value(&w, 0);
}

static int parse_value(const char *text, size_t len, cJSON **root, char *err)
{
    /* A raw NUL would end a key or string early inside cJSON; JSON forbids it anyway. */
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return parse_error(err, text, len, (size_t)(nul - text), "NUL byte in the input");
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!*root) {
        size_t off = end ? (size_t)(end - text) : 0;
        bool empty = true;
        for (size_t i = 0; i < len && empty; i++)
            empty = is_space(text[i]);
        if (empty)
            return ps__seterr(err, PS_EPARSE,
                              "line 1, column 1: empty input (expected a JSON object)");
        if (well_formed(text, len))
            return ps__seterr(err, PS_ENOMEM,
                              "out of memory parsing %zu bytes of JSON (the text is well-formed)",
                              len);
        return parse_error(err, text, len, off, "malformed JSON");
    }
    /* cJSON stops after the value and, without require_null_terminated, ignores the rest. */
    size_t off = (size_t)(end - text);
    while (off < len && is_space(text[off]))
        off++;
    if (off < len)
        return parse_error(err, text, len, off, "unexpected data after the JSON value");
    off = find_nul_escape(text, len);
    if (off < len)
        return parse_error(err, text, len, off, "\\u0000 in a string is not supported");
    return 0;
}

int ps__json_parse(const char *text, size_t len, cJSON **root, char *err)
{
    *root = NULL;
    int rc = parse_value(text, len, root, err);
    if (rc) {
        cJSON_Delete(*root);
        *root = NULL;
    }
    return rc;
}

/* ---- strings ------------------------------------------------------------------------------- */

void ps__json_escape(char *buf, size_t cap, const char *s, size_t n)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < n && used + 7 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        char short_escape = 0;
        switch (ch) {
        case '"':
        case '\\':
            short_escape = (char)ch;
            break;
        case '\n':
            short_escape = 'n';
            break;
        case '\r':
            short_escape = 'r';
            break;
        case '\t':
            short_escape = 't';
            break;
        }
        if (short_escape) {
            buf[used++] = '\\';
            buf[used++] = short_escape;
        } else if (ch < 0x20 || ch == 0x7f) {
            used += (size_t)snprintf(buf + used, cap - used, "\\u%04x", ch);
        } else {
            buf[used++] = (char)ch;
        }
    }
    buf[used] = '\0';
}

void ps__json_quote(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "\"");
    ps__json_escape(buf, cap, s, n > PS__JSON_SHOW_MAX ? PS__JSON_SHOW_MAX : n);
    used = strlen(buf);
    snprintf(buf + used, cap - used, "%s\"", n > PS__JSON_SHOW_MAX ? "..." : "");
}

static bool is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-'))
            return false;
    return true;
}

void ps__json_key_path(char *buf, const char *parent, const char *key)
{
    if (is_identifier(key) && strlen(key) <= PS__JSON_SHOW_MAX) {
        snprintf(buf, PS__JSON_PATH_LEN, "%s.%s", parent, key);
    } else {
        snprintf(buf, PS__JSON_PATH_LEN, "%s[", parent);
        ps__json_quote(buf, PS__JSON_PATH_LEN, key);
        size_t used = strlen(buf);
        snprintf(buf + used, PS__JSON_PATH_LEN - used, "]");
    }
}

void ps__json_describe(char *buf, size_t cap, const cJSON *it)
{
    buf[0] = '\0';
    if (cJSON_IsString(it)) {
        snprintf(buf, cap, "string ");
        ps__json_quote(buf, cap, it->valuestring);
    } else if (cJSON_IsNumber(it)) {
        snprintf(buf, cap, "number %.15g", it->valuedouble);
    } else if (cJSON_IsBool(it)) {
        snprintf(buf, cap, "boolean %s", cJSON_IsTrue(it) ? "true" : "false");
    } else if (cJSON_IsNull(it)) {
        snprintf(buf, cap, "null");
    } else if (cJSON_IsArray(it)) {
        snprintf(buf, cap, "an array");
    } else if (cJSON_IsObject(it)) {
        snprintf(buf, cap, "an object");
    } else {
        snprintf(buf, cap, "an unsupported value");
    }
}

/* ---- suggestions ----------------------------------------------------------------------------- */

/* Names compare case-insensitively and with '-' equal to '_' (the registry's rule for names). */
static int fold(int ch)
{
    ch = tolower((unsigned char)ch);
    return ch == '-' ? '_' : ch;
}

/*
 * Levenshtein distance between a and b, or 3 when it is certainly above 2. Only short strings
 * are compared, so fixed rows suffice.
 */
static size_t distance(const char *a, const char *b)
{
    enum { MAXLEN = 64, FAR = 3 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXLEN || lb > MAXLEN || (la > lb ? la - lb : lb - la) >= FAR)
        return FAR;
    size_t row[MAXLEN + 1], prev[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof *row);
    }
    return prev[lb];
}

/* The length limits keep "x" from "looking like" every one-letter key and "foo" like "moe". */
bool ps__json_close_to(const char *word, const char *candidate, size_t *best)
{
    size_t d = distance(word, candidate);
    size_t lw = strlen(word), lc = strlen(candidate);
    size_t longer = lw > lc ? lw : lc;
    if (d > (longer > 3 ? 2u : 1u) || d >= longer || d >= *best)
        return false;
    *best = d;
    return true;
}

const char *ps__json_suggest(const char *word, const char *(*name)(const void *ud, size_t i),
                             const void *ud)
{
    const char *hit = NULL, *k;
    size_t best = 3;
    for (size_t i = 0; (k = name(ud, i)) != NULL; i++)
        if (ps__json_close_to(word, k, &best))
            hit = k;
    return hit;
}

/* ---- the collector --------------------------------------------------------------------------- */

void ps__json_diag_init(ps__json_diag *d)
{
    d->errors = d->unknown = 0;
    d->full_len = d->compact_len = 0;
    d->full[0] = d->compact[0] = '\0';
}

/* Appends s to one layout, keeping what fits. */
static void append(char *buf, size_t *len, const char *s)
{
    size_t n = strlen(s), room = PS__ERRLEN - 1 - *len;
    if (n > room)
        n = room;
    memcpy(buf + *len, s, n);
    *len += n;
    buf[*len] = '\0';
}

/* The compact layout counts only while every item is an unknown key. */
static bool compact_open(const ps__json_diag *d)
{
    return d->errors == d->unknown;
}

bool ps__json_diag_quiet(const ps__json_diag *d)
{
    return d->full_len == PS__ERRLEN - 1 && (!compact_open(d) || d->compact_len == PS__ERRLEN - 1);
}

void ps__json_error(ps__json_diag *d, const char *path, const char *fmt, ...)
{
    d->errors++;
    if (ps__json_diag_quiet(d))
        return;
    char item[PS__JSON_ITEM_LEN];
    int n = snprintf(item, sizeof item, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item + n, sizeof item - (size_t)n, fmt, ap);
    va_end(ap);
    if (d->errors > 1)
        append(d->full, &d->full_len, "; ");
    append(d->full, &d->full_len, item);
}

void ps__json_type_error(ps__json_diag *d, const char *path, const char *expected, const cJSON *it)
{
    char got[PS__JSON_ITEM_LEN / 2] = "";
    if (!ps__json_diag_quiet(d))
        ps__json_describe(got, sizeof got, it);
    ps__json_error(d, path, "expected %s, got %s", expected, got);
}

void ps__json_unknown_key(ps__json_diag *d, const char *parent, const char *key, const char *hint)
{
    d->errors++;
    d->unknown++;
    if (ps__json_diag_quiet(d))
        return;
    char path[PS__JSON_PATH_LEN], tail[96] = "";
    ps__json_key_path(path, parent, key);
    if (hint)
        snprintf(tail, sizeof tail, " (did you mean \"%s\"?)", hint);
    if (d->errors > 1)
        append(d->full, &d->full_len, "; ");
    append(d->full, &d->full_len, path);
    append(d->full, &d->full_len, ": unknown key");
    append(d->full, &d->full_len, tail);
    if (compact_open(d)) {
        if (d->unknown > 1)
            append(d->compact, &d->compact_len, ", ");
        append(d->compact, &d->compact_len, path);
        append(d->compact, &d->compact_len, tail);
    }
}

/*
 * ps__adderr() keeps the first PS__ERRLEN - 6 bytes of everything appended and then marks the
 * cut, so appending a layout that was itself cut at PS__ERRLEN - 1 bytes gives the same message
 * as appending all of its items would.
 */
void ps__json_diag_render(const ps__json_diag *d, char *out)
{
    bool compact = d->errors > 1 && d->errors == d->unknown;
    out[0] = '\0';
    if (compact)
        ps__adderr(out, "%zu unknown keys: ", d->errors);
    else if (d->errors > 1)
        ps__adderr(out, "%zu errors: ", d->errors);
    ps__adderr(out, "%s", compact ? d->compact : d->full);
}
