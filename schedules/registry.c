/*
 * The registry of schedule families and the generation driver: limits, the family's own
 * parameter check, placement and paths, then the family's generator.
 * SPDX-License-Identifier: MIT
 */
#include "schedules.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define ROW(n, name, aliases, desc, cons, place, vpp, units, options, costs)                       \
    {                                                                                              \
        name, aliases, desc, cons, place, vpp, units, options, costs, ps__##n##_check,             \
            ps__##n##_generate                                                                     \
    }

const ps__family ps__families[] = {
    ROW(gpipe, "gpipe", "GPipe,ScheduleGPipe,fill-drain", "all forwards, then all backwards",
        "vpp = 1; any m >= 1", PS__PLACE_LOOP, 1, 2, 0, 0),
    ROW(1f1b, "1f1b", "1F1B,Schedule1F1B,pipedream-flush",
        "one-forward-one-backward after a warm-up of min(p-r-1, m) forwards", "vpp = 1; any m >= 1",
        PS__PLACE_LOOP, 1, 2, 0, 0),
    /* PyTorch's ScheduleInterleaved1F1B (get_schedule_class name "Interleaved1F1B") follows the
     * rounds rule, so its names belong to interleaved-rounds; Megatron's rule has no class name
     * (forward_backward_pipelining_with_interleaving). Checked against upstream: ScheduleGPipe,
     * Schedule1F1B, ScheduleLoopedBFS, ScheduleInterleavedZeroBubble (its docstring: ZB1P),
     * ScheduleZBVZeroBubble and ScheduleDualPipeV name the families below. */
    ROW(interleaved, "interleaved", "megatron-interleaved,vpp",
        "Megatron interleaved 1F1B: loop placement, warm-up 2(p-r-1)+(v-1)G",
        "vpp > 1 needs pp <= group_size <= m and m mod group_size = 0 or >= pp "
        "(group_size defaults to pp); vpp = 1 is 1F1B",
        PS__PLACE_LOOP, 0, 2, PS__OPT_GROUP, 0),
    ROW(interleaved_rounds, "interleaved-rounds",
        "Interleaved1F1B,ScheduleInterleaved1F1B,pytorch-interleaved,flexible-interleaved",
        "PyTorch's relaxed interleaved 1F1B: rounds = max(1, m//p), warm-up "
        "(v-1)(m/rounds)+2(p-r-1)",
        "m mod max(1, m // pp) = 0", PS__PLACE_LOOP, 0, 2, 0, 0),
    ROW(looped_bfs, "looped-bfs", "LoopedBFS,ScheduleLoopedBFS,bfs",
        "breadth-first: all forwards of each local stage in turn, then backwards in reverse",
        "any vpp >= 1, m >= 1", PS__PLACE_LOOP, 0, 2, 0, 0),
    ROW(zb_h1, "zb-h1", "ZB-H1,zb1p-handcrafted,zero-bubble-h1",
        "zero bubble, handcrafted: warm-up p-r-1 forwards, W deferred by r micro-batches",
        "vpp = 1; any m >= 1", PS__PLACE_LOOP, 1, 3, 0, 0),
    ROW(zb_h2, "zb-h2", "ZB-H2,zb2p-handcrafted,zero-bubble-h2",
        "zero bubble, handcrafted: warm-up 2(p-r-1) forwards, W deferred by 2r micro-batches",
        "vpp = 1; any m >= 1", PS__PLACE_LOOP, 1, 3, 0, 0),
    ROW(interleaved_zb, "interleaved-zb",
        "InterleavedZeroBubble,ScheduleInterleavedZeroBubble,zb1p",
        "PyTorch's interleaved zero bubble: interleaved-rounds warm-up (v-1)(m/rounds)+(p-r-1), "
        "split backward, W deferred by r steps",
        "m mod max(1, m // pp) = 0", PS__PLACE_LOOP, 0, 3, 0, 0),
    ROW(zb_v, "zb-v", "ZBVZeroBubble,ScheduleZBVZeroBubble,zbv",
        "handcrafted ZB-V: two chunks per rank in V placement, zero bubble when f = b = w",
        "vpp = 2 (V placement); any m >= 1", PS__PLACE_V, 2, 3, 0, 0),
    ROW(v_half, "v-half", "V-Half,zbv-half",
        "V-shape building blocks with half of 1F1B's activation memory, then squeezed",
        "vpp = 2 (V placement); any m >= 1", PS__PLACE_V, 2, 3, 0, 0),
    ROW(v_min, "v-min", "V-Min,zbv-min",
        "V-shape building blocks with a third of 1F1B's activation memory, then squeezed",
        "vpp = 2 (V placement); any m >= 1", PS__PLACE_V, 2, 3, 0, 0),
    ROW(zb_auto, "zb-auto", "zb-greedy,zero-bubble-auto,ZBAuto",
        "cost- and memory-aware zero-bubble list scheduler (per-stage f, b, w, c, memory limit)",
        "vpp = 1 (loop) or 2 (V placement); any m >= 1", PS__PLACE_V, 0, 3, 0, 1),
    ROW(dualpipe, "dualpipe", "DualPipe",
        "DeepSeek's DualPipe: two model copies fed from both ends, 8-step program with fused "
        "forward-backward pairs and deferred weight gradients",
        "vpp = 1 (two model copies, 2 pp stages); pp even, m even, m >= 2 pp", PS__PLACE_BIDIR, 1,
        3, 0, 0),
    ROW(dualpipev, "dualpipev", "DualPipeV,ScheduleDualPipeV",
        "DualPipe cut in half: the same 8-step program on V placement, one model copy",
        "vpp = 2 (V placement); m >= 2 pp", PS__PLACE_V, 2, 3, 0, 0),
    ROW(adaptive, "adaptive", "adaptive-pipe,AdaptivePipe,combined-1f1b,fb-overlap",
        "Adaptive Pipe: interleaved 1F1B with extra_warmup (default 1) more warm-up forwards, "
        "every steady step one fused forward-backward pair; split_backward runs the "
        "cool-down's backwards as I then W",
        "interleaved's table: vpp > 1 needs pp <= group_size <= m and m mod group_size = 0 or "
        ">= pp (group_size defaults to pp); vpp = 1 (combined 1F1B) takes any m >= 1",
        PS__PLACE_LOOP, 0, 3, PS__OPT_GROUP | PS__OPT_ADAPTIVE, 0),
};

