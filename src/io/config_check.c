/*
 * The checks every key gets from its declaration (config_keys.c): the object walk (unknown,
 * repeated and missing keys, the rules between keys), the value checks by JSON type, and the
 * arrays. Each problem is reported once, where it is met, and every valid value is staged at
 * its offset in the same pass.
 * SPDX-License-Identifier: MIT
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- value checks -------------------------------------------------------------------------- */

/* A whole number in [lo, hi]: a JSON number without a fractional part. */
static bool check_int(ps__json_diag *d, const char *path, const cJSON *it, long long lo,
                      long long hi, double *out)
{
    if (!cJSON_IsNumber(it)) {
        ps__json_type_error(d, path, "an integer", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        ps__json_error(d, path, "expected an integer, got a number beyond the range of a double");
        return false;
    }
    if (v != floor(v)) {
        ps__json_error(d, path, "expected an integer, got %.15g", v);
        return false;
    }
    if (v < (double)lo) {
        ps__json_error(d, path, "must be >= %lld, got %.15g", lo, v);
        return false;
    }
    if (v > (double)hi) {
        ps__json_error(d, path, "%.15g is beyond the limit %lld", v, hi);
        return false;
    }
    *out = v;
    return true;
}

/*
 * A finite number in [lo, hi], or (lo, hi] when strict. Messages name the bound that was
 * crossed: "must be >= 0, got -1", "must be > 0, got 0", "2 is beyond the limit 1".
 */
static bool check_number(ps__json_diag *d, const char *path, const cJSON *it, double lo,
                         bool strict, double hi, double *out)
{
    if (!cJSON_IsNumber(it)) {
        ps__json_type_error(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        ps__json_error(d, path,
                       "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (strict ? !(v > lo) : v < lo) {
        ps__json_error(d, path, "must be %s %g, got %.15g", strict ? ">" : ">=", lo, v);
        return false;
    }
    if (v > hi) {
        ps__json_error(d, path, "%.15g is beyond the limit %g", v, hi);
        return false;
    }
    *out = v;
    return true;
}

/* A memory amount: finite, of either sign, with magnitude at most hi. */
static bool check_signed(ps__json_diag *d, const char *path, const cJSON *it, double hi,
                         double *out)
{
    if (!cJSON_IsNumber(it)) {
        ps__json_type_error(d, path, "a number", it);
        return false;
    }
    double v = it->valuedouble;
    if (!isfinite(v)) {
        ps__json_error(d, path,
                       "expected a finite number, got a number beyond the range of a double");
        return false;
    }
    if (fabs(v) > hi) {
        ps__json_error(d, path, "%.15g is beyond the limit %s%g", v, v < 0 ? "-" : "", hi);
        return false;
    }
    *out = v;
    return true;
}

static bool check_bool(ps__json_diag *d, const char *path, const cJSON *it, double *out)
{
    if (!cJSON_IsBool(it)) {
        ps__json_type_error(d, path, "a boolean", it);
        return false;
    }
    *out = cJSON_IsTrue(it) ? 1 : 0;
    return true;
}

static const char *choice_name(const void *ud, size_t i)
{
    const char *(*name)(int) = *(const char *(*const *)(int))ud;
    return name((int)i);
}

/*
 * One of the strings name(0), name(1), ... (exactly), whose index goes to *out. An unknown
 * value is reported with the closest name, if one is close, and the list of names.
 */
static bool check_choice(ps__json_diag *d, const char *path, const cJSON *it,
                         const char *(*name)(int), double *out)
{
    if (!cJSON_IsString(it)) {
        ps__json_type_error(d, path, "a string", it);
        return false;
    }
    const char *n;
    for (int i = 0; (n = name(i)) != NULL; i++) {
        if (strcmp(n, it->valuestring) == 0) {
            *out = i;
            return true;
        }
    }
    char value[PS__JSON_PATH_LEN] = "", hint[80] = "", list[160] = "";
    if (!ps__json_diag_quiet(d)) {
        ps__json_quote(value, sizeof value, it->valuestring);
        const char *close = ps__json_suggest(it->valuestring, choice_name, &name);
        if (close)
            snprintf(hint, sizeof hint, "did you mean \"%s\"? ", close);
        for (int i = 0; (n = name(i)) != NULL; i++) {
            size_t used = strlen(list);
            snprintf(list + used, sizeof list - used, "%s%s", i ? ", " : "", n);
        }
    }
    ps__json_error(d, path, "unknown value %s (%sknown: %s)", value, hint, list);
    return false;
}

/* The family name or alias closest to name, copied into buf (size cap), or NULL. */
static const char *suggest_family(const char *name, char *buf, size_t cap)
{
    const char *hit = NULL;
    size_t best = 3;
    ps_family_info fi;
    for (size_t i = 0; ps_family_get(i, &fi) == 0; i++) {
        if (ps__json_close_to(name, fi.name, &best)) {
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
                if (ps__json_close_to(name, alias, &best)) {
                    snprintf(buf, cap, "%s", alias);
                    hit = buf;
                }
            }
            a += n + (e ? 1 : 0);
        }
    }
    return hit;
}

/* "schedule": a family name or alias, staged as the string (borrowed from the tree). */
bool ps__cfg_check_schedule(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                            void *target)
{
    if (!cJSON_IsString(it)) {
        ps__json_type_error(c->d, path, "a string", it);
        return false;
    }
    if (ps_family_lookup(it->valuestring, NULL) >= 0) {
        *(const char **)(void *)((char *)target + k->at) = it->valuestring;
        return true;
    }
    char name[PS__JSON_PATH_LEN] = "", hint[80], more[120] = "";
    if (!ps__json_diag_quiet(c->d)) {
        ps__json_quote(name, sizeof name, it->valuestring);
        if (suggest_family(it->valuestring, hint, sizeof hint))
            snprintf(more, sizeof more, "did you mean \"%s\"? ", hint);
    }
    ps__json_error(c->d, path, "unknown schedule %s (%s`pipesched list` shows the families)", name,
                   more);
    return false;
}

/* ---- staging ------------------------------------------------------------------------------- */

static void stage(const ps__cfg_key *k, void *target, double v)
{
    void *at = (char *)target + k->at;
    switch (k->store) {
    case PS__CFG_I64:
        *(long long *)at = (long long)v;
        break;
    case PS__CFG_I32:
        *(int32_t *)at = (int32_t)v;
        break;
    default:
        *(double *)at = v;
        break;
    }
}

double ps__cfg_value(const ps__cfg_key *k, const void *target)
{
    const void *at = (const char *)target + k->at;
    switch (k->store) {
    case PS__CFG_I64:
        return (double)*(const long long *)at;
    case PS__CFG_I32:
        return *(const int32_t *)at;
    default:
        return *(const double *)at;
    }
}

static void set_state(const ps__cfg_key *k, void *target, ps__cfg_state s)
{
    if (k->state)
        ((ps__cfg_state *)target)[k->state - 1] = s;
}

/*
 * Room for the n entries of the array at path, through the problem's allocator. When memory
 * runs out the entries are still checked; the load then fails with PS_ENOMEM, unless the config
 * has errors, which are reported first as they would be without the allocation.
 */
static void *stage_array(ps__cfg_ctx *c, const char *path, size_t n, size_t size)
{
    if (n == 0)
        return NULL;
    void *v = ps__alloc(c->al, n, size);
    if (!v && !c->st->oom) {
        c->st->oom = true;
        c->st->oom_n = n;
        snprintf(c->st->oom_path, sizeof c->st->oom_path, "%s", path);
    }
    return v;
}

/* The entry count of an array key's value, checked before anything is allocated for it. */
static bool count_entries(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *arr,
                          size_t *n)
{
    if (!cJSON_IsArray(arr)) {
        ps__json_type_error(c->d, path, "an array", arr);
        return false;
    }
    *n = 0;
    for (const cJSON *it = arr->child; it; it = it->next)
        ++*n;
    if (*n > k->max_len) {
        ps__json_error(c->d, path, "%zu entries is beyond the limit %zu", *n, k->max_len);
        return false;
    }
    return true;
}

/* OBJECTS: each entry is checked into a ps__cfg_fbw of its own, then its values are staged. */
static bool check_objects(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *arr,
                          void *target)
{
    size_t n, i = 0, before = c->d->errors;
    if (!count_entries(c, k, path, arr, &n))
        return false;
    ps__cfg_array *out = (ps__cfg_array *)(void *)((char *)target + k->at);
    ps_fbw *v = stage_array(c, path, n, sizeof *v);
    out->v = v;
    out->n = n;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char entry[PS__JSON_PATH_LEN + 24];
        ps__cfg_fbw e;
        memset(&e, 0, sizeof e);
        snprintf(entry, sizeof entry, "%s[%zu]", path, i);
        ps__cfg_check_object(c, k->object, entry, it, &e);
        if (v)
            v[i] = e.v;
    }
    return c->d->errors == before;
}

/* INTS: whole numbers in [lo, hi], staged as int32_t with their sum. */
static bool check_ints(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *arr,
                       void *target)
{
    size_t n, i = 0, before = c->d->errors;
    if (!count_entries(c, k, path, arr, &n))
        return false;
    ps__cfg_array *out = (ps__cfg_array *)(void *)((char *)target + k->at);
    int32_t *v = stage_array(c, path, n, sizeof *v);
    out->v = v;
    out->n = n;
    out->sum = 0;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char entry[PS__JSON_PATH_LEN + 24];
        double x;
        snprintf(entry, sizeof entry, "%s[%zu]", path, i);
        if (!check_int(c->d, entry, it, (long long)k->lo, (long long)k->hi, &x))
            continue;
        out->sum += (long long)x;
        if (v)
            v[i] = (int32_t)x;
    }
    return c->d->errors == before;
}

