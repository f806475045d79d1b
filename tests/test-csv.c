/*
 * Check suite "csv": action strings (ps_kind_name, ps_action_format, ps_action_parse) and
 * loading PyTorch CSV tables (ps_schedule_load_csv). Expected values come from the input
 * text, read by hand or counted here independently of the library.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include "common.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZB1P_CSV "data/zb1p_2rank_2stagep_compute.csv"
#define DUALPIPEV_CSV "data/dualpipev_4rank_10mb.csv"

/* ---- helpers ------------------------------------------------------------------------------ */

/* Reads a whole data file (paths are relative to tests/). Caller frees. */
static char *read_data(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (run from tests/)", path);
    ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
    long n = ftell(f);
    ck_assert_int_ge(n, 0);
    ck_assert_int_eq(fseek(f, 0, SEEK_SET), 0);
    char *buf = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(buf);
    ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static int blank_char(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/*
 * Counts the cells of row `row` (0-based line) that contain something other than blanks, and
 * among them those holding `needle` (NULL: all). Deliberately naive: a separate reading of
 * the text, not the library's.
 */
static long count_cells(const char *text, size_t len, int row, const char *needle)
{
    long n = 0;
    int line = 0;
    size_t i = 0;
    while (i < len && line < row) {
        if (text[i] == '\n')
            line++;
        i++;
    }
    if (line < row)
        return 0;
    while (i < len && text[i] != '\n') {
        size_t start = i;
        int nonblank = 0;
        while (i < len && text[i] != ',' && text[i] != '\n') {
            if (!blank_char(text[i]))
                nonblank = 1;
            i++;
        }
        if (nonblank) {
            if (!needle) {
                n++;
            } else {
                size_t nl = strlen(needle);
                for (size_t k = start; k + nl <= i; k++)
                    if (memcmp(text + k, needle, nl) == 0) {
                        n++;
                        break;
                    }
            }
        }
        if (i < len && text[i] == ',')
            i++;
    }
    return n;
}

static ps_schedule *new_schedule(void)
{
    ps_schedule *s = NULL;
    ck_assert_int_eq(ps_schedule_new(&s, NULL), 0);
    ck_assert_ptr_nonnull(s);
    return s;
}

static int load_str(ps_schedule *s, const char *text, ps_csv_format fmt, int m)
{
    return ps_schedule_load_csv(s, text, strlen(text), fmt, m);
}

static void assert_action(const ps_action *a, int kind, int stage, int mb)
{
    ck_assert_int_eq(a->kind, kind);
    ck_assert_int_eq(a->stage, stage);
    ck_assert_int_eq(a->mb, mb);
}

static void assert_empty(const ps_schedule *s)
{
    ck_assert_int_eq(ps_schedule_pp(s), 0);
    ck_assert_int_eq(ps_schedule_num_stages(s), 0);
    ck_assert_int_eq(ps_schedule_microbatches(s), 0);
    ck_assert_uint_eq(ps_schedule_total_actions(s), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 0);
}

/* Expects failure code rc with a message containing want; the schedule must be left empty. */
static void assert_load_fails(const char *text, ps_csv_format fmt, int m, int rc, const char *want)
{
    ps_schedule *s = new_schedule();
    /* Something loaded first, so that the failure has to clear it. */
    ck_assert_int_eq(load_str(s, "0F0,0B0\n1F0,1B0\n", PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(load_str(s, text, fmt, m), rc);
    ck_assert_msg(strstr(ps_schedule_last_error(s), want) != NULL, "message \"%s\" lacks \"%s\"",
                  ps_schedule_last_error(s), want);
    assert_empty(s);
    ps_schedule_free(s);
}

/* ---- kind names --------------------------------------------------------------------------- */

START_TEST(csv_kind_names)
{
    static const char *const want[PS_KIND_COUNT] = {
        "F", "I", "W", "B", "OVERLAP_F_B", "SEND_F", "RECV_F", "SEND_B", "RECV_B",
    };
    for (int k = 0; k < PS_KIND_COUNT; k++)
        ck_assert_str_eq(ps_kind_name(k), want[k]);
    ck_assert_str_eq(ps_kind_name(-1), "?");
    ck_assert_str_eq(ps_kind_name(PS_KIND_COUNT), "?");
}
END_TEST

/* ---- parsing ------------------------------------------------------------------------------ */

typedef struct parse_case {
    const char *text;
    int kind, stage, mb, bkind, bstage, bmb;
} parse_case;

static void check_parse(const parse_case *c)
{
    ps_action a;
    size_t col = 12345;
    memset(&a, 0xab, sizeof a);
    ck_assert_msg(ps_action_parse(c->text, strlen(c->text), &a, &col) == 0, "parse %s", c->text);
    ck_assert_uint_eq(col, 12345); /* untouched on success */
    ck_assert_int_eq(a.kind, c->kind);
    ck_assert_int_eq(a.stage, c->stage);
    ck_assert_int_eq(a.mb, c->mb);
    ck_assert_int_eq(a.bkind, c->bkind);
    ck_assert_int_eq(a.bstage, c->bstage);
    ck_assert_int_eq(a.bmb, c->bmb);
    ck_assert_int_eq(a.reserved, 0);
}

START_TEST(csv_parse_compute)
{
    static const parse_case cases[] = {
        {"1F0", PS_F, 1, 0, 0, 0, 0},
        {"2I1", PS_I, 2, 1, 0, 0, 0},
        {"0W3", PS_W, 0, 3, 0, 0, 0},
        {"0B3", PS_B, 0, 3, 0, 0, 0},
        {"12F345", PS_F, 12, 345, 0, 0, 0},
        {"007B08", PS_B, 7, 8, 0, 0, 0}, /* leading zeros, as Python's int() reads them */
        {"2147483647F2147483647", PS_F, 2147483647, 2147483647, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_parse(&cases[i]);
}
END_TEST

START_TEST(csv_parse_comm)
{
    /* The peer stage cannot be read from the string: the parser leaves -1 for the loader. */
    static const parse_case cases[] = {
        {"2SEND_B2", PS_SEND_B, 2, 2, 0, -1, 2},
        {"1RECV_F1", PS_RECV_F, 1, 1, 0, -1, 1},
        {"0SEND_F5", PS_SEND_F, 0, 5, 0, -1, 5},
        {"3RECV_B0", PS_RECV_B, 3, 0, 0, -1, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_parse(&cases[i]);
}
END_TEST

START_TEST(csv_parse_legacy_bw)
{
    static const parse_case cases[] = {
        {"2BW0", PS_B, 2, 0, 0, 0, 0},
        {"(1F2;3BW4)OVERLAP_F_B", PS_FB, 1, 2, PS_B, 3, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_parse(&cases[i]);
}
END_TEST

START_TEST(csv_parse_fused)
{
    static const parse_case cases[] = {
        {"(0F7;7B3)OVERLAP_F_B", PS_FB, 0, 7, PS_B, 7, 3},
        /* Backward written first: the forward still goes into stage/mb. */
        {"(7B3;0F7)OVERLAP_F_B", PS_FB, 0, 7, PS_B, 7, 3},
        {"(4F4;3I0)OVERLAP_F_B", PS_FB, 4, 4, PS_I, 3, 0},
        {"(3I0;4F4)OVERLAP_F_B", PS_FB, 4, 4, PS_I, 3, 0},
        {"( 0F7 ;\t7B3 )OVERLAP_F_B", PS_FB, 0, 7, PS_B, 7, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        check_parse(&cases[i]);
}
END_TEST

START_TEST(csv_parse_blanks)
{
    ps_action a;
    size_t col = 99;
    static const parse_case padded = {" \t1F0 \t", PS_F, 1, 0, 0, 0, 0};
    check_parse(&padded);
    ck_assert_int_eq(ps_action_parse("", 0, &a, &col), PS_ENOTFOUND);
    ck_assert_int_eq(ps_action_parse(" \t  ", 4, &a, &col), PS_ENOTFOUND);
    ck_assert_int_eq(ps_action_parse(NULL, 0, &a, &col), PS_ENOTFOUND);
    ck_assert_int_eq(ps_action_parse("1F0", 0, &a, NULL), PS_ENOTFOUND);
}
END_TEST

START_TEST(csv_parse_length_bounded)
{
    /* Only len bytes count: "1F23" cut to 3 bytes is "1F2". */
    ps_action a;
    ck_assert_int_eq(ps_action_parse("1F23", 3, &a, NULL), 0);
    assert_action(&a, PS_F, 1, 2);
    ck_assert_int_eq(ps_action_parse("0B1,junk", 3, &a, NULL), 0);
    assert_action(&a, PS_B, 0, 1);
    /* Exact-size heap copies, so that a read past the end is caught by ASan or valgrind. */
    static const char *const exact[] = {"1F2", "(0F7;7B3)OVERLAP_F_B", "1F", "(0F1;1B2)"};
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++) {
        size_t n = strlen(exact[i]);
        char *buf = malloc(n);
        ck_assert_ptr_nonnull(buf);
        memcpy(buf, exact[i], n);
        int rc = ps_action_parse(buf, n, &a, NULL);
        ck_assert_int_eq(rc, i < 2 ? 0 : PS_EPARSE);
        free(buf);
    }
}
END_TEST

typedef struct bad_case {
    const char *text;
    size_t col;
} bad_case;

START_TEST(csv_parse_malformed)
{
    static const bad_case cases[] = {
        {"1F", 2},                   /* no micro-batch: the end of the string */
        {"F1", 0},                   /* no stage */
        {"1F2x", 3},                 /* trailing garbage */
        {"1X2", 1},                  /* unknown type */
        {"1F-2", 2},                 /* negative micro-batch */
        {"-1F0", 0},                 /* negative stage */
        {"(0F1)OVERLAP_F_B", 4},     /* ')' where ';' belongs */
        {"(0F1;1F2)OVERLAP_F_B", 5}, /* two forwards: the second is wrong */
        {"(1B0;2B1)OVERLAP_F_B", 5}, /* two backwards */
        {"(0W1;1B0)OVERLAP_F_B", 1}, /* W cannot be fused */
        {"(0SEND_F1;1B0)OVERLAP_F_B", 1},
        {"(0F1;1B2)", 9},                             /* missing OVERLAP_F_B */
        {"(0F1;1B2)OVERLAP_F_Bx", 20},                /* trailing garbage after the composite */
        {"(0F1;1B2)SEND_F", 9},                       /* wrong composite type */
        {"(0F1;1B2;2F3)OVERLAP_F_B", 8},              /* three sub-actions */
        {"((0F1;1B0)OVERLAP_F_B;2F0)OVERLAP_F_B", 1}, /* nested */
        {"()OVERLAP_F_B", 1},
        {"(0F1;1B2", 8},
        {"99999999999F0", 0}, /* stage beyond INT32_MAX: the number is reported */
        {"2147483648F0", 0},
        {"1F2147483648", 2},
        {"1UNSHARD", 1}, /* PyTorch types this library does not model */
        {"3RESHARD", 1},
        {"0REDUCE_GRAD", 1},
        {"1OVERLAP_F_B0", 1}, /* a composite type needs its sub-actions */
        {"1f0", 1},           /* types are upper case */
        {"1 F0", 1},          /* no blanks inside an action */
        {"1SEND_F", 7},
        {"  1F2x ", 5}, /* the column counts the leading blanks */
        {"1F0\r", 3},
        {"\"1F0\"", 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ps_action a;
        size_t col = 12345;
        int rc = ps_action_parse(cases[i].text, strlen(cases[i].text), &a, &col);
        ck_assert_msg(rc == PS_EPARSE, "%s: rc %d", cases[i].text, rc);
        ck_assert_msg(col == cases[i].col, "%s: column %zu, want %zu", cases[i].text, col,
                      cases[i].col);
        /* err_col is optional. */
        ck_assert_int_eq(ps_action_parse(cases[i].text, strlen(cases[i].text), &a, NULL),
                         PS_EPARSE);
    }
}
END_TEST

START_TEST(csv_parse_null_args)
{
    ps_action a;
    ck_assert_int_eq(ps_action_parse("1F0", 3, NULL, NULL), PS_EINVAL);
    ck_assert_int_eq(ps_action_parse(NULL, 3, &a, NULL), PS_EINVAL);
}
END_TEST

/* ---- formatting --------------------------------------------------------------------------- */

static ps_action make(int kind, int stage, int mb, int bkind, int bstage, int bmb)
{
    ps_action a;
    memset(&a, 0, sizeof a);
    a.kind = (uint8_t)kind;
    a.stage = stage;
    a.mb = mb;
    a.bkind = (uint8_t)bkind;
    a.bstage = bstage;
    a.bmb = bmb;
    return a;
}

START_TEST(csv_format_strings)
{
    static const struct {
        int kind, stage, mb, bkind, bstage, bmb;
        const char *want;
    } cases[] = {
        {PS_F, 2, 3, 0, 0, 0, "2F3"},
        {PS_I, 2, 1, 0, 0, 0, "2I1"},
        {PS_W, 0, 3, 0, 0, 0, "0W3"},
        {PS_B, 0, 3, 0, 0, 0, "0B3"},
        {PS_SEND_F, 0, 1, 0, 1, 1, "0SEND_F1"},
        {PS_RECV_F, 1, 1, 0, 0, 1, "1RECV_F1"},
        {PS_SEND_B, 1, 0, 0, 0, 0, "1SEND_B0"},
        {PS_RECV_B, 2, 0, 0, 3, 0, "2RECV_B0"},
        {PS_FB, 0, 7, PS_B, 7, 3, "(0F7;7B3)OVERLAP_F_B"},
        {PS_FB, 4, 4, PS_I, 3, 0, "(4F4;3I0)OVERLAP_F_B"},
        {PS_F, 2147483647, 2147483647, 0, 0, 0, "2147483647F2147483647"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64];
        ps_action a = make(cases[i].kind, cases[i].stage, cases[i].mb, cases[i].bkind,
                           cases[i].bstage, cases[i].bmb);
        int n = ps_action_format(&a, buf, sizeof buf);
        ck_assert_str_eq(buf, cases[i].want);
        ck_assert_int_eq(n, (int)strlen(cases[i].want));
        ps__action_str(&a, buf, sizeof buf);
        ck_assert_str_eq(buf, cases[i].want);
    }
}
END_TEST

START_TEST(csv_format_truncates)
{
    char buf[8];
    ps_action fb = make(PS_FB, 0, 7, PS_B, 7, 3); /* "(0F7;7B3)OVERLAP_F_B": 20 bytes */
    ck_assert_int_eq(ps_action_format(&fb, NULL, 0), 20);
    memset(buf, 'x', sizeof buf);
    ck_assert_int_eq(ps_action_format(&fb, buf, 0), 20);
    ck_assert_int_eq(buf[0], 'x'); /* n == 0 writes nothing */
    ck_assert_int_eq(ps_action_format(&fb, buf, sizeof buf), 20);
    ck_assert_str_eq(buf, "(0F7;7B");
    ck_assert_int_eq(ps_action_format(&fb, buf, 1), 20);
    ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(csv_format_errors)
{
    char buf[64];
    ps_action a = make(PS_F, 0, 0, 0, 0, 0);
    ck_assert_int_eq(ps_action_format(NULL, buf, sizeof buf), PS_EINVAL);
    ck_assert_int_eq(ps_action_format(&a, NULL, sizeof buf), PS_EINVAL);
    a.kind = PS_KIND_COUNT;
    ck_assert_int_eq(ps_action_format(&a, buf, sizeof buf), PS_EINVAL);
    a = make(PS_F, -1, 0, 0, 0, 0);
    ck_assert_int_eq(ps_action_format(&a, buf, sizeof buf), PS_EINVAL);
    a = make(PS_W, 0, -3, 0, 0, 0);
    ck_assert_int_eq(ps_action_format(&a, buf, sizeof buf), PS_EINVAL);
    a = make(PS_FB, 0, 1, PS_W, 1, 0); /* a fused pair's backward must be B or I */
    ck_assert_int_eq(ps_action_format(&a, buf, sizeof buf), PS_EINVAL);
    a = make(PS_FB, 0, 1, PS_B, -1, 0);
    ck_assert_int_eq(ps_action_format(&a, buf, sizeof buf), PS_EINVAL);
    /* The internal helper never fails: it says the action is invalid. */
    buf[0] = '\0';
    ps__action_str(&a, buf, sizeof buf);
    ck_assert_uint_gt(strlen(buf), 0);
    ps__action_str(&a, buf, 0);
}
END_TEST

START_TEST(csv_format_round_trip)
{
    static const int values[] = {0, 1, 9, 10, 4095, 65535, 1048575, 2147483647};
    const size_t nv = sizeof values / sizeof values[0];
    for (int kind = 0; kind < PS_KIND_COUNT; kind++) {
        for (size_t i = 0; i < nv; i++) {
            for (size_t j = 0; j < nv; j++) {
                int comm = kind >= PS_SEND_F;
                int bkind = kind == PS_FB ? ((i + j) % 2 ? PS_I : PS_B) : 0;
                int bstage = kind == PS_FB ? values[nv - 1 - i] : 0;
                int bmb = kind == PS_FB ? values[nv - 1 - j] : 0;
                ps_action a = make(kind, values[i], values[j], bkind, bstage, bmb), b;
                char buf[64];
                int n = ps_action_format(&a, buf, sizeof buf);
                ck_assert_int_gt(n, 0);
                ck_assert_int_eq(ps_action_parse(buf, (size_t)n, &b, NULL), 0);
                ck_assert_int_eq(b.kind, kind);
                ck_assert_int_eq(b.stage, values[i]);
                ck_assert_int_eq(b.mb, values[j]);
                ck_assert_int_eq(b.bkind, bkind);
                /* Comm strings carry no peer: it parses back as -1, bmb = mb. */
                ck_assert_int_eq(b.bstage, comm ? -1 : bstage);
                ck_assert_int_eq(b.bmb, comm ? values[j] : bmb);
            }
        }
    }
}
END_TEST

/* ---- loading the PyTorch artifacts --------------------------------------------------------- */

START_TEST(csv_load_zb1p_artifact)
{
    size_t len;
    char *text = read_data(ZB1P_CSV, &len);
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, 0), 0);
    ck_assert_str_eq(ps_schedule_last_error(s), "");
    ck_assert_str_eq(ps_schedule_family(s), "custom");
    ck_assert_int_eq(ps_schedule_pp(s), 2);
    ck_assert_int_eq(ps_schedule_num_stages(s), 4);
    ck_assert_int_eq(ps_schedule_microbatches(s), 8);
    ck_assert_int_eq(ps_schedule_vpp(s), 2);
    ck_assert_int_eq(ps_schedule_param_copies(s), 1);
    ck_assert_int_eq(ps_schedule_group_size(s), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 0);
    static const int place[] = {0, 1, 0, 1};
    for (int st = 0; st < 4; st++)
        ck_assert_int_eq(ps_schedule_stage_rank(s, st), place[st]);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 4), -1);

    long total = 0;
    for (int r = 0; r < 2; r++) {
        long want = count_cells(text, len, r, NULL);
        ck_assert_uint_eq(ps_schedule_rank_length(s, r), (size_t)want);
        total += want;
    }
    /* F, I and W for each of 4 stages x 8 micro-batches. */
    ck_assert_int_eq(total, 3 * 4 * 8);
    ck_assert_uint_eq(ps_schedule_total_actions(s), (size_t)total);

    /* Row 0 opens "0F0,0F1,2F0,,2F1,2I0"; row 1 opens with an idle cell, then "1F0,1F1". */
    const ps_action *a0 = ps_schedule_rank_actions(s, 0);
    assert_action(&a0[0], PS_F, 0, 0);
    assert_action(&a0[1], PS_F, 0, 1);
    assert_action(&a0[2], PS_F, 2, 0);
    assert_action(&a0[3], PS_F, 2, 1);
    assert_action(&a0[4], PS_I, 2, 0);
    ck_assert_int_eq(a0[0].bstage, 0);
    ck_assert_int_eq(a0[0].bmb, 0);
    const ps_action *a1 = ps_schedule_rank_actions(s, 1);
    assert_action(&a1[0], PS_F, 1, 0);
    assert_action(&a1[1], PS_F, 1, 1);
    /* Row 1 ends "...,1I7,1W6,1W7". */
    size_t n1 = ps_schedule_rank_length(s, 1);
    assert_action(&a1[n1 - 3], PS_I, 1, 7);
    assert_action(&a1[n1 - 2], PS_W, 1, 6);
    assert_action(&a1[n1 - 1], PS_W, 1, 7);

    /* One path through the four stages, taken by all eight micro-batches. */
    const int32_t *path;
    int n, mb0, mbn;
    ck_assert_int_eq(ps_schedule_num_paths(s), 1);
    ck_assert_int_eq(ps_schedule_path(s, 0, &path, &n, &mb0, &mbn), 0);
    ck_assert_int_eq(n, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(path[i], i);
    ck_assert_int_eq(mb0, 0);
    ck_assert_int_eq(mbn, 8);

    /* The explicit format reads the same table the same way. */
    ck_assert_int_eq(ps_schedule_load_csv(s, text, len, PS_CSV_COMPUTE_ONLY, 0), 0);
    ck_assert_uint_eq(ps_schedule_total_actions(s), (size_t)total);
    ps_schedule_free(s);
    free(text);
}
END_TEST

START_TEST(csv_load_dualpipev_artifact)
{
    size_t len;
    char *text = read_data(DUALPIPEV_CSV, &len);
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_pp(s), 4);
    ck_assert_int_eq(ps_schedule_num_stages(s), 8);
    ck_assert_int_eq(ps_schedule_microbatches(s), 10);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 0);
    static const int place[] = {0, 1, 2, 3, 3, 2, 1, 0};
    for (int st = 0; st < 8; st++)
        ck_assert_int_eq(ps_schedule_stage_rank(s, st), place[st]);
    for (int r = 0; r < 4; r++) {
        size_t n = ps_schedule_rank_length(s, r);
        ck_assert_uint_eq(n, (size_t)count_cells(text, len, r, NULL));
        long fused = 0;
        const ps_action *a = ps_schedule_rank_actions(s, r);
        for (size_t i = 0; i < n; i++)
            fused += a[i].kind == PS_FB;
        ck_assert_int_eq(fused, count_cells(text, len, r, "OVERLAP_F_B"));
    }
    /* Row 0, cells 18 and 19 (1-based): "(0F7;7B3)OVERLAP_F_B,(7F4;0B0)OVERLAP_F_B". */
    const ps_action *a0 = ps_schedule_rank_actions(s, 0);
    assert_action(&a0[16], PS_F, 7, 3);
    ck_assert_int_eq(a0[17].kind, PS_FB);
    ck_assert_int_eq(a0[17].stage, 0);
    ck_assert_int_eq(a0[17].mb, 7);
    ck_assert_int_eq(a0[17].bkind, PS_B);
    ck_assert_int_eq(a0[17].bstage, 7);
    ck_assert_int_eq(a0[17].bmb, 3);
    ck_assert_int_eq(a0[18].kind, PS_FB);
    ck_assert_int_eq(a0[18].stage, 7);
    ck_assert_int_eq(a0[18].mb, 4);
    ck_assert_int_eq(a0[18].bstage, 0);
    ck_assert_int_eq(a0[18].bmb, 0);
    ps_schedule_free(s);
    free(text);
}
END_TEST

/* ---- text layout: line endings, blanks, bounds --------------------------------------------- */

/* The 2-rank table "0F0,0F1 / 1F0,1F1" written in several ways. */
static void check_two_by_two(const char *text, size_t len)
{
    ps_schedule *s = new_schedule();
    ck_assert_msg(ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, 0) == 0, "%s",
                  ps_schedule_last_error(s));
    ck_assert_int_eq(ps_schedule_pp(s), 2);
    ck_assert_int_eq(ps_schedule_num_stages(s), 2);
    ck_assert_int_eq(ps_schedule_microbatches(s), 2);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 0), 0);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 1), 1);
    for (int r = 0; r < 2; r++) {
        const ps_action *a = ps_schedule_rank_actions(s, r);
        ck_assert_uint_eq(ps_schedule_rank_length(s, r), 2);
        assert_action(&a[0], PS_F, r, 0);
        assert_action(&a[1], PS_F, r, 1);
    }
    ps_schedule_free(s);
}

START_TEST(csv_load_lf)
{
    const char *t = "0F0,0F1\n1F0,1F1\n";
    check_two_by_two(t, strlen(t));
}
END_TEST

START_TEST(csv_load_crlf)
{
    const char *t = "0F0,0F1\r\n1F0,1F1\r\n";
    check_two_by_two(t, strlen(t));
    t = "0F0,0F1\r\n1F0,1F1";
    check_two_by_two(t, strlen(t));
}
END_TEST

START_TEST(csv_load_no_trailing_newline)
{
    const char *t = "0F0,0F1\n1F0,1F1";
    check_two_by_two(t, strlen(t));
}
END_TEST

START_TEST(csv_load_blank_final_line)
{
    const char *t = "0F0,0F1\n1F0,1F1\n\n";
    check_two_by_two(t, strlen(t));
    t = "0F0,0F1\r\n1F0,1F1\r\n \t\r\n";
    check_two_by_two(t, strlen(t));
}
END_TEST

START_TEST(csv_load_blank_cells)
{
    const char *t = ",0F0,, ,0F1,\t\n1F0,,,1F1,,\n";
    check_two_by_two(t, strlen(t));
    t = " 0F0 ,\t0F1\n1F0 , 1F1 \n";
    check_two_by_two(t, strlen(t));
}
END_TEST

START_TEST(csv_load_not_nul_terminated)
{
    /* Only the first len bytes are read: an exact-size heap copy lets ASan and valgrind catch
     * a read past the end. */
    const char *src = "0F0,0F1\n1F0,1F1";
    char *t = malloc(15);
    ck_assert_ptr_nonnull(t);
    memcpy(t, src, 15);
    check_two_by_two(t, 15);
    free(t);
    /* What follows len would be an error. */
    check_two_by_two("0F0,0F1\n1F0,1F1xx", 15);
}
END_TEST

START_TEST(csv_load_given_microbatches)
{
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(load_str(s, "0F0,0F1\n1F0,1F1\n", PS_CSV_AUTO, 5), 0);
    ck_assert_int_eq(ps_schedule_microbatches(s), 5);
    int mb0, mbn;
    ck_assert_int_eq(ps_schedule_path(s, 0, NULL, NULL, &mb0, &mbn), 0);
    ck_assert_int_eq(mbn, 5);
    /* m equal to the largest index + 1 is accepted. */
    ck_assert_int_eq(load_str(s, "0F0,0F1\n1F0,1F1\n", PS_CSV_AUTO, 2), 0);
    ck_assert_int_eq(ps_schedule_microbatches(s), 2);
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_load_idle_middle_row)
{
    /* A blank row before the last one is a rank without actions (only trailing ones drop). */
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(load_str(s, "0F0,0B0\n\n1F0,1B0\n", PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_pp(s), 3);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 0), 2);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 1), 0);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 2), 2);
    ck_assert_int_eq(ps_schedule_stage_rank(s, 1), 2);
    ps_schedule_free(s);
}
END_TEST