const size_t ps__nfamilies = sizeof ps__families / sizeof ps__families[0];

size_t ps_family_count(void)
{
    return ps__nfamilies;
}

static void fill_info(size_t i, ps_family_info *out)
{
    static const char *const place[] = {"loop", "v", "bidirectional", "custom"};
    const ps__family *f = &ps__families[i];
    out->name = f->name;
    out->aliases = f->aliases;
    out->description = f->description;
    out->constraints = f->constraints;
    out->placement = f->placement == PS__PLACE_V && f->fixed_vpp == 0
                         ? "loop with vpp = 1, v with vpp = 2"
                         : place[f->placement];
}

int ps_family_get(size_t i, ps_family_info *out)
{
    if (i >= ps__nfamilies || !out)
        return PS_EINVAL;
    fill_info(i, out);
    return 0;
}

/* The vpp of a problem that leaves it at 0. */
static int default_vpp(const ps__family *f)
{
    return f->fixed_vpp ? f->fixed_vpp : 1;
}

int ps_family_params_get(size_t i, ps_family_params *out)
{
    if (i >= ps__nfamilies || !out)
        return PS_EINVAL;
    const ps__family *f = &ps__families[i];
    /* Indexed by PS__OPT_*: the names of the configuration keys (docs/config.md). */
    static const char *const options[] = {"", "group_size", "extra_warmup,split_backward",
                                          "group_size,extra_warmup,split_backward"};
    _Static_assert(PS__OPT_GROUP == 1 && PS__OPT_ADAPTIVE == 2, "options[] follows PS__OPT_*");
    out->vpp = f->fixed_vpp;
    out->default_vpp = default_vpp(f);
    out->model_copies = f->placement == PS__PLACE_BIDIR ? 2 : 1;
    out->cost_aware = f->costs;
    out->options = options[f->options & 3];
    return 0;
}

/* Case-insensitive comparison where '-' and '_' are the same character. */
static int name_eq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    if (an != bn)
        return 0;
    for (size_t i = 0; i < an; i++) {
        int x = tolower((unsigned char)a[i]), y = tolower((unsigned char)b[i]);
        if (x == '_')
            x = '-';
        if (y == '_')
            y = '-';
        if (x != y)
            return 0;
    }
    return 1;
}

int ps_family_lookup(const char *name, ps_family_info *out)
{
    if (!name)
        return PS_EINVAL;
    for (size_t i = 0; i < ps__nfamilies; i++) {
        const ps__family *f = &ps__families[i];
        int hit = name_eq(name, strlen(name), f->name);
        for (const char *a = f->aliases; !hit && *a;) {
            const char *e = strchr(a, ',');
            size_t n = e ? (size_t)(e - a) : strlen(a);
            char tmp[64];
            if (n < sizeof tmp) {
                memcpy(tmp, a, n);
                tmp[n] = 0;
                hit = name_eq(name, strlen(name), tmp);
            }
            a += n + (e ? 1 : 0);
        }
        if (hit) {
            if (out)
                fill_info(i, out);
            return (int)i;
        }
    }
    return PS_ENOTFOUND;
}

