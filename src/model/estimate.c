/*
 * ps_estimate_run: a real model on real hardware with a parallel setup, turned into per-stage
 * durations in seconds and per-stage activation bytes (cost.c), then simulated by the engine:
 * the schedule decides the bubble and how many micro-batches' activations a rank holds at its
 * peak, the model decides the durations. A dense model gives each virtual stage its F, I and
 * W; a MoE model goes through the overlap planner (ps_moe_derive, the layer costs replaced by
 * this model's compute figures) and the stage's other work (embedding, output layer, loss) is
 * added per stage. After the pipeline come the data-parallel gradient reduction and the
 * optimizer step. docs/model.md states every formula and assumption.
 *
 * The search calls this for millions of configurations, so the handle keeps its problem,
 * schedule, simulation and per-stage tables across runs (they only grow), keeps the schedule
 * while its shape does not change and, in the simulator, the MoE overlap plans while the model
 * does not (estimate.h).
 * SPDX-License-Identifier: MIT
 */
#include "model/estimate.h"
#include "model/cost.h"
#include "model/partition.h"

#include <math.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MEM_UNIT 1024.0 /* stage_memory is given in KiB (keeps it far below PS_MAX_COST) */

/* The inputs of ps_schedule_generate() that the estimate's problem holds (internal.h): while
 * they stay the same, so does the schedule of a family whose generator does not read the
 * problem's costs. */
typedef struct shape {
    int family, split_bwd, has_moe;
    long long pp, vpp, m, group, extra_warmup;
    size_t n_stage_costs, n_stage_mem;
} shape;

/* The exact peak memory's walks kept (exact_memory): the activation peak of every rank of
 * the last PEAK_WAYS (schedule, stage memory) pairs of runs of at most PEAK_STAGES stages. */
#define PEAK_WAYS 32
#define PEAK_STAGES 256
typedef struct peak_cache {
    uint64_t gen[PEAK_WAYS]; /* the schedule (the handle's gen when it was made); 0: empty */
    int32_t n[PEAK_WAYS];    /* its stages */
    ps_stage_mem *mem;       /* PEAK_WAYS x PEAK_STAGES: the stage memory of the walk */
    double *peak;            /* PEAK_WAYS x PEAK_STAGES: the ranks' peaks (pp <= stages) */
    int next;                /* the way replaced next */
    uint64_t hits;
} peak_cache;

struct ps_estimate {
    ps_allocator al;
    ps_problem *pb;
    ps_schedule *s;
    ps_sim *sim;
    /* The shape s was generated and validated for (have_shape 0: none, s must be made). */
    shape shape;
    int have_shape, validated; /* validated: s passed ps_schedule_validate */
    uint64_t gen;              /* schedules generated on s: names the one s holds */
    peak_cache pc;
    /* Per virtual stage (cap_st entries each): the layers it holds, its durations, the extras
     * of MoE mode, its memory model, its TP and CP seconds in F and in I, scratch. */
    size_t cap_st;
    ps_stage_layers *sl;
    ps_stage_cost *cost, *extra;
    ps_stage_mem *mem;
    double *tp_f, *tp_i, *cp_f, *cp_i, *wg_end, *act;
    int32_t *counts;      /* 3 blocks: the MoE layer counts, the partition's best and candidate */
    int32_t model_stages; /* entries of sl the last run filled */
    ps__partition_stats part; /* the last automatic partition (evals 0: none) */
    /* Per rank. */
    size_t cap_rk;
    ps_rank_memory *rm;
    double *tail; /* 3 per rank: its pipeline's end, its exposed DP and its optimizer seconds */
    double *rpd, *rpe; /* per rank: its dense and expert parameters (rank_params_all) */
    double *rkw;       /* 6 per rank: the bound's sums over each rank's stages */
    int32_t *rkn;      /* per rank: the bound's stage count */
    int32_t *remb;     /* per rank: 1 when it holds the embedding (rank_params_all) */
    /* The last schedule name plan_schedule looked up, its registry index and information: the
     * search names the same few families millions of times. fam_name[0] 0: none yet. */
    char fam_name[32];
    int fam_idx;
    ps_family_info fam_info;
    ps_estimate_result res;
    int have;
    /* The inputs of the last simulation that ran to its end (snap_n stages; snap_n 0: none):
     * while the schedule is kept and they are the same, the simulation would give the same
     * timeline, so the next run reuses it (reuse_simulation). */
    size_t snap_n;
    double *snap; /* 7 per stage (cap_st): mem f, b, w, cost (dense) or extra (MoE) f, b, w,
                     layers */
    ps_moe_model snap_moe;
    double snap_c;
    uint64_t reused;
    /* The imbalance the next runs include (ps_estimate_set_microbatch_weights,
     * ps_estimate_set_moe_imbalance): n_mbw weights (0: none), the MoE factors (1: none). */
    double *mbw;
    size_t n_mbw;
    double moe_gemm, moe_a2a;
    char err[PS__ERRLEN];
};

int ps_estimate_new(ps_estimate **out, const ps_allocator *alloc)
{
    ps_allocator al;
    if (!out)
        return PS_EINVAL;
    *out = NULL;
    ps__alloc_init(&al, alloc);
    ps_estimate *e = ps__calloc(&al, 1, sizeof *e);
    if (!e)
        return PS_ENOMEM;
    e->al = al;
    e->moe_gemm = e->moe_a2a = 1.0;
    if (ps_problem_new(&e->pb, &al) || ps_schedule_new(&e->s, &al) || ps_sim_new(&e->sim, &al)) {
        ps_estimate_free(e);
        return PS_ENOMEM;
    }
    *out = e;
    return 0;
}

static void free_stage_tables(ps_estimate *e)
{
    const ps_allocator *a = &e->al;
    size_t n = e->cap_st;
    ps__free(a, e->sl, n, sizeof *e->sl);
    ps__free(a, e->cost, n, sizeof *e->cost);
    ps__free(a, e->extra, n, sizeof *e->extra);
    ps__free(a, e->mem, n, sizeof *e->mem);
    ps__free(a, e->tp_f, 7 * n, sizeof(double)); /* one block: tp_f .. act */
    ps__free(a, e->counts, 3 * n, sizeof *e->counts);
    ps__free(a, e->snap, 7 * n, sizeof *e->snap);
    e->snap = NULL;
    e->snap_n = 0;
    e->sl = NULL;
    e->cost = e->extra = NULL;
    e->mem = NULL;
    e->tp_f = e->tp_i = e->cp_f = e->cp_i = e->wg_end = e->act = NULL;
    e->counts = NULL;
    e->cap_st = 0;
}

void ps_estimate_free(ps_estimate *e)
{
    if (!e)
        return;
    free_stage_tables(e);
    ps__free(&e->al, e->rm, e->cap_rk, sizeof *e->rm);
    ps__free(&e->al, e->tail, 3 * e->cap_rk, sizeof *e->tail);
    ps__free(&e->al, e->rpd, 2 * e->cap_rk, sizeof *e->rpd);
    ps__free(&e->al, e->remb, e->cap_rk, sizeof *e->remb);
    ps__free(&e->al, e->rkn, e->cap_rk, sizeof *e->rkn);
    ps__free(&e->al, e->rkw, 6 * e->cap_rk, sizeof *e->rkw);
    ps__free(&e->al, e->pc.mem, PEAK_WAYS * PEAK_STAGES, sizeof *e->pc.mem);
    ps__free(&e->al, e->pc.peak, PEAK_WAYS * PEAK_STAGES, sizeof *e->pc.peak);
    ps__free(&e->al, e->mbw, e->n_mbw, sizeof *e->mbw);
    ps_sim_free(e->sim);
    ps_schedule_free(e->s);
    ps_problem_free(e->pb);
    ps_allocator a = e->al;
    ps__free(&a, e, 1, sizeof *e);
}

const char *ps_estimate_last_error(const ps_estimate *e)
{
    return e ? e->err : "invalid argument: NULL estimate";
}

/* Room for n stages and p ranks; the tables only grow, so a repeated run does not allocate. */
static int reserve(ps_estimate *e, size_t n, size_t p)
{
    const ps_allocator *a = &e->al;
    if (n > e->cap_st) {
        free_stage_tables(e);
        e->sl = ps__alloc(a, n, sizeof *e->sl);
        e->cost = ps__alloc(a, n, sizeof *e->cost);
        e->extra = ps__alloc(a, n, sizeof *e->extra);
        e->mem = ps__alloc(a, n, sizeof *e->mem);
        e->tp_f = ps__alloc(a, 7 * n, sizeof(double));
        e->counts = ps__alloc(a, 3 * n, sizeof *e->counts);
        e->snap = ps__alloc(a, 7 * n, sizeof *e->snap);
        e->cap_st = n;
        if (!e->sl || !e->cost || !e->extra || !e->mem || !e->tp_f || !e->counts || !e->snap) {
            free_stage_tables(e);
            return ps__seterr(e->err, PS_ENOMEM, "out of memory for %zu stages", n);
        }
        e->tp_i = e->tp_f + n;
        e->cp_f = e->tp_f + 2 * n;
        e->cp_i = e->tp_f + 3 * n;
        e->wg_end = e->tp_f + 4 * n;
        e->act = e->tp_f + 5 * n; /* 2n: activation bytes, then the wgrad part */
    }
    if (p > e->cap_rk) {
        ps_rank_memory *rm = ps__alloc(a, p, sizeof *rm);
        double *tail = ps__alloc(a, 3 * p, sizeof *tail), *rpd = ps__alloc(a, 2 * p, sizeof *rpd);
        int32_t *remb = ps__alloc(a, p, sizeof *remb), *rkn = ps__alloc(a, p, sizeof *rkn);
        double *rkw = ps__alloc(a, 6 * p, sizeof *rkw);
        if (!rm || !tail || !rpd || !remb || !rkn || !rkw) {
            ps__free(a, rm, p, sizeof *rm);
            ps__free(a, tail, 3 * p, sizeof *tail);
            ps__free(a, rpd, 2 * p, sizeof *rpd);
            ps__free(a, remb, p, sizeof *remb);
            ps__free(a, rkn, p, sizeof *rkn);
            ps__free(a, rkw, 6 * p, sizeof *rkw);
            return ps__seterr(e->err, PS_ENOMEM, "out of memory for %zu ranks", p);
        }
        ps__free(a, e->rm, e->cap_rk, sizeof *e->rm);
        ps__free(a, e->tail, 3 * e->cap_rk, sizeof *e->tail);
        ps__free(a, e->rpd, 2 * e->cap_rk, sizeof *e->rpd);
        ps__free(a, e->remb, e->cap_rk, sizeof *e->remb);
        ps__free(a, e->rkn, e->cap_rk, sizeof *e->rkn);
        ps__free(a, e->rkw, 6 * e->cap_rk, sizeof *e->rkw);
        e->rkn = rkn;
        e->rkw = rkw;
        e->rm = rm;
        e->tail = tail;
        e->rpd = rpd;
        e->rpe = rpd + p;
        e->remb = remb;
        e->cap_rk = p;
    }
    return 0;
}

