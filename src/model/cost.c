/*
 * The formulas of the performance model: seconds of a layer's kernels on one device, the
 * alpha-beta cost of a collective, parameter counts, activation bytes and model FLOPs. They
 * read a checked setup (cost.h) and allocate nothing: estimate.c calls them once per run, and
 * the search calls estimate millions of times. docs/model.md gives each formula its source.
 * SPDX-License-Identifier: MIT
 */
#include "model/cost.h"

double ps__gemm_eff(const ps_hardware *hw, double d)
{
    if (hw->gemm_half_dim <= 0)
        return hw->gemm_eff;
    return hw->gemm_eff * d / (d + hw->gemm_half_dim);
}

double ps__gemm_s(const ps__setup *u, double M, double K, double N)
{
    double d = M < K ? M : K;
    d = d < N ? d : N;
    if (d <= 0)
        return 0.0;
    return 2.0 * M * K * N / (u->peak_gemm * ps__gemm_eff(u->hw, d));
}

double ps__coll_s(const ps__setup *u, int kind, double n, double bytes, double g)
{
    const ps_hardware *hw = u->hw;
    double intra = hw->intra_gbps * hw->bus_eff_intra * 1e9;
    double inter = hw->inter_gbps * hw->bus_eff_inter * 1e9;
    int across = g < n;
    double lat = (across ? hw->lat_inter_us : hw->lat_intra_us) * 1e-6;
    if (kind == PS__P2P)
        return bytes / (across ? inter : intra) + lat;
    if (n <= 1)
        return 0.0;
    /* A group spread over nodes with g members on each: NCCL runs one ring per member (one
     * NIC each), so every node's g NICs carry the inter-node share together, and no device
     * sends faster than its intra-node link: bus bandwidth min(intra, g.inter). */
    double bw = across ? (g * inter < intra ? g * inter : intra) : intra;
    double steps = n - 1, frac = (n - 1) / n;
    if (kind == PS__ALL_REDUCE)
        return 2.0 * frac * bytes / bw + 2.0 * steps * lat;
    return frac * bytes / bw + steps * lat;
}

double ps__per_node(const ps__setup *u, double n, double stride)
{
    double g = stride < u->gpn ? (double)u->gpn / stride : 1.0;
    return g < n ? (g < 1.0 ? 1.0 : g) : n;
}

/* Head dimensions: qk (score) and v (value) dims of a head, and whether the model uses MLA. */
static int mla_dims(const ps_transformer *m, double dh, double *qk, double *v)
{
    int mla = m->q_lora_rank > 0 || m->kv_lora_rank > 0;
    *qk = mla ? (double)m->qk_nope_head_dim + m->qk_rope_head_dim : dh;
    *v = mla ? (double)m->v_head_dim : dh;
    return mla;
}

static double head_dim(const ps_transformer *m)
{
    return m->head_dim > 0 ? (double)m->head_dim : (double)m->hidden / m->heads;
}

/* The forward GEMM seconds of the attention projections on one device. Megatron replicates
 * the MLA down projections over TP; the up and output projections are split by heads. */
static double attn_gemm_s(const ps__setup *u)
{
    const ps_transformer *m = u->m;
    double T = u->T, h = m->hidden, at = (double)m->heads / u->tp, qk, v;
    if (!mla_dims(m, u->dh, &qk, &v))
        return ps__gemm_s(u, T, h, (at + 2.0 * u->kv_dev) * u->dh) +
               ps__gemm_s(u, T, at * u->dh, h);
    double ql = m->q_lora_rank, kvl = m->kv_lora_rank, rope = m->qk_rope_head_dim;
    double q = ql > 0 ? ps__gemm_s(u, T, h, ql) + ps__gemm_s(u, T, ql, at * qk)
                      : ps__gemm_s(u, T, h, at * qk);
    double kv = ps__gemm_s(u, T, h, kvl + rope) +
                ps__gemm_s(u, T, kvl, at * ((double)m->qk_nope_head_dim + v));
    return q + kv + ps__gemm_s(u, T, at * v, h);
}

/* A (possibly gated) MLP of intermediate size f split by t over M tokens: the gate and up
 * projections as one GEMM of 2f/t columns, then the down projection. */
static double mlp_s(const ps__setup *u, double M, double f, double t)
{
    double h = u->m->hidden, up = (u->m->gated_mlp ? 2.0 : 1.0) * f / t;
    return ps__gemm_s(u, M, h, up) + ps__gemm_s(u, M, f / t, h);
}

