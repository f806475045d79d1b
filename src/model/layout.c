/*
 * The layer partition: which decoder, embedding, MTP and loss layers each virtual stage holds,
 * read from Megatron-LM's --pipeline-model-parallel-layout string or made by an even split
 * (docs/layout.md).
 *
 * The string is read the way Megatron-LM reads it
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py, parse_str_to_list and
 * validate_layer_layout): commas are dropped wherever they stand, "x*N" repeats one character
 * (a symbol or the separator '|'), "(...)*N" repeats a group, '|' ends a stage, and a stage
 * may be empty. Megatron unrolls the string with two regular expressions; here two passes
 * read it in place instead, so nothing is allocated:
 *
 *   scan   checks the syntax and sums, bottom-up per group, the length of the unrolled layout
 *          and its separators; the length is capped (LAYOUT_MAX_UNROLLED) before anything is
 *          walked, so an absurd count costs the time of reading it;
 *   walk   visits the unrolled layout, re-reading a group's text once per repetition, and
 *          adds each symbol to its stage, checking the places Megatron requires.
 *
 * Where we differ from Megatron: a count of 0 is refused (Megatron drops the item), groups may
 * nest (Megatron's regular expression cannot, and garbles them), and the embedding must be on
 * stage 0 and the loss on the last stage (Megatron only checks that they are the first and
 * last layers, but builds them on the first and last virtual stage).
 *
 * Without a string, the even split is Megatron's too, first/last included: they count the
 * layers of the first/last pipeline RANK, which splits them evenly over its vpp chunks.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <pipesched/model.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* The unrolled layout may hold at most this many symbols, separators and commas. */
#define LAYOUT_MAX_UNROLLED 1000000
/* A count has at most this many digits (the limit above has 7). */
#define LAYOUT_MAX_DIGITS 7
/* Groups nest at most this deep. */
#define LAYOUT_MAX_DEPTH 16

static int is_symbol(char c)
{
    return c == 'E' || c == 't' || c == 'm' || c == 'L';
}

static size_t skip_commas(const char *s, size_t i)
{
    while (s[i] == ',')
        i++;
    return i;
}

/*
 * Reads the count of a repetition whose '*' is at s[star]: digits, with commas dropped among
 * them as Megatron drops them. Sets *count and *next (the index after the count). The count
 * is in [1, LAYOUT_MAX_UNROLLED]; the error names the column of the '*'.
 */
static int read_count(const char *s, size_t star, int64_t *count, size_t *next, char *err,
                      size_t errlen)
{
    size_t i = skip_commas(s, star + 1);
    int64_t v = 0;
    int digits = 0;
    while (s[i] >= '0' && s[i] <= '9') {
        if (++digits > LAYOUT_MAX_DIGITS)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "layout: the count at column %zu has more than %d digits", star + 1,
                                LAYOUT_MAX_DIGITS);
        v = v * 10 + (s[i] - '0');
        i = skip_commas(s, i + 1);
    }
    if (digits == 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "layout: '*' at column %zu needs a count",
                            star + 1);
    if (v == 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: the count 0 at column %zu; a repetition is at least 1",
                            star + 1);
    if (v > LAYOUT_MAX_UNROLLED)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: the count %lld at column %zu exceeds %d", (long long)v,
                            star + 1, LAYOUT_MAX_UNROLLED);
    *count = v;
    *next = i;
    return 0;
}

/* ---- scan: the syntax, the unrolled length and the number of stages ------------------------ */

/* The unrolled length and separators of a group (or of the whole string) read so far. */
typedef struct scan_frame {
    int64_t unrolled;
    int64_t separators;
    size_t open;   /* index of its '(' */
    int has_items; /* 1 once it holds a symbol, a separator or a group (commas do not count) */
} scan_frame;

/* Adds an item (unrolled length, separators) to frame f; refuses it past the cap. */
static int scan_add(scan_frame *f, int64_t unrolled, int64_t separators, size_t col, char *err,
                    size_t errlen)
{
    f->unrolled += unrolled;
    f->separators += separators;
    f->has_items = 1;
    if (f->unrolled > LAYOUT_MAX_UNROLLED)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: unrolled past %d symbols at column %zu (too many repetitions)",
                            LAYOUT_MAX_UNROLLED, col);
    return 0;
}

/*
 * One pass over the string: every character known, the parentheses balanced, each group
 * non-empty and followed by a count, each '*' after something it can repeat and with a count,
 * the unrolled layout within LAYOUT_MAX_UNROLLED. Sets *stages_found to the separators of the
 * unrolled layout plus one.
 */