static int32_t place_stage(int placement, int32_t s, int32_t p)
{
    switch (placement) {
    case PS__PLACE_V: /* zig-zag: even chunks go down, odd chunks come back up */
        return (s / p) % 2 == 0 ? s % p : p - 1 - s % p;
    case PS__PLACE_BIDIR:
        return s < p ? s : p - 1 - (s - p);
    default:
        return s % p;
    }
}

/* ---- ps_schedule_generate --------------------------------------------------------------- */

/* The size of a problem under a family: its vpp (defaulted), model copies and stages. */
typedef struct gen_size {
    long long v, nstages;
    int copies;
} gen_size;

/* Sizes beyond the documented limits are refused before anything is allocated. */
static int check_limits(ps_schedule *s, const ps__family *f, const ps_problem *pb, gen_size *z)
{
    z->v = pb->vpp ? pb->vpp : default_vpp(f);
    if (f->fixed_vpp && z->v != f->fixed_vpp)
        return ps__seterr(s->err, PS_EUNSUPPORTED, "%s needs vpp = %d; got vpp=%lld", f->name,
                          f->fixed_vpp, z->v);
    if (pb->pp < 1 || pb->pp > PS_MAX_PP)
        return ps__seterr(s->err, PS_ERANGE, "pp must be in [1, %d]; got %lld", PS_MAX_PP, pb->pp);
    if (z->v < 1 || z->v > PS_MAX_VPP)
        return ps__seterr(s->err, PS_ERANGE, "vpp must be in [1, %d]; got %lld", PS_MAX_VPP, z->v);
    if (pb->m < 1 || pb->m > PS_MAX_MICROBATCHES)
        return ps__seterr(s->err, PS_ERANGE, "microbatches must be in [1, %d]; got %lld",
                          PS_MAX_MICROBATCHES, pb->m);
    z->copies = f->placement == PS__PLACE_BIDIR ? 2 : 1;
    z->nstages = pb->pp * z->v * z->copies;
    if (z->nstages > PS_MAX_STAGES)
        return ps__seterr(s->err, PS_ERANGE, "pp * vpp%s = %lld stages exceeds the limit %d",
                          z->copies > 1 ? " * 2" : "", z->nstages, PS_MAX_STAGES);
    long long actions = z->nstages / z->copies * pb->m * f->units;
    if (actions > PS_MAX_ACTIONS)
        return ps__seterr(s->err, PS_ERANGE,
                          "pp=%lld, vpp=%lld, m=%lld needs up to %lld actions; the limit is %lld",
                          pb->pp, z->v, pb->m, actions, PS_MAX_ACTIONS);
    return 0;
}

/* The optional parameters that the family's row does not take are refused. */
static int check_options(ps_schedule *s, const ps__family *f, const ps_problem *pb)
{
    if (pb->group && !(f->options & PS__OPT_GROUP))
        return ps__seterr(s->err, PS_EUNSUPPORTED,
                          "group_size applies to the interleaved and adaptive families only; %s "
                          "has no group size to set",
                          f->name);
    if ((pb->extra_warmup >= 0 || pb->split_bwd) && !(f->options & PS__OPT_ADAPTIVE))
        return ps__seterr(s->err, PS_EUNSUPPORTED,
                          "%s applies to the adaptive family only; %s has no such option",
                          pb->extra_warmup >= 0 ? "extra_warmup" : "split_backward", f->name);
    return 0;
}

/* PS_ECONFIG when the problem's per-stage table `key` (n entries, 0 = none) does not have one
 * entry per stage. */
static int check_stage_count(ps_schedule *s, const char *key, size_t n, const ps__family *f,
                             const ps_problem *pb, const gen_size *z)
{
    if (!n || n == (size_t)z->nstages)
        return 0;
    return ps__seterr(s->err, PS_ECONFIG,
                      "%s has %zu entr%s but %s with pp=%lld, vpp=%lld has %lld stages", key, n,
                      n == 1 ? "y" : "ies", f->name, pb->pp, z->v, z->nstages);
}

/* The per-stage tables (memory, costs, MoE layers) must fit the stages the family makes, and
 * the micro-batch weights its micro-batches. */
