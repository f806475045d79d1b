/*
 * Test helper: generated tables of the docs stay true.
 *
 * Several references (docs/config.md, docs/hardware.md) carry markdown tables that the library
 * writes from its declarations, each between "<!-- PREFIX:NAME:begin -->" and
 * "<!-- PREFIX:NAME:end -->". docblock_check() compares every table with the file and fails,
 * printing the expected text, when one differs; with the update variable set in the
 * environment it rewrites the stale tables in place instead. Included by the suites that own
 * such tables; everything here is static.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_TESTS_DOCBLOCK_H
#define PS_TESTS_DOCBLOCK_H

#include <check.h>

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A growing NUL-terminated string: the sink of the markdown writers. */
typedef struct docblock_text {
    char *s;
    size_t len, cap;
} docblock_text;

static void docblock_addn(docblock_text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        t->cap = 2 * (t->len + n + 1);
        t->s = realloc(t->s, t->cap);
        ck_assert_ptr_nonnull(t->s);
    }
    memcpy(t->s + t->len, s, n);
    t->len += n;
    t->s[t->len] = '\0';
}

static void docblock_add(void *ud, const char *s)
{
    docblock_addn(ud, s, strlen(s));
}

/* The whole file at path, NUL-terminated, into *out. */
static void docblock_read(const char *path, docblock_text *out)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    char buf[16384];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        docblock_addn(out, buf, got);
    fclose(f);
    docblock_addn(out, "", 0);
}

/* The library's table list and writer (ps__config_doc_table / ps__config_doc_markdown ...). */
typedef const char *(*docblock_table_fn)(size_t i);
typedef int (*docblock_markdown_fn)(const char *name, void (*write)(void *ud, const char *text),
                                    void *ud);

/*
 * Checks (or, with the environment variable update_env set, rewrites) every table that table()
 * names against path, between the markers of prefix. how_to names the command that rewrites
 * them, for the failure message.
 */
static void docblock_check(const char *path, const char *prefix, docblock_table_fn table,
                           docblock_markdown_fn markdown, const char *update_env,
                           const char *how_to)
{
    docblock_text doc = {NULL, 0, 0};
    docblock_read(path, &doc);
    bool update = getenv(update_env) != NULL;
    int stale = 0;
    const char *name;
    for (size_t i = 0; (name = table(i)) != NULL; i++) {
        docblock_text want = {NULL, 0, 0};
        ck_assert_int_eq(markdown(name, docblock_add, &want), 0);
        char begin[96], end[96];
        snprintf(begin, sizeof begin, "<!-- %s:%s:begin -->\n", prefix, name);
        snprintf(end, sizeof end, "<!-- %s:%s:end -->", prefix, name);
        char *b = strstr(doc.s, begin);
        ck_assert_msg(b != NULL, "%s has no marker %s", path, begin);
        ck_assert_msg(strstr(b + 1, begin) == NULL, "%s: the table %s is there twice", path, name);
        char *from = b + strlen(begin), *to = strstr(from, end);
        ck_assert_msg(to != NULL, "%s: no %s after the begin marker", path, end);
        if ((size_t)(to - from) == want.len && memcmp(from, want.s, want.len) == 0) {
            free(want.s);
            continue;
        }
        stale++;
        if (update) {
            docblock_text next = {NULL, 0, 0};
            docblock_addn(&next, doc.s, (size_t)(from - doc.s));
            docblock_add(&next, want.s);
            docblock_add(&next, to);
            free(doc.s);
            doc = next;
        } else {
            fprintf(stderr, "%s: the table \"%s\" differs from the declarations; expected:\n%s%s\n",
                    path, name, begin, want.s);
        }
        free(want.s);
    }
    /* No marker names a table that does not exist (a renamed or removed one). */
    char mark[64];
    snprintf(mark, sizeof mark, "\n<!-- %s:", prefix);
    for (const char *p = doc.s; (p = strstr(p, mark)) != NULL; p++) {
        const char *n0 = p + strlen(mark), *n1 = strchr(n0, ':');
        ck_assert_ptr_nonnull(n1);
        bool known = false;
        for (size_t i = 0; !known && (name = table(i)) != NULL; i++)
            known = strlen(name) == (size_t)(n1 - n0) && !memcmp(name, n0, (size_t)(n1 - n0));
        ck_assert_msg(known, "%s: unknown table %.*s", path, (int)(n1 - n0), n0);
    }
    if (update && stale) {
        FILE *f = fopen(path, "wb");
        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(doc.s, 1, doc.len, f), doc.len);
        ck_assert_int_eq(fclose(f), 0);
        fprintf(stderr, "%s: rewrote %d tables\n", path, stale);
    }
    free(doc.s);
    ck_assert_msg(update || stale == 0,
                  "%d tables of %s are out of date (expected text on stderr); rewrite them "
                  "from tests/ with: %s",
                  stale, path, how_to);
    ck_assert_int_eq(markdown("nope", docblock_add, NULL), PS_ENOTFOUND);
}

#endif
