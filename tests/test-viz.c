/*
 * The Graphviz exporter: the SVG is parsed back and its structure compared with the schedule
 * and the simulated timeline (boxes per lane, x and width against start and duration through
 * the axis labels, idle gaps, legend, title figures from the closed forms, a time unit), the
 * overlap diagram against a hand-made plan, the dependency graph's critical path against the
 * makespan; bad requests, allocation failures and a failing writer; determinism.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <pipesched/viz.h>

#include <cgraph.h>
#include <math.h>
#include <stdio.h>

/* ---- output and a small SVG reader ---------------------------------------------------------- */

typedef struct buf {
    char *data;
    size_t len, cap;
    int fail; /* the writer fails */
    int calls;
} buf;

static int buf_write(void *ud, const char *data, size_t len)
{
    buf *b = ud;
    b->calls++;
    if (b->fail)
        return -1;
    if (b->len + len + 1 > b->cap) {
        b->cap = (b->len + len + 1) * 2;
        b->data = realloc(b->data, b->cap);
        ck_assert_ptr_nonnull(b->data);
    }
    memcpy(b->data + b->len, data, len);
    b->len += len;
    b->data[b->len] = 0;
    return 0;
}

/* One <g class="node ..."> or <g class="edge ..."> of Graphviz's SVG. */
typedef struct item {
    char title[64];
    char cls[64];   /* the classes after "node"/"edge" */
    char fill[16];  /* of the first polygon */
    char text[128]; /* the text runs, joined by '|' */
    int edge, has_box;
    double x0, x1, y0, y1; /* bounding box of the first polygon */
    double tx, ty;         /* position of the first text run */
} item;

typedef struct svg {
    item *it;
    size_t n;
} svg;

/* Copies the text between from and the next stop into out, decoding Graphviz's entities. */
static void copy_until(const char *from, const char *stop, char *out, size_t n)
{
    const char *end = strstr(from, stop);
    size_t k = 0;
    for (const char *p = from; p < end && k + 1 < n; p++) {
        static const struct {
            const char *ent;
            char c;
        } ents[] = {{"&#45;", '-'}, {"&gt;", '>'}, {"&lt;", '<'}, {"&amp;", '&'}, {"&quot;", '"'}};
        int done = 0;
        for (size_t e = 0; e < sizeof ents / sizeof ents[0] && !done; e++)
            if (!strncmp(p, ents[e].ent, strlen(ents[e].ent))) {
                out[k++] = ents[e].c;
                p += strlen(ents[e].ent) - 1;
                done = 1;
            }
        if (!done)
            out[k++] = *p;
    }
    out[k] = 0;
}

static double attr_num(const char *from, const char *end, const char *name)
{
    const char *p = strstr(from, name);
    ck_assert_msg(p && p < end, "no %s", name);
    return strtod(p + strlen(name), NULL);
}

static svg parse(const char *s)
{
    svg out = {NULL, 0};
    size_t cap = 0;
    for (const char *p = strstr(s, "<g id=\""); p; p = strstr(p + 1, "<g id=\"")) {
        const char *c = strstr(p, "class=\"");
        if (!c || (strncmp(c + 7, "node", 4) && strncmp(c + 7, "edge", 4)))
            continue;
        const char *end = strstr(p, "</g>");
        ck_assert_ptr_nonnull(end);
        if (out.n == cap) {
            cap = cap ? 2 * cap : 256;
            out.it = realloc(out.it, cap * sizeof *out.it);
            ck_assert_ptr_nonnull(out.it);
        }
        item *it = &out.it[out.n++];
        memset(it, 0, sizeof *it);
        it->edge = !strncmp(c + 7, "edge", 4);
        copy_until(c[11] == ' ' ? c + 12 : c + 11, "\"", it->cls, sizeof it->cls);
        const char *t = strstr(p, "<title>");
        ck_assert(t && t < end);
        copy_until(t + 7, "</title>", it->title, sizeof it->title);
        const char *poly = strstr(p, "<polygon");
        if (poly && poly < end) {
            const char *f = strstr(poly, "fill=\"");
            copy_until(f + 6, "\"", it->fill, sizeof it->fill);
            const char *q = strstr(poly, "points=\"") + 8;
            it->x0 = it->y0 = INFINITY;
            it->x1 = it->y1 = -INFINITY;
            while (*q != '"') {
                char *e;
                double x = strtod(q, &e), y = strtod(e + 1, &e);
                it->x0 = fmin(it->x0, x);
                it->x1 = fmax(it->x1, x);
                it->y0 = fmin(it->y0, y);
                it->y1 = fmax(it->y1, y);
                q = e;
                while (*q == ' ')
                    q++;
            }
            it->has_box = 1;
        }
        const char *ell = strstr(p, "<ellipse");
        if (!it->has_box && ell && ell < end) {
            const char *gt = strchr(ell, '>');
            double cx = attr_num(ell, gt, " cx=\""), cy = attr_num(ell, gt, " cy=\"");
            double rx = attr_num(ell, gt, " rx=\""), ry = attr_num(ell, gt, " ry=\"");
            it->x0 = cx - rx;
            it->x1 = cx + rx;
            it->y0 = cy - ry;
            it->y1 = cy + ry;
            it->has_box = 1;
        }
        int first = 1;
        for (const char *x = strstr(p, "<text"); x && x < end; x = strstr(x + 1, "<text")) {
            const char *gt = strchr(x, '>');
            if (first) {
                it->tx = attr_num(x, gt, " x=\"");
                it->ty = attr_num(x, gt, " y=\"");
                first = 0;
            }
            size_t used = strlen(it->text);
            if (used && used + 1 < sizeof it->text)
                it->text[used++] = '|';
            copy_until(gt + 1, "</text>", it->text + used, sizeof it->text - used);
        }
    }
    return out;
}

static const item *find(const svg *g, const char *title)
{
    for (size_t i = 0; i < g->n; i++)
        if (!strcmp(g->it[i].title, title))
            return &g->it[i];
    return NULL;
}

static int has_class(const item *it, const char *cls)
{
    size_t n = strlen(cls);
    for (const char *p = it->cls; (p = strstr(p, cls)); p += n)
        if ((p == it->cls || p[-1] == ' ') && (p[n] == 0 || p[n] == ' '))
            return 1;
    return 0;
}

/* x of time t: the axis labels "tick0" (time 0) and "tick1" (its value) give origin and scale. */
typedef struct axis {
    double x0, scale;
} axis;

static axis read_axis(const svg *g)
{
    const item *t0 = find(g, "tick0"), *t1 = find(g, "tick1");
    ck_assert_ptr_nonnull(t0);
    ck_assert_ptr_nonnull(t1);
    ck_assert_str_eq(t0->text, "0");
    double v1 = strtod(t1->text, NULL);
    ck_assert(v1 > 0);
    axis a = {t0->tx, (t1->tx - t0->tx) / v1};
    ck_assert(a.scale > 0);
    return a;
}

