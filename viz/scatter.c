/*
 * A scatter plot: points at (x, y) on linear axes with ticks and labelled axes, each point a
 * small circle with its text beside it (tune --pareto-svg: the Pareto front, step time against
 * peak memory). Labels never overlap one another or a point: a dense front puts the labels
 * that find no free spot in a table under the plot (points() says how).
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum {
    PLOT_W = 640,
    PLOT_H = 400,
    MARK = 7,          /* a point's circle, points across */
    LABEL_PT = 8,      /* the labels' font size */
    LABEL_MAX = 120,   /* bytes of a label (viz.h) */
    LABEL_RIGHT = 200, /* how far past the plot's right edge a label may reach */
    PLACE_MAX = 500,   /* points whose labels are placed beside them (the search is n^2) */
    TABLE_TOP = -48,   /* the table of the labels without room, under the x axis's label */
    TABLE_ROW = 13     /* a row's text box is LABEL_PT + 4 high: 1 point between rows */
};

/* The axis range [lo, hi] of the values, widened to whole ticks of *step (5 or so ticks). */
static void axis_range(const double *v, size_t n, double *lo, double *hi, double *step)
{
    double a = v[0], b = v[0];
    for (size_t i = 1; i < n; i++) {
        a = v[i] < a ? v[i] : a;
        b = v[i] > b ? v[i] : b;
    }
    double span = b - a;
    if (!(span > 0))
        span = fabs(a) > 0 ? fabs(a) * 0.2 : 1;
    *step = ps__viz_tick_step(span, 5);
    *lo = floor(a / *step) * *step;
    *hi = ceil(b / *step) * *step;
    if (*hi <= *lo)
        *hi = *lo + *step;
    if (*lo == a)
        *lo -= *step;
    if (*hi == b)
        *hi += *step;
}

/* A thin line from (x0, y0) to (x1, y1), horizontal or vertical: a filled box. */
static int line(ps__canvas *cv, const char *name, double x0, double y0, double x1, double y1)
{
    double w = fabs(x1 - x0), h = fabs(y1 - y0);
    Agnode_t *n = ps__canvas_box(cv, name, "axis", (x0 + x1) / 2, (y0 + y1) / 2, w < 0.8 ? 0.8 : w,
                                 h < 0.8 ? 0.8 : h);
    if (!n)
        return PS_ENOMEM;
    ps__viz_set(n, cv->fill, "#404040");
    ps__viz_set(n, cv->pen, "0");
    return 0;
}

/* ---- label placement ----------------------------------------------------------------------- */

/* A box in the canvas's points (y up): [x0, x1] x [y0, y1]. */
typedef struct rect {
    double x0, y0, x1, y1;
} rect;

/* The boxes of the drawing that a label must keep clear of: the marks, then the texts placed. */
typedef struct layout {
    rect *taken;
    size_t n;
} layout;

/* Graphviz rounds a fixed node size to its own units (a hundredth of an inch): two boxes keep
 * this much apart so that their drawn boxes do not touch either. */
#define GAP 1.5

static int overlaps(const rect *a, const rect *b)
{
    return a->x0 < b->x1 + GAP && b->x0 < a->x1 + GAP && a->y0 < b->y1 + GAP && b->y0 < a->y1 + GAP;
}

/* Inside the area texts may use (right of the y axis, above the x axis, below the y axis's
 * label, at most LABEL_RIGHT past the plot) and clear of every box taken. */
static int is_free(const layout *lay, const rect *r)
{
    if (r->x0 < 2 || r->y0 < 2 || r->y1 > PLOT_H + 6 || r->x1 > PLOT_W + LABEL_RIGHT)
        return 0;
    for (size_t i = 0; i < lay->n; i++)
        if (overlaps(r, &lay->taken[i]))
            return 0;
    return 1;
}

/*
 * The spots tried for a w x h text beside a mark at (px, py), nearest first: right of the mark
 * at its height (where a lone label goes), left of it, above and below it (starting at the
 * mark, ending at it, centred on it), then right and left one and two text heights higher and
 * lower. x: 'R' right of the mark, 'L' left of it, 'r' starting at its centre, 'l' ending at
 * it, 'c' centred; y: 'm' centred on the mark plus m text heights, 'a' above, 'b' below.
 */
