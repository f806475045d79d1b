/*
 * The Graphviz exporter's common part: the handle, its memory and messages, the one Graphviz
 * context of the process, and the render path from a cgraph graph to the caller's write
 * callback. The three drawings (timeline.c, overlap.c, dag.c) only build graphs.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PS_GV_LEN_T
#define PS_GV_LEN_T unsigned int
#endif

/* ---- memory --------------------------------------------------------------------------------- */

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

void *ps__viz_calloc(ps_viz *v, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    size_t bytes = n * size;
    if (bytes == 0)
        bytes = 1; /* a valid, freeable pointer for empty arrays */
    void *p = v->al.fn(v->al.ud, NULL, 0, bytes);
    if (p)
        memset(p, 0, bytes);
    return p;
}

void ps__viz_free(ps_viz *v, void *p, size_t n, size_t size)
{
    size_t bytes = n * size;
    if (p)
        v->al.fn(v->al.ud, p, bytes ? bytes : 1, 0);
}

void ps__vbuf_init(ps__vbuf *b, ps_viz *v)
{
    memset(b, 0, sizeof *b);
    b->v = v;
}

void ps__vbuf_free(ps__vbuf *b)
{
    if (b->p)
        b->v->al.fn(b->v->al.ud, b->p, b->cap, 0);
    b->p = NULL;
    b->n = b->cap = 0;
}

/* Makes room for extra more bytes plus the NUL. */
static int vbuf_grow(ps__vbuf *b, size_t extra)
{
    if (b->oom)
        return -1;
    if (b->n + extra + 1 <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->n + extra + 1) {
        if (cap > SIZE_MAX / 2) {
            b->oom = 1;
            return -1;
        }
        cap *= 2;
    }
    char *p = b->v->al.fn(b->v->al.ud, b->p, b->cap, cap);
    if (!p) {
        b->oom = 1;
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

void ps__vbuf_printf(ps__vbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (k < 0 || vbuf_grow(b, (size_t)k))
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
}

void ps__vbuf_html(ps__vbuf *b, const char *s)
{
    for (; s && *s; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&':
            rep = "&amp;";
            break;
        case '<':
            rep = "&lt;";
            break;
        case '>':
            rep = "&gt;";
            break;
        case '"':
            rep = "&quot;";
            break;
        case '\'':
            rep = "&#39;";
            break;
        default:
            break;
        }
        if (rep) {
            ps__vbuf_printf(b, "%s", rep);
        } else if ((unsigned char)*s < 0x20) {
            ps__vbuf_printf(b, " "); /* control characters have no place in a label */
        } else if (!vbuf_grow(b, 1)) {
            b->p[b->n++] = *s;
            b->p[b->n] = 0;
        }
    }
}

void ps__vbuf_title(ps__vbuf *b, const char *name, const char *rest)
{
    /* Separate rows rather than spaces after the bold name: some SVG renderers drop the
     * spaces that start a text run. */
    ps__vbuf_printf(b, "<TABLE BORDER=\"0\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"1\">"
                       "<TR><TD ALIGN=\"LEFT\"><FONT POINT-SIZE=\"16\"><B>");
    ps__vbuf_html(b, name);
    ps__vbuf_printf(b, "</B></FONT></TD></TR>");
    if (rest && *rest)
        ps__vbuf_printf(b, "<TR><TD ALIGN=\"LEFT\">%s</TD></TR>", rest);
}

const char *ps__vbuf_str(const ps__vbuf *b)
{
    return b->p && !b->oom ? b->p : "";
}

/* ---- the handle ----------------------------------------------------------------------------- */

void ps_viz_config_init(ps_viz_config *cfg)
{
    if (!cfg)
        return;
    memset(cfg, 0, sizeof *cfg);
    cfg->max_boxes = 8000;
    cfg->max_lanes = 64;
    cfg->max_width = 4000;
    cfg->max_dag_actions = 400;
}

/* A time unit is NUL-terminated within its array and printable ASCII without the backslash,
 * which Graphviz reads as an escape in a label. */
static int unit_ok(const char *unit, size_t cap)
{
    size_t n = 0;
    for (; n < cap && unit[n]; n++)
        if (unit[n] < 0x20 || unit[n] > 0x7e || unit[n] == '\\')
            return 0;
    return n < cap;
}

int ps_viz_new(ps_viz **out, const ps_viz_config *cfg, const ps_allocator *alloc)
{
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps_viz_config c;
    ps_viz_config_init(&c);
    if (cfg)
        c = *cfg;
    if (c.max_boxes < 1 || c.max_boxes > PS_VIZ_MAX_BOXES || c.max_lanes < 1 ||
        c.max_lanes > PS_VIZ_MAX_LANES || !(c.max_width >= 200 && c.max_width <= 1e6) ||
        c.max_dag_actions < 1 || c.max_dag_actions > PS_VIZ_MAX_DAG_ACTIONS ||
        !unit_ok(c.time_unit, sizeof c.time_unit) || !(c.window_from >= 0) ||
        !isfinite(c.window_from) || !(c.window_to == 0 || c.window_to > c.window_from) ||
        !isfinite(c.window_to) || (c.overview != 0 && c.overview != 1))
        return PS_ERANGE;
    ps_allocator al = {default_alloc, NULL};
    if (alloc && alloc->fn)
        al = *alloc;
    ps_viz *v = al.fn(al.ud, NULL, 0, sizeof *v);
    if (!v)
        return PS_ENOMEM;
    memset(v, 0, sizeof *v);
    v->al = al;
    v->cfg = c;
    *out = v;
    return 0;
}

void ps_viz_free(ps_viz *v)
{
    if (v) {
        ps_allocator al = v->al;
        al.fn(al.ud, v, sizeof *v, 0);
    }
}

const char *ps_viz_last_error(const ps_viz *v)
{
    return v ? v->err : "invalid argument: NULL drawing handle";
}

int ps__viz_err(ps_viz *v, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->err, sizeof v->err, fmt, ap);
    va_end(ap);
    return code;
}