/* The box of [a, b) at the axis: centre exact (2 decimals), width rounded to whole points. */
static void assert_span(const item *it, axis ax, double a, double b)
{
    double want_w = fmax((b - a) * ax.scale, 1), want_c = ax.x0 + (a + b) / 2 * ax.scale;
    ck_assert_msg(fabs((it->x1 - it->x0) - want_w) <= 0.51, "%s: width %g, expected %g", it->title,
                  it->x1 - it->x0, want_w);
    ck_assert_msg(fabs((it->x0 + it->x1) / 2 - want_c) <= 0.02, "%s: centre %g, expected %g",
                  it->title, (it->x0 + it->x1) / 2, want_c);
}

static ps_viz *new_viz(void)
{
    ps_viz *v;
    ck_assert_int_eq(ps_viz_new(&v, NULL, NULL), 0);
    return v;
}

typedef struct fixture {
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
} fixture;

static fixture simulate(const char *family, int pp, int vpp, int m)
{
    fixture f;
    f.pb = make_problem(family, pp, vpp, m, 1, 1, 1, 0);
    ck_assert_int_eq(ps_schedule_new(&f.s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(f.s, f.pb), 0);
    ck_assert_int_eq(ps_sim_new(&f.sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(f.sim, f.s, f.pb), 0);
    return f;
}

static void release(fixture *f)
{
    ps_sim_free(f->sim);
    ps_schedule_free(f->s);
    ps_problem_free(f->pb);
}

static buf draw_timeline(ps_viz *v, const fixture *f)
{
    buf b = {0};
    ck_assert_msg(ps_viz_timeline_svg(v, f->s, f->sim, buf_write, &b) == 0, "%s",
                  ps_viz_last_error(v));
    ck_assert_int_eq(b.calls, 1);
    ck_assert(!strncmp(b.data, "<?xml", 5));
    ck_assert_ptr_nonnull(strstr(b.data, "</svg>"));
    return b;
}

/* ---- timeline ------------------------------------------------------------------------------- */

/*
 * Every rank's lane holds one box per action (two halves for a fused pair) at its simulated
 * start and duration, the idle gaps of [0, makespan] in between, all at the lane's height;
 * lanes go down with the rank.
 */
static void assert_timeline(const fixture *f, const svg *g)
{
    axis ax = read_axis(g);
    ps_metrics met;
    ck_assert_int_eq(ps_sim_metrics(f->sim, &met), 0);
    double prev_lane_y = -INFINITY;
    for (int r = 0; r < ps_schedule_pp(f->s); r++) {
        const ps_action *a = ps_schedule_rank_actions(f->s, r);
        const double *st = ps_sim_starts(f->sim, r), *en = ps_sim_ends(f->sim, r);
        size_t n = ps_schedule_rank_length(f->s, r), boxes = 0, gaps = 0;
        char name[64];
        double y = NAN, prev = 0;
        for (size_t i = 0; i < n; i++) {
            if (st[i] > prev + 1e-9) {
                snprintf(name, sizeof name, "r%d.gap%zu", r, gaps++);
                const item *it = find(g, name);
                ck_assert_msg(it && has_class(it, "idle"), "no idle box %s", name);
                assert_span(it, ax, prev, st[i]);
            }
            prev = fmax(prev, en[i]);
            for (int half = 0; half < (a[i].kind == PS_FB ? 2 : 1); half++) {
                snprintf(name, sizeof name, "r%d.%zu%s", r, i,
                         a[i].kind == PS_FB ? (half ? "b" : "f") : "");
                const item *it = find(g, name);
                ck_assert_msg(it && has_class(it, "act"), "no box %s", name);
                assert_span(it, ax, st[i], en[i]);
                double cy = (it->y0 + it->y1) / 2;
                if (a[i].kind != PS_FB) {
                    ck_assert(has_class(it, ps_kind_name(a[i].kind)));
                    if (isnan(y))
                        y = cy;
                    ck_assert(fabs(cy - y) < 0.01);
                    char mb[16];
                    snprintf(mb, sizeof mb, "%d", (int)a[i].mb);
                    ck_assert_msg(!it->text[0] || !strcmp(it->text, mb), "%s labelled %s", name,
                                  it->text);
                } else {
                    /* The forward half above (smaller SVG y), the backward half below. */
                    const item *other = NULL;
                    snprintf(name, sizeof name, "r%d.%zub", r, i);
                    other = find(g, name);
                    ck_assert(has_class(it, "FB"));
                    if (!half)
                        ck_assert(it->y1 <= other->y0 + 0.01);
                }
                boxes++;
            }
        }
        if (prev < met.makespan - 1e-9) {
            snprintf(name, sizeof name, "r%d.gap%zu", r, gaps++);
            const item *it = find(g, name);
            ck_assert_msg(it, "no trailing gap %s", name);
            assert_span(it, ax, prev, met.makespan);
        }
        /* Nothing else in the lane. */
        size_t lane_items = 0;
        snprintf(name, sizeof name, "r%d.", r);
        for (size_t k = 0; k < g->n; k++)
            lane_items += !strncmp(g->it[k].title, name, strlen(name));
        ck_assert_uint_eq(lane_items, boxes + gaps);
        if (!isnan(y)) {
            ck_assert(y > prev_lane_y);
            prev_lane_y = y;
        }
        snprintf(name, sizeof name, "lane%d", r);
        const item *lane = find(g, name);
        ck_assert_ptr_nonnull(lane);
        snprintf(name, sizeof name, "rank %d", r);
        ck_assert_str_eq(lane->text, name);
    }
    /* A legend with the idle swatch and text. */
    const item *idle = find(g, "legend.idle.text");
    ck_assert_ptr_nonnull(idle);
    ck_assert(has_class(idle, "legend"));
    ck_assert_ptr_nonnull(strstr(idle->text, "idle"));
}

/* Title figures from the closed forms of DESIGN.md (f = b = w = 1, c = 0). */
static const struct {
    const char *family;
    int pp, vpp, m;
    const char *sizes, *figures, *peak;
} cases[] = {
    /* 1F1B: makespan (m + p - 1)(f + b + w) = 33, ratio (p - 1)/(m + p - 1) = 3/11, peak p. */
    {"1f1b", 4, 1, 8, "pp=4 vpp=1 m=8", "makespan 33   bubble 9   bubble ratio 0.2727 (27.3%)",
     "peak activations 4 (rank 0)"},
    /* Interleaved: v m (f + b + w) + (p - 1)(f + b + w) = 48 + 9; ratio 3/19; peak
     * 2(p - 1) + (v - 1)p + 1 = 11. */
    {"interleaved", 4, 2, 8, "pp=4 vpp=2 m=8",
     "makespan 57   bubble 9   bubble ratio 0.1579 (15.8%)", "peak activations 11 (rank 0)"},
    /* ZB-H1: bubble (p - 1)(f + b - w) = 3 on top of 3m = 24 busy; ratio 3/27; peak p. */
    {"zb-h1", 4, 1, 8, "pp=4 vpp=1 m=8", "makespan 27   bubble 3   bubble ratio 0.1111 (11.1%)",
     "peak activations 4 (rank 0)"},
    /* Looped BFS: all forwards of both chunks then the backwards; the bubble as GPipe per
     * loop is (p - 1)(f + b + w) = 9 in chunk costs on 48 busy; peak m v = 16. */
    {"looped-bfs", 4, 2, 8, "pp=4 vpp=2 m=8",
     "makespan 57   bubble 9   bubble ratio 0.1579 (15.8%)", "peak activations 16 (rank 0)"},
};

START_TEST(viz_timeline_structure)
{
    fixture f = simulate(cases[_i].family, cases[_i].pp, cases[_i].vpp, cases[_i].m);
    ps_viz *v = new_viz();
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    assert_timeline(&f, &g);
    ck_assert_msg(strstr(b.data, cases[_i].sizes), "no \"%s\"", cases[_i].sizes);
    /* Graphviz writes runs of spaces as a space and no-break spaces. */
    char want[128];
    size_t k = 0;
    for (const char *p = cases[_i].figures; *p && k + 3 < sizeof want; p++) {
        if (p[0] == ' ' && p[1] == ' ') {
            want[k++] = ' ';
            while (p[1] == ' ') {
                memcpy(want + k, "&#160;", 6);
                k += 6;
                p++;
            }
        } else {
            want[k++] = *p;
        }
    }
    want[k] = 0;
    ck_assert_msg(strstr(b.data, want), "no \"%s\"", want);
    ck_assert_ptr_nonnull(strstr(b.data, cases[_i].peak));
    /* Graphviz writes '-' as "&#45;". */
    k = 0;
    for (const char *p = cases[_i].family; *p && k + 6 < sizeof want; p++)
        k += (size_t)snprintf(want + k, sizeof want - k, *p == '-' ? "&#45;" : "%c", *p);
    ck_assert_msg(strstr(b.data, want), "no \"%s\"", want);
    /* Every box of these small timelines is labelled. */
    for (size_t i = 0; i < g.n; i++)
        if (has_class(&g.it[i], "act"))
            ck_assert_msg(g.it[i].text[0], "%s has no label", g.it[i].title);
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/*
 * A timeline in seconds (time_unit "s"): the same boxes on the same axis, the makespan and the
 * bubble with their unit, "time (s)" right of the last tick, the legend's axis line; 1F1B with
 * f = b = w = 0.25 s on 4 ranks and 8 micro-batches is the cost-unit timeline of f = b = w = 1
 * (makespan 33, bubble 9) times 0.25. Without a unit nothing of it appears; a unit that is not
 * NUL-terminated or holds a backslash or a control character is refused.
 */
START_TEST(viz_timeline_time_unit)
{
    fixture f;
    f.pb = make_problem("1f1b", 4, 1, 8, 0.25, 0.25, 0.25, 0);
    ck_assert_int_eq(ps_schedule_new(&f.s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(f.s, f.pb), 0);
    ck_assert_int_eq(ps_sim_new(&f.sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(f.sim, f.s, f.pb), 0);
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    ck_assert_str_eq(cfg.time_unit, "");
    strcpy(cfg.time_unit, "s");
    ps_viz *v;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    assert_timeline(&f, &g);
    ck_assert_msg(strstr(b.data, "makespan 8.25 s &#160;&#160;bubble 2.25 s &#160;"), "%s",
                  "no makespan and bubble in seconds");
    const item *unit = find(&g, "axis.unit");
    ck_assert_ptr_nonnull(unit);
    ck_assert_str_eq(unit->text, "time (s)");
    double last_tick = -INFINITY;
    for (size_t i = 0; i < g.n; i++)
        if (!strncmp(g.it[i].title, "tick", 4))
            last_tick = fmax(last_tick, g.it[i].x1);
    ck_assert(unit->x0 > last_tick);
    const item *legend = find(&g, "legend.axis");
    ck_assert_ptr_nonnull(legend);
    ck_assert_str_eq(legend->text, "x: time (s); box label: micro-batch");
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    /* Cost units, the default. */
    v = new_viz();
    b = draw_timeline(v, &f);
    g = parse(b.data);
    ck_assert_ptr_null(find(&g, "axis.unit"));
    ck_assert_str_eq(find(&g, "legend.axis")->text,
                     "x: time in cost units; box label: micro-batch");
    ck_assert_ptr_nonnull(strstr(b.data, "makespan 8.25 &#160;&#160;bubble 2.25 &#160;"));
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    /* A unit with HTML's special characters is escaped in the title and the axis. */
    strcpy(cfg.time_unit, "<u&>");
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    b = draw_timeline(v, &f);
    ck_assert_ptr_null(strstr(b.data, "<u&>"));
    g = parse(b.data);
    ck_assert_str_eq(find(&g, "axis.unit")->text, "time (<u&>)");
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    /* Refused units. */
    ps_viz *w = NULL;
    memset(cfg.time_unit, 'a', sizeof cfg.time_unit);
    ck_assert_int_eq(ps_viz_new(&w, &cfg, NULL), PS_ERANGE);
    strcpy(cfg.time_unit, "m\\s");
    ck_assert_int_eq(ps_viz_new(&w, &cfg, NULL), PS_ERANGE);
    strcpy(cfg.time_unit, "s\n");
    ck_assert_int_eq(ps_viz_new(&w, &cfg, NULL), PS_ERANGE);
    ck_assert_ptr_null(w);
    release(&f);
}
END_TEST

/* Chunks are told apart by shade: the same kind, a lighter fill for the later chunk. */
START_TEST(viz_timeline_chunks)
{
    fixture f = simulate("interleaved", 4, 2, 8);
    ps_viz *v = new_viz();
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    const char *c0 = NULL, *c1 = NULL;
    for (size_t i = 0; i < g.n; i++) {
        if (has_class(&g.it[i], "F") && has_class(&g.it[i], "c0"))
            c0 = g.it[i].fill;
        if (has_class(&g.it[i], "F") && has_class(&g.it[i], "c1"))
            c1 = g.it[i].fill;
    }
    ck_assert_ptr_nonnull(c0);
    ck_assert_ptr_nonnull(c1);
    ck_assert_str_ne(c0, c1);
    ck_assert_ptr_nonnull(find(&g, "legend.chunk1"));
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* Fused pairs (DualPipeV, Adaptive Pipe) are drawn as two halves of the same span. */
START_TEST(viz_timeline_fused)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } fam[] = {{"dualpipev", 4, 2, 10}, {"adaptive", 4, 2, 8}};
    for (int k = 0; k < 2; k++) {
        ps_family_info fi;
        if (ps_family_lookup(fam[k].family, &fi) < 0)
            continue; /* not in this build yet */
        fixture f = simulate(fam[k].family, fam[k].pp, fam[k].vpp, fam[k].m);
        ps_viz *v = new_viz();
        buf b = draw_timeline(v, &f);
        svg g = parse(b.data);
        assert_timeline(&f, &g);
        size_t fb = 0;
        for (size_t i = 0; i < g.n; i++)
            fb += has_class(&g.it[i], "FB");
        ck_assert(fb > 0 && fb % 2 == 0);
        ck_assert_ptr_nonnull(find(&g, "legend.FB"));
        free(g.it);
        free(b.data);
        ps_viz_free(v);
        release(&f);
    }
}
END_TEST

/* 16 ranks x 64 micro-batches: whole, within the width limit, labels where they fit. */
START_TEST(viz_timeline_16x64)
{
    fixture f = simulate("1f1b", 16, 1, 64);
    ps_viz *v = new_viz();
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    assert_timeline(&f, &g);
    axis ax = read_axis(&g);
    ps_metrics met;
    ps_sim_metrics(f.sim, &met);
    ck_assert(met.makespan * ax.scale <= 4000 + 1);
    size_t labelled = 0, acts = 0;
    for (size_t i = 0; i < g.n; i++)
        if (has_class(&g.it[i], "act")) {
            acts++;
            labelled += g.it[i].text[0] != 0;
        }
    ck_assert_uint_eq(acts, ps_schedule_total_actions(f.s));
    ck_assert_uint_eq(labelled, acts); /* 16 points per unit hold two digits */
    ck_assert(!strstr(b.data, "cut to stay small"));
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* Beyond the box budget and the lane limit the drawing is cut and says so. */
START_TEST(viz_timeline_capped)
{
    fixture f = simulate("1f1b", 16, 1, 64);
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    cfg.max_boxes = 300;
    cfg.max_lanes = 8;
    ps_viz *v;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    size_t boxes = 0;
    for (size_t i = 0; i < g.n; i++) {
        boxes += has_class(&g.it[i], "act") || has_class(&g.it[i], "idle");
        ck_assert(strncmp(g.it[i].title, "r8.", 3));
    }
    ck_assert(boxes <= 300 && boxes > 250);
    ck_assert_ptr_nonnull(find(&g, "lane7"));
    ck_assert_ptr_null(find(&g, "lane8"));
    ck_assert_ptr_nonnull(strstr(b.data, "cut to stay small: ranks 0&#45;7 of 16; time 0&#45;"));
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);

    /* A huge schedule with the defaults: bounded. */
    f = simulate("1f1b", 64, 1, 2048);
    v = new_viz();
    b = draw_timeline(v, &f);
    ck_assert(b.len < 4u << 20);
    ck_assert_ptr_nonnull(strstr(b.data, "cut to stay small"));
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* ---- overlap diagram ------------------------------------------------------------------------ */

/*
 * A hand-made step: compute attn [0,1) F, mlp [2,3) F, attn_dx [3,4) B; communication
 * combine_b [0,0.5) B (under attn), dispatch [1,2) F (nothing computes: exposed) and combine
 * [3,4.5) F (exposed after 4). Exposed: [1,2) and [4,4.5); overlap 1 - 1.5/3 = 50%.
 */
/* The legend wraps to stay within the chart: DualPipe's (fused pairs, I and W, two copies'
 * chunks) was wider than its 600-point chart. Every legend item ends left of the chart's right
 * end (the last box), and the legend has more than one line. */
START_TEST(viz_timeline_legend_width)
{
    static const char *const families[] = {"dualpipev", "dualpipe", "1f1b"};
    fixture f = simulate(families[_i], 4, 0, 8);
    ps_viz *v = new_viz();
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    double right = -INFINITY, left = INFINITY;
    for (size_t i = 0; i < g.n; i++)
        if (has_class(&g.it[i], "act") || has_class(&g.it[i], "idle")) {
            right = fmax(right, g.it[i].x1);
            left = fmin(left, g.it[i].x0);
        }
    for (size_t i = 0; i < g.n; i++)
        if (has_class(&g.it[i], "legend"))
            ck_assert_msg(g.it[i].x1 <= right + 1 && g.it[i].x0 >= left - 1,
                          "%s: legend item %s spans [%g, %g], the chart [%g, %g]", families[_i],
                          g.it[i].title, g.it[i].x0, g.it[i].x1, left, right);
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* A window draws only [from, to): every box inside it, the axis from `from`, the title naming
 * it; an overview draws each lane as bands with its idle fraction, within the box budget. */
START_TEST(viz_timeline_window_overview)
{
    fixture f = simulate("1f1b", 4, 1, 8); /* makespan 33 */
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    cfg.window_from = 10;
    cfg.window_to = 20;
    ps_viz *v;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    buf b = draw_timeline(v, &f);
    svg g = parse(b.data);
    const item *t0 = find(&g, "tick0");
    ck_assert_ptr_nonnull(t0);
    ck_assert_str_eq(t0->text, "10");
    double x0 = INFINITY, x1 = -INFINITY;
    for (size_t i = 0; i < g.n; i++)
        if (!strncmp(g.it[i].title, "tick", 4)) {
            x0 = fmin(x0, g.it[i].tx);
            x1 = fmax(x1, g.it[i].tx);
        }
    size_t boxes = 0;
    for (size_t i = 0; i < g.n; i++)
        if (has_class(&g.it[i], "act") || has_class(&g.it[i], "idle")) {
            boxes++;
            ck_assert_msg(g.it[i].x0 >= x0 - 0.6 && g.it[i].x1 <= x1 + 0.6,
                          "%s: [%g, %g] outside the window's axis [%g, %g]", g.it[i].title,
                          g.it[i].x0, g.it[i].x1, x0, x1);
        }
    ck_assert(boxes > 0);
    ck_assert_ptr_nonnull(strstr(b.data, "window: time 10&#45;20 of 33"));
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    /* A window that starts after the run is refused. */
    cfg.window_from = 40;
    cfg.window_to = 0;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    b = (buf){0};
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b), PS_ERANGE);
    ck_assert_int_eq(b.calls, 0);
    ps_viz_free(v);
    cfg.window_from = 5;
    cfg.window_to = 4;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), PS_ERANGE);
    /* The overview: bands, a lane label with the idle fraction (rank 0: 9 of 33 idle). */
    ps_viz_config_init(&cfg);
    cfg.overview = 1;
    ck_assert_int_eq(ps_viz_new(&v, &cfg, NULL), 0);
    b = draw_timeline(v, &f);
    g = parse(b.data);
    const item *lane0 = find(&g, "lane0");
    ck_assert_ptr_nonnull(lane0);
    ck_assert_msg(strstr(lane0->text, "idle 27.3%"), "lane0: %s", lane0->text);
    size_t busy = 0;
    for (size_t i = 0; i < g.n; i++) {
        busy += has_class(&g.it[i], "busy");
        ck_assert(!has_class(&g.it[i], "act"));
    }
    ck_assert(busy >= 4);
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

static const ps_plan_op step_ops[] = {
    {PS_OP_ATTN, 0, 0, 0, 0, 0, 1},     {PS_OP_COMBINE_B, 1, 1, 0, 3, 0, 0.5},
    {PS_OP_DISPATCH, 1, 0, 0, 0, 1, 2}, {PS_OP_MLP, 0, 0, 0, 0, 2, 3},
    {PS_OP_ATTN_DX, 0, 1, 0, 3, 3, 4},  {PS_OP_COMBINE, 1, 0, 0, 0, 3, 4.5},
};
static const ps_plan_stats step_stats = {4.5, 3, 3, 1.5, 0.5, 0, 0};

START_TEST(viz_overlap_structure)
{
    ps_viz *v = new_viz();
    buf b = {0};
    size_t n = sizeof step_ops / sizeof step_ops[0];
    ck_assert_int_eq(ps_viz_overlap_svg(v, step_ops, n, &step_stats, "pair", buf_write, &b), 0);
    svg g = parse(b.data);
    axis ax = read_axis(&g);
    const item *l0 = find(&g, "lane0"), *l1 = find(&g, "lane1");
    ck_assert_str_eq(l0->text, "compute");
    ck_assert_str_eq(l1->text, "communication");
    double ycomp = NAN, ycomm = NAN;
    for (size_t i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "op%zu", i);
        const item *it = find(&g, name);
        ck_assert_ptr_nonnull(it);
        assert_span(it, ax, step_ops[i].start, step_ops[i].end);
        ck_assert(has_class(it, step_ops[i].stream ? "comm" : "compute"));
        ck_assert(has_class(it, step_ops[i].part ? "bwd" : "fwd"));
        double *y = step_ops[i].stream ? &ycomm : &ycomp;
        if (isnan(*y))
            *y = it->y0;
        ck_assert(fabs(it->y0 - *y) < 0.01);
        /* The label names the operation and its layer. */
        char want[32];
        snprintf(want, sizeof want, "%s|L%d", ps_op_name(step_ops[i].op), (int)step_ops[i].layer);
        ck_assert_str_eq(it->text, want);
    }
    ck_assert(ycomp < ycomm); /* compute lane above */
    /* Forward and backward chunks in different colours, on both streams. */
    ck_assert_str_ne(find(&g, "op0")->fill, find(&g, "op4")->fill);
    ck_assert_str_ne(find(&g, "op1")->fill, find(&g, "op2")->fill);
    /* Exactly the two exposed intervals, under the communication lane. */
    const item *e0 = find(&g, "exposed0"), *e1 = find(&g, "exposed1");
    ck_assert_ptr_nonnull(e0);
    ck_assert_ptr_nonnull(e1);
    ck_assert_ptr_null(find(&g, "exposed2"));
    assert_span(e0, ax, 1, 2);
    assert_span(e1, ax, 4, 4.5);
    ck_assert(has_class(e0, "exposed") && e0->y0 > ycomm);
    ck_assert_ptr_nonnull(strstr(b.data, "overlap 50.0%"));
    ck_assert_ptr_nonnull(strstr(b.data, ">pair<"));
    ck_assert_ptr_nonnull(find(&g, "legend.exposed.text"));
    /* The axis says its unit, right of its last label: cost units without a time_unit. */
    const item *unit = find(&g, "axis.unit");
    ck_assert_ptr_nonnull(unit);
    ck_assert_str_eq(unit->text, "time (cost units)");
    for (size_t i = 0; i < g.n; i++)
        if (!strncmp(g.it[i].title, "tick", 4))
            ck_assert(unit->x0 > g.it[i].x1);
    free(g.it);
    free(b.data);
    ps_viz_free(v);
}
END_TEST

/* Titles are text: quotes, angle brackets, ampersands and backslashes come out escaped. */
START_TEST(viz_overlap_escaping)
{
    ps_viz *v = new_viz();
    buf b = {0};
    const char *title = "a <b> & \"c\" 'd' \\n &amp;";
    ck_assert_int_eq(ps_viz_overlap_svg(v, step_ops, 2, &step_stats, title, buf_write, &b), 0);
    ck_assert_ptr_nonnull(
        strstr(b.data, "a &lt;b&gt; &amp; &quot;c&quot; &#39;d&#39; \\n &amp;amp;"));
    ck_assert_ptr_null(strstr(b.data, "<b>"));
    free(b.data);
    ps_viz_free(v);
}
END_TEST

/* ---- dependency graph ----------------------------------------------------------------------- */

typedef struct crit_node {
    double s, e;
    const char *title;
} crit_node;

static void action_at(const fixture *f, const char *title, double *s, double *e)
{
    int r;
    size_t i;
    ck_assert_int_eq(sscanf(title, "r%d.%zu", &r, &i), 2);
    ck_assert(r >= 0 && r < ps_schedule_pp(f->s) && i < ps_schedule_rank_length(f->s, r));
    *s = ps_sim_starts(f->sim, r)[i];
    *e = ps_sim_ends(f->sim, r)[i];
}

/*
 * A node per action; the critical nodes chain from 0 to the makespan without a gap (c = 0),
 * each consecutive pair joined by a critical edge.
 */
START_TEST(viz_dag_critical_path)
{
    static const struct {
        const char *family;
        int pp, vpp, m;
    } fam[] = {
        {"1f1b", 4, 1, 8}, {"zb-h1", 4, 1, 8}, {"interleaved", 2, 2, 4}, {"dualpipev", 2, 2, 4}};
    ps_family_info fi;
    if (ps_family_lookup(fam[_i].family, &fi) < 0)
        return;
    fixture f = simulate(fam[_i].family, fam[_i].pp, fam[_i].vpp, fam[_i].m);
    ps_viz *v = new_viz();
    buf b = {0};
    ck_assert_msg(ps_viz_dag_svg(v, f.s, f.sim, buf_write, &b) == 0, "%s", ps_viz_last_error(v));
    svg g = parse(b.data);
    size_t nodes = 0, crit = 0, data = 0, order = 0;
    crit_node path[512];
    for (size_t i = 0; i < g.n; i++) {
        const item *it = &g.it[i];
        if (it->edge) {
            data += has_class(it, "data");
            order += has_class(it, "order");
            continue;
        }
        nodes += has_class(it, "act");
        if (has_class(it, "critical")) {
            ck_assert(crit < 512);
            action_at(&f, it->title, &path[crit].s, &path[crit].e);
            path[crit++].title = it->title;
        }
    }
    ck_assert_uint_eq(nodes, ps_schedule_total_actions(f.s));
    ck_assert(data > 0 && order > 0);
    /* Sort by start and walk the chain. */
    for (size_t i = 1; i < crit; i++)
        for (size_t k = i; k > 0 && path[k].s < path[k - 1].s; k--) {
            crit_node t = path[k];
            path[k] = path[k - 1];
            path[k - 1] = t;
        }
    ps_metrics met;
    ps_sim_metrics(f.sim, &met);
    double len = 0;
    ck_assert(crit > 0);
    ck_assert(fabs(path[0].s) < 1e-9);
    for (size_t i = 0; i < crit; i++) {
        len += path[i].e - path[i].s;
        if (i) {
            ck_assert(fabs(path[i].s - path[i - 1].e) < 1e-9);
            char edge[160];
            snprintf(edge, sizeof edge, "%s->%s", path[i - 1].title, path[i].title);
            const item *e = find(&g, edge);
            ck_assert_msg(e && has_class(e, "critical"), "no critical edge %s", edge);
        }
    }
    ck_assert(fabs(path[crit - 1].e - met.makespan) < 1e-9);
    ck_assert(fabs(len - met.makespan) < 1e-9);
    free(g.it);
    free(b.data);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* ---- errors, memory, determinism ------------------------------------------------------------ */

/* A scatter plot of three hand-made points: one mark and one label per point, placed on linear
 * axes (the label's left edge is 6 points right of its mark at the mark's height), the axis
 * labels as given; no points or a point not finite refused. */
START_TEST(viz_scatter_points)
{
    ps_viz *v = new_viz();
    buf b = {0};
    const double x[] = {1, 2, 4}, y[] = {10, 5, 2};
    const char *const labels[] = {"tp1 pp8", "tp2 pp4", "tp8 pp1"};
    ck_assert_int_eq(
        ps_viz_scatter_svg(v, x, y, labels, 3, "memory (GiB)", "step (s)", "front", buf_write, &b),
        0);
    svg g = parse(b.data);
    double tx[3], ty[3];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "point%d", i);
        const item *pt = find(&g, name);
        ck_assert_ptr_nonnull(pt);
        ck_assert(has_class(pt, "point"));
        snprintf(name, sizeof name, "label%d", i);
        const item *l = find(&g, name);
        ck_assert_ptr_nonnull(l);
        ck_assert_str_eq(l->text, labels[i]);
        tx[i] = l->tx;
        ty[i] = l->ty;
    }
    ck_assert_ptr_null(find(&g, "point3"));
    /* x: 1, 2, 4 -> the gaps 1 and 2; y: 10, 5, 2 -> SVG y grows downwards, gaps 5 and 3. */
    ck_assert(tx[0] < tx[1] && tx[1] < tx[2]);
    ck_assert(ty[0] < ty[1] && ty[1] < ty[2]);
    ck_assert_msg(fabs((tx[2] - tx[1]) / (tx[1] - tx[0]) - 2.0) < 0.01, "x not linear");
    ck_assert_msg(fabs((ty[2] - ty[1]) / (ty[1] - ty[0]) - 0.6) < 0.01, "y not linear");
    ck_assert_str_eq(find(&g, "axis.x")->text, "memory (GiB)");
    ck_assert_str_eq(find(&g, "axis.y")->text, "step (s)");
    ck_assert_ptr_nonnull(strstr(b.data, ">front<"));
    ck_assert_ptr_nonnull(strstr(b.data, "3 points"));
    free(g.it);
    free(b.data);
    /* Axis labels of any length come out whole (the canvas once cut every text at 127
     * bytes), and a label of the most bytes a label may have (viz.h: 120). */
    char longl[121], longx[201], longy[201];
    for (int i = 0; i < 200; i++) {
        longx[i] = (char)('A' + i % 26);
        longy[i] = (char)('a' + i % 26);
    }
    longx[200] = longy[200] = 0;
    memcpy(longl, longy + 1, 120);
    longl[120] = 0;
    const char *const long_labels[] = {longl, "b", "c"};
    b = (buf){0};
    int lrc = ps_viz_scatter_svg(v, x, y, long_labels, 3, longx, longy, "front", buf_write, &b);
    ck_assert_msg(lrc == 0, "%d %s", lrc, ps_viz_last_error(v));
    ck_assert_ptr_nonnull(strstr(b.data, longx));
    ck_assert_ptr_nonnull(strstr(b.data, longy));
    ck_assert_ptr_nonnull(strstr(b.data, longl));
    free(b.data);
    const double bad[] = {1, NAN};
    b = (buf){0};
    ck_assert_int_eq(ps_viz_scatter_svg(v, x, y, NULL, 0, NULL, NULL, NULL, buf_write, &b),
                     PS_EINVAL);
    ck_assert_int_eq(ps_viz_scatter_svg(v, bad, y, NULL, 2, NULL, NULL, NULL, buf_write, &b),
                     PS_EINVAL);
    ck_assert_ptr_nonnull(strstr(ps_viz_last_error(v), "point 1"));
    ck_assert_int_eq(b.calls, 0);
    ps_viz_free(v);
}
END_TEST

/* Whether the boxes of a and b share any area. */
static int boxes_meet(const item *a, const item *b)
{
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/*
 * Draws the n points and checks the texts of the SVG: no two (labels beside their point, number
 * tags, table keys and labels, the table's heading) overlap and none covers a mark, every label
 * is drawn exactly once, beside its point or in the table, and the title counts the table's
 * rows. Returns that count.
 */
static int scatter_texts_apart(ps_viz *v, const double *x, const double *y,
                               const char *const *labels, int n)
{
    buf b = {0};
    ck_assert_int_eq(ps_viz_scatter_svg(v, x, y, labels, (size_t)n, "peak memory per GPU (GiB)",
                                        "step time (s)", "front", buf_write, &b),
                     0);
    svg g = parse(b.data);
    const item **texts = calloc(3 * (size_t)n + 1, sizeof *texts);
    const item **marks = calloc((size_t)n, sizeof *marks);
    int *seen = calloc((size_t)n, sizeof *seen);
    ck_assert(texts && marks && seen);
    int nt = 0, nm = 0, in_table = 0;
    for (size_t i = 0; i < g.n; i++) {
        const item *it = &g.it[i];
        int k;
        if (sscanf(it->title, "point%d", &k) == 1)
            marks[nm++] = it;
        if (sscanf(it->title, "label%d", &k) == 1) {
            ck_assert(k >= 0 && k < n);
            ck_assert_str_eq(it->text, labels[k]);
            seen[k]++;
            in_table += has_class(it, "table");
        }
        if (!strncmp(it->title, "label", 5) || !strncmp(it->title, "tag", 3) ||
            !strncmp(it->title, "key", 3) || !strcmp(it->title, "table.head")) {
            ck_assert_msg(it->has_box, "%s has no box", it->title);
            ck_assert_int_le(nt, 3 * n);
            texts[nt++] = it;
        }
    }
    ck_assert_int_eq(nm, n);
    for (int k = 0; k < n; k++)
        ck_assert_msg(seen[k] == 1, "label%d drawn %d times", k, seen[k]);
    for (int i = 0; i < nt; i++) {
        for (int j = i + 1; j < nt; j++)
            ck_assert_msg(!boxes_meet(texts[i], texts[j]), "%s overlaps %s", texts[i]->title,
                          texts[j]->title);
        for (int j = 0; j < nm; j++)
            ck_assert_msg(!boxes_meet(texts[i], marks[j]), "%s covers %s", texts[i]->title,
                          marks[j]->title);
    }
    char want[80];
    if (in_table)
        snprintf(want, sizeof want, "%d points, %d labels in the table below", n, in_table);
    else
        snprintf(want, sizeof want, "%d points<", n);
    ck_assert_msg(strstr(b.data, want), "no \"%s\"", want);
    free(texts);
    free(marks);
    free(seen);
    free(g.it);
    free(b.data);
    return in_table;
}

/*
 * A dense front (tune --pareto-svg of a wide search): 80 points on a hyperbola with labels as
 * long as the command line's, then the same with coordinates of 17 digits (the table's widest
 * keys): their texts stay apart (scatter_texts_apart), and some labels, not all, need the
 * table. A sparse front has no table.
 */
START_TEST(viz_scatter_dense_labels_apart)
{
    enum { N = 80 };
    double x[N], y[N], bx[N], by[N];
    char text[N][64];
    const char *labels[N];
    for (int i = 0; i < N; i++) {
        x[i] = 10 + 0.9 * i;
        y[i] = 100 / x[i];
        bx[i] = 1e14 + 1e12 * i;
        by[i] = 1e16 / bx[i] * 1e12;
        snprintf(text[i], sizeof text[i], "tp%d cp1 pp%d vpp%d mbs%d zb-v rc-full", 1 << (i % 4),
                 1 + i % 8, 1 + i % 5, 1 + i % 3);
        labels[i] = text[i];
    }
    ps_viz *v = new_viz();
    int in_table = scatter_texts_apart(v, x, y, labels, N);
    ck_assert_int_gt(in_table, 0);
    ck_assert_int_lt(in_table, N);
    in_table = scatter_texts_apart(v, bx, by, labels, N);
    ck_assert_int_gt(in_table, 0);
    ck_assert_int_lt(in_table, N);
    buf b;
    svg g;

    /* three points far apart: every label beside its point, no table */
    const double sx[] = {1, 2, 4}, sy[] = {10, 5, 2};
    b = (buf){0};
    ck_assert_int_eq(ps_viz_scatter_svg(v, sx, sy, labels, 3, NULL, NULL, NULL, buf_write, &b), 0);
    g = parse(b.data);
    ck_assert_ptr_null(find(&g, "table.head"));
    ck_assert_ptr_null(strstr(b.data, "in the table"));
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "label%d", i);
        ck_assert(!has_class(find(&g, name), "table"));
    }
    free(g.it);
    free(b.data);

    /* labels the header refuses: too long, or with a backslash */
    char long_label[130];
    memset(long_label, 'x', 121);
    long_label[121] = 0;
    const char *bad1[] = {"ok", long_label}, *bad2[] = {"a\\l", "ok"};
    b = (buf){0};
    ck_assert_int_eq(ps_viz_scatter_svg(v, sx, sy, bad1, 2, NULL, NULL, NULL, buf_write, &b),
                     PS_EINVAL);
    ck_assert_str_eq(ps_viz_last_error(v), "label 1 is 121 bytes long; at most 120");
    ck_assert_int_eq(ps_viz_scatter_svg(v, sx, sy, bad2, 2, NULL, NULL, NULL, buf_write, &b),
                     PS_EINVAL);
    ck_assert_ptr_nonnull(strstr(ps_viz_last_error(v), "label 0 has a backslash"));
    ck_assert_int_eq(b.calls, 0);
    ps_viz_free(v);
}
END_TEST

