/*
 * JSON configuration of a problem (docs/config.md). The text is parsed with cJSON, checked
 * completely into a staging struct, and only then applied through the ps_problem_set_*
 * functions, so that a failing load leaves the problem exactly as it was. Every problem found is
 * reported in one message, each under its JSON path, because a user fixing a config file wants
 * the whole list at once rather than one error per run.
 * SPDX-License-Identifier: MIT
 */
#include "internal.h"

#include <cJSON.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* Larger texts are refused before parsing: no real config comes close. */
#define CONFIG_MAX_BYTES ((size_t)64 << 20)
/* Bytes of a user-supplied string (a key, a value) quoted in a message. */
#define SHOW_MAX 48
/* Bytes of the input quoted after "near" in a parse error. */
#define NEAR_MAX 16
/* Room for one path: a prefix, an index and a quoted, escaped key of SHOW_MAX bytes. */
#define PATH_LEN 320
/* Room for one reported item (path, message and a quoted value). */
#define ITEM_LEN 768

enum { LEVEL_ROOT, LEVEL_COSTS, LEVEL_STAGE, LEVEL_MEMORY, LEVEL_STAGE_MEM, LEVEL_COUNT };

enum {
    KEY_SCHEDULE,
    KEY_PP,
    KEY_VPP,
    KEY_MICROBATCHES,
    KEY_GROUP_SIZE,
    KEY_COSTS,
    KEY_STAGE_COSTS,
    KEY_MEMORY,
    KEY_STAGE_MEMORY
};

static const char *const root_keys[] = {"schedule",     "pp",    "vpp",         "microbatches",
                                        "group_size",   "costs", "stage_costs", "memory",
                                        "stage_memory", NULL};
/* Indexed by ps_cost. */
static const char *const cost_keys[] = {"f", "b", "w", "c", "fb", NULL};
static const char *const stage_keys[] = {"f", "b", "w", NULL};
/* f, b, w in ps_stage_mem order, then the per-rank limit. */
enum { MEM_LIMIT = 3 };
static const char *const memory_keys[] = {"f", "b", "w", "limit", NULL};

static const char *const *const level_keys[LEVEL_COUNT] = {root_keys, cost_keys, stage_keys,
                                                           memory_keys, stage_keys};
static const char *const level_names[LEVEL_COUNT] = {"$", "$.costs", "$.stage_costs[i]", "$.memory",
                                                     "$.stage_memory[i]"};

/* The two per-stage arrays: the same shape, different value rules. */
typedef struct stage_array {
    const char *path; /* "$.stage_costs" */
    int level;
    bool memory; /* values may be negative and each entry must sum to 0 */
} stage_array;

static const stage_array stage_costs_array = {"$.stage_costs", LEVEL_STAGE, false};
static const stage_array stage_memory_array = {"$.stage_memory", LEVEL_STAGE_MEM, true};

/* The integer keys in root_keys order (KEY_PP .. KEY_GROUP_SIZE) and their accepted ranges. */
static const struct {
    ps_param param;
    long long lo, hi;
} int_keys[] = {
    {PS_PARAM_PP, 1, PS_MAX_PP},
    {PS_PARAM_VPP, 1, PS_MAX_VPP},
    {PS_PARAM_MICROBATCHES, 1, PS_MAX_MICROBATCHES},
    {PS_PARAM_GROUP_SIZE, 0, PS_MAX_MICROBATCHES},
};

/* Everything a config sets, checked but not yet applied. */
typedef struct staged {
    const char *schedule; /* borrowed from the cJSON tree; NULL when absent */
    bool has_int[4];
    long long ints[4]; /* indexed by KEY_x - KEY_PP */
    bool has_cost[5];
    double costs[5];     /* indexed by ps_cost */
    const cJSON *stages; /* the checked "stage_costs" array; NULL when absent */
    size_t n_stages;
    const cJSON *mem_stages; /* the checked "stage_memory" array; NULL when absent */
    size_t n_mem_stages;
    ps_stage_mem base_mem; /* input: the problem's memory model, which "memory" merges into */
    bool has_mem;          /* "memory" gave f, b or w: mem is the merged triple */
    ps_stage_mem mem;
    bool has_limit;
    double limit;
} staged;

