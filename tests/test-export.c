/*
 * Exporters: the PyTorch CSV loads back identically (compute_only and compute_comms, every
 * family), the JSON and Chrome trace parse and carry the simulated times (the trace in the
 * caller's unit, with the caller's events), the tables have one row per rank, and a failing
 * writer stops the export with PS_EIO.
 * SPDX-License-Identifier: MIT
 */
#include "common.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>

typedef struct buf {
    char *data;
    size_t len, cap;
    int fail_after; /* fail the Nth write (0 = never) */
    int writes;
} buf;

static int buf_write(void *ud, const char *data, size_t len)
{
    buf *b = ud;
    if (b->fail_after && ++b->writes >= b->fail_after)
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

static ps_schedule *gen(ps_problem *pb)
{
    ps_schedule *s;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_int_eq(ps_schedule_generate(s, pb), 0);
    return s;
}

static void assert_same_lists(const ps_schedule *a, const ps_schedule *b, int lowered)
{
    ck_assert_int_eq(ps_schedule_pp(a), ps_schedule_pp(b));
    ck_assert_int_eq(ps_schedule_num_stages(a), ps_schedule_num_stages(b));
    ck_assert_int_eq(ps_schedule_microbatches(a), ps_schedule_microbatches(b));
    for (int st = 0; st < ps_schedule_num_stages(a); st++)
        ck_assert_int_eq(ps_schedule_stage_rank(a, st), ps_schedule_stage_rank(b, st));
    for (int r = 0; r < ps_schedule_pp(a); r++) {
        size_t n = lowered ? ps_schedule_lowered_length(a, r) : ps_schedule_rank_length(a, r);
        const ps_action *x =
            lowered ? ps_schedule_lowered_actions(a, r) : ps_schedule_rank_actions(a, r);
        const ps_action *y =
            lowered ? ps_schedule_lowered_actions(b, r) : ps_schedule_rank_actions(b, r);
        ck_assert_int_eq(n, lowered ? ps_schedule_lowered_length(b, r)
                                    : ps_schedule_rank_length(b, r));
        for (size_t i = 0; i < n; i++) {
            ck_assert_int_eq(x[i].kind, y[i].kind);
            ck_assert_int_eq(x[i].stage, y[i].stage);
            ck_assert_int_eq(x[i].mb, y[i].mb);
            if (x[i].kind == PS_FB) {
                ck_assert_int_eq(x[i].bkind, y[i].bkind);
                ck_assert_int_eq(x[i].bstage, y[i].bstage);
                ck_assert_int_eq(x[i].bmb, y[i].bmb);
            }
        }
    }
}

START_TEST(export_csv_round_trip_every_family)
{
    ps_family_info fi;
    ck_assert_int_eq(ps_family_get((size_t)_i, &fi), 0);
    const int sizes[][3] = {{1, 1, 1}, {2, 1, 4}, {4, 2, 8}, {4, 1, 3}, {3, 3, 9}, {8, 2, 16}};
    for (int k = 0; k < 6; k++) {
        ps_problem *pb = make_problem(fi.name, sizes[k][0], sizes[k][1], sizes[k][2], 1, 1, 1, 0);
        ps_schedule *s, *t;
        ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
        if (ps_schedule_generate(s, pb)) {
            ps_schedule_free(s);
            ps_problem_free(pb);
            continue;
        }
        for (int lowered = 0; lowered < 2; lowered++) {
            buf b = {0};
            if (lowered)
                ck_assert_int_eq(ps_schedule_lower(s), 0);
            ck_assert_int_eq(
                ps_export(s, NULL, lowered ? PS_FORMAT_CSV_COMMS : PS_FORMAT_CSV, buf_write, &b),
                0);
            ck_assert_int_eq(ps_schedule_new(&t, NULL), 0);
            int rc = ps_schedule_load_csv(t, b.data, b.len,
                                          lowered ? PS_CSV_COMPUTE_COMMS : PS_CSV_COMPUTE_ONLY,
                                          sizes[k][2]);
            ck_assert_msg(rc == 0, "%s: %s", fi.name, ps_schedule_last_error(t));
            assert_same_lists(s, t, 0);
            if (lowered) {
                assert_same_lists(s, t, 1);
                ck_assert_int_eq(ps_schedule_validate(t), 0);
            }
            /* Writing it again gives the same bytes. */
            buf b2 = {0};
            ck_assert_int_eq(
                ps_export(t, NULL, lowered ? PS_FORMAT_CSV_COMMS : PS_FORMAT_CSV, buf_write, &b2),
                0);
            ck_assert_int_eq(b.len, b2.len);
            ck_assert(memcmp(b.data, b2.data, b.len) == 0);
            free(b.data);
            free(b2.data);
            ps_schedule_free(t);
        }
        ps_schedule_free(s);
        ps_problem_free(pb);
    }
}
END_TEST

/* Idle ranks (a middle one and the last two) survive a round trip through the CSV export,
 * compute only and with the transfers: pp stays 5, and the second export is byte-identical. */
START_TEST(export_csv_round_trip_idle_ranks)
{
    static const char *const tables[] = {
        "0F0,0B0\n,\n1F0,1B0\n,\n,\n",
        "0F0,0SEND_F0,0RECV_B0,0B0\n\n1RECV_F0,1F0,1B0,1SEND_B0\n,\n\n",
    };
    for (int k = 0; k < 2; k++) {
        ps_schedule *s, *t;
        ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
        int rc = ps_schedule_load_csv(s, tables[k], strlen(tables[k]), PS_CSV_AUTO, 0);
        ck_assert_msg(rc == 0, "%s", ps_schedule_last_error(s));
        int want = k ? 4 : 5;
        ck_assert_int_eq(ps_schedule_pp(s), want);
        ps_format fmt = k ? PS_FORMAT_CSV_COMMS : PS_FORMAT_CSV;
        buf b = {0}, b2 = {0};
        ck_assert_int_eq(ps_export(s, NULL, fmt, buf_write, &b), 0);
        ck_assert_int_eq(ps_schedule_new(&t, NULL), 0);
        rc = ps_schedule_load_csv(t, b.data, b.len, PS_CSV_AUTO, 0);
        ck_assert_msg(rc == 0, "%s", ps_schedule_last_error(t));
        ck_assert_msg(ps_schedule_pp(t) == want, "pp %d after the round trip of:\n%.*s",
                      ps_schedule_pp(t), (int)b.len, b.data);
        assert_same_lists(s, t, 0);
        ck_assert_int_eq(ps_export(t, NULL, fmt, buf_write, &b2), 0);
        ck_assert_int_eq(b.len, b2.len);
        ck_assert(memcmp(b.data, b2.data, b.len) == 0);
        free(b.data);
        free(b2.data);
        ps_schedule_free(t);
        ps_schedule_free(s);
    }
}
END_TEST

START_TEST(export_json_carries_times)
{
    ps_problem *pb = make_problem("interleaved", 4, 2, 8, 1, 1, 1, 0);
    ps_schedule *s = gen(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf b = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_JSON, buf_write, &b), 0);
    cJSON *root = cJSON_Parse(b.data);
    ck_assert_ptr_nonnull(root);
    ck_assert_str_eq(cJSON_GetObjectItem(root, "schedule")->valuestring, "interleaved");
    ck_assert_int_eq(cJSON_GetObjectItem(root, "pp")->valueint, 4);
    ck_assert_int_eq(cJSON_GetObjectItem(root, "vpp")->valueint, 2);
    ck_assert_int_eq(cJSON_GetObjectItem(root, "microbatches")->valueint, 8);
    cJSON *pl = cJSON_GetObjectItem(root, "placement");
    ck_assert_int_eq(cJSON_GetArraySize(pl), 8);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(cJSON_GetArrayItem(pl, i)->valueint, i % 4);
    ck_assert_double_eq(
        cJSON_GetObjectItem(cJSON_GetObjectItem(root, "metrics"), "makespan")->valuedouble, 57);
    cJSON *ranks = cJSON_GetObjectItem(root, "ranks");
    ck_assert_int_eq(cJSON_GetArraySize(ranks), 4);
    double last_end = 0;
    for (int r = 0; r < 4; r++) {
        cJSON *row = cJSON_GetArrayItem(ranks, r);
        ck_assert_int_eq(cJSON_GetArraySize(row), 32); /* 2 chunks x 8 mbs x (F, B) */
        const ps_action *a = ps_schedule_rank_actions(s, r);
        for (int i = 0; i < 32; i++) {
            cJSON *x = cJSON_GetArrayItem(row, i);
            ck_assert_str_eq(cJSON_GetObjectItem(x, "op")->valuestring,
                             a[i].kind == PS_F ? "F" : "B");
            ck_assert_int_eq(cJSON_GetObjectItem(x, "stage")->valueint, a[i].stage);
            ck_assert_int_eq(cJSON_GetObjectItem(x, "mb")->valueint, a[i].mb);
            double st = cJSON_GetObjectItem(x, "start")->valuedouble;
            double en = cJSON_GetObjectItem(x, "end")->valuedouble;
            ck_assert_double_eq(en - st, a[i].kind == PS_F ? 1 : 2);
            if (en > last_end)
                last_end = en;
        }
    }
    ck_assert_double_eq(last_end, 57);
    cJSON_Delete(root);
    free(b.data);

    /* Without a simulation: no times, no metrics. */
    buf u = {0};
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_JSON, buf_write, &u), 0);
    ck_assert_ptr_null(strstr(u.data, "\"start\""));
    ck_assert_ptr_null(strstr(u.data, "\"metrics\""));
    root = cJSON_Parse(u.data);
    ck_assert_ptr_nonnull(root);
    cJSON_Delete(root);
    free(u.data);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(export_trace_and_metrics)
{
    ps_problem *pb = make_problem("1f1b", 3, 1, 4, 1, 2, 1, 0.5);
    ps_schedule *s = gen(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf b = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TRACE, buf_write, &b), 0);
    cJSON *root = cJSON_Parse(b.data);
    ck_assert_ptr_nonnull(root);
    cJSON *ev = cJSON_GetObjectItem(root, "traceEvents");
    int compute = 0, comm = 0, meta = 0;
    for (cJSON *e = ev->child; e; e = e->next) {
        const char *ph = cJSON_GetObjectItem(e, "ph")->valuestring;
        if (!strcmp(ph, "M")) {
            meta++;
            continue;
        }
        ck_assert_str_eq(ph, "X");
        int tid = cJSON_GetObjectItem(e, "tid")->valueint;
        if (tid == 0) {
            compute++;
        } else {
            comm++;
            ck_assert_double_eq(cJSON_GetObjectItem(e, "dur")->valuedouble, 500);
        }
    }
    /* 3 ranks x 4 mbs x (F, B); transfers: 2 edges x 4 mbs x 2 directions; 3 metadata
     * records per rank. */
    ck_assert_int_eq(compute, 24);
    ck_assert_int_eq(comm, 16);
    ck_assert_int_eq(meta, 9);
    cJSON_Delete(root);
    free(b.data);

    buf m = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_METRICS, buf_write, &m), 0);
    root = cJSON_Parse(m.data);
    ck_assert_ptr_nonnull(root);
    ps_metrics met;
    ps_sim_metrics(sim, &met);
    ck_assert_double_eq(cJSON_GetObjectItem(root, "makespan")->valuedouble, met.makespan);
    cJSON *ranks = cJSON_GetObjectItem(root, "ranks");
    ck_assert_int_eq(cJSON_GetArraySize(ranks), 3);
    ck_assert_int_eq(
        cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 0), "peak_activations")->valueint, 3);
    ck_assert_double_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 2), "busy")->valuedouble, 16);
    cJSON_Delete(root);
    free(m.data);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