START_TEST(viz_bad_requests)
{
    ps_viz *v = new_viz();
    buf b = {0};
    fixture f = simulate("1f1b", 4, 1, 8);
    ck_assert_int_eq(ps_viz_new(NULL, NULL, NULL), PS_EINVAL);
    ck_assert_ptr_nonnull(ps_viz_last_error(NULL));
    ps_viz_config cfg;
    ps_viz_config_init(&cfg);
    cfg.max_boxes = 0;
    ps_viz *w = v;
    ck_assert_int_eq(ps_viz_new(&w, &cfg, NULL), PS_ERANGE);
    ck_assert_ptr_null(w);
    ck_assert_int_eq(ps_viz_timeline_svg(NULL, f.s, f.sim, buf_write, &b), PS_EINVAL);
    ck_assert_int_eq(ps_viz_timeline_svg(v, NULL, f.sim, buf_write, &b), PS_EINVAL);
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, NULL, buf_write, &b), PS_EINVAL);
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, NULL, &b), PS_EINVAL);
    ck_assert_int_eq(ps_viz_dag_svg(v, NULL, f.sim, buf_write, &b), PS_EINVAL);
    /* An empty schedule. */
    ps_schedule *empty;
    ck_assert_int_eq(ps_schedule_new(&empty, NULL), 0);
    ck_assert_int_eq(ps_viz_timeline_svg(v, empty, f.sim, buf_write, &b), PS_EINVAL);
    ck_assert_ptr_nonnull(strstr(ps_viz_last_error(v), "empty"));
    ck_assert_int_eq(ps_viz_dag_svg(v, empty, f.sim, buf_write, &b), PS_EINVAL);
    /* No timeline: a fresh simulator, then one whose schedule was regenerated. */
    ps_sim *fresh;
    ck_assert_int_eq(ps_sim_new(&fresh, NULL), 0);
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, fresh, buf_write, &b), PS_ESTATE);
    ck_assert_int_eq(ps_viz_dag_svg(v, f.s, fresh, buf_write, &b), PS_ESTATE);
    ck_assert_int_eq(ps_schedule_generate(f.s, f.pb), 0);
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b), PS_ESTATE);
    ck_assert_int_eq(ps_sim_run(f.sim, f.s, f.pb), 0);
    /* Too large a DAG: 2 x 16 x 64 = 2048 actions. */
    fixture big = simulate("1f1b", 16, 1, 64);
    ck_assert_int_eq(ps_viz_dag_svg(v, big.s, big.sim, buf_write, &b), PS_ERANGE);
    ck_assert_ptr_nonnull(strstr(ps_viz_last_error(v), "2048 actions"));
    /* Bad plans. */
    ps_plan_op bad = step_ops[0];
    ck_assert_int_eq(ps_viz_overlap_svg(v, NULL, 1, &step_stats, NULL, buf_write, &b), PS_EINVAL);
    ck_assert_int_eq(ps_viz_overlap_svg(v, step_ops, 0, &step_stats, NULL, buf_write, &b),
                     PS_EINVAL);
    ck_assert_int_eq(ps_viz_overlap_svg(v, step_ops, 1, NULL, NULL, buf_write, &b), PS_EINVAL);
    bad.op = PS_OP_COUNT;
    ck_assert_int_eq(ps_viz_overlap_svg(v, &bad, 1, &step_stats, NULL, buf_write, &b), PS_EINVAL);
    bad = step_ops[0];
    bad.end = -1;
    ck_assert_int_eq(ps_viz_overlap_svg(v, &bad, 1, &step_stats, NULL, buf_write, &b), PS_EINVAL);
    bad.end = NAN;
    ck_assert_int_eq(ps_viz_overlap_svg(v, &bad, 1, &step_stats, NULL, buf_write, &b), PS_EINVAL);
    bad = step_ops[0];
    bad.stream = 2;
    ck_assert_int_eq(ps_viz_overlap_svg(v, &bad, 1, &step_stats, NULL, buf_write, &b), PS_EINVAL);
    /* Nothing was written by any failed call. */
    ck_assert_int_eq(b.calls, 0);
    /* A failing writer. */
    b.fail = 1;
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b), PS_EIO);
    ck_assert_int_eq(ps_viz_dag_svg(v, f.s, f.sim, buf_write, &b), PS_EIO);
    ck_assert_int_eq(ps_viz_overlap_svg(v, step_ops, 6, &step_stats, NULL, buf_write, &b), PS_EIO);
    ck_assert_ptr_nonnull(strstr(ps_viz_last_error(v), "write"));
    ps_viz_free(NULL);
    ps_sim_free(fresh);
    ps_schedule_free(empty);
    release(&big);
    release(&f);
    ps_viz_free(v);
}
END_TEST