/* ---- checks ---------------------------------------------------------------------------------- */

#define CFG(...) ps__seterr(e->err, PS_ECONFIG, __VA_ARGS__)

static int check_hardware(ps_estimate *e, const ps_hardware *hw, int prec)
{
    double peak = prec == PS_PREC_FP8 ? hw->peak_tflops_fp8 : hw->peak_tflops_bf16;
    if (!(peak > 0))
        return CFG("hardware %s has no %s peak (peak_tflops_%s = %g)", hw->name,
                   prec == PS_PREC_FP8 ? "FP8" : "BF16", prec == PS_PREC_FP8 ? "fp8" : "bf16",
                   peak);
    if (!(hw->peak_tflops_bf16 > 0))
        return CFG("hardware peak_tflops_bf16 must be > 0; got %g", hw->peak_tflops_bf16);
    const double eff[] = {hw->gemm_eff,      hw->attn_eff,      hw->mem_eff,
                          hw->bus_eff_intra, hw->bus_eff_inter, hw->grouped_gemm_eff};
    static const char *const names[] = {"gemm_eff",      "attn_eff",      "mem_eff",
                                        "bus_eff_intra", "bus_eff_inter", "grouped_gemm_eff"};
    for (int i = 0; i < 6; i++)
        if (!(eff[i] > 0 && eff[i] <= 1))
            return CFG("hardware %s must be in (0, 1]; got %g", names[i], eff[i]);
    if (!(hw->hbm_gbps > 0) || !(hw->intra_gbps > 0) || !(hw->inter_gbps > 0))
        return CFG("hardware bandwidths must be > 0; got hbm_gbps %g, intra_gbps %g, "
                   "inter_gbps %g",
                   hw->hbm_gbps, hw->intra_gbps, hw->inter_gbps);
    if (!(hw->gemm_half_dim >= 0) || !(hw->lat_intra_us >= 0) || !(hw->lat_inter_us >= 0) ||
        !(hw->overhead_gib >= 0) || !(hw->hbm_gib > 0))
        return CFG("hardware gemm_half_dim, latencies and overhead_gib must be >= 0 and hbm_gib "
                   "> 0");
    return 0;
}

static int check_model(ps_estimate *e, const ps_transformer *m)
{
    if (m->layers < 1 || m->hidden < 1 || m->heads < 1 || m->vocab < 1 || m->kv_heads < 0 ||
        m->head_dim < 0 || m->ffn < 0)
        return CFG("model %s: layers, hidden, heads and vocab must be >= 1 (got %d, %d, %d, %d)",
                   m->name, m->layers, m->hidden, m->heads, m->vocab);
    int32_t g = m->kv_heads > 0 ? m->kv_heads : m->heads;
    if (m->heads % g)
        return CFG("model heads (%d) must be a multiple of kv_heads (%d)", m->heads, g);
    if (m->experts > 0) {
        if (m->top_k < 1 || m->top_k > m->experts)
            return CFG("model top_k must be in [1, experts = %d]; got %d", m->experts, m->top_k);
        if (m->first_dense < 0 || m->first_dense > m->layers || m->shared_experts < 0)
            return CFG("model first_dense must be in [0, layers = %d]; got %d", m->layers,
                       m->first_dense);
        if ((m->moe_ffn > 0 ? m->moe_ffn : m->ffn) < 1)
            return CFG("model moe_ffn (or ffn) must be >= 1 for a MoE model");
    }
    if ((m->experts == 0 || m->first_dense > 0) && m->ffn < 1)
        return CFG("model ffn must be >= 1 where there are dense layers; got %d", m->ffn);
    return 0;
}

/* Fills the setup of (m, hw, tr) after checking every divisibility of the parallel setup. */
static int check_train(ps_estimate *e, ps__setup *u, const ps_transformer *m, const ps_hardware *hw,
                       const ps_train *tr)
{
    int32_t tp = tr->tp, pp = tr->pp, cp = tr->cp > 0 ? tr->cp : 1;
    int32_t ep = tr->ep > 0 ? tr->ep : 1, vpp = tr->vpp > 0 ? tr->vpp : 1;
    int32_t etp = tr->etp > 0 ? tr->etp : tp;
    if (tr->gpus < 1 || tp < 1 || pp < 1 || tr->mbs < 1 || tr->seq < 1 || tr->gbs < 1)
        return CFG("gpus, tp, pp, mbs, seq and gbs must be >= 1; got gpus %d, tp %d, pp %d, "
                   "mbs %d, seq %d, gbs %lld",
                   tr->gpus, tp, pp, tr->mbs, tr->seq, (long long)tr->gbs);
    if (tr->precision != PS_PREC_BF16 && tr->precision != PS_PREC_FP8)
        return CFG("precision must be 0 (bf16) or 1 (fp8); got %d", tr->precision);
    if (tr->extra_warmup < 0 || tr->extra_warmup > PS_MAX_MICROBATCHES ||
        (tr->split_backward != 0 && tr->split_backward != 1))
        return CFG("extra_warmup must be in [0, %d] and split_backward 0 or 1; got %d, %d",
                   PS_MAX_MICROBATCHES, tr->extra_warmup, tr->split_backward);
    if (tr->recompute < PS_RECOMPUTE_NONE || tr->recompute > PS_RECOMPUTE_FULL ||
        tr->recompute_layers < 0)
        return CFG("recompute must be 0, 1 or 2 and recompute_layers >= 0; got %d, %d",
                   tr->recompute, tr->recompute_layers);
    long long tpc = (long long)tp * pp * cp;
    if (tr->gpus % tpc)
        return CFG("gpus (%d) must be divisible by tp*pp*cp = %d*%d*%d = %lld", tr->gpus, tp, pp,
                   cp, tpc);
    int32_t dp = (int32_t)(tr->gpus / tpc);
    int32_t g = m->kv_heads > 0 ? m->kv_heads : m->heads;
    if (m->heads % tp)
        return CFG("heads (%d) must be divisible by tp (%d)", m->heads, tp);
    if (g >= tp ? g % tp : tp % g)
        return CFG("kv_heads (%d) and tp (%d): one must divide the other (kv_heads below tp are "
                   "replicated)",
                   g, tp);
    if (m->experts > 0) {
        if (m->experts % ep)
            return CFG("experts (%d) must be divisible by ep (%d)", m->experts, ep);
        long long dct = (long long)dp * cp * tp;
        if (dct % ((long long)ep * etp))
            return CFG("ep*etp = %d*%d must divide dp*cp*tp = %d*%d*%d = %lld (Megatron carves "
                       "expert parallelism out of data, context and tensor parallelism)",
                       ep, etp, dp, cp, tp, dct);
    } else if (ep > 1) {
        return CFG("ep = %d needs a MoE model (experts = 0)", ep);
    }
    if (tr->gbs % ((long long)dp * tr->mbs))
        return CFG("gbs (%lld) must be divisible by dp*mbs = %d*%d = %lld", (long long)tr->gbs, dp,
                   tr->mbs, (long long)dp * tr->mbs);
    long long micro = tr->gbs / ((long long)dp * tr->mbs);
    if (micro > PS_MAX_MICROBATCHES)
        return CFG("gbs/(dp*mbs) = %lld micro-batches exceeds the limit %d", micro,
                   PS_MAX_MICROBATCHES);
    if (cp > 1 && tr->seq % (2 * cp))
        return CFG("seq (%d) must be divisible by 2*cp = %d (causal load balancing)", tr->seq,
                   2 * cp);
    int32_t gpn = tr->gpus_per_node > 0 ? tr->gpus_per_node : hw->devices_per_node;
    if (gpn < 1)
        return CFG("gpus_per_node must be >= 1 (train or hardware devices_per_node); got %d", gpn);
    memset(u, 0, sizeof *u);
    u->m = m;
    u->hw = hw;
    u->tr = tr;
    u->tp = tp, u->pp = pp, u->vpp = vpp, u->cp = cp, u->ep = ep, u->etp = etp, u->dp = dp;
    u->gpn = gpn;
    u->sp = tp > 1 && tr->sequence_parallel;
    u->micro = micro;
    u->b = tr->mbs;
    u->s = tr->seq;
    u->T = u->b * u->s / cp;
    u->ts = u->sp ? tp : 1;
    u->dh = m->head_dim > 0 ? (double)m->head_dim : (double)m->hidden / m->heads;
    u->kv_dev = g >= tp ? (double)g / tp : 1.0;
    u->peak_bf16 = hw->peak_tflops_bf16 * 1e12;
    u->peak_gemm =
        (tr->precision == PS_PREC_FP8 ? hw->peak_tflops_fp8 : hw->peak_tflops_bf16) * 1e12;
    return 0;
}