static const struct {
    char x, y;
    int m;
} spots[] = {{'R', 'm', 0}, {'L', 'm', 0},  {'r', 'a', 0}, {'r', 'b', 0},
             {'l', 'a', 0}, {'l', 'b', 0},  {'c', 'a', 0}, {'c', 'b', 0},
             {'R', 'm', 1}, {'R', 'm', -1}, {'L', 'm', 1}, {'L', 'm', -1},
             {'R', 'm', 2}, {'R', 'm', -2}, {'L', 'm', 2}, {'L', 'm', -2}};

static rect spot(int k, double px, double py, double w, double h)
{
    const double side = MARK / 2 + 2.5; /* a label's left edge 6 points right of the centre */
    double x0 = spots[k].x == 'R'   ? px + side
                : spots[k].x == 'L' ? px - side - w
                : spots[k].x == 'r' ? px
                : spots[k].x == 'l' ? px - w
                                    : px - w / 2;
    double y0 = spots[k].y == 'a'   ? py + MARK / 2 + GAP + 0.5
                : spots[k].y == 'b' ? py - MARK / 2 - GAP - 0.5 - h
                                    : py - h / 2 + spots[k].m * (h + GAP);
    return (rect){x0, y0, x0 + w, y0 + h};
}

/* The first free spot for text at size pt beside the mark at (px, py) into *out, taken; 0 when
 * none is free. */
static int place(layout *lay, double px, double py, const char *text, double pt, rect *out)
{
    /* ps__canvas_text's box: the text's width plus 4, its size plus 4. */
    double w = ps__viz_text_width(text, pt) + 4, h = pt + 4;
    for (int k = 0; k < (int)(sizeof spots / sizeof spots[0]); k++) {
        rect r = spot(k, px, py, w, h);
        if (is_free(lay, &r)) {
            lay->taken[lay->n++] = r;
            *out = r;
            return 1;
        }
    }
    return 0;
}

/* The ticks and the labels of both axes. */
static int axes(ps__canvas *cv, double x0, double x1, double xs, double y0, double y1, double ys,
                const char *xl, const char *yl)
{
    char name[32], text[32];
    double sx = PLOT_W / (x1 - x0), sy = PLOT_H / (y1 - y0);
    if (line(cv, "axis.xline", 0, 0, PLOT_W, 0) || line(cv, "axis.yline", 0, 0, 0, PLOT_H))
        return PS_ENOMEM;
    int k = 0;
    for (double t = x0; t <= x1 + xs * 1e-9; t += xs, k++) {
        snprintf(name, sizeof name, "xtick%d", k);
        ps__viz_num(fabs(t) < xs * 1e-9 ? 0 : t, text, sizeof text);
        if (!ps__canvas_text(cv, name, "tick", (t - x0) * sx, -10, text, 9, 'c'))
            return PS_ENOMEM;
        snprintf(name, sizeof name, "xgrid%d", k);
        if (line(cv, name, (t - x0) * sx, 0, (t - x0) * sx, -4))
            return PS_ENOMEM;
    }
    k = 0;
    for (double t = y0; t <= y1 + ys * 1e-9; t += ys, k++) {
        snprintf(name, sizeof name, "ytick%d", k);
        ps__viz_num(fabs(t) < ys * 1e-9 ? 0 : t, text, sizeof text);
        if (!ps__canvas_text(cv, name, "tick", -6, (t - y0) * sy, text, 9, 'r'))
            return PS_ENOMEM;
        snprintf(name, sizeof name, "ygrid%d", k);
        if (line(cv, name, -4, (t - y0) * sy, 0, (t - y0) * sy))
            return PS_ENOMEM;
    }
    if (!ps__canvas_text(cv, "axis.x", "axis-label", PLOT_W / 2.0, -28, xl, 11, 'c') ||
        !ps__canvas_text(cv, "axis.y", "axis-label", 0, PLOT_H + 16, yl, 11, 'l'))
        return PS_ENOMEM;
    return 0;
}