START_TEST(viz_alloc_failure)
{
    fixture f = simulate("interleaved", 2, 2, 4);
    for (int kind = 0; kind < 3; kind++) {
        int ok = 0;
        for (long n = 1; n < 200 && !ok; n++) {
            counting_alloc c = {0, n, 0, 0};
            ps_allocator al = counting_allocator(&c);
            ps_viz *v;
            buf b = {0};
            int rc = ps_viz_new(&v, NULL, &al);
            if (!rc) {
                rc = kind == 0 ? ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b)
                     : kind == 1
                         ? ps_viz_dag_svg(v, f.s, f.sim, buf_write, &b)
                         : ps_viz_overlap_svg(v, step_ops, 6, &step_stats, "t", buf_write, &b);
                ps_viz_free(v);
            }
            ck_assert_msg(rc == 0 || rc == PS_ENOMEM, "rc %d", rc);
            ck_assert_int_eq(c.live, 0);
            ok = rc == 0;
            if (!ok)
                ck_assert_int_eq(b.calls, 0);
            free(b.data);
        }
        ck_assert(ok);
    }
    release(&f);
}
END_TEST

static int host_errf_calls;
static int host_errf(char *msg)
{
    (void)msg;
    host_errf_calls++;
    return 0;
}

START_TEST(viz_deterministic)
{
    fixture f = simulate("zb-h1", 4, 1, 8);
    ps_viz *v = new_viz();
    agusererrf prev = agseterrf(host_errf);
    for (int kind = 0; kind < 3; kind++) {
        buf x = {0}, y = {0};
        for (int k = 0; k < 2; k++) {
            buf *b = k ? &y : &x;
            int rc = kind == 0 ? ps_viz_timeline_svg(v, f.s, f.sim, buf_write, b)
                     : kind == 1
                         ? ps_viz_dag_svg(v, f.s, f.sim, buf_write, b)
                         : ps_viz_overlap_svg(v, step_ops, 6, &step_stats, "t", buf_write, b);
            ck_assert_int_eq(rc, 0);
        }
        ck_assert_uint_eq(x.len, y.len);
        ck_assert(!memcmp(x.data, y.data, x.len));
        free(x.data);
        free(y.data);
    }
    /* The host's Graphviz error handler is back in place. */
    ck_assert(agseterrf(prev) == host_errf);
    ps_viz_free(v);
    release(&f);
}
END_TEST

