/*
 * The dependency graph of a small schedule: a node per compute action, data dependencies
 * (DESIGN.md, "Dependencies", along each micro-batch's path) and each rank's order as edges,
 * the critical path of a simulated timeline in red. Laid out by dot, time from left to right.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* The parts an action consists of, for the lookup tables: a forward, a backward for inputs
 * (I or B) and a weight backward. */
enum { PART_F = 0, PART_B = 1, PART_W = 2 };

typedef struct dag {
    ps_viz *v;
    const ps_schedule *s;
    const ps_sim *sim;
    int pp, nst, m;
    size_t n;       /* actions */
    size_t *off;    /* pp + 1: first global index of each rank */
    int32_t *at[3]; /* nst * m each: global index of the part, -1 if none */
    int32_t *rank;  /* n: rank of each global index */
    uint8_t *crit;  /* n: on the critical path */
    int32_t *via;   /* n: the predecessor chosen on the critical path (-1 none) */
} dag;

static const ps_action *act(const dag *d, size_t gi, const double **st, const double **en)
{
    int r = d->rank[gi];
    size_t i = gi - d->off[r];
    if (st)
        *st = ps_sim_starts(d->sim, r) + i;
    if (en)
        *en = ps_sim_ends(d->sim, r) + i;
    return ps_schedule_rank_actions(d->s, r) + i;
}

static double start_of(const dag *d, size_t gi)
{
    const double *st;
    act(d, gi, &st, NULL);
    return *st;
}

static double end_of(const dag *d, size_t gi)
{
    const double *en;
    act(d, gi, NULL, &en);
    return *en;
}

static int32_t lookup(const dag *d, int part, int stage, int mb)
{
    if (stage < 0 || stage >= d->nst || mb < 0 || mb >= d->m)
        return -1;
    return d->at[part][(size_t)stage * (size_t)d->m + (size_t)mb];
}

/* The data predecessors of action gi, into pred (at most 4); returns their number. */
static int data_preds(const dag *d, size_t gi, int32_t *pred)
{
    const ps_action *a = act(d, gi, NULL, NULL);
    int k = 0;
    int fst = -1, fmb = 0, bst = -1, bmb = 0, wst = -1;
    switch (a->kind) {
    case PS_F:
        fst = a->stage, fmb = a->mb;
        break;
    case PS_I:
    case PS_B:
        bst = a->stage, bmb = a->mb;
        break;
    case PS_W:
        wst = a->stage;
        break;
    case PS_FB:
        fst = a->stage, fmb = a->mb, bst = a->bstage, bmb = a->bmb;
        break;
    default:
        break;
    }
    int32_t x;
    if (fst >= 0 &&
        (x = lookup(d, PART_F, ps_schedule_path_neighbor(d->s, fst, fmb, -1), fmb)) >= 0)
        pred[k++] = x;
    if (bst >= 0) {
        int next = ps_schedule_path_neighbor(d->s, bst, bmb, +1);
        if (next >= 0 && (x = lookup(d, PART_B, next, bmb)) >= 0)
            pred[k++] = x;
        if ((x = lookup(d, PART_F, bst, bmb)) >= 0 && (size_t)x != gi)
            pred[k++] = x;
    }
    if (wst >= 0 && (x = lookup(d, PART_B, wst, a->mb)) >= 0)
        pred[k++] = x;
    return k;
}

/* Walks back from the action that ends last (the lowest rank on a tie). */
static void critical_path(dag *d)
{
    size_t cur = 0;
    double best = -1;
    for (size_t gi = 0; gi < d->n; gi++)
        if (end_of(d, gi) > best) {
            best = end_of(d, gi);
            cur = gi;
        }
    double eps = 1e-9 * (best > 1 ? best : 1);
    for (size_t steps = 0; steps <= d->n; steps++) {
        d->crit[cur] = 1;
        int32_t pred[5];
        int k = data_preds(d, cur, pred);
        size_t i = cur - d->off[d->rank[cur]];
        if (i > 0)
            pred[k++] = (int32_t)(cur - 1); /* the rank's previous action, checked last */
        double s = start_of(d, cur);
        int32_t pick = -1, latest = -1;
        for (int q = 0; q < k && pick < 0; q++)
            if (fabs(end_of(d, (size_t)pred[q]) - s) <= eps)
                pick = pred[q];
        /* No predecessor ends at the start: a transfer between ranks took the time, from the
         * latest-ending predecessor, if that is a data dependency on another rank. */
        for (int q = 0; q < k && pick < 0; q++)
            if (latest < 0 || end_of(d, (size_t)pred[q]) > end_of(d, (size_t)latest))
                latest = pred[q];
        if (pick < 0 && latest >= 0 && d->rank[latest] != d->rank[cur] &&
            end_of(d, (size_t)latest) < s)
            pick = latest;
        d->via[cur] = pick;
        if (pick < 0)
            break;
        cur = (size_t)pick;
    }
}