static int scan_layout(const char *s, int64_t *stages_found, char *err, size_t errlen)
{
    scan_frame frames[LAYOUT_MAX_DEPTH + 1] = {{0, 0, 0, 0}};
    int depth = 0;
    size_t i = 0;
    int rc;
    while (s[i]) {
        char c = s[i];
        rc = 0;
        if (c == ',') {
            /* The walk reads a comma once per visit of its group: it counts, and keeps every
             * frame within the cap (so the products below cannot overflow). */
            if (++frames[depth].unrolled > LAYOUT_MAX_UNROLLED)
                return ps__seterr_n(
                    err, errlen, PS_ECONFIG,
                    "layout: unrolled past %d symbols at column %zu (too many repetitions)",
                    LAYOUT_MAX_UNROLLED, i + 1);
            i++;
        } else if (is_symbol(c) || c == '|' || c == ')') {
            int64_t unrolled = 1, separators = c == '|';
            if (c == ')') {
                if (depth == 0)
                    return ps__seterr_n(err, errlen, PS_ECONFIG,
                                        "layout: ')' at column %zu has no matching '('", i + 1);
                if (!frames[depth].has_items)
                    return ps__seterr_n(err, errlen, PS_ECONFIG,
                                        "layout: the group at column %zu is empty",
                                        frames[depth].open + 1);
                unrolled = frames[depth].unrolled;
                separators = frames[depth].separators;
                depth--;
            }
            size_t j = skip_commas(s, i + 1), next = i + 1;
            if (s[j] == '*') {
                int64_t count;
                rc = read_count(s, j, &count, &next, err, errlen);
                if (rc)
                    return rc;
                unrolled *= count; /* both <= LAYOUT_MAX_UNROLLED: at most 10^12 */
                separators *= count;
            } else if (c == ')') {
                return ps__seterr_n(err, errlen, PS_ECONFIG,
                                    "layout: the group closed at column %zu needs a count: (...)*N",
                                    i + 1);
            }
            /* The commas around the count are read once per visit of the item. */
            for (size_t k = i + 1; k < next; k++)
                unrolled += s[k] == ',';
            rc = scan_add(&frames[depth], unrolled, separators, i + 1, err, errlen);
            i = next;
        } else if (c == '(') {
            if (depth == LAYOUT_MAX_DEPTH)
                return ps__seterr_n(err, errlen, PS_ECONFIG,
                                    "layout: groups nest deeper than %d at column %zu",
                                    LAYOUT_MAX_DEPTH, i + 1);
            depth++;
            frames[depth] = (scan_frame){0, 0, i, 0};
            i++;
        } else if (c == '*') {
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "layout: '*' at column %zu repeats nothing (it follows a symbol, '|' "
                "or ')')",
                i + 1);
        } else if (c >= ' ' && c < 127) {
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "layout: unknown character '%c' at column %zu (E, t, m, L, |, (, ), *, "
                "comma)",
                c, i + 1);
        } else {
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "layout: unknown byte 0x%02x at column %zu",
                                (unsigned)(unsigned char)c, i + 1);
        }
        if (rc)
            return rc;
    }
    if (depth > 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "layout: '(' at column %zu is never closed",
                            frames[depth].open + 1);
    *stages_found = frames[0].separators + 1;
    return 0;
}

/* ---- walk: the symbols into their stages --------------------------------------------------- */

/* What the walk has seen so far. */
typedef struct walk_state {
    ps_stage_layers *out;
    int32_t stages;
    int32_t stage;      /* the stage being filled */
    int64_t decoders;   /* 't' so far */
    int64_t mtps;       /* 'm' so far */
    int64_t symbols;    /* symbols so far */
    int32_t mtp_stage;  /* the stage of the MTP layers, -1 before the first */
    int32_t loss_stage; /* the stage of L, -1 before it */
    int seen_embedding;
} walk_state;

