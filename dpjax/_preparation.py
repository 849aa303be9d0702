"""From user inputs to a compiled fit: checks, the public feature spec and codes, the public
limits (rows, memory) checked before any compile, the compile cache, and the ledger assembled
from the costs a fit returns (``docs/design.md``, "Data flow"). Generic over the registry: no
learner is named here.
"""

from __future__ import annotations

import collections
import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpjax import _buckets, compilation_cache
from dpjax._keys import FixedKeyWarning, grid_keys
from dpjax.data import (
    FeatureSpec,
    encode,
    encode_labels,
    encode_targets,
    make_feature_spec,
    target_units,
)
from dpjax.data.binning import as_table, check_on_out_of_bounds, on_device
from dpjax.data.caller import warn
from dpjax.data.device import (
    check_flags,
    check_label_flags,
    check_width,
    device_encodable,
    device_labels,
    encoder,
    label_encoder,
)
from dpjax.data.labels import device_classes
from dpjax.learners import LEARNERS, FitContext, Learner, get_learner
from dpjax.privacy import (
    SENSITIVITY,
    LedgerEntry,
    PrivacyLedger,
    check_delta,
    check_epsilon,
    check_neighbouring,
    fixed_point,
)

_COMPILED: collections.OrderedDict[Any, Any] = collections.OrderedDict()
COMPILE_CACHE_SIZE = 32
"""Compiled fits kept (least recently used dropped): each holds JIT code pages, and a process
that fits thousands of shapes would otherwise run out of memory mappings."""

QUICK_COMPILE = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 1}
"""XLA options of a quickly compiled CPU fit: XLA's classic loop emitters instead of its MLIR
fusion emitters, and LLVM's lighter optimisation of the kernels. The compile is shorter and,
on large data, the run longer (2-core CPU, uint8 codes: ``boosted`` at 1e4 x 20 compiles in
2.2 s instead of 5.3 s and runs alike; ``malpha`` at 1e5 x 20 compiles in 12.1 s instead of
15.4 s and runs 0.22 s instead of 0.12 s; ``boosted`` at 1e6 x 20 would run 0.23 s instead
of 0.15 s). Every private fingerprint is the same bits under either option set, but nothing
proves that of every fit (under these options a vectorised sweep's floats can differ in the
last bit from a mapped one's), so the choice never reads a private row count
(:func:`compiler_options`), and sweeps keep XLA's defaults."""
LEAN_COMPILE = {"xla_cpu_use_fusion_emitters": False}
"""XLA options of a lean CPU fit: XLA's classic loop emitters instead of its MLIR fusion
emitters, at LLVM's default optimisation: a shorter compile, and on large data a run from
faster to twice as long by learner (``python -m benchmarks.bench_compile_options``)."""
CPU_COMPILE = {"default": {}, "lean": LEAN_COMPILE, "quick": QUICK_COMPILE}
"""The option sets a learner may choose for all its CPU fits
(:attr:`~dpjax.learner.Learner.cpu_compile`): XLA's defaults, lean or quick."""
QUICK_WORK_BYTES = 2**21
"""The most bytes of codes (public rows x features) a fit compiled with :data:`QUICK_COMPILE`
reads under ``DPJAX_QUICK_COMPILE=auto``: beyond it a run's seconds count for more than the
compile's."""
QUICK_ENV = "DPJAX_QUICK_COMPILE"
QUICK_SETTINGS = ("auto", "on", "off")


WEAK_EPSILON = 20.0
"""Above this ``ε`` a guarantee bounds little (``e^20`` is five hundred million): warned."""
WEAK_DELTA = 1e-3
"""At or above this ``δ`` (the chance that the guarantee fails outright; keep it well below
one over the number of records, such as DP-EBM's ``1e-6``): warned."""


class WeakGuaranteeWarning(UserWarning):
    """A privacy budget so large (``ε``) or so loose (``δ``) that its guarantee bounds little."""