static void node_name(const dag *d, size_t gi, char *buf, size_t n)
{
    snprintf(buf, n, "r%d.%zu", d->rank[gi], gi - d->off[d->rank[gi]]);
}

static int build(dag *d, Agraph_t *g)
{
    Agsym_t *shape = ps__viz_attr(g, AGNODE, "shape", "box");
    Agsym_t *style = ps__viz_attr(g, AGNODE, "style", "filled,rounded");
    Agsym_t *fill = ps__viz_attr(g, AGNODE, "fillcolor", "white");
    Agsym_t *ncol = ps__viz_attr(g, AGNODE, "color", "#404040");
    Agsym_t *npen = ps__viz_attr(g, AGNODE, "penwidth", "0.8");
    Agsym_t *ncls = ps__viz_attr(g, AGNODE, "class", "");
    Agsym_t *label = agattr(g, AGNODE, "label", NULL);
    Agsym_t *ecol = ps__viz_attr(g, AGEDGE, "color", "black");
    Agsym_t *estyle = ps__viz_attr(g, AGEDGE, "style", "solid");
    Agsym_t *epen = ps__viz_attr(g, AGEDGE, "penwidth", "1");
    Agsym_t *ecls = ps__viz_attr(g, AGEDGE, "class", "");
    Agsym_t *arrow = ps__viz_attr(g, AGEDGE, "arrowhead", "normal");
    Agsym_t *cl_label = ps__viz_attr(g, AGRAPH, "label", "");
    if (!ps__viz_attr(g, AGRAPH, "rankdir", "LR") || !ps__viz_attr(g, AGRAPH, "newrank", "true") ||
        !ps__viz_attr(g, AGRAPH, "nodesep", "0.12") || !ps__viz_attr(g, AGRAPH, "ranksep", "0.3") ||
        !ps__viz_attr(g, AGRAPH, "labelloc", "t") || !ps__viz_attr(g, AGRAPH, "labeljust", "l") ||
        !ps__viz_attr(g, AGRAPH, "style", "rounded") ||
        !ps__viz_attr(g, AGNODE, "fontsize", "10") || !ps__viz_attr(g, AGNODE, "height", "0.3") ||
        !ps__viz_attr(g, AGNODE, "margin", "0.04,0.02") ||
        !ps__viz_attr(g, AGEDGE, "arrowsize", "0.6") || !shape || !style || !fill || !ncol ||
        !npen || !ncls || !label || !ecol || !estyle || !epen || !ecls || !arrow || !cl_label)
        return PS_ENOMEM;
    char name[48], text[64], cls[48], colour[8], nb[48];
    /* One cluster per rank keeps a rank's actions on one row, in order. */
    for (int r = 0; r < d->pp; r++) {
        snprintf(name, sizeof name, "cluster_rank%d", r);
        Agraph_t *sub = agsubg(g, name, 1);
        if (!sub)
            return PS_ENOMEM;
        snprintf(text, sizeof text, "rank %d", r);
        ps__viz_set(sub, cl_label, text);
        for (size_t gi = d->off[r]; gi < d->off[r + 1]; gi++) {
            const ps_action *a = act(d, gi, NULL, NULL);
            node_name(d, gi, name, sizeof name);
            Agnode_t *n = ps__viz_node(sub, name);
            if (!n)
                return PS_ENOMEM;
            if (a->kind == PS_FB) {
                ps_action f = *a, b = *a;
                f.kind = PS_F;
                b.kind = a->bkind;
                b.stage = a->bstage;
                b.mb = a->bmb;
                ps_action_format(&f, text, 24);
                size_t used = strlen(text);
                text[used++] = '\n';
                ps_action_format(&b, text + used, sizeof text - used);
            } else {
                ps_action_format(a, text, sizeof text);
            }
            ps__viz_set(n, label, text);
            ps__viz_kind_colour(a->kind == PS_FB ? PS_F : a->kind, 0, colour);
            if (a->kind == PS_FB) {
                /* Both colours of the pair, top and bottom. */
                char two[32];
                ps__viz_kind_colour(a->bkind, 0, text);
                snprintf(two, sizeof two, "%s;0.5:%s", colour, text);
                ps__viz_set(n, fill, two);
                ps__viz_set(n, style, "striped");
            } else {
                ps__viz_set(n, fill, colour);
            }
            snprintf(cls, sizeof cls, "act %s%s", ps_kind_name(a->kind),
                     d->crit[gi] ? " critical" : "");
            ps__viz_set(n, ncls, cls);
            if (d->crit[gi]) {
                ps__viz_set(n, ncol, "#d00000");
                ps__viz_set(n, npen, "2.5");
            }
        }
    }
    for (size_t gi = 0; gi < d->n; gi++) {
        int32_t pred[5];
        int k = data_preds(d, gi, pred);
        size_t i = gi - d->off[d->rank[gi]];
        int order = i > 0;
        for (int q = 0; q < k; q++)
            if ((size_t)pred[q] + 1 == gi && d->rank[pred[q]] == d->rank[gi])
                order = 0; /* the data edge joins the same two actions */
        if (order)
            pred[k++] = (int32_t)(gi - 1);
        node_name(d, gi, name, sizeof name);
        Agnode_t *to = agnode(g, name, 0);
        for (int q = 0; q < k; q++) {
            int is_order = order && q == k - 1;
            node_name(d, (size_t)pred[q], nb, sizeof nb);
            Agnode_t *from = agnode(g, nb, 0);
            Agedge_t *e = from && to ? agedge(g, from, to, NULL, 1) : NULL;
            if (!e)
                return PS_ENOMEM;
            int crit = d->crit[gi] && d->via[gi] == pred[q];
            snprintf(cls, sizeof cls, "%s%s", is_order ? "order" : "data", crit ? " critical" : "");
            ps__viz_set(e, ecls, cls);
            if (is_order) {
                ps__viz_set(e, estyle, "dashed");
                ps__viz_set(e, ecol, "#909090");
                ps__viz_set(e, arrow, "empty");
            }
            if (crit) {
                ps__viz_set(e, ecol, "#d00000");
                ps__viz_set(e, epen, "2.5");
            }
        }
    }
    return 0;
}