/*
 * The checks run twice when something is wrong: a first pass only counts, so that the message
 * can state the totals and choose its layout up front; the second pass writes the items. Both
 * passes visit the tree in the same order and report the same items.
 */
typedef struct diag {
    char *out; /* NULL in the counting pass */
    size_t errors, unknown, written;
    unsigned unsuggested; /* bit per level: an unknown key there had no suggestion */
    bool compact;         /* every item is an unknown key: list just the paths */
} diag;

/* ---- small string helpers -------------------------------------------------------------------- */

/* Appends s[0..n) to buf (size cap, NUL-terminated) as the inside of a JSON string literal. */
static void escape_into(char *buf, size_t cap, const char *s, size_t n)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < n && used + 7 < cap; i++) {
        unsigned char ch = (unsigned char)s[i];
        char short_escape = 0;
        switch (ch) {
        case '"':
        case '\\':
            short_escape = (char)ch;
            break;
        case '\n':
            short_escape = 'n';
            break;
        case '\r':
            short_escape = 'r';
            break;
        case '\t':
            short_escape = 't';
            break;
        }
        if (short_escape) {
            buf[used++] = '\\';
            buf[used++] = short_escape;
        } else if (ch < 0x20 || ch == 0x7f) {
            used += (size_t)snprintf(buf + used, cap - used, "\\u%04x", ch);
        } else {
            buf[used++] = (char)ch;
        }
    }
    buf[used] = '\0';
}

/* Appends "\"s\"" to buf, cut to SHOW_MAX bytes with "..." so that huge values stay readable. */
static void quote_into(char *buf, size_t cap, const char *s)
{
    size_t n = strlen(s);
    size_t used = strlen(buf);
    snprintf(buf + used, cap - used, "\"");
    escape_into(buf, cap, s, n > SHOW_MAX ? SHOW_MAX : n);
    used = strlen(buf);
    snprintf(buf + used, cap - used, "%s\"", n > SHOW_MAX ? "..." : "");
}

static bool is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (; *s; s++)
        if (!(isalnum((unsigned char)*s) || *s == '_' || *s == '-'))
            return false;
    return true;
}

/* Writes the path of key under parent: "$.pp" for plain names, "$[\"a b\"]" for the others. */
static void key_path(char *buf, const char *parent, const char *key)
{
    if (is_identifier(key) && strlen(key) <= SHOW_MAX) {
        snprintf(buf, PATH_LEN, "%s.%s", parent, key);
    } else {
        snprintf(buf, PATH_LEN, "%s[", parent);
        quote_into(buf, PATH_LEN, key);
        size_t used = strlen(buf);
        snprintf(buf + used, PATH_LEN - used, "]");
    }
}

/* Describes a value for "got ...": a type name, with the value itself when it is short. */
static void describe(char *buf, size_t cap, const cJSON *it)
{
    buf[0] = '\0';
    if (cJSON_IsString(it)) {
        snprintf(buf, cap, "string ");
        quote_into(buf, cap, it->valuestring);
    } else if (cJSON_IsNumber(it)) {
        snprintf(buf, cap, "number %.15g", it->valuedouble);
    } else if (cJSON_IsBool(it)) {
        snprintf(buf, cap, "boolean %s", cJSON_IsTrue(it) ? "true" : "false");
    } else if (cJSON_IsNull(it)) {
        snprintf(buf, cap, "null");
    } else if (cJSON_IsArray(it)) {
        snprintf(buf, cap, "an array");
    } else if (cJSON_IsObject(it)) {
        snprintf(buf, cap, "an object");
    } else {
        snprintf(buf, cap, "an unsupported value");
    }
}

/*
 * Levenshtein distance between a and b, compared case-insensitively and with '-' equal to '_'
 * (the registry's rule for names), or 3 when it is certainly above 2. Only short strings are
 * compared, so fixed rows suffice.
 */
