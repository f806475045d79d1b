/*
 * Exporters: text table (by step or by time), schedule JSON, PyTorch CSV (compute_only and
 * compute_comms), Chrome trace (in the caller's time unit, with the caller's extra events) and
 * metrics JSON. Output is streamed through the caller's write callback in 64 KiB pieces, so even
 * a schedule of millions of actions needs no large buffer and nothing is cut.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct out {
    ps_write_fn write;
    void *ud;
    int failed;
    size_t n;
    char buf[65536];
} out;

static void flush(out *o)
{
    if (o->n && !o->failed && o->write(o->ud, o->buf, o->n))
        o->failed = 1;
    o->n = 0;
}

static void put(out *o, const char *s, size_t n)
{
    while (n) {
        if (o->n == sizeof o->buf)
            flush(o);
        size_t k = sizeof o->buf - o->n;
        if (k > n)
            k = n;
        memcpy(o->buf + o->n, s, k);
        o->n += k;
        s += k;
        n -= k;
    }
}

static void puts_(out *o, const char *s)
{
    put(o, s, strlen(s));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
putf(out *o, const char *fmt, ...)
{
    char tmp[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* Shortest decimal form that reads back as the same double. */
static void put_num(out *o, double v)
{
    char tmp[40];
    if (!isfinite(v)) {
        puts_(o, "null");
        return;
    }
    if (v == 0)
        v = 0; /* no "-0" */
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        double back;
        if (sscanf(tmp, "%lf", &back) == 1 && back == v)
            break;
    }
    puts_(o, tmp);
}

static void put_json_str(out *o, const char *s)
{
    put(o, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            putf(o, "\\%c", c);
        else if (c < 0x20)
            putf(o, "\\u%04x", c);
        else
            put(o, s, 1);
    }
    put(o, "\"", 1);
}

/* ---- text tables ---------------------------------------------------------------------- */

static size_t max_label(const ps_schedule *s, const ps_action *acts, const int64_t *off,
                        const int64_t *len)
{
    size_t w = 1;
    char name[96];
    for (int32_t r = 0; r < s->pp; r++)
        for (int64_t i = 0; i < len[r]; i++) {
            ps__action_str(&acts[off[r] + i], name, sizeof name);
            size_t n = strlen(name);
            if (n > w)
                w = n;
        }
    return w;
}

static void put_cell(out *o, const char *label, size_t width)
{
    size_t n = strlen(label);
    put(o, " ", 1);
    put(o, label, n);
    for (; n < width; n++)
        put(o, " ", 1);
}

static void export_table(out *o, const ps_schedule *s)
{
    const ps_action *acts = s->lowered ? s->lacts : s->acts;
    const int64_t *off = s->lowered ? s->loff : s->off, *len = s->lowered ? s->llen : s->len;
    size_t w = max_label(s, acts, off, len);
    int rw = snprintf(NULL, 0, "%d", s->pp - 1);
    char name[96];
    for (int32_t r = 0; r < s->pp; r++) {
        putf(o, "rank %*d |", rw, r);
        for (int64_t i = 0; i < len[r]; i++) {
            ps__action_str(&acts[off[r] + i], name, sizeof name);
            put_cell(o, name, w);
        }
        puts_(o, "\n");
    }
}

/* Greatest common divisor of two non-negative times, within eps. */
static double time_gcd(double a, double b, double eps)
{
    if (a < b) {
        double x = a;
        a = b;
        b = x;
    }
    while (b > eps) {
        double r = fmod(a, b);
        if (r < eps || b - r < eps)
            return b;
        a = b;
        b = r;
    }
    return a;
}

/* The cells of rank r's row at unit time units per column into o (NULL: only counts). With
 * fit, no column is written twice: an action that rounds into columns already written starts
 * after them, and one that ends there is not shown, so the row has at most makespan / unit
 * columns. Returns the actions not shown. */