static int title(dag *d, Agraph_t *g)
{
    ps_metrics met;
    ps_sim_metrics(d->sim, &met);
    size_t len = 0;
    double first = -1, sum = 0;
    for (size_t gi = 0; gi < d->n; gi++)
        if (d->crit[gi]) {
            len++;
            sum += end_of(d, gi) - start_of(d, gi);
            if (first < 0 || start_of(d, gi) < first)
                first = start_of(d, gi);
        }
    char mk[32], busy[32], from[32];
    ps__viz_num(met.makespan, mk, sizeof mk);
    ps__viz_num(sum, busy, sizeof busy);
    ps__viz_num(first, from, sizeof from);
    ps__vbuf b;
    ps__vbuf_init(&b, d->v);
    char sizes[160];
    snprintf(sizes, sizeof sizes, "pp=%d stages=%d m=%d   %zu actions   makespan %s", d->pp, d->nst,
             d->m, d->n, mk);
    ps__vbuf_title(&b, ps_schedule_family(d->s), sizes);
    ps__vbuf_printf(&b,
                    "<TR><TD ALIGN=\"LEFT\"><FONT COLOR=\"#d00000\">critical path (red): %zu "
                    "actions from t=%s, %s of compute</FONT></TD></TR><TR><TD ALIGN=\"LEFT\">"
                    "<FONT POINT-SIZE=\"10\">solid edge: data dependency; dashed: the rank's "
                    "order; node: {stage}{kind}{micro-batch}, F blue, I orange, W green, B "
                    "purple</FONT></TD></TR></TABLE>",
                    len, from, busy);
    Agsym_t *lab = agattr(g, AGRAPH, "label", NULL);
    int rc = b.oom || !lab ? PS_ENOMEM : 0;
    /* The graph's label attribute is inherited by the clusters: set the root's only. */
    if (!rc)
        rc = ps__viz_set_html(g, g, lab, ps__vbuf_str(&b));
    ps__vbuf_free(&b);
    return rc;
}

