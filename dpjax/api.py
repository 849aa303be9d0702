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
from dpjax.mechanisms.accounting import check_neighbouring

SENSITIVITY = {"add_remove": 1.0, "replace_one": 2.0}


def as_key(key: int | jax.Array | None) -> jax.Array:
    """A typed PRNG key from an int seed, a typed key, or a raw ``uint32[2]`` key.

    ``None`` draws a fresh seed from the operating system's entropy (``secrets``): the right
    choice for a release, since anyone who knows the key can recompute and subtract the noise.
    Fixed keys are for reproducible experiments.
    """
    if key is None:
        return jax.random.key(secrets.randbits(63))
    if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
        return jax.random.key(int(key))
    if isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        return key
    array = np.asarray(key)
    if array.dtype == np.uint32 and array.shape == (2,):
        return jax.random.wrap_key_data(jnp.asarray(array))
    raise ValueError(f"key must be an int seed or a jax.random key, got {key!r}")


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

    def fit_fn(self, private: bool) -> tuple[Callable[..., Any], Any]:
        """``fn(key, codes, y, epsilon, traced) -> params`` (``epsilon`` ignored when not
        ``private``; ``traced`` maps the learner's traced hyper-parameters to arrays) and its
        compile-cache key."""
        static = fit_static_args(self.learner, self.params, self.spec, len(self.classes),
                                 self.sensitivity)
        fit_learner = self.learner.fit

        def fn(key: jax.Array, codes: jax.Array, y: jax.Array, epsilon: jax.Array,
               traced: dict[str, jax.Array]) -> Any:
            return fit_learner(key, codes, y, epsilon if private else None, **traced, **static)

        hashable = tuple((k, tuple(np.asarray(v).tolist()) if isinstance(v, np.ndarray) else v)
                         for k, v in sorted(static.items()))
        return fn, (self.learner.name, hashable, private)

    def traced_values(self, values: dict[str, Any] | None = None) -> dict[str, jax.Array]:
        """The learner's traced hyper-parameters (``values`` overriding the fitted ones) as
        float32 arrays (``alpha="oc"`` becomes its numeric code)."""
        values = {**self.params, **(values or {})}
        return {n: jnp.asarray(self.learner.encode_traced(n, values[n]), jnp.float32)
                for n in self.learner.traced}


def _prepare(
    X: Any, y: Any, *, method: str, epsilon: float | None, bounds: Any, classes: Any,
    n_bins: int, missing: Any, on_out_of_bounds: str, neighbouring: str, params: dict[str, Any],
) -> _Prepared:
    learner = get_learner(method)
    resolved = learner.resolve(params)
    neighbouring = check_neighbouring(neighbouring)
    frame = as_frame(X)
    y_index, classes, classes_from_data = encode_labels(y, classes)
    if len(y_index) != frame.shape[0]:
        raise ValueError(f"X has {frame.shape[0]} rows but y has {len(y_index)} labels")
    spec = make_feature_spec(frame, bounds, n_bins=n_bins, missing=missing,
                             private=epsilon is not None)
    codes = encode(spec, frame, on_out_of_bounds=on_out_of_bounds)
    ledger = PrivacyLedger(neighbouring=neighbouring, requested_epsilon=epsilon)
    if spec.from_data:
        ledger = ledger.record(LedgerEntry(
            what=f"bounds/categories of {len(spec.from_data)} column(s) from the data",
            mechanism="none", epsilon=0.0, private=False))
    if classes_from_data:
        ledger = ledger.record(LedgerEntry(what="class list read off the labels",
                                           mechanism="none", epsilon=0.0, private=False))
    return _Prepared(learner, resolved, spec, classes, jnp.asarray(codes),
                     jnp.asarray(y_index), ledger, SENSITIVITY[neighbouring], on_out_of_bounds)


