/*
 * The bubble timeline: one lane per rank, x = simulated time, a box per compute action.
 *
 * Every item is a fixed-size Graphviz node pinned at its point ("nop" layout: positions are
 * taken as given, in points), so the drawing is exactly the timeline; Graphviz contributes the
 * SVG writer and text measurement. Size is bounded: at most max_lanes lanes and max_boxes
 * boxes, found by bisection on the cut time, and at most max_width points of time axis.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct timeline {
    ps_viz *v;
    const ps_schedule *s;
    const ps_sim *sim;
    ps__canvas cv;
    int pp, lanes, nv; /* ranks, lanes drawn, chunks per rank */
    int32_t *chunk;    /* chunk of each stage on its rank */
    double *lane_idle; /* overview: each lane's idle fraction of the window */
    int nst;           /* stages */
    double makespan, cut, eps, scale, lane_h, box_h;
    double t0, end; /* the window: drawn from t0, up to end (the cut, when the budget allows) */
    double res;     /* overview: idle gaps shorter than this are merged into the busy bands */
    int overview;
    const char *unit; /* the configuration's time unit, "" for cost units */
    long long boxes;  /* lane boxes drawn */
} timeline;

/* Boxes of lane r up to time t: actions (two for a fused pair) and idle gaps. */
static long long lane_boxes(const timeline *tl, int r, double t, int all, long long limit)
{
    const ps_action *a = ps_schedule_rank_actions(tl->s, r);
    const double *st = ps_sim_starts(tl->sim, r), *en = ps_sim_ends(tl->sim, r);
    size_t n = ps_schedule_rank_length(tl->s, r);
    double prev = tl->t0;
    long long k = 0;
    for (size_t i = 0; i < n && k <= limit && (all || st[i] < t); i++) {
        if (en[i] <= tl->t0 + tl->eps && st[i] < tl->t0 + tl->eps)
            continue; /* before the window */
        if (st[i] > prev + tl->eps)
            k++;
        k += a[i].kind == PS_FB ? 2 : 1;
        if (en[i] > prev)
            prev = en[i];
    }
    if (prev < t - tl->eps)
        k++;
    return k;
}

/* All lanes' boxes up to t, stopping once above limit. */
static long long count_boxes(const timeline *tl, double t, int all, long long limit)
{
    long long k = 0;
    for (int r = 0; r < tl->lanes && k <= limit; r++)
        k += lane_boxes(tl, r, t, all, limit - k);
    return k;
}

/* A box for [a, b) of lane y with fill colour and an optional label that must fit. */
static int interval(timeline *tl, const char *name, const char *cls, double a, double b, double y,
                    double h, const char *fill, const char *text)
{
    double w = (b - a) * tl->scale;
    if (w < 1)
        w = 1;
    Agnode_t *n = ps__canvas_box(&tl->cv, name, cls, ((a + b) / 2 - tl->t0) * tl->scale, y, w, h);
    if (!n)
        return PS_ENOMEM;
    tl->boxes++;
    ps__viz_set(n, tl->cv.fill, fill);
    if (!text)
        ps__viz_set(n, tl->cv.style, "filled,dashed");
    else
        ps__canvas_label(&tl->cv, n, text, w, h);
    return 0;
}

/* The chunk of stage st on its rank (0 for a stage outside the schedule's range). */
static int chunk_of(const timeline *tl, int32_t st)
{
    return st >= 0 && st < tl->nst ? tl->chunk[st] : 0;
}

static double lane_y(const timeline *tl, int r)
{
    return (tl->lanes - 1 - r) * tl->lane_h;
}