/* The schedule's name (train's, or the default) and the stage counts its placement gives. */
static int plan_schedule(ps_estimate *e, ps__setup *u, char name[32])
{
    const ps_train *tr = u->tr;
    size_t n = strnlen(tr->schedule, sizeof tr->schedule);
    if (n == sizeof tr->schedule)
        return CFG("schedule name is not NUL-terminated within %zu bytes", sizeof tr->schedule);
    memcpy(name, tr->schedule, n + 1);
    if (!n)
        strcpy(name, u->vpp > 1 ? "interleaved" : "1f1b");
    if (strcmp(name, e->fam_name) != 0) {
        int i = ps_family_lookup(name, &e->fam_info);
        if (i < 0) {
            e->fam_name[0] = 0;
            return CFG("unknown schedule '%s' (pipesched list shows the families)", name);
        }
        e->fam_idx = i;
        memcpy(e->fam_name, name, strlen(name) + 1);
    }
    const ps_family_info fi = e->fam_info;
    /* zb-auto plans either placement: the loop with vpp 1, the V with vpp 2. */
    int either = strcmp(fi.placement, "loop with vpp = 1, v with vpp = 2") == 0;
    int fixed1 = !either && strncmp(fi.constraints, "vpp = 1", 7) == 0;
    int v_place = strcmp(fi.placement, "v") == 0,
        bidir = strcmp(fi.placement, "bidirectional") == 0;
    if (either && u->vpp > 2)
        return CFG("%s plans vpp = 1 (loop placement) or 2 (V placement); vpp = %d", fi.name,
                   u->vpp);
    if (u->vpp > 1 && fixed1)
        return CFG("vpp = %d needs a schedule that takes vpp (interleaved, looped-bfs, ...); %s "
                   "takes vpp = 1",
                   u->vpp, fi.name);
    if (v_place && u->vpp > 2)
        return CFG("%s places 2 chunks per rank (V); vpp = %d", fi.name, u->vpp);
    if (v_place)
        u->vpp = 2;
    u->copies = bidir ? 2 : 1;
    u->zb_auto = strcmp(fi.name, "zb-auto") == 0;
    u->model_stages = u->pp * u->vpp;
    u->stages = u->model_stages * u->copies;
    if (u->stages > PS_MAX_STAGES)
        return ps__seterr(e->err, PS_ERANGE, "pp*vpp = %d stages exceeds the limit %d", u->stages,
                          PS_MAX_STAGES);
    return 0;
}

/* ---- durations and bytes -------------------------------------------------------------------- */

/* Everything derived once per run that the per-stage sums read. */
typedef struct derived {
    ps__layer_s dense, moe;
    double out_f, out_i, out_w, out_tp; /* output layer and loss */
    double emb_tp;                      /* embedding's SP reduce-scatter (F) / all-gather (I) */
    double act_dense, wg_dense, act_moe, wg_moe, act_rec; /* bytes per layer */
    double act_emb, act_logits;
} derived;

static void derive(const ps__setup *u, derived *d)
{
    ps__layer_times(u, 0, &d->dense);
    ps__layer_times(u, 1, &d->moe);
    ps__output_times(u, &d->out_f, &d->out_i, &d->out_w, &d->out_tp);
    d->emb_tp = ps__coll_s(u, PS__REDUCE_SCATTER, u->tp, u->T * u->m->hidden * 2.0,
                           ps__per_node(u, u->tp, 1));
    ps__layer_act_bytes(u, 0, 0, &d->act_dense, &d->wg_dense);
    ps__layer_act_bytes(u, 1, 0, &d->act_moe, &d->wg_moe);
    double w0;
    ps__layer_act_bytes(u, 0, 1, &d->act_rec, &w0);
    d->act_emb = u->T * u->m->hidden / u->ts;         /* embedding dropout mask */
    d->act_logits = 4.0 * u->T * u->m->vocab / u->tp; /* fp32 logits */
}

/* A pass of a layer takes at least the host's floor (l->fixed: a dropless MoE layer's launches
 * and routing synchronisation, which the device's work hides only when it is longer). */
static double floored(double t, const ps__layer_s *l)
{
    return t > l->fixed ? t : l->fixed;
}

/* Layer forward time (compute and exposed communication, at least the host's floor). */
static double layer_f(const ps__layer_s *l)
{
    return floored(l->attn_gemm + l->attn_core + l->mlp_gemm + l->router + l->expert + l->shared +
                       l->mem_attn + l->mem_mlp + l->tp_attn + l->tp_mlp + l->cp_f,
                   l);
}

/* Layer input-gradient time without recompute: the GEMMs again, the attention core twice,
 * the memory-bound kernels twice, the communication; at least the host's floor. */
static double layer_i(const ps__layer_s *l)
{
    return floored(l->attn_gemm + l->mlp_gemm + l->router + l->expert + l->shared +
                       2.0 * l->attn_core + 2.0 * (l->mem_attn + l->mem_mlp) + l->tp_attn +
                       l->tp_mlp + l->cp_b,
                   l);
}

/* Fills every virtual stage's F/I/W (dense path: everything; MoE path: the extras), its TP and
 * CP seconds and its memory model (KiB). */
static void stage_costs(ps_estimate *e, const ps__setup *u, const derived *d, int moe_mode)
{
    const ps_transformer *m = u->m;
    const ps_train *tr = u->tr;
    int full = tr->recompute == PS_RECOMPUTE_FULL, sel = tr->recompute == PS_RECOMPUTE_SELECTIVE;
    for (int32_t st = 0; st < u->stages; st++) {
        const ps_stage_layers *sl = &e->sl[st % u->model_stages];
        double f = 0, i = 0, w = 0, tpf = 0, tpi = 0, cpf = 0, cpi = 0, act = 0, wg = 0;
        double moe_rec = 0; /* MoE mode: the recompute of N layers per stage (moe_model) */
        int32_t rec = full ? (tr->recompute_layers > 0 && tr->recompute_layers < sl->layers
                                  ? tr->recompute_layers
                                  : sl->layers)
                           : 0;
        for (int32_t k = 0; k < sl->layers; k++) {
            int32_t l = sl->first_layer + k;
            int moe = ps__is_moe_layer(m, l);
            const ps__layer_s *L = moe ? &d->moe : &d->dense;
            double tp = L->tp_attn + L->tp_mlp;
            tpf += tp, tpi += tp, cpf += L->cp_f, cpi += L->cp_b;
            if (!moe_mode) {
                f += layer_f(L);
                i += layer_i(L);
                w += L->attn_gemm + L->mlp_gemm;
                if (sel)
                    i += L->attn_core;
                if (k < rec) {
                    i += layer_f(L);
                    tpi += tp, cpi += L->cp_f;
                }
            }
            if (moe_mode && k < rec && tr->recompute_layers > 0)
                moe_rec += layer_f(L);
            if (k < rec) {
                act += d->act_rec;
            } else {
                act += moe ? d->act_moe : d->act_dense;
                wg += moe ? d->wg_moe : d->wg_dense;
            }
        }
        ps_stage_cost x = {0, 0, 0};
        if (sl->embedding) {
            x.f += d->emb_tp, x.b += d->emb_tp;
            tpf += d->emb_tp, tpi += d->emb_tp;
            act += d->act_emb;
        }
        if (sl->loss) {
            x.f += d->out_f, x.b += d->out_i, x.w += d->out_w;
            tpf += d->out_tp, tpi += d->out_tp;
            act += d->act_logits;
        }
        x.b += moe_rec;
        e->extra[st] = x;
        e->cost[st].f = f + x.f, e->cost[st].b = i + x.b, e->cost[st].w = w + x.w;
        e->tp_f[st] = tpf, e->tp_i[st] = tpi, e->cp_f[st] = cpf, e->cp_i[st] = cpi;
        e->act[st] = act;
        /* I frees all but the weight gradients' inputs, W those (B: both). */
        e->mem[st].f = act / MEM_UNIT;
        e->mem[st].w = -wg / MEM_UNIT;
        e->mem[st].b = -e->mem[st].f - e->mem[st].w;
    }
}

/* The all-to-all operations of a MoE layer. */
static const int a2a_ops[] = {PS_OP_DISPATCH, PS_OP_COMBINE, PS_OP_COMBINE_B, PS_OP_DISPATCH_B,
                              PS_OP_REDISPATCH};

/* The MoE model for the planner: ps_moe_derive's all-to-all times (ms, turned into seconds)
 * with this model's compute times per operation. */