void ps__layer_times(const ps__setup *u, int moe, ps__layer_s *o)
{
    const ps_transformer *m = u->m;
    double T = u->T, h = m->hidden, t = u->tp, at = (double)m->heads / t, qk, v;
    int mla = mla_dims(m, u->dh, &qk, &v);
    o->attn_gemm = attn_gemm_s(u);
    /* Scores and weighted sum: 2.2.T.s.a.(qk+v)/2 per device after TP and CP, halved for the
     * causal mask that flash attention skips; at the bf16 peak (FP8 is for GEMMs only). */
    o->attn_core = T * u->s * at * (qk + v) / (u->peak_bf16 * u->hw->attn_eff);
    o->mlp_gemm = o->router = o->expert = o->shared = 0.0;
    if (!moe) {
        o->mlp_gemm = mlp_s(u, T, m->ffn, t);
    } else {
        double E = m->experts, k = m->top_k;
        double fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
        double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
        o->router = ps__gemm_s(u, T / u->ts, h, E);
        /* Balanced routing: a device runs T.k/t token-expert pairs in all, over its E/ep
         * experts with f_e/etp columns each, so each expert's GEMM has T.k.ep.etp/(t.E) rows. */
        double rows = T * k * u->ep * u->etp / (t * E);
        o->expert = E / u->ep * mlp_s(u, rows, fe, u->etp) / u->hw->grouped_gemm_eff;
        o->shared = fs > 0 ? mlp_s(u, T, fs, t) : 0.0;
    }
    /* Memory-bound kernels, bf16 bytes per token read and written in F: a norm (h in, h out)
     * and a residual add (2h in, h out) in each half, on T/ts tokens; the MLP's activation
     * (gated: 2f in, f out; else f in, f out) on f/t columns; a MoE layer's permutation and
     * unpermutation of its k copies (h in, h out each, twice) and its routed and shared
     * experts' activations. The backward moves about twice these bytes. */
    double hbm = u->hw->hbm_gbps * 1e9 * u->hw->mem_eff, actb = m->gated_mlp ? 6.0 : 4.0;
    double half = (2.0 * 2.0 * h + 2.0 * 3.0 * h) / u->ts, mlp_b;
    if (!moe) {
        mlp_b = half + actb * m->ffn / t;
    } else {
        double k = m->top_k, fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
        double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
        mlp_b = half + 8.0 * k * h / u->ts + actb * k * fe / t + actb * fs / t;
    }
    /* FP8: every GEMM's activation operand is cast from bf16 first, a memory-bound kernel (TE's
     * cast-transpose: 2 bytes read, 1 written row-wise and 1 column-wise for the weight
     * gradient); the backward's output-gradient casts are in its doubled bytes. Operands on one
     * device per token: the QKV (or MLA down-projection) input h, MLA's q and kv LoRA outputs,
     * the output projection's input; the MLP's input h and its down projection's input; each
     * routed copy's h and f_e/etp over the T.k.etp/t rows of a device; the shared experts'. */
    double attn_b = half, cast = 4.0;
    if (u->tr->precision == PS_PREC_FP8) {
        double ql = mla ? (double)m->q_lora_rank + m->kv_lora_rank : 0.0;
        attn_b += cast * (h + ql + at * v);
        if (!moe) {
            mlp_b += cast * (h + m->ffn / t);
        } else {
            double k = m->top_k, fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
            double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
            mlp_b += cast * (k * (u->etp * h + fe) / t + (fs > 0 ? h + fs / t : 0.0));
        }
    }
    o->mem_attn = T * attn_b / hbm;
    o->mem_mlp = T * mlp_b / hbm;
    o->fixed = moe && !u->tr->moe_token_drop ? u->hw->moe_layer_us * 1e-6 : 0.0;
    /* TP with SP: an all-gather and a reduce-scatter of the T.h activations around attention
     * and around the MLP (without SP: one all-reduce each, the same volume). */
    double act = T * h * 2.0;
    o->tp_attn = o->tp_mlp = 2.0 * ps__coll_s(u, PS__ALL_GATHER, t, act, ps__per_node(u, t, 1));
    /* CP: cp-1 ring steps, each passing this rank's K and V chunk; the backward passes K, V
     * and their gradients: twice the bytes against twice the attention work. */
    o->cp_f = o->cp_b = o->cp_total = 0.0;
    if (u->cp > 1) {
        double kv = mla ? T * at * (qk + v) * 2.0 : T * u->kv_dev * 2.0 * u->dh * 2.0;
        double ring = (u->cp - 1) * ps__coll_s(u, PS__P2P, 2, kv, u->tp * u->cp > u->gpn ? 1 : 2);
        o->cp_total = ring;
        o->cp_f = ring > o->attn_core ? ring - o->attn_core : 0.0;
        o->cp_b = 2.0 * ring > 2.0 * o->attn_core ? 2.0 * (ring - o->attn_core) : 0.0;
    }
}

void ps__output_times(const ps__setup *u, double *f, double *i, double *w, double *tp)
{
    const ps_hardware *hw = u->hw;
    double T = u->T, h = u->m->hidden, Vt = (double)u->m->vocab / u->tp;
    double gemm = ps__gemm_s(u, T, h, Vt);
    double logits = 4.0 * T * Vt; /* fp32 */
    double loss = 2.0 * logits / (hw->hbm_gbps * 1e9 * hw->mem_eff);
    *tp = ps__coll_s(u, PS__ALL_GATHER, u->tp, T * h * 2.0, ps__per_node(u, u->tp, 1));
    *f = gemm + loss + *tp;
    *i = gemm + loss + *tp;
    *w = gemm;
}

