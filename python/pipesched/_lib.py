"""The shared libraries and their C declarations (ctypes).

Everything that knows a C name or a C layout is in this module: the other modules of the
package call the functions bound here and read the structures declared here. The libraries
are the ones the package was built with, recorded by meson in ``_build_info.py``: the build
tree's when the package is imported from the build tree (``PYTHONPATH=build/python``), the
installed ones (``LIBDIR`` of the install) when it is imported from site-packages.

The executor's functions are looked up in one place, :func:`exec_library`: the library
``_build_info.EXEC_LIBRARY`` names, which is ``libpipesched-exec`` when the build has that
library and ``libpipesched`` otherwise (the executor was part of the core library before).
"""

import ctypes
import os
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char,
    c_char_p,
    c_double,
    c_int,
    c_int32,
    c_int64,
    c_longlong,
    c_size_t,
    c_uint8,
    c_uint16,
    c_uint64,
    c_void_p,
)

from . import _build_info

# ---------------------------------------------------------------------------------------------
# Loading


def _open(path, what):
    """Opens the library at path (the recorded build or install location). When the file is
    not there (the install was moved), the dynamic loader looks the soname up itself
    (LD_LIBRARY_PATH, the run path, the system's folders)."""
    if not path:
        return None
    candidates = [path]
    soname = getattr(_build_info, "SONAMES", {}).get(what)
    if soname:
        candidates.append(soname)
    errors = []
    for candidate in candidates:
        if candidate == path and not os.path.exists(path):
            errors.append("%s: no such file" % path)
            continue
        try:
            return ctypes.CDLL(candidate)
        except OSError as e:
            errors.append(str(e))
    raise ImportError(
        "pipesched: cannot load the %s library it was built with (%s)" % (what, "; ".join(errors))
    )


core = _open(_build_info.CORE_LIBRARY, "core")
_viz = None
_exec = None


def viz_library():
    """libpipesched-viz, or None when the build has no Graphviz (loaded on first use)."""
    global _viz
    if _viz is None and _build_info.VIZ_LIBRARY:
        _viz = _open(_build_info.VIZ_LIBRARY, "viz")
        _declare_viz(_viz)
    return _viz


def exec_library():
    """The library with the executor (ps_exec_*), or None when the build has no libuv."""
    global _exec
    if _exec is None and _build_info.EXEC_LIBRARY:
        if _build_info.EXEC_LIBRARY == _build_info.CORE_LIBRARY:
            _exec = core
        else:
            _exec = _open(_build_info.EXEC_LIBRARY, "exec")
        _declare_exec(_exec)
    return _exec


# ---------------------------------------------------------------------------------------------
# Structures of pipesched.h


class Action(Structure):
    _fields_ = [
        ("kind", c_uint8),
        ("bkind", c_uint8),
        ("reserved", c_uint16),
        ("stage", c_int32),
        ("mb", c_int32),
        ("bstage", c_int32),
        ("bmb", c_int32),
    ]


class FamilyInfo(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("aliases", c_char_p),
        ("description", c_char_p),
        ("constraints", c_char_p),
        ("placement", c_char_p),
    ]


class FamilyParams(Structure):
    _fields_ = [
        ("vpp", c_int),
        ("default_vpp", c_int),
        ("model_copies", c_int),
        ("cost_aware", c_int),
        ("options", c_char_p),
    ]


class Fbw(Structure):
    _fields_ = [("f", c_double), ("b", c_double), ("w", c_double)]


class Metrics(Structure):
    _fields_ = [
        ("makespan", c_double),
        ("bubble", c_double),
        ("bubble_ratio", c_double),
        ("pp", c_int),
    ]


class RankMetrics(Structure):
    _fields_ = [
        ("busy", c_double),
        ("span", c_double),
        ("idle", c_double),
        ("peak_activations", c_int64),
        ("peak_memory", c_double),
        ("param_copies", c_int),
    ]