static int fold(int ch)
{
    ch = tolower((unsigned char)ch);
    return ch == '-' ? '_' : ch;
}

static size_t distance(const char *a, const char *b)
{
    enum { MAXLEN = 64, FAR = 3 };
    size_t la = strlen(a), lb = strlen(b);
    if (la > MAXLEN || lb > MAXLEN || (la > lb ? la - lb : lb - la) >= FAR)
        return FAR;
    size_t row[MAXLEN + 1], prev[MAXLEN + 1];
    for (size_t j = 0; j <= lb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= la; i++) {
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t sub = prev[j - 1] + (fold(a[i - 1]) != fold(b[j - 1]));
            size_t del = prev[j] + 1, ins = row[j - 1] + 1;
            row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, row, (lb + 1) * sizeof *row);
    }
    return prev[lb];
}

/*
 * Whether candidate is a plausible correction of word: at most 2 edits, and fewer edits than
 * the longer string has characters (otherwise "x" would "look like" every one-letter key).
 */
static bool close_to(const char *word, const char *candidate, size_t *best)
{
    size_t d = distance(word, candidate);
    size_t lw = strlen(word), lc = strlen(candidate);
    if (d > 2 || d >= (lw > lc ? lw : lc) || d >= *best)
        return false;
    *best = d;
    return true;
}

static const char *suggest_key(const char *key, int level)
{
    const char *hit = NULL;
    size_t best = 3;
    for (const char *const *k = level_keys[level]; *k; k++)
        if (close_to(key, *k, &best))
            hit = *k;
    return hit;
}

