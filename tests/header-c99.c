/*
 * Build-only check (STYLE.md): the public headers compile alone as C99 with -pedantic and
 * warnings as errors (viz.h includes only pipesched.h, so it needs no Graphviz). Nothing here
 * runs.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/balance.h>
#include <pipesched/model.h>
#include <pipesched/pipesched.h>
#include <pipesched/viz.h>

int main(void)
{
    ps_action a = {0};
    return a.kind;
}