OP_LAYER_COUNT = 14
PHASE_COUNT = 4


class LayerCost(Structure):
    _fields_ = [("t", c_double * OP_LAYER_COUNT)]


class MoeModel(Structure):
    _fields_ = [
        ("layers", c_int32),
        ("dense_layers", c_int32),
        ("moe", LayerCost),
        ("dense", LayerCost),
        ("p2p", c_double),
        ("slowdown", c_double),
        ("planner", c_int32),
    ]


class A2aInfo(Structure):
    _fields_ = [
        ("chosen", c_int32),
        ("flat_inter", c_double),
        ("flat_intra", c_double),
        ("hier_inter", c_double),
        ("hier_intra", c_double),
        ("flat_time", c_double),
        ("hier_time", c_double),
    ]


class PlanOp(Structure):
    _fields_ = [
        ("op", c_uint8),
        ("stream", c_uint8),
        ("part", c_uint8),
        ("dense", c_uint8),
        ("layer", c_int32),
        ("start", c_double),
        ("end", c_double),
    ]


class PlanStats(Structure):
    _fields_ = [
        ("duration", c_double),
        ("compute", c_double),
        ("comm", c_double),
        ("exposed", c_double),
        ("overlap", c_double),
        ("p2p", c_double),
        ("p2p_exposed", c_double),
    ]


class CommMetrics(Structure):
    _fields_ = [
        ("total", c_double * PHASE_COUNT),
        ("exposed", c_double * PHASE_COUNT),
        ("overlap", c_double * PHASE_COUNT),
    ]


class TraceEvent(Structure):
    _fields_ = [
        ("name", c_char_p),
        ("cat", c_char_p),
        ("rank", c_int32),
        ("track", c_int32),
        ("start", c_double),
        ("dur", c_double),
    ]


class TraceOptions(Structure):
    _fields_ = [
        ("us_per_unit", c_double),
        ("events", POINTER(TraceEvent)),
        ("nevents", c_size_t),
    ]


# ---------------------------------------------------------------------------------------------
# Structures of model.h and tune.h

COMM_KINDS = 5
KNOBS = 16


class Transformer(Structure):
    _fields_ = [("name", c_char * 64)] + [
        (n, c_int32)
        for n in (
            "layers hidden ffn heads kv_heads head_dim vocab tied_embeddings gated_mlp rms_norm "
            "max_seq experts top_k moe_ffn shared_experts shared_ffn first_dense q_lora_rank "
            "kv_lora_rank qk_nope_head_dim qk_rope_head_dim v_head_dim mtp_layers"
        ).split()
    ]


class ParamCount(Structure):
    _fields_ = [
        (n, c_double)
        for n in "embedding output dense_layer moe_layer moe_expert mtp_layer total active".split()
    ]


class Hardware(Structure):
    _fields_ = (
        [("name", c_char * 32)]
        + [(n, c_double) for n in "peak_tflops_bf16 peak_tflops_fp8 hbm_gib hbm_gbps".split()]
        + [("devices_per_node", c_int32)]
        + [
            (n, c_double)
            for n in (
                "intra_gbps inter_gbps lat_intra_us lat_inter_us gemm_eff gemm_half_dim attn_eff "
                "mem_eff bus_eff_intra bus_eff_inter overhead_gib moe_layer_us grouped_gemm_eff"
            ).split()
        ]
    )


class Train(Structure):
    _fields_ = (
        [(n, c_int32) for n in "gpus gpus_per_node tp pp vpp cp ep etp sequence_parallel".split()]
        + [("gbs", c_int64)]
        + [
            (n, c_int32)
            for n in (
                "mbs seq precision recompute recompute_layers distributed_optimizer "
                "overlap_grad_reduce overlap_param_gather"
            ).split()
        ]
        + [("schedule", c_char * 32)]
        + [(n, c_int32) for n in "group_size a2a moe_token_drop".split()]
        + [("layout", c_char_p)]
        + [
            (n, c_int32)
            for n in "first_stage_layers last_stage_layers extra_warmup split_backward".split()
        ]
    )