/* NUMBERS: finite numbers in [lo, hi] ((lo, hi] when strict), staged as double. */
static bool check_numbers(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *arr,
                          void *target)
{
    size_t n, i = 0, before = c->d->errors;
    if (!count_entries(c, k, path, arr, &n))
        return false;
    ps__cfg_array *out = (ps__cfg_array *)(void *)((char *)target + k->at);
    double *v = stage_array(c, path, n, sizeof *v);
    out->v = v;
    out->n = n;
    for (const cJSON *it = arr->child; it; it = it->next, i++) {
        char entry[PS__JSON_PATH_LEN + 24];
        double x;
        snprintf(entry, sizeof entry, "%s[%zu]", path, i);
        if (check_number(c->d, entry, it, k->lo, k->strict, k->hi, &x) && v)
            v[i] = x;
    }
    return c->d->errors == before;
}

/* Checks the value of key k at path and stages it into target; returns whether it was valid. */
static bool check_value(ps__cfg_ctx *c, const ps__cfg_key *k, const char *path, const cJSON *it,
                        void *target)
{
    if (k->check)
        return k->check(c, k, path, it, target);
    bool ok = false;
    double v = 0;
    switch (k->type) {
    case PS__CFG_NUMBER:
        ok = check_number(c->d, path, it, k->lo, k->strict, k->hi, &v);
        break;
    case PS__CFG_SIGNED:
        ok = check_signed(c->d, path, it, k->hi, &v);
        break;
    case PS__CFG_INT:
        ok = check_int(c->d, path, it, (long long)k->lo, (long long)k->hi, &v);
        break;
    case PS__CFG_BOOL:
        ok = check_bool(c->d, path, it, &v);
        break;
    case PS__CFG_CHOICE:
        ok = check_choice(c->d, path, it, k->choice, &v);
        break;
    case PS__CFG_OBJECT:
        return ps__cfg_check_object(c, k->object, path, it, target);
    case PS__CFG_OBJECTS:
        return check_objects(c, k, path, it, target);
    case PS__CFG_INTS:
        return check_ints(c, k, path, it, target);
    case PS__CFG_NUMBERS:
        return check_numbers(c, k, path, it, target);
    case PS__CFG_STRING:
        break; /* declared with a check */
    }
    if (ok && k->zero_reason && v > 0) {
        ps__json_error(c->d, path, "must be 0 (%s), got %.15g", k->zero_reason, v);
        ok = false;
    }
    if (ok)
        stage(k, target, v);
    return ok;
}

