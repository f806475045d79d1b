/*
 * The overlap diagram of one planned step: a compute lane and a communication lane, a box per
 * sub-operation, and the exposed communication (time when the communication stream runs and
 * the compute stream does not) as red bars, computed here from the operations themselves.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
    double a, b;
} span;

static int by_start(const void *x, const void *y)
{
    const span *p = x, *q = y;
    return p->a < q->a ? -1 : p->a > q->a ? 1 : (p->b > q->b) - (p->b < q->b);
}

/* Sorts sp[0..n) and merges overlapping or touching spans in place; returns the new count. */
static size_t merge(span *sp, size_t n)
{
    if (!n)
        return 0;
    qsort(sp, n, sizeof *sp, by_start);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (sp[i].a <= sp[k].b) {
            if (sp[i].b > sp[k].b)
                sp[k].b = sp[i].b;
        } else {
            sp[++k] = sp[i];
        }
    }
    return k + 1;
}

/* The parts of the comm spans not covered by the compute spans (both merged), into out. */
static size_t uncovered(const span *comm, size_t nm, const span *comp, size_t nc, span *out,
                        double eps)
{
    size_t k = 0, j = 0;
    for (size_t i = 0; i < nm; i++) {
        double a = comm[i].a, b = comm[i].b;
        while (j < nc && comp[j].b <= a)
            j++;
        for (size_t q = j; q < nc && comp[q].a < b && a < b; q++) {
            if (comp[q].a > a + eps)
                out[k++] = (span){a, comp[q].a};
            if (comp[q].b > a)
                a = comp[q].b;
        }
        if (b > a + eps)
            out[k++] = (span){a, b};
    }
    return k;
}

static int is_dw(int op)
{
    return op == PS_OP_MLP_DW || op == PS_OP_SHARED_DW || op == PS_OP_ATTN_DW;
}

/* Fill colour of an operation: blue shades for the forward chunk, orange for the backward,
 * green for weight gradients, grey for the pipeline transfer; the communication lighter. */
static const char *op_fill(const ps_plan_op *o)
{
    if (o->op == PS_OP_P2P)
        return "#bdbdbd";
    if (is_dw(o->op))
        return "#70b77e";
    if (o->part == 0)
        return o->stream ? "#a9cbeb" : "#5b9bd5";
    return o->stream ? "#f9cfa4" : "#f4a259";
}

static int check_ops(ps_viz *v, const ps_plan_op *ops, size_t n, const ps_plan_stats *st)
{
    if (!ops || !st || !n)
        return ps__viz_err(v, PS_EINVAL, "an overlap diagram needs operations and their stats");
    if (n > PS_VIZ_MAX_BOXES)
        return ps__viz_err(v, PS_ERANGE, "%zu operations; at most %d can be drawn", n,
                           PS_VIZ_MAX_BOXES);
    for (size_t i = 0; i < n; i++) {
        const ps_plan_op *o = &ops[i];
        if (o->op >= PS_OP_COUNT || o->stream > 1 || o->part > 1)
            return ps__viz_err(v, PS_EINVAL,
                               "operation %zu: op %d, stream %d, part %d out of range", i, o->op,
                               o->stream, o->part);
        if (!isfinite(o->start) || !isfinite(o->end) || o->end < o->start || o->start < 0)
            return ps__viz_err(v, PS_EINVAL, "operation %zu: bad times [%g, %g]", i, o->start,
                               o->end);
    }
    return 0;
}