/* ---- Graphviz ------------------------------------------------------------------------------- */

/*
 * One context for the whole process: Graphviz 2.42 leaks a little per context and, worse,
 * its pango plugin reads freed memory when a context is freed and another created (both
 * reproduced; toolchain notes). So the first drawing creates it and only ps_viz_shutdown()
 * frees it, after which drawing is refused.
 */
static GVC_t *gvc;
static int gvc_closed;
/* The handle whose drawing is in progress: Graphviz's error hook is process-global. */
static ps_viz *gv_target;
static agusererrf gv_prev;

/* Graphviz hands a message over in pieces ("Error", ": ", the text); they are appended. */
static int gv_message(char *msg)
{
    if (gv_target && msg) {
        size_t used = strlen(gv_target->gverr);
        snprintf(gv_target->gverr + used, sizeof gv_target->gverr - used, "%s", msg);
    }
    return 0;
}

/*
 * Object IDs. cgraph's default discipline uses the address of a named object's string as its
 * ID and keeps subgraphs (dot's clusters) in ID order, so a layout depended on where malloc
 * put the names: two drawings of one graph in one process differed. cgraph's fallback, its
 * internal name map, leaks in 2.42. This discipline numbers names in creation order (even
 * IDs; anonymous objects get odd ones) and keeps them in a hash table of its own, in plain
 * malloc'd memory like the rest of Graphviz's (one drawing at a time: Graphviz has global
 * state anyway). When the table cannot grow, map() declines and cgraph falls back on its own.
 */
typedef struct id_table {
    char *arena; /* the names, NUL-terminated, one after the other */
    size_t used, size;
    size_t *off; /* off[i]: name of ID 2(i + 1) in arena */
    size_t n, cap;
    uint32_t *slot; /* open addressing: index + 1, 0 = empty */
    size_t nslots;  /* a power of two, at least 2n */
    IDTYPE anon;    /* next odd ID */
} id_table;

static id_table ids;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The slot of name str: its entry, or the empty slot where it would go. */
static size_t id_slot(const char *str)
{
    size_t mask = ids.nslots - 1, i = (size_t)fnv(str) & mask;
    while (ids.slot[i] && strcmp(ids.arena + ids.off[ids.slot[i] - 1], str))
        i = (i + 1) & mask;
    return i;
}

