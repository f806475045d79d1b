/*
 * Shared helpers of the libFuzzer targets: a size-checking allocator (every free and realloc
 * must name the size the block was allocated with, every block must be freed, and the Nth
 * allocation can be made to fail), a reader that turns the fuzzer's bytes into choices, and an
 * output sink for ps_export.
 *
 * A broken invariant prints what broke and aborts: libFuzzer reports the crash and writes the
 * input as crash-<sha1>.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_FUZZ_H
#define PS_FUZZ_H

#include <pipesched/pipesched.h>

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Prints the broken invariant and aborts (libFuzzer saves the input). */
static inline void fz_fail(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
static inline void fz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("pipesched fuzz: invariant broken: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define FZ_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond))                                                                               \
            fz_fail(__VA_ARGS__);                                                                  \
    } while (0)

/* ---- The size-checking allocator ----------------------------------------------------------- */

/* Each block carries a header with its size and a tag, so a free or realloc with the wrong
 * osize, a double free or a foreign pointer is caught at the call. */
#define FZ_TAG 0x70735f66757a7aULL /* "ps_fuzz" */

typedef struct fz_header {
    uint64_t tag;
    uint64_t size;
} fz_header;

typedef struct fz_alloc {
    long calls;   /* allocation requests (nsize > 0) so far */
    long fail_at; /* fail the request with this 1-based number; 0 = never */
    int failed;   /* 1 once the injected failure has been returned */
    long live;    /* blocks allocated and not freed */
    size_t bytes; /* bytes allocated and not freed */
    /* A known defect being fixed elsewhere (PS_FUZZ_KNOWN_DEFECTS): a wrong osize is counted
     * here instead of aborting, and the target decides whether it is the known one. */
    int tolerate_osize;
    long bad_osize;
} fz_alloc;

static inline fz_header *fz_header_of(fz_alloc *a, void *ptr, size_t osize, const char *what)
{
    fz_header *h = (fz_header *)ptr - 1;
    if (h->tag != FZ_TAG)
        fz_fail("%s of %p: not a live block of this allocator (double free?)", what, ptr);
    if (h->size != osize) {
        if (!a->tolerate_osize)
            fz_fail("%s of %p: osize %zu, but the block holds %llu bytes", what, ptr, osize,
                    (unsigned long long)h->size);
        a->bad_osize++;
    }
    return h;
}

/* Whether the comma-separated list in $PS_FUZZ_KNOWN_DEFECTS names defect `name`. */
static inline int fz_known_defect(const char *name)
{
    const char *list = getenv("PS_FUZZ_KNOWN_DEFECTS");
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && memcmp(p, name, n) == 0)
            return 1;
        p += len + (e ? 1 : 0);
    }
    return 0;
}

static inline void *fz_alloc_fn(void *ud, void *ptr, size_t osize, size_t nsize)
{
    fz_alloc *a = ud;
    if (nsize == 0) {
        if (ptr) {
            fz_header *h = fz_header_of(a, ptr, osize, "free");
            h->tag = 0;
            a->live--;
            a->bytes -= h->size;
            free(h);
        }
        return NULL;
    }
    a->calls++;
    if (a->fail_at && a->calls == a->fail_at) {
        a->failed = 1;
        return NULL;
    }
    if (nsize > SIZE_MAX - sizeof(fz_header))
        return NULL;
    fz_header *old = ptr ? fz_header_of(a, ptr, osize, "realloc") : NULL;
    size_t old_size = old ? old->size : 0;
    fz_header *h = realloc(old, sizeof *h + nsize);
    if (!h)
        return NULL;
    if (!old) {
        a->live++;
        a->bytes += nsize;
    } else {
        a->bytes = a->bytes - old_size + nsize;
    }
    h->tag = FZ_TAG;
    h->size = nsize;
    return h + 1;
}

static inline ps_allocator fz_allocator(fz_alloc *a)
{
    ps_allocator al = {fz_alloc_fn, a};
    return al;
}