/* The boxes of lane r up to the cut. */
static int draw_lane(timeline *tl, int r)
{
    const ps_action *a = ps_schedule_rank_actions(tl->s, r);
    const double *st = ps_sim_starts(tl->sim, r), *en = ps_sim_ends(tl->sim, r);
    size_t n = ps_schedule_rank_length(tl->s, r);
    int all = tl->cut >= tl->makespan;
    double y = lane_y(tl, r), prev = tl->t0, h = tl->box_h;
    char name[48], cls[32], fill[8], text[16];
    int gaps = 0, rc;
    for (size_t i = 0; i < n && (all || st[i] < tl->cut); i++) {
        if (en[i] <= tl->t0 + tl->eps && st[i] < tl->t0 + tl->eps)
            continue; /* before the window */
        if (st[i] > prev + tl->eps) {
            snprintf(name, sizeof name, "r%d.gap%d", r, gaps++);
            if ((rc = interval(tl, name, "idle", prev, st[i], y, h, "#e6e6e6", NULL)))
                return rc;
        }
        double b = en[i] < tl->cut || all ? en[i] : tl->cut;
        double a0 = st[i] > tl->t0 ? st[i] : tl->t0;
        int c = chunk_of(tl, a[i].stage);
        ps__viz_kind_colour(a[i].kind == PS_FB ? PS_F : a[i].kind, ps__viz_chunk_light(c, tl->nv),
                            fill);
        snprintf(text, sizeof text, "%d", (int)a[i].mb);
        if (a[i].kind != PS_FB) {
            snprintf(name, sizeof name, "r%d.%zu", r, i);
            snprintf(cls, sizeof cls, "act %s c%d", ps_kind_name(a[i].kind), c);
            if ((rc = interval(tl, name, cls, a0, b, y, h, fill, text)))
                return rc;
        } else {
            /* A fused pair runs both parts at once: the forward above, the backward below. */
            snprintf(name, sizeof name, "r%d.%zuf", r, i);
            snprintf(cls, sizeof cls, "act FB F c%d", c);
            if ((rc = interval(tl, name, cls, a0, b, y + h / 4, h / 2, fill, text)))
                return rc;
            int bc = chunk_of(tl, a[i].bstage);
            ps__viz_kind_colour(a[i].bkind, ps__viz_chunk_light(bc, tl->nv), fill);
            snprintf(text, sizeof text, "%d", (int)a[i].bmb);
            snprintf(name, sizeof name, "r%d.%zub", r, i);
            snprintf(cls, sizeof cls, "act FB %s c%d", ps_kind_name(a[i].bkind), bc);
            if ((rc = interval(tl, name, cls, a0, b, y - h / 4, h / 2, fill, text)))
                return rc;
        }
        if (en[i] > prev)
            prev = en[i];
    }
    if (prev < tl->cut - tl->eps) {
        snprintf(name, sizeof name, "r%d.gap%d", r, gaps);
        if ((rc = interval(tl, name, "idle", prev, tl->cut, y, h, "#e6e6e6", NULL)))
            return rc;
    }
    return 0;
}

/* Overview: lane r as busy bands (stretches of actions, gaps under tl->res merged) and idle
 * bands within the window; *idle receives the rank's idle fraction of the window. */
static int draw_lane_bands(timeline *tl, int r, double *idle)
{
    const double *st = ps_sim_starts(tl->sim, r), *en = ps_sim_ends(tl->sim, r);
    size_t n = ps_schedule_rank_length(tl->s, r);
    double y = lane_y(tl, r), h = tl->box_h, busy = 0, bs = -1, be = tl->t0;
    char name[48];
    int k = 0, rc;
    for (size_t i = 0; i <= n; i++) {
        int last = i == n || st[i] >= tl->cut;
        double a = last ? tl->cut : st[i] > tl->t0 ? st[i] : tl->t0;
        double b = last ? tl->cut : en[i] < tl->cut ? en[i] : tl->cut;
        if (!last && b <= tl->t0 + tl->eps)
            continue;                                 /* before the window */
        if (bs >= 0 && (last || a - be >= tl->res)) { /* the busy band ends */
            snprintf(name, sizeof name, "r%d.band%d", r, k++);
            if ((rc = interval(tl, name, "busy", bs, be, y, h, "#4e79a7", "")))
                return rc;
            bs = -1;
        }
        if (bs < 0 && a > be + tl->eps) { /* an idle band up to a */
            snprintf(name, sizeof name, "r%d.gap%d", r, k++);
            if ((rc = interval(tl, name, "idle", be, a, y, h, "#e6e6e6", NULL)))
                return rc;
        }
        if (last)
            break;
        if (bs < 0)
            bs = a;
        busy += b > a ? b - a : 0;
        if (b > be)
            be = b;
    }
    double span = tl->cut - tl->t0;
    *idle = span > 0 ? 1 - busy / span : 0;
    return 0;
}