/* ---- communication actions ----------------------------------------------------------------- */

/* Rank 0 runs stage 0, rank 1 stage 1: one micro-batch's forward and backward with transfers. */
static const char comm_table[] = "0F0,0SEND_F0,0RECV_B0,0B0\n"
                                 "1RECV_F0,1F0,1B0,1SEND_B0\n";

START_TEST(csv_comms_lowered)
{
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(load_str(s, comm_table, PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 1);
    ck_assert_int_eq(ps_schedule_pp(s), 2);
    ck_assert_int_eq(ps_schedule_num_stages(s), 2);
    ck_assert_int_eq(ps_schedule_microbatches(s), 1);

    /* Compute lists: the F and B cells only. */
    const ps_action *c0 = ps_schedule_rank_actions(s, 0), *c1 = ps_schedule_rank_actions(s, 1);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 0), 2);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 1), 2);
    assert_action(&c0[0], PS_F, 0, 0);
    assert_action(&c0[1], PS_B, 0, 0);
    assert_action(&c1[0], PS_F, 1, 0);
    assert_action(&c1[1], PS_B, 1, 0);

    /* Lowered lists: every cell in file order, peers filled in. */
    ck_assert_uint_eq(ps_schedule_lowered_length(s, 0), 4);
    ck_assert_uint_eq(ps_schedule_lowered_length(s, 1), 4);
    const ps_action *l0 = ps_schedule_lowered_actions(s, 0);
    const ps_action *l1 = ps_schedule_lowered_actions(s, 1);
    assert_action(&l0[0], PS_F, 0, 0);
    assert_action(&l0[1], PS_SEND_F, 0, 0);
    ck_assert_int_eq(l0[1].bstage, 1); /* forward data goes to the next stage */
    ck_assert_int_eq(l0[1].bmb, 0);
    assert_action(&l0[2], PS_RECV_B, 0, 0);
    ck_assert_int_eq(l0[2].bstage, 1); /* gradients come from the next stage */
    assert_action(&l0[3], PS_B, 0, 0);
    assert_action(&l1[0], PS_RECV_F, 1, 0);
    ck_assert_int_eq(l1[0].bstage, 0);
    assert_action(&l1[1], PS_F, 1, 0);
    assert_action(&l1[2], PS_B, 1, 0);
    assert_action(&l1[3], PS_SEND_B, 1, 0);
    ck_assert_int_eq(l1[3].bstage, 0);

    ck_assert_int_eq(load_str(s, comm_table, PS_CSV_COMPUTE_COMMS, 0), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 1);
    ck_assert_uint_eq(ps_schedule_lowered_length(s, 1), 4);

    /* Reloading a compute-only table drops the lowered lists. */
    ck_assert_int_eq(load_str(s, "0F0,0B0\n1F0,1B0\n", PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 0);
    ck_assert_uint_eq(ps_schedule_lowered_length(s, 0), 0);
    ck_assert_ptr_null(ps_schedule_lowered_actions(s, 0));
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_comms_explicit_without_comms)
{
    /* A compute_comms table may need no transfer (one rank): its lowered lists are its cells. */
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(load_str(s, "0F0,1F0,1B0,0B0\n", PS_CSV_COMPUTE_COMMS, 0), 0);
    ck_assert_int_eq(ps_schedule_is_lowered(s), 1);
    ck_assert_uint_eq(ps_schedule_rank_length(s, 0), 4);
    ck_assert_uint_eq(ps_schedule_lowered_length(s, 0), 4);
    assert_action(&ps_schedule_lowered_actions(s, 0)[1], PS_F, 1, 0);
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_comms_in_compute_only)
{
    /* "1RECV_F0" opens line 2. */
    assert_load_fails(comm_table, PS_CSV_COMPUTE_ONLY, 0, PS_EPARSE, "line 1, column 5");
    assert_load_fails("0F0,0B0\n1RECV_F0,1F0,1B0\n", PS_CSV_COMPUTE_ONLY, 0, PS_EPARSE,
                      "line 2, column 1");
}
END_TEST