/* ---- objects ------------------------------------------------------------------------------- */

static size_t find_key(const ps__cfg_key *keys, size_t n, const char *name)
{
    size_t i = 0;
    while (i < n && strcmp(keys[i].name, name) != 0)
        i++;
    return i;
}

static void report_unknown(ps__cfg_ctx *c, int id, const char *parent, const char *key)
{
    const char *hint = ps__json_suggest(key, ps__cfg_key_name, &id);
    if (!hint)
        c->unsuggested |= 1u << id;
    ps__json_unknown_key(c->d, parent, key, hint);
}

/*
 * The rules of key i, once all keys of the object were read and only on valid values: at most
 * another key's value, or > 0 (and then required) when another key's value is above a bound.
 * A broken rule is reported and changes no state: the values are still what was written, and
 * the other rules judge them as such (with "dense_layers" above "layers", the model still needs
 * "dense_ffn").
 */
static void check_rules(ps__cfg_ctx *c, const ps__cfg_object *o, const char *path, const cJSON *obj,
                        const ps__cfg_key *keys, size_t n, size_t i, const ps__cfg_state *state,
                        void *target)
{
    const ps__cfg_key *k = &keys[i];
    if (!k->at_most && !k->positive_if)
        return;
    char kpath[PS__JSON_PATH_LEN];
    snprintf(kpath, sizeof kpath, "%s.%s", path, k->name);
    double v = ps__cfg_value(k, target);
    if (k->at_most) {
        size_t j = find_key(keys, n, k->at_most);
        double max = ps__cfg_value(&keys[j], target);
        if (state[i] == PS__CFG_OK && state[j] == PS__CFG_OK && v > max)
            ps__json_error(c->d, kpath, "must be <= %s.%s (%.15g), got %.15g", path, keys[j].name,
                           max, v);
    }
    if (k->positive_if) {
        size_t j = find_key(keys, n, k->positive_if);
        double count = ps__cfg_value(&keys[j], target);
        if (state[j] != PS__CFG_OK || !(count > k->above) || v > 0)
            return;
        if (state[i] == PS__CFG_OK)
            ps__json_error(c->d, kpath, "must be > 0 when %s.%s > %.15g, got 0", path, keys[j].name,
                           k->above);
        /* A required key's absence was reported already, and so was a key written with other
         * letter case (cJSON_HasObjectItem() ignores case), with the suggestion to fix it. */
        else if (!k->required && !cJSON_HasObjectItem(obj, k->name))
            ps__json_error(c->d, kpath, "required key missing (%s has %.15g %s)", o->owner, count,
                           keys[j].noun);
    }
}