/* A text node whose box is r (from place()), transparent. */
static int text_at(ps__canvas *cv, const char *name, const char *cls, const rect *r,
                   const char *text)
{
    Agnode_t *t = ps__canvas_text(cv, name, cls, r->x0, (r->y0 + r->y1) / 2, text, LABEL_PT, 'l');
    if (!t)
        return PS_ENOMEM;
    ps__viz_set(t, cv->fill, "transparent");
    return 0;
}

/* A table row's key: the point's number (i + 1) and its coordinates. */
static void key_text(char *buf, size_t cap, size_t i, double x, double y)
{
    char cx[32], cy[32];
    ps__viz_num(x, cx, sizeof cx);
    ps__viz_num(y, cy, sizeof cy);
    snprintf(buf, cap, "%zu (%s, %s)", i + 1, cx, cy);
}

/*
 * The points and their labels. Every label goes beside its point where it overlaps no other
 * label and no mark (the first free spot of spots[], points in their order); a label with no
 * free spot goes to a table under the plot, one row per point, "number (x, y)" then the label,
 * and its point gets the number ("tag{i}") beside it where that fits. Beyond PLACE_MAX points
 * the search (quadratic) is skipped and every label goes to the table. *tabled receives the
 * count of labels in the table.
 */
static int points(ps__canvas *cv, layout *lay, const double *x, const double *y,
                  const char *const *labels, size_t n, double x0, double sx, double y0, double sy,
                  size_t *tabled)
{
    char name[32], text[96];
    for (size_t i = 0; i < n; i++) {
        double px = (x[i] - x0) * sx, py = (y[i] - y0) * sy;
        snprintf(name, sizeof name, "point%zu", i);
        Agnode_t *nd = ps__canvas_box(cv, name, "point", px, py, MARK, MARK);
        if (!nd)
            return PS_ENOMEM;
        ps__viz_set(nd, cv->shape, "circle");
        ps__viz_set(nd, cv->fill, "#5b9bd5");
        ps__viz_set(nd, cv->colour, "#1f4e79");
        lay->taken[lay->n++] = (rect){px - MARK / 2, py - MARK / 2, px + MARK / 2, py + MARK / 2};
    }
    /* The table's label column starts right of the widest "number (x, y)" any point has. */
    double label_x = 0;
    for (size_t i = 0; i < n; i++) {
        key_text(text, sizeof text, i, x[i], y[i]);
        double w = ps__viz_text_width(text, LABEL_PT) + 4;
        label_x = w > label_x ? w : label_x;
    }
    label_x += 8;
    double row = TABLE_TOP;
    *tabled = 0;
    for (size_t i = 0; i < n; i++) {
        if (!labels || !labels[i] || !*labels[i])
            continue;
        double px = (x[i] - x0) * sx, py = (y[i] - y0) * sy;
        rect r;
        snprintf(name, sizeof name, "label%zu", i);
        if (n <= PLACE_MAX && place(lay, px, py, labels[i], LABEL_PT, &r)) {
            if (text_at(cv, name, "point-label", &r, labels[i]))
                return PS_ENOMEM;
            continue;
        }
        if (!*tabled && !ps__canvas_text(cv, "table.head", "table", 0, row,
                                         "labels without room beside their point: number (x, "
                                         "y), label",
                                         LABEL_PT, 'l'))
            return PS_ENOMEM;
        row -= TABLE_ROW;
        ++*tabled;
        snprintf(text, sizeof text, "%zu", i + 1);
        if (n <= PLACE_MAX && place(lay, px, py, text, LABEL_PT, &r)) {
            char tag[32];
            snprintf(tag, sizeof tag, "tag%zu", i);
            if (text_at(cv, tag, "point-tag", &r, text))
                return PS_ENOMEM;
        }
        key_text(text, sizeof text, i, x[i], y[i]);
        char key[40];
        snprintf(key, sizeof key, "key%zu", i);
        if (!ps__canvas_text(cv, key, "table", 0, row, text, LABEL_PT, 'l') ||
            !ps__canvas_text(cv, name, "point-label table", label_x, row, labels[i], LABEL_PT, 'l'))
            return PS_ENOMEM;
    }
    return 0;
}

