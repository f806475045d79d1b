/*
 * A scatter plot: points at (x, y) on linear axes with ticks and labelled axes, each point a
 * small circle with its text beside it (tune --pareto-svg: the Pareto front, step time against
 * peak memory).
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

enum { PLOT_W = 640, PLOT_H = 400 };

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

static int draw(ps__canvas *cv, const double *x, const double *y, const char *const *labels,
                size_t n, const char *xl, const char *yl)
{
    double x0, x1, xs, y0, y1, ys;
    char name[32], text[32];
    axis_range(x, n, &x0, &x1, &xs);
    axis_range(y, n, &y0, &y1, &ys);
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
    for (size_t i = 0; i < n; i++) {
        double px = (x[i] - x0) * sx, py = (y[i] - y0) * sy;
        snprintf(name, sizeof name, "point%zu", i);
        Agnode_t *nd = ps__canvas_box(cv, name, "point", px, py, 7, 7);
        if (!nd)
            return PS_ENOMEM;
        ps__viz_set(nd, cv->shape, "circle");
        ps__viz_set(nd, cv->fill, "#5b9bd5");
        ps__viz_set(nd, cv->colour, "#1f4e79");
        if (labels && labels[i] && *labels[i]) {
            snprintf(name, sizeof name, "label%zu", i);
            Agnode_t *t = ps__canvas_text(cv, name, "point-label", px + 6, py, labels[i], 8, 'l');
            if (!t)
                return PS_ENOMEM;
            ps__viz_set(t, cv->fill, "transparent");
        }
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
    Agraph_t *g;
    int rc = ps__viz_open(v, "scatter", 0, &g);
    if (rc)
        return rc;
    ps__canvas cv;
    rc = ps__canvas_init(&cv, v, g);
    if (!rc)
        rc = draw(&cv, x, y, labels, n, x_label ? x_label : "x", y_label ? y_label : "y");
    if (!rc) {
        ps__vbuf b;
        ps__vbuf_init(&b, v);
        char rest[64];
        snprintf(rest, sizeof rest, "%zu point%s", n, n == 1 ? "" : "s");
        ps__vbuf_title(&b, title && *title ? title : "scatter plot", rest);
        ps__vbuf_printf(&b, "</TABLE>");
        rc = b.oom ? PS_ENOMEM : ps__canvas_title(&cv, ps__vbuf_str(&b));
        ps__vbuf_free(&b);
    }
    if (rc)
        ps__viz_err(v, rc, "out of memory building the drawing");
    return ps__viz_close(v, g, "nop", rc, write, ud);
}