/* ps_export_trace: the caller's unit scales every ts and dur, the caller's events follow the
 * schedule's (escaped, on their rank and track), no options is ps_export's trace, and a bad
 * option is refused before anything is written. */
START_TEST(export_trace_units_and_events)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 3, 1, 2, 1, 0.25);
    ps_schedule *s = gen(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf ms = {0}, same = {0}, sec = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TRACE, buf_write, &ms), 0);
    ck_assert_int_eq(ps_export_trace(s, sim, NULL, buf_write, &same), 0);
    ck_assert_str_eq(same.data, ms.data);
    ps_trace_event extra[2] = {{"tail \"x\"\n", NULL, 1, 1, 10, 0.5},
                               {"opt", "optimizer", 0, 0, 9.5, 2}};
    ps_trace_options opt = {1e6, extra, 2};
    ck_assert_int_eq(ps_export_trace(s, sim, &opt, buf_write, &sec), 0);
    cJSON *a = cJSON_Parse(ms.data), *b = cJSON_Parse(sec.data);
    ck_assert_ptr_nonnull(a);
    ck_assert_ptr_nonnull(b);
    cJSON *ea = cJSON_GetObjectItem(a, "traceEvents"), *eb = cJSON_GetObjectItem(b, "traceEvents");
    ck_assert_int_eq(cJSON_GetArraySize(eb), cJSON_GetArraySize(ea) + 2);
    /* Event by event: the same names and tracks, times x 1000 (1e6 us per unit instead of
     * 1e3), then the two extra events. */
    cJSON *x = ea->child, *y = eb->child;
    for (; x; x = x->next, y = y->next) {
        ck_assert_str_eq(cJSON_GetObjectItem(x, "name")->valuestring,
                         cJSON_GetObjectItem(y, "name")->valuestring);
        if (strcmp(cJSON_GetObjectItem(x, "ph")->valuestring, "X"))
            continue;
        ck_assert_int_eq(cJSON_GetObjectItem(x, "tid")->valueint,
                         cJSON_GetObjectItem(y, "tid")->valueint);
        ck_assert_double_eq_tol(cJSON_GetObjectItem(y, "ts")->valuedouble,
                                1000 * cJSON_GetObjectItem(x, "ts")->valuedouble, 1e-6);
        ck_assert_double_eq_tol(cJSON_GetObjectItem(y, "dur")->valuedouble,
                                1000 * cJSON_GetObjectItem(x, "dur")->valuedouble, 1e-6);
    }
    const char *want_name[2] = {"tail \"x\"\n", "opt"}, *want_cat[2] = {"host", "optimizer"};
    const int want_pid[2] = {1, 0}, want_tid[2] = {1, 0};
    const double want_ts[2] = {10e6, 9.5e6}, want_dur[2] = {0.5e6, 2e6};
    for (int k = 0; k < 2; k++, y = y->next) {
        ck_assert_ptr_nonnull(y);
        ck_assert_str_eq(cJSON_GetObjectItem(y, "name")->valuestring, want_name[k]);
        ck_assert_str_eq(cJSON_GetObjectItem(y, "cat")->valuestring, want_cat[k]);
        ck_assert_str_eq(cJSON_GetObjectItem(y, "ph")->valuestring, "X");
        ck_assert_int_eq(cJSON_GetObjectItem(y, "pid")->valueint, want_pid[k]);
        ck_assert_int_eq(cJSON_GetObjectItem(y, "tid")->valueint, want_tid[k]);
        ck_assert_double_eq(cJSON_GetObjectItem(y, "ts")->valuedouble, want_ts[k]);
        ck_assert_double_eq(cJSON_GetObjectItem(y, "dur")->valuedouble, want_dur[k]);
    }
    ck_assert_ptr_null(y);
    cJSON_Delete(a);
    cJSON_Delete(b);
    /* Refused, nothing written. */
    buf none = {0};
    ps_trace_event bad = extra[0];
    ps_trace_options o = {1e6, &bad, 1};
    bad.rank = 2; /* pp = 2 */
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0], bad.rank = -1;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0], bad.track = 2;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0], bad.name = NULL;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0], bad.start = -1;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0], bad.dur = NAN;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    bad = extra[0];
    o.us_per_unit = -1;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    o.us_per_unit = INFINITY;
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    o.us_per_unit = 0, o.events = NULL; /* 0: the default unit; but 1 event and no array */
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &none), PS_EINVAL);
    ck_assert_int_eq(ps_export_trace(s, NULL, NULL, buf_write, &none), PS_EINVAL);
    ck_assert_int_eq(ps_export_trace(s, sim, NULL, NULL, &none), PS_EINVAL);
    ck_assert_uint_eq(none.len, 0);
    /* us_per_unit 0 is the default: ps_export's trace again. */
    o.nevents = 0;
    buf zero = {0};
    ck_assert_int_eq(ps_export_trace(s, sim, &o, buf_write, &zero), 0);
    ck_assert_str_eq(zero.data, ms.data);
    /* A failing writer. */
    buf fails = {0};
    fails.fail_after = 1;
    ck_assert_int_eq(ps_export_trace(s, sim, &opt, buf_write, &fails), PS_EIO);
    free(ms.data);
    free(same.data);
    free(sec.data);
    free(zero.data);
    free(fails.data);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