bool ps__cfg_check_object(ps__cfg_ctx *c, int id, const char *path, const cJSON *obj, void *target)
{
    const ps__cfg_object *o = &ps__cfg_objects[id];
    if (!cJSON_IsObject(obj)) {
        ps__json_type_error(c->d, path, o->expected ? o->expected : "an object", obj);
        return false;
    }
    ps__cfg_key buf[PS__CFG_MAX_KEYS];
    size_t n, before = c->d->errors;
    const ps__cfg_key *keys = ps__cfg_keys(id, buf, &n);
    ps__cfg_state state[PS__CFG_MAX_KEYS] = {PS__CFG_ABSENT};
    char kpath[PS__JSON_PATH_LEN];

    /* The members, in the order written. A repeated key is ambiguous: reported, not read, and
     * invalid from then on. */
    for (const cJSON *it = obj->child; it; it = it->next) {
        size_t i = find_key(keys, n, it->string);
        if (i == n) {
            report_unknown(c, id, path, it->string);
            continue;
        }
        snprintf(kpath, sizeof kpath, "%s.%s", path, keys[i].name);
        if (state[i] != PS__CFG_ABSENT) {
            ps__json_error(c->d, kpath, "duplicate key");
            state[i] = PS__CFG_BAD;
        } else {
            state[i] = check_value(c, &keys[i], kpath, it, target) ? PS__CFG_OK : PS__CFG_BAD;
        }
        set_state(&keys[i], target, state[i]);
    }
    for (size_t i = 0; i < n; i++) {
        if (keys[i].required && state[i] == PS__CFG_ABSENT) {
            snprintf(kpath, sizeof kpath, "%s.%s", path, keys[i].name);
            ps__json_error(c->d, kpath, "required key missing");
        }
    }
    for (size_t i = 0; i < n; i++)
        check_rules(c, o, path, obj, keys, n, i, state, target);
    if (o->after)
        o->after(c, path, target);
    return c->d->errors == before;
}