static int id_grow(size_t len)
{
    if (ids.used + len + 1 > ids.size) {
        size_t size = (ids.used + len + 1) * 2;
        char *p = realloc(ids.arena, size);
        if (!p)
            return -1;
        ids.arena = p;
        ids.size = size;
    }
    if (ids.n == ids.cap) {
        size_t cap = ids.cap ? ids.cap * 2 : 256;
        size_t *p = realloc(ids.off, cap * sizeof *p);
        if (!p)
            return -1;
        ids.off = p;
        ids.cap = cap;
    }
    if (2 * (ids.n + 1) > ids.nslots) {
        size_t nslots = ids.nslots ? ids.nslots * 2 : 512;
        uint32_t *p = calloc(nslots, sizeof *p);
        if (!p)
            return -1;
        free(ids.slot);
        ids.slot = p;
        ids.nslots = nslots;
        for (size_t k = 0; k < ids.n; k++)
            ids.slot[id_slot(ids.arena + ids.off[k])] = (uint32_t)(k + 1);
    }
    return 0;
}

static void *id_open(Agraph_t *g, Agdisc_t *disc)
{
    (void)g;
    (void)disc;
    ids.used = ids.n = 0;
    if (ids.slot)
        memset(ids.slot, 0, ids.nslots * sizeof *ids.slot);
    ids.anon = 1;
    return &ids;
}

static long id_map(void *state, int objtype, char *str, IDTYPE *id, int createflag)
{
    (void)state;
    (void)objtype;
    if (!str) {
        if (!createflag)
            return 0;
        *id = ids.anon;
        ids.anon += 2;
        return 1;
    }
    size_t i = ids.nslots ? id_slot(str) : 0;
    if (ids.nslots && ids.slot[i]) {
        *id = (IDTYPE)(2 * ids.slot[i]);
        return 1;
    }
    if (!createflag || ids.n >= UINT32_MAX / 2 - 1)
        return 0;
    size_t len = strlen(str);
    if (id_grow(len))
        return 0;
    memcpy(ids.arena + ids.used, str, len + 1);
    ids.off[ids.n++] = ids.used;
    ids.used += len + 1;
    ids.slot[id_slot(str)] = (uint32_t)ids.n;
    *id = (IDTYPE)(2 * ids.n);
    return 1;
}

static long id_alloc(void *state, int objtype, IDTYPE id)
{
    (void)state;
    (void)objtype;
    (void)id;
    return 0; /* no objects with caller-chosen IDs */
}

static void id_free(void *state, int objtype, IDTYPE id)
{
    (void)state;
    (void)objtype;
    (void)id;
}

static char *id_print(void *state, int objtype, IDTYPE id)
{
    (void)state;
    (void)objtype;
    if (id % 2 || id == 0 || (size_t)(id / 2) > ids.n)
        return NULL;
    return ids.arena + ids.off[id / 2 - 1];
}

/* The table is kept for the next drawing; ps_viz_shutdown() frees it. */
static void id_close(void *state)
{
    (void)state;
}

static void id_register(void *state, int objtype, void *obj)
{
    (void)state;
    (void)objtype;
    (void)obj;
}

static Agiddisc_t id_disc = {id_open, id_map, id_alloc, id_free, id_print, id_close, id_register};

void ps_viz_shutdown(void)
{
    free(ids.arena);
    free(ids.off);
    free(ids.slot);
    memset(&ids, 0, sizeof ids);
    if (gvc)
        gvFreeContext(gvc);
    gvc = NULL;
    gvc_closed = 1;
}

/* The Graphviz messages of the drawing, on one line, without a trailing newline. */
static const char *gv_text(ps_viz *v)
{
    char *p = v->gverr;
    for (char *q = p; *q; q++)
        if (*q == '\n')
            *q = ' ';
    size_t n = strlen(p);
    while (n && p[n - 1] == ' ')
        p[--n] = 0;
    return *p ? p : "no message";
}