START_TEST(export_tables)
{
    ps_problem *pb = make_problem("1f1b", 4, 1, 8, 1, 1, 1, 0);
    ps_schedule *s = gen(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf b = {0};
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_TABLE, buf_write, &b), 0);
    ck_assert_int_eq(count_lines(b.data), 4);
    ck_assert(strncmp(b.data, "rank 0 | 0F0 0F1 0F2 0F3 0B0 0F4", 32) == 0);
    free(b.data);
    buf t = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TABLE_TIMED, buf_write, &t), 0);
    ck_assert_int_eq(count_lines(t.data), 5); /* legend + 4 ranks */
    /* Rank 3 starts after 3 idle columns (f = 1 each), then is busy for 8 x 3 = 24 units
     * without a gap: 27 columns of width 3 plus a space each. */
    const char *r3 = strstr(t.data, "rank 3 |");
    ck_assert_ptr_nonnull(r3);
    ck_assert(strncmp(r3, "rank 3 | .   .   .   3F0 3B0 +   3F1", 36) == 0);
    const char *eol = strchr(r3, '\n');
    ck_assert_int_eq(eol - r3, 8 + 27 * 4);
    free(t.data);
    /* Timed formats need a simulation; csv-comms needs lowering. */
    buf x = {0};
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_TABLE_TIMED, buf_write, &x), PS_EINVAL);
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_TRACE, buf_write, &x), PS_EINVAL);
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_CSV_COMMS, buf_write, &x), PS_EINVAL);
    ck_assert_int_eq(ps_export(s, NULL, (ps_format)99, buf_write, &x), PS_EINVAL);
    ck_assert_int_eq(ps_export(NULL, NULL, PS_FORMAT_CSV, buf_write, &x), PS_EINVAL);
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_CSV, NULL, &x), PS_EINVAL);
    /* A timeline of another schedule is refused. */
    ps_schedule *other = gen(pb);
    ck_assert_int_eq(ps_export(other, sim, PS_FORMAT_TRACE, buf_write, &x), PS_ESTATE);
    ps_schedule_free(other);
    free(x.data);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(export_timed_grid)
{
    /* f = 0: the forwards take no time and are not drawn; the legend counts them. With
     * f = b = w = 1 the unit is 1; every B (cost 2) spans two columns. */
    ps_problem *pb = make_problem("1f1b", 2, 1, 2, 0, 1, 1, 0);
    ps_schedule *s = gen(pb);
    ps_sim *sim;
    ck_assert_int_eq(ps_sim_new(&sim, NULL), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf b = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TABLE_TIMED, buf_write, &b), 0);
    /* B costs 2: rank 1 runs 1B0 0-2, 1B1 2-4; rank 0 runs 0B0 2-4, 0B1 4-6. */
    ck_assert_ptr_nonnull(strstr(b.data, "one column = 2 time units"));
    ck_assert_ptr_nonnull(strstr(b.data, "4 zero-length actions not drawn"));
    ck_assert_ptr_nonnull(strstr(b.data, "rank 0 | .   0B0 0B1\n"));
    ck_assert_ptr_nonnull(strstr(b.data, "rank 1 | 1B0 1B1\n"));
    free(b.data);
    /* c = 0.5 puts every time on a 0.5 grid: 1F0 runs 1.5-2.5, three columns after 0F0 and
     * 0F1 (two columns each). */
    ck_assert_int_eq(ps_problem_set_costs_string(pb, "f=1,b=1,w=1,c=0.5"), 0);
    ck_assert_int_eq(ps_sim_run(sim, s, pb), 0);
    buf c = {0};
    ck_assert_int_eq(ps_export(s, sim, PS_FORMAT_TABLE_TIMED, buf_write, &c), 0);
    ck_assert_ptr_nonnull(strstr(c.data, "one column = 0.5 time units"));
    ck_assert_ptr_nonnull(strstr(c.data, "rank 1 | .   .   .   1F0 +   1B0 +   +   +"));
    free(c.data);
    ps_sim_free(sim);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(export_json_lowered)
{
    ps_problem *pb = make_problem("1f1b", 2, 1, 1, 1, 1, 1, 0);
    ps_schedule *s = gen(pb);
    ck_assert_int_eq(ps_schedule_lower(s), 0);
    buf b = {0};
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_JSON, buf_write, &b), 0);
    cJSON *root = cJSON_Parse(b.data);
    ck_assert_ptr_nonnull(root);
    cJSON *low = cJSON_GetObjectItem(root, "lowered");
    ck_assert_int_eq(cJSON_GetArraySize(low), 2);
    /* Rank 1: RECV_F from stage 0, F, B, SEND_B to stage 0. */
    cJSON *r1 = cJSON_GetArrayItem(low, 1);
    ck_assert_int_eq(cJSON_GetArraySize(r1), 4);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(r1, 0), "op")->valuestring, "RECV_F");
    ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(r1, 0), "peer")->valueint, 0);
    ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(r1, 3), "op")->valuestring, "SEND_B");
    cJSON_Delete(root);
    free(b.data);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