/* Adds `count` copies of symbol or separator c (at column col) to the walk. */
static int walk_emit(walk_state *w, char c, int64_t count, size_t col, char *err, size_t errlen)
{
    if (c == '|') {
        /* The scan counted the separators: stage stays below w->stages. */
        w->stage += (int32_t)count;
        return 0;
    }
    ps_stage_layers *st = &w->out[w->stage];
    if (c == 'L' && w->loss_stage >= 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: a second L at column %zu (the loss appears once)", col);
    if (w->loss_stage >= 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: '%c' at column %zu comes after L (the loss is the last layer)",
                            c, col);
    switch (c) {
    case 'E':
        if (w->seen_embedding || count > 1)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "layout: a second E at column %zu (the embedding appears once)",
                                col);
        if (w->symbols > 0 || w->stage != 0)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "layout: E at column %zu must be the first layer of stage 0", col);
        w->seen_embedding = 1;
        st->embedding = 1;
        break;
    case 't':
        if (w->mtp_stage >= 0)
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "layout: 't' at column %zu comes after an MTP layer (decoder layers "
                "come first)",
                col);
        w->decoders += count;
        st->layers += (int32_t)count; /* count <= LAYOUT_MAX_UNROLLED */
        break;
    case 'm':
        if (w->mtp_stage >= 0 && w->mtp_stage != w->stage)
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "layout: 'm' at column %zu is in stage %d, but the MTP layers are in "
                "stage %d (all in one stage)",
                col, (int)w->stage, (int)w->mtp_stage);
        w->mtp_stage = w->stage;
        w->mtps += count;
        st->mtp += (int32_t)count;
        break;
    default: /* 'L' */
        if (count > 1)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "layout: a second L at column %zu (the loss appears once)", col);
        w->loss_stage = w->stage;
        st->loss = 1;
        break;
    }
    w->symbols += count;
    return 0;
}

/* A group being walked: where its text starts and the repetitions still to go (0: not yet
 * known, it is read at the ')'). */
typedef struct walk_frame {
    size_t body;
    int64_t remaining;
} walk_frame;

/*
 * Visits the unrolled layout of a string the scan accepted. A symbol's repetition is added at
 * once; a group's text is read once per repetition, which the scan's cap bounds (every
 * repetition of a group yields at least one symbol, separator or comma).
 */
static int walk_layout(const char *s, walk_state *w, char *err, size_t errlen)
{
    walk_frame frames[LAYOUT_MAX_DEPTH];
    int depth = 0;
    size_t i = 0;
    while (s[i]) {
        char c = s[i];
        int64_t count = 1;
        size_t next = i + 1, j = skip_commas(s, i + 1);
        if (c != ',' && c != '(' && s[j] == '*') {
            int rc = read_count(s, j, &count, &next, err, errlen);
            if (rc)
                return rc;
        }
        if (c == ',') {
            i++;
        } else if (c == '(') {
            frames[depth++] = (walk_frame){i + 1, 0};
            i++;
        } else if (c == ')') {
            walk_frame *f = &frames[depth - 1];
            if (f->remaining == 0)
                f->remaining = count;
            if (--f->remaining > 0) {
                i = f->body;
            } else {
                depth--;
                i = next;
            }
        } else {
            int rc = walk_emit(w, c, count, i + 1, err, errlen);
            if (rc)
                return rc;
            i = next;
        }
    }
    return 0;
}

/* The checks that need the whole layout: E and L present, L on the last stage, the counts. */
static int check_totals(const walk_state *w, int32_t layers, int32_t mtp, char *err, size_t errlen)
{
    if (!w->seen_embedding)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "layout: no E (the embedding) in the layout");
    if (w->loss_stage < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "layout: no L (the loss) in the layout");
    if (w->loss_stage != w->stages - 1)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: L is in stage %d; the loss is on the last stage (%d)",
                            (int)w->loss_stage, (int)(w->stages - 1));
    if (w->decoders != layers)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: %lld decoder layers (t), but the model has %d",
                            (long long)w->decoders, (int)layers);
    if (w->mtps != mtp)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layout: %lld MTP layers (m), but the model has %d", (long long)w->mtps,
                            (int)mtp);
    return 0;
}

static int split_layout(const char *layout, int32_t stages, int32_t layers, int32_t mtp,
                        ps_stage_layers *out, char *err, size_t errlen)
{
    int64_t found = 0;
    int rc = scan_layout(layout, &found, err, errlen);
    if (rc)
        return rc;
    if (found != stages)
        return ps__seterr_n(err, errlen, PS_ECONFIG, "layout: %lld stages, but the split has %d",
                            (long long)found, (int)stages);
    walk_state w = {out, stages, 0, 0, 0, 0, -1, -1, 0};
    rc = walk_layout(layout, &w, err, errlen);
    if (rc)
        return rc;
    return check_totals(&w, layers, mtp, err, errlen);
}

/* ---- the even split ------------------------------------------------------------------------ */