def check_release_settings(epsilons: list[float | None], delta: float, fixed_key: bool) -> None:
    """Warn, at the caller's line, when a private fit's guarantee is weak (``ε`` above
    :data:`WEAK_EPSILON`, ``δ`` from :data:`WEAK_DELTA`) or its noise comes from a fixed key
    (:class:`~dpjax._keys.FixedKeyWarning`, as DP-EBM warns); public settings only."""
    private = [e for e in epsilons if e is not None]
    if not private:
        return
    if max(private) > WEAK_EPSILON:
        warn(f"epsilon = {max(private):g} bounds little (a guarantee above epsilon = "
             f"{WEAK_EPSILON:g} allows a factor e^epsilon between neighbouring datasets)",
             WeakGuaranteeWarning)
    if delta >= WEAK_DELTA:
        warn(f"delta = {delta:g} is the chance that the guarantee fails outright: keep it well "
             "below one over the number of records (for example 1e-6)", WeakGuaranteeWarning)
    if fixed_key:
        warn("a fixed key makes the noise reproducible (anyone who knows it can subtract it): "
             "fine for experiments; fit a model you release with key=None (fresh entropy)",
             FixedKeyWarning)


def compiler_options(work: float | None, args: Any, choice: str = "default") -> dict[str, Any]:
    """XLA compile options for a program of ``args`` on CPU, by ``$DPJAX_QUICK_COMPILE``:
    ``auto`` (the default) gives :data:`QUICK_COMPILE` where ``work``, the bytes of codes the
    fit reads counted from public facts only, is at most :data:`QUICK_WORK_BYTES` (``None``:
    the row count is private), else the learner's ``choice`` (:data:`CPU_COMPILE`, a constant
    of the learner, never of the data); ``on`` gives :data:`QUICK_COMPILE` to every fit and
    ``off`` XLA's defaults to every fit (either a constant, whatever the data). Other
    backends: XLA's defaults."""
    setting = os.environ.get(QUICK_ENV, "auto").strip().lower() or "auto"
    if setting not in QUICK_SETTINGS:
        raise ValueError(f"{QUICK_ENV} must be one of {QUICK_SETTINGS}, got {setting!r}")
    platforms = {d.platform for a in jax.tree.leaves(args) if isinstance(a, jax.Array)
                 for d in a.devices()} or {jax.default_backend()}
    if platforms != {"cpu"} or setting == "off":
        return {}
    if choice not in CPU_COMPILE:
        raise ValueError(f"a learner's cpu_compile must be one of {tuple(CPU_COMPILE)}, got "
                         f"{choice!r}")
    if setting == "on" or (work is not None and work <= QUICK_WORK_BYTES):
        return QUICK_COMPILE
    return CPU_COMPILE[choice]


def compile_cached(fn: Callable[..., Any], cache_key: Any, *args: Any,
                   options: dict[str, Any] | None = None) -> tuple[Any, float]:
    """Ahead-of-time compile ``fn`` for ``args`` with XLA compile ``options`` (default XLA's;
    a fit's from :func:`compiler_options`; XLA's defaults where this jaxlib's XLA knows none of
    them, a fact of the installation, not of the data), LRU-cached, returning the executable
    and the seconds spent compiling. The first compile turns on the persistent compilation cache
    (:func:`dpjax.compilation_cache.enable_default`: nothing happens at import)."""
    options = options or {}
    shapes = jax.tree.map(lambda a: (jnp.shape(a), jnp.result_type(a),
                                     str(getattr(a, "sharding", None))), args)
    full_key = (cache_key, str(shapes), tuple(sorted(options.items())))
    if full_key in _COMPILED:
        _COMPILED.move_to_end(full_key)
        return _COMPILED[full_key], 0.0
    compilation_cache.enable_default()
    start = time.perf_counter()
    lowered = jax.jit(fn).lower(*args)
    try:
        compiled = lowered.compile(compiler_options=options or None)
    except jax.errors.JaxRuntimeError as error:
        if not options or "No such compile option" not in str(error):
            raise
        compiled = lowered.compile()     # an XLA without these options: its defaults
    _COMPILED[full_key] = compiled
    while len(_COMPILED) > COMPILE_CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return compiled, time.perf_counter() - start