/* Every block of a must have been freed. */
static inline void fz_alloc_check_empty(const fz_alloc *a, const char *where)
{
    if (a->live != 0 || a->bytes != 0)
        fz_fail("%s: %ld blocks (%zu bytes) still allocated after every handle was freed", where,
                a->live, a->bytes);
}

/* ---- Bytes to choices ---------------------------------------------------------------------- */

typedef struct fz_reader {
    const uint8_t *p;
    size_t n;
} fz_reader;

/* The next byte; 0 once the input is used up. */
static inline unsigned fz_u8(fz_reader *r)
{
    if (!r->n)
        return 0;
    r->n--;
    return *r->p++;
}

static inline unsigned fz_u16(fz_reader *r)
{
    unsigned lo = fz_u8(r);
    return lo | fz_u8(r) << 8;
}

/* A value in [lo, hi]. */
static inline long fz_range(fz_reader *r, long lo, long hi)
{
    unsigned long span = (unsigned long)(hi - lo) + 1;
    unsigned long v = span > 256 ? fz_u16(r) : fz_u8(r);
    return lo + (long)(v % span);
}

static inline double fz_raw_double(fz_reader *r)
{
    uint64_t bits = 0;
    for (int i = 0; i < 8; i++)
        bits |= (uint64_t)fz_u8(r) << (8 * i);
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* A cost, a memory delta or a limit: the usual small values most of the time, and the edges
 * (0, subnormals, the limits, 1e300, NaN, infinities, negatives, raw bit patterns). */
static inline double fz_number(fz_reader *r)
{
    static const double table[] = {
        1,
        2,
        0.5,
        3,
        0.25,
        1,
        2,
        0, /* the common ones */
        0,
        1e-3,
        0.1,
        7,
        1e3,
        1e6,
        1.5,
        4,
        5e-324,
        1e-310,
        2.2250738585072014e-308,
        1e-300,
        1e-12, /* subnormals and tiny */
        1e12,
        1e300,
        1.7976931348623157e308, /* PS_MAX_COST, then beyond */
        -0.0,
        -1,
        -0.5,
        -1e300,
    };
    unsigned k = fz_u8(r);
    size_t n = sizeof table / sizeof table[0];
    if (k < 3 * n)
        return table[k % n];
    switch (k % 4) {
    case 0:
        return NAN;
    case 1:
        return k & 1 ? INFINITY : -INFINITY;
    case 2:
        return fz_range(r, 0, 1000) / 8.0;
    default:
        return fz_raw_double(r);
    }
}

/* ---- An output sink for ps_export ---------------------------------------------------------- */

typedef struct fz_sink {
    size_t bytes;
    int fail_after; /* return non-zero from this 1-based write on; 0 = never */
    int writes;
} fz_sink;

static inline int fz_write(void *ud, const char *data, size_t len)
{
    fz_sink *o = ud;
    o->writes++;
    if (o->fail_after && o->writes >= o->fail_after)
        return 1;
    if (len && !data)
        fz_fail("export wrote %zu bytes from NULL", len);
    /* Touch the bytes so that ASan sees a read of every one. */
    volatile unsigned char sum = 0;
    for (size_t i = 0; i < len; i++)
        sum = (unsigned char)(sum + (unsigned char)data[i]);
    (void)sum;
    o->bytes += len;
    return 0;
}

/* A NUL-terminated copy of the input (the loaders take a length, but the copy lets ASan see a
 * read past len, and a few APIs take C strings). */
static inline char *fz_strndup(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    s[size] = 0;
    return s;
}

/* A heap copy of exactly size bytes (no NUL), so that a loader reading past len is caught. */
static inline char *fz_exact_copy(const uint8_t *data, size_t size)
{
    char *s = malloc(size ? size : 1);
    if (!s)
        abort();
    if (size)
        memcpy(s, data, size);
    return s;
}

#endif
