"""Fitted models: :class:`Model` (one fit) and :class:`Sweep` (a grid x seeds batch of fits),
and model files (:meth:`Model.to_json`, :func:`load`).

Prediction is the learner config's pure ``proba`` / ``predict``, jit-compiled once per config
(the config is the cache key: configs that differ only in traced settings share the code).
Generic over the registry: no learner is named here.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
from collections.abc import Callable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from dpjax import _buckets, _serialization
from dpjax._keys import as_key
from dpjax.data import FeatureSpec, encode, encode_labels
from dpjax.learners import Learner, registrations
from dpjax.privacy import Cost, LedgerEntry, PrivacyLedger


@dataclasses.dataclass(frozen=True)
class Timings:
    """Seconds spent compiling (0 when the compiled programs were cached) and running a fit's
    compiled programs (the rows' binning where they were given on a device, the fit's)."""

    compile_s: float
    run_s: float


class _Configured:
    """``method`` and ``hyperparams`` read off the learner ``config``."""

    config: Learner

    @property
    def method(self) -> str:
        return self.config.name

    @property
    def hyperparams(self) -> dict[str, Any]:
        return self.config.hyperparams


@dataclasses.dataclass(frozen=True)
class Model(_Configured):
    """A fitted dpjax model.

    ``params`` is a pytree of the learner's params types (its registration lists them: a
    :class:`~dpjax.trees.DenseTree` batch for the forests, a
    :class:`~dpjax.ensembles.newton.NewtonBoostedModel` for ``boosted``, ...); ``config`` the
    learner configuration that fitted it; :meth:`proba_function` gives the pure ``(params,
    codes) -> [m, C]`` map to use inside ``jax.jit`` / ``vmap``; :meth:`encode` turns raw ``X``
    into the codes it reads. ``privacy`` is the ledger of every release made from the training
    data. A regression model (``task="regression"``) has no ``classes`` and the public
    ``target`` range ``(lo, hi)``: it predicts values in it.
    """

    config: Learner
    params: Any
    spec: FeatureSpec
    classes: tuple[Any, ...]
    privacy: PrivacyLedger
    timings: Timings
    target: tuple[float, float] | None = None

    @property
    def task(self) -> str:
        """``"regression"`` (a real target in ``target``) or ``"classification"``."""
        return "classification" if self.target is None else "regression"

    @property
    def learner(self) -> Learner:
        return self.config

    def encode(self, X: Any) -> jax.Array:
        """uint8 codes ``[m, n]`` of raw ``X`` under the model's public feature spec. Values
        outside the declared bounds are clipped into them (unknown categories take the "other"
        code) with a warning, whatever ``on_out_of_bounds`` the fit had: prediction releases
        nothing about the training data."""
        return jax.device_put(encode(self.spec, X))

    def proba_function(self) -> Callable[[Any, jax.Array], jax.Array]:
        """Pure ``(params, codes) -> class scores [m, C]`` (jit/vmap/grad-friendly)."""
        return self.config.proba

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class scores ``[m, C]`` (columns in the order of ``classes``)."""
        if self.target is not None:
            raise ValueError("a regression model has no class probabilities: use predict")
        return by_rows(_jitted_proba(self.config), self.params, encode(self.spec, X))

    def predict(self, X: Any, key: int | jax.Array | None = None) -> np.ndarray:
        """Predicted labels (values of ``classes``), or a regression model's predicted values
        (within ``target``). Randomised rules need ``key``."""
        if self.target is not None:
            return np.clip(self.decision_function(X), *self.target)
        index = self._predict_index(X, key)
        return np.asarray(self.classes, dtype=object)[np.asarray(index)].astype(
            np.asarray(self.classes).dtype)

    def _predict_index(self, X: Any, key: int | jax.Array | None) -> np.ndarray:
        """Class indices ``[m]`` of :meth:`predict` (``key`` checked there); a randomised
        rule's draws are per row, so its rows are not padded (:func:`by_rows`)."""
        if self.config.needs_predict_key and key is None:
            raise ValueError(f"{self.method} with {self.hyperparams} predicts at random: "
                             "pass key=...")
        random = self.config.needs_predict_key
        return by_rows(_jitted_predict(self.config), self.params, encode(self.spec, X),
                       as_key(0 if key is None else key), pad=not random)

    def score(self, X: Any, y: Any, key: int | jax.Array | None = None) -> float:
        """Accuracy of :meth:`predict` on ``(X, y)``; labels outside ``classes`` are an error
        (they could never be predicted: silently wrong, never right). A regression model's
        score is the R² of its predictions (scikit-learn's regressor score)."""
        if self.target is not None:
            return float(r_squared(self.predict(X), y))
        y_index, _, _ = encode_labels(y, self.classes, private=False)
        index = np.asarray(self._predict_index(X, key))
        if y_index.shape != index.shape:
            raise ValueError("y must hold one label per row of X")
        return float(np.mean(index == y_index))

    def describe(self) -> str:
        """The fitted model as readable text: trees as nested rules with their released
        leaves, boosted tables per feature, stumps as a weighted vote, rule lists as
        ``if … then … else``."""
        return self.config.describe(self.params, self.spec, self.classes) or ""

    def feature_importances(self) -> np.ndarray:
        """Importance of each feature ``[n_features]`` (summing to 1), read off the released
        parameters alone: post-processing, no data, no budget
        (:func:`dpjax.trees.describe.tree_importances`)."""
        from dpjax.trees.describe import normalised  # the tree modules load with a tree learner
        return normalised(self.config.importances(self.params, self.spec))

    def decision_function(self, X: Any) -> np.ndarray:
        """The real-valued score ``[m]`` of a binary model (positive: ``classes[1]``), or the
        class scores ``[m, C]`` of a model of more classes, for the learners that have one
        (:meth:`~dpjax.learner.Learner.decision`)."""
        return by_rows(_jitted_decision(self.config), self.params, encode(self.spec, X))

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The model as JSON (:func:`dpjax.load` reads it back; no pickle). The file holds only
        what the model released and the public spec: the fit's timings are left out (a fit's
        run time follows its rejection samplers, which read the data), so sharing the file
        shares nothing the ledger does not account for."""
        unreleased = dataclasses.replace(self, timings=Timings(math.nan, math.nan))
        return _serialization.to_json(unreleased, model_types(), path)

    def __str__(self) -> str:
        return self.summary()

    def summary(self) -> str:
        hyper = ", ".join(f"{k}={v}" for k, v in self.hyperparams.items())
        described = self.describe()
        return (f"dpjax {self.method} model ({hyper})\n"
                f"  {self.spec.n_features} features, {outputs_text(self.classes, self.target)}\n"
                f"  fit: compile {self.timings.compile_s:.3f}s, run {self.timings.run_s:.3f}s\n"
                + "".join(f"  {line}\n" for line in (described or "").splitlines())
                + "\n".join("  " + line for line in str(self.privacy).splitlines()))

    def __repr__(self) -> str:
        eps = "non-private" if not self.privacy.private else f"epsilon={self.privacy.epsilon:g}"
        outputs = (f"target={list(self.target)}" if self.target is not None
                   else f"classes={list(self.classes)}")
        return f"<dpjax.Model {self.method} {eps} {outputs}>"


@dataclasses.dataclass(frozen=True)
class Sweep(_Configured):
    """Models fitted in one vmapped call over a grid of traced settings x seeds.

    ``params`` has leading axes ``[len(grid), len(seeds)]``; ``grid[i]`` is the dict of traced
    settings (``epsilon``, ...) of row ``i``, ``configs[i]`` its learner config and
    ``ledgers[i]`` its privacy ledger (its seeds' largest); ``model_ledgers[i][j]`` is the
    ledger of seed ``j``'s model alone (its own releases and plan), which
    :meth:`model` gives the model.
    """

    configs: tuple[Learner, ...]
    params: Any
    grid: tuple[dict[str, float], ...]
    seeds: tuple[int | None, ...]
    spec: FeatureSpec
    classes: tuple[Any, ...]
    ledgers: tuple[PrivacyLedger, ...]
    timings: Timings
    target: tuple[float, float] | None = None
    model_ledgers: tuple[tuple[PrivacyLedger, ...], ...] = ()

    @property
    def config(self) -> Learner:
        """The static configuration shared by every grid point."""
        return self.configs[0]

    @property
    def shape(self) -> tuple[int, int]:
        """``(len(grid), len(seeds))``: the grid of models."""
        return len(self.grid), len(self.seeds)

    def model(self, i: int, j: int = 0) -> Model:
        """The model of grid point ``i`` and seed index ``j`` (also ``sweep[i, j]``)."""
        rows, columns = self.shape
        if not (-rows <= i < rows and -columns <= j < columns):
            raise IndexError(f"sweep[{i}, {j}] is outside the sweep's {rows} grid point(s) x "
                             f"{columns} seed(s)")
        params = jax.tree.map(lambda a: a[i, j], self.params)
        ledger = self.model_ledgers[i][j] if self.model_ledgers else self.ledgers[i]
        return Model(self.configs[i], params, self.spec, self.classes, ledger, self.timings,
                     self.target)

    def __getitem__(self, index: int | tuple[int, int]) -> Model:
        """``sweep[i, j]``: the model of grid point ``i`` and seed index ``j``; ``sweep[k]``:
        the ``k``-th model in the order of iteration (grid point ``k // len(seeds)``, seed
        index ``k % len(seeds)``)."""
        if isinstance(index, tuple):
            return self.model(*index)
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)):
            raise TypeError(f"a sweep is indexed by sweep[i, j] or by an int, not "
                            f"{type(index).__name__}")
        if not -len(self) <= index < len(self):
            raise IndexError(f"sweep[{index}] is outside the sweep's {len(self)} models")
        return self.model(*divmod(int(index) % len(self), self.shape[1]))

    def __len__(self) -> int:
        """The number of models: grid points x seeds."""
        return self.shape[0] * self.shape[1]

    def __iter__(self) -> Iterator[Model]:
        """Every model, grid point by grid point, seeds within."""
        rows, columns = self.shape
        return (self.model(i, j) for i in range(rows) for j in range(columns))

    def _by_rows(self, rule: str, X: Any) -> np.ndarray:
        """``rule`` (:func:`_jitted_sweep`) of every model on ``X``'s rows (:func:`by_rows`)."""
        return by_rows(_jitted_sweep(self.config, rule), self.params, encode(self.spec, X),
                       row_axis=2)

    def predict_proba(self, X: Any) -> np.ndarray:
        """Class scores ``[len(grid), len(seeds), m, C]`` (one compiled call)."""
        if self.target is not None:
            raise ValueError("regression models have no class probabilities: use predict")
        return self._by_rows("proba", X)

    def predict(self, X: Any) -> np.ndarray:
        """Class indices ``[len(grid), len(seeds), m]`` of the deterministic prediction rule (one
        compiled call; randomised rules are not supported here), or regression models'
        predicted values (within ``target``)."""
        if self.target is not None:
            return np.clip(self._by_rows("decision", X), *self.target)
        if self.config.needs_predict_key:
            raise ValueError("Sweep.predict needs a deterministic prediction rule; use "
                             "sweep.model(i, j).predict(X, key=...)")
        return self._by_rows("predict", X)

    def score(self, X: Any, y: Any) -> np.ndarray:
        """Accuracy ``[len(grid), len(seeds)]`` of the deterministic prediction rule (the R² of
        regression models)."""
        if self.target is not None:
            return r_squared(self.predict(X), y)
        y_index, _, _ = encode_labels(y, self.classes)
        predicted = self.predict(X)
        if y_index.shape[0] != predicted.shape[-1]:
            raise ValueError("y must hold one label per row of X")
        return (predicted == y_index).mean(-1)


def outputs_text(classes: tuple[Any, ...], target: tuple[float, float] | None) -> str:
    """``classes [...]``, or a regression model's ``target in [lo, hi]``."""
    if target is None:
        return f"classes {list(classes)}"
    return f"regression target in [{target[0]:g}, {target[1]:g}]"


def r_squared(predicted: np.ndarray, y: Any) -> np.ndarray:
    """``1 − Σ(y − ŷ)²/Σ(y − ȳ)²`` over the last axis of ``predicted [..., m]`` (the
    coefficient of determination); ``y`` must be a finite numeric ``[m]``."""
    values = np.asarray(y, dtype=np.float64)
    if values.ndim == 2 and values.shape[1] == 1:
        values = values[:, 0]
    if values.ndim != 1 or values.shape[0] != np.shape(predicted)[-1]:
        raise ValueError("y must hold one target value per row of X")
    if not np.isfinite(values).all():
        raise ValueError("y has missing or infinite target values")
    residual = ((values - np.asarray(predicted, np.float64)) ** 2).sum(-1)
    total = ((values - values.mean()) ** 2).sum()
    return 1.0 - residual / total if total > 0 else np.where(residual == 0, 1.0, 0.0)


def model_types() -> dict[str, type]:
    """The types a model file may hold, by ``module.Class`` name: the model, its spec, ledger
    and timings, and every registered learner's config and params types."""
    types = [Model, Timings, FeatureSpec, PrivacyLedger, LedgerEntry, Cost]
    for entry in registrations():
        types += [entry.config, *entry.params]
    return {_serialization.type_name(cls): cls for cls in types}


def load(source: str | os.PathLike) -> Model:
    """The model written by :meth:`Model.to_json`: from a path, or from the JSON string itself.

    Only dpjax's model types are rebuilt (:func:`model_types`), and the learner
    configuration's checks run again. Arrays come back as JAX arrays (the model predicts as
    before, bit for bit); its timings are NaN (not exported)."""
    model = _serialization.from_json(source, model_types())
    if not isinstance(model, Model):
        raise ValueError("the file holds no dpjax model")
    return dataclasses.replace(model, params=jax.tree.map(jnp.asarray, model.params))


def by_rows(fn: Callable[..., Any], params: Any, codes: np.ndarray, *args: Any,
            row_axis: int = 0, pad: bool = True) -> np.ndarray:
    """``fn(params, codes, *args)`` of a row-by-row rule as numpy, its rows padded to their
    bucket (:func:`dpjax._buckets.pad_to_bucket`, codes 0) unless ``pad`` is false, and the
    padding's rows (on the output's ``row_axis``) dropped: prediction programs of row counts in
    one bucket are one program, so a row's output is the same bits in every batch of one
    bucket. Across buckets (and against an unpadded call) a score may differ in its last
    float32 bit, as it did across row counts before: XLA vectorises each shape's program on its
    own."""
    rows = codes.shape[0]
    out = np.asarray(fn(params, jax.device_put(_buckets.pad_to_bucket(codes, 0) if pad
                                               else codes), *args))
    return out[(slice(None),) * row_axis + (slice(0, rows),)]


@functools.lru_cache(maxsize=16)
def _jitted_proba(config: Learner) -> Callable[..., Any]:
    return jax.jit(config.proba)


@functools.lru_cache(maxsize=16)
def _jitted_decision(config: Learner) -> Callable[..., Any]:
    return jax.jit(config.decision)


@functools.lru_cache(maxsize=16)
def _jitted_predict(config: Learner) -> Callable[..., Any]:
    return jax.jit(config.predict)


@functools.lru_cache(maxsize=16)
def _jitted_sweep(config: Learner, rule: str) -> Callable[..., Any]:
    """Scores (``rule="proba"``), deterministic predictions (``"predict"``) or real-valued
    scores (``"decision"``) of a ``[grid,
    seeds]`` batch of models: ``lax.map`` over grid points (bounded memory), ``vmap`` over
    seeds."""
    if rule == "proba":
        one = config.proba
    elif rule == "decision":
        one = config.decision
    else:
        def one(params: Any, codes: jax.Array) -> jax.Array:
            return config.predict(params, codes, None)
    per_point = jax.vmap(one, in_axes=(0, None))
    return jax.jit(lambda params, codes: jax.lax.map(lambda p: per_point(p, codes), params))