static int moe_model(ps_estimate *e, const ps__setup *u, const derived *d, ps_moe_model *mm)
{
    const ps_transformer *m = u->m;
    const ps_hardware *hw = u->hw;
    ps_model_dims md;
    ps_cluster cl;
    memset(&md, 0, sizeof md);
    memset(&cl, 0, sizeof cl);
    md.hidden = m->hidden;
    md.tokens = u->T / u->ts;
    md.seq_len = u->s;
    md.experts = m->experts;
    md.top_k = m->top_k;
    md.expert_ffn = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
    md.shared_experts = m->shared_experts;
    md.shared_ffn = m->shared_ffn;
    md.dense_ffn = m->ffn;
    md.bytes = 2;
    md.layers = m->layers;
    md.dense_layers = m->first_dense;
    md.permute_recompute = u->tr->recompute == PS_RECOMPUTE_FULL;
    /* The EP group's ranks are etp apart (Megatron's expert order tp-ep-dp-pp). */
    int32_t per_node = u->gpn / u->etp > 0 ? u->gpn / u->etp : 1;
    cl.devices_per_node = u->ep < per_node ? u->ep : per_node;
    cl.nodes = (double)u->ep / cl.devices_per_node;
    cl.bw_intra = hw->intra_gbps * hw->bus_eff_intra;
    cl.bw_inter = hw->inter_gbps * hw->bus_eff_inter;
    cl.lat_intra = hw->lat_intra_us;
    cl.lat_inter = hw->lat_inter_us;
    cl.tflops = u->peak_gemm / 1e12;
    cl.efficiency = hw->gemm_eff;
    int a2a = u->tr->a2a;
    int rc = ps_moe_derive(&md, &cl, a2a, mm, NULL, e->err, sizeof e->err);
    if (rc)
        return rc;
    for (int k = 0; k < PS_OP_LAYER_COUNT; k++)
        mm->moe.t[k] *= 1e-3, mm->dense.t[k] *= 1e-3;
    /* Full recompute of every layer is in the layer table; of N layers per stage
     * (recompute_layers > 0) in the stages' extras (stage_costs), since the table is one for
     * every layer. */
    int full = u->tr->recompute == PS_RECOMPUTE_FULL && u->tr->recompute_layers == 0;
    int sel = u->tr->recompute == PS_RECOMPUTE_SELECTIVE;
    for (int moe = 0; moe < 2; moe++) {
        const ps__layer_s *L = moe ? &d->moe : &d->dense;
        double *t = moe ? mm->moe.t : mm->dense.t;
        double agemm = L->attn_gemm + L->router;
        t[PS_OP_ATTN] = agemm + L->attn_core + L->mem_attn + L->tp_attn + L->cp_f;
        t[PS_OP_ATTN_DX] = agemm + 2.0 * L->attn_core + 2.0 * L->mem_attn + L->tp_attn + L->cp_b +
                           (sel ? L->attn_core : 0.0) + (full ? layer_f(L) : 0.0);
        t[PS_OP_ATTN_DW] = agemm;
        /* The slowest EP device's expert GEMMs (ps_estimate_set_moe_imbalance). */
        double mlp = moe ? L->expert * e->moe_gemm : L->mlp_gemm;
        t[PS_OP_MLP] = mlp + L->mem_mlp + L->tp_mlp;
        t[PS_OP_MLP_DX] = mlp + 2.0 * L->mem_mlp + L->tp_mlp;
        t[PS_OP_MLP_DW] = mlp;
        t[PS_OP_SHARED] = t[PS_OP_SHARED_DX] = t[PS_OP_SHARED_DW] = moe ? L->shared : 0.0;
        if (moe) /* and its all-to-all bytes */
            for (size_t k = 0; k < sizeof a2a_ops / sizeof a2a_ops[0]; k++)
                t[a2a_ops[k]] *= e->moe_a2a;
        /* The host's floor of the pass: what the compute stream's F (and I) parts do not cover
         * is spent in the MLP operation, where the routing synchronises. */
        double f = t[PS_OP_ATTN] + t[PS_OP_MLP] + t[PS_OP_SHARED];
        double i = t[PS_OP_ATTN_DX] + t[PS_OP_MLP_DX] + t[PS_OP_SHARED_DX];
        t[PS_OP_MLP] += f < L->fixed ? L->fixed - f : 0.0;
        t[PS_OP_MLP_DX] += i < L->fixed ? L->fixed - i : 0.0;
    }
    return 0;
}

/* ---- the problem, the schedule, the simulations ------------------------------------------- */

static int fail(ps_estimate *e, int rc, const char *what, const char *msg)
{
    if (rc == PS_ENOMEM)
        return ps__seterr(e->err, rc, "out of memory (%s)", what);
    return ps__seterr(e->err, rc, "%s: %s", what, msg);
}

/* What depends on the split: each stage's memory and durations (a dense model) or its layer
 * count and extras (a MoE model, after ps_problem_set_moe). The automatic partition sets only
 * these between candidates. */
static int set_stage_tables(ps_estimate *e, const ps__setup *u)
{
    ps_problem *pb = e->pb;
    size_t n = (size_t)u->stages;
    int rc;
    if ((rc = ps_problem_set_stage_memory(pb, e->mem, n)))
        return fail(e, rc, "problem", ps_problem_last_error(pb));
    if (u->m->experts == 0) {
        if ((rc = ps_problem_set_stage_costs(pb, e->cost, n)))
            return fail(e, rc, "problem", ps_problem_last_error(pb));
        return 0;
    }
    for (int32_t s = 0; s < u->model_stages; s++)
        e->counts[s] = e->sl[s].layers;
    if ((rc = ps_problem_set_stage_layers(pb, e->counts, (size_t)u->model_stages)) ||
        (rc = ps__problem_set_moe_extra(pb, e->extra, n)))
        return fail(e, rc, "problem", ps_problem_last_error(pb));
    return 0;
}

static void rank_params_all(ps_estimate *e, const ps__setup *u, const int32_t *srank);
static double working_set(const ps__setup *u, const derived *d);

/*
 * zb-auto plans under a memory limit (ps_problem_set_mem_limit, in the stage memory's KiB
 * units): the activation memory the device leaves on the pipeline rank with the least of it,
 * hbm less the rank's weights, gradients, optimizer state, framework overhead and recompute
 * working set (the problem takes one limit for every rank, so the smallest budget is the one
 * that fits them all). 0 (no limit) when some rank has nothing left: the run is then planned
 * without one and reported as not fitting. zb-auto's placement: the loop for vpp 1, the V for
 * vpp 2. Uses e->counts as the stage ranks (set_stage_tables fills it afterwards).
 */
static double zb_auto_limit(ps_estimate *e, const ps__setup *u, const derived *d)
{
    int32_t p = u->pp, ns = u->stages, *srank = e->counts;
    for (int32_t st = 0; st < ns; st++)
        srank[st] = u->vpp == 2 && st >= p ? 2 * p - 1 - st : st % p;
    double dd = (double)u->dp * u->cp, edp = dd * u->tp / (u->ep * u->etp);
    double ws = working_set(u, d), least = INFINITY;
    rank_params_all(e, u, srank);
    for (int32_t r = 0; r < p; r++) {
        double pd = e->rpd[r], pe = e->rpe[r];
        double held = u->tr->distributed_optimizer ? pd / dd + pe / edp : pd + pe;
        double left =
            (u->hw->hbm_gib - u->hw->overhead_gib) * GIB - 6.0 * (pd + pe) - 12.0 * held - ws;
        if (left < least)
            least = left;
    }
    return least > 0 && isfinite(least) ? least / MEM_UNIT : 0.0;
}

static int build_problem(ps_estimate *e, const ps__setup *u, const derived *d, double c)
{
    ps_problem *pb = e->pb;
    int rc;
    /* What ps_problem_set_schedule(pb, name) sets: plan_schedule found the name. */
    pb->family = e->fam_idx;
    if ((rc = ps_problem_set_int(pb, PS_PARAM_PP, u->pp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_VPP, u->copies > 1 ? 1 : u->vpp)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_MICROBATCHES, u->micro)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_GROUP_SIZE, u->tr->group_size)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_EXTRA_WARMUP,
                                 u->tr->extra_warmup > 0 ? u->tr->extra_warmup : -1)) ||
        (rc = ps_problem_set_int(pb, PS_PARAM_SPLIT_BACKWARD, u->tr->split_backward)) ||
        (rc = ps_problem_set_cost(pb, PS_COST_C, c)) ||
        (rc = ps_problem_set_mem_limit(pb, u->zb_auto ? zb_auto_limit(e, u, d) : 0.0)))
        return fail(e, rc, "problem", ps_problem_last_error(pb));
    if (e->n_mbw && e->n_mbw != (size_t)u->micro)
        return ps__seterr(e->err, PS_ECONFIG,
                          "estimate: %zu micro-batch weights given, the job has %lld "
                          "micro-batches per replica (gbs / (dp . mbs))",
                          e->n_mbw, (long long)u->micro);
    if ((rc = ps_problem_set_microbatch_weights(pb, e->mbw, e->n_mbw)))
        return fail(e, rc, "problem", ps_problem_last_error(pb));
    if (u->m->experts == 0) {
        if ((rc = ps_problem_set_moe(pb, NULL)) || (rc = ps__problem_set_moe_extra(pb, NULL, 0)))
            return fail(e, rc, "problem", ps_problem_last_error(pb));
        return set_stage_tables(e, u);
    }
    ps_moe_model mm;
    if ((rc = moe_model(e, u, d, &mm)))
        return rc;
    if ((rc = ps_problem_set_stage_costs(pb, NULL, 0)) || (rc = ps_problem_set_moe(pb, &mm)))
        return fail(e, rc, "problem", ps_problem_last_error(pb));
    return set_stage_tables(e, u);
}

static shape shape_of(const ps_problem *pb)
{
    shape k = {pb->family, pb->split_bwd,    pb->has_moe,       pb->pp,         pb->vpp, pb->m,
               pb->group,  pb->extra_warmup, pb->n_stage_costs, pb->n_stage_mem};
    return k;
}

static int same_shape(const shape *a, const shape *b)
{
    return a->family == b->family && a->split_bwd == b->split_bwd && a->has_moe == b->has_moe &&
           a->pp == b->pp && a->vpp == b->vpp && a->m == b->m && a->group == b->group &&
           a->extra_warmup == b->extra_warmup && a->n_stage_costs == b->n_stage_costs &&
           a->n_stage_mem == b->n_stage_mem;
}

/*
 * The problem's schedule, generated and validated (which records the issue order the
 * simulator replays), or the last run's when the shape is the same and the family does not
 * plan with the costs (zb-auto does): the search changes the costs far more often than the
 * shape. What generation would still check on a kept schedule, the MoE layers per stage (the
 * stage tables' counts are in the shape), is checked here with generation's message.
 * validate 0 (the exact memory of the search, which only reads the action lists) leaves the
 * validation to the first simulation of the schedule.
 */
static int make_schedule(ps_estimate *e, int validate)
{
    shape k = shape_of(e->pb);
    int rc;
    if (e->have_shape && same_shape(&k, &e->shape) && !ps__families[k.family].costs) {
        ps_schedule *s = e->s;
        if (k.has_moe && (rc = ps__check_stage_layers(e->pb, s->nstages / s->param_copies, s->err)))
            return fail(e, rc, "schedule", s->err);
    } else {
        e->have_shape = 0;
        e->validated = 0;
        e->gen++;      /* the walks kept (peak_cache) are of the schedule replaced here */
        e->snap_n = 0; /* the simulation kept is of the schedule replaced here */
        rc = ps_schedule_generate(e->s, e->pb);
        if (rc && rc != PS_ENOMEM && ps_problem_mem_limit(e->pb) > 0) {
            /* zb-auto under the device's budget (zb_auto_limit) cannot hold one micro-batch:
             * planned without a limit, the run is reported as not fitting. */
            if ((rc = ps_problem_set_mem_limit(e->pb, 0.0)) == 0)
                rc = ps_schedule_generate(e->s, e->pb);
        }
        if (rc)
            return fail(e, rc, "schedule", ps_schedule_last_error(e->s));
        e->shape = k;
        e->have_shape = 1;
    }
    if (validate && !e->validated) {
        if ((rc = ps_schedule_validate(e->s))) {
            e->have_shape = 0;
            return fail(e, rc, "schedule", ps_schedule_last_error(e->s));
        }
        e->validated = 1;
    }
    return 0;
}