static int64_t timed_row(out *o, const ps_schedule *s, const ps_sim *sim, int32_t r, double unit,
                         double eps, size_t w, int fit)
{
    const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
    char name[96];
    int64_t col = 0, hidden = 0;
    for (int64_t i = 0; i < s->len[r]; i++) {
        if (en[i] - st[i] <= eps)
            continue;
        int64_t c0 = (int64_t)floor(st[i] / unit + 0.5);
        int64_t c1 = (int64_t)floor(en[i] / unit + 0.5);
        if (c1 <= c0)
            c1 = c0 + 1; /* shorter than a column after rounding: still one column */
        if (fit && c1 <= col) {
            hidden++;
            continue;
        }
        if (fit && c0 < col)
            c0 = col;
        if (!o) {
            col = c1 > col ? c1 : col;
            continue;
        }
        for (; col < c0; col++)
            put_cell(o, ".", w);
        ps__action_str(&s->acts[s->off[r] + i], name, sizeof name);
        put_cell(o, name, w);
        for (col++; col < c1; col++)
            put_cell(o, "+", w);
    }
    return hidden;
}

#define MAX_TIMED_COLUMNS 4000

/*
 * One column per time unit. The unit is the largest that divides every start and end time
 * (within rounding), so each action gets whole columns, but at least makespan / 4000 so
 * that odd costs cannot blow the table up; the legend says which. An action's first column
 * shows its name, the following ones "+"; idle columns show ".". Zero-length actions occupy
 * no column; the legend counts them.
 */
