"""pipesched: pipeline-parallel schedules from Python (ctypes over libpipesched).

A session, from a family to a CSV that PyTorch loads::

    >>> import pipesched
    >>> s = pipesched.generate("interleaved", pp=4, vpp=2, microbatches=8)
    >>> [str(a) for a in s.ranks[0][:3]]
    ['0F0', '0F1', '0F2']
    >>> r = s.simulate(f=1, b=1, w=1, c=0)
    >>> r.makespan, r.ranks[0].busy
    (57.0, 48.0)
    >>> csv_text = s.to_csv()        # what `pipesched generate ... --format csv` prints

``docs/python.md`` is the guide. The names:

* :func:`families`, :func:`family`: the schedule families and their parameters;
* :func:`generate` (and :class:`Problem`): a schedule (:class:`Schedule`) with keyword
  options as on the command line; :func:`load_csv`: a table of your own;
* :class:`Schedule`: ``ranks`` (per rank, :class:`Action` objects whose ``str()`` is
  PyTorch's notation), ``lowered()``, ``validate()``, ``simulate()``, ``to_csv()``,
  ``to_json()``, ``to_table()``, ``pytorch_actions()``;
* :class:`Simulation`: ``makespan``, ``bubble``, ``bubble_ratio``, ``ranks``,
  ``timeline``, ``to_trace()``, ``to_json()``, ``metrics_json()``, ``svg()``;
* :func:`plan`: the MoE overlap planner; :func:`estimate`, :func:`tune`: the performance
  model and the search (:func:`pareto3`, :func:`tune_families`; :func:`scatter_svg` draws
  a front);
* :func:`balance_data` (with :func:`parse_samples`, :func:`sample_model`): samples to
  data-parallel ranks and slots; :class:`ExpertTrace`, :func:`place_experts` and the
  ``expert_*`` functions: expert placement (docs/balance.md); :func:`estimate_imbalance`:
  the step time with uneven samples and expert loads, without and with balancing;
* :class:`Executor` (:mod:`pipesched.executor`): run a schedule with Python callables;
* :class:`Error`: every failure, with the library's message and code (``e.code``,
  ``e.name``; the codes are module constants: ``pipesched.EUNSUPPORTED``).
"""

from . import _build_info
from ._core import (
    ERROR_CODES,
    Action,
    Error,
    Family,
    Problem,
    RankStats,
    Schedule,
    Simulation,
    Timed,
    families,
    family,
    generate,
    load_csv,
)
from ._balance import DataBalance, ExpertGroup, ExpertLayerTime, ExpertTrace, Imbalance, \
    Sample, SampleModel, balance_data, estimate_imbalance, expert_align, expert_device_loads, \
    expert_group_check, expert_identity, expert_layer_time, expert_migration, \
    expert_migration_bytes, expert_should_migrate, parse_samples, place_experts, sample_model
from ._model import Estimate, RankMemory, Tune, TuneRow, estimate, hardware_presets, knobs, \
    models, pareto3, tune, tune_families
from ._plan import PLANNERS, Plan, PlanOp, plan
from ._viz import available as has_viz
from ._viz import scatter_svg
from .executor import ExecError, ExecResult, Executor, Task, execute

__version__ = _build_info.VERSION

globals().update(ERROR_CODES)


def has_executor():
    """True when the package was built with the executor (libuv)."""
    from . import _lib

    return bool(_build_info.EXEC_LIBRARY) and _lib.exec_library() is not None


__all__ = [
    "__version__", "Action", "Error", "ERROR_CODES", "Estimate", "ExecError", "ExecResult",
    "Executor", "Family", "PLANNERS", "Plan", "PlanOp", "Problem", "RankMemory", "RankStats",
    "Schedule", "Simulation", "Task", "Timed", "Tune", "TuneRow", "estimate", "execute",
    "families", "family", "generate", "hardware_presets", "has_executor", "has_viz", "knobs",
    "load_csv", "models", "plan", "tune",
    # balance.h
    "DataBalance", "ExpertGroup", "ExpertLayerTime", "ExpertTrace", "Imbalance", "Sample",
    "SampleModel", "balance_data", "estimate_imbalance", "expert_align", "expert_device_loads", "expert_group_check",
    "expert_identity", "expert_layer_time", "expert_migration", "expert_migration_bytes",
    "expert_should_migrate", "parse_samples", "place_experts", "sample_model",
    # tune.h and viz.h
    "pareto3", "scatter_svg", "tune_families",
]
__all__ += list(ERROR_CODES)
