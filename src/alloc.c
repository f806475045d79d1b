/*
 * Allocation through the per-handle allocator (Lua's lua_Alloc contract). Every size is
 * computed with an overflow check so that absurd requests fail instead of wrapping.
 * SPDX-License-Identifier: MIT
 */
#define _DEFAULT_SOURCE /* madvise() and MADV_HUGEPAGE next to _POSIX_C_SOURCE */

#include "internal.h"

#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

/*
 * Asks the kernel to back the 2 MiB-aligned part of a large block [p, p + n) with transparent
 * huge pages (where it offers them only on request, the "madvise" setting). The tables of a
 * large schedule (the actions, the timeline, the per-(stage, micro-batch) times) are hundreds
 * of MiB walked in many interleaved streams: with 4 KiB pages the first touch of each page is
 * a fault and nearly every access misses the TLB; at pp128/vpp8/m4096 the process spent more
 * time on that than on the schedule (issue 13). Only the default allocator does this: a host's
 * allocator chooses its own pages. Failure (no THP, another page size) changes nothing.
 */
static void advise_huge(void *p, size_t n)
{
#if defined(MADV_HUGEPAGE)
    const uintptr_t huge = (uintptr_t)2 << 20;
    if (n < 2 * huge)
        return;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p, (void)n;
#endif
}

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    void *p = realloc(ptr, nsize);
    if (p)
        advise_huge(p, nsize);
    return p;
}

void ps__alloc_init(ps_allocator *dst, const ps_allocator *src)
{
    if (src && src->fn) {
        *dst = *src;
    } else {
        dst->fn = default_alloc;
        dst->ud = NULL;
    }
}

static int mul_ok(size_t n, size_t size, size_t *out)
{
    if (size && n > SIZE_MAX / size)
        return 0;
    *out = n * size;
    return 1;
}

void *ps__alloc(const ps_allocator *a, size_t n, size_t size)
{
    size_t bytes;
    if (!mul_ok(n, size, &bytes))
        return NULL;
    if (bytes == 0)
        bytes = 1; /* a valid, freeable pointer for empty arrays */
    return a->fn(a->ud, NULL, 0, bytes);
}

void *ps__calloc(const ps_allocator *a, size_t n, size_t size)
{
    void *p = ps__alloc(a, n, size);
    if (p)
        memset(p, 0, (n && size) ? n * size : 1);
    return p;
}

void *ps__realloc(const ps_allocator *a, void *p, size_t on, size_t nn, size_t size)
{
    size_t ob, nb;
    if (!mul_ok(nn, size, &nb) || !mul_ok(on, size, &ob))
        return NULL;
    if (nb == 0)
        nb = 1;
    if (p == NULL)
        ob = 0;
    else if (ob == 0)
        ob = 1;
    return a->fn(a->ud, p, ob, nb);
}

void ps__free(const ps_allocator *a, void *p, size_t n, size_t size)
{
    if (p) {
        size_t b = n * size;
        a->fn(a->ud, p, b ? b : 1, 0);
    }
}

char *ps__strdup(const ps_allocator *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = ps__alloc(a, n, 1);
    if (d)
        memcpy(d, s, n);
    return d;
}

void ps__strfree(const ps_allocator *a, char *s)
{
    if (s)
        ps__free(a, s, strlen(s) + 1, 1);
}