static void export_timed(out *o, const ps_schedule *s, const ps_sim *sim, int width)
{
    ps_metrics met;
    ps_sim_metrics(sim, &met);
    size_t w = max_label(s, s->acts, s->off, s->len);
    int rw = snprintf(NULL, 0, "%d", s->pp - 1);
    /* A row is "rank r |" (7 + rw characters) and a column per unit of w + 1. */
    long long columns = MAX_TIMED_COLUMNS;
    if (width > 0) {
        columns = ((long long)width - 7 - rw) / (long long)(w + 1);
        if (columns < 1)
            columns = 1;
        if (columns > MAX_TIMED_COLUMNS)
            columns = MAX_TIMED_COLUMNS;
    }
    double eps = met.makespan * 1e-9, floor_unit = met.makespan / (double)columns, unit = 0;
    int64_t zero = 0;
    for (int32_t r = 0; r < s->pp && (unit == 0 || unit > floor_unit); r++) {
        const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
        for (int64_t i = 0; i < s->len[r] && (unit == 0 || unit > floor_unit); i++) {
            if (st[i] > eps)
                unit = unit == 0 ? st[i] : time_gcd(unit, st[i], eps);
            if (en[i] > eps)
                unit = unit == 0 ? en[i] : time_gcd(unit, en[i], eps);
        }
    }
    int rounded = unit < floor_unit;
    if (rounded)
        unit = floor_unit;
    if (unit <= 0)
        unit = 1;
    for (int32_t r = 0; r < s->pp; r++) {
        const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
        for (int64_t i = 0; i < s->len[r]; i++)
            zero += en[i] - st[i] <= eps;
    }
    int64_t hidden = 0;
    if (width > 0)
        for (int32_t r = 0; r < s->pp; r++)
            hidden += timed_row(NULL, s, sim, r, unit, eps, w, 1);
    putf(o, "# one column = %g time unit%s", unit, unit == 1 ? "" : "s");
    puts_(o, rounded ? " (times rounded to the nearest column)" : "");
    putf(o, "; \"+\" continues the action to its left, \".\" is idle; makespan %g", met.makespan);
    if (zero)
        putf(o, "; %lld zero-length action%s not drawn", (long long)zero, zero == 1 ? "" : "s");
    if (hidden)
        putf(o, "; %lld action%s inside a column already drawn not shown", (long long)hidden,
             hidden == 1 ? "" : "s");
    puts_(o, "\n");
    for (int32_t r = 0; r < s->pp; r++) {
        putf(o, "rank %*d |", rw, r);
        timed_row(o, s, sim, r, unit, eps, w, width > 0);
        puts_(o, "\n");
    }
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void put_action_json(out *o, const ps_action *a, const double *st, const double *en)
{
    if (a->kind == PS_FB) {
        putf(o,
             "{\"op\":\"FB\",\"f\":{\"stage\":%d,\"mb\":%d},\"b\":{\"op\":\"%s\",\"stage\":%d,"
             "\"mb\":%d}",
             a->stage, a->mb, ps_kind_name(a->bkind), a->bstage, a->bmb);
    } else if (a->kind >= PS_SEND_F) {
        putf(o, "{\"op\":\"%s\",\"stage\":%d,\"mb\":%d,\"peer\":%d", ps_kind_name(a->kind),
             a->stage, a->mb, a->bstage);
    } else {
        putf(o, "{\"op\":\"%s\",\"stage\":%d,\"mb\":%d", ps_kind_name(a->kind), a->stage, a->mb);
    }
    if (st) {
        puts_(o, ",\"start\":");
        put_num(o, *st);
        puts_(o, ",\"end\":");
        put_num(o, *en);
    }
    puts_(o, "}");
}

static void put_metrics_body(out *o, const ps_schedule *s, const ps_sim *sim)
{
    ps_metrics m;
    ps_sim_metrics(sim, &m);
    puts_(o, "\"makespan\":");
    put_num(o, m.makespan);
    puts_(o, ",\"bubble\":");
    put_num(o, m.bubble);
    puts_(o, ",\"bubble_ratio\":");
    put_num(o, m.bubble_ratio);
    puts_(o, ",\"ranks\":[");
    for (int32_t r = 0; r < s->pp; r++) {
        ps_rank_metrics rm;
        ps_sim_rank_metrics(sim, r, &rm);
        putf(o, "%s{\"rank\":%d,\"busy\":", r ? "," : "", r);
        put_num(o, rm.busy);
        puts_(o, ",\"span\":");
        put_num(o, rm.span);
        puts_(o, ",\"idle\":");
        put_num(o, rm.idle);
        putf(o, ",\"peak_activations\":%lld,\"peak_memory\":", (long long)rm.peak_activations);
        put_num(o, rm.peak_memory);
        putf(o, ",\"param_copies\":%d}", rm.param_copies);
    }
    puts_(o, "]");
    ps_comm_metrics c;
    if (ps_sim_comm(sim, &c) == 0) {
        static const char *const phase[PS_PHASE_COUNT] = {"warmup", "steady", "cooldown", "whole"};
        puts_(o, ",\"comm\":{");
        for (int ph = 0; ph < PS_PHASE_COUNT; ph++) {
            putf(o, "%s\"%s\":{\"total\":", ph ? "," : "", phase[ph]);
            put_num(o, c.total[ph]);
            puts_(o, ",\"exposed\":");
            put_num(o, c.exposed[ph]);
            puts_(o, ",\"overlap\":");
            put_num(o, c.overlap[ph]);
            puts_(o, "}");
        }
        puts_(o, "}");
    }
}

static void put_header_json(out *o, const ps_schedule *s)
{
    puts_(o, "{\"schedule\":");
    put_json_str(o, ps_schedule_family(s));
    putf(o, ",\"pp\":%d,\"vpp\":%d,\"stages\":%d,\"microbatches\":%d", s->pp, ps_schedule_vpp(s),
         s->nstages, s->m);
    if (s->group)
        putf(o, ",\"group_size\":%d", s->group);
}

static void export_json(out *o, const ps_schedule *s, const ps_sim *sim)
{
    put_header_json(o, s);
    puts_(o, ",\"placement\":[");
    for (int32_t i = 0; i < s->nstages; i++)
        putf(o, "%s%d", i ? "," : "", s->stage_rank[i]);
    puts_(o, "]");
    if (s->npaths > 1) {
        puts_(o, ",\"paths\":[");
        for (int32_t k = 0; k < s->npaths; k++) {
            putf(o, "%s{\"stages\":[", k ? "," : "");
            for (int32_t i = 0; i < s->path_len[k]; i++)
                putf(o, "%s%d", i ? "," : "", s->path_stages[s->path_off[k] + i]);
            putf(o, "],\"microbatches\":[%d,%d]}", s->path_mb0[k], s->path_mbn[k]);
        }
        puts_(o, "]");
    }
    if (sim) {
        puts_(o, ",\"metrics\":{");
        put_metrics_body(o, s, sim);
        puts_(o, "}");
    }
    puts_(o, ",\"ranks\":[");
    for (int32_t r = 0; r < s->pp; r++) {
        const double *st = sim ? ps_sim_starts(sim, r) : NULL,
                     *en = sim ? ps_sim_ends(sim, r) : NULL;
        puts_(o, r ? ",\n[" : "\n[");
        for (int64_t i = 0; i < s->len[r]; i++) {
            if (i)
                puts_(o, ",");
            put_action_json(o, &s->acts[s->off[r] + i], st ? &st[i] : NULL, en ? &en[i] : NULL);
        }
        puts_(o, "]");
    }
    puts_(o, "]");
    if (s->lowered) {
        /* The compute + SEND/RECV lists, untimed (the simulator times compute actions). */
        puts_(o, ",\"lowered\":[");
        for (int32_t r = 0; r < s->pp; r++) {
            puts_(o, r ? ",\n[" : "\n[");
            for (int64_t i = 0; i < s->llen[r]; i++) {
                if (i)
                    puts_(o, ",");
                put_action_json(o, &s->lacts[s->loff[r] + i], NULL, NULL);
            }
            puts_(o, "]");
        }
        puts_(o, "]");
    }
    puts_(o, "}\n");
}

static void export_metrics(out *o, const ps_schedule *s, const ps_sim *sim)
{
    put_header_json(o, s);
    puts_(o, ",");
    put_metrics_body(o, s, sim);
    puts_(o, "}\n");
}

/* ---- CSV ------------------------------------------------------------------------------ */

/* One line per rank. A rank with no actions is written as "," (two empty cells) rather than
 * as an empty line: the loader counts rows up to the last non-blank line, so an empty line
 * for an idle last rank would be read as a trailing blank line and the rank lost. */
static void export_csv(out *o, const ps_schedule *s, const ps_action *acts, const int64_t *off,
                       const int64_t *len)
{
    char name[96];
    for (int32_t r = 0; r < s->pp; r++) {
        if (len[r] == 0)
            put(o, ",", 1);
        for (int64_t i = 0; i < len[r]; i++) {
            if (i)
                put(o, ",", 1);
            ps__action_str(&acts[off[r] + i], name, sizeof name);
            puts_(o, name);
        }
        puts_(o, "\n");
    }
}

/* ---- Chrome trace --------------------------------------------------------------------- */

static const char *category(const ps_action *a)
{
    switch (a->kind) {
    case PS_F:
        return "forward";
    case PS_I:
        return "backward_input";
    case PS_W:
        return "backward_weight";
    case PS_B:
        return "backward";
    case PS_FB:
        return "fused_forward_backward";
    default:
        return "communication";
    }
}

/* The events of one trace: us converts the simulation's time unit into the trace's
 * microseconds. */
typedef struct trace {
    out *o;
    int first; /* no event written yet */
    double us;
} trace;

static void trace_event(trace *t, const char *name, const char *cat, int32_t pid, int tid,
                        double ts, double dur)
{
    out *o = t->o;
    puts_(o, t->first ? "\n" : ",\n");
    t->first = 0;
    puts_(o, "{\"name\":");
    put_json_str(o, name);
    puts_(o, ",\"cat\":");
    put_json_str(o, cat);
    putf(o, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", pid, tid);
    put_num(o, ts * t->us);
    puts_(o, ",\"dur\":");
    put_num(o, dur * t->us);
    puts_(o, "}");
}

/* The process and thread names: "rank r" with its compute and communication tracks, and the
 * planned streams of a MoE model. */
static void trace_names(trace *t, const ps_schedule *s, int moe)
{
    out *o = t->o;
    for (int32_t r = 0; r < s->pp; r++) {
        putf(o,
             "%s\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":"
             "\"rank %d\"}},",
             t->first ? "" : ",", r, r);
        putf(o,
             "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{"
             "\"name\":\"compute\"}},",
             r);
        putf(o,
             "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{"
             "\"name\":\"communication\"}}",
             r);
        if (moe)
            putf(o,
                 ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":2,\"args\":{"
                 "\"name\":\"compute stream (planned)\"}},"
                 "\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":3,\"args\":{"
                 "\"name\":\"all-to-all stream (planned)\"}}",
                 r, r);
        t->first = 0;
    }
}

/* Action a of rank r: its box, a MoE model's planned operations, the transfers it sends. */
static void trace_action(trace *t, const ps_schedule *s, const ps_sim *sim, int32_t r,
                         const ps_action *a, double start, double end, double c)
{
    char name[128];
    ps__action_str(a, name, sizeof name);
    trace_event(t, name, category(a), r, 0, start, end - start);
    size_t nops;
    int32_t l0[2];
    const ps_plan_op *ops = ps__sim_moe_ops(sim, a, &nops, l0);
    /* The plan is of an unweighted micro-batch; its operations stretch with the action. */
    double scale = nops ? ps__sim_scale(sim, a) : 1.0;
    for (size_t k = 0; k < nops; k++) {
        /* "F attn L3 (mb 5)": the part, the operation, its layer, the micro-batch */
        const ps_plan_op *x = &ops[k];
        int fwd = x->part == 0;
        snprintf(name, sizeof name, "%s %s L%d (mb %d)", fwd ? "F" : "B", ps_op_name(x->op),
                 (int)(x->layer + l0[x->part]), (int)(fwd || a->kind != PS_FB ? a->mb : a->bmb));
        trace_event(t, name, x->stream ? "moe_comm" : "moe_compute", r, 2 + x->stream,
                    start + x->start * scale, (x->end - x->start) * scale);
    }
    if (c <= 0)
        return;
    /* Transfers that leave this rank, on its communication track. */
    int dir[2];
    int32_t stage[2], mb[2];
    for (int k = 0, n = ps__action_outputs(a, dir, stage, mb); k < n; k++) {
        int32_t peer = ps__path_peer(s, dir[k], stage[k], mb[k]);
        if (peer < 0 || s->stage_rank[peer] == r)
            continue;
        snprintf(name, sizeof name, "%d%s%d -> rank %d", stage[k],
                 dir[k] == 0 ? "SEND_F" : "SEND_B", mb[k], s->stage_rank[peer]);
        trace_event(t, name, "communication", r, 1, end, c);
    }
}

static void export_trace(out *o, const ps_schedule *s, const ps_sim *sim, double c,
                         const ps_trace_options *opt)
{
    ps_comm_metrics cm;
    trace t = {o, 1, opt->us_per_unit > 0 ? opt->us_per_unit : PS_TRACE_US_PER_UNIT};
    puts_(o, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[");
    trace_names(&t, s, ps_sim_comm(sim, &cm) == 0); /* planned with a MoE model */
    for (int32_t r = 0; r < s->pp; r++) {
        const double *st = ps_sim_starts(sim, r), *en = ps_sim_ends(sim, r);
        for (int64_t i = 0; i < s->len[r]; i++)
            trace_action(&t, s, sim, r, &s->acts[s->off[r] + i], st[i], en[i], c);
    }
    for (size_t k = 0; k < opt->nevents; k++) {
        const ps_trace_event *x = &opt->events[k];
        trace_event(&t, x->name, x->cat ? x->cat : "host", x->rank, x->track, x->start, x->dur);
    }
    puts_(o, "\n]}\n");
}

/* The host's part of a trace: a known unit, events on the schedule's ranks and tracks. */
static int check_trace_options(const ps_schedule *s, const ps_trace_options *opt)
{
    if (!(opt->us_per_unit >= 0 && isfinite(opt->us_per_unit)) || (opt->nevents && !opt->events))
        return PS_EINVAL;
    for (size_t k = 0; k < opt->nevents; k++) {
        const ps_trace_event *x = &opt->events[k];
        if (!x->name || x->rank < 0 || x->rank >= s->pp || x->track < 0 || x->track > 1 ||
            !(x->start >= 0 && isfinite(x->start)) || !(x->dur >= 0 && isfinite(x->dur)))
            return PS_EINVAL;
    }
    return 0;
}

/* Both entry points: the arguments checked, the output streamed, PS_EIO when a write failed.
 * opt is the trace's (the other formats ignore it). */
static int export_run(const ps_schedule *s, const ps_sim *sim, ps_format fmt,
                      const ps_trace_options *opt, int width, ps_write_fn write, void *ud)
{
    if (!s || !write || s->pp <= 0 || !s->acts)
        return PS_EINVAL;
    int timed = fmt == PS_FORMAT_TABLE_TIMED || fmt == PS_FORMAT_TRACE || fmt == PS_FORMAT_METRICS;
    if (timed && !sim)
        return PS_EINVAL;
    if (sim && ps__sim_schedule(sim) != s)
        return PS_ESTATE; /* no timeline, a stale one, or one of another schedule */
    if (sim && (timed || fmt == PS_FORMAT_JSON) && fmt != PS_FORMAT_METRICS &&
        !ps_sim_starts(sim, 0))
        return PS_ESTATE; /* the run kept only the metrics (ps_sim_keep_timeline) */
    if (fmt == PS_FORMAT_CSV_COMMS && !s->lowered)
        return PS_EINVAL;
    int rc = fmt == PS_FORMAT_TRACE ? check_trace_options(s, opt) : 0;
    if (rc)
        return rc;
    out *o = ps__alloc(&s->al, 1, sizeof *o);
    if (!o)
        return PS_ENOMEM;
    o->write = write;
    o->ud = ud;
    o->failed = 0;
    o->n = 0;
    switch (fmt) {
    case PS_FORMAT_TABLE:
        export_table(o, s);
        break;
    case PS_FORMAT_TABLE_TIMED:
        export_timed(o, s, sim, width);
        break;
    case PS_FORMAT_JSON:
        export_json(o, s, sim);
        break;
    case PS_FORMAT_CSV:
        export_csv(o, s, s->acts, s->off, s->len);
        break;
    case PS_FORMAT_CSV_COMMS:
        export_csv(o, s, s->lacts, s->loff, s->llen);
        break;
    case PS_FORMAT_TRACE:
        export_trace(o, s, sim, ps__sim_cost(sim, PS_COST_C), opt);
        break;
    case PS_FORMAT_METRICS:
        export_metrics(o, s, sim);
        break;
    default:
        rc = PS_EINVAL;
    }
    flush(o);
    if (!rc && o->failed)
        rc = PS_EIO;
    ps__free(&s->al, o, 1, sizeof *o);
    return rc;
}

int ps_export(const ps_schedule *s, const ps_sim *sim, ps_format fmt, ps_write_fn write, void *ud)
{
    static const ps_trace_options cost_units = {PS_TRACE_US_PER_UNIT, NULL, 0};
    return export_run(s, sim, fmt, &cost_units, 0, write, ud);
}

int ps_export_trace(const ps_schedule *s, const ps_sim *sim, const ps_trace_options *opt,
                    ps_write_fn write, void *ud)
{
    static const ps_trace_options cost_units = {PS_TRACE_US_PER_UNIT, NULL, 0};
    return export_run(s, sim, PS_FORMAT_TRACE, opt ? opt : &cost_units, 0, write, ud);
}

int ps_export_timed_table(const ps_schedule *s, const ps_sim *sim, int width, ps_write_fn write,
                          void *ud)
{
    if (width < 0)
        return PS_EINVAL;
    return export_run(s, sim, PS_FORMAT_TABLE_TIMED, NULL, width, write, ud);
}