/* The problem's inputs of the simulation as one row of 7 doubles per stage (snap layout). */
static void snap_row(const ps_estimate *e, const ps__setup *u, int32_t st, double *row)
{
    const ps_stage_cost *x = u->m->experts > 0 ? &e->extra[st] : &e->cost[st];
    row[0] = e->mem[st].f, row[1] = e->mem[st].b, row[2] = e->mem[st].w;
    row[3] = x->f, row[4] = x->b, row[5] = x->w;
    row[6] = u->m->experts > 0 && st < u->model_stages ? e->sl[st].layers : 0;
}

static int same_moe(const ps_moe_model *a, const ps_moe_model *b)
{
    return a->layers == b->layers && a->dense_layers == b->dense_layers &&
           a->planner == b->planner && !memcmp(&a->moe, &b->moe, sizeof a->moe) &&
           !memcmp(&a->dense, &b->dense, sizeof a->dense) && a->p2p == b->p2p &&
           a->slowdown == b->slowdown;
}

/*
 * Whether the simulation on the handle is the one this run would make: the schedule is kept
 * (same shape, a family that does not plan with the costs), and the transfer cost, every
 * stage's memory and durations (or, for a MoE model, its layer counts, extras and the MoE
 * model the planner reads) are bit for bit the last simulated run's. The simulator is a
 * function of these and the schedule, so its timeline, metrics and plans stand. (Durations
 * that are all one multiple of the last run's would scale the timeline by that multiple; the
 * search almost never meets them except with the multiple 1, so only that case is reused:
 * configurations that differ only in the distributed optimizer or the overlaps; docs/tune.md.)
 */
static int reuse_simulation(ps_estimate *e, const ps__setup *u, double c)
{
    size_t n = (size_t)u->stages;
    if (!e->snap_n || e->snap_n != n || !e->have_shape || e->snap_c != c)
        return 0;
    shape k = shape_of(e->pb);
    if (!same_shape(&k, &e->shape) || ps__families[k.family].costs)
        return 0;
    double row[7];
    for (size_t st = 0; st < n; st++) {
        snap_row(e, u, (int32_t)st, row);
        if (memcmp(row, e->snap + 7 * st, sizeof row))
            return 0;
    }
    if (u->m->experts > 0) {
        ps_moe_model mm;
        if (ps_problem_get_moe(e->pb, &mm) || !same_moe(&mm, &e->snap_moe))
            return 0;
    }
    return 1;
}

/* Records the inputs of the simulation that just ran. */
static void snap_take(ps_estimate *e, const ps__setup *u, double c)
{
    size_t n = (size_t)u->stages; /* at most cap_st: reserve() made room */
    e->snap_n = 0;
    if (u->m->experts > 0 && ps_problem_get_moe(e->pb, &e->snap_moe))
        return;
    for (size_t st = 0; st < n; st++)
        snap_row(e, u, (int32_t)st, e->snap + 7 * st);
    e->snap_c = c;
    e->snap_n = n;
}

static int simulate(ps_estimate *e)
{
    int rc;
    if ((rc = make_schedule(e, 1)))
        return rc;
    if ((rc = ps_sim_run(e->sim, e->s, e->pb)))
        return fail(e, rc, "simulation", ps_sim_last_error(e->sim));
    return 0;
}

/* ---- results ------------------------------------------------------------------------------- */

/* One rank's figures after the pipeline. */
typedef struct rank_fig {
    double end, busy, tp, cp, dp, opt, pd, pe;
} rank_fig;

/* The dense and expert parameters every rank holds, into e->rpd and e->rpe (srank: each
 * stage's rank), in one pass over the stages; each rank's sums take its stages in increasing
 * order and their layers in order. */
static void rank_params_all(ps_estimate *e, const ps__setup *u, const int32_t *srank)
{
    const ps_transformer *m = u->m;
    double dl, el, dm, em;
    ps__layer_params(m, 0, &dl, &el);
    ps__layer_params(m, 1, &dm, &em);
    double emb = (double)m->vocab * m->hidden / u->tp;
    double *pd = e->rpd, *pe = e->rpe;
    int32_t *has_emb = e->remb;
    for (int32_t r = 0; r < u->pp; r++)
        pd[r] = pe[r] = 0.0, has_emb[r] = 0;
    for (int32_t st = 0; st < u->stages; st++)
        if (e->sl[st % u->model_stages].embedding)
            has_emb[srank[st]] = 1;
    for (int32_t st = 0; st < u->stages; st++) {
        int32_t r = srank[st];
        const ps_stage_layers *sl = &e->sl[st % u->model_stages];
        for (int32_t k = 0; k < sl->layers; k++) {
            int moe = ps__is_moe_layer(m, sl->first_layer + k);
            pd[r] += (moe ? dm : dl) / u->tp;
            pe[r] += moe ? em / ((double)u->ep * u->etp) : 0.0;
        }
        if (sl->embedding)
            pd[r] += emb;
        if (sl->loss) {
            pd[r] += m->hidden / (double)u->tp; /* final norm */
            if (!(m->tied_embeddings && has_emb[r]))
                pd[r] += emb;
        }
    }
}

/* The seconds after a rank's pipeline of its parameters pd (dense) and pe (experts): the
 * gradient reduction (*grads), the parameter all-gather of the distributed optimizer (*gather)
 * and the optimizer step (*opt), which reads and writes 16 bytes per parameter it holds. */
static void rank_tail(const ps__setup *u, double pd, double pe, double *grads, double *gather,
                      double *opt)
{
    double d = (double)u->dp * u->cp, edp = (double)u->dp * u->cp * u->tp / (u->ep * u->etp);
    /* The dense gradients' group (dp.cp) has its ranks tp apart, the experts' (edp) ep.etp. */
    double gd = ps__per_node(u, d, u->tp), ge = ps__per_node(u, edp, (double)u->ep * u->etp);
    int dist = u->tr->distributed_optimizer;
    int red = dist ? PS__REDUCE_SCATTER : PS__ALL_REDUCE;
    *grads = ps__coll_s(u, red, d, 4.0 * pd, gd) + ps__coll_s(u, red, edp, 4.0 * pe, ge);
    *gather = dist ? ps__coll_s(u, PS__ALL_GATHER, d, 2.0 * pd, gd) +
                         ps__coll_s(u, PS__ALL_GATHER, edp, 2.0 * pe, ge)
                   : 0.0;
    double held = dist ? pd / d + pe / edp : pd + pe;
    *opt = 16.0 * held / (u->hw->hbm_gbps * 1e9 * u->hw->mem_eff);
}

/* TP and CP seconds of rank r's actions, the end of each of its stages' last weight gradient
 * (wg_end), and its data-parallel and optimizer time. */
static void rank_figures(ps_estimate *e, const ps__setup *u, int32_t r, rank_fig *o)
{
    const ps_action *a = ps_schedule_rank_actions(e->s, r);
    const double *end = ps_sim_ends(e->sim, r);
    size_t n = ps_schedule_rank_length(e->s, r);
    ps_rank_metrics rm;
    memset(o, 0, sizeof *o);
    if (ps_sim_rank_metrics(e->sim, r, &rm) == 0)
        o->busy = rm.busy;
    o->end = n ? end[n - 1] : 0.0;
    int32_t nst = 0;
    for (int32_t st = 0; st < u->stages; st++) {
        e->wg_end[st] = 0.0;
        nst += ps_schedule_stage_rank(e->s, st) == r;
    }
    for (size_t i = 0; i < n; i++) {
        int32_t st = a[i].stage, bs = a[i].bstage;
        switch (a[i].kind) {
        case PS_F:
            o->tp += e->tp_f[st], o->cp += e->cp_f[st];
            break;
        case PS_I:
            o->tp += e->tp_i[st], o->cp += e->cp_i[st];
            break;
        case PS_B:
            o->tp += e->tp_i[st], o->cp += e->cp_i[st];
            e->wg_end[st] = end[i];
            break;
        case PS_W:
            e->wg_end[st] = end[i];
            break;
        case PS_FB:
            o->tp += e->tp_f[st] + e->tp_i[bs], o->cp += e->cp_f[st] + e->cp_i[bs];
            if (a[i].bkind == PS_B)
                e->wg_end[bs] = end[i];
            break;
        default:
            break;
        }
    }
    /* The first chunk whose gradients are complete starts the reduction. */
    double t0 = o->end;
    for (int32_t st = 0; st < u->stages; st++)
        if (ps_schedule_stage_rank(e->s, st) == r && e->wg_end[st] < t0)
            t0 = e->wg_end[st];
    o->pd = e->rpd[r], o->pe = e->rpe[r]; /* rank_params_all, before the ranks' loop */
    double grads, gather;
    rank_tail(u, o->pd, o->pe, &grads, &gather, &o->opt);
    if (u->tr->overlap_grad_reduce) {
        double window = o->end - t0, last = nst > 0 ? grads / nst : grads;
        double hid = grads - window;
        o->dp = hid > last ? hid : last;
    } else {
        o->dp = grads;
    }
    if (!u->tr->overlap_param_gather)
        o->dp += gather;
}

/* The activations full recompute holds while it recomputes a layer (bytes). */
static double working_set(const ps__setup *u, const derived *d)
{
    double work = d->act_moe > d->act_dense && u->m->experts > 0 ? d->act_moe : d->act_dense;
    return u->tr->recompute == PS_RECOMPUTE_FULL ? work : 0.0;
}

/* A rank's memory (GiB) from its parameters, its simulated activation peak (KiB units: the
 * stage_memory the problem holds) and the recompute working set (bytes). */
