/*
 * Error codes (one X-macro table in the public header) and the bounded message buffers that
 * every handle carries.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

const char *ps_strerror(int err)
{
    switch (err) {
    case PS_OK:
        return "success";
#define PS__ERRNO_MSG(name, value, msg)                                                            \
    case PS_##name:                                                                                \
        return msg;
        PS_ERRNO_MAP(PS__ERRNO_MSG)
#undef PS__ERRNO_MSG
    default:
        return "unknown error";
    }
}

const char *ps_err_name(int err)
{
    switch (err) {
    case PS_OK:
        return "OK";
#define PS__ERRNO_NAME(name, value, msg)                                                           \
    case PS_##name:                                                                                \
        return #name;
        PS_ERRNO_MAP(PS__ERRNO_NAME)
#undef PS__ERRNO_NAME
    default:
        return "UNKNOWN";
    }
}

int ps__seterr(char *buf, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, PS__ERRLEN, fmt, ap);
    va_end(ap);
    return code;
}

int ps__seterr_n(char *err, size_t errlen, int code, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

void ps__adderr(char *buf, const char *fmt, ...)
{
    size_t used = strlen(buf);
    static const char more[] = " ...";
    if (used + sizeof more >= PS__ERRLEN)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + used, PS__ERRLEN - used - sizeof more, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= PS__ERRLEN - used - sizeof more) {
        /* Say that the message was cut rather than cutting it silently. */
        memcpy(buf + PS__ERRLEN - sizeof more - 1, more, sizeof more);
    }
}