def run_timed(compiled: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - start


@dataclasses.dataclass(frozen=True)
class Prepared:
    """A checked fit request: the learner config, the public spec and codes, the starting
    ledger and the public size."""

    config: Learner
    spec: FeatureSpec
    classes: tuple[Any, ...]
    codes: jax.Array
    y: jax.Array
    ledger: PrivacyLedger
    sensitivity: float
    size: float | None
    """The public sample size: declared, or the row count under replace-one (where it is
    public); ``None`` when the row count is private (add/remove, none declared)."""
    weights: jax.Array | None = None
    """Record weights float32 ``[m]`` in ``[0, 1]`` (``sample_weight``), or ``None``."""
    target: tuple[float, float] | None = None
    """The public range ``(lo, hi)`` of a regression target (``y`` float32 in it), or
    ``None`` for classification."""
    rows: int | None = None
    """The rows the fit's program reads, padding rows included (every process's in a
    multi-process fit; ``None``: the codes')."""
    encoding: tuple[float, float] = (0.0, 0.0)
    """Seconds compiling and running the program that binned the rows and labels given as
    ``jax.Array``s on their device (0 where they took the host path)."""

    def context(self, private: bool, size: jax.Array | None,
                structure_key: jax.Array | None = None,
                weights: jax.Array | None = None) -> FitContext:
        """The :class:`~dpjax.learner.FitContext` of a fit: ``size`` the traced public size
        (``None`` in the context where the learner must release a noisy count)."""
        release_size = private and self.size is None
        return FitContext(self.spec.n_codes, len(self.classes), self.sensitivity,
                          size if private and not release_size else None, structure_key,
                          self.ledger.requested_delta, weights, self.spec.n_ordered,
                          self.target)

    def cache_key(self, private: bool) -> Any:
        """The compile-cache key of this request's programs: the config (equal configs compile
        to the same program), the data's static facts and the privacy mode."""
        return (self.config, tuple(np.asarray(self.spec.n_codes).tolist()),
                tuple(np.asarray(self.spec.n_ordered).tolist()), len(self.classes),
                self.sensitivity, private, private and self.size is None,
                self.ledger.requested_delta, self.target)

    def fit_fn(self, private: bool) -> tuple[Callable[..., Any], Any]:
        """``fn(key, codes, y, epsilon, traced, size, structure_key[, weights]) -> (params,
        costs)`` (``epsilon`` ignored when not ``private``; ``traced`` maps the config's traced
        hyper-parameters to arrays; ``size`` the public size, ignored when the learner must
        release a noisy count; ``structure_key`` the key of data-independent structure, or
        ``None``; ``weights`` the record weights or ``None``): the learner's pure fit, and its
        compile-cache key (:meth:`cache_key`)."""
        config = self.config

        def fn(key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array,
               traced: dict[str, jax.Array], size: jax.Array,
               structure_key: jax.Array | None, weights: jax.Array | None = None) -> Any:
            return config.fit(key, codes, y, epsilon if private else None,
                              self.context(private, size, structure_key, weights), **traced)

        return fn, self.cache_key(private)

    def schedule_fn(self, private: bool) -> tuple[Callable[..., Any], Any]:
        """``fn(key, y, epsilon, traced, size[, weights]) -> (schedule, costs)``: the
        learner's schedule (:meth:`~dpjax.learner.Learner.schedule`, the releases its plan
        reads), and its compile-cache key."""
        config = self.config

        def fn(key: jax.Array, y: jax.Array, epsilon: jax.Array, traced: dict[str, jax.Array],
               size: jax.Array, weights: jax.Array | None = None) -> Any:
            return config.schedule(key, y, epsilon if private else None,
                                   self.context(private, size, None, weights), **traced)

        return fn, ("schedule", self.cache_key(private))

    def grow_fn(self, private: bool, plan: Any) -> tuple[Callable[..., Any], Any]:
        """``fn(key, codes, y, epsilon, traced, size, structure_key, released[, weights]) ->
        (params, costs)``: the learner's fit under the static ``plan``
        (:meth:`~dpjax.learner.Learner.grow`) after its schedule ``released``, and its
        compile-cache key (the plan in it)."""
        config = self.config

        def fn(key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array,
               traced: dict[str, jax.Array], size: jax.Array, structure_key: jax.Array | None,
               released: Any, weights: jax.Array | None = None) -> Any:
            return config.grow(plan, key, codes, y, epsilon if private else None,
                               self.context(private, size, structure_key, weights), released,
                               **traced)

        return fn, ("grow", plan, self.cache_key(private))

    def planning_context(self, private: bool) -> FitContext:
        """The static context a plan is settled in (:meth:`~dpjax.learner.Learner.plan`: the
        codes, classes, sensitivity, ``δ`` and target; no traced values)."""
        return self.context(private, None)

    def public_work(self, private: bool) -> float | None:
        """The bytes of codes a fit reads, from public facts only: the rows times the
        features, the rows being the public size of a private fit (declared, or the row
        count under replace-one) or the rows a non-private one reads (padded: its bucket's,
        so that one bucket compiles with one option set); ``None`` when the
        row count is private (add/remove, no size declared)."""
        rows = self.size if private else (self.rows or self.codes.shape[0])
        return None if rows is None else float(rows) * self.codes.shape[1]

    def size_value(self) -> jax.Array:
        """The public size as a traced float32 argument (0 when there is none)."""
        return jax.device_put(np.float32(self.size or 0.0))

    def traced_values(self, config: Learner | None = None) -> dict[str, jax.Array]:
        """The traced hyper-parameters of ``config`` (default: the prepared one) as float32
        arrays (``alpha="oc"`` becomes its numeric code)."""
        config = config or self.config
        return {n: jax.device_put(np.asarray(config.encode_traced(n), np.float32))
                for n in config.traced_names()}


def check_public_size(public_size: Any) -> int | None:
    """A declared public row count: a positive integer, or ``None``."""
    if public_size is None:
        return None
    if isinstance(public_size, bool) or not isinstance(public_size, (int, np.integer)) or (
            public_size < 1):
        raise ValueError(f"public_size must be a positive integer or None, got {public_size!r}")
    return int(public_size)


def _check_sample_weight(sample_weight: Any, config: Learner, m: int) -> np.ndarray | None:
    """``sample_weight`` as float32 ``[m]`` in ``[0, 1]`` (``None`` stays ``None``); errors
    name the argument and print no weight."""
    if sample_weight is None:
        return None
    if not config.takes_weights:
        takers = sorted(name for name, cls in LEARNERS.items() if cls.takes_weights)
        raise ValueError(f"sample_weight is not supported by {config.name}: its privacy "
                         f"analysis counts every record once (learners that take weights in "
                         f"[0, 1]: {', '.join(takers)})")
    weights = np.asarray(sample_weight, dtype=np.float64)
    if weights.shape != (m,):
        raise ValueError("sample_weight must hold one weight per row of X (a 1-D array as "
                         "long as y)")
    if not np.isfinite(weights).all():
        raise ValueError("sample_weight must be finite")
    if (weights < 0).any() or (weights > 1).any():
        # clipped, not refused: a weight derived from private data must not turn the fit into
        # an error (the warning tells neither the weights nor how many were clipped)
        warn("sample_weight has weights outside [0, 1]; they are clipped into it (a "
             "weight above 1 would raise the sensitivity of the learner's counts)")
        weights = np.clip(weights, 0.0, 1.0)
    return weights.astype(np.float32)


def prepare(
    X: Any, y: Any, *, method: str | Learner, epsilon: float | None, bounds: Any,
    classes: Any, n_bins: int | None, missing: Any, on_out_of_bounds: str, neighbouring: str,
    params: dict[str, Any], public_size: int | None = None, delta: float = 0.0, batch: int = 1,
    sample_weight: Any = None, task: str = "classification", y_bounds: Any = None,
    pad: bool = False, devices: int = 1, process_rows: tuple[int, ...] | None = None,
    released: tuple[str, ...] = (),
) -> Prepared:
    """Check every argument (errors name the argument and print no data), build the public
    feature spec and the codes, and start the ledger. ``pad``: pad the rows to their bucket
    (:mod:`dpjax._buckets`) where the learner ignores padding rows
    (:attr:`~dpjax.learner.Learner.pads_rows`; classification, at most
    :data:`~dpjax._buckets.BUCKET_MAX_ROWS` rows), so that row counts of one bucket share a
    program. ``devices``: this process's devices that split the rows (:func:`held_rows`);
    ``process_rows``: every process's row count in a multi-process fit (``None``: this
    process's alone); ``released``: the columns whose bounds were released privately
    (:attr:`~dpjax.data.FeatureSpec.released`)."""
    config = get_learner(method, params)
    neighbouring = check_neighbouring(neighbouring)
    public_size = check_public_size(public_size)
    delta = check_delta(delta)
    table = as_table(X)
    regression = check_task(task, config, classes, y_bounds)
    target, target_from_data = None, False
    labels_on_device = not regression and device_labels(y) and device_classes(
        classes, epsilon is not None) is not None
    if regression:      # the public checks first: the targets' clipping warns on the data
        check_on_out_of_bounds(on_out_of_bounds)
        config.check_regression(epsilon is not None)
        y_index, classes, classes_from_data = np.zeros(len(y), np.float32), (), False
    elif labels_on_device:      # encoded on their device below, after the public limits
        declared = classes is not None
        y_index, classes = y, device_classes(classes, epsilon is not None)
        classes_from_data = False
    else:
        y_index, classes, classes_from_data = encode_labels(y, classes,
                                                            private=epsilon is not None)
    if config.binary and len(classes) != 2:
        raise ValueError(f"Only binary classification is supported: {config.name} is a binary "
                         f"classifier; got {len(classes)} classes")
    if len(y_index) != table.shape[0]:
        raise ValueError("X and y must have as many rows (y: one label per row of X)")
    n_bins = config.default_bins if n_bins is None else n_bins
    spec = make_feature_spec(table, bounds, n_bins=n_bins, missing=missing,
                             private=epsilon is not None, released=released)
    weights = _check_sample_weight(sample_weight, config, table.shape[0])
    # every public limit before any work on the data (encoding, compiling, fitting), on the
    # rows the fit holds: padded ones are at most BUCKET_MAX_ROWS (or a device count) more,
    # below every learner's row limit, so only the memory estimate sees them
    counts = process_rows or (table.shape[0],)
    rows = sum(counts)
    held = held_rows(config, counts, devices, pad=pad, regression=regression,
                     public_rows=neighbouring == "replace_one")
    check_limits(config, (held * len(counts), table.shape[1]),
                 int(spec.max_codes), len(classes), batch, private=epsilon is not None,
                 weighted=weights is not None, regression=regression)
    config.check_request(epsilon is not None, delta)
    if regression:
        clipped, target, target_from_data = encode_targets(
            y, y_bounds, private=epsilon is not None, on_out_of_bounds=on_out_of_bounds)
        y_index = target_units(clipped, target)
    if public_size == rows and neighbouring == "add_remove" and epsilon is not None:
        warn("public_size equals the number of rows: under add/remove the row count "
             "is private, and declaring it publishes it with no ledger entry; declare "
             "it only for a study whose size is fixed in advance")
    device_rows = on_device(table) and device_encodable(spec)
    if not device_rows:
        codes = encode(spec, np.asarray(table) if on_device(table) else table,
                       on_out_of_bounds=on_out_of_bounds)
    encoded = encode_on_device(spec if device_rows else None, table if device_rows else None,
                               classes if labels_on_device else None,
                               y if labels_on_device else None, held)
    if labels_on_device:        # the labels' errors first, as on the host path
        y_index = encoded.labels
        check_label_flags(classes, encoded.label_flags, declared)
    if device_rows:
        codes = encoded.codes
        check_flags(spec, encoded.flags, on_out_of_bounds)
    ledger = PrivacyLedger(neighbouring=neighbouring, requested_epsilon=epsilon,
                           requested_delta=delta)
    if spec.from_data:
        ledger = ledger.record(LedgerEntry(
            what=f"bounds/categories of {len(spec.from_data)} column(s) from the data",
            mechanism="none", epsilon=0.0, private=False))
    if classes_from_data:
        ledger = ledger.record(LedgerEntry(what="class list read off the labels",
                                           mechanism="none", epsilon=0.0, private=False))
    if target_from_data:
        ledger = ledger.record(LedgerEntry(what="y_bounds read off the target",
                                           mechanism="none", epsilon=0.0, private=False))
    if public_size is None and neighbouring == "replace_one":
        public_size = rows                # neighbours have the same size: it is public
    # padding rows: codes 0, no class (the label n_classes), weight 0 (the device path's
    # codes and labels are padded already)
    if codes.shape[0] != held:
        codes = _buckets.pad_rows(codes, held, 0)
    if y_index.shape[0] != held:
        y_index = _buckets.pad_rows(y_index, held, len(classes))
    weights = None if weights is None else _buckets.pad_rows(weights, held, 0.0)
    return Prepared(config, spec, classes, jax.device_put(codes), jax.device_put(y_index), ledger,
                    SENSITIVITY[neighbouring],
                    None if public_size is None else float(public_size),
                    None if weights is None else jax.device_put(weights), target,
                    held * len(counts), encoded.timings)


class Encoded(NamedTuple):
    """What :func:`encode_on_device` returns: the codes and labels (``None`` where they took
    the host path), their flags, and the program's ``(compile_s, run_s)``."""

    codes: jax.Array | None = None
    flags: jax.Array | None = None
    labels: jax.Array | None = None
    label_flags: jax.Array | None = None
    timings: tuple[float, float] = (0.0, 0.0)


def encode_on_device(spec: FeatureSpec | None, X: jax.Array | None, classes: Any,
                     y: jax.Array | None, rows: int) -> Encoded:
    """The rows ``X`` (under ``spec``) and the labels ``y`` (against ``classes``) that are
    ``jax.Array``s, binned on their device by one compiled program
    (:mod:`dpjax.data.device`), padded to ``rows`` rows; ``None`` arguments took the host
    path. Compiled once per spec, classes, shapes and dtypes, its compile and run timed apart
    (a fit's :class:`~dpjax.Timings` count them)."""
    if X is None and y is None:
        return Encoded()
    if X is not None:
        check_width(spec, X)
    rows_fn = None if X is None else encoder(spec, str(X.dtype), rows)
    labels_fn = None if y is None else label_encoder(
        tuple(float(c) for c in classes), str(y.dtype), rows)

    def program(X: jax.Array | None, y: jax.Array | None) -> tuple:
        return ((None, None) if X is None else rows_fn(X)) + (
            (None, None) if y is None else labels_fn(y))

    compiled, compile_s = compile_cached(program, ("encode", spec, tuple(classes or ()),
                                                   rows), X, y)
    outputs, run_s = run_timed(compiled, X, y)
    return Encoded(*outputs, timings=(compile_s, run_s))


def held_rows(config: Learner, counts: tuple[int, ...], devices: int, *, pad: bool,
              regression: bool, public_rows: bool) -> int:
    """The rows this process holds once padded (:mod:`dpjax._buckets`): ``counts`` are every
    process's own rows (one entry on one process), ``devices`` this process's devices.

    * A learner that ignores padding rows (:attr:`~dpjax.learner.Learner.pads_rows`, a
      classification) pads to the bucket of the largest count (``pad`` or several devices),
      then to a multiple of ``devices``: every count fits, and every process holds as many.
    * Otherwise the rows are as given: on several devices that needs a public row count
      (``public_rows``: replace-one neighbours) split evenly, else the request is refused,
      whatever the count (a refusal that depended on it would release it)."""
    sharded = devices > 1 or len(counts) > 1
    if config.pads_rows and not regression:
        return _buckets.padded_rows(max(counts), devices) if pad or sharded else counts[0]
    if not sharded:
        return counts[0]
    task = " regression" if regression else ""
    if not public_rows:
        raise ValueError(f"devices: {config.name}{task} reads the row count off the data's "
                         "shape, so its rows cannot be padded to split across devices, and "
                         "under add/remove the row count is private; fit it on one device "
                         "(or under neighbouring='replace_one', where the row count is "
                         "public)")
    if len(set(counts)) > 1 or counts[0] % devices:
        raise ValueError(f"devices: {config.name}{task} cannot pad its rows: every process "
                         "must pass as many rows, a multiple of its device count")
    return counts[0]


TASKS = ("classification", "regression")


def check_task(task: str, config: Learner, classes: Any, y_bounds: Any) -> bool:
    """Whether the request is a regression (``task="regression"``), refusing a learner that
    fits classes only, declared ``classes`` with a real target and ``y_bounds`` without one."""
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    if task == "classification":
        if y_bounds is not None:
            raise ValueError("y_bounds is the range of a regression target: pass "
                             "task='regression' with it")
        return False
    if not config.regression:
        takers = sorted(name for name, cls in LEARNERS.items() if cls.regression)
        raise ValueError(f"task='regression' is not supported by {config.name} (learners that "
                         f"fit a real target: {', '.join(takers)})")
    if classes is not None:
        raise ValueError("classes has no meaning for task='regression': declare the target's "
                         "range with y_bounds=(lo, hi)")
    return True


def ledger_of(prepared: Prepared, epsilon: float | None, costs: Any,
              config: Learner | None = None, plan: Any = None) -> PrivacyLedger:
    """The model's ledger: the preparation's entries, then one per cost the fit returned (what
    its mechanisms spent), then the configuration's non-private parts; a planned learner's
    ``plan`` in words (:meth:`~dpjax.learner.Learner.plan_text`)."""
    if epsilon is None:
        return prepared.ledger
    return compose_ledger(prepared.ledger, config or prepared.config, epsilon, costs, plan)


def compose_ledger(start: PrivacyLedger, config: Learner, epsilon: float,
                   costs: Any, plan: Any = None) -> PrivacyLedger:
    """``start``'s entries, then one per cost a fit of ``config`` at ``epsilon`` returned (what
    its mechanisms spent), then the configuration's non-private parts, and the ``plan`` the
    fit took (``None``: none); refuses (``RuntimeError``) a total above the request."""
    ledger = dataclasses.replace(
        start, requested_epsilon=epsilon, composition=config.composition,
        plan="" if plan is None else config.plan_text(plan)).with_costs(costs)
    for what in config.not_private():
        ledger = ledger.record(LedgerEntry(what=what, mechanism="none", epsilon=0.0,
                                           private=False))
    if ledger.private and (ledger.epsilon > epsilon or ledger.delta > ledger.requested_delta):
        raise RuntimeError(f"internal error: the {config.name} fit spent "
                           f"(epsilon, delta) = ({ledger.epsilon!r}, {ledger.delta!r}) > "
                           f"({epsilon!r}, {ledger.requested_delta!r}) requested")
    return ledger


MEMORY_FRACTION = 0.5


def memory_limit() -> float:
    """Bytes one fit may plan to use: ``$DPJAX_MEMORY_LIMIT_GB`` if set, else half of the
    accelerator's memory (or of the host's physical memory on CPU)."""
    configured = os.environ.get("DPJAX_MEMORY_LIMIT_GB")
    if configured:
        return float(configured) * 2**30
    stats = jax.local_devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return MEMORY_FRACTION * stats["bytes_limit"]
    return MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


ROW_LIMIT = 2**31 - 1
"""The most rows of any fit: counts, row indices and segment ids are int32 (a count past it
would wrap, and a wrapped count moves by more than one record)."""


def check_limits(config: Learner, shape: tuple[int, int], max_codes: int, n_classes: int,
                 batch: int, *, private: bool, weighted: bool = False,
                 regression: bool = False) -> None:
    """Refuse (with a clear error naming the sizes) a fit beyond a public limit, before any
    compile: more rows than the learner's exact statistics take
    (:meth:`~dpjax.learner.Learner.row_limit`; weighted counts: the fixed-point limit,
    :data:`dpjax.privacy.fixed_point.MAX_ROWS`), or arrays that would not fit in memory
    (instead of an out-of-memory kill). Reads only shapes and hyper-parameters."""
    task = " regression" if regression else ""
    limits = [(ROW_LIMIT, "dpjax fits at most {} rows (counts and indices are int32); subsample "
               "the data"),
              (config.row_limit(private, shape[1], regression), f"{config.name}{task} fits at "
               "most {} rows (its exact statistics are int32 sums); subsample the data")]
    if weighted and config.weighted_row_limit() is not None:
        limits.append((config.weighted_row_limit(), f"{config.name} with sample_weight takes "
                       "at most {} rows (its selection caps a leaf's weighted count at 2**30 "
                       "fixed-point units)"))
    if weighted:
        limits.append((fixed_point.MAX_ROWS, "sample_weight takes at most {} rows (exact "
                       "fixed-point weighted counts)"))
    for limit, message in sorted((lm for lm in limits if lm[0] is not None),
                                 key=lambda lm: lm[0]):      # the tightest one speaks
        if shape[0] > limit:
            raise ValueError(message.format(limit))
    need = (batch * config.footprint(shape[0], shape[1], max_codes, n_classes)
            - (batch - 1) * config.shared_footprint(shape[0], shape[1]))
    limit = memory_limit()
    if need > limit:
        params = config.hyperparams
        sizes = ", ".join(f"{k}={params[k]}" for k in ("n_trees", "depth", "n_rounds")
                          if k in params)
        # the message names no row count and no need read off it (the row count is private
        # under add/remove)
        raise ValueError(
            f"{config.name} with {sizes} on these rows of {shape[1]} features"
            + (f" ({batch} models at once)" if batch > 1 else "")
            + f" needs more memory than the {limit / 2**30:.1f} GiB allowed: use fewer or "
            "shallower trees (or fewer grid points / a smaller audit chunk), or raise the "
            "limit with DPJAX_MEMORY_LIMIT_GB")


def affordable_models(prepared: Prepared) -> int:
    """How many models of ``prepared``'s fit one program holds within the memory limit
    (:func:`memory_limit`; the codes and what derives from them alone counted once,
    :meth:`~dpjax.learner.Learner.shared_footprint`): a sweep fits its models in programs of at
    most this many."""
    config, (m, n) = prepared.config, prepared.codes.shape
    rows = prepared.rows or m
    each = config.footprint(rows, n, int(prepared.spec.max_codes), len(prepared.classes))
    shared = config.shared_footprint(rows, n)
    if each <= shared:
        return 2**31 - 1
    return max(1, int((memory_limit() - shared) // (each - shared)))


def check_budgets(epsilon: Any) -> list[float]:
    """One budget or a flat, non-empty sequence of budgets, each checked."""
    values = np.asarray(epsilon, dtype=object)
    if values.ndim > 1 or values.size == 0:
        raise ValueError(f"epsilon must be one budget or a non-empty flat sequence of budgets; "
                         f"got {epsilon!r}")
    return [check_epsilon(e) for e in values.reshape(-1)]


def fit_grid(fn: Callable[..., Any], traced: tuple[str, ...], key: jax.Array,
              codes: jax.Array, y: jax.Array, points: dict[str, jax.Array],
              size: jax.Array, by_map: bool = False) -> Any:
    """``(params, costs)`` of every grid point of one seed key, stacked on a leading axis:
    each point has its own noise key and all share the data-independent structure key
    (:func:`grid_keys`). The points are vmapped, or fitted one after the other with
    ``by_map`` (a planned learner's pure fit, :attr:`dpjax.learner.Learner.planned`)."""
    structure_key, point_keys = grid_keys(key, points["epsilon"].shape[0])

    def fit_point(point_key: jax.Array, point: dict[str, jax.Array]) -> Any:
        return fn(point_key, codes, y, point["epsilon"], {n: point[n] for n in traced}, size,
                  structure_key)

    if by_map:
        return jax.lax.map(lambda args: fit_point(*args), (point_keys, points))
    return jax.vmap(fit_point)(point_keys, points)