START_TEST(export_write_failure)
{
    /* A large schedule so that the output takes several 64 KiB writes. */
    ps_problem *pb = make_problem("interleaved", 16, 4, 256, 1, 1, 1, 0);
    ps_schedule *s = gen(pb);
    buf b = {0};
    b.fail_after = 2;
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_JSON, buf_write, &b), PS_EIO);
    buf ok = {0};
    ck_assert_int_eq(ps_export(s, NULL, PS_FORMAT_JSON, buf_write, &ok), 0);
    ck_assert_int_gt(ok.len, 65536 * 2);
    cJSON *root = cJSON_Parse(ok.data);
    ck_assert_ptr_nonnull(root);
    cJSON_Delete(root);
    free(b.data);
    free(ok.data);
    ps_schedule_free(s);
    ps_problem_free(pb);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("export");
    TCase *tc = tcase_create("csv");
    tcase_add_loop_test(tc, export_csv_round_trip_every_family, 0, (int)ps_family_count());
    suite_add_tcase(su, tc);
    tc = tcase_create("formats");
    tcase_add_test(tc, export_json_carries_times);
    tcase_add_test(tc, export_csv_round_trip_idle_ranks);
    tcase_add_test(tc, export_trace_and_metrics);
    tcase_add_test(tc, export_trace_units_and_events);
    tcase_add_test(tc, export_tables);
    tcase_add_test(tc, export_write_failure);
    tcase_add_test(tc, export_timed_grid);
    tcase_add_test(tc, export_json_lowered);
    suite_add_tcase(su, tc);
    return run_suite(su);
}