/*
 * Megatron's rule, by pipeline rank (megatron/core/transformer/transformer_config.py,
 * __post_init__, "Uneven PP"; transformer_block.py, get_num_layers_to_build;
 * transformer_layer.py, get_transformer_layer_offset): first / last (> 0) are the decoder
 * layers of the first / last pipeline rank, the layers left are split evenly over the ranks
 * between them, and every rank splits its layers evenly over its vpp chunks. Virtual stage
 * s = c * pp + r is chunk c of rank r, and the layers are numbered in stage order.
 * Sets rank_layers[0..2] to the layers of the first, a middle and the last rank.
 */
static int rank_counts(int32_t pp, int32_t vpp, int32_t layers, int32_t first, int32_t last,
                       int64_t rank_layers[3], char *err, size_t errlen)
{
    if (pp == 1) {
        /* One rank is both the first and the last: it holds every layer. */
        if ((first > 0 && first != layers) || (last > 0 && last != layers))
            return ps__seterr_n(
                err, errlen, PS_ECONFIG,
                "one pipeline rank holds all %d layers; first (%d) and last (%d) must be 0 or %d",
                (int)layers, (int)first, (int)last, (int)layers);
        if (layers % vpp != 0)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "%d layers do not divide evenly over %d stages (set first/last "
                                "stage layers or a layout)",
                                (int)layers, (int)vpp);
        rank_layers[0] = rank_layers[1] = rank_layers[2] = layers;
        return 0;
    }
    if (first == 0 && last == 0) {
        /* Megatron: num_layers % pp, then the rank's layers % vpp; together % (pp * vpp). */
        if (layers % ((int64_t)pp * vpp) != 0)
            return ps__seterr_n(err, errlen, PS_ECONFIG,
                                "%d layers do not divide evenly over %d stages (set first/last "
                                "stage layers or a layout)",
                                (int)layers, (int)(pp * vpp));
        rank_layers[0] = rank_layers[1] = rank_layers[2] = layers / pp;
        return 0;
    }
    /* Megatron's checks, in its order. */
    if (first > 0 && first % vpp != 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "first stage layers (%d) do not divide evenly over the %d virtual "
                            "stages of the first rank",
                            (int)first, (int)vpp);
    if (last > 0 && last % vpp != 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "last stage layers (%d) do not divide evenly over the %d virtual "
                            "stages of the last rank",
                            (int)last, (int)vpp);
    int64_t left = (int64_t)layers - first - last;
    int32_t middle = pp - (first > 0) - (last > 0);
    if (left < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "first (%d) and last (%d) stage layers exceed the %d layers",
                            (int)first, (int)last, (int)layers);
    if (middle == 0 && left != 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "first (%d) and last (%d) stage layers leave %lld of the %d layers "
                            "without a stage",
                            (int)first, (int)last, (long long)left, (int)layers);
    if (middle > 0 && left == 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "first (%d) and last (%d) stage layers leave no layer for the %d "
                            "middle ranks",
                            (int)first, (int)last, (int)middle);
    if (middle > 0 && left % middle != 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "%lld layers do not divide evenly over the %d middle ranks (set "
                            "first/last stage layers or a layout)",
                            (long long)left, (int)middle);
    int64_t per_middle = middle > 0 ? left / middle : 0;
    if (per_middle % vpp != 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "%lld layers per middle rank do not divide evenly over its %d "
                            "virtual stages",
                            (long long)per_middle, (int)vpp);
    rank_layers[0] = first > 0 ? first : per_middle;
    rank_layers[1] = per_middle;
    rank_layers[2] = last > 0 ? last : per_middle;
    return 0;
}

static int split_even(int32_t pp, int32_t vpp, int32_t layers, int32_t mtp, int32_t first,
                      int32_t last, ps_stage_layers *out, char *err, size_t errlen)
{
    int64_t rank_layers[3] = {0, 0, 0};
    int rc = rank_counts(pp, vpp, layers, first, last, rank_layers, err, errlen);
    if (rc)
        return rc;
    int32_t stages = pp * vpp;
    for (int32_t s = 0; s < stages; s++) {
        int32_t r = s % pp;
        int64_t n = r == 0 ? rank_layers[0] : r == pp - 1 ? rank_layers[2] : rank_layers[1];
        out[s].layers = (int32_t)(n / vpp); /* n <= layers, divisible by vpp */
    }
    out[0].embedding = 1;
    out[stages - 1].loss = 1;
    out[stages - 1].mtp = mtp;
    return 0;
}