int ps__viz_open(ps_viz *v, const char *name, int directed, Agraph_t **g)
{
    *g = NULL;
    if (gvc_closed)
        return ps__viz_err(v, PS_ESTATE, "ps_viz_shutdown() was called: no more drawings");
    v->gverr[0] = 0;
    gv_target = v;
    gv_prev = agseterrf(gv_message);
    if (!gvc)
        gvc = gvContext();
    if (gvc) {
        static Agdisc_t disc;
        disc.mem = &AgMemDisc;
        disc.id = &id_disc;
        disc.io = &AgIoDisc;
        *g = agopen((char *)name, directed ? Agstrictdirected : Agundirected, &disc);
    }
    if (!*g) {
        agseterrf(gv_prev);
        gv_target = NULL;
        return ps__viz_err(v, gvc ? PS_ENOMEM : PS_ESYS, "Graphviz: cannot %s: %s",
                           gvc ? "open a graph" : "create a context", gv_text(v));
    }
    /* Every drawing: a sans-serif font, no default label. */
    if (!ps__viz_attr(*g, AGRAPH, "fontname", PS__VIZ_FONT) ||
        !ps__viz_attr(*g, AGNODE, "fontname", PS__VIZ_FONT) ||
        !ps__viz_attr(*g, AGEDGE, "fontname", PS__VIZ_FONT) ||
        !ps__viz_attr(*g, AGNODE, "label", "")) {
        agclose(*g);
        *g = NULL;
        agseterrf(gv_prev);
        gv_target = NULL;
        return ps__viz_err(v, PS_ENOMEM, "Graphviz: out of memory declaring attributes");
    }
    return 0;
}

int ps__viz_close(ps_viz *v, Agraph_t *g, const char *engine, int rc, ps_write_fn write, void *ud)
{
    char *buf = NULL;
    PS_GV_LEN_T len = 0;
    if (!rc && gvLayout(gvc, g, engine) != 0) {
        rc = ps__viz_err(v, PS_ESYS, "Graphviz layout \"%s\" failed: %s", engine, gv_text(v));
    } else if (!rc) {
        if (gvRenderData(gvc, g, "svg", &buf, &len) != 0 || !buf)
            rc = ps__viz_err(v, PS_ESYS, "Graphviz SVG rendering failed: %s", gv_text(v));
        gvFreeLayout(gvc, g);
    }
    agclose(g);
    agseterrf(gv_prev);
    gv_target = NULL;
    if (!rc && write(ud, buf, (size_t)len) != 0)
        rc = ps__viz_err(v, PS_EIO, "the write callback failed");
    if (buf)
        gvFreeRenderData(buf);
    return rc;
}

Agsym_t *ps__viz_attr(Agraph_t *g, int kind, const char *name, const char *dflt)
{
    return agattr(g, kind, (char *)name, (char *)dflt);
}

void ps__viz_set(void *obj, Agsym_t *sym, const char *value)
{
    agxset(obj, sym, (char *)value);
}

int ps__viz_set_html(Agraph_t *g, void *obj, Agsym_t *sym, const char *html)
{
    char *h = agstrdup_html(g, (char *)html);
    if (!h)
        return PS_ENOMEM;
    agxset(obj, sym, h);
    agstrfree(g, h);
    return 0;
}

Agnode_t *ps__viz_node(Agraph_t *g, const char *name)
{
    return agnode(g, (char *)name, 1);
}

/* ---- pinned drawings ------------------------------------------------------------------------ */

int ps__canvas_init(ps__canvas *cv, ps_viz *v, Agraph_t *g)
{
    memset(cv, 0, sizeof *cv);
    cv->v = v;
    cv->g = g;
    if (!ps__viz_attr(g, AGRAPH, "labelloc", "t") || !ps__viz_attr(g, AGRAPH, "labeljust", "l") ||
        !ps__viz_attr(g, AGRAPH, "fontsize", "12") || !ps__viz_attr(g, AGRAPH, "pad", "0.2") ||
        !ps__viz_attr(g, AGNODE, "fixedsize", "true"))
        return PS_ENOMEM;
    cv->shape = ps__viz_attr(g, AGNODE, "shape", "box");
    cv->style = ps__viz_attr(g, AGNODE, "style", "filled");
    cv->fill = ps__viz_attr(g, AGNODE, "fillcolor", "white");
    cv->colour = ps__viz_attr(g, AGNODE, "color", "#404040");
    cv->pen = ps__viz_attr(g, AGNODE, "penwidth", "0.6");
    cv->fsize = ps__viz_attr(g, AGNODE, "fontsize", "10");
    cv->pos = ps__viz_attr(g, AGNODE, "pos", "");
    cv->width = ps__viz_attr(g, AGNODE, "width", "0.1");
    cv->height = ps__viz_attr(g, AGNODE, "height", "0.1");
    cv->cls = ps__viz_attr(g, AGNODE, "class", "");
    cv->label = agattr(g, AGNODE, "label", NULL);
    return cv->shape && cv->style && cv->fill && cv->colour && cv->pen && cv->fsize && cv->pos &&
                   cv->width && cv->height && cv->cls && cv->label
               ? 0
               : PS_ENOMEM;
}