START_TEST(csv_comms_without_peer)
{
    /* Stage 0 has no previous stage, stage 1 (the last) no next one. */
    assert_load_fails("0F0,0RECV_F0\n1F0\n", PS_CSV_AUTO, 0, PS_EINVALID, "line 1, column 5");
    assert_load_fails("0F0\n1F0,1SEND_F0\n", PS_CSV_AUTO, 0, PS_EINVALID, "line 2, column 5");
    assert_load_fails("0SEND_B0,0F0\n1F0\n", PS_CSV_AUTO, 0, PS_EINVALID, "line 1, column 1");
    assert_load_fails("0F0\n1F0,1RECV_B0\n", PS_CSV_AUTO, 0, PS_EINVALID, "line 2, column 5");
}
END_TEST

/* ---- errors --------------------------------------------------------------------------------- */

START_TEST(csv_error_bad_cell_position)
{
    /* Line 2 is "1F0,F1": the stage is missing at the cell's first byte, column 5. */
    assert_load_fails("0F0,0F1\n1F0,F1\n", PS_CSV_AUTO, 0, PS_EPARSE, "line 2, column 5");
    assert_load_fails("0F0,0F1\n1F0,F1\n", PS_CSV_AUTO, 0, PS_EPARSE, "in cell \"F1\"");
    /* "1F2x": the 'x' is the 4th byte of a cell that starts in column 5. */
    assert_load_fails("0F0\r\n1F0,1F2x\r\n", PS_CSV_AUTO, 0, PS_EPARSE, "line 2, column 8");
    /* Blanks before the cell count in the column: " 1X2" starts at 5, 'X' is column 7. */
    assert_load_fails("0F0\n1F0, 1X2\n", PS_CSV_AUTO, 0, PS_EPARSE, "line 2, column 7");
    assert_load_fails("0F0\n1F0, 1X2\n", PS_CSV_AUTO, 0, PS_EPARSE, "in cell \"1X2\"");
    assert_load_fails("0F0,,(0F1;1F2)OVERLAP_F_B\n", PS_CSV_AUTO, 0, PS_EPARSE,
                      "line 1, column 11");
    assert_load_fails("0F0,1UNSHARD\n", PS_CSV_AUTO, 0, PS_EPARSE, "line 1, column 6");
    assert_load_fails("0F0\n1F0\n\n2F", PS_CSV_AUTO, 0, PS_EPARSE, "line 4, column 3");
    /* Unprintable bytes are escaped in the quoted cell. */
    const char nul_cell[] = "0F0,1F\0001\n";
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(s, nul_cell, sizeof nul_cell - 1, PS_CSV_AUTO, 0),
                     PS_EPARSE);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "line 1, column 7"));
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "\"1F\\x001\""));
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_error_stage_on_two_ranks)
{
    /* Stage 1 is in row 0 (line 1, column 5) and again in row 1 (line 2, column 1). */
    const char *t = "0F0,1F0\n1F1\n";
    assert_load_fails(t, PS_CSV_AUTO, 0, PS_EINVALID, "line 2, column 1");
    assert_load_fails(t, PS_CSV_AUTO, 0, PS_EINVALID, "rank 1");
    assert_load_fails(t, PS_CSV_AUTO, 0, PS_EINVALID, "rank 0 (line 1, column 5)");
    /* The backward half of a fused cell places its stage too. */
    assert_load_fails("0F0,(0F1;3B0)OVERLAP_F_B\n1F0\n2F0,3F0\n", PS_CSV_AUTO, 0, PS_EINVALID,
                      "line 3, column 5");
    assert_load_fails("0F0,(0F1;3B0)OVERLAP_F_B\n1F0\n2F0,3F0\n", PS_CSV_AUTO, 0, PS_EINVALID,
                      "(line 1, column 5)");
}
END_TEST