/* Attention projection parameters (no bias). */
static double attn_params(const ps_transformer *m)
{
    double h = m->hidden, a = m->heads, g = m->kv_heads > 0 ? m->kv_heads : m->heads;
    double dh = head_dim(m), qk, v;
    if (!mla_dims(m, dh, &qk, &v))
        return h * (a + 2.0 * g) * dh + a * dh * h;
    double ql = m->q_lora_rank, kvl = m->kv_lora_rank, rope = m->qk_rope_head_dim;
    double q = ql > 0 ? h * ql + ql + ql * a * qk : h * a * qk; /* + the q LoRA norm */
    double kv = h * (kvl + rope) + kvl + kvl * a * ((double)m->qk_nope_head_dim + v);
    return q + kv + a * v * h;
}

static double mlp_params(const ps_transformer *m, double f)
{
    return (m->gated_mlp ? 3.0 : 2.0) * (double)m->hidden * f;
}

void ps__layer_params(const ps_transformer *m, int moe, double *dense, double *expert)
{
    double h = m->hidden, norms = 2.0 * (m->rms_norm ? h : 2.0 * h);
    *dense = attn_params(m) + norms;
    *expert = 0.0;
    if (!moe) {
        *dense += mlp_params(m, m->ffn);
        return;
    }
    double fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
    double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
    *dense += h * m->experts + mlp_params(m, fs);
    *expert = m->experts * mlp_params(m, fe);
}

double ps__layer_active_params(const ps_transformer *m, int moe)
{
    if (!moe)
        return attn_params(m) + mlp_params(m, m->ffn);
    double fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
    double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
    return attn_params(m) + (double)m->hidden * m->experts + m->top_k * mlp_params(m, fe) +
           mlp_params(m, fs);
}

double ps__model_flops(const ps_transformer *m, double tokens, double seq)
{
    double dh = head_dim(m), qk, v, per_token = 0.0;
    mla_dims(m, dh, &qk, &v);
    double dense_p = ps__layer_active_params(m, 0), moe_p = ps__layer_active_params(m, 1);
    for (int32_t l = 0; l < m->layers; l++)
        per_token += 6.0 * (ps__is_moe_layer(m, l) ? moe_p : dense_p);
    per_token += 6.0 * (double)m->vocab * m->hidden;
    /* Attention: 3 passes of 2.2.s.a.(qk+v)/2 per token, without the causal half (Megatron). */
    per_token += m->layers * 6.0 * seq * m->heads * (qk + v);
    return per_token * tokens;
}

void ps__layer_act_bytes(const ps__setup *u, int moe, int recomputed, double *total, double *wgrad)
{
    const ps_transformer *m = u->m;
    double T = u->T, h = m->hidden, t = u->tp, ts = u->ts, at = (double)m->heads / t, qk, v;
    int mla = mla_dims(m, u->dh, &qk, &v);
    if (recomputed) { /* only the layer's input stays */
        *total = 2.0 * T * h / ts;
        *wgrad = 0.0;
        return;
    }
    /* Korthikanti et al. Table 2 per term, with flash attention (no s^2 term): two norms'
     * inputs 4h, the QKV input 2h, Q, K, V, the projection input, dropout masks h each. */
    double norms = 4.0 * h / ts;
    double qkv = mla ? 2.0 * at * (qk + qk + v) +
                           2.0 * ((double)m->q_lora_rank + m->kv_lora_rank + m->qk_rope_head_dim)
                     : 2.0 * (at + 2.0 * u->kv_dev) * u->dh;
    double attn = 2.0 * h / ts + qkv + 2.0 * at * v + h / ts;
    double attn_w = 2.0 * h / ts + 2.0 * at * v;
    double mlp, mlp_w;
    if (!moe) {
        double f = m->ffn;
        mlp = 3.0 * h / ts + (m->gated_mlp ? 6.0 : 4.0) * f / t;
        mlp_w = 2.0 * h / ts + 2.0 * f / t;
    } else {
        double E = m->experts, k = m->top_k;
        double fe = m->moe_ffn > 0 ? m->moe_ffn : m->ffn;
        double fs = (m->shared_ffn > 0 ? m->shared_ffn : fe) * m->shared_experts;
        double per_copy = 2.0 * h + (m->gated_mlp ? 6.0 : 4.0) * fe;
        /* [derived, model.md 4] router logits fp32, permuted copies, each copy's expert
         * input, gate/up outputs and activation; the shared experts as a dense MLP. */
        mlp = 3.0 * h / ts + (4.0 * E + 2.0 * k * h + k * per_copy) / ts +
              (fs > 0 ? (m->gated_mlp ? 6.0 : 4.0) * fs / t : 0.0);
        mlp_w = 2.0 * h / ts + k * (2.0 * h + 2.0 * fe) / ts + (fs > 0 ? 2.0 * fs / t : 0.0);
    }
    *total = T * (norms + attn + mlp);
    *wgrad = T * (attn_w + mlp_w);
}