Agnode_t *ps__canvas_box(ps__canvas *cv, const char *name, const char *cls, double x, double y,
                         double w, double h)
{
    char buf[64];
    Agnode_t *n = ps__viz_node(cv->g, name);
    if (!n)
        return NULL;
    snprintf(buf, sizeof buf, "%.2f,%.2f!", x, y);
    ps__viz_set(n, cv->pos, buf);
    snprintf(buf, sizeof buf, "%.4f", w / 72);
    ps__viz_set(n, cv->width, buf);
    snprintf(buf, sizeof buf, "%.4f", h / 72);
    ps__viz_set(n, cv->height, buf);
    ps__viz_set(n, cv->cls, cls);
    return n;
}

int ps__canvas_label(ps__canvas *cv, Agnode_t *n, const char *text, double w, double h)
{
    int lines = 1;
    size_t longest = 0, run = 0;
    for (const char *p = text;; p++) {
        if (*p == '\n' || !*p) {
            longest = run > longest ? run : longest;
            run = 0;
            if (!*p)
                break;
            lines++;
        } else {
            run++;
        }
    }
    /* The largest size up to 10 points that fits, down to 6 (still legible when zoomed). */
    double fs = floor((h - 2) / (1.2 * lines));
    if (fs > 10)
        fs = 10;
    while (fs >= 6 && 0.64 * fs * (double)longest + 1 > w)
        fs--;
    if (fs < 6)
        return 0;
    char buf[16];
    snprintf(buf, sizeof buf, "%g", fs);
    ps__viz_set(n, cv->fsize, buf);
    ps__viz_set(n, cv->label, text);
    return 1;
}

Agnode_t *ps__canvas_text(ps__canvas *cv, const char *name, const char *cls, double x, double y,
                          const char *text, double pt, char just)
{
    char small[128], buf[16];
    double w = ps__viz_text_width(text, pt) + 4;
    double cx = just == 'l' ? x + w / 2 : just == 'r' ? x - w / 2 : x;
    Agnode_t *n = ps__canvas_box(cv, name, cls, cx, y, w, pt + 4);
    if (!n)
        return NULL;
    /* The text whole, however long, and Graphviz's justification escape after it. */
    size_t len = strlen(text) + 3;
    char *label = len <= sizeof small ? small : malloc(len);
    if (!label)
        return NULL;
    snprintf(label, len, "%s%s", text, just == 'l' ? "\\l" : just == 'r' ? "\\r" : "");
    ps__viz_set(n, cv->label, label);
    if (label != small)
        free(label);
    ps__viz_set(n, cv->shape, "plaintext");
    snprintf(buf, sizeof buf, "%g", pt);
    ps__viz_set(n, cv->fsize, buf);
    return n;
}

int ps__canvas_axis(ps__canvas *cv, double end, double scale, double bottom, double top, int grid)
{
    return ps__canvas_axis_from(cv, 0, end, scale, bottom, top, grid);
}

int ps__canvas_axis_from(ps__canvas *cv, double start, double end, double scale, double bottom,
                         double top, int grid)
{
    char name[32], text[32];
    double span = end - start;
    double step = ps__viz_tick_step(span, span * scale / 70 + 1), eps = 1e-9 * span;
    double first = ceil(start / step - 1e-9);
    int k = 0;
    for (double t = start > 0 ? first * step : 0; t <= end + eps;
         t = (start > 0 ? first * step : 0) + ++k * step) {
        Agnode_t *n;
        if (grid) {
            snprintf(name, sizeof name, "grid%d", k);
            if (!(n = ps__canvas_box(cv, name, "grid", (t - start) * scale, (top + bottom) / 2, 1,
                                     top - bottom)))
                return PS_ENOMEM;
            ps__viz_set(n, cv->fill, "#d8d8d8");
            ps__viz_set(n, cv->pen, "0");
        } else {
            snprintf(name, sizeof name, "tick%d", k);
            ps__viz_num(t, text, sizeof text);
            if (!ps__canvas_text(cv, name, "tick", (t - start) * scale, bottom - 9, text, 9, 'c'))
                return PS_ENOMEM;
        }
    }
    return 0;
}

/* Where a legend item of width w goes: the next place on the current line, or the start of a
 * new line when it would pass cv->legend_right; moves *y to the line. */