START_TEST(csv_error_missing_stage)
{
    assert_load_fails("0F0,0B0\n2F0,2B0\n", PS_CSV_AUTO, 0, PS_EINVALID, "stage 1 ");
}
END_TEST

START_TEST(csv_error_mb_beyond_m)
{
    /* With m = 2, "1F2" (line 2, column 5) names micro-batch 2. */
    assert_load_fails("0F0,0F1\n1F0,1F2\n", PS_CSV_AUTO, 2, PS_EINVALID, "line 2, column 5");
    assert_load_fails("0F0,0F1\n1F0,1F2\n", PS_CSV_AUTO, 2, PS_EINVALID, "micro-batch 2");
    /* The backward half of a fused cell is checked as well. */
    assert_load_fails("(0F0;1B5)OVERLAP_F_B,1F0\n", PS_CSV_AUTO, 4, PS_EINVALID,
                      "line 1, column 1");
}
END_TEST

START_TEST(csv_error_empty)
{
    assert_load_fails("", PS_CSV_AUTO, 0, PS_EPARSE, "empty");
    assert_load_fails("\n \n\r\n", PS_CSV_AUTO, 0, PS_EPARSE, "empty");
    assert_load_fails(",,\n , \n", PS_CSV_AUTO, 0, PS_EINVALID, "no actions");
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(s, NULL, 0, PS_CSV_AUTO, 0), PS_EPARSE);
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_error_limits)
{
    char big[64];
    snprintf(big, sizeof big, "0F0\n%dF0\n", PS_MAX_STAGES);
    assert_load_fails(big, PS_CSV_AUTO, 0, PS_ERANGE, "line 2, column 1");
    snprintf(big, sizeof big, "0F%d\n", PS_MAX_MICROBATCHES);
    assert_load_fails(big, PS_CSV_AUTO, 0, PS_ERANGE, "line 1, column 1");
    snprintf(big, sizeof big, "0F%d\n", PS_MAX_MICROBATCHES - 1);
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(load_str(s, big, PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_microbatches(s), PS_MAX_MICROBATCHES);
    ck_assert_int_eq(load_str(s, "0F0\n", PS_CSV_AUTO, PS_MAX_MICROBATCHES + 1), PS_ERANGE);
    assert_empty(s);

    /* One row too many: PS_MAX_PP + 1 lines of "0F0". */
    size_t rows = PS_MAX_PP + 1, n = rows * 4;
    char *t = malloc(n);
    ck_assert_ptr_nonnull(t);
    for (size_t i = 0; i < rows; i++)
        memcpy(t + 4 * i, "0F0\n", 4);
    ck_assert_int_eq(ps_schedule_load_csv(s, t, n, PS_CSV_AUTO, 0), PS_ERANGE);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "line 4097"));
    assert_empty(s);

    /* Texts over 1 GiB are refused before a byte is read. */
    ck_assert_int_eq(ps_schedule_load_csv(s, t, ((size_t)1 << 30) + 1, PS_CSV_AUTO, 0), PS_ERANGE);
    assert_empty(s);
    free(t);
    ps_schedule_free(s);
}
END_TEST