/* Last: after ps_viz_shutdown() drawing is refused (one Graphviz context per process). */
START_TEST(viz_shutdown)
{
    fixture f = simulate("1f1b", 2, 1, 4);
    ps_viz *v = new_viz();
    buf b = {0};
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b), 0);
    free(b.data);
    ps_viz_shutdown();
    b = (buf){0};
    ck_assert_int_eq(ps_viz_timeline_svg(v, f.s, f.sim, buf_write, &b), PS_ESTATE);
    ck_assert_int_eq(b.calls, 0);
    ps_viz_shutdown(); /* twice is harmless */
    ps_viz_free(v);
    release(&f);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("viz");
    TCase *tc = tcase_create("timeline");
    tcase_add_loop_test(tc, viz_timeline_structure, 0, (int)(sizeof cases / sizeof cases[0]));
    tcase_add_test(tc, viz_timeline_time_unit);
    tcase_add_test(tc, viz_scatter_points);
    tcase_add_test(tc, viz_scatter_dense_labels_apart);
    tcase_add_test(tc, viz_timeline_chunks);
    tcase_add_test(tc, viz_timeline_fused);
    tcase_add_test(tc, viz_timeline_16x64);
    tcase_add_test(tc, viz_timeline_capped);
    tcase_add_loop_test(tc, viz_timeline_legend_width, 0, 3);
    tcase_add_test(tc, viz_timeline_window_overview);
    suite_add_tcase(su, tc);
    tc = tcase_create("overlap");
    tcase_add_test(tc, viz_overlap_structure);
    tcase_add_test(tc, viz_overlap_escaping);
    suite_add_tcase(su, tc);
    tc = tcase_create("dag");
    tcase_add_loop_test(tc, viz_dag_critical_path, 0, 4);
    suite_add_tcase(su, tc);
    tc = tcase_create("api");
    tcase_add_test(tc, viz_bad_requests);
    tcase_add_test(tc, viz_alloc_failure);
    tcase_add_test(tc, viz_deterministic);
    tcase_add_test(tc, viz_shutdown);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