static int draw(ps__canvas *cv, layout *lay, const double *x, const double *y,
                const char *const *labels, size_t n, const char *xl, const char *yl, size_t *tabled)
{
    double x0, x1, xs, y0, y1, ys;
    axis_range(x, n, &x0, &x1, &xs);
    axis_range(y, n, &y0, &y1, &ys);
    int rc = axes(cv, x0, x1, xs, y0, y1, ys, xl, yl);
    if (rc)
        return rc;
    return points(cv, lay, x, y, labels, n, x0, PLOT_W / (x1 - x0), y0, PLOT_H / (y1 - y0), tabled);
}

/* The labels as the header promises them: at most LABEL_MAX bytes, no backslash (Graphviz
 * would read an escape). PS_EINVAL naming the point, or 0. */
static int check_labels(ps_viz *v, const char *const *labels, size_t n)
{
    for (size_t i = 0; labels && i < n; i++) {
        if (!labels[i])
            continue;
        size_t len = strlen(labels[i]);
        if (len > LABEL_MAX)
            return ps__viz_err(v, PS_EINVAL, "label %zu is %zu bytes long; at most %d", i, len,
                               LABEL_MAX);
        if (strchr(labels[i], '\\'))
            return ps__viz_err(v, PS_EINVAL,
                               "label %zu has a backslash, which Graphviz reads as an escape", i);
    }
    return 0;
}

int ps_viz_scatter_svg(ps_viz *v, const double *x, const double *y, const char *const *labels,
                       size_t n, const char *x_label, const char *y_label, const char *title,
                       ps_write_fn write, void *ud)
{
    if (!v)
        return PS_EINVAL;
    v->err[0] = 0;
    if (!write || !x || !y || !n)
        return ps__viz_err(v, PS_EINVAL, "a scatter plot needs points and a write callback");
    if (n > PS_VIZ_MAX_BOXES)
        return ps__viz_err(v, PS_ERANGE, "%zu points; at most %d can be drawn", n,
                           PS_VIZ_MAX_BOXES);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || !isfinite(y[i]))
            return ps__viz_err(v, PS_EINVAL, "point %zu: (%g, %g) is not finite", i, x[i], y[i]);
    int rc = check_labels(v, labels, n);
    if (rc)
        return rc;
    /* The marks and at most two texts (a label, or a number tag) per point. */
    layout lay = {ps__viz_calloc(v, 3 * n, sizeof(rect)), 0};
    if (!lay.taken)
        return ps__viz_err(v, PS_ENOMEM, "out of memory placing %zu labels", n);
    Agraph_t *g;
    rc = ps__viz_open(v, "scatter", 0, &g);
    if (rc) {
        ps__viz_free(v, lay.taken, 3 * n, sizeof(rect));
        return rc;
    }
    ps__canvas cv;
    size_t tabled = 0;
    rc = ps__canvas_init(&cv, v, g);
    if (!rc)
        rc = draw(&cv, &lay, x, y, labels, n, x_label ? x_label : "x", y_label ? y_label : "y",
                  &tabled);
    ps__viz_free(v, lay.taken, 3 * n, sizeof(rect));
    if (!rc) {
        ps__vbuf b;
        ps__vbuf_init(&b, v);
        char rest[96];
        int k = snprintf(rest, sizeof rest, "%zu point%s", n, n == 1 ? "" : "s");
        if (tabled)
            snprintf(rest + k, sizeof rest - (size_t)k, ", %zu label%s in the table below", tabled,
                     tabled == 1 ? "" : "s");
        ps__vbuf_title(&b, title && *title ? title : "scatter plot", rest);
        ps__vbuf_printf(&b, "</TABLE>");
        rc = b.oom ? PS_ENOMEM : ps__canvas_title(&cv, ps__vbuf_str(&b));
        ps__vbuf_free(&b);
    }
    if (rc)
        ps__viz_err(v, rc, "out of memory building the drawing");
    return ps__viz_close(v, g, "nop", rc, write, ud);
}