def _with_learner_entries(prepared: _Prepared, epsilon: float | None) -> PrivacyLedger:
    if epsilon is None:
        return prepared.ledger
    ledger = prepared.ledger
    for entry in prepared.learner.ledger(epsilon, prepared.params, prepared.sensitivity):
        ledger = ledger.record(entry)
    return ledger


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
    on_out_of_bounds: str = "error"

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
        return float(np.mean(self.predict(X, key) == np.asarray(y)))

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
    on_out_of_bounds: str = "error",
    neighbouring: str = "add_remove",
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
      key: int seed or ``jax.random`` key (the same key gives the same model), or ``None``
        (default) for fresh OS entropy. A known key makes the noise predictable: use fixed
        keys for experiments, not for releases.
      bounds: public feature bounds: ``(lower, upper)`` per-feature arrays, or a dict column ->
        ``(lo, hi)`` tuple or category *list*, or ``"data"`` (not private; warns). Required for
        numeric features when ``epsilon`` is set.
      classes: the declared class labels (public). Default: a category dtype's categories,
        ``(0, 1)`` / ``(-1, 1)`` / ``(False, True)`` when the labels lie in one, else read off
        ``y`` with a warning (not private).
      n_bins: equal-width bins per numeric feature (1..255).
      missing: ``"error"``, ``"code"`` or the list of columns that may hold missing values.
      on_out_of_bounds: ``"error"`` or ``"clip"`` (with a warning) for values outside ``bounds``.
      neighbouring: ``"add_remove"`` or ``"replace_one"`` (alias ``"substitute"``)
        neighbouring datasets; replace-one doubles the count and split sensitivities.
      **params: the method's hyper-parameters (``dpjax.LEARNERS[method].defaults``; e.g.
        random_trees: ``n_trees``, ``depth``, ``voting``, ``noise``; boosted: ``n_trees``,
        ``depth``, ``alpha`` (``"oc"`` or in (0, 1]), ``beta_tree``, ``clamp``,
        ``leaf_mechanism``, ``beta_mode``, ... see :func:`dpjax.ensembles.fit_boosted`).
    """
    if epsilon is not None:
        epsilon = check_epsilon(epsilon)
    prepared = _prepare(X, y, method=method, epsilon=epsilon, bounds=bounds, classes=classes,
                        n_bins=n_bins, missing=missing, on_out_of_bounds=on_out_of_bounds,
                        neighbouring=neighbouring, params=params)
    key = as_key(key)
    fn, cache_key = prepared.fit_fn(private=epsilon is not None)
    args = (key, prepared.codes, prepared.y, jnp.float32(epsilon or 1.0),
            prepared.traced_values())
    compiled, compile_s = _compile(fn, cache_key, *args)
    fitted, run_s = _run(compiled, *args)
    return Model(method, fitted, prepared.params, prepared.spec, prepared.classes,
                 _with_learner_entries(prepared, epsilon), Timings(compile_s, run_s),
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
    seeds: tuple[int, ...]
    hyperparams: dict[str, Any]
    spec: FeatureSpec
    classes: tuple[Any, ...]
    ledgers: tuple[PrivacyLedger, ...]
    timings: Timings
    on_out_of_bounds: str = "error"

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
        return (self.predict(X) == y_index).mean(-1)


def sweep(
    X: Any,
    y: Any,
    *,
    method: str = "random_trees",
    epsilon: float | Sequence[float] | None,
    seeds: int | Sequence[int] = 1,
    bounds: Any = None,
    classes: Sequence[Any] | None = None,
    n_bins: int = 10,
    missing: str | Sequence[str] = "error",
    on_out_of_bounds: str = "error",
    neighbouring: str = "add_remove",
    **params: Any,
) -> Sweep:
    """Fit every combination of ``epsilon`` and of the method's traced hyper-parameters given
    as sequences (boosted: ``alpha``, ``beta_tree``) with every seed, as **one** jit-compiled,
    vmapped call.

    Static hyper-parameters (shapes: trees, depth, bins) are fixed for the sweep. ``epsilon``
    is one budget, a sequence, or ``None`` (non-private fits; must be asked for explicitly).
    ``seeds`` is a count (seeds ``0..seeds-1``) or a sequence of int seeds. Other arguments as
    :func:`fit`.
    """
    learner = get_learner(method)
    private = epsilon is not None
    epsilons = ([check_epsilon(e) for e in np.atleast_1d(np.asarray(epsilon, dtype=float))]
                if private else [None])
    traced = {n: list(params.pop(n)) for n in learner.traced
              if isinstance(params.get(n), (list, tuple, np.ndarray))}
    names = ("epsilon", *traced)
    grid = tuple(dict(zip(names, point, strict=True))
                 for point in itertools.product(epsilons, *traced.values()))
    # every grid value must be a valid setting on its own; its ledger reads the checked values
    resolved = [learner.resolve({**params, **{n: point[n] for n in traced}}) for point in grid]
    seed_list = tuple(range(seeds)) if isinstance(seeds, int) else tuple(int(s) for s in seeds)
    prepared = _prepare(X, y, method=method, epsilon=max(epsilons) if private else None,
                        bounds=bounds, classes=classes, n_bins=n_bins, missing=missing,
                        on_out_of_bounds=on_out_of_bounds, neighbouring=neighbouring,
                        params=params)
    fn, cache_key = prepared.fit_fn(private=private)

    def fit_point(key: jax.Array, codes: jax.Array, y: jax.Array,
                  point: dict[str, jax.Array]) -> Any:
        return fn(key, codes, y, point["epsilon"], {n: point[n] for n in learner.traced})

    # Seeds by lax.map, grid points by vmap inside: work that does not depend on the traced
    # settings (structure from the key, routing, counts) is then done once per seed. The data
    # are arguments, never baked-in constants: the compiled program is cached by shape and
    # reused for other data of the same shape.
    over_grid = jax.vmap(fit_point, in_axes=(None, None, None, 0))

    def batched(keys: jax.Array, codes: jax.Array, y: jax.Array,
                points: dict[str, jax.Array]) -> Any:
        per_seed = jax.lax.map(lambda key: over_grid(key, codes, y, points), keys)
        return jax.tree.map(lambda a: jnp.swapaxes(a, 0, 1), per_seed)

    keys = jax.vmap(jax.random.key)(jnp.asarray(seed_list, jnp.uint32))
    encoded = [prepared.traced_values(point_params) for point_params in resolved]
    points = {n: jnp.stack([e[n] for e in encoded]) for n in learner.traced}
    points["epsilon"] = jnp.asarray([g["epsilon"] or 1.0 for g in grid], jnp.float32)
    args = (keys, prepared.codes, prepared.y, points)
    compiled, compile_s = _compile(batched, ("sweep", cache_key, names), *args)
    fitted, run_s = _run(compiled, *args)
    ledgers = tuple(_with_learner_entries(
        dataclasses.replace(prepared, ledger=dataclasses.replace(
            prepared.ledger, requested_epsilon=g["epsilon"]), params=point_params),
        g["epsilon"]) for g, point_params in zip(grid, resolved, strict=True))
    return Sweep(method, fitted, grid, seed_list, prepared.params, prepared.spec,
                 prepared.classes, ledgers, Timings(compile_s, run_s), on_out_of_bounds)