static void rank_memory(const ps__setup *u, double pd, double pe, double peak, double ws,
                        ps_rank_memory *m)
{
    double dd = (double)u->dp * u->cp, edp = (double)u->dp * u->cp * u->tp / (u->ep * u->etp);
    double p = pd + pe;
    m->weights = 2.0 * p / GIB;
    m->grads = 4.0 * p / GIB;
    m->optimizer = 12.0 * (u->tr->distributed_optimizer ? pd / dd + pe / edp : p) / GIB;
    m->activations = (peak * MEM_UNIT + ws) / GIB;
    m->overhead = u->hw->overhead_gib;
    m->total = m->weights + m->grads + m->optimizer + m->activations + m->overhead;
}

static int results(ps_estimate *e, const ps__setup *u, const derived *d, double c)
{
    ps_metrics met;
    int64_t transfers;
    int rc = ps_sim_metrics(e->sim, &met);
    if (!rc)
        rc = ps__sim_critical_transfers(e->sim, &transfers);
    if (rc)
        return ps__seterr(e->err, PS_EINTERNAL, "estimate: no metrics after a simulation (%d)", rc);
    ps_estimate_result *res = &e->res;
    memset(res, 0, sizeof *res);
    double ep_exposed = 0.0;
    ps_comm_metrics cm;
    if (u->m->experts > 0 && ps_sim_comm(e->sim, &cm) == 0)
        ep_exposed = cm.exposed[PS_PHASE_ALL] / u->pp;
    const ps_train *tr = u->tr;
    double ws = working_set(u, d);
    double step = -1, busiest = -1;
    int32_t crit = 0;
    res->fits = 1;
    res->peak_gib = -1;
    rank_params_all(e, u, e->s->stage_rank);
    for (int32_t r = 0; r < u->pp; r++) {
        rank_fig f;
        rank_figures(e, u, r, &f);
        double total = f.end + f.dp + f.opt;
        e->tail[3 * r] = f.end, e->tail[3 * r + 1] = f.dp, e->tail[3 * r + 2] = f.opt;
        if (total > step) {
            step = total, crit = r;
            res->exposed_s[PS_COMM_TP] = f.tp;
            res->exposed_s[PS_COMM_CP] = f.cp;
            res->exposed_s[PS_COMM_DP] = f.dp;
            res->optimizer_s = f.opt;
        }
        if (f.busy > busiest) {
            busiest = f.busy;
            res->compute_s = f.busy - f.tp - f.cp - ep_exposed;
        }
        ps_rank_metrics rmet;
        if (ps_sim_rank_metrics(e->sim, r, &rmet))
            return ps__seterr(e->err, PS_EINTERNAL, "estimate: no metrics of rank %d", r);
        ps_rank_memory *m = &e->rm[r];
        rank_memory(u, f.pd, f.pe, rmet.peak_memory, ws, m);
        m->peak_inflight = rmet.peak_activations;
        if (m->total > res->peak_gib)
            res->peak_gib = m->total, res->peak_rank = r;
        if (m->total > u->hw->hbm_gib)
            res->fits = 0;
    }
    (void)crit;
    res->exposed_s[PS_COMM_EP] = ep_exposed;
    /* PP: the transfers on the critical path (docs/model.md), from the one simulation. */
    res->exposed_s[PS_COMM_PP] = (double)transfers * c;
    res->step_time_s = step;
    res->bubble_s = met.bubble;
    res->dp = u->dp;
    res->microbatches = (int32_t)u->micro;
    double tokens = (double)tr->gbs * tr->seq;
    res->tokens_per_s_per_gpu = tokens / (step * tr->gpus);
    res->model_tflops_per_gpu = ps__model_flops(u->m, tokens, tr->seq) / (step * tr->gpus) / 1e12;
    res->mfu = res->model_tflops_per_gpu * 1e12 / u->peak_gemm;
    return 0;
}

/* PP: one activation of b.s/cp tokens (sharded by t with SP) per boundary; inter-node when the
 * ranks of one stage (tp.cp.dp) fill a node, pp varying slowest. */
static double p2p_cost(const ps__setup *u)
{
    double act = u->T * u->m->hidden * 2.0 / u->ts;
    return u->pp > 1
               ? ps__coll_s(u, PS__P2P, 2, act, (long long)u->tp * u->cp * u->dp >= u->gpn ? 1 : 2)
               : 0.0;
}

/* ---- the automatic partition (partition.c) ------------------------------------------------ */

/* What one candidate split needs to become a simulated step time. */
typedef struct auto_ctx {
    ps_estimate *e;
    const ps__setup *u;
    const derived *d;
    double c;
} auto_ctx;

/* Seconds of F + I + W of one decoder layer: only the search's starting point reads it. */
static double layer_work(const ps__layer_s *L, const ps_train *tr)
{
    double gemm = L->attn_gemm + L->mlp_gemm + L->router + L->expert + L->shared;
    double f = layer_f(L), i = layer_i(L);
    if (tr->recompute == PS_RECOMPUTE_SELECTIVE)
        i += L->attn_core;
    if (tr->recompute == PS_RECOMPUTE_FULL)
        i += f;
    return f + i + gemm;
}

/* The search's evaluation: the candidate's stage tables, simulated on the problem built once. */
static int eval_split(void *ctx, const int32_t *counts, double *step)
{
    const auto_ctx *a = ctx;
    ps_estimate *e = a->e;
    int32_t next = 0;
    for (int32_t s = 0; s < a->u->model_stages; s++) {
        e->sl[s].first_layer = next;
        e->sl[s].layers = counts[s];
        next += counts[s];
    }
    stage_costs(e, a->u, a->d, a->u->m->experts > 0);
    int rc;
    if ((rc = set_stage_tables(e, a->u)) || (rc = simulate(e)) ||
        (rc = results(e, a->u, a->d, a->c)))
        return rc;
    *step = e->res.step_time_s;
    return 0;
}

/* layout "auto": the split of the decoder layers that minimises the step time; the handle ends
 * holding the simulation of the chosen split. */
static int run_auto(ps_estimate *e, const ps__setup *u, const derived *d, double c)
{
    const ps_train *tr = u->tr;
    int32_t n = u->model_stages;
    if (tr->first_stage_layers > 0 || tr->last_stage_layers > 0)
        return CFG("layout auto chooses every stage: first (%d) and last (%d) stage layers must "
                   "be 0",
                   tr->first_stage_layers, tr->last_stage_layers);
    memset(e->sl, 0, (size_t)n * sizeof *e->sl);
    e->sl[0].embedding = 1;
    e->sl[n - 1].loss = 1;
    e->sl[n - 1].mtp = u->m->mtp_layers;
    /* The problem is built once, on a legal placeholder split (every layer on stage 0); each
     * candidate then replaces only its stage tables. */
    e->sl[0].layers = u->m->layers;
    stage_costs(e, u, d, u->m->experts > 0);
    int rc;
    if ((rc = build_problem(e, u, d, c)))
        return rc;
    auto_ctx a = {e, u, d, c};
    int moe = u->m->experts > 0; /* d->moe is not a number for a dense model */
    ps__partition p = {n,
                       u->m->layers,
                       layer_work(&d->dense, tr),
                       moe ? layer_work(&d->moe, tr) : 0.0,
                       moe ? u->m->first_dense : u->m->layers,
                       2.0 * d->emb_tp,
                       d->out_f + d->out_i + d->out_w,
                       eval_split,
                       &a,
                       PS__PARTITION_EXHAUSTIVE};
    return ps__partition_search(&p, e->counts + e->cap_st, e->counts + 2 * e->cap_st, &e->part);
}

int ps_estimate_run(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                    const ps_train *train)
{
    if (!e)
        return PS_EINVAL;
    e->have = 0;
    if (!model || !hw || !train)
        return ps__seterr(e->err, PS_EINVAL, "ps_estimate_run needs a model, hardware and a train");
    /* The inputs are copied: the run reads only these. */
    ps_transformer m = *model;
    ps_hardware h = *hw;
    ps_train t = *train;
    ps__setup u;
    derived d;
    char name[32];
    int rc;
    if ((rc = check_model(e, &m)) || (rc = check_hardware(e, &h, t.precision)) ||
        (rc = check_train(e, &u, &m, &h, &t)) || (rc = plan_schedule(e, &u, name)))
        return rc;
    if ((rc = reserve(e, (size_t)u.stages, (size_t)u.pp)))
        return rc;
    e->model_stages = u.model_stages;
    memset(&e->part, 0, sizeof e->part);
    derive(&u, &d);
    double c = p2p_cost(&u);
    if (t.layout && strcmp(t.layout, "auto") == 0) {
        e->snap_n = 0; /* its simulations are of other splits */
        if ((rc = run_auto(e, &u, &d, c)))
            return rc;
    } else {
        if ((rc = ps_layout_split(t.layout, u.pp, u.vpp, m.layers, m.mtp_layers,
                                  t.first_stage_layers, t.last_stage_layers, e->sl, e->err,
                                  sizeof e->err)))
            return rc;
        stage_costs(e, &u, &d, m.experts > 0);
        if ((rc = build_problem(e, &u, &d, c)))
            return rc;
        if (reuse_simulation(e, &u, c)) {
            e->reused++;
        } else {
            e->snap_n = 0;
            if ((rc = simulate(e)))
                return rc;
            snap_take(e, &u, c);
        }
        if ((rc = results(e, &u, &d, c)))
            return rc;
    }
    e->have = 1;
    e->err[0] = 0;
    return 0;
}