/* The title: the caller's text, then the step's figures from stats. */
static int title(ps__canvas *cv, const char *text, const ps_plan_stats *st, size_t n,
                 double exposed)
{
    ps__vbuf b;
    ps__vbuf_init(&b, cv->v);
    char d[32], c[32], m[32], e[32];
    ps__viz_num(st->duration, d, sizeof d);
    ps__viz_num(st->compute, c, sizeof c);
    ps__viz_num(st->comm, m, sizeof m);
    ps__viz_num(st->exposed, e, sizeof e);
    ps__vbuf_title(&b, text && *text ? text : "planned step", NULL);
    ps__vbuf_printf(&b,
                    "<TR><TD ALIGN=\"LEFT\">overlap %.1f%%   step %s   "
                    "compute %s   communication %s   exposed %s   (%zu operations)",
                    100 * st->overlap, d, c, m, e, n);
    if (st->p2p > 0) {
        ps__viz_num(st->p2p, d, sizeof d);
        ps__viz_num(st->p2p_exposed, e, sizeof e);
        ps__vbuf_printf(&b, "   p2p %s (exposed %s)", d, e);
    }
    ps__viz_num(exposed, e, sizeof e);
    ps__vbuf_printf(&b,
                    "</TD></TR><TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"10\">red bars: "
                    "communication (all-to-all and p2p) while the compute stream is idle, %s "
                    "in all"
                    "</FONT></TD></TR></TABLE>",
                    e);
    int rc = b.oom ? PS_ENOMEM : ps__canvas_title(cv, ps__vbuf_str(&b));
    ps__vbuf_free(&b);
    return rc;
}

static int draw(ps__canvas *cv, const ps_plan_op *ops, size_t n, const span *ex, size_t nex,
                double end, double scale)
{
    static const double lane_h = 46, box_h = 34;
    char name[32], text[48];
    if (ps__canvas_axis(cv, end, scale, -lane_h / 2 - 8, lane_h + lane_h / 2, 1))
        return PS_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const ps_plan_op *o = &ops[i];
        double w = (o->end - o->start) * scale, y = o->stream ? 0 : lane_h;
        if (w < 1)
            w = 1;
        snprintf(name, sizeof name, "op%zu", i);
        snprintf(text, sizeof text, "op %s %s %s%s", o->stream ? "comm" : "compute",
                 o->part ? "bwd" : "fwd", is_dw(o->op) ? "dw " : "", o->dense ? "dense" : "moe");
        Agnode_t *nd = ps__canvas_box(cv, name, text, (o->start + o->end) / 2 * scale, y, w, box_h);
        if (!nd)
            return PS_ENOMEM;
        ps__viz_set(nd, cv->fill, op_fill(o));
        const char *opn = ps_op_name(o->op);
        if (o->op == PS_OP_P2P)
            snprintf(text, sizeof text, "%s", opn);
        else
            snprintf(text, sizeof text, "%s\nL%d%s", opn, (int)o->layer, o->dense ? " dense" : "");
        if (!ps__canvas_label(cv, nd, text, w, box_h)) {
            snprintf(text, sizeof text, "L%d", (int)o->layer);
            if (o->op != PS_OP_P2P)
                ps__canvas_label(cv, nd, text, w, box_h);
        }
    }
    for (size_t k = 0; k < nex; k++) {
        double w = (ex[k].b - ex[k].a) * scale;
        snprintf(name, sizeof name, "exposed%zu", k);
        Agnode_t *nd = ps__canvas_box(cv, name, "exposed", (ex[k].a + ex[k].b) / 2 * scale,
                                      -box_h / 2 - 4, w < 1 ? 1 : w, 5);
        if (!nd)
            return PS_ENOMEM;
        ps__viz_set(nd, cv->fill, "#d62728");
        ps__viz_set(nd, cv->colour, "#d62728");
    }
    if (!ps__canvas_text(cv, "lane0", "lane", -6, lane_h, "compute", 10, 'r') ||
        !ps__canvas_text(cv, "lane1", "lane", -6, 0, "communication", 10, 'r') ||
        ps__canvas_axis(cv, end, scale, -lane_h / 2 - 8, lane_h, 0))
        return PS_ENOMEM;
    /* The axis's unit, right of its last label: the configuration's, else cost units. */
    char unit[48];
    snprintf(unit, sizeof unit, "time (%s)",
             *cv->v->cfg.time_unit ? cv->v->cfg.time_unit : "cost units");
    if (!ps__canvas_text(cv, "axis.unit", "tick", end * scale + 24, -lane_h / 2 - 8 - 9, unit, 9,
                         'l'))
        return PS_ENOMEM;
    cv->legend_right = end * scale;
    double y = -lane_h / 2 - 8 - 30;
    if (ps__canvas_legend(cv, "fwd", "#5b9bd5", "#a9cbeb", NULL,
                          "forward chunk (compute, communication)", y) ||
        ps__canvas_legend(cv, "bwd", "#f4a259", "#f9cfa4", NULL,
                          "backward chunk (compute, communication)", y) ||
        ps__canvas_legend(cv, "dw", "#70b77e", NULL, NULL, "weight gradients", y) ||
        ps__canvas_legend(cv, "p2p", "#bdbdbd", NULL, NULL, "pipeline transfer", y) ||
        ps__canvas_legend(cv, "exposed", "#d62728", NULL, NULL, "exposed communication", y))
        return PS_ENOMEM;
    return 0;
}

