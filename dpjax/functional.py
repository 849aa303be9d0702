"""A public functional core (``docs/functional.md``), in the style of optax: a factory for all
the static, public choices returns pure functions that you ``jax.jit`` and ``jax.vmap`` inside
your own programs.

    f = dpjax.functional.fitter("boosted", bounds=(lo, hi), classes=(0, 1), shape="random")
    params, costs = f(key, X, y, epsilon)      # pure JAX: jit / vmap over any argument
    ledger = f.ledger(costs, epsilon)          # host: composes, raises above the request
    proba = f.predict_proba(params, X)         # pure JAX

* :func:`fitter` takes what :func:`dpjax.fit` takes that is static and public: the learner and
  its hyper-parameters, the declared bounds and classes, the bins, the missing-value
  declaration, the neighbouring relation, ``δ`` and a declared public size. It checks them
  once, here.
* ``f(key, X, y, epsilon, **traced)`` is the learner's pure fit (its plan decided inside the
  program) on the numeric rows ``X [m, n]`` (floats, binned in their JAX dtype: float32 unless
  JAX's x64 mode is on) and numeric labels ``y [m]``, binned by the same public binning as
  :func:`dpjax.fit` (:func:`dpjax.data.device.bin_values`); the traced hyper-parameters may
  be passed as arrays (and vmapped over). ``chex`` checks the shapes and dtypes at the
  boundary. Inside a program nothing can raise on the data: values outside the bounds fall in
  the edge bins (clipped), a NaN takes its feature's missing code (the first bin where none
  is declared), and a row whose label is missing or outside the classes counts nowhere.
  :meth:`Fitter.check` raises on the host as :func:`dpjax.fit` does.
* ``f.ledger(costs, epsilon)`` composes one model's costs on the host into its
  :class:`~dpjax.privacy.PrivacyLedger`; ``f.ledgers`` those of a leading batch axis.

The privacy contract (``docs/functional.md``): one fresh key per release (never reuse a key,
and derive keys with ``jax.random.split``, not from data), one ledger per model, and no shape
read off private data (the row count is private under add/remove: pad to a public size).
Models fitted on shards that each record's own value assigns it to (a hash of its ID, a public
attribute) compose in parallel: together they spend the largest of their budgets; shards cut
by position, or overlapping ones (cross-validation folds), compose sequentially.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np

from dpjax._model import Model, Timings
from dpjax._preparation import check_public_size, compose_ledger
from dpjax.data import FeatureSpec, make_feature_spec
from dpjax.data.binning import device_dtype, encode
from dpjax.data.device import bin_values, device_encodable, label_values
from dpjax.data.labels import DEFAULT_NUMERIC_CLASSES, check_classes, encode_labels
from dpjax.learners import FitContext, Learner, get_learner
from dpjax.privacy import (
    SENSITIVITY,
    PrivacyLedger,
    check_delta,
    check_epsilon,
    check_neighbouring,
)

__all__ = ["Fitter", "fitter"]


@dataclasses.dataclass(frozen=True)
class Fitter:
    """Pure functions of one learner configuration on one public feature spec (made by
    :func:`fitter`; every field is static and public).

    Attributes:
      config: the learner configuration.
      spec: the public feature spec (every feature numeric).
      classes: the declared classes.
      neighbouring: ``"add_remove"`` or ``"replace_one"``.
      delta: the ``δ`` of the request.
      public_size: a declared public row count, or ``None``.
    """

    config: Learner
    spec: FeatureSpec
    classes: tuple[Any, ...]
    neighbouring: str = "add_remove"
    delta: float = 0.0
    public_size: int | None = None

    @property
    def n_features(self) -> int:
        return self.spec.n_features

    def context(self, m: int) -> FitContext:
        """The fit's context: the declared ``public_size``, else under replace-one ``m``, the
        rows given (public under replace-one: pass ``public_size`` where you padded them),
        else none (add/remove: a learner that needs a size releases a noisy count)."""
        size = (self.public_size if self.public_size is not None
                else m if self.neighbouring == "replace_one" else None)
        return FitContext(self.spec.n_codes, len(self.classes), SENSITIVITY[self.neighbouring],
                          None if size is None else jnp.float32(size), None, self.delta,
                          None, self.spec.n_ordered)

    def encode(self, X: jax.Array) -> jax.Array:
        """Pure: uint8 codes ``[m, n]`` of the numeric rows ``X`` (out-of-bounds values in the
        edge bins, a NaN its feature's missing code or the first bin)."""
        self._check_rows(X)
        return bin_values(self.spec, jnp.asarray(X))[0]

    def labels(self, y: jax.Array) -> jax.Array:
        """Pure: class indices int32 ``[m]`` of the numeric labels ``y`` (``len(classes)``, a
        row that counts nowhere, for a missing label or one outside the classes)."""
        chex.assert_rank(y, 1)
        return label_values(self.classes, jnp.asarray(y))[0]

    def __call__(self, key: jax.Array, X: jax.Array, y: jax.Array, epsilon: Any,
                 **traced: Any) -> tuple[Any, Any]:
        """Pure: ``(params, costs)`` of the learner's fit on ``(X, y)`` at budget ``epsilon``
        (a traced float32 scalar), drawing every noise from ``key`` (a typed PRNG key or raw
        ``uint32[2]``). ``traced``: the config's traced hyper-parameters as arrays (default:
        the config's values)."""
        self._check_rows(X)
        chex.assert_rank(y, 1)
        chex.assert_equal_shape_prefix((X, y), 1)
        chex.assert_rank(epsilon, 0)
        key = key if jnp.issubdtype(jnp.asarray(key).dtype, jax.dtypes.prng_key) else (
            jax.random.wrap_key_data(jnp.asarray(key, jnp.uint32)))
        codes, labels = self.encode(X), self.labels(y)
        values = {n: jnp.asarray(v, jnp.float32) for n, v in traced.items()}
        return self.config.fit(key, codes, labels, jnp.asarray(epsilon, jnp.float32),
                               self.context(X.shape[0]), **values)

    def predict_proba(self, params: Any, X: jax.Array) -> jax.Array:
        """Pure: class scores ``[m, C]`` of a fitted model on the numeric rows ``X``."""
        return self.config.proba(params, self.encode(X))

    def predict(self, params: Any, X: jax.Array, key: jax.Array | None = None) -> jax.Array:
        """Pure: class indices ``[m]`` (randomised rules draw from ``key``)."""
        return self.config.predict(params, self.encode(X), key)

    def ledger(self, costs: Any, epsilon: float) -> PrivacyLedger:
        """Host: one model's ledger, composed from the ``costs`` its fit at ``epsilon``
        returned (concrete values); ``ValueError`` when they spend more than ``epsilon`` (or
        the fitter's ``δ``): the fit ran at another budget. A planned learner's pure fit
        decides its plan in its program, so this ledger has no plan line (``dpjax.fit``'s
        names the plan it settled on the host, :attr:`~dpjax.privacy.PrivacyLedger.plan`)."""
        epsilon = check_epsilon(epsilon)
        start = PrivacyLedger(neighbouring=self.neighbouring, requested_epsilon=epsilon,
                              requested_delta=self.delta)
        try:
            return compose_ledger(start, self.config, epsilon, jax.device_get(costs))
        except RuntimeError as error:
            raise ValueError(f"these costs spend more than epsilon={epsilon!r} (delta="
                             f"{self.delta!r}): pass the epsilon the fit ran at") from error

    def ledgers(self, costs: Any, epsilon: float | Sequence[float]) -> list[PrivacyLedger]:
        """Host: the ledger of every model of a leading batch axis of ``costs`` (a ``vmap``
        of the fit), at ``epsilon`` (one budget, or one per model)."""
        host = jax.device_get(costs)
        leaves = jax.tree.leaves(host)
        count = np.shape(leaves[0])[0] if leaves else len(np.atleast_1d(epsilon))
        budgets = np.broadcast_to(np.asarray(epsilon, np.float64), (count,)).tolist()
        return [self.ledger(jax.tree.map(lambda a, i=i: np.asarray(a)[i], host), budgets[i])
                for i in range(count)]

    def check(self, X: Any, y: Any | None = None) -> None:
        """Host: raise (``ValueError``) for what :func:`dpjax.fit` refuses in ``X`` (NaN
        where no missing value is declared, infinite values; values outside the bounds warn)
        and in ``y`` (missing labels, labels outside the classes); no message prints a value.
        Reads the data: call it on your own data before the pure fit, not inside it."""
        self._check_rows(X)
        encode(self.spec, np.asarray(jnp.asarray(X)))    # the dtype the pure functions bin
        if y is not None:
            encode_labels(np.asarray(y), self.classes)

    def model(self, params: Any, ledger: PrivacyLedger) -> Model:
        """A :class:`dpjax.Model` of fitted ``params`` and their ``ledger`` (to describe,
        save, score or serve it with the rest of dpjax)."""
        return Model(self.config, params, self.spec, self.classes, ledger,
                     Timings(float("nan"), float("nan")))

    def _check_rows(self, X: Any) -> None:
        chex.assert_rank(X, 2)
        if X.shape[1] != self.n_features:
            raise ValueError(f"X has {X.shape[1]} features, the fitter expects "
                             f"{self.n_features}")
        if not device_dtype(X.dtype):
            raise ValueError(f"X must hold floats (or int8, uint8, int16, uint16, which float32 "
                             f"holds exactly); got {X.dtype}: cast it to float32 (wider "
                             "integers would round)")


def fitter(method: str | Learner = "boosted", *, bounds: Any, classes: Sequence[Any] = None,
           n_features: int | None = None, n_bins: int | None = None,
           missing: str | Sequence[str] = "error", neighbouring: str = "add_remove",
           delta: float = 0.0, public_size: int | None = None, **params: Any) -> Fitter:
    """The pure functions of a learner on numeric features (module docstring).

    Args:
      method: a learner name or config (``dpjax.learners``); ``params`` its hyper-parameters.
        Classification learners whose fits ignore rows of no class (every built-in one).
      bounds: the public bounds ``(lower, upper)``, per-feature arrays or scalars for every
        feature (``n_features`` then says how many), or a dict ``x<j> -> (lo, hi)``.
      classes: the declared numeric classes (default ``(0, 1)``).
      n_bins, missing, neighbouring, delta, public_size: as :func:`dpjax.fit`.
    """
    config = get_learner(method, params)
    if not config.pads_rows:
        raise ValueError(f"{config.name} reads the row count off the shape: the functional "
                         "core serves learners whose fits ignore rows of no class")
    neighbouring = check_neighbouring(neighbouring)
    delta = check_delta(delta)
    classes = check_classes(DEFAULT_NUMERIC_CLASSES if classes is None else classes)
    if not all(isinstance(c, (int, float, np.integer, np.floating))
               and not isinstance(c, (bool, np.bool_)) for c in classes):
        raise ValueError("classes must be numbers in the functional core (its labels are "
                         "numeric arrays)")
    if config.binary and len(classes) != 2:
        raise ValueError(f"{config.name} is a binary classifier; got {len(classes)} classes")
    count = _feature_count(bounds, n_features)
    spec = make_feature_spec(np.zeros((1, count), np.float32), bounds,
                             n_bins=config.default_bins if n_bins is None else n_bins,
                             missing=missing)
    if not device_encodable(spec):
        raise ValueError("the functional core bins numeric features: declare every feature "
                         "with a (lo, hi) range")
    public_size = check_public_size(public_size)
    config.check_request(True, delta)
    return Fitter(config, spec, classes, neighbouring, delta, public_size)


def _feature_count(bounds: Any, n_features: int | None) -> int:
    """The number of features ``bounds`` declares (per-feature arrays, or a dict of
    ``x<j>`` names), or ``n_features`` (scalar bounds)."""
    if isinstance(bounds, dict):
        declared = {len(bounds)}
    elif isinstance(bounds, Sequence) and len(bounds) == 2:
        declared = {int(np.size(side)) for side in bounds} - {1}
    else:
        raise ValueError("bounds must be (lower, upper) per-feature arrays or scalars, or a "
                         "dict x<j> -> (lo, hi): the functional core's features are numeric")
    if len(declared) > 1:
        raise ValueError("bounds' lower and upper arrays must have one entry per feature")
    if not declared:
        if n_features is None:
            raise ValueError("scalar bounds hold for every feature: pass n_features")
        return int(n_features)
    count = declared.pop()
    if n_features is not None and n_features != count:
        raise ValueError(f"n_features={n_features} but bounds declare {count} features")
    return count