static int draw_legend(timeline *tl, double y)
{
    if (tl->overview) {
        char text[96], res[32];
        ps__viz_num(tl->res, res, sizeof res);
        snprintf(text, sizeof text, "busy (idle gaps under %s%s%s merged)", res,
                 *tl->unit ? " " : "", tl->unit);
        int rc = ps__canvas_legend(&tl->cv, "busy", "#4e79a7", NULL, NULL, text, y);
        if (!rc)
            rc = ps__canvas_legend(&tl->cv, "idle", "#e6e6e6", NULL, "filled,dashed", "idle", y);
        if (!rc)
            rc = ps__canvas_legend_text(&tl->cv, "legend.axis",
                                        *tl->unit ? "overview; lane label: idle fraction"
                                                  : "overview, x: time in cost units; lane "
                                                    "label: idle fraction",
                                        y);
        return rc;
    }
    int has[PS_KIND_COUNT] = {0}, fb_b = PS_B;
    for (int r = 0; r < tl->lanes; r++) {
        const ps_action *a = ps_schedule_rank_actions(tl->s, r);
        size_t n = ps_schedule_rank_length(tl->s, r);
        for (size_t i = 0; i < n; i++) {
            has[a[i].kind] = 1;
            if (a[i].kind == PS_FB)
                fb_b = a[i].bkind;
        }
    }
    static const char *const what[] = {"F forward", "I backward (inputs)", "W backward (weights)",
                                       "B full backward", "fused pair (F above, B below)"};
    static const char *const key[] = {"F", "I", "W", "B", "FB"};
    char fill[8], fill2[8];
    int rc = 0;
    for (int k = 0; k <= PS_FB && !rc; k++) {
        if (!has[k])
            continue;
        ps__viz_kind_colour(k == PS_FB ? PS_F : k, 0, fill);
        ps__viz_kind_colour(fb_b, 0, fill2);
        rc = ps__canvas_legend(&tl->cv, key[k], fill, k == PS_FB ? fill2 : NULL, NULL, what[k], y);
    }
    if (!rc)
        rc = ps__canvas_legend(&tl->cv, "idle", "#e6e6e6", NULL, "filled,dashed", "idle (bubble)",
                               y);
    /* Chunks: every shade up to six chunks, else the first two and the last. */
    for (int c = 0; c < tl->nv && tl->nv > 1 && !rc; c++) {
        if (tl->nv > 6 && c >= 2 && c < tl->nv - 1)
            continue;
        char k[16], text[32];
        snprintf(k, sizeof k, "chunk%d", c);
        snprintf(text, sizeof text, "%schunk %d", tl->nv > 6 && c == tl->nv - 1 ? "... " : "", c);
        ps__viz_kind_colour(PS_F, ps__viz_chunk_light(c, tl->nv), fill);
        rc = ps__canvas_legend(&tl->cv, k, fill, NULL, NULL, text, y);
    }
    char axis[64];
    if (*tl->unit)
        snprintf(axis, sizeof axis, "x: time (%s); box label: micro-batch", tl->unit);
    else
        snprintf(axis, sizeof axis, "x: time in cost units; box label: micro-batch");
    if (!rc)
        rc = ps__canvas_legend_text(&tl->cv, "legend.axis", axis, y);
    return rc;
}

