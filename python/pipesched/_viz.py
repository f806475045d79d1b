"""SVG drawings through libpipesched-viz (Graphviz), when the build has it.

Graphviz is not thread-safe: the library draws from one thread at a time, and so does this
module (one lock around every drawing).
"""

import ctypes
import threading

from . import _lib
from ._core import _check, _error, _set_field, _write_collector
from ._lib import text

_lock = threading.Lock()
_CONFIG_FIELDS = ("max_boxes", "max_lanes", "max_width", "max_dag_actions", "time_unit",
                  "window_from", "window_to", "overview")


def available():
    """True when the package was built with libpipesched-viz."""
    return _lib.viz_library() is not None


def _viz(config):
    lib = _lib.viz_library()
    if lib is None:
        raise _error("ESTATE", "SVG drawing needs libpipesched-viz, which this build does not "
                     "have (Graphviz was not found: install libgraphviz-dev and rebuild)")
    cfg = _lib.VizConfig()
    lib.ps_viz_config_init(ctypes.byref(cfg))
    for key, value in config.items():
        if key not in _CONFIG_FIELDS:
            raise _error("EINVAL", "unknown drawing option %r; the options: %s"
                         % (key, ", ".join(_CONFIG_FIELDS)))
        if key == "time_unit":
            raw = str(value).encode("ascii")
            if len(raw) >= 16:
                raise _error("EINVAL", "time_unit %r: at most 15 characters" % (value,))
            value = raw
        elif key == "overview":
            value = int(bool(value))
        if key == "time_unit":
            setattr(cfg, key, value)
        else:
            _set_field(cfg, key, key, value)
    h = ctypes.c_void_p()
    rc = lib.ps_viz_new(ctypes.byref(h), ctypes.byref(cfg), None)
    _check(rc, lambda: "drawing options out of range (viz.h gives the limits): %r" % (config,))
    return lib, h


def draw(kind, schedule, sim, config):
    fns = {"timeline": "ps_viz_timeline_svg", "dag": "ps_viz_dag_svg"}
    if kind not in fns:
        raise _error("EINVAL", "unknown drawing %r; the drawings: timeline, dag (and "
                     "Plan.svg() for an overlap plan)" % (kind,))
    with _lock:
        lib, h = _viz(config)
        try:
            write, result = _write_collector()
            rc = getattr(lib, fns[kind])(h, schedule._h, sim._h, write, None)
            _check(rc, lambda: text(lib.ps_viz_last_error(h)))
            return result()
        finally:
            lib.ps_viz_free(h)


def draw_plan(plan, title, config):
    if not plan._raw:
        raise _error("EINVAL", "the plan has no operations to draw")
    with _lock:
        lib, h = _viz(config)
        try:
            write, result = _write_collector()
            rc = lib.ps_viz_overlap_svg(h, plan._raw, len(plan._raw), ctypes.byref(plan._stats),
                                        title.encode("utf-8") if title else None, write, None)
            _check(rc, lambda: text(lib.ps_viz_last_error(h)))
            return result()
        finally:
            lib.ps_viz_free(h)


def scatter_svg(x, y, labels=None, x_label=None, y_label=None, title=None, **config):
    """A scatter plot as SVG text (``ps_viz_scatter_svg``, what ``tune --pareto-svg`` draws):
    the points (x[i], y[i]) on linear axes, each a small circle with labels[i] beside it
    (None: no text), the axes labelled ``x_label`` and ``y_label``, and a ``title`` with the
    point count. ``config``: the drawing options of :meth:`Simulation.svg`.

    Raises Error (EINVAL: no points, lists of different lengths, a coordinate that is not
    finite, a label that is too long or has a backslash; ERANGE: too many points; ESTATE:
    a build without libpipesched-viz)."""
    xs, ys = list(x), list(y)
    n = len(xs)
    if len(ys) != n:
        raise _error("EINVAL", "x has %d points but y %d" % (n, len(ys)))
    if labels is not None:
        labels = list(labels)
        if len(labels) != n:
            raise _error("EINVAL", "%d labels for %d points" % (len(labels), n))
    if n == 0:
        raise _error("EINVAL", "a scatter plot needs at least one point")
    try:
        cx = (ctypes.c_double * n)(*[float(v) for v in xs])
        cy = (ctypes.c_double * n)(*[float(v) for v in ys])
    except (TypeError, ValueError):
        raise _error("EINVAL", "x and y take numbers") from None
    cl = None
    if labels is not None:
        cl = (ctypes.c_char_p * n)(*[None if s is None else str(s).encode("utf-8")
                                     for s in labels])

    def enc(s):
        return None if s is None else str(s).encode("utf-8")

    with _lock:
        lib, h = _viz(config)
        try:
            write, result = _write_collector()
            rc = lib.ps_viz_scatter_svg(h, cx, cy, cl, n, enc(x_label), enc(y_label), enc(title),
                                        write, None)
            _check(rc, lambda: text(lib.ps_viz_last_error(h)))
            return result()
        finally:
            lib.ps_viz_free(h)
