/*
 * Action strings in PyTorch's format: "{stage}{TYPE}{mb}" ("2F3", "1SEND_B0") and the fused
 * pair "({stage}F{mb};{bstage}B{bmb})OVERLAP_F_B". Unlike PyTorch's prefix regex, the parser
 * matches the whole string, so "1F2x" is an error rather than a silent "1F2".
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

static const char *const kind_names[PS_KIND_COUNT] = {
    "F", "I", "W", "B", "OVERLAP_F_B", "SEND_F", "RECV_F", "SEND_B", "RECV_B",
};

const char *ps_kind_name(int kind)
{
    if (kind < 0 || kind >= PS_KIND_COUNT)
        return "?";
    return kind_names[kind];
}

static int is_comm(int kind)
{
    return kind == PS_SEND_F || kind == PS_RECV_F || kind == PS_SEND_B || kind == PS_RECV_B;
}

int ps_action_format(const ps_action *a, char *buf, size_t n)
{
    int r;
    if (!a || (!buf && n > 0) || a->kind >= PS_KIND_COUNT || a->stage < 0 || a->mb < 0)
        return PS_EINVAL;
    if (a->kind == PS_FB) {
        /* Only these pairs can be read back: the fused step is a forward plus a backward. */
        if ((a->bkind != PS_B && a->bkind != PS_I) || a->bstage < 0 || a->bmb < 0)
            return PS_EINVAL;
        r = snprintf(buf, n, "(%dF%d;%d%s%d)OVERLAP_F_B", (int)a->stage, (int)a->mb, (int)a->bstage,
                     kind_names[a->bkind], (int)a->bmb);
    } else {
        r = snprintf(buf, n, "%d%s%d", (int)a->stage, kind_names[a->kind], (int)a->mb);
    }
    return r < 0 ? PS_EINVAL : r;
}

void ps__action_str(const ps_action *a, char *buf, size_t n)
{
    if (n == 0)
        return;
    if (ps_action_format(a, buf, n) < 0)
        snprintf(buf, n, "<invalid action>");
}

/* ---- parser ------------------------------------------------------------------------------- */

/* The cursor of one parse; on failure col and why describe the first offending byte. */
typedef struct cursor {
    const char *s;
    size_t pos, end;
    size_t col;
    const char *why;
} cursor;

static int fail(cursor *c, size_t col, const char *why)
{
    c->col = col;
    c->why = why;
    return PS_EPARSE;
}

static int is_blank(char ch)
{
    return ch == ' ' || ch == '\t';
}

static void skip_blanks(cursor *c)
{
    while (c->pos < c->end && is_blank(c->s[c->pos]))
        c->pos++;
}

static int is_digit(char ch)
{
    return ch >= '0' && ch <= '9';
}

static int is_type_char(char ch)
{
    return (ch >= 'A' && ch <= 'Z') || ch == '_';
}

/*
 * Reads a non-negative decimal number that fits in int32_t. An overflowing number is reported
 * at its first digit, since the whole number is what is wrong, not its tenth digit.
 */
static int read_number(cursor *c, int32_t *out, const char *missing)
{
    size_t start = c->pos;
    int64_t v = 0;
    if (c->pos < c->end && c->s[c->pos] == '-')
        return fail(c, c->pos, "negative numbers are not allowed");
    if (c->pos >= c->end || !is_digit(c->s[c->pos]))
        return fail(c, c->pos, missing);
    while (c->pos < c->end && is_digit(c->s[c->pos])) {
        v = v * 10 + (c->s[c->pos] - '0');
        if (v > INT32_MAX)
            return fail(c, start, "number out of range");
        c->pos++;
    }
    *out = (int32_t)v;
    return 0;
}

static int token_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && memcmp(s, word, n) == 0;
}

/* Maps a type token to a kind, or returns -1 (known but unsupported) or -2 (unknown). */
static int lookup_type(const char *t, size_t n)
{
    static const char *const unsupported[] = {"UNSHARD", "RESHARD", "REDUCE_GRAD", "OVERLAP_F_B"};
    if (token_is(t, n, "BW"))
        return PS_B; /* the legacy name of the full backward */
    for (int k = 0; k < PS_KIND_COUNT; k++)
        if (k != PS_FB && token_is(t, n, kind_names[k]))
            return k;
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
        if (token_is(t, n, unsupported[i]))
            return -1;
    return -2;
}