START_TEST(csv_error_null_args)
{
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(NULL, "0F0\n", 4, PS_CSV_AUTO, 0), PS_EINVAL);
    ck_assert_int_eq(load_str(s, "0F0,0B0\n", PS_CSV_AUTO, 0), 0);
    ck_assert_int_eq(ps_schedule_load_csv(s, NULL, 4, PS_CSV_AUTO, 0), PS_EINVAL);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "NULL"));
    assert_empty(s);
    ck_assert_int_eq(ps_schedule_load_csv(s, "0F0\n", 4, (ps_csv_format)7, 0), PS_EINVAL);
    ck_assert_int_eq(ps_schedule_load_csv(s, "0F0\n", 4, PS_CSV_AUTO, -1), PS_EINVAL);
    ck_assert_ptr_nonnull(ps_schedule_last_error(NULL));
    ps_schedule_free(s);
    ps_schedule_free(NULL);
}
END_TEST

/* ---- allocation failures -------------------------------------------------------------------- */

/* Fails the Nth allocation for N = 1, 2, ... until the load succeeds; nothing may leak. */
static void check_alloc_failures(const char *text, size_t len, int lowered)
{
    int succeeded = 0;
    for (long n = 1; n < 200 && !succeeded; n++) {
        counting_alloc c = {0, n, 0, 0};
        ps_allocator al = counting_allocator(&c);
        ps_schedule *s = NULL;
        int rc = ps_schedule_new(&s, &al);
        if (rc == PS_ENOMEM) {
            ck_assert_ptr_null(s);
            ck_assert_int_eq(c.live, 0);
            continue;
        }
        ck_assert_int_eq(rc, 0);
        rc = ps_schedule_load_csv(s, text, len, PS_CSV_AUTO, 0);
        if (rc == 0) {
            long want = count_cells(text, len, 0, NULL) - (lowered ? 2 : 0);
            succeeded = 1;
            ck_assert_int_eq(ps_schedule_is_lowered(s), lowered);
            ck_assert_uint_eq(ps_schedule_rank_length(s, 0), (size_t)want);
        } else {
            ck_assert_int_eq(rc, PS_ENOMEM);
            ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "out of memory"));
            assert_empty(s);
            /* Only the handle itself is left. */
            ck_assert_int_eq(c.live, 1);
        }
        ps_schedule_free(s);
        ck_assert_int_eq(c.live, 0);
        ck_assert_uint_eq(c.bytes, 0);
    }
    ck_assert(succeeded);
}