/* Index tables: global indices, the parts' positions, the paths. */
static int index_actions(dag *d)
{
    for (int r = 0; r < d->pp; r++) {
        d->off[r + 1] = d->off[r] + ps_schedule_rank_length(d->s, r);
        for (size_t gi = d->off[r]; gi < d->off[r + 1]; gi++)
            d->rank[gi] = r;
    }
    size_t sm = (size_t)d->nst * (size_t)d->m;
    for (int p = 0; p < 3; p++)
        for (size_t q = 0; q < sm; q++)
            d->at[p][q] = -1;
    for (size_t gi = 0; gi < d->n; gi++) {
        const ps_action *a = act(d, gi, NULL, NULL);
        int parts[2][3] = {{-1, 0, 0}, {-1, 0, 0}}; /* part, stage, mb */
        switch (a->kind) {
        case PS_F:
            parts[0][0] = PART_F;
            break;
        case PS_I:
        case PS_B:
            parts[0][0] = PART_B;
            break;
        case PS_W:
            parts[0][0] = PART_W;
            break;
        case PS_FB:
            parts[0][0] = PART_F;
            parts[1][0] = PART_B;
            parts[1][1] = a->bstage;
            parts[1][2] = a->bmb;
            break;
        default:
            break;
        }
        if (parts[0][0] >= 0) {
            parts[0][1] = a->stage;
            parts[0][2] = a->mb;
        }
        for (int k = 0; k < 2; k++) {
            int st = parts[k][1], mb = parts[k][2];
            if (parts[k][0] >= 0 && st >= 0 && st < d->nst && mb >= 0 && mb < d->m)
                d->at[parts[k][0]][(size_t)st * (size_t)d->m + (size_t)mb] = (int32_t)gi;
        }
    }
    return 0;
}

int ps_viz_dag_svg(ps_viz *v, const ps_schedule *s, const ps_sim *sim, ps_write_fn write, void *ud)
{
    if (!v)
        return PS_EINVAL;
    v->err[0] = 0;
    if (!write)
        return ps__viz_err(v, PS_EINVAL, "a write callback is required");
    if (!s || !sim)
        return ps__viz_err(v, PS_EINVAL, "a schedule and its simulation are required");
    dag d = {0};
    d.v = v;
    d.s = s;
    d.sim = sim;
    d.pp = ps_schedule_pp(s);
    d.nst = ps_schedule_num_stages(s);
    d.m = ps_schedule_microbatches(s);
    d.n = ps_schedule_total_actions(s);
    if (d.pp <= 0 || d.n == 0 || d.nst <= 0 || d.m <= 0)
        return ps__viz_err(v, PS_EINVAL, "the schedule is empty: generate or load one first");
    if (d.n > (size_t)v->cfg.max_dag_actions)
        return ps__viz_err(v, PS_ERANGE,
                           "a dependency graph of %zu actions would be unreadable (at most %d); "
                           "draw a timeline instead, or use fewer micro-batches or ranks",
                           d.n, v->cfg.max_dag_actions);
    ps_metrics met;
    if (ps_sim_metrics(sim, &met) || met.pp != d.pp)
        return ps__viz_err(v, PS_ESTATE,
                           "the simulator holds no timeline of this schedule: run "
                           "ps_sim_run() on it first");
    for (int r = 0; r < d.pp; r++)
        if (!ps_sim_starts(sim, r))
            return ps__viz_err(v, PS_ESTATE, "no timeline for rank %d", r);
    /* n <= max_dag_actions and every (stage, micro-batch) pair has at least two actions, so
     * these tables stay small. */
    size_t sm = (size_t)d.nst * (size_t)d.m;
    if (sm > 4 * d.n + 64)
        return ps__viz_err(v, PS_EINVAL,
                           "the schedule has %zu stage x micro-batch pairs but only "
                           "%zu actions",
                           sm, d.n);
    int rc = PS_ENOMEM;
    d.off = ps__viz_calloc(v, (size_t)d.pp + 1, sizeof *d.off);
    for (int p = 0; p < 3; p++)
        d.at[p] = ps__viz_calloc(v, sm, sizeof *d.at[p]);
    d.rank = ps__viz_calloc(v, d.n, sizeof *d.rank);
    d.crit = ps__viz_calloc(v, d.n, sizeof *d.crit);
    d.via = ps__viz_calloc(v, d.n, sizeof *d.via);
    if (!d.off || !d.at[0] || !d.at[1] || !d.at[2] || !d.rank || !d.crit || !d.via) {
        ps__viz_err(v, rc, "out of memory");
        goto out;
    }
    if ((rc = index_actions(&d)))
        goto out;
    critical_path(&d);
    Agraph_t *g;
    if (!(rc = ps__viz_open(v, "dag", 1, &g))) {
        rc = build(&d, g);
        if (!rc)
            rc = title(&d, g);
        if (rc)
            ps__viz_err(v, rc, "out of memory building the drawing");
        rc = ps__viz_close(v, g, "dot", rc, write, ud);
    }
out:
    ps__viz_free(v, d.off, (size_t)d.pp + 1, sizeof *d.off);
    for (int p = 0; p < 3; p++)
        ps__viz_free(v, d.at[p], sm, sizeof *d.at[p]);
    ps__viz_free(v, d.rank, d.n, sizeof *d.rank);
    ps__viz_free(v, d.crit, d.n, sizeof *d.crit);
    ps__viz_free(v, d.via, d.n, sizeof *d.via);
    return rc;
}