/* Lane labels, axis labels with grid lines, the legend. Grid lines go first (underneath). */
static int draw_frame(timeline *tl, int grid)
{
    double top = lane_y(tl, 0) + tl->lane_h / 2, bottom = -tl->lane_h / 2;
    if (ps__canvas_axis_from(&tl->cv, tl->t0, tl->cut, tl->scale, bottom, top, grid))
        return PS_ENOMEM;
    if (grid)
        return 0;
    if (*tl->unit) { /* right of the last tick's label */
        char text[32];
        snprintf(text, sizeof text, "time (%s)", tl->unit);
        if (!ps__canvas_text(&tl->cv, "axis.unit", "tick", (tl->cut - tl->t0) * tl->scale + 24,
                             bottom - 9, text, 9, 'l'))
            return PS_ENOMEM;
    }
    for (int r = 0; r < tl->lanes; r++) {
        char name[32], text[48];
        snprintf(name, sizeof name, "lane%d", r);
        if (tl->overview)
            snprintf(text, sizeof text, "rank %d  idle %.1f%%", r, 100 * tl->lane_idle[r]);
        else
            snprintf(text, sizeof text, "rank %d", r);
        if (!ps__canvas_text(&tl->cv, name, "lane", -6, lane_y(tl, r), text,
                             tl->lane_h >= 20 ? 10 : 8, 'r'))
            return PS_ENOMEM;
    }
    /* The legend wraps at the chart's right end: DualPipe's entries (fused pairs, two model
     * copies' chunks) were wider than a 600-point chart. */
    tl->cv.legend_right = (tl->cut - tl->t0) * tl->scale;
    return draw_legend(tl, bottom - 30);
}

/* " unit" after a time in the title (HTML), nothing for cost units. */
static void put_unit(ps__vbuf *b, const timeline *tl)
{
    if (!*tl->unit)
        return;
    ps__vbuf_printf(b, " ");
    ps__vbuf_html(b, tl->unit);
}