/* Parses "{stage}{TYPE}{mb}" at the cursor, leaving it after the micro-batch. */
static int parse_simple(cursor *c, ps_action *a)
{
    int32_t stage, mb;
    int rc = read_number(c, &stage, "expected a stage number");
    if (rc)
        return rc;
    size_t t0 = c->pos;
    while (c->pos < c->end && is_type_char(c->s[c->pos]))
        c->pos++;
    if (c->pos == t0)
        return fail(c, t0, "expected an action type");
    int kind = lookup_type(c->s + t0, c->pos - t0);
    if (kind == -1)
        return fail(c, t0, "unsupported action type");
    if (kind == -2)
        return fail(c, t0, "unknown action type");
    rc = read_number(c, &mb, "expected a micro-batch number");
    if (rc)
        return rc;
    memset(a, 0, sizeof *a);
    a->kind = (uint8_t)kind;
    a->stage = stage;
    a->mb = mb;
    if (is_comm(kind)) {
        /* The peer stage is not in the string; the CSV loader knows the direction. */
        a->bstage = -1;
        a->bmb = mb;
    }
    return 0;
}

/*
 * Parses "(a;b)OVERLAP_F_B" with the cursor on '('. Exactly one sub-action must be a forward
 * and the other a backward (B or I), in either order; blanks around sub-actions are allowed,
 * as PyTorch strips each one. Each sub-action is checked as soon as it is read so that the
 * error names the first offending byte.
 */
static int parse_fused(cursor *c, ps_action *a)
{
    ps_action sub[2];
    int rc;
    c->pos++; /* '(' */
    for (int i = 0; i < 2; i++) {
        skip_blanks(c);
        size_t at = c->pos;
        if (c->pos < c->end && c->s[c->pos] == '(')
            return fail(c, c->pos, "nested fused actions are not allowed");
        rc = parse_simple(c, &sub[i]);
        if (rc)
            return rc;
        int k = sub[i].kind;
        if (k != PS_F && k != PS_B && k != PS_I)
            return fail(c, at, "a fused pair holds only F, B and I sub-actions");
        if (i == 1 && (k == PS_F) == (sub[0].kind == PS_F))
            return fail(c, at, "a fused pair needs one forward (F) and one backward (B or I)");
        skip_blanks(c);
        char want = i == 0 ? ';' : ')';
        if (c->pos >= c->end || c->s[c->pos] != want)
            return fail(c, c->pos,
                        i == 0 ? "expected ';' between the two sub-actions"
                               : "expected ')' after the second sub-action");
        c->pos++;
    }
    size_t t0 = c->pos;
    while (c->pos < c->end && is_type_char(c->s[c->pos]))
        c->pos++;
    if (!token_is(c->s + t0, c->pos - t0, "OVERLAP_F_B"))
        return fail(c, t0, "expected OVERLAP_F_B after the sub-actions");

    int fi = sub[0].kind == PS_F ? 0 : 1;
    int bi = 1 - fi;
    memset(a, 0, sizeof *a);
    a->kind = PS_FB;
    a->stage = sub[fi].stage;
    a->mb = sub[fi].mb;
    a->bkind = sub[bi].kind;
    a->bstage = sub[bi].stage;
    a->bmb = sub[bi].mb;
    return 0;
}

int ps__action_parse_why(const char *s, size_t len, ps_action *out, size_t *err_col,
                         const char **why)
{
    cursor c = {s, 0, len, 0, NULL};
    ps_action a;
    int rc;
    if ((!s && len > 0) || !out) {
        if (why)
            *why = "invalid argument";
        return PS_EINVAL;
    }
    skip_blanks(&c);
    while (c.end > c.pos && is_blank(s[c.end - 1]))
        c.end--;
    if (c.pos == c.end)
        return PS_ENOTFOUND;
    if (s[c.pos] == '(')
        rc = parse_fused(&c, &a);
    else
        rc = parse_simple(&c, &a);
    if (!rc && c.pos != c.end)
        rc = fail(&c, c.pos, "unexpected characters after the action");
    if (rc) {
        if (err_col)
            *err_col = c.col;
        if (why)
            *why = c.why;
        return rc;
    }
    *out = a;
    return 0;
}

int ps_action_parse(const char *s, size_t len, ps_action *out, size_t *err_col)
{
    return ps__action_parse_why(s, len, out, err_col, NULL);
}