/*
 * layout "balanced": the split closest to even when the layers do not divide. With S = pp.vpp
 * virtual stages, q = layers / S and r = layers mod S, every stage holds q decoder layers and r
 * of them one more: stages 1, 2, ... first (the stages between the embedding's and the
 * loss's, which carry neither), then stage 0; the last stage, with the output layer and the
 * loss, never takes one. When the layers divide evenly it is the even split. The MTP layers go
 * to the last stage, as in the even split (docs/layout.md).
 */
static void split_balanced(int32_t stages, int32_t layers, int32_t mtp, ps_stage_layers *out)
{
    for (int32_t s = 0; s < stages; s++)
        out[s].layers = ps_layout_balanced_count(layers, stages, s);
    out[0].embedding = 1;
    out[stages - 1].loss = 1;
    out[stages - 1].mtp = mtp;
}

int32_t ps_layout_balanced_count(int32_t layers, int32_t stages, int32_t s)
{
    if (stages < 1 || s < 0 || s >= stages || layers < 0)
        return 0;
    int32_t q = layers / stages, r = layers % stages;
    int extra = stages == 1 || (s >= 1 && s <= r && s < stages - 1) ||
                (s == 0 && r == stages - 1 && stages > 1);
    return q + (r > 0 && extra ? 1 : 0);
}

/* ---- the first/last-stage layouts "first", "last", "first-last" ---------------------------- */

int ps_layout_ends(const char *layout)
{
    if (!layout)
        return 0;
    if (!strcmp(layout, "first"))
        return PS_LAYOUT_FIRST;
    if (!strcmp(layout, "last"))
        return PS_LAYOUT_LAST;
    if (!strcmp(layout, "first-last"))
        return PS_LAYOUT_FIRST | PS_LAYOUT_LAST;
    return 0;
}

/*
 * The end rank(s) hold a layers per chunk and the `mid` middle ranks m each, with
 * ends.a + mid.m = layers / vpp (every rank splits its layers evenly over its chunks, so vpp
 * divides the layers). m > a is a.pp < layers / vpp, so a runs down from the largest such
 * count and stops at the first whose remainder divides over the middle ranks: the split
 * closest to even of this shape, within mid steps.
 */
int ps_layout_end_counts(int ends, int32_t pp, int32_t vpp, int32_t layers, int32_t *first,
                         int32_t *last)
{
    if (!first || !last || ends < 1 || ends > 3)
        return PS_EINVAL;
    *first = *last = 0;
    int n = ends == 3 ? 2 : 1;
    if (pp < n + 1 || vpp < 1 || layers < 1 || layers % vpp)
        return PS_ECONFIG;
    int64_t lv = layers / vpp, mid = pp - n;
    for (int64_t a = (lv - 1) / pp; a >= 1; a--)
        if ((lv - n * a) % mid == 0) {
            *first = ends & PS_LAYOUT_FIRST ? (int32_t)(a * vpp) : 0;
            *last = ends & PS_LAYOUT_LAST ? (int32_t)(a * vpp) : 0;
            return 0;
        }
    return PS_ECONFIG;
}

/* ---- the entry point ----------------------------------------------------------------------- */

static int check_args(const char *layout, int32_t pp, int32_t vpp, int32_t layers, int32_t mtp,
                      int32_t first, int32_t last, const ps_stage_layers *out, char *err,
                      size_t errlen)
{
    if (!out)
        return ps__seterr_n(err, errlen, PS_EINVAL, "layout: out is NULL");
    if (pp < 1 || vpp < 1 || (int64_t)pp * vpp > PS_MAX_STAGES)
        return ps__seterr_n(err, errlen, PS_ERANGE,
                            "pp and vpp must be >= 1 and pp*vpp <= %d; got pp %d, vpp %d",
                            PS_MAX_STAGES, (int)pp, (int)vpp);
    if (layers < 0 || mtp < 0 || first < 0 || last < 0)
        return ps__seterr_n(err, errlen, PS_ECONFIG,
                            "layer counts must be >= 0; got layers %d, mtp %d, first %d, last %d",
                            (int)layers, (int)mtp, (int)first, (int)last);
    if (layout && (first > 0 || last > 0))
        return ps__seterr_n(
            err, errlen, PS_ECONFIG,
            "a layout fixes every stage: first (%d) and last (%d) stage layers must be 0",
            (int)first, (int)last);
    return 0;
}

/* Numbers the decoder layers in stage order. */
static void number_layers(ps_stage_layers *out, int32_t stages)
{
    int32_t next = 0;
    for (int32_t i = 0; i < stages; i++) {
        out[i].first_layer = next;
        next += out[i].layers;
    }
}