/* A load that fails after its fill pass (a stage found on a second rank) frees its per-rank
 * counts with the size they were allocated with: the counting allocator checks every osize. */
START_TEST(csv_fail_after_fill_frees_exact_sizes)
{
    counting_alloc c = {0, 0, 0, 0};
    ps_allocator al = counting_allocator(&c);
    ps_schedule *s = NULL;
    ck_assert_int_eq(ps_schedule_new(&s, &al), 0);
    const char *text = "0F0,1F0\n1F1\n";
    ck_assert_int_eq(ps_schedule_load_csv(s, text, strlen(text), PS_CSV_AUTO, 0), PS_EINVALID);
    ck_assert_ptr_nonnull(strstr(ps_schedule_last_error(s), "stage 1 is on rank 1 here"));
    ps_schedule_free(s);
    ck_assert_int_eq(c.live, 0);
    ck_assert_uint_eq(c.bytes, 0);
}
END_TEST

/* A sparse table (every stage 0..65535 once, one micro-batch 7999) would cost the engine a
 * state per (stage, micro-batch) pair, 1.5 GB for 513 KB of text: it is refused at load with
 * the limit named, and a table just as big but dense enough still loads. */
START_TEST(csv_sparse_table_refused)
{
    size_t cap = 65536 * 12 + 64, n = 0;
    char *text = malloc(cap);
    ck_assert_ptr_nonnull(text);
    for (int st = 0; st < 65536; st++)
        n += (size_t)snprintf(text + n, cap - n, "%dF0,", st);
    n += (size_t)snprintf(text + n, cap - n, "0F7999\n");
    ps_schedule *s = new_schedule();
    ck_assert_int_eq(ps_schedule_load_csv(s, text, n, PS_CSV_AUTO, 0), PS_ERANGE);
    ck_assert_str_eq(ps_schedule_last_error(s),
                     "65536 stages x 8000 micro-batches = 524288000 pairs, but the table holds "
                     "65537 compute actions: a schedule runs a forward of every micro-batch on "
                     "every stage of its path, and the limit is 4 x compute actions + 1048576 = "
                     "1310724 pairs");
    /* -m raises the pairs the same way */
    const char *two = "0F0,0B0\n1F0,1B0\n";
    ck_assert_int_eq(ps_schedule_load_csv(s, two, strlen(two), PS_CSV_AUTO, 600000), PS_ERANGE);
    ck_assert_int_eq(ps_schedule_load_csv(s, two, strlen(two), PS_CSV_AUTO, 500000), 0);
    ps_schedule_free(s);
    free(text);
}
END_TEST