/* The family name or alias closest to name, copied into buf (size cap), or NULL. */
static const char *suggest_family(const char *name, char *buf, size_t cap)
{
    const char *hit = NULL;
    size_t best = 3;
    ps_family_info fi;
    for (size_t i = 0; ps_family_get(i, &fi) == 0; i++) {
        if (close_to(name, fi.name, &best)) {
            snprintf(buf, cap, "%s", fi.name);
            hit = buf;
        }
        for (const char *a = fi.aliases; *a;) {
            const char *e = strchr(a, ',');
            size_t n = e ? (size_t)(e - a) : strlen(a);
            char alias[72];
            if (n < sizeof alias) {
                memcpy(alias, a, n);
                alias[n] = '\0';
                if (close_to(name, alias, &best)) {
                    snprintf(buf, cap, "%s", alias);
                    hit = buf;
                }
            }
            a += n + (e ? 1 : 0);
        }
    }
    return hit;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int key_index(const char *const *keys, const char *key)
{
    for (int i = 0; keys[i]; i++)
        if (strcmp(keys[i], key) == 0)
            return i;
    return -1;
}

/* ---- reporting ---------------------------------------------------------------------------- */

static void add_item(diag *d, const char *item)
{
    if (d->written++)
        ps__adderr(d->out, "%s", d->compact ? ", " : "; ");
    ps__adderr(d->out, "%s", item);
}

static void report(diag *d, const char *path, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static void report(diag *d, const char *path, const char *fmt, ...)
{
    d->errors++;
    if (!d->out)
        return;
    char item[ITEM_LEN];
    int n = snprintf(item, sizeof item, "%s: ", path);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(item + n, sizeof item - (size_t)n, fmt, ap);
    va_end(ap);
    add_item(d, item);
}

static void report_unknown(diag *d, const char *parent, const char *key, int level)
{
    const char *hint = suggest_key(key, level);
    d->errors++;
    d->unknown++;
    if (!hint)
        d->unsuggested |= 1u << level;
    if (!d->out)
        return;
    char path[PATH_LEN], item[ITEM_LEN];
    key_path(path, parent, key);
    snprintf(item, sizeof item, "%s%s", path, d->compact ? "" : ": unknown key");
    if (hint) {
        size_t used = strlen(item);
        snprintf(item + used, sizeof item - used, " (did you mean \"%s\"?)", hint);
    }
    add_item(d, item);
}

static void report_type(diag *d, const char *path, const char *expected, const cJSON *it)
{
    char got[ITEM_LEN / 2];
    if (!d->out) {
        d->errors++;
        return;
    }
    describe(got, sizeof got, it);
    report(d, path, "expected %s, got %s", expected, got);
}

/* ---- checks ------------------------------------------------------------------------------- */

/* An integer in [lo, hi]: a JSON number without a fractional part. */
static bool check_int(diag *d, const char *path, const cJSON *it, long long lo, long long hi,
                      long long *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "an integer", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected an integer, got a number beyond the range of a double");
        return false;
    }
    if (v != floor(v)) {
        report(d, path, "expected an integer, got %.15g", v);
        return false;
    }
    if (v < (double)lo) {
        report(d, path, "must be >= %lld, got %.15g", lo, v);
        return false;
    }
    if (v > (double)hi) {
        report(d, path, "%.15g is beyond the limit %lld", v, hi);
        return false;
    }
    *out = (long long)v;
    return true;
}

/* A finite cost in [0, PS_MAX_COST]; negative_ok admits any finite negative (the fb default). */
static bool check_cost(diag *d, const char *path, const cJSON *it, bool negative_ok, double *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (v < 0 && !negative_ok) {
        report(d, path, "must be >= 0, got %.15g", v);
        return false;
    }
    if (v > PS_MAX_COST) {
        report(d, path, "%.15g is beyond the limit %g", v, PS_MAX_COST);
        return false;
    }
    *out = v;
    return true;
}

static void check_schedule(diag *d, const char *path, const cJSON *it, staged *st)
{
    if (!cJSON_IsString(it)) {
        report_type(d, path, "a string", it);
        return;
    }
    if (ps_family_lookup(it->valuestring, NULL) >= 0) {
        st->schedule = it->valuestring;
        return;
    }
    if (!d->out) {
        d->errors++;
        return;
    }
    char name[PATH_LEN] = "", hint[80], more[120] = "";
    quote_into(name, sizeof name, it->valuestring);
    if (suggest_family(it->valuestring, hint, sizeof hint))
        snprintf(more, sizeof more, "did you mean \"%s\"? ", hint);
    report(d, path, "unknown schedule %s (%s`pipesched list` shows the families)", name, more);
}

static void check_costs(diag *d, const cJSON *obj, staged *st)
{
    if (!cJSON_IsObject(obj)) {
        report_type(d, "$.costs", "an object", obj);
        return;
    }
    bool seen[5] = {false};
    for (const cJSON *it = obj->child; it; it = it->next) {
        int k = key_index(cost_keys, it->string);
        if (k < 0) {
            report_unknown(d, "$.costs", it->string, LEVEL_COSTS);
            continue;
        }
        char path[PATH_LEN];
        snprintf(path, sizeof path, "$.costs.%s", cost_keys[k]);
        if (seen[k]) {
            report(d, path, "duplicate key");
            continue;
        }
        seen[k] = true;
        st->has_cost[k] = check_cost(d, path, it, k == PS_COST_FB, &st->costs[k]);
    }
}

/* A memory amount: finite, of either sign, with magnitude at most PS_MAX_COST. */
static bool check_signed(diag *d, const char *path, const cJSON *it, double *out)
{
    if (!cJSON_IsNumber(it)) {
        report_type(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        report(d, path, "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (fabs(v) > PS_MAX_COST) {
        report(d, path, "%.15g is beyond the limit %s%g", v, v < 0 ? "-" : "", PS_MAX_COST);
        return false;
    }
    *out = v;
    return true;
}

/*
 * The rule of ps_problem_set_memory(), written the same way so that a triple accepted here is
 * accepted there: f + b + w is 0 within 1e-9 of the largest magnitude.
 */
static bool sums_to_zero(double f, double b, double w)
{
    double big = fabs(f);
    if (fabs(b) > big)
        big = fabs(b);
    if (fabs(w) > big)
        big = fabs(w);
    return !(fabs(f + b + w) > 1e-9 * big);
}

/*
 * Reports a triple that does not sum to 0 under path. given (NULL = all) says which values the
 * config wrote; the others are the problem's current ones, and the message says so.
 */
static void report_sum(diag *d, const char *path, const ps_stage_mem *m, const bool *given)
{
    if (!d->out) {
        d->errors++;
        return;
    }
    char note[64] = "";
    const char *missing[3];
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (given && !given[k])
            missing[n++] = stage_keys[k];
    if (n == 1)
        snprintf(note, sizeof note, " (%s is the current value)", missing[0]);
    else if (n == 2)
        snprintf(note, sizeof note, " (%s and %s are the current values)", missing[0], missing[1]);
    else if (n == 3)
        snprintf(note, sizeof note, " (all three are the current values)");
    report(d, path, "f + b + w must be 0, got f = %.15g, b = %.15g, w = %.15g, sum %.15g%s", m->f,
           m->b, m->w, m->f + m->b + m->w, note);
}

static void check_memory(diag *d, const cJSON *obj, staged *st)
{
    if (!cJSON_IsObject(obj)) {
        report_type(d, "$.memory", "an object", obj);
        return;
    }
    bool seen[4] = {false}, given[3] = {false}, bad = false;
    double v[3];
    for (const cJSON *it = obj->child; it; it = it->next) {
        int k = key_index(memory_keys, it->string);
        if (k < 0) {
            report_unknown(d, "$.memory", it->string, LEVEL_MEMORY);
            continue;
        }
        char path[PATH_LEN];
        snprintf(path, sizeof path, "$.memory.%s", memory_keys[k]);
        if (seen[k]) {
            report(d, path, "duplicate key");
            bad = bad || k != MEM_LIMIT;
            continue;
        }
        seen[k] = true;
        if (k == MEM_LIMIT)
            st->has_limit = check_cost(d, path, it, false, &st->limit);
        else if (check_signed(d, path, it, &v[k]))
            given[k] = true;
        else
            bad = true;
    }
    /* The sum is only meaningful once every value given is a valid number. */
    if (bad || !(given[0] || given[1] || given[2]))
        return;
    ps_stage_mem m = {given[0] ? v[0] : st->base_mem.f, given[1] ? v[1] : st->base_mem.b,
                      given[2] ? v[2] : st->base_mem.w};
    if (!sums_to_zero(m.f, m.b, m.w)) {
        report_sum(d, "$.memory", &m, given);
        return;
    }
    st->has_mem = true;
    st->mem = m;
}

static void check_stage(diag *d, const stage_array *sa, size_t i, const cJSON *obj)
{
    char parent[48], path[PATH_LEN];
    snprintf(parent, sizeof parent, "%s[%zu]", sa->path, i);
    if (!cJSON_IsObject(obj)) {
        report_type(d, parent, "an object with \"f\", \"b\" and \"w\"", obj);
        return;
    }
    bool seen[3] = {false}, valid[3] = {false};
    double v[3];
    for (const cJSON *it = obj->child; it; it = it->next) {
        int k = key_index(stage_keys, it->string);
        if (k < 0) {
            report_unknown(d, parent, it->string, sa->level);
            continue;
        }
        snprintf(path, sizeof path, "%s.%s", parent, stage_keys[k]);
        if (seen[k]) {
            report(d, path, "duplicate key");
            valid[k] = false;
            continue;
        }
        seen[k] = true;
        valid[k] =
            sa->memory ? check_signed(d, path, it, &v[k]) : check_cost(d, path, it, false, &v[k]);
    }
    for (int k = 0; k < 3; k++) {
        if (!seen[k]) {
            snprintf(path, sizeof path, "%s.%s", parent, stage_keys[k]);
            report(d, path, "required key missing");
        }
    }
    if (sa->memory && valid[0] && valid[1] && valid[2] && !sums_to_zero(v[0], v[1], v[2])) {
        ps_stage_mem m = {v[0], v[1], v[2]};
        report_sum(d, parent, &m, NULL);
    }
}

/* Checks "stage_costs" or "stage_memory"; returns the entry count when all is well, else -1. */
static long check_stage_array(diag *d, const stage_array *sa, const cJSON *arr)
{
    if (!cJSON_IsArray(arr)) {
        report_type(d, sa->path, "an array", arr);
        return -1;
    }
    /* Count first: the length is checked before anything is allocated or examined for it. */
    size_t n = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        n++;
    if (n > PS_MAX_STAGES) {
        report(d, sa->path, "%zu entries is beyond the limit %d", n, PS_MAX_STAGES);
        return -1;
    }
    size_t before = d->errors, i = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        check_stage(d, sa, i++, it);
    return d->errors == before ? (long)n : -1;
}

static void check_root(diag *d, const cJSON *root, staged *st)
{
    bool seen[KEY_STAGE_MEMORY + 1] = {false};
    for (const cJSON *it = root->child; it; it = it->next) {
        int k = key_index(root_keys, it->string);
        if (k < 0) {
            report_unknown(d, "$", it->string, LEVEL_ROOT);
            continue;
        }
        char path[PATH_LEN];
        snprintf(path, sizeof path, "$.%s", root_keys[k]);
        if (seen[k]) {
            report(d, path, "duplicate key");
            continue;
        }
        seen[k] = true;
        switch (k) {
        case KEY_SCHEDULE:
            check_schedule(d, path, it, st);
            break;
        case KEY_PP:
        case KEY_VPP:
        case KEY_MICROBATCHES:
        case KEY_GROUP_SIZE: {
            int i = k - KEY_PP;
            st->has_int[i] = check_int(d, path, it, int_keys[i].lo, int_keys[i].hi, &st->ints[i]);
            break;
        }
        case KEY_COSTS:
            check_costs(d, it, st);
            break;
        case KEY_STAGE_COSTS: {
            long n = check_stage_array(d, &stage_costs_array, it);
            if (n >= 0) {
                st->stages = it;
                st->n_stages = (size_t)n;
            }
            break;
        }
        case KEY_MEMORY:
            check_memory(d, it, st);
            break;
        case KEY_STAGE_MEMORY: {
            long n = check_stage_array(d, &stage_memory_array, it);
            if (n >= 0) {
                st->mem_stages = it;
                st->n_mem_stages = (size_t)n;
            }
            break;
        }
        }
    }
}

/* An empty staging struct for pb: "memory" merges into pb's current memory model. */
static void stage_init(staged *st, const ps_problem *pb)
{
    memset(st, 0, sizeof *st);
    st->base_mem = pb->mem;
}

/* Writes the full message of a failed check into pb->err: totals first, then every item. */
static int report_all(ps_problem *pb, const cJSON *root)
{
    diag count = {0};
    staged st;
    stage_init(&st, pb);
    check_root(&count, root, &st);

    diag d = {0};
    d.out = pb->err;
    d.compact = count.errors > 1 && count.errors == count.unknown;
    pb->err[0] = '\0';
    if (d.compact)
        ps__adderr(pb->err, "%zu unknown keys: ", count.errors);
    else if (count.errors > 1)
        ps__adderr(pb->err, "%zu errors: ", count.errors);
    stage_init(&st, pb);
    check_root(&d, root, &st);

    /* When a key had no close match, list what is accepted at its level instead. */
    for (int level = 0; level < LEVEL_COUNT; level++) {
        if (!(count.unsuggested & (1u << level)))
            continue;
        ps__adderr(pb->err, ". Known keys of %s:", level_names[level]);
        for (const char *const *k = level_keys[level]; *k; k++)
            ps__adderr(pb->err, "%s %s", k == level_keys[level] ? "" : ",", *k);
    }
    return PS_ECONFIG;
}

/* ---- parsing and applying ------------------------------------------------------------------ */

/* Reports a parse problem at byte offset off of text as "line L, column C: what near ...". */
static int parse_error(ps_problem *pb, const char *text, size_t len, size_t off, const char *what)
{
    size_t line = 1, col = 1;
    for (size_t i = 0; i < off && i < len; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else if (((unsigned char)text[i] & 0xc0) != 0x80) {
            /* Columns count characters: UTF-8 continuation bytes do not start one. */
            col++;
        }
    }
    /* Up to NEAR_MAX bytes of the rest of the line, escaped (at most 6 characters each). */
    char near[NEAR_MAX * 6 + 1] = "";
    size_t n = 0;
    while (off + n < len && n < NEAR_MAX && text[off + n] != '\n' && text[off + n] != '\r')
        n++;
    escape_into(near, sizeof near, text + off, n);
    return ps__seterr(pb->err, PS_EPARSE, "line %zu, column %zu: %s%s%s%s", line, col, what,
                      n ? " near \"" : "", near, n ? "\"" : "");
}

/*
 * cJSON stores keys and strings as C strings, so "\u0000" would silently cut them ("pp\u0000x"
 * would read as "pp"). Refuse it instead. Called on text that parsed, where every backslash is
 * inside a string; returns the offset of the escape or len when there is none.
 */
static size_t find_nul_escape(const char *text, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (text[i] != '\\')
            continue;
        if (i + 5 < len && text[i + 1] == 'u' && !memcmp(text + i + 2, "0000", 4))
            return i;
        i++; /* skip the escaped character, so that "\\u0000" is not mistaken for one */
    }
    return len;
}

/* The "f", "b" and "w" of a checked stage entry. */
static void triple(const cJSON *it, double *f, double *b, double *w)
{
    *f = cJSON_GetObjectItemCaseSensitive(it, "f")->valuedouble;
    *b = cJSON_GetObjectItemCaseSensitive(it, "b")->valuedouble;
    *w = cJSON_GetObjectItemCaseSensitive(it, "w")->valuedouble;
}

/* Copies a checked array of {"f","b","w"} entries and hands it to set (the per-stage costs
 * or memory setter); key names it in the out-of-memory message. */
static int apply_stage_array(ps_problem *pb, const cJSON *arr, size_t n, const char *key,
                             int (*set)(ps_problem *, const ps_fbw *, size_t))
{
    ps_fbw *tmp = NULL;
    if (n) {
        tmp = ps__alloc(&pb->al, n, sizeof *tmp);
        if (!tmp)
            return ps__seterr(pb->err, PS_ENOMEM, "$.%s: out of memory for %zu entries", key, n);
        size_t i = 0;
        for (const cJSON *it = arr->child; it; it = it->next, i++)
            triple(it, &tmp[i].f, &tmp[i].b, &tmp[i].w);
    }
    int rc = set(pb, tmp, n);
    ps__free(&pb->al, tmp, n, sizeof *tmp);
    if (rc == PS_ENOMEM)
        ps__seterr(pb->err, rc, "$.%s: out of memory for %zu entries", key, n);
    return rc;
}

/* The steps that cannot allocate, in a fixed order. */
static int apply_scalars(ps_problem *pb, const staged *st)
{
    int rc;
    if (st->schedule && (rc = ps_problem_set_schedule(pb, st->schedule)) != 0)
        return rc;
    for (int i = 0; i < 4; i++)
        if (st->has_int[i] && (rc = ps_problem_set_int(pb, int_keys[i].param, st->ints[i])) != 0)
            return rc;
    for (int k = 0; k < 5; k++)
        if (st->has_cost[k] && (rc = ps_problem_set_cost(pb, (ps_cost)k, st->costs[k])) != 0)
            return rc;
    if (st->has_mem && (rc = ps_problem_set_memory(pb, st->mem.f, st->mem.b, st->mem.w)) != 0)
        return rc;
    if (st->has_limit && (rc = ps_problem_set_mem_limit(pb, st->limit)) != 0)
        return rc;
    return 0;
}

/*
 * Applies checked values through the setters. Two steps allocate (the per-stage costs and the
 * per-stage memory), so the second can fail after the first has succeeded; the scalar setters
 * should not fail on values that passed the same checks, but are not trusted to. The load is
 * made atomic by undoing rather than by ordering: the arrays being replaced are detached from
 * pb before their setters run (so the setters do not free them) and the scalars are saved.
 * On any failure the new arrays are freed and the old ones and the scalars put back, which
 * needs no allocation and so cannot fail itself; on success the old arrays are freed.
 */
static int apply(ps_problem *pb, const staged *st)
{
    ps_problem saved = *pb; /* the scalars and the old arrays; err is not restored */
    if (st->stages) {
        pb->stage_costs = NULL;
        pb->n_stage_costs = 0;
    }
    if (st->mem_stages) {
        pb->stage_mem = NULL;
        pb->n_stage_mem = 0;
    }
    int rc = 0;
    if (st->stages)
        rc = apply_stage_array(pb, st->stages, st->n_stages, "stage_costs",
                               ps_problem_set_stage_costs);
    if (!rc && st->mem_stages)
        rc = apply_stage_array(pb, st->mem_stages, st->n_mem_stages, "stage_memory",
                               ps_problem_set_stage_memory);
    if (!rc)
        rc = apply_scalars(pb, st);
    if (rc) {
        if (st->stages)
            ps__free(&pb->al, pb->stage_costs, pb->n_stage_costs, sizeof *pb->stage_costs);
        if (st->mem_stages)
            ps__free(&pb->al, pb->stage_mem, pb->n_stage_mem, sizeof *pb->stage_mem);
        memcpy(saved.err, pb->err, sizeof saved.err);
        *pb = saved;
        return rc;
    }
    if (st->stages)
        ps__free(&pb->al, saved.stage_costs, saved.n_stage_costs, sizeof *saved.stage_costs);
    if (st->mem_stages)
        ps__free(&pb->al, saved.stage_mem, saved.n_stage_mem, sizeof *saved.stage_mem);
    return 0;
}

int ps_problem_load_json(ps_problem *pb, const char *text, size_t len)
{
    if (!pb)
        return PS_EINVAL;
    if (!text)
        return ps__seterr(pb->err, PS_EINVAL, "invalid argument: NULL config text");
    if (len > CONFIG_MAX_BYTES)
        return ps__seterr(pb->err, PS_ERANGE, "config is %zu bytes; the limit is %zu (64 MiB)", len,
                          CONFIG_MAX_BYTES);
    /* A raw NUL would end a key or string early inside cJSON; JSON forbids it anyway. */
    const char *nul = memchr(text, '\0', len);
    if (nul)
        return parse_error(pb, text, len, (size_t)(nul - text), "NUL byte in the input");

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!root) {
        size_t off = end ? (size_t)(end - text) : 0;
        bool empty = true;
        for (size_t i = 0; i < len && empty; i++)
            empty = is_space(text[i]);
        if (empty)
            return ps__seterr(pb->err, PS_EPARSE,
                              "line 1, column 1: empty input (expected a JSON object)");
        return parse_error(pb, text, len, off, "malformed JSON");
    }

    int rc = 0;
    /* cJSON stops after the value and, without require_null_terminated, ignores the rest. */
    size_t off = (size_t)(end - text);
    while (off < len && is_space(text[off]))
        off++;
    if (off < len) {
        rc = parse_error(pb, text, len, off, "unexpected data after the JSON value");
        goto out;
    }
    off = find_nul_escape(text, len);
    if (off < len) {
        rc = parse_error(pb, text, len, off, "\\u0000 in a string is not supported");
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        char got[ITEM_LEN / 2];
        describe(got, sizeof got, root);
        rc = ps__seterr(pb->err, PS_ECONFIG, "$: expected an object, got %s", got);
        goto out;
    }

    diag d = {0};
    staged st;
    stage_init(&st, pb);
    check_root(&d, root, &st);
    rc = d.errors ? report_all(pb, root) : apply(pb, &st);
out:
    cJSON_Delete(root);
    return rc;
}
