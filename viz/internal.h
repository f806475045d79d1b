/*
 * Internal declarations shared by the files of the Graphviz exporter. Not installed.
 * SPDX-License-Identifier: MIT
 */
#ifndef PS_VIZ_INTERNAL_H
#define PS_VIZ_INTERNAL_H

#include <pipesched/viz.h>

#include <gvc.h>
#include <stdarg.h>
#include <stddef.h>

#define PS__VIZ_ERRLEN 1024
#define PS__VIZ_FONT "sans-serif"

struct ps_viz {
    ps_allocator al;
    ps_viz_config cfg;
    char err[PS__VIZ_ERRLEN];
    char gverr[PS__VIZ_ERRLEN]; /* Graphviz's messages during the current drawing */
};

/* ---- memory (viz.c) ------------------------------------------------------------------------- */

/* n * size bytes from v's allocator, zero-filled; NULL on failure or overflow. */
void *ps__viz_calloc(ps_viz *v, size_t n, size_t size);
/* Frees p, which holds n elements of size bytes (NULL allowed). */
void ps__viz_free(ps_viz *v, void *p, size_t n, size_t size);

/* A growable NUL-terminated string. Failures are sticky (oom) and reported by the caller. */
typedef struct ps__vbuf {
    ps_viz *v;
    char *p;
    size_t n, cap;
    int oom;
} ps__vbuf;

void ps__vbuf_init(ps__vbuf *b, ps_viz *v);
void ps__vbuf_free(ps__vbuf *b);
void ps__vbuf_printf(ps__vbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
/* Appends s with &, <, >, " and ' escaped, for a Graphviz HTML-like label. */
void ps__vbuf_html(ps__vbuf *b, const char *s);
/* Opens a title table: its first row shows name (escaped) in bold, the second rest (HTML; no
 * row when empty). The caller adds rows "<TR><TD ALIGN=\"LEFT\">...</TD></TR>" and closes
 * with "</TABLE>". */
void ps__vbuf_title(ps__vbuf *b, const char *name, const char *rest);
/* The text so far ("" when empty or after a failure). */
const char *ps__vbuf_str(const ps__vbuf *b);

/* ---- errors (viz.c) ------------------------------------------------------------------------- */

/* Formats the message into v->err and returns code. */
int ps__viz_err(ps_viz *v, int code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* ---- Graphviz (viz.c) ----------------------------------------------------------------------- */

/*
 * Starts a drawing: routes Graphviz's messages into v, makes sure the process's context
 * exists and opens an empty graph with the attributes every drawing declares (see viz.c).
 * Returns 0 with *g set, or an error (nothing to close).
 */
int ps__viz_open(ps_viz *v, const char *name, int directed, Agraph_t **g);
/*
 * Ends a drawing opened by ps__viz_open: when rc is 0, lays g out with engine, renders it to
 * SVG in memory and hands it to write; then closes g and restores the previous Graphviz error
 * handler. Returns rc, or the first failure of layout (PS_ESYS), rendering (PS_ESYS) or write
 * (PS_EIO).
 */
int ps__viz_close(ps_viz *v, Agraph_t *g, const char *engine, int rc, ps_write_fn write, void *ud);

/* Declares an attribute of kind (AGRAPH, AGNODE, AGEDGE) with a default; NULL on failure. */
Agsym_t *ps__viz_attr(Agraph_t *g, int kind, const char *name, const char *dflt);
/* Sets an attribute from a C string (Graphviz 2.42 takes char *). */
void ps__viz_set(void *obj, Agsym_t *sym, const char *value);
/* Sets an HTML-like label (without the outer <>) on obj. Returns 0 or PS_ENOMEM. */
int ps__viz_set_html(Agraph_t *g, void *obj, Agsym_t *sym, const char *html);
/* Creates (or finds) the node named name. */
Agnode_t *ps__viz_node(Agraph_t *g, const char *name);

/* ---- pinned drawings (viz.c) ---------------------------------------------------------------- */

/*
 * A canvas for the "nop" layout: every item is a fixed-size node pinned at its centre, in
 * points (Graphviz's y axis points up). The attribute symbols are declared once per graph.
 */
typedef struct ps__canvas {
    ps_viz *v;
    Agraph_t *g;
    Agsym_t *pos, *width, *height, *label, *style, *fill, *colour, *pen, *shape, *fsize, *cls;
    double legend_x;     /* where the next legend entry starts */
    double legend_right; /* the legend wraps to a new line before passing this x (0: never) */
    double legend_dy;    /* the current legend line, below the first (0, -16, ...) */
} ps__canvas;

/* Declares the node attributes on g (box, filled, fixed size). 0 or PS_ENOMEM. */
int ps__canvas_init(ps__canvas *cv, ps_viz *v, Agraph_t *g);
/* A box node centred at (x, y), w x h points, with SVG classes cls. NULL when out of memory. */
Agnode_t *ps__canvas_box(ps__canvas *cv, const char *name, const char *cls, double x, double y,
                         double w, double h);
/* Labels box n (w x h points) with text if it fits at a font size of up to 10 points that the
 * box height allows (at least 6); lines split at '\n'. Returns 1 when labelled. */
int ps__canvas_label(ps__canvas *cv, Agnode_t *n, const char *text, double w, double h);
/* A text node: just 'l' puts its left edge at x, 'r' its right edge, 'c' its centre. */
Agnode_t *ps__canvas_text(ps__canvas *cv, const char *name, const char *cls, double x, double y,
                          const char *text, double pt, char just);
/* The time axis from 0 to end at scale points per unit: labels "tick{k}" at y = bottom - 9, or
 * (grid) light vertical lines "grid{k}" from bottom to top. 0 or PS_ENOMEM. */
int ps__canvas_axis(ps__canvas *cv, double end, double scale, double bottom, double top, int grid);
/* ps__canvas_axis for the times [start, end], drawn from x = 0 at start. */
int ps__canvas_axis_from(ps__canvas *cv, double start, double end, double scale, double bottom,
                         double top, int grid);
/* A legend entry at cv->legend_x on line y: a swatch (two halves when fill2 is set, fill above)
 * and its text; named "legend.{key}". 0 or PS_ENOMEM. */
int ps__canvas_legend(ps__canvas *cv, const char *key, const char *fill, const char *fill2,
                      const char *style, const char *text, double y);
/* Legend text without a swatch at cv->legend_x on line y, wrapped as ps__canvas_legend's
 * entries; named name. 0 or PS_ENOMEM. */
int ps__canvas_legend_text(ps__canvas *cv, const char *name, const char *text, double y);
/* Sets the graph's HTML-like label (the title, top left). 0 or PS_ENOMEM. */
int ps__canvas_title(ps__canvas *cv, const char *html);

/* ---- shared drawing vocabulary (viz.c) ------------------------------------------------------ */

/* Fill colour of an action kind (PS_F, PS_I, PS_W, PS_B), mixed with white by `light` in
 * [0, 1) for the later chunks of a rank, as "#rrggbb" into buf (8 bytes). */
void ps__viz_kind_colour(int kind, double light, char *buf);
/* The lightness of chunk c of v chunks: 0 for chunk 0, up to 0.6 for the last. */
double ps__viz_chunk_light(int c, int v);
/* A "nice" axis step (1, 2 or 5 times a power of ten) close to span / target. */
double ps__viz_tick_step(double span, double target);
/* Width in points of text in the sans-serif font at size pt, estimated generously. */
double ps__viz_text_width(const char *text, double pt);
/* %g-like formatting of a time value with at most 4 significant decimals, into buf. */
void ps__viz_num(double x, char *buf, size_t n);

#endif