START_TEST(csv_alloc_failure)
{
    size_t len;
    char *text = read_data(DUALPIPEV_CSV, &len);
    check_alloc_failures(text, len, 0);
    free(text);
    /* Row 0 of comm_table holds two transfers besides its two compute cells. */
    check_alloc_failures(comm_table, strlen(comm_table), 1);
}
END_TEST

/* ---- suite ---------------------------------------------------------------------------------- */

static Suite *csv_suite(void)
{
    Suite *su = suite_create("csv");
    TCase *tc;

    tc = tcase_create("kind");
    tcase_add_test(tc, csv_kind_names);
    suite_add_tcase(su, tc);

    tc = tcase_create("parse");
    tcase_add_test(tc, csv_parse_compute);
    tcase_add_test(tc, csv_parse_comm);
    tcase_add_test(tc, csv_parse_legacy_bw);
    tcase_add_test(tc, csv_parse_fused);
    tcase_add_test(tc, csv_parse_blanks);
    tcase_add_test(tc, csv_parse_length_bounded);
    tcase_add_test(tc, csv_parse_malformed);
    tcase_add_test(tc, csv_parse_null_args);
    suite_add_tcase(su, tc);

    tc = tcase_create("format");
    tcase_add_test(tc, csv_format_strings);
    tcase_add_test(tc, csv_format_truncates);
    tcase_add_test(tc, csv_format_errors);
    tcase_add_test(tc, csv_format_round_trip);
    suite_add_tcase(su, tc);

    tc = tcase_create("artifacts");
    tcase_add_test(tc, csv_load_zb1p_artifact);
    tcase_add_test(tc, csv_load_dualpipev_artifact);
    suite_add_tcase(su, tc);

    tc = tcase_create("layout");
    tcase_add_test(tc, csv_load_lf);
    tcase_add_test(tc, csv_load_crlf);
    tcase_add_test(tc, csv_load_no_trailing_newline);
    tcase_add_test(tc, csv_load_blank_final_line);
    tcase_add_test(tc, csv_load_blank_cells);
    tcase_add_test(tc, csv_load_not_nul_terminated);
    tcase_add_test(tc, csv_load_given_microbatches);
    tcase_add_test(tc, csv_load_idle_middle_row);
    suite_add_tcase(su, tc);

    tc = tcase_create("comms");
    tcase_add_test(tc, csv_comms_lowered);
    tcase_add_test(tc, csv_comms_explicit_without_comms);
    tcase_add_test(tc, csv_comms_in_compute_only);
    tcase_add_test(tc, csv_comms_without_peer);
    suite_add_tcase(su, tc);

    tc = tcase_create("errors");
    tcase_add_test(tc, csv_error_bad_cell_position);
    tcase_add_test(tc, csv_error_stage_on_two_ranks);
    tcase_add_test(tc, csv_error_missing_stage);
    tcase_add_test(tc, csv_error_mb_beyond_m);
    tcase_add_test(tc, csv_error_empty);
    tcase_add_test(tc, csv_error_limits);
    tcase_add_test(tc, csv_error_null_args);
    suite_add_tcase(su, tc);

    tc = tcase_create("alloc");
    tcase_add_test(tc, csv_alloc_failure);
    tcase_add_test(tc, csv_sparse_table_refused);
    tcase_add_test(tc, csv_fail_after_fill_frees_exact_sizes);
    suite_add_tcase(su, tc);
    return su;
}

int main(void)
{
    SRunner *sr = srunner_create(csv_suite());
    srunner_run_all(sr, CK_ENV);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