int ps_layout_split(const char *layout, int32_t pp, int32_t vpp, int32_t layers, int32_t mtp,
                    int32_t first, int32_t last, ps_stage_layers *out, char *err, size_t errlen)
{
    int rc = check_args(layout, pp, vpp, layers, mtp, first, last, out, err, errlen);
    if (rc == PS_EINVAL || rc == PS_ERANGE) /* no out, or no size to zero */
        return rc;
    int32_t stages = pp * vpp;
    memset(out, 0, (size_t)stages * sizeof *out);
    if (rc) /* bad counts: out is zeroed, as for every other refusal */
        return rc;
    int ends = ps_layout_ends(layout);
    if (layout && !strcmp(layout, "balanced"))
        split_balanced(stages, layers, mtp, out);
    else if (ends) {
        int32_t f, l;
        if (ps_layout_end_counts(ends, pp, vpp, layers, &f, &l))
            rc = ps__seterr_n(err, errlen, PS_ECONFIG,
                              "layout %s: no first/last stage layer counts put fewer layers on "
                              "the %s than on the middle ranks with the rest even (Megatron's "
                              "rule) for %d layers on pp %d, vpp %d",
                              layout,
                              ends == 3   ? "first and the last rank"
                              : ends == 1 ? "first rank"
                                          : "last rank",
                              (int)layers, (int)pp, (int)vpp);
        else
            rc = split_even(pp, vpp, layers, mtp, f, l, out, err, errlen);
    } else
        rc = layout ? split_layout(layout, stages, layers, mtp, out, err, errlen)
                    : split_even(pp, vpp, layers, mtp, first, last, out, err, errlen);
    if (rc) {
        memset(out, 0, (size_t)stages * sizeof *out);
        return rc;
    }
    number_layers(out, stages);
    return 0;
}

/* ---- the layout string of a split ----------------------------------------------------------- */

/* Appends symbol c written n times ("c", "c*N", nothing for 0) at *len; 0 or PS_ERANGE. */
static int append_symbol(char *buf, size_t cap, size_t *len, char c, int32_t n)
{
    char item[16];
    int k = 0;
    if (n == 1)
        k = snprintf(item, sizeof item, "%c", c);
    else if (n > 1)
        k = snprintf(item, sizeof item, "%c*%d", c, (int)n);
    if (k < 0 || *len + (size_t)k >= cap)
        return PS_ERANGE;
    memcpy(buf + *len, item, (size_t)k);
    *len += (size_t)k;
    return 0;
}

/* What a layout string can say: E exactly on stage 0, L exactly on the last stage, the MTP
 * layers in one stage with no decoder layer after them, no negative count. */
static int check_format(const ps_stage_layers *s, int32_t stages)
{
    int32_t mtp_stage = -1;
    for (int32_t i = 0; i < stages; i++) {
        if (s[i].layers < 0 || s[i].mtp < 0 || s[i].embedding != (i == 0) ||
            s[i].loss != (i == stages - 1))
            return PS_ECONFIG;
        if (mtp_stage >= 0 && (s[i].layers > 0 || s[i].mtp > 0))
            return PS_ECONFIG;
        if (s[i].mtp > 0)
            mtp_stage = i;
    }
    return 0;
}

int ps_layout_format(const ps_stage_layers *s, int32_t stages, char *buf, size_t cap)
{
    if (!s || !buf || cap == 0)
        return PS_EINVAL;
    buf[0] = 0;
    if (stages < 1 || stages > PS_MAX_STAGES)
        return PS_ERANGE;
    int rc = check_format(s, stages);
    if (rc)
        return rc;
    size_t len = 0;
    for (int32_t i = 0; i < stages && rc == 0; i++) {
        if (i > 0)
            rc = append_symbol(buf, cap, &len, '|', 1);
        if (rc == 0)
            rc = append_symbol(buf, cap, &len, 'E', s[i].embedding);
        if (rc == 0)
            rc = append_symbol(buf, cap, &len, 't', s[i].layers);
        if (rc == 0)
            rc = append_symbol(buf, cap, &len, 'm', s[i].mtp);
        if (rc == 0)
            rc = append_symbol(buf, cap, &len, 'L', s[i].loss);
    }
    if (rc || len > INT32_MAX) {
        buf[0] = 0;
        return PS_ERANGE;
    }
    buf[len] = 0;
    return (int)len;
}