int ps_viz_overlap_svg(ps_viz *v, const ps_plan_op *ops, size_t n, const ps_plan_stats *stats,
                       const char *text, ps_write_fn write, void *ud)
{
    if (!v)
        return PS_EINVAL;
    v->err[0] = 0;
    if (!write)
        return ps__viz_err(v, PS_EINVAL, "a write callback is required");
    int rc = check_ops(v, ops, n, stats);
    if (rc)
        return rc;
    /* Spans of the compute stream, of the communication stream, and what is exposed: at most
     * one exposed span per communication span plus one per compute span. */
    span *sp = ps__viz_calloc(v, 3 * n, sizeof *sp);
    if (!sp)
        return ps__viz_err(v, PS_ENOMEM, "out of memory");
    span *comp = sp, *comm = sp + n, *ex = sp + 2 * n;
    size_t nc = 0, nm = 0;
    double end = stats->duration > 0 && isfinite(stats->duration) ? stats->duration : 0, dmin = 0;
    for (size_t i = 0; i < n; i++) {
        span x = {ops[i].start, ops[i].end};
        if (ops[i].stream)
            comm[nm++] = x;
        else
            comp[nc++] = x;
        if (x.b > end)
            end = x.b;
        if (x.b > x.a && (dmin == 0 || x.b - x.a < dmin))
            dmin = x.b - x.a;
    }
    if (!(end > 0))
        end = 1;
    double eps = 1e-9 * end;
    nc = merge(comp, nc);
    nm = merge(comm, nm);
    size_t nex = uncovered(comm, nm, comp, nc, ex, eps);
    double exposed = 0;
    for (size_t k = 0; k < nex; k++)
        exposed += ex[k].b - ex[k].a;
    /* The shortest operation gets 30 points when the width allows: room for a short name. */
    double scale = dmin > 0 ? 30 / dmin : 800 / end;
    if (scale * end < 800)
        scale = 800 / end;
    /* One step needs less room than a whole timeline: at most 2400 points. */
    double width = v->cfg.max_width < 2400 ? v->cfg.max_width : 2400;
    if (scale * end > width)
        scale = width / end;
    Agraph_t *g;
    if (!(rc = ps__viz_open(v, "overlap", 0, &g))) {
        ps__canvas cv;
        rc = ps__canvas_init(&cv, v, g);
        if (!rc)
            rc = draw(&cv, ops, n, ex, nex, end, scale);
        if (!rc)
            rc = title(&cv, text, stats, n, exposed);
        if (rc)
            ps__viz_err(v, rc, "out of memory building the drawing");
        rc = ps__viz_close(v, g, "nop", rc, write, ud);
    }
    ps__viz_free(v, sp, 3 * n, sizeof *sp);
    return rc;
}
