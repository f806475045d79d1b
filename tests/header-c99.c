/*
 * Build-only check (STYLE.md): the public header compiles alone as C99 with -pedantic and
 * warnings as errors. Nothing here runs.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/pipesched.h>

int main(void)
{
    ps_action a = {0};
    return a.kind;
}
