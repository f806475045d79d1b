/*
 * The layouts the Python package declares with ctypes (python/pipesched/_lib.py), as the C
 * compiler lays them out: one line per structure ("ps_action 20") and per field
 * ("ps_action.stage 4"), and the libuv constants the package passes. test_abi.py compares
 * them with ctypes', so a field added to a public structure fails the python suite instead of
 * shifting what Python reads.
 * SPDX-License-Identifier: MIT
 */
#include <pipesched/balance.h>
#include <pipesched/model.h>
#include <pipesched/pipesched.h>
#include <pipesched/tune.h>
#include <pipesched/viz.h>
#ifdef PS_ABI_EXEC
#include <pipesched/exec.h>
#endif

#include <stddef.h>
#include <stdio.h>

#define S(T) printf("%s %zu\n", #T, sizeof(T))
#define F(T, f) printf("%s.%s %zu\n", #T, #f, offsetof(T, f))

static void core(void)
{
    S(ps_action), F(ps_action, kind), F(ps_action, bkind), F(ps_action, reserved);
    F(ps_action, stage), F(ps_action, mb), F(ps_action, bstage), F(ps_action, bmb);
    S(ps_family_info), F(ps_family_info, name), F(ps_family_info, aliases);
    F(ps_family_info, description), F(ps_family_info, constraints), F(ps_family_info, placement);
    S(ps_family_params), F(ps_family_params, vpp), F(ps_family_params, default_vpp);
    F(ps_family_params, model_copies), F(ps_family_params, cost_aware);
    F(ps_family_params, options);
    S(ps_fbw), F(ps_fbw, f), F(ps_fbw, b), F(ps_fbw, w);
    S(ps_metrics), F(ps_metrics, makespan), F(ps_metrics, bubble);
    F(ps_metrics, bubble_ratio), F(ps_metrics, pp);
    S(ps_rank_metrics), F(ps_rank_metrics, busy), F(ps_rank_metrics, span);
    F(ps_rank_metrics, idle), F(ps_rank_metrics, peak_activations);
    F(ps_rank_metrics, peak_memory), F(ps_rank_metrics, param_copies);
    S(ps_layer_cost), F(ps_layer_cost, t);
    S(ps_moe_model), F(ps_moe_model, layers), F(ps_moe_model, dense_layers);
    F(ps_moe_model, moe), F(ps_moe_model, dense), F(ps_moe_model, p2p);
    F(ps_moe_model, slowdown), F(ps_moe_model, planner);
    S(ps_a2a_info), F(ps_a2a_info, chosen), F(ps_a2a_info, flat_inter);
    F(ps_a2a_info, flat_intra), F(ps_a2a_info, hier_inter), F(ps_a2a_info, hier_intra);
    F(ps_a2a_info, flat_time), F(ps_a2a_info, hier_time);
    S(ps_plan_op), F(ps_plan_op, op), F(ps_plan_op, stream), F(ps_plan_op, part);
    F(ps_plan_op, dense), F(ps_plan_op, layer), F(ps_plan_op, start), F(ps_plan_op, end);
    S(ps_plan_stats), F(ps_plan_stats, duration), F(ps_plan_stats, compute);
    F(ps_plan_stats, comm), F(ps_plan_stats, exposed), F(ps_plan_stats, overlap);
    F(ps_plan_stats, p2p), F(ps_plan_stats, p2p_exposed);
    S(ps_comm_metrics), F(ps_comm_metrics, total), F(ps_comm_metrics, exposed);
    F(ps_comm_metrics, overlap);
    S(ps_trace_event), F(ps_trace_event, name), F(ps_trace_event, cat);
    F(ps_trace_event, rank), F(ps_trace_event, track), F(ps_trace_event, start);
    F(ps_trace_event, dur);
    S(ps_trace_options), F(ps_trace_options, us_per_unit), F(ps_trace_options, events);
    F(ps_trace_options, nevents);
}