int ps_estimate_set_microbatch_weights(ps_estimate *e, const double *w, size_t n)
{
    if (!e || (n && !w))
        return PS_EINVAL;
    if (n > PS_MAX_MICROBATCHES)
        return ps__seterr(e->err, PS_ERANGE, "estimate: %zu micro-batch weights; the limit is %d",
                          n, PS_MAX_MICROBATCHES);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(w[i]) || !(w[i] > 0) || w[i] > PS_MAX_COST)
            return ps__seterr(e->err, PS_ERANGE,
                              "estimate: micro-batch weight %zu must be a finite number > 0 and "
                              "<= %g; got %g",
                              i, PS_MAX_COST, w[i]);
    double *copy = NULL;
    if (n && n != e->n_mbw) {
        if (!(copy = ps__alloc(&e->al, n, sizeof *copy)))
            return ps__seterr(e->err, PS_ENOMEM, "out of memory");
        ps__free(&e->al, e->mbw, e->n_mbw, sizeof *e->mbw);
        e->mbw = copy;
    } else if (!n) {
        ps__free(&e->al, e->mbw, e->n_mbw, sizeof *e->mbw);
        e->mbw = NULL;
    }
    if (n)
        memcpy(e->mbw, w, n * sizeof *w);
    e->n_mbw = n;
    e->snap_n = 0; /* the kept simulation is of other weights */
    return 0;
}

int ps_estimate_set_moe_imbalance(ps_estimate *e, double gemm_factor, double a2a_factor)
{
    if (!e)
        return PS_EINVAL;
    if (!isfinite(gemm_factor) || !isfinite(a2a_factor) || gemm_factor < 1 || a2a_factor < 1 ||
        gemm_factor > 1e6 || a2a_factor > 1e6)
        return ps__seterr(e->err, PS_ERANGE,
                          "estimate: the MoE imbalance factors must be in [1, 1e6]; got %g and %g",
                          gemm_factor, a2a_factor);
    e->moe_gemm = gemm_factor, e->moe_a2a = a2a_factor;
    return 0;
}

int ps_estimate_result_get(const ps_estimate *e, ps_estimate_result *out)
{
    if (!e || !out)
        return PS_EINVAL;
    if (!e->have)
        return PS_ESTATE;
    *out = e->res;
    return 0;
}

int ps_estimate_rank_memory(const ps_estimate *e, int rank, ps_rank_memory *out)
{
    if (!e || !out)
        return PS_EINVAL;
    if (!e->have)
        return PS_ESTATE;
    if (rank < 0 || rank >= ps_schedule_pp(e->s))
        return PS_EINVAL;
    *out = e->rm[rank];
    return 0;
}

int ps_estimate_stage_layers(const ps_estimate *e, const ps_stage_layers **out)
{
    if (!e || !out)
        return PS_EINVAL;
    *out = NULL;
    if (!e->have)
        return PS_ESTATE;
    *out = e->sl;
    return e->model_stages;
}

void ps__estimate_forget(ps_estimate *e)
{
    if (!e)
        return;
    e->have_shape = 0;
    e->snap_n = 0;
    ps__sim_forget_plans(e->sim);
}

int ps__estimate_partition_stats(const ps_estimate *e, ps__partition_stats *out)
{
    if (!e || !out)
        return PS_EINVAL;
    if (!e->have)
        return PS_ESTATE;
    *out = e->part;
    return 0;
}

const ps_schedule *ps_estimate_schedule(const ps_estimate *e)
{
    return e && e->have ? e->s : NULL;
}

const ps_problem *ps_estimate_problem(const ps_estimate *e)
{
    return e && e->have ? e->pb : NULL;
}

const ps_sim *ps_estimate_sim(const ps_estimate *e)
{
    return e && e->have ? e->sim : NULL;
}

/* The trace of the step: the simulated pipeline in seconds, then every rank's tail (its exposed
 * data-parallel communication, then its optimizer step), so that the last event ends at the
 * step time. */
int ps_estimate_write_trace(const ps_estimate *e, ps_write_fn write, void *ud)
{
    if (!e || !write)
        return PS_EINVAL;
    if (!e->have)
        return PS_ESTATE;
    int32_t pp = ps_schedule_pp(e->s), n = 0;
    ps_trace_event *ev = ps__alloc(&e->al, 2 * (size_t)pp, sizeof *ev);
    if (!ev)
        return PS_ENOMEM;
    for (int32_t r = 0; r < pp; r++) {
        double end = e->tail[3 * r], dp = e->tail[3 * r + 1], opt = e->tail[3 * r + 2];
        if (dp > 0)
            ev[n++] =
                (ps_trace_event){"DP communication (exposed)", "data_parallel", r, 1, end, dp};
        if (opt > 0)
            ev[n++] = (ps_trace_event){"optimizer step", "optimizer", r, 0, end + dp, opt};
    }
    ps_trace_options seconds = {1e6, ev, (size_t)n};
    int rc = ps_export_trace(e->s, e->sim, &seconds, write, ud);
    ps__free(&e->al, ev, 2 * (size_t)pp, sizeof *ev);
    return rc;
}

/* ---- lower bounds for the search (src/tune) ----------------------------------------------- */

/* Lower bounds of one stage's F, I and W durations: the dense path's own durations; in MoE mode
 * the compute operations of its layers (the planner runs them one after the other on the
 * compute stream, at most 1 + slowdown times slower while an all-to-all runs; communication
 * only adds) plus the stage's extras, which the simulator adds to each part. */
static void stage_lower(const ps_estimate *e, const ps__setup *u, int32_t st, const double fl[2],
                        const double il[2], const double wl[2], double *f, double *i, double *w)
{
    if (u->m->experts == 0) {
        *f = e->cost[st].f, *i = e->cost[st].b, *w = e->cost[st].w;
        return;
    }
    const ps_stage_layers *sl = &e->sl[st % u->model_stages];
    *f = e->extra[st].f, *i = e->extra[st].b, *w = e->extra[st].w;
    for (int32_t k = 0; k < sl->layers; k++) {
        int moe = ps__is_moe_layer(u->m, sl->first_layer + k);
        *f += fl[moe], *i += il[moe], *w += wl[moe];
    }
}

/* The way of the peak cache that holds the walk of the schedule on e with the stage memory
 * of e (n stages), or -1. */
static int peak_find(const ps_estimate *e, int32_t n)
{
    const peak_cache *pc = &e->pc;
    if (!pc->mem)
        return -1;
    for (int k = 0; k < PEAK_WAYS; k++)
        if (pc->gen[k] == e->gen && pc->n[k] == n &&
            !memcmp(pc->mem + (size_t)k * PEAK_STAGES, e->mem, (size_t)n * sizeof *e->mem))
            return k;
    return -1;
}

/* A way of the peak cache for the walk about to be made (its key written), or -1 when the run
 * is too large to keep or the cache cannot be allocated (the walk is then made every time). */
static int peak_take(ps_estimate *e, int32_t n)
{
    peak_cache *pc = &e->pc;
    if (n > PEAK_STAGES)
        return -1;
    if (!pc->mem) {
        pc->mem = ps__alloc(&e->al, PEAK_WAYS * PEAK_STAGES, sizeof *pc->mem);
        pc->peak = ps__alloc(&e->al, PEAK_WAYS * PEAK_STAGES, sizeof *pc->peak);
        if (!pc->mem || !pc->peak) {
            ps__free(&e->al, pc->mem, PEAK_WAYS * PEAK_STAGES, sizeof *pc->mem);
            ps__free(&e->al, pc->peak, PEAK_WAYS * PEAK_STAGES, sizeof *pc->peak);
            pc->mem = NULL, pc->peak = NULL;
            return -1;
        }
    }
    int k = pc->next;
    pc->next = (k + 1) % PEAK_WAYS;
    pc->gen[k] = e->gen, pc->n[k] = n;
    memcpy(pc->mem + (size_t)k * PEAK_STAGES, e->mem, (size_t)n * sizeof *e->mem);
    return k;
}

/* Rank r's activation peak (the stage memory's KiB units) along its action list, summed as
 * the simulator sums it (sim.c, mem_delta: the forward part of a fused pair first; the same
 * values in the same order, so the same peak bit for bit). */
static double walk_peak(const ps_estimate *e, int32_t r)
{
    const ps_action *a = ps_schedule_rank_actions(e->s, r);
    size_t n = ps_schedule_rank_length(e->s, r);
    double mem = 0.0, peak = 0.0;
    for (size_t i = 0; i < n; i++) {
        const ps_stage_mem *m = &e->mem[a[i].stage];
        double fwd = 0.0, rest;
        switch (a[i].kind) {
        case PS_F:
            rest = m->f;
            break;
        case PS_I:
            rest = m->b;
            break;
        case PS_W:
            rest = m->w;
            break;
        case PS_B:
            rest = m->b + m->w;
            break;
        case PS_FB: {
            const ps_stage_mem *b = &e->mem[a[i].bstage];
            fwd = m->f;
            rest = b->b + (a[i].bkind == PS_B ? b->w : 0.0);
            break;
        }
        default:
            rest = 0.0;
        }
        double at = mem + fwd;
        double top = at > at + rest ? at : at + rest;
        mem = at + rest;
        if (top > peak)
            peak = top;
    }
    return peak;
}

/*
 * The exact peak memory of the run set up in e (stage tables made, e->rpd and e->rpe filled
 * with the bound's stage ranks, which are the schedule's): the schedule (kept while its shape
 * stays), then every rank's activation peak along its action list (walk_peak; the peak
 * depends on the order of a rank's actions, never on their times), and rank_memory() as
 * results() calls it. A rank's peak is a function of the schedule and the stage memory alone,
 * so the walks of the last PEAK_WAYS pairs are kept (peak_cache): the search meets the same
 * pair again with every value of the knobs that change neither (the distributed optimizer,
 * the all-to-all), and recompute fit's first peak is the recompute-none candidate's.
 */
static int exact_memory(ps_estimate *e, const ps__setup *u, const derived *d, double c,
                        ps__estimate_lb *out)
{
    int rc;
    if ((rc = build_problem(e, u, d, c)) || (rc = make_schedule(e, 0)))
        return rc;
    int32_t n = u->stages;
    int k = peak_find(e, n), hit = k >= 0;
    if (hit)
        e->pc.hits++;
    else
        k = peak_take(e, n);
    double *kept = k >= 0 ? e->pc.peak + (size_t)k * PEAK_STAGES : NULL;
    double ws = working_set(u, d);
    out->mem_gib = -1.0;
    for (int32_t r = 0; r < u->pp; r++) {
        double peak = hit ? kept[r] : walk_peak(e, r);
        if (kept && !hit)
            kept[r] = peak;
        ps_rank_memory rm;
        rank_memory(u, e->rpd[r], e->rpe[r], peak, ws, &rm);
        if (rm.total > out->mem_gib)
            out->mem_gib = rm.total, out->peak_rank = r;
    }
    out->mem_exact = 1;
    return 0;
}