static int check_stage_tables(ps_schedule *s, const ps__family *f, const ps_problem *pb,
                              const gen_size *z)
{
    int rc = check_stage_count(s, "stage_memory", pb->n_stage_mem, f, pb, z);
    if (rc)
        return rc;
    if (pb->n_mb_weights && pb->n_mb_weights != (size_t)pb->m)
        return ps__seterr(s->err, PS_ECONFIG,
                          "microbatch_weights has %zu entr%s but there are %lld micro-batches "
                          "(one weight per micro-batch)",
                          pb->n_mb_weights, pb->n_mb_weights == 1 ? "y" : "ies", pb->m);
    rc = check_stage_count(s, "stage_costs", pb->n_stage_costs, f, pb, z);
    if (rc)
        return rc;
    if (!pb->has_moe)
        return 0;
    /* The extras are priced by the simulator and, for zb-auto, planned with. */
    rc = check_stage_count(s, "the MoE extra costs", pb->n_moe_extra, f, pb, z);
    if (rc)
        return rc;
    return ps__check_stage_layers(pb, (int32_t)(z->nstages / z->copies), s->err);
}

static void fill_params(ps__params *p, const ps_problem *pb, const gen_size *z)
{
    p->p = (int32_t)pb->pp;
    p->v = (int32_t)z->v;
    p->m = (int32_t)pb->m;
    p->group = (int32_t)(pb->group ? pb->group : pb->pp);
    p->delta = (int32_t)(pb->extra_warmup >= 0 ? pb->extra_warmup : 1);
    p->split = pb->split_bwd;
    p->pb = pb;
}

/* The IR with room for the family's actions, its placement and its paths: one through every
 * stage, or, with two model copies, copy 0 (stages 0..p-1) for the first half of the
 * micro-batches and copy 1 (stages p..2p-1, stage p+s on rank p-1-s) for the rest. */
static int lay_out(ps_schedule *s, const ps__family *f, int family, const ps__params *p,
                   const gen_size *z)
{
    int rc = ps__schedule_alloc(s, p->p, (int32_t)z->nstages, p->m, z->copies, NULL,
                                (int64_t)p->v * p->m * f->units, (int32_t)z->nstages);
    if (rc)
        return rc;
    s->family = family;
    s->placement = f->placement;
    s->param_copies = z->copies;
    s->group = (p->v > 1 && (f->options & PS__OPT_GROUP)) ? p->group : 0;
    for (int32_t i = 0; i < s->nstages; i++)
        s->stage_rank[i] = place_stage(f->placement, i, p->p);
    if (z->copies == 1) {
        ps__schedule_single_path(s);
        return 0;
    }
    for (int32_t i = 0; i < s->nstages; i++)
        s->path_stages[i] = i;
    s->path_off[0] = 0;
    s->path_off[1] = p->p;
    s->path_off[2] = 2 * p->p;
    s->path_len[0] = s->path_len[1] = p->p;
    s->path_mb0[0] = 0;
    s->path_mbn[0] = p->m / 2;
    s->path_mb0[1] = p->m / 2;
    s->path_mbn[1] = p->m - p->m / 2;
    ps__schedule_index_paths(s);
    return 0;
}

/*
 * Runs the family's generator on the laid-out IR. A generator fails for want of memory, or
 * because its program broke one of its own invariants: a bug, reported as PS_EINTERNAL with
 * what broke rather than aborting, so that the library keeps its promise never to abort.
 * Either way s is left empty. Whatever the code, the generator's own message in s->err says
 * more than the code's text (what it could not allocate, which invariant broke), so it is
 * kept, prefixed with the family's name unless it names the family already; the code's text
 * stands in only when the generator left no message.
 */
static int run_generator(ps_schedule *s, const ps__family *f, const ps__params *p)
{
    s->err[0] = 0;
    int rc = f->generate(s, p);
    if (!rc) {
        s->err[0] = 0;
        return 0;
    }
    char why[PS__ERRLEN];
    memcpy(why, s->err, sizeof why);
    ps__schedule_clear(s);
    size_t nlen = strlen(f->name);
    if (why[0] && strncmp(why, f->name, nlen) == 0 && why[nlen] == ':')
        return ps__seterr(s->err, rc, "%s", why);
    if (why[0])
        return ps__seterr(s->err, rc, "%s: %s", f->name, why);
    return ps__seterr(s->err, rc, "%s: %s while generating", f->name, ps_strerror(rc));
}

int ps_schedule_generate(ps_schedule *s, const ps_problem *pb)
{
    if (!s)
        return PS_EINVAL;
    if (!pb)
        return ps__seterr(s->err, PS_EINVAL, "no problem given");
    const ps__family *f = &ps__families[pb->family];
    gen_size z = {0, 0, 1};
    int rc = check_limits(s, f, pb, &z);
    if (rc)
        return rc;
    rc = check_options(s, f, pb);
    if (rc)
        return rc;
    rc = check_stage_tables(s, f, pb, &z);
    if (rc)
        return rc;
    ps__params p;
    fill_params(&p, pb, &z);
    if (f->check(&p, s->err))
        return PS_EUNSUPPORTED;
    rc = lay_out(s, f, pb->family, &p, &z);
    if (rc)
        return rc;
    return run_generator(s, f, &p);
}