/* ---- the f + b + w rule of the memory model ---------------------------------------------------
 */

/*
 * The rule of ps_problem_set_memory(), written the same way so that a triple accepted here is
 * accepted there: f + b + w is 0 within 1e-9 of the largest magnitude.
 */
static bool sums_to_zero(const ps_fbw *m)
{
    double big = fabs(m->f);
    if (fabs(m->b) > big)
        big = fabs(m->b);
    if (fabs(m->w) > big)
        big = fabs(m->w);
    return !(fabs(m->f + m->b + m->w) > 1e-9 * big);
}

/*
 * Reports a triple that does not sum to 0 under path. given (NULL = all) says which values the
 * config wrote; the others are the problem's current ones, and the message says so.
 */
static void report_sum(ps__json_diag *d, const char *path, const ps_fbw *m, const bool *given)
{
    static const char *const names[3] = {"f", "b", "w"}; /* the members of ps_fbw */
    char note[64] = "";
    const char *missing[3];
    int n = 0;
    for (int k = 0; k < 3; k++)
        if (given && !given[k])
            missing[n++] = names[k];
    if (n == 1)
        snprintf(note, sizeof note, " (%s is the current value)", missing[0]);
    else if (n == 2)
        snprintf(note, sizeof note, " (%s and %s are the current values)", missing[0], missing[1]);
    else if (n == 3)
        snprintf(note, sizeof note, " (all three are the current values)");
    ps__json_error(d, path, "f + b + w must be 0, got f = %.15g, b = %.15g, w = %.15g, sum %.15g%s",
                   m->f, m->b, m->w, m->f + m->b + m->w, note);
}

/*
 * "memory": the values given are merged into the problem's current ones, and the rule applies
 * to the result; it is only meaningful once every value given is valid (and not repeated).
 */
void ps__cfg_memory_sum(ps__cfg_ctx *c, const char *path, void *target)
{
    ps__cfg_staged *st = target;
    const ps__cfg_fbw *in = &st->mem_in;
    bool given[3], any = false;
    for (int k = 0; k < 3; k++) {
        if (in->st[k] == PS__CFG_BAD)
            return;
        given[k] = in->st[k] == PS__CFG_OK;
        any = any || given[k];
    }
    if (!any)
        return;
    ps_fbw m = {given[0] ? in->v.f : st->base_mem.f, given[1] ? in->v.b : st->base_mem.b,
                given[2] ? in->v.w : st->base_mem.w};
    if (!sums_to_zero(&m)) {
        report_sum(c->d, path, &m, given);
        return;
    }
    st->has_mem = true;
    st->mem = m;
}

/* An entry of "stage_memory", once its three values are valid. */
void ps__cfg_entry_sum(ps__cfg_ctx *c, const char *path, void *target)
{
    const ps__cfg_fbw *e = target;
    if (e->st[0] == PS__CFG_OK && e->st[1] == PS__CFG_OK && e->st[2] == PS__CFG_OK &&
        !sums_to_zero(&e->v))
        report_sum(c->d, path, &e->v, NULL);
}