class StageLayers(Structure):
    _fields_ = [(n, c_int32) for n in "first_layer layers embedding mtp loss".split()]


class EstimateResult(Structure):
    _fields_ = [
        (n, c_double)
        for n in (
            "step_time_s tokens_per_s_per_gpu model_tflops_per_gpu mfu bubble_s compute_s".split()
        )
    ] + [
        ("exposed_s", c_double * COMM_KINDS),
        ("optimizer_s", c_double),
        ("dp", c_int32),
        ("microbatches", c_int32),
        ("peak_gib", c_double),
        ("peak_rank", c_int32),
        ("fits", c_int32),
    ]


class RankMemory(Structure):
    _fields_ = [
        (n, c_double) for n in "weights grads optimizer activations overhead total".split()
    ] + [("peak_inflight", c_int64)]


class TuneConfig(Structure):
    _fields_ = [("knob", c_int32 * KNOBS), ("recompute_layers", c_int32)]


class TuneProgress(Structure):
    _fields_ = [
        ("done", c_uint64),
        ("total", c_uint64),
        ("seconds", c_double),
        ("best_step_s", c_double),
    ]


TuneProgressFn = CFUNCTYPE(None, c_void_p, POINTER(TuneProgress))


class TuneJob(Structure):
    _fields_ = [
        ("gpus", c_int32),
        ("gpus_per_node", c_int32),
        ("gbs", c_int64),
        ("seq", c_int32),
        ("mem_reserve_gib", c_double),
        ("top_k", c_int32),
        ("threads", c_int32),
        ("no_prune", c_int32),
        ("record_all", c_int32),
        ("progress", TuneProgressFn),
        ("progress_ud", c_void_p),
        ("csv_write", c_void_p),  # the C API's stream; Tune.csv uses record_all
        ("csv_ud", c_void_p),
    ]


class TuneRow(Structure):
    _fields_ = [
        ("config", TuneConfig),
        ("index", c_uint64),
        ("result", EstimateResult),
        ("gap", c_int32),
        ("gap_s", c_double),
    ]


class TuneStats(Structure):
    _fields_ = (
        [
            (n, c_uint64)
            for n in (
                "candidates rejected simulated failed over_memory fitting pruned bound_breaks"
            ).split()
        ]
        + [(n, c_double) for n in "seconds candidates_per_s simulated_per_s".split()]
        + [("threads", c_int32)]
        + [(n, c_double) for n in "limit_gib min_need_gib".split()]
        + [("min_need_exact", c_int32)]
        + [(n, c_uint64) for n in "reused over_unsimulated".split()]
        + [("processes", c_int32)]
    )


# ---------------------------------------------------------------------------------------------
# Structures of balance.h


class Sample(Structure):
    _fields_ = [("tokens", c_double), ("sq", c_double), ("docs", c_int32)]


class SampleModel(Structure):
    _fields_ = [("a", c_double), ("c", c_double), ("d", c_double)]


class EdpbInput(Structure):
    _fields_ = [
        ("samples", POINTER(Sample)),
        ("n_samples", c_size_t),
        ("trace", c_void_p),
        ("theta", c_double),
        ("max_evals", c_int64),
    ]


class EdpbResult(Structure):
    _fields_ = [
        ("even_step_time_s", c_double),
        ("imbalanced_step_time_s", c_double),
        ("experts_step_time_s", c_double),
        ("balanced_step_time_s", c_double),
        ("expert_factor", c_double),
        ("expert_factor_balanced", c_double),
        ("data_imbalance", c_double),
        ("data_imbalance_balanced", c_double),
        ("slowest_replica", c_int32),
        ("slowest_replica_balanced", c_int32),
        ("evals", c_int64),
    ]