static void model(void)
{
    S(ps_transformer), F(ps_transformer, name), F(ps_transformer, layers);
    F(ps_transformer, hidden), F(ps_transformer, ffn), F(ps_transformer, heads);
    F(ps_transformer, kv_heads), F(ps_transformer, head_dim), F(ps_transformer, vocab);
    F(ps_transformer, tied_embeddings), F(ps_transformer, gated_mlp);
    F(ps_transformer, rms_norm), F(ps_transformer, max_seq), F(ps_transformer, experts);
    F(ps_transformer, top_k), F(ps_transformer, moe_ffn), F(ps_transformer, shared_experts);
    F(ps_transformer, shared_ffn), F(ps_transformer, first_dense);
    F(ps_transformer, q_lora_rank), F(ps_transformer, kv_lora_rank);
    F(ps_transformer, qk_nope_head_dim), F(ps_transformer, qk_rope_head_dim);
    F(ps_transformer, v_head_dim), F(ps_transformer, mtp_layers);
    S(ps_param_count), F(ps_param_count, embedding), F(ps_param_count, output);
    F(ps_param_count, dense_layer), F(ps_param_count, moe_layer);
    F(ps_param_count, moe_expert), F(ps_param_count, mtp_layer), F(ps_param_count, total);
    F(ps_param_count, active);
    S(ps_hardware), F(ps_hardware, name), F(ps_hardware, peak_tflops_bf16);
    F(ps_hardware, peak_tflops_fp8), F(ps_hardware, hbm_gib), F(ps_hardware, hbm_gbps);
    F(ps_hardware, devices_per_node), F(ps_hardware, intra_gbps), F(ps_hardware, inter_gbps);
    F(ps_hardware, lat_intra_us), F(ps_hardware, lat_inter_us), F(ps_hardware, gemm_eff);
    F(ps_hardware, gemm_half_dim), F(ps_hardware, attn_eff), F(ps_hardware, mem_eff);
    F(ps_hardware, bus_eff_intra), F(ps_hardware, bus_eff_inter);
    F(ps_hardware, overhead_gib), F(ps_hardware, moe_layer_us);
    F(ps_hardware, grouped_gemm_eff);
    S(ps_train), F(ps_train, gpus), F(ps_train, gpus_per_node), F(ps_train, tp);
    F(ps_train, pp), F(ps_train, vpp), F(ps_train, cp), F(ps_train, ep), F(ps_train, etp);
    F(ps_train, sequence_parallel), F(ps_train, gbs), F(ps_train, mbs), F(ps_train, seq);
    F(ps_train, precision), F(ps_train, recompute), F(ps_train, recompute_layers);
    F(ps_train, distributed_optimizer), F(ps_train, overlap_grad_reduce);
    F(ps_train, overlap_param_gather), F(ps_train, schedule), F(ps_train, group_size);
    F(ps_train, a2a), F(ps_train, moe_token_drop), F(ps_train, layout);
    F(ps_train, first_stage_layers), F(ps_train, last_stage_layers);
    F(ps_train, extra_warmup), F(ps_train, split_backward);
    S(ps_stage_layers), F(ps_stage_layers, first_layer), F(ps_stage_layers, layers);
    F(ps_stage_layers, embedding), F(ps_stage_layers, mtp), F(ps_stage_layers, loss);
    S(ps_estimate_result), F(ps_estimate_result, step_time_s);
    F(ps_estimate_result, tokens_per_s_per_gpu), F(ps_estimate_result, model_tflops_per_gpu);
    F(ps_estimate_result, mfu), F(ps_estimate_result, bubble_s);
    F(ps_estimate_result, compute_s), F(ps_estimate_result, exposed_s);
    F(ps_estimate_result, optimizer_s), F(ps_estimate_result, dp);
    F(ps_estimate_result, microbatches), F(ps_estimate_result, peak_gib);
    F(ps_estimate_result, peak_rank), F(ps_estimate_result, fits);
    S(ps_rank_memory), F(ps_rank_memory, weights), F(ps_rank_memory, grads);
    F(ps_rank_memory, optimizer), F(ps_rank_memory, activations);
    F(ps_rank_memory, overhead), F(ps_rank_memory, total), F(ps_rank_memory, peak_inflight);
    S(ps_tune_config), F(ps_tune_config, knob), F(ps_tune_config, recompute_layers);
    S(ps_tune_job), F(ps_tune_job, gpus), F(ps_tune_job, gpus_per_node), F(ps_tune_job, gbs);
    F(ps_tune_job, seq), F(ps_tune_job, mem_reserve_gib), F(ps_tune_job, top_k);
    F(ps_tune_job, threads), F(ps_tune_job, no_prune), F(ps_tune_job, record_all);
    F(ps_tune_job, progress), F(ps_tune_job, progress_ud), F(ps_tune_job, csv_write);
    F(ps_tune_job, csv_ud);
    S(ps_tune_row), F(ps_tune_row, config), F(ps_tune_row, index), F(ps_tune_row, result);
    F(ps_tune_row, gap), F(ps_tune_row, gap_s);
    S(ps_tune_stats), F(ps_tune_stats, candidates), F(ps_tune_stats, rejected);
    F(ps_tune_stats, simulated), F(ps_tune_stats, failed), F(ps_tune_stats, over_memory);
    F(ps_tune_stats, fitting), F(ps_tune_stats, pruned), F(ps_tune_stats, bound_breaks);
    F(ps_tune_stats, seconds), F(ps_tune_stats, candidates_per_s);
    F(ps_tune_stats, simulated_per_s), F(ps_tune_stats, threads), F(ps_tune_stats, limit_gib);
    F(ps_tune_stats, min_need_gib), F(ps_tune_stats, min_need_exact);
    F(ps_tune_stats, reused), F(ps_tune_stats, over_unsimulated), F(ps_tune_stats, processes);
    S(ps_tune_progress), F(ps_tune_progress, done), F(ps_tune_progress, total);
    F(ps_tune_progress, seconds), F(ps_tune_progress, best_step_s);
    S(ps_sample), F(ps_sample, tokens), F(ps_sample, sq), F(ps_sample, docs);
    S(ps_sample_model), F(ps_sample_model, a), F(ps_sample_model, c), F(ps_sample_model, d);
    S(ps_edpb_input), F(ps_edpb_input, samples), F(ps_edpb_input, n_samples);
    F(ps_edpb_input, trace), F(ps_edpb_input, theta), F(ps_edpb_input, max_evals);
    S(ps_edpb_result), F(ps_edpb_result, even_step_time_s);
    F(ps_edpb_result, imbalanced_step_time_s), F(ps_edpb_result, experts_step_time_s);
    F(ps_edpb_result, balanced_step_time_s), F(ps_edpb_result, expert_factor);
    F(ps_edpb_result, expert_factor_balanced), F(ps_edpb_result, data_imbalance);
    F(ps_edpb_result, data_imbalance_balanced), F(ps_edpb_result, slowest_replica);
    F(ps_edpb_result, slowest_replica_balanced), F(ps_edpb_result, evals);
    S(ps_data_config), F(ps_data_config, dp), F(ps_data_config, microbatches);
    F(ps_data_config, mbs), F(ps_data_config, max_evals);
    S(ps_data_result), F(ps_data_result, step_time), F(ps_data_result, baseline_step_time);
    F(ps_data_result, lpt_step_time), F(ps_data_result, evals);
    S(ps_expert_group), F(ps_expert_group, devices), F(ps_expert_group, nodes);
    F(ps_expert_group, capacity);
    S(ps_expert_layer_time), F(ps_expert_layer_time, device), F(ps_expert_layer_time, gemm_s);
    F(ps_expert_layer_time, a2a_s), F(ps_expert_layer_time, layer_s);
    F(ps_expert_layer_time, a2a_bytes), F(ps_expert_layer_time, a2a_inter_bytes);
    printf("PS_COMM_KINDS %d\nPS_KNOBS %d\nPS_OP_LAYER_COUNT %d\nPS_PHASE_COUNT %d\n",
           PS_COMM_KINDS, PS_KNOBS, PS_OP_LAYER_COUNT, PS_PHASE_COUNT);
}

static void viz_exec(void)
{
    S(ps_viz_config), F(ps_viz_config, max_boxes), F(ps_viz_config, max_lanes);
    F(ps_viz_config, max_width), F(ps_viz_config, max_dag_actions);
    F(ps_viz_config, time_unit), F(ps_viz_config, window_from), F(ps_viz_config, window_to);
    F(ps_viz_config, overview);
#ifdef PS_ABI_EXEC
    S(ps_exec_config), F(ps_exec_config, compute), F(ps_exec_config, send);
    F(ps_exec_config, recv), F(ps_exec_config, on_event), F(ps_exec_config, on_done);
    F(ps_exec_config, user_data), F(ps_exec_config, local_ranks), F(ps_exec_config, n_local);
    F(ps_exec_config, stall_timeout_s), F(ps_exec_config, emulate);
    F(ps_exec_config, problem), F(ps_exec_config, time_scale);
    printf("UV_TIMER %d\nUV_RUN_DEFAULT %d\nUV_RUN_ONCE %d\n", (int)UV_TIMER, (int)UV_RUN_DEFAULT,
           (int)UV_RUN_ONCE);
#endif
}

int main(void)
{
    core();
    model();
    viz_exec();
    return 0;
}
