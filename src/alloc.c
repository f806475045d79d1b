/*
 * Allocation through the per-handle allocator (Lua's lua_Alloc contract). Every size is
 * computed with an overflow check so that absurd requests fail instead of wrapping.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static void *default_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
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