class DataConfig(Structure):
    _fields_ = [
        ("dp", c_int32),
        ("microbatches", c_int32),
        ("mbs", c_int32),
        ("max_evals", c_int64),
    ]


class DataResult(Structure):
    _fields_ = [
        ("step_time", c_double),
        ("baseline_step_time", c_double),
        ("lpt_step_time", c_double),
        ("evals", c_int64),
    ]


class ExpertGroup(Structure):
    _fields_ = [("devices", c_int32), ("nodes", c_int32), ("capacity", c_int32)]


class ExpertLayerTime(Structure):
    _fields_ = [("device", c_int32)] + [
        (n, c_double) for n in "gemm_s a2a_s layer_s a2a_bytes a2a_inter_bytes".split()
    ]


# ---------------------------------------------------------------------------------------------
# Structures of viz.h and exec.h


class VizConfig(Structure):
    _fields_ = [
        ("max_boxes", c_int),
        ("max_lanes", c_int),
        ("max_width", c_double),
        ("max_dag_actions", c_int),
        ("time_unit", c_char * 16),
        ("window_from", c_double),
        ("window_to", c_double),
        ("overview", c_int),
    ]


ExecActionCb = CFUNCTYPE(c_int, c_void_p, POINTER(Action), c_int, c_uint64, c_void_p)
ExecEventCb = CFUNCTYPE(None, c_void_p, c_int, c_int64, POINTER(Action), c_double, c_double,
                        c_void_p)
ExecDoneCb = CFUNCTYPE(None, c_void_p, c_int, c_void_p)
ExecCloseCb = CFUNCTYPE(None, c_void_p, c_void_p)
# libuv's callbacks of the loop the package owns (executor.py): a timer and a close.
UvTimerCb = CFUNCTYPE(None, c_void_p)
UvCloseCb = CFUNCTYPE(None, c_void_p)


class ExecConfig(Structure):
    _fields_ = [
        ("compute", ExecActionCb),
        ("send", ExecActionCb),
        ("recv", ExecActionCb),
        ("on_event", ExecEventCb),
        ("on_done", ExecDoneCb),
        ("user_data", c_void_p),
        ("local_ranks", POINTER(c_int)),
        ("n_local", c_int),
        ("stall_timeout_s", c_double),
        ("emulate", c_int),
        ("problem", c_void_p),
        ("time_scale", c_double),
    ]


# Every structure above, by its C name: the python suite compares their sizes and offsets
# with the C compiler's (tests/python/abi.c).
STRUCTS = {
    "ps_action": Action,
    "ps_family_info": FamilyInfo,
    "ps_family_params": FamilyParams,
    "ps_fbw": Fbw,
    "ps_metrics": Metrics,
    "ps_rank_metrics": RankMetrics,
    "ps_layer_cost": LayerCost,
    "ps_moe_model": MoeModel,
    "ps_a2a_info": A2aInfo,
    "ps_plan_op": PlanOp,
    "ps_plan_stats": PlanStats,
    "ps_comm_metrics": CommMetrics,
    "ps_trace_event": TraceEvent,
    "ps_trace_options": TraceOptions,
    "ps_transformer": Transformer,
    "ps_param_count": ParamCount,
    "ps_hardware": Hardware,
    "ps_train": Train,
    "ps_stage_layers": StageLayers,
    "ps_estimate_result": EstimateResult,
    "ps_rank_memory": RankMemory,
    "ps_tune_config": TuneConfig,
    "ps_tune_job": TuneJob,
    "ps_tune_row": TuneRow,
    "ps_tune_stats": TuneStats,
    "ps_tune_progress": TuneProgress,
    "ps_sample": Sample,
    "ps_sample_model": SampleModel,
    "ps_edpb_input": EdpbInput,
    "ps_edpb_result": EdpbResult,
    "ps_data_config": DataConfig,
    "ps_data_result": DataResult,
    "ps_expert_group": ExpertGroup,
    "ps_expert_layer_time": ExpertLayerTime,
    "ps_viz_config": VizConfig,
    "ps_exec_config": ExecConfig,
}