/*
 * The step-time and peak-memory lower bounds of a configuration without simulating it
 * (docs/tune.md, "the bound"). With d(X) the lower bound of action X's duration and c the
 * transfer between ranks, for every rank r:
 *
 *   head(r)  = the least, over r's stages s, of the forwards of the stages before s on s's
 *              path plus a c per rank change: r's first action is a forward (every other
 *              action of a stage follows its forward on the same rank), which waits for them.
 *   A(r)     = head(r) + busy(r) + tail(r): r runs all its actions one after the other, then
 *              its exposed data-parallel reduction (at least its last chunk's share when it
 *              overlaps) and its optimizer step.
 *   B(r)     = head(r) + F(r) + I(r) + min over r's stages s of [the backwards of the stages
 *              before s on its path with a c per rank change, the weight gradient of the
 *              path's first stage when the family splits the backward, and the tail of that
 *              first stage's rank]: when r's last backward (I or B) ends, r has run all its
 *              forwards and backwards, and that backward's micro-batch still has to go back
 *              along the lower stages of its path, which r does not hold (else a later
 *              backward of r would follow).
 *
 * where F(r) and I(r) sum d over r's forwards and backwards (a full backward B counts its
 * weight gradient: the families of two actions per stage and micro-batch, and adaptive, which
 * the estimate never splits). The step is the largest rank's end plus tail, so it is at least
 * every A(r) and B(r); the bound is their maximum. With uniform costs and c = 0 it is 1F1B's
 * and interleaved's exact step ((m + p - 1)(f + b + w) in chunk costs on the last rank).
 *
 * The memory bound is the largest rank's weights, gradients, optimizer state and overhead
 * (exact) plus the activations of one forward of its lightest stage (its first action is a
 * forward, held until that stage's backward) and the working set of full recompute.
 *
 * Fills out; a layout "auto" gives the trivial bounds (0). Errors as ps_estimate_run's.
 */

int ps__estimate_bound(ps_estimate *e, const ps_transformer *model, const ps_hardware *hw,
                       const ps_train *train, int exact_mem, ps__estimate_lb *out)
{
    if (!e || !model || !hw || !train || !out)
        return PS_EINVAL;
    e->have = 0;
    memset(out, 0, sizeof *out);
    ps_transformer m = *model;
    ps_hardware h = *hw;
    ps_train t = *train;
    ps__setup u;
    derived d;
    char name[32];
    int rc;
    if ((rc = check_model(e, &m)) || (rc = check_hardware(e, &h, t.precision)) ||
        (rc = check_train(e, &u, &m, &h, &t)) || (rc = plan_schedule(e, &u, name)))
        return rc;
    if (t.layout && strcmp(t.layout, "auto") == 0)
        return 0;
    if ((rc = reserve(e, (size_t)u.stages, (size_t)u.pp)))
        return rc;
    derive(&u, &d);
    if ((rc = ps_layout_split(t.layout, u.pp, u.vpp, m.layers, m.mtp_layers, t.first_stage_layers,
                              t.last_stage_layers, e->sl, e->err, sizeof e->err)))
        return rc;
    int moe = m.experts > 0;
    stage_costs(e, &u, &d, moe);
    double fl[2] = {0, 0}, il[2] = {0, 0}, wl[2] = {0, 0};
    if (moe) {
        ps_moe_model mm;
        if ((rc = moe_model(e, &u, &d, &mm)))
            return rc;
        for (int k = 0; k < 2; k++) {
            const double *x = k ? mm.moe.t : mm.dense.t;
            fl[k] = x[PS_OP_ATTN] + x[PS_OP_MLP] + x[PS_OP_SHARED];
            il[k] = x[PS_OP_ATTN_DX] + x[PS_OP_MLP_DX] + x[PS_OP_SHARED_DX];
            wl[k] = x[PS_OP_ATTN_DW] + x[PS_OP_MLP_DW] + x[PS_OP_SHARED_DW];
        }
    }
    int fam = e->fam_idx; /* plan_schedule found the name */
    if (ps__families[fam].placement == PS__PLACE_CUSTOM)
        return 0;
    int place = ps__families[fam].placement;
    /* Adaptive fuses every backward with its weight gradient unless split_backward makes the
     * cool-down's backwards I then W: then only the I parts chain, as in the split families. */
    int full = ps__families[fam].units == 2 ||
               ((ps__families[fam].options & PS__OPT_ADAPTIVE) && !t.split_backward);
    double c = p2p_cost(&u);
    int32_t p = u.pp, ns = u.stages;
    /* Per stage, in the tables the simulation would fill: its rank (counts), the forwards
     * before it on its path (tp_f), the backwards after it (tp_i), and its per-micro-batch
     * lower bounds f (cp_f), backward chain (cp_i) and f + b + w (wg_end). */
    int32_t *srank = e->counts;
    double *pre = e->tp_f, *suf = e->tp_i, *sf = e->cp_f, *sb = e->cp_i, *sall = e->wg_end;
    double wfirst[2] = {0, 0};
    for (int32_t st = 0; st < ns; st++) {
        srank[st] = place == PS__PLACE_LOOP ? st % p : st < p ? st : 2 * p - 1 - st;
        double f, i, w;
        stage_lower(e, &u, st, fl, il, wl, &f, &i, &w);
        sf[st] = f, sb[st] = full ? i + w : i, sall[st] = f + i + w;
        int start = st == 0 || (place == PS__PLACE_BIDIR && st == p);
        if (start) {
            pre[st] = suf[st] = 0.0;
            wfirst[st != 0] = full ? 0.0 : w;
        } else {
            double hop = srank[st] != srank[st - 1] ? c : 0.0;
            pre[st] = pre[st - 1] + sf[st - 1] + hop;
            suf[st] = suf[st - 1] + sb[st - 1] + hop;
        }
    }
    /* Each rank's tail (exposed DP at least, optimizer) in the third block of e->tail. */
    double *tail = e->tail;
    double mem_lb = 0.0;
    double dd = (double)u.dp * u.cp, edp = dd * u.tp / (u.ep * u.etp);
    double work = d.act_moe > d.act_dense && moe ? d.act_moe : d.act_dense;
    double ws = t.recompute == PS_RECOMPUTE_FULL ? work : 0.0;
    rank_params_all(e, &u, srank);
    /* Per rank, over its stages in ascending order (one pass over the stages, each rank's
     * sums in the order of a pass per rank): the stage count, the lightest activations, then
     * below the head, the sums and the way back. */
    int32_t *rn = e->rkn;
    double *ract = e->rkw, *rhead = e->rkw + p, *rf = e->rkw + 2 * p, *ri = e->rkw + 3 * p;
    double *rbusy = e->rkw + 4 * p, *rback = e->rkw + 5 * p;
    for (int32_t r = 0; r < p; r++)
        rn[r] = 0, ract[r] = -1.0;
    for (int32_t st = 0; st < ns; st++) {
        int32_t r = srank[st];
        rn[r]++;
        if (ract[r] < 0 || e->act[st] < ract[r])
            ract[r] = e->act[st];
    }
    for (int32_t r = 0; r < p; r++) {
        double pd = e->rpd[r], pe = e->rpe[r], grads, gather, opt, act = ract[r];
        int32_t nst = rn[r];
        rank_tail(&u, pd, pe, &grads, &gather, &opt);
        double dp = t.overlap_grad_reduce ? grads / (nst > 0 ? nst : 1) : grads;
        if (!t.overlap_param_gather)
            dp += gather;
        tail[r] = dp + opt;
        double held = t.distributed_optimizer ? pd / dd + pe / edp : pd + pe;
        double gib =
            (6.0 * (pd + pe) + 12.0 * held + (act > 0 ? act : 0.0) + ws) / GIB + h.overhead_gib;
        if (gib > mem_lb)
            mem_lb = gib;
    }
    double n_mb = place == PS__PLACE_BIDIR ? (double)(u.micro / 2) : (double)u.micro;
    double step = 0.0, bubble = 0.0;
    for (int32_t r = 0; r < p; r++)
        rhead[r] = -1.0, rf[r] = ri[r] = rbusy[r] = 0.0, rback[r] = -1.0;
    for (int32_t st = 0; st < ns; st++) {
        int32_t r = srank[st];
        if (rhead[r] < 0 || pre[st] < rhead[r])
            rhead[r] = pre[st];
        rf[r] += n_mb * sf[st], ri[r] += n_mb * sb[st], rbusy[r] += n_mb * sall[st];
        int path = place == PS__PLACE_BIDIR && st >= p;
        double x = suf[st] + wfirst[path] + tail[path ? p - 1 : 0];
        if (rback[r] < 0 || x < rback[r])
            rback[r] = x;
    }
    for (int32_t r = 0; r < p; r++) {
        double head = rhead[r], fsum = rf[r], isum = ri[r], busy = rbusy[r], back = rback[r];
        if (head < 0)
            continue;
        double a = head + busy + tail[r], b = head + fsum + isum + back;
        double lb = a > b ? a : b;
        if (lb > step)
            step = lb, bubble = lb - busy - tail[r];
    }
    out->step_s = step;
    out->mem_gib = mem_lb;
    out->bubble_s = bubble > 0 ? bubble : 0.0;
    return exact_mem ? exact_memory(e, &u, &d, c, out) : 0;
}

const ps_allocator *ps__estimate_allocator(const ps_estimate *e)
{
    return &e->al;
}

uint64_t ps__estimate_reused(const ps_estimate *e)
{
    return e ? e->reused : 0;
}

uint64_t ps__estimate_peaks_kept(const ps_estimate *e)
{
    return e ? e->pc.hits : 0;
}