/* The graph label: schedule, sizes, metrics and, when cut, what was left out. */
static int title(timeline *tl, const ps_metrics *met, long long full)
{
    ps__vbuf b;
    ps__vbuf_init(&b, tl->v);
    char mk[32], bub[32], cut[32];
    int64_t peak = -1;
    int peak_rank = 0;
    for (int r = 0; r < tl->pp; r++) {
        ps_rank_metrics rm;
        if (!ps_sim_rank_metrics(tl->sim, r, &rm) && rm.peak_activations > peak) {
            peak = rm.peak_activations;
            peak_rank = r;
        }
    }
    ps__viz_num(met->makespan, mk, sizeof mk);
    ps__viz_num(met->bubble, bub, sizeof bub);
    char sizes[160];
    int k = snprintf(sizes, sizeof sizes, "pp=%d ", tl->pp);
    if (ps_schedule_vpp(tl->s) > 0)
        k += snprintf(sizes + k, sizeof sizes - (size_t)k, "vpp=%d ", ps_schedule_vpp(tl->s));
    else
        k += snprintf(sizes + k, sizeof sizes - (size_t)k, "stages=%d ",
                      ps_schedule_num_stages(tl->s));
    k += snprintf(sizes + k, sizeof sizes - (size_t)k, "m=%d   (%zu actions",
                  ps_schedule_microbatches(tl->s), ps_schedule_total_actions(tl->s));
    if (ps_schedule_param_copies(tl->s) > 1)
        k += snprintf(sizes + k, sizeof sizes - (size_t)k, ", %d model copies",
                      ps_schedule_param_copies(tl->s));
    snprintf(sizes + k, sizeof sizes - (size_t)k, ")");
    ps__vbuf_title(&b, ps_schedule_family(tl->s), sizes);
    ps__vbuf_printf(&b, "<TR><TD ALIGN=\"LEFT\">makespan %s", mk);
    put_unit(&b, tl);
    ps__vbuf_printf(&b, "   bubble %s", bub);
    put_unit(&b, tl);
    ps__vbuf_printf(&b, "   bubble ratio %.4f (%.1f%%)   peak activations %lld (rank %d)</TD></TR>",
                    met->bubble_ratio, 100 * met->bubble_ratio, (long long)peak, peak_rank);
    if (tl->t0 > 0 || tl->end < tl->makespan) {
        char a[32], e[32];
        ps__viz_num(tl->t0, a, sizeof a);
        ps__viz_num(tl->end, e, sizeof e);
        ps__vbuf_printf(&b, "<TR><TD ALIGN=\"LEFT\">window: time %s-%s", a, e);
        put_unit(&b, tl);
        ps__vbuf_printf(&b, " of %s</TD></TR>", mk);
    }
    if (tl->overview) {
        char res[32];
        ps__viz_num(tl->res, res, sizeof res);
        ps__vbuf_printf(&b,
                        "<TR><TD ALIGN=\"LEFT\">overview: busy and idle bands per rank, idle "
                        "gaps under %s",
                        res);
        put_unit(&b, tl);
        ps__vbuf_printf(&b, " merged into the busy bands</TD></TR>");
    }
    if (tl->lanes < tl->pp || tl->cut < tl->end) {
        ps__viz_num(tl->cut, cut, sizeof cut);
        ps__vbuf_printf(&b, "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"#b00000\">cut to stay small:");
        if (tl->lanes < tl->pp)
            ps__vbuf_printf(&b, " ranks 0-%d of %d;", tl->lanes - 1, tl->pp);
        if (tl->cut < tl->end) {
            char a[32], e[32];
            ps__viz_num(tl->t0, a, sizeof a);
            ps__viz_num(tl->end, e, sizeof e);
            ps__vbuf_printf(&b, " time %s-%s of %s-%s", a, cut, a, e);
            put_unit(&b, tl);
            ps__vbuf_printf(&b, ";");
        }
        ps__vbuf_printf(&b, " %lld of %lld boxes drawn</FONT></TD></TR>", tl->boxes, full);
    }
    ps__vbuf_printf(&b, "</TABLE>");
    int rc = b.oom ? PS_ENOMEM : 0;
    if (!rc)
        rc = ps__canvas_title(&tl->cv, ps__vbuf_str(&b));
    ps__vbuf_free(&b);
    return rc;
}

/* Chooses the cut time (all of it when it fits the box budget) and the scale. */
static void fit(timeline *tl, long long *full)
{
    long long limit = tl->v->cfg.max_boxes;
    int all = tl->end >= tl->makespan;
    *full = count_boxes(tl, tl->end, all, LLONG_MAX);
    tl->cut = tl->end;
    if (tl->overview) {
        /* The whole window at a readable width; bands no finer than 2 points, and few enough
         * for the box budget (a busy and an idle band per resolution step and lane). */
        double width = tl->v->cfg.max_width < 1200 ? tl->v->cfg.max_width : 1200;
        double span = tl->end - tl->t0, per_lane = (double)limit / (2.0 * tl->lanes);
        tl->scale = width / span;
        tl->res = span / (per_lane > 1 ? per_lane : 1);
        if (tl->res < 2 / tl->scale)
            tl->res = 2 / tl->scale;
        return;
    }
    if (*full > limit) {
        double lo = tl->t0, hi = tl->end;
        for (int it = 0; it < 60; it++) {
            double mid = (lo + hi) / 2;
            if (count_boxes(tl, mid, 0, limit) <= limit)
                lo = mid;
            else
                hi = mid;
        }
        tl->cut = lo > tl->t0 ? lo : tl->t0 + (tl->end - tl->t0) * 1e-6;
    }
    /* The shortest drawn action gets 16 pt when the width allows: room for two digits. */
    double span = tl->cut - tl->t0, dmin = span;
    for (int r = 0; r < tl->lanes; r++) {
        const double *st = ps_sim_starts(tl->sim, r), *en = ps_sim_ends(tl->sim, r);
        size_t n = ps_schedule_rank_length(tl->s, r);
        for (size_t i = 0; i < n && st[i] < tl->cut; i++)
            if (en[i] > tl->t0 && en[i] - st[i] > tl->eps && en[i] - st[i] < dmin)
                dmin = en[i] - st[i];
    }
    double scale = 16 / dmin;
    if (scale * span < 600)
        scale = 600 / span;
    if (scale * span > tl->v->cfg.max_width)
        scale = tl->v->cfg.max_width / span;
    /* Graphviz rounds node sizes to whole points: whole points per unit keep integer costs
     * exact. */
    tl->scale = scale >= 4 ? floor(scale) : scale;
}

static int check_args(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_metrics *met)
{
    if (!s || !sim)
        return ps__viz_err(v, PS_EINVAL, "a schedule and its simulation are required");
    int pp = ps_schedule_pp(s);
    if (pp <= 0 || ps_schedule_total_actions(s) == 0)
        return ps__viz_err(v, PS_EINVAL, "the schedule is empty: generate or load one first");
    if (ps_sim_metrics(sim, met))
        return ps__viz_err(v, PS_ESTATE,
                           "the simulator holds no timeline of this schedule: run "
                           "ps_sim_run() on it first");
    if (met->pp != pp)
        return ps__viz_err(v, PS_EINVAL, "the timeline has %d ranks but the schedule %d", met->pp,
                           pp);
    for (int r = 0; r < pp; r++)
        if (!ps_sim_starts(sim, r) || !ps_sim_ends(sim, r))
            return ps__viz_err(v, PS_ESTATE, "no timeline for rank %d", r);
    return 0;
}

int ps_viz_timeline_svg(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_write_fn write,
                        void *ud)
{
    if (!v)
        return PS_EINVAL;
    v->err[0] = 0;
    if (!write)
        return ps__viz_err(v, PS_EINVAL, "a write callback is required");
    ps_metrics met;
    int rc = check_args(v, s, sim, &met);
    if (rc)
        return rc;
    timeline tl = {0};
    tl.v = v;
    tl.s = s;
    tl.sim = sim;
    tl.unit = v->cfg.time_unit;
    tl.pp = ps_schedule_pp(s);
    tl.lanes = tl.pp < v->cfg.max_lanes ? tl.pp : v->cfg.max_lanes;
    tl.makespan = met.makespan > 0 ? met.makespan : 1;
    tl.eps = 1e-9 * tl.makespan;
    tl.overview = v->cfg.overview;
    tl.end =
        v->cfg.window_to > 0 && v->cfg.window_to < tl.makespan ? v->cfg.window_to : tl.makespan;
    tl.t0 = v->cfg.window_from;
    if (tl.t0 >= tl.end)
        return ps__viz_err(v, PS_ERANGE,
                           "the window starts at %g, at or after the end of the run (%g)", tl.t0,
                           tl.end);
    tl.lane_h = tl.lanes <= 16 ? 28 : tl.lanes <= 32 ? 20 : 14;
    tl.box_h = tl.lane_h - 6;
    /* A stage's chunk is its position among the stages of its rank (copy 1 for DualPipe); the
     * counters per rank follow the stages in the same block. */
    tl.nst = ps_schedule_num_stages(s);
    size_t nst = (size_t)tl.nst, nalloc = nst + (size_t)tl.pp;
    tl.chunk = ps__viz_calloc(v, nalloc, sizeof *tl.chunk);
    tl.lane_idle = tl.chunk ? ps__viz_calloc(v, (size_t)tl.lanes, sizeof *tl.lane_idle) : NULL;
    if (!tl.lane_idle) {
        ps__viz_free(v, tl.chunk, nalloc, sizeof *tl.chunk);
        return ps__viz_err(v, PS_ENOMEM, "out of memory");
    }
    for (size_t st = 0; st < nst; st++) {
        int r = ps_schedule_stage_rank(s, (int)st);
        int32_t *seen = &tl.chunk[nst + (size_t)(r >= 0 ? r : 0)];
        tl.chunk[st] = (*seen)++;
        if (tl.chunk[st] + 1 > tl.nv)
            tl.nv = tl.chunk[st] + 1;
    }
    long long full;
    fit(&tl, &full);
    Agraph_t *g;
    if (!(rc = ps__viz_open(v, "timeline", 0, &g))) {
        rc = ps__canvas_init(&tl.cv, v, g);
        if (!rc)
            rc = draw_frame(&tl, 1);
        for (int r = 0; r < tl.lanes && !rc; r++)
            rc = tl.overview ? draw_lane_bands(&tl, r, &tl.lane_idle[r]) : draw_lane(&tl, r);
        if (!rc)
            rc = draw_frame(&tl, 0);
        if (!rc)
            rc = title(&tl, &met, full);
        if (rc)
            ps__viz_err(v, rc, "out of memory building the drawing");
        rc = ps__viz_close(v, g, "nop", rc, write, ud);
    }
    ps__viz_free(v, tl.lane_idle, (size_t)tl.lanes, sizeof *tl.lane_idle);
    ps__viz_free(v, tl.chunk, nalloc, sizeof *tl.chunk);
    return rc;
}