# The write callback of the exports: (ud, data, len) -> 0 to go on.
WriteFn = CFUNCTYPE(c_int, c_void_p, POINTER(c_char), c_size_t)

# ---------------------------------------------------------------------------------------------
# Functions

P = c_void_p  # every opaque handle


def _fn(lib, name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = list(argtypes)
    return f


def _declare_core(lib):
    d = {}

    def fn(name, restype, *argtypes):
        d[name] = _fn(lib, name, restype, *argtypes)

    fn("ps_strerror", c_char_p, c_int)
    fn("ps_err_name", c_char_p, c_int)
    fn("ps_kind_name", c_char_p, c_int)
    fn("ps_action_format", c_int, POINTER(Action), c_char_p, c_size_t)
    fn("ps_action_parse", c_int, c_char_p, c_size_t, POINTER(Action), POINTER(c_size_t))
    # problem
    fn("ps_problem_new", c_int, POINTER(P), c_void_p)
    fn("ps_problem_free", None, P)
    fn("ps_problem_last_error", c_char_p, P)
    fn("ps_problem_load_json", c_int, P, c_char_p, c_size_t)
    fn("ps_problem_set_schedule", c_int, P, c_char_p)
    fn("ps_problem_schedule", c_char_p, P)
    fn("ps_problem_set_int", c_int, P, c_int, c_longlong)
    fn("ps_problem_get_int", c_longlong, P, c_int)
    fn("ps_problem_set_cost", c_int, P, c_int, c_double)
    fn("ps_problem_get_cost", c_double, P, c_int)
    fn("ps_problem_set_costs_string", c_int, P, c_char_p)
    fn("ps_problem_set_memory_string", c_int, P, c_char_p)
    fn("ps_problem_set_mem_limit", c_int, P, c_double)
    fn("ps_problem_mem_limit", c_double, P)
    fn("ps_problem_memory", Fbw, P, c_int)
    fn("ps_problem_get_moe", c_int, P, POINTER(MoeModel))
    fn("ps_problem_a2a_info", c_int, P, POINTER(A2aInfo))
    fn("ps_problem_stage_split", c_int, P, c_int, POINTER(c_int32), POINTER(c_int32),
       POINTER(c_int32))
    # registry
    fn("ps_family_count", c_size_t)
    fn("ps_family_get", c_int, c_size_t, POINTER(FamilyInfo))
    fn("ps_family_lookup", c_int, c_char_p, POINTER(FamilyInfo))
    fn("ps_family_params_get", c_int, c_size_t, POINTER(FamilyParams))
    # schedule
    fn("ps_schedule_new", c_int, POINTER(P), c_void_p)
    fn("ps_schedule_free", None, P)
    fn("ps_schedule_last_error", c_char_p, P)
    fn("ps_schedule_generate", c_int, P, P)
    fn("ps_schedule_load_csv", c_int, P, c_char_p, c_size_t, c_int, c_int)
    fn("ps_schedule_lower", c_int, P)
    fn("ps_schedule_validate", c_int, P)
    fn("ps_schedule_family", c_char_p, P)
    for name in ("pp", "vpp", "num_stages", "microbatches", "group_size", "param_copies",
                 "num_paths", "is_lowered"):
        fn("ps_schedule_" + name, c_int, P)
    fn("ps_schedule_stage_rank", c_int, P, c_int)
    fn("ps_schedule_path", c_int, P, c_int, POINTER(POINTER(c_int32)), POINTER(c_int),
       POINTER(c_int), POINTER(c_int))
    fn("ps_schedule_rank_length", c_size_t, P, c_int)
    fn("ps_schedule_rank_actions", POINTER(Action), P, c_int)
    fn("ps_schedule_total_actions", c_size_t, P)
    fn("ps_schedule_lowered_length", c_size_t, P, c_int)
    fn("ps_schedule_lowered_actions", POINTER(Action), P, c_int)
    # simulation
    fn("ps_sim_new", c_int, POINTER(P), c_void_p)
    fn("ps_sim_free", None, P)
    fn("ps_sim_last_error", c_char_p, P)
    fn("ps_sim_run", c_int, P, P, P)
    fn("ps_sim_metrics", c_int, P, POINTER(Metrics))
    fn("ps_sim_rank_metrics", c_int, P, c_int, POINTER(RankMetrics))
    fn("ps_sim_starts", POINTER(c_double), P, c_int)
    fn("ps_sim_ends", POINTER(c_double), P, c_int)
    fn("ps_sim_comm", c_int, P, POINTER(CommMetrics))
    # planner
    fn("ps_op_name", c_char_p, c_int)
    fn("ps_op_is_comm", c_int, c_int)
    fn("ps_planner_name", c_char_p, c_int)
    fn("ps_plan_new", c_int, POINTER(P), c_void_p)
    fn("ps_plan_free", None, P)
    fn("ps_plan_last_error", c_char_p, P)
    fn("ps_plan_step", c_int, P, P, c_int, c_int, c_int, c_int, c_int)
    fn("ps_plan_stats_get", c_int, P, POINTER(PlanStats))
    fn("ps_plan_ops", c_size_t, P, POINTER(POINTER(PlanOp)))
    # export
    fn("ps_export", c_int, P, P, c_int, WriteFn, c_void_p)
    fn("ps_export_timed_table", c_int, P, P, c_int, WriteFn, c_void_p)
    fn("ps_export_trace", c_int, P, P, POINTER(TraceOptions), WriteFn, c_void_p)
    # model.h
    fn("ps_transformer_builtin_name", c_char_p, c_size_t)
    fn("ps_transformer_params", c_int, POINTER(Transformer), POINTER(ParamCount))
    fn("ps_hardware_builtin_name", c_char_p, c_size_t)
    fn("ps_train_init", None, POINTER(Train))
    fn("ps_estimate_new", c_int, POINTER(P), c_void_p)
    fn("ps_estimate_free", None, P)
    fn("ps_estimate_last_error", c_char_p, P)
    fn("ps_estimate_run", c_int, P, POINTER(Transformer), POINTER(Hardware), POINTER(Train))
    fn("ps_estimate_result_get", c_int, P, POINTER(EstimateResult))
    fn("ps_estimate_rank_memory", c_int, P, c_int, POINTER(RankMemory))
    fn("ps_estimate_stage_layers", c_int, P, POINTER(POINTER(StageLayers)))
    fn("ps_estimate_schedule", P, P)
    fn("ps_estimate_problem", P, P)
    fn("ps_estimate_sim", P, P)
    fn("ps_estimate_write_trace", c_int, P, WriteFn, c_void_p)
    fn("ps_estimate_config_load", c_int, c_char_p, c_size_t, POINTER(Transformer),
       POINTER(Hardware), POINTER(Train), c_char_p, c_size_t, c_char_p, c_size_t)
    fn("ps_layout_format", c_int, POINTER(StageLayers), c_int32, c_char_p, c_size_t)
    # tune.h
    fn("ps_tune_job_init", None, POINTER(TuneJob))
    fn("ps_tune_knob_name", c_char_p, c_int)
    fn("ps_tune_knob_lookup", c_int, c_char_p)
    fn("ps_tune_value_parse", c_int, c_int, c_char_p, POINTER(c_int32))
    fn("ps_tune_value_name", c_int, c_int, c_int32, c_char_p, c_size_t)
    fn("ps_tune_new", c_int, POINTER(P), c_void_p)
    fn("ps_tune_free", None, P)
    fn("ps_tune_last_error", c_char_p, P)
    fn("ps_tune_allow", c_int, P, c_int, POINTER(c_int32), c_size_t)
    fn("ps_tune_max", c_int, P, c_int, c_int32)
    fn("ps_tune_gap_name", c_char_p, c_int)
    fn("ps_tune_run", c_int, P, POINTER(Transformer), POINTER(Hardware), POINTER(TuneJob))
    fn("ps_tune_stats_get", c_int, P, POINTER(TuneStats))
    fn("ps_tune_top_count", c_size_t, P)
    fn("ps_tune_top", c_int, P, c_size_t, POINTER(TuneRow))
    fn("ps_tune_front_count", c_size_t, P)
    fn("ps_tune_front", c_int, P, c_size_t, POINTER(TuneRow))
    fn("ps_tune_reason_count", c_size_t, P)
    fn("ps_tune_reason", c_int, P, c_size_t, POINTER(c_char_p), POINTER(c_char_p),
       POINTER(c_uint64))
    fn("ps_tune_family_name", c_char_p, c_size_t)
    fn("ps_tune_config_train", None, POINTER(TuneJob), POINTER(TuneConfig), POINTER(Train))
    fn("ps_tune_pareto3", c_size_t, POINTER(c_double), POINTER(c_double), POINTER(c_int32),
       c_size_t, POINTER(c_uint8))
    fn("ps_tune_write_csv", c_int, P, WriteFn, c_void_p)
    # balance.h
    fn("ps_samples_parse", c_int, c_char_p, c_size_t, POINTER(Sample), c_size_t,
       POINTER(c_size_t), c_char_p, c_size_t)
    fn("ps_sample_time", c_double, POINTER(SampleModel), POINTER(Sample))
    fn("ps_sample_model_derive", c_int, POINTER(Transformer), POINTER(Hardware),
       POINTER(SampleModel), c_char_p, c_size_t)
    fn("ps_balance_data", c_int, P, POINTER(c_double), c_size_t, POINTER(DataConfig),
       POINTER(c_int32), POINTER(c_int32), POINTER(DataResult), c_char_p, c_size_t)
    fn("ps_samples_synthetic", c_int, c_char_p, c_int32, POINTER(Sample), c_size_t, c_char_p,
       c_size_t)
    fn("ps_edpb_estimate", c_int, P, POINTER(Transformer), POINTER(Hardware), POINTER(Train),
       POINTER(EdpbInput), POINTER(EdpbResult), POINTER(c_int32), POINTER(c_int32), c_char_p,
       c_size_t)
    fn("ps_expert_trace_new", c_int, POINTER(P), c_void_p)
    fn("ps_expert_trace_free", None, P)
    fn("ps_expert_trace_last_error", c_char_p, P)
    fn("ps_expert_trace_load", c_int, P, c_char_p, c_size_t)
    fn("ps_expert_trace_synthetic", c_int, P, c_char_p, c_int32, c_int32)
    fn("ps_expert_trace_shape", c_int, P, POINTER(c_int32), POINTER(c_int32), POINTER(c_int32))
    fn("ps_expert_trace_tokens", c_double, P, c_int32, c_int32, c_int32)
    fn("ps_expert_trace_predict", c_int, P, c_double, POINTER(c_double))
    fn("ps_expert_group_check", c_int, POINTER(ExpertGroup), c_int32, POINTER(c_int32),
       c_char_p, c_size_t)
    fn("ps_expert_identity", c_int, c_int32, POINTER(ExpertGroup), POINTER(c_int32))
    fn("ps_expert_device_loads", c_double, POINTER(c_double), c_int32, POINTER(c_int32), c_int32,
       POINTER(c_double))
    fn("ps_expert_place", c_int, POINTER(c_double), c_int32, POINTER(ExpertGroup),
       POINTER(c_int32), POINTER(c_int32), c_void_p, c_char_p, c_size_t)
    fn("ps_expert_layer_time_get", c_int, POINTER(Transformer), POINTER(Hardware), c_int32,
       POINTER(c_double), c_int32, POINTER(c_int32), POINTER(ExpertGroup),
       POINTER(ExpertLayerTime), c_char_p, c_size_t)
    fn("ps_expert_migration_bytes", c_double, POINTER(Transformer))
    fn("ps_expert_migration_s", c_int, POINTER(c_int32), POINTER(c_int32), c_int32,
       POINTER(ExpertGroup), c_double, POINTER(Hardware), POINTER(c_int32), POINTER(c_double))
    fn("ps_expert_align", c_int, POINTER(c_int32), POINTER(c_int32), c_int32,
       POINTER(ExpertGroup), c_void_p)
    fn("ps_expert_should_migrate", c_int, c_double, c_double, c_double, c_int32)
    return d


def _declare_viz(lib):
    _fn(lib, "ps_viz_config_init", None, POINTER(VizConfig))
    _fn(lib, "ps_viz_new", c_int, POINTER(P), POINTER(VizConfig), c_void_p)
    _fn(lib, "ps_viz_free", None, P)
    _fn(lib, "ps_viz_last_error", c_char_p, P)
    for name in ("ps_viz_timeline_svg", "ps_viz_dag_svg"):
        _fn(lib, name, c_int, P, P, P, WriteFn, c_void_p)
    _fn(lib, "ps_viz_overlap_svg", c_int, P, POINTER(PlanOp), c_size_t, POINTER(PlanStats),
        c_char_p, WriteFn, c_void_p)
    _fn(lib, "ps_viz_scatter_svg", c_int, P, POINTER(c_double), POINTER(c_double),
        POINTER(c_char_p), c_size_t, c_char_p, c_char_p, c_char_p, WriteFn, c_void_p)


def _declare_exec(lib):
    _fn(lib, "ps_exec_config_init", None, POINTER(ExecConfig))
    _fn(lib, "ps_exec_new", c_int, POINTER(P), P, P, POINTER(ExecConfig), c_void_p)
    _fn(lib, "ps_exec_start", c_int, P)
    _fn(lib, "ps_exec_complete", c_int, P, c_uint64, c_int)
    _fn(lib, "ps_exec_cancel", c_int, P)
    _fn(lib, "ps_exec_close", None, P, ExecCloseCb)
    _fn(lib, "ps_exec_status", c_int, P)
    _fn(lib, "ps_exec_last_error", c_char_p, P)
    _fn(lib, "ps_exec_starts", POINTER(c_double), P, c_int)
    _fn(lib, "ps_exec_ends", POINTER(c_double), P, c_int)
    _fn(lib, "ps_exec_metrics", c_int, P, c_double, POINTER(Metrics))
    _fn(lib, "ps_exec_measured", c_int, P, c_double, P)
    # libuv, reached through the executor's library (it links libuv: dlsym on its handle
    # searches its dependencies too), so the package needs no path of its own for libuv.
    _fn(lib, "uv_loop_size", c_size_t)
    _fn(lib, "uv_loop_init", c_int, c_void_p)
    _fn(lib, "uv_loop_close", c_int, c_void_p)
    _fn(lib, "uv_run", c_int, c_void_p, c_int)
    _fn(lib, "uv_handle_size", c_size_t, c_int)
    _fn(lib, "uv_timer_init", c_int, c_void_p, c_void_p)
    _fn(lib, "uv_timer_start", c_int, c_void_p, UvTimerCb, c_uint64, c_uint64)
    _fn(lib, "uv_timer_stop", c_int, c_void_p)
    _fn(lib, "uv_unref", None, c_void_p)
    _fn(lib, "uv_close", None, c_void_p, UvCloseCb)
    _fn(lib, "uv_strerror", c_char_p, c_int)


C = _declare_core(core)


def text(b):
    """A C string from the library as str ("" for NULL)."""
    return b.decode("utf-8", "replace") if b else ""