static double legend_place(ps__canvas *cv, double w, double *y)
{
    if (cv->legend_right > 0 && cv->legend_x > 0 && cv->legend_x + w > cv->legend_right) {
        cv->legend_x = 0;
        cv->legend_dy -= 16;
    }
    *y += cv->legend_dy;
    return cv->legend_x;
}

int ps__canvas_legend_text(ps__canvas *cv, const char *name, const char *text, double y)
{
    double w = ps__viz_text_width(text, 9) + 4;
    double x = legend_place(cv, w, &y);
    if (!ps__canvas_text(cv, name, "legend", x, y, text, 9, 'l'))
        return PS_ENOMEM;
    cv->legend_x = x + w + 10;
    return 0;
}

int ps__canvas_legend(ps__canvas *cv, const char *key, const char *fill, const char *fill2,
                      const char *style, const char *text, double y)
{
    char name[64];
    double x = legend_place(cv, 17 + ps__viz_text_width(text, 9) + 4, &y);
    Agnode_t *n;
    snprintf(name, sizeof name, "legend.%s", key);
    if (!(n = ps__canvas_box(cv, name, "legend", x + 7, fill2 ? y + 3 : y, 14, fill2 ? 6 : 10)))
        return PS_ENOMEM;
    ps__viz_set(n, cv->fill, fill);
    if (style)
        ps__viz_set(n, cv->style, style);
    if (fill2) {
        snprintf(name, sizeof name, "legend.%s.b", key);
        if (!(n = ps__canvas_box(cv, name, "legend", x + 7, y - 3, 14, 6)))
            return PS_ENOMEM;
        ps__viz_set(n, cv->fill, fill2);
    }
    snprintf(name, sizeof name, "legend.%s.text", key);
    if (!(n = ps__canvas_text(cv, name, "legend", x + 17, y, text, 9, 'l')))
        return PS_ENOMEM;
    cv->legend_x = x + 17 + ps__viz_text_width(text, 9) + 4 + 10;
    return 0;
}

int ps__canvas_title(ps__canvas *cv, const char *html)
{
    Agsym_t *lab = ps__viz_attr(cv->g, AGRAPH, "label", "");
    return lab ? ps__viz_set_html(cv->g, cv->g, lab, html) : PS_ENOMEM;
}

/* ---- shared drawing vocabulary -------------------------------------------------------------- */

void ps__viz_kind_colour(int kind, double light, char *buf)
{
    /* F blue, I orange, W green, B (I + W) purple: distinguishable in grey scale too. */
    static const unsigned base[4] = {0x5b9bd5, 0xf4a259, 0x70b77e, 0xa77fc9};
    unsigned c = base[kind >= 0 && kind < 4 ? kind : 0];
    unsigned ch[3] = {c >> 16 & 0xff, c >> 8 & 0xff, c & 0xff};
    for (int i = 0; i < 3; i++)
        ch[i] = (unsigned)lround(ch[i] + (255.0 - ch[i]) * light);
    snprintf(buf, 8, "#%02x%02x%02x", ch[0] & 0xff, ch[1] & 0xff, ch[2] & 0xff);
}

double ps__viz_chunk_light(int c, int v)
{
    return v > 1 ? 0.6 * c / (v - 1) : 0;
}

double ps__viz_tick_step(double span, double target)
{
    if (!(span > 0) || !(target >= 1))
        return 1;
    double raw = span / target, p = pow(10, floor(log10(raw)));
    double m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10);
}

double ps__viz_text_width(const char *text, double pt)
{
    /* DejaVu Sans (what "sans-serif" is on Debian), one of the wider sans-serif fonts, has
     * digits of 0.636 em and few letters wider than 0.7 em. */
    return 0.66 * pt * (double)strlen(text);
}

void ps__viz_num(double x, char *buf, size_t n)
{
    /* Whole numbers as such, large ones with one decimal, small ones with four significant
     * digits; never an exponent within the accepted costs. */
    if (fabs(x) < 1e15 && fabs(x - (double)llround(x)) < 1e-9 * (1 + fabs(x)))
        snprintf(buf, n, "%lld", (long long)llround(x));
    else if (fabs(x) >= 100 && fabs(x) < 1e15)
        snprintf(buf, n, "%.1f", x);
    else if (fabs(x) >= 1e-3 || x == 0)
        snprintf(buf, n, "%.4g", x);
    else
        snprintf(buf, n, "%.3g", x);
}
