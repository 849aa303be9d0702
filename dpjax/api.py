"""``dpjax.fit`` / ``dpjax.sweep`` and the fitted :class:`Model`.

Data flow (DESIGN.md): user ``X, y`` -> public :class:`~dpjax.data.FeatureSpec` -> uint8 codes
-> a learner's pure ``fit`` (jit-compiled once per static configuration) -> params pytree +
privacy ledger -> :class:`Model`.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import os
import secrets
import time
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.data import FeatureSpec, as_frame, encode, encode_labels, make_feature_spec
from dpjax.learners import Learner, fit_static_args, get_learner
from dpjax.mechanisms import LedgerEntry, PrivacyLedger, check_epsilon
from dpjax.mechanisms.accounting import check_delta, check_neighbouring

SENSITIVITY = {"add_remove": 1.0, "replace_one": 2.0}


def as_key(key: int | jax.Array | None) -> jax.Array:
    """A typed PRNG key from an int seed, a typed key, or a raw ``uint32[2]`` key.

    ``None`` draws 64 bits from the operating system's entropy (``secrets``), the whole key of
    JAX's threefry generator: the right choice for a release, since anyone who knows the key
    can recompute and subtract the noise. An int seed in ``[0, 2**64)`` is for reproducible
    experiments; all 64 bits are kept (``jax.random.key`` keeps only the low 32 bits of an int
    when 64-bit mode is off, so two seeds could silently give the same key).
    """
    if key is None:
        key = secrets.randbits(64)
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        seed = int(key)
        if not 0 <= seed < 2**64:
            raise ValueError(f"key must be an int seed in [0, 2**64), a jax.random key or None; "
                             f"got {key!r}")
        words = np.asarray([seed >> 32, seed & 0xFFFFFFFF], np.uint32)
        return jax.random.wrap_key_data(jnp.asarray(words))
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    array = np.asarray(key)
    if array.dtype == np.uint32 and array.shape == (2,):
        return jax.random.wrap_key_data(jnp.asarray(array))
    raise ValueError(f"key must be an int seed, a jax.random key or None, got {key!r}")


@dataclasses.dataclass(frozen=True)
class Timings:
    """Seconds spent compiling (0 when the compiled program was cached) and running a fit."""

    compile_s: float
    run_s: float


_COMPILED: collections.OrderedDict[Any, Any] = collections.OrderedDict()
COMPILE_CACHE_SIZE = 32
"""Compiled fits kept (least recently used dropped): each holds JIT code pages, and a process
that fits thousands of shapes would otherwise run out of memory mappings."""


def _compile(fn: Callable[..., Any], cache_key: Any, *args: Any) -> tuple[Any, float]:
    """Ahead-of-time compile ``fn`` for ``args`` (LRU-cached), returning the executable and
    the seconds spent compiling."""
    shapes = jax.tree.map(lambda a: (jnp.shape(a), jnp.result_type(a)), args)
    full_key = (cache_key, str(shapes))
    if full_key in _COMPILED:
        _COMPILED.move_to_end(full_key)
        return _COMPILED[full_key], 0.0
    start = time.perf_counter()
    compiled = jax.jit(fn).lower(*args).compile()
    _COMPILED[full_key] = compiled
    while len(_COMPILED) > COMPILE_CACHE_SIZE:
        _COMPILED.popitem(last=False)
    return compiled, time.perf_counter() - start


def _run(compiled: Any, *args: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = jax.block_until_ready(compiled(*args))
    return out, time.perf_counter() - start


@dataclasses.dataclass(frozen=True)
class _Prepared:
    learner: Learner
    params: dict[str, Any]
    spec: FeatureSpec
    classes: tuple[Any, ...]
    codes: jax.Array
    y: jax.Array
    ledger: PrivacyLedger
    sensitivity: float
    on_out_of_bounds: str
    size: float | None
    """The public sample size: declared, or the row count under replace-one (where it is
    public); ``None`` when the row count is private (add/remove, none declared)."""

    def fit_fn(self, private: bool) -> tuple[Callable[..., Any], Any]:
        """``fn(key, codes, y, epsilon, traced, size, structure_key) -> (params, costs)``
        (``epsilon`` ignored when not ``private``; ``traced`` maps the learner's traced
        hyper-parameters to arrays; ``size`` the public size, ignored when the learner must
        release a noisy count; ``structure_key`` the key of data-independent structure, or
        ``None``) and its compile-cache key."""
        static = fit_static_args(self.learner, self.params, self.spec, len(self.classes),
                                 self.sensitivity)
        learner = self.learner
        release_size = private and self.size is None

        def fn(key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array,
               traced: dict[str, jax.Array], size: jax.Array,
               structure_key: jax.Array | None) -> Any:
            extra: dict[str, Any] = {}
            if learner.uses_size:
                extra["size"] = None if release_size else size
            if learner.shares_structure:
                extra["structure_key"] = structure_key
            return learner.fit(key, codes, y, epsilon if private else None, **traced, **extra,
                               **static)

        hashable = tuple((k, tuple(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else v)
                         for k, v in sorted(static.items()))
        return fn, (learner.name, hashable, private, release_size)

    def size_value(self) -> jax.Array:
        """The public size as a traced float32 argument (0 when there is none)."""
        return jnp.float32(self.size or 0.0)

    def traced_values(self, values: dict[str, Any] | None = None) -> dict[str, jax.Array]:
        """The learner's traced hyper-parameters (``values`` overriding the fitted ones) as
        float32 arrays (``alpha="oc"`` becomes its numeric code)."""
        values = {**self.params, **(values or {})}
        return {n: jnp.asarray(self.learner.encode_traced(n, values[n]), jnp.float32)
                for n in self.learner.traced}


def _check_public_size(public_size: Any) -> int | None:
    if public_size is None:
        return None
    if isinstance(public_size, bool) or not isinstance(public_size, (int, np.integer)) or (
            public_size < 1):
        raise ValueError(f"public_size must be a positive integer or None, got {public_size!r}")
    return int(public_size)


def _prepare(
    X: Any, y: Any, *, method: str, epsilon: float | None, bounds: Any, classes: Any,
    n_bins: int, missing: Any, on_out_of_bounds: str, neighbouring: str, params: dict[str, Any],
    public_size: int | None = None, delta: float = 0.0, batch: int = 1,
) -> _Prepared:
    learner = get_learner(method)
    resolved = learner.resolve(params)
    neighbouring = check_neighbouring(neighbouring)
    public_size = _check_public_size(public_size)
    delta = check_delta(delta)
    frame = as_frame(X)
    y_index, classes, classes_from_data = encode_labels(y, classes, private=epsilon is not None)
    if len(y_index) != frame.shape[0]:
        raise ValueError(f"X has {frame.shape[0]} rows but y has {len(y_index)} labels")
    spec = make_feature_spec(frame, bounds, n_bins=n_bins, missing=missing,
                             private=epsilon is not None)
    codes = encode(spec, frame, on_out_of_bounds=on_out_of_bounds)
    _check_footprint(learner, resolved, codes.shape, int(spec.max_codes), len(classes), batch)
    ledger = PrivacyLedger(neighbouring=neighbouring, requested_epsilon=epsilon,
                           requested_delta=delta)
    if spec.from_data:
        ledger = ledger.record(LedgerEntry(
            what=f"bounds/categories of {len(spec.from_data)} column(s) from the data",
            mechanism="none", epsilon=0.0, private=False))
    if classes_from_data:
        ledger = ledger.record(LedgerEntry(what="class list read off the labels",
                                           mechanism="none", epsilon=0.0, private=False))
    if public_size is None and neighbouring == "replace_one":
        public_size = codes.shape[0]      # neighbours have the same size: it is public
    return _Prepared(learner, resolved, spec, classes, jnp.asarray(codes),
                     jnp.asarray(y_index), ledger, SENSITIVITY[neighbouring], on_out_of_bounds,
                     None if public_size is None else float(public_size))


def _ledger(prepared: _Prepared, epsilon: float | None, costs: Any) -> PrivacyLedger:
    """The model's ledger: the preparation's entries, then one per cost the fit returned (what
    its mechanisms spent), then the configuration's non-private parts."""
    if epsilon is None:
        return prepared.ledger
    ledger = prepared.ledger.with_costs(costs)
    for what in prepared.learner.not_private(prepared.params):
        ledger = ledger.record(LedgerEntry(what=what, mechanism="none", epsilon=0.0,
                                           private=False))
    if ledger.private and (ledger.epsilon > epsilon or ledger.delta > ledger.requested_delta):
        raise RuntimeError(f"internal error: the {prepared.learner.name} fit spent "
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
    stats = jax.devices()[0].memory_stats() or {}
    if "bytes_limit" in stats:
        return MEMORY_FRACTION * stats["bytes_limit"]
    return MEMORY_FRACTION * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _check_footprint(learner: Learner, params: dict[str, Any], shape: tuple[int, int],
                     max_codes: int, n_classes: int, batch: int) -> None:
    """Refuse (with a clear error naming the sizes) a fit whose arrays would not fit in memory,
    instead of an out-of-memory kill. Reads only shapes and hyper-parameters."""
    need = batch * learner.footprint(params, shape[0], shape[1], max_codes, n_classes)
    limit = memory_limit()
    if need > limit:
        sizes = ", ".join(f"{k}={params[k]}" for k in ("n_trees", "depth") if k in params)
        raise ValueError(
            f"{learner.name} with {sizes} on {shape[0]} x {shape[1]} codes"
            + (f" ({batch} models at once)" if batch > 1 else "")
            + f" needs about {need / 2**30:.1f} GiB, more than the {limit / 2**30:.1f} GiB "
            "allowed: use fewer or shallower trees (or fewer grid points / a smaller audit "
            "chunk), or raise the limit with DPJAX_MEMORY_LIMIT_GB")


@dataclasses.dataclass(frozen=True)
class Model:
    """A fitted dpjax model.

    ``params`` is a pytree (a :class:`~dpjax.trees.DenseTree` batch for forests);
    :meth:`proba_function` gives the pure ``(params, codes) -> [m, C]`` map to use inside
    ``jax.jit`` / ``vmap``; :meth:`encode` turns raw ``X`` into the codes it reads.
    ``privacy`` is the ledger of every release made from the training data.
    """

    method: str
    params: Any
    hyperparams: dict[str, Any]
    spec: FeatureSpec
    classes: tuple[Any, ...]
    privacy: PrivacyLedger
    timings: Timings
    on_out_of_bounds: str = "clip"

    @property
    def learner(self) -> Learner:
        return get_learner(self.method)

    def encode(self, X: Any) -> jax.Array:
        """uint8 codes ``[m, n]`` of raw ``X`` under the model's public feature spec."""
        return jnp.asarray(encode(self.spec, X, on_out_of_bounds=self.on_out_of_bounds))


    def proba_function(self) -> Callable[[Any, jax.Array], jax.Array]:
        """Pure ``(params, codes) -> class scores [m, C]`` (jit/vmap/grad-friendly)."""
        return functools.partial(self.learner.proba,
                                 **dict(_predict_static(self.method, self.hyperparams)))

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class scores ``[m, C]`` (columns in the order of ``classes``)."""
        proba = _jitted_proba(self.method, _predict_static(self.method, self.hyperparams))
        return np.asarray(proba(self.params, self.encode(X)))

    def predict(self, X: Any, key: int | jax.Array | None = None) -> np.ndarray:
        """Predicted labels (values of ``classes``). Randomised rules need ``key``."""
        if self.learner.needs_predict_key(self.hyperparams) and key is None:
            raise ValueError(f"{self.method} with {self.hyperparams} predicts at random: "
                             "pass key=...")
        key = as_key(0 if key is None else key)
        index = _jitted_predict(self.method, _predict_static(self.method, self.hyperparams))(
            self.params, self.encode(X), key)
        return np.asarray(self.classes, dtype=object)[np.asarray(index)].astype(
            np.asarray(self.classes).dtype)

    def score(self, X: Any, y: Any, key: int | jax.Array | None = None) -> float:
        """Accuracy of :meth:`predict` on ``(X, y)``."""
        predicted, labels = self.predict(X, key), np.asarray(y)
        if labels.shape != predicted.shape:
            raise ValueError(f"y must hold one label per row of X ({predicted.shape[0]}); got "
                             f"shape {labels.shape}")
        return float(np.mean(predicted == labels))

    def summary(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyperparams.items())
        return (f"dpjax {self.method} model ({hyper})\n"
                f"  {self.spec.n_features} features, classes {list(self.classes)}\n"
                f"  fit: compile {self.timings.compile_s:.3f}s, run {self.timings.run_s:.3f}s\n"
                + "\n".join("  " + line for line in str(self.privacy).splitlines()))

    def __repr__(self) -> str:
        eps = "non-private" if not self.privacy.private else f"epsilon={self.privacy.epsilon:g}"
        return f"<dpjax.Model {self.method} {eps} classes={list(self.classes)}>"


def _predict_static(method: str, hyperparams: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The hyper-parameters the prediction rule reads, as a hashable sorted tuple."""
    return tuple(sorted((n, hyperparams[n]) for n in get_learner(method).predict_static))


@functools.lru_cache(maxsize=16)
def _jitted_proba(method: str, static: tuple[tuple[str, Any], ...]) -> Callable[..., Any]:
    return jax.jit(functools.partial(get_learner(method).proba, **dict(static)))


@functools.lru_cache(maxsize=16)
def _jitted_sweep(method: str, static: tuple[tuple[str, Any], ...],
                  rule: str) -> Callable[..., Any]:
    """Scores (``rule="proba"``) or deterministic predictions (``"predict"``) of a ``[grid,
    seeds]`` batch of models: ``lax.map`` over grid points (bounded memory), ``vmap`` over
    seeds."""
    learner = get_learner(method)
    if rule == "proba":
        one = functools.partial(learner.proba, **dict(static))
    else:
        one = functools.partial(_predict_unkeyed, learner.predict, dict(static))
    per_point = jax.vmap(one, in_axes=(0, None))
    return jax.jit(lambda params, codes: jax.lax.map(lambda p: per_point(p, codes), params))


def _predict_unkeyed(predict: Callable[..., Any], static: dict[str, Any], params: Any,
                     codes: jax.Array) -> jax.Array:
    return predict(params, codes, None, **static)


@functools.lru_cache(maxsize=16)
def _jitted_predict(method: str, static: tuple[tuple[str, Any], ...]) -> Callable[..., Any]:
    return jax.jit(functools.partial(get_learner(method).predict, **dict(static)))


def fit(
    X: Any,
    y: Any,
    *,
    method: str = "random_trees",
    epsilon: float | None = 1.0,
    key: int | jax.Array | None = None,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int = 10,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "clip",
    neighbouring: str = "add_remove",
    public_size: int | None = None,
    delta: float = 0.0,
    **params: Any,
) -> Model:
    """Fit a differentially private tree model.

    Args:
      X: 2-D table: pandas DataFrame, numpy or JAX array.
      y: labels, 1-D.
      method: learner name: ``"random_trees"`` (Bojarski et al.'s DP random forests),
        ``"boosted"`` (Nock & Henecka's Mα-boost, binary labels), ``"rf_laplace"`` /
        ``"rf_exponential"`` (their RF-L / RF-E baselines).
      epsilon: total privacy budget (the paper's ``eta`` for random trees). ``None`` fits
        without privacy and must be asked for explicitly.
      key: ``None`` (default) draws fresh OS entropy: use it for anything you release. An int
        seed or a ``jax.random`` key gives a reproducible model, for experiments only: anyone
        who knows the key can recompute the noise, which voids the guarantee.
      bounds: public feature bounds: ``(lower, upper)`` per-feature arrays, or a dict column ->
        ``(lo, hi)`` tuple or category *list*, or ``"data"`` (not private; warns). Required for
        numeric features when ``epsilon`` is set.
      classes: the declared class labels (public). Default: ``(False, True)`` for boolean
        labels and ``(0, 1)`` for numeric ones (other numeric labels are an error: declare
        them); labels of any other type are read off ``y`` with a warning (not private).
      n_bins: equal-width bins per numeric feature (1..255).
      missing: ``"error"``, ``"code"`` or the list of columns that may hold missing values.
      on_out_of_bounds: ``"clip"`` (default; numeric values outside ``bounds`` are clipped and
        unknown categories coded as "other", with a warning that prints no value) or
        ``"error"`` (opt-in: an exception whose raising depends on a record is not private).
      neighbouring: ``"add_remove"`` or ``"replace_one"`` (alias ``"substitute"``)
        neighbouring datasets; replace-one doubles the count and split sensitivities.
      public_size: the number of training rows, if it is public (a fixed-size study). Under
        add/remove neighbours the row count is private, so learners that need it (``boosted``)
        release a noisy count with a small share of ``epsilon`` unless it is declared here;
        under replace-one it is public anyway.
      delta: the ``δ`` of an ``(ε, δ)`` budget, in ``[0, 1)`` (the current learners are pure
        ``ε``-DP and spend none of it).
      **params: the method's hyper-parameters (``dpjax.LEARNERS[method].defaults``; e.g.
        random_trees: ``n_trees``, ``depth``, ``voting``, ``noise``; boosted: ``n_trees``,
        ``depth``, ``alpha`` (``"oc"`` or in (0, 1]), ``beta_tree``, ``clamp``,
        ``leaf_mechanism``, ``beta_mode``, ... see :func:`dpjax.ensembles.fit_boosted`).
    """
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    prepared = _prepare(X, y, method=method, epsilon=epsilon, bounds=bounds, classes=classes,
                        n_bins=n_bins, missing=missing, on_out_of_bounds=on_out_of_bounds,
                        neighbouring=neighbouring, params=params, public_size=public_size,
                        delta=delta)
    key = as_key(key)
    fn, cache_key = prepared.fit_fn(private=epsilon is not None)
    args = (key, prepared.codes, prepared.y, jnp.float32(epsilon or 1.0),
            prepared.traced_values(), prepared.size_value(), None)
    compiled, compile_s = _compile(fn, cache_key, *args)
    (fitted, costs), run_s = _run(compiled, *args)
    return Model(method, fitted, prepared.params, prepared.spec, prepared.classes,
                 _ledger(prepared, epsilon, costs), Timings(compile_s, run_s),
                 on_out_of_bounds)


@dataclasses.dataclass(frozen=True)
class Sweep:
    """Models fitted in one vmapped call over a grid of traced settings x seeds.

    ``params`` has leading axes ``[len(grid), len(seeds)]``; ``grid[i]`` is the dict of traced
    settings (``epsilon``, ...) of row ``i``; ``ledgers[i]`` its privacy ledger.
    """

    method: str
    params: Any
    grid: tuple[dict[str, float], ...]
    seeds: tuple[int | None, ...]
    hyperparams: dict[str, Any]
    spec: FeatureSpec
    classes: tuple[Any, ...]
    ledgers: tuple[PrivacyLedger, ...]
    timings: Timings
    on_out_of_bounds: str = "clip"

    def model(self, i: int, j: int = 0) -> Model:
        """The model of grid point ``i`` and seed index ``j``."""
        params = jax.tree.map(lambda a: a[i, j], self.params)
        return Model(self.method, params, self.hyperparams, self.spec, self.classes,
                     self.ledgers[i], self.timings, self.on_out_of_bounds)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class scores ``[len(grid), len(seeds), m, C]`` (one compiled call)."""
        static = _predict_static(self.method, self.hyperparams)
        codes = jnp.asarray(encode(self.spec, X, on_out_of_bounds=self.on_out_of_bounds))
        return np.asarray(_jitted_sweep(self.method, static, "proba")(self.params, codes))

    def predict(self, X: Any) -> np.ndarray:
        """Class indices ``[len(grid), len(seeds), m]`` of the deterministic prediction rule (one
        compiled call; randomised rules are not supported here)."""
        if get_learner(self.method).needs_predict_key(self.hyperparams):
            raise ValueError("Sweep.predict needs a deterministic prediction rule; use "
                             "sweep.model(i, j).predict(X, key=...)")
        static = _predict_static(self.method, self.hyperparams)
        codes = jnp.asarray(encode(self.spec, X, on_out_of_bounds=self.on_out_of_bounds))
        return np.asarray(_jitted_sweep(self.method, static, "predict")(self.params, codes))

    def score(self, X: Any, y: Any) -> np.ndarray:
        """Accuracy ``[len(grid), len(seeds)]`` of the deterministic prediction rule."""
        y_index, _, _ = encode_labels(y, self.classes)
        predicted = self.predict(X)
        if y_index.shape[0] != predicted.shape[-1]:
            raise ValueError(f"y must hold one label per row of X ({predicted.shape[-1]}); got "
                             f"{y_index.shape[0]}")
        return (predicted == y_index).mean(-1)


def sweep(
    X: Any,
    y: Any,
    *,
    method: str = "random_trees",
    epsilon: float | Sequence[float] | None,
    seeds: int | Sequence[int] | None = None,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int = 10,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "clip",
    neighbouring: str = "add_remove",
    public_size: int | None = None,
    delta: float = 0.0,
    **params: Any,
) -> Sweep:
    """Fit every combination of ``epsilon`` and of the method's traced hyper-parameters given
    as sequences (boosted: ``alpha``, ``beta_tree``) with every seed, as **one** jit-compiled,
    vmapped call.

    Static hyper-parameters (shapes: trees, depth, bins) are fixed for the sweep. ``epsilon``
    is one budget, a sequence, or ``None`` (non-private fits; must be asked for explicitly).

    Every model is its own release with its own noise key (:func:`grid_keys`: grid point ``i``
    of seed key ``k`` fits with ``fold_in(split(k)[1], i)``); data-independent structure, such
    as random trees' splits, is drawn from ``split(k)[0]`` and shared along the grid, which
    costs no privacy. Releasing several models of a sweep spends the sum of their ledgers.

    ``seeds``: ``None`` (default) draws one seed from OS entropy — use it for anything you
    release. A count ``k`` (seeds ``0..k-1``) or a sequence of int seeds is for experiments
    only: anyone who knows a seed can recompute the noise, which voids the guarantee. Other
    arguments as :func:`fit`.
    """
    learner = get_learner(method)
    private = epsilon is not None
    epsilons = _budgets(epsilon) if private else [None]
    traced = {n: list(params.pop(n)) for n in learner.traced
              if isinstance(params.get(n), (list, tuple, np.ndarray))}
    names = ("epsilon", *traced)
    grid = tuple(dict(zip(names, point, strict=True))
                 for point in itertools.product(epsilons, *traced.values()))
    # every grid value must be a valid setting on its own; its ledger reads the checked values
    resolved = [learner.resolve({**params, **{n: point[n] for n in traced}}) for point in grid]
    seed_list = _seed_list(seeds)
    prepared = _prepare(X, y, method=method, epsilon=max(epsilons) if private else None,
                        bounds=bounds, classes=classes, n_bins=n_bins, missing=missing,
                        on_out_of_bounds=on_out_of_bounds, neighbouring=neighbouring,
                        params=params, public_size=public_size, delta=delta,
                        batch=len(grid))
    fn, cache_key = prepared.fit_fn(private=private)

    # Seeds by lax.map, grid points by vmap inside (_fit_grid): work that depends neither on
    # the traced settings nor on the noise (random structures, routing, counts) is done once
    # per seed. The data are arguments, never baked-in constants: the compiled program is
    # cached by shape and reused for other data of the same shape.
    def batched(keys: jax.Array, codes: jax.Array, y: jax.Array,
                points: dict[str, jax.Array], size: jax.Array) -> Any:
        per_seed = jax.lax.map(
            lambda key: _fit_grid(fn, learner.traced, key, codes, y, points, size), keys)
        return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), per_seed)

    keys = jnp.stack([as_key(seed) for seed in seed_list])
    encoded = [prepared.traced_values(point_params) for point_params in resolved]
    points = {n: jnp.stack([e[n] for e in encoded]) for n in learner.traced}
    points["epsilon"] = jnp.asarray([g["epsilon"] or 1.0 for g in grid], jnp.float32)
    args = (keys, prepared.codes, prepared.y, points, prepared.size_value())
    compiled, compile_s = _compile(batched, ("sweep", cache_key, names), *args)
    (fitted, costs), run_s = _run(compiled, *args)
    ledgers = tuple(_ledger(
        dataclasses.replace(prepared, ledger=dataclasses.replace(
            prepared.ledger, requested_epsilon=g["epsilon"]), params=point_params),
        g["epsilon"], jax.tree.map(lambda a, i=i: a[i].max(0), costs))
        for i, (g, point_params) in enumerate(zip(grid, resolved, strict=True)))
    return Sweep(method, fitted, grid, seed_list, prepared.params, prepared.spec,
                 prepared.classes, ledgers, Timings(compile_s, run_s), on_out_of_bounds)


def _budgets(epsilon: Any) -> list[float]:
    """One budget or a flat, non-empty sequence of budgets, each checked."""
    values = np.asarray(epsilon, dtype=object)
    if values.ndim > 1 or values.size == 0:
        raise ValueError(f"epsilon must be one budget or a non-empty flat sequence of budgets; "
                         f"got {epsilon!r}")
    return [check_epsilon(e) for e in values.reshape(-1)]


def grid_keys(key: jax.Array, n_points: int) -> tuple[jax.Array, jax.Array]:
    """``(structure_key, point_keys)`` of a sweep seed: ``key`` is split once into a structure
    key and a points key, and point ``i`` fits with ``fold_in(points_key, i)``. The split keeps
    the two families apart: with JAX's partitionable threefry ``split(k)[i] == fold_in(k, i)``,
    so children of one parent used for two purposes could coincide (a tree's structure key
    with another model's noise key)."""
    structure_key, points_key = jax.random.split(key)
    return structure_key, jax.vmap(lambda i: jax.random.fold_in(points_key, i))(
        jnp.arange(n_points))


def _fit_grid(fn: Callable[..., Any], traced: tuple[str, ...], key: jax.Array,
              codes: jax.Array, y: jax.Array, points: dict[str, jax.Array],
              size: jax.Array) -> Any:
    """``(params, costs)`` of every grid point of one seed key, stacked on a leading axis:
    each point has its own noise key and all share the data-independent structure key
    (:func:`grid_keys`)."""
    structure_key, point_keys = grid_keys(key, points["epsilon"].shape[0])

    def fit_point(point_key: jax.Array, point: dict[str, jax.Array]) -> Any:
        return fn(point_key, codes, y, point["epsilon"], {n: point[n] for n in traced}, size,
                  structure_key)

    return jax.vmap(fit_point)(point_keys, points)


def _seed_list(seeds: int | Sequence[int] | None) -> tuple[int | None, ...]:
    """``(None,)`` (one fresh entropy seed), ``0..seeds-1`` for a count, or the given ints."""
    if seeds is None:
        return (None,)
    if isinstance(seeds, (int, np.integer)) and not isinstance(seeds, bool):
        if seeds < 1:
            raise ValueError(f"seeds must be >= 1 (a count), a sequence of ints or None; "
                             f"got {seeds!r}")
        return tuple(range(int(seeds)))
    try:
        seed_list = tuple(seeds)
    except TypeError:
        raise ValueError(f"seeds must be a count, a sequence of ints or None; got {seeds!r}"
                         ) from None
    if not seed_list or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                                for s in seed_list):
        raise ValueError(f"seeds must be a non-empty sequence of ints; got {seeds!r}")
    return tuple(int(s) for s in seed_list)
