"""Helpers of the sensitivity property tests (``test_sensitivity_*.py``): the bound check, the
recording mechanisms and numpy references.

The sensitivity property tests check that neighbouring datasets never move a released
statistic by more than the sensitivity its mechanism is calibrated to.

Every dpjax mechanism adds noise for an *assumed* sensitivity. Each test computes a
statistic before the noise on many random pairs of neighbouring datasets, using the package's
own functions, and checks the change against that assumption. Both neighbouring relations the
code claims are covered:

* add/remove-one: ``D`` and ``D`` plus one record;
* replace-one: one record of ``D`` replaced by another. The api passes ``sensitivity=2`` (count
  sensitivities doubled); the value ranges need no multiplier.

**Neighbours of one shape.** All the variants of a case share one array shape, so there is one
XLA compilation per program. A record that is *absent* contributes exactly zero to every sum:
weight 0 for the weighted class sums (:func:`class_stats`, float or fixed-point), and an
out-of-range label (whose ``one_hot`` row is zero) for the class counts. Adding zero is exact,
so the sums are bit for bit those of the dataset without the record.
:func:`test_absent_rows_are_removed_rows` and the numpy cross-checks verify this against a
literal removal.

**Adaptivity.** A :class:`Recorder` replaces the mechanisms. It records each call's arguments
(the pre-noise value, sensitivity, bound, ...) and returns a release drawn from the call's key
alone. Neighbours run with the same keys, so every later statistic (the next level's splits,
the O.C errors, a tree's leaves, ``β_t``) is compared *given the same earlier releases*. That is
the condition under which sequential (adaptive) composition uses the per-release sensitivities.

**Tolerance.** Integer statistics are exact int32 sums and are compared *exactly*, with no
slack: the forest's class counts, and, under DP, the Mα learner's weighted class sums (leaf sums,
O.C level errors). Those are sums of fixed-point weights ``floor(clip(w, 0, 1)·2**WEIGHT_BITS)``
(units of ``2**−8``, sensitivity ``WEIGHT_UNIT = 256`` per record), checked equal to numpy int64
references, and released with ``integer=True``: their change must be at most the sensitivity,
and their grid values' change (``v >> k``) at most the integer sensitivity ``ceil(Δ/2**k)``,
both exactly. (They used to be float32 sums, and float32 rounding let them move by ``1 +`` a few
ulps, one grid step more than the mechanism paid for: the regression test
:func:`test_oc_error_exact_fixed_point_under_float32_rounding`.) Real statistics (split
utilities, leaf values, ``β``) are float32, and each operation rounds by up to 2**-24 relative.
A few dozen such operations can move a difference by about 1e-6 of the statistics' magnitude.
So real bounds allow ``REL·max(|v| + |v'|, Δ)`` with ``REL = 1e-5``, about 100 ulps: that covers
the rounding, and it is far below any modelling error the test looks for. Their grid values
(``floor(clip(v, ±B)/g)``) are again compared exactly.

Run with ``-s`` (or ``-rP``) to see the largest observed ``change / assumed sensitivity`` of
each statistic.
"""

from __future__ import annotations

import contextlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax import privacy
from dpjax.ensembles.malpha import WEIGHT_UNIT
from dpjax.ensembles.malpha import leaves as malpha_leaves
from dpjax.ensembles.malpha import tree as malpha_tree
from dpjax.ensembles.random_trees import forest
from dpjax.ensembles.smooth_boost import boosting as smooth_boosting
from dpjax.mechanisms import size
from dpjax.mechanisms.laplace import GRID_BITS, MAX_GRID_VALUE
from dpjax.privacy import Cost

REL = 1e-5  # float32 rounding slack (see the module docstring)
ADD, REPLACE = "add/remove", "replace-one"
RATIOS: dict[str, float] = {}


# ------------------------------------------------------------------------------------------
# Helpers: the bound check, the recording mechanisms, numpy references
# ------------------------------------------------------------------------------------------


def _assert_within(name: str, change, sensitivity, scale=0.0, exact: bool = False) -> float:
    """Assert ``change <= sensitivity`` element-wise, plus ``REL·max(scale, sensitivity)`` unless
    ``exact``. Record and print the largest ``change / sensitivity``."""
    change, sensitivity, scale = np.broadcast_arrays(
        np.asarray(change, np.float64), np.asarray(sensitivity, np.float64),
        np.asarray(scale, np.float64))
    allowed = sensitivity if exact else sensitivity + REL * np.maximum(scale, sensitivity)
    bad = change > allowed
    if bad.any():
        i = np.flatnonzero(bad.ravel())[np.argmax((change - allowed)[bad])]
        raise AssertionError(
            f"{name}: {int(bad.sum())} of {change.size} changes exceed the assumed sensitivity;"
            f" worst {change.ravel()[i]!r} > {sensitivity.ravel()[i]!r}")
    positive = sensitivity > 0
    assert np.all(change[~positive] == 0), f"{name}: change where the sensitivity is 0"
    ratio = float(np.max(change[positive] / sensitivity[positive], initial=0.0))
    RATIOS[name] = max(RATIOS.get(name, 0.0), ratio)
    print(f"[sensitivity] {name}: max change/sensitivity = {ratio:.6f} "
          f"over {change.size} releases")
    return ratio


def _grid_ints(value: np.ndarray, step: np.ndarray) -> np.ndarray:
    """The grid values of ``laplace_mechanism``: ``clip(floor(v / g), ±2**28)`` in float32 (``v``
    already clipped to its bound; ``g`` broadcast against ``v``)."""
    value = np.asarray(value, np.float32)
    step = np.asarray(step, np.float32)
    return np.clip(np.floor(value / step), -MAX_GRID_VALUE, MAX_GRID_VALUE).astype(np.float64)


def _integer_grid_shift(sensitivity, epsilon, bound) -> np.ndarray:
    """The grid exponent ``k`` of an ``integer=True`` release, recomputed here: the grid step is
    ``2**k`` with ``k = max(floor(log2 Δ) − clip(floor(log2 ε) + 20, 0, GRID_BITS),
    ceil(log2 B) − 28, 0)`` (no bound term without a bound), and the grid value of an int32
    ``v`` is ``v >> k`` (floor division)."""
    def floor_log2(x):
        mantissa, exponent = np.frexp(np.asarray(x, np.float32).astype(np.float64))
        del mantissa
        return exponent - 1

    bits = np.clip(floor_log2(epsilon) + 20, 0, GRID_BITS)
    shift = floor_log2(sensitivity) - bits
    bound = np.asarray(bound, np.float64)
    finite = np.isfinite(bound) & (bound > 0)
    mantissa, exponent = np.frexp(np.where(finite, bound, 1.0))
    ceil_log2 = np.where(mantissa == 0.5, exponent - 1, exponent)
    shift = np.where(finite, np.maximum(shift, ceil_log2 - 28), shift)
    return np.maximum(shift, 0).astype(np.int64)


def _np_fixed_point(weights: np.ndarray) -> np.ndarray:
    """numpy reference of the fixed-point weights: ``floor(clip(w, 0, 1)·2**WEIGHT_BITS)``,
    int64 (``w`` float32; the product by a power of two is exact)."""
    w = np.clip(np.asarray(weights, np.float32).astype(np.float64), 0.0, 1.0)
    return np.floor(w * WEIGHT_UNIT).astype(np.int64)


def _np_class_sums(weights: np.ndarray, y: np.ndarray, group: np.ndarray,
                   n_groups: int) -> np.ndarray:
    """numpy int64 fixed-point class sums ``[B, n_groups, 2]`` of rows ``[B, R]`` by group."""
    b = weights.shape[0]
    sums = np.zeros((b, n_groups, 2), np.int64)
    np.add.at(sums, (np.arange(b)[:, None], group, y), _np_fixed_point(weights))
    return sums


def _np_level_nodes(feature: np.ndarray, threshold: np.ndarray, codes: np.ndarray,
                    level: int) -> np.ndarray:
    """numpy node ``0..2**level − 1`` of every row at depth ``level``: ``feature``/``threshold``
    ``[B, 2**d − 1]`` (heap order, right iff code > threshold), ``codes`` ``[B, R, n]``."""
    node = np.zeros(codes.shape[:2], np.int64)
    for _ in range(level):
        f = np.take_along_axis(feature, node, axis=1).astype(np.int64)
        th = np.take_along_axis(threshold, node, axis=1)
        code = np.take_along_axis(codes, f[..., None], axis=2)[..., 0].astype(np.int64)
        node = 2 * node + 1 + (code > th)
    return node - (2**level - 1)


def _expand(x: np.ndarray, ndim: int) -> np.ndarray:
    """``x`` with trailing unit axes up to ``ndim`` axes (per-release scalars against values)."""
    x = np.asarray(x)
    return x.reshape(x.shape + (1,) * (ndim - x.ndim))


def _as_recorded(x) -> jax.Array:
    """A recorded array: integer arrays keep their dtype (so an exact int32 statistic is seen
    as it is), everything else as float32."""
    x = jnp.asarray(x)
    return x if jnp.issubdtype(x.dtype, jnp.integer) else x.astype(jnp.float32)


class Recorder:
    """Recording stand-ins for ``laplace_mechanism`` (and its planned form, ``plan_laplace`` with
    ``laplace_releases``), ``permute_and_flip`` and ``parallel``.

    A call records its static facts in :attr:`meta` (Python values) and its arrays in
    :attr:`arrays` (tracers while tracing, which the traced function returns). It then returns a
    release that depends on the key alone. If there is a bound, that release is uniform on
    ``[−B, B]``, and a selection is uniform over the finite candidates. Only the row count and
    the forest counts (integer, unbounded) come back as ``value`` plus key noise, and no later
    statistic that is compared between neighbours reads them. So the neighbours' later
    statistics are computed given the same releases.
    """

    current: Recorder | None = None     # the installed one (so a traced function can tag)

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.meta: list[dict] = []
        self.arrays: list[dict] = []
        self.tag = ""

    def _record(self, kind: str, meta: dict, **arrays) -> None:
        self.meta.append({"kind": kind, "tag": self.tag, **meta})
        self.arrays.append({k: _as_recorded(v) for k, v in arrays.items()})

    def laplace(self, key, value, sensitivity, epsilon, *, bound=None, integer=False,
                event_ndim=None, label=""):
        value = jnp.asarray(value)          # int32 statistics are recorded as int32
        event_ndim = value.ndim if event_ndim is None else event_ndim
        batch = value.shape[:value.ndim - event_ndim]
        python_sensitivity = sensitivity if isinstance(sensitivity, (int, float)) else None
        self._record("laplace", {"event_ndim": event_ndim, "integer": integer, "label": label,
                                 "sensitivity": python_sensitivity},
                     value=value, sensitivity=sensitivity, epsilon=epsilon,
                     bound=jnp.inf if bound is None else bound)
        uniform = jax.random.uniform(key, value.shape, jnp.float32, -1.0, 1.0)
        if bound is None:
            release = value.astype(jnp.float32) + jnp.round(8.0 * uniform)
        else:
            release = uniform * jnp.asarray(bound, jnp.float32)
            release = jnp.round(release) if integer else release
        cost = Cost(jnp.broadcast_to(jnp.asarray(epsilon, jnp.float32), batch),
                    jnp.zeros(batch, jnp.float32), "recorded")
        return release, cost

    def plan(self, value, sensitivity, epsilon, **options):
        """Stand-in for ``plan_laplace``: the release's arguments, recorded when
        :meth:`releases` releases it."""
        return value, sensitivity, epsilon, options

    def releases(self, keys, plans):
        """Stand-in for ``laplace_releases``: each planned release as :meth:`laplace`."""
        return [self.laplace(key, value, sensitivity, epsilon, **options)
                for key, (value, sensitivity, epsilon, options) in zip(keys, plans, strict=True)]

    def select(self, key, utility, sensitivity, epsilon, *, label=""):
        utility = jnp.asarray(utility, jnp.float32)
        batch = utility.shape[:-1]
        self._record("select", {"label": label}, utility=utility,
                     sensitivity=jnp.broadcast_to(jnp.asarray(sensitivity, jnp.float32), batch),
                     epsilon=epsilon)
        noise = jax.random.gumbel(key, utility.shape)
        index = jnp.argmax(jnp.where(jnp.isfinite(utility), noise, -jnp.inf), axis=-1)
        cost = Cost(jnp.broadcast_to(jnp.asarray(epsilon, jnp.float32), batch),
                    jnp.zeros(batch, jnp.float32), "recorded")
        return index.astype(jnp.int32), cost

    def parallel(self, cost, axis=-1, *, touched=1):
        self.meta.append({"kind": "parallel", "tag": self.tag, "touched": touched})
        self.arrays.append({})
        return privacy.parallel(cost, axis, touched=touched)

    @contextlib.contextmanager
    def installed(self):
        """The stand-ins in place of the mechanisms of the forest, the Mα tree, its leaves,
        the released size and smooth boosting's first releases (the size and the fallback's
        class counts, drawn together; for tracing: compiled programs keep them)."""
        with pytest.MonkeyPatch.context() as patch:
            for module in (forest, malpha_tree, malpha_leaves, size, smooth_boosting):
                for name, stand_in in (("laplace_mechanism", self.laplace),
                                       ("plan_laplace", self.plan),
                                       ("laplace_releases", self.releases),
                                       ("permute_and_flip", self.select),
                                       ("parallel", self.parallel)):
                    if hasattr(module, name):
                        patch.setattr(module, name, stand_in)
            patch.setattr(malpha_tree, "_scan_levels", _unrolled_levels)
            patch.setattr(Recorder, "current", self)
            yield self


def _unrolled_levels(state, split_keys, oc_keys, codes, stats, n_codes_per_feature, rule):
    """The Mα tree's levels as the Python fold of ``grow_malpha_level`` (static levels, not
    padded) instead of ``_scan_levels``' ``lax.scan``, whose body would keep the recorded
    arrays of the level releases inside the loop; the two grow the same tree with the same
    releases bit for bit (``tests/ensembles/malpha/test_tree.py``)."""
    level_costs = []
    for level in range(split_keys.shape[0]):
        state, costs = malpha_tree.grow_malpha_level(state, level, split_keys[level],
                                                     oc_keys[level], codes, stats,
                                                     n_codes_per_feature, rule)
        level_costs.append(costs)
    return state, level_costs


def _recorded(fn, *args, vmap: bool = True, keep_arrays: bool = True):
    """Run ``fn(*args)`` (vmapped over the leading axis of every argument, jitted) with the
    mechanisms recorded. Returns ``(outputs, meta, arrays)`` with numpy arrays (``arrays`` is
    empty without ``keep_arrays``: calls inside a ``lax.scan`` cannot be returned)."""
    recorder = Recorder()

    def traced(*inner):
        recorder.reset()
        out = fn(*inner)
        return out, (recorder.arrays if keep_arrays else [])

    program = jax.jit(jax.vmap(traced) if vmap else traced)
    with recorder.installed():
        out, arrays = program(*args)
    return jax.tree.map(np.asarray, out), list(recorder.meta), jax.tree.map(np.asarray, arrays)


def _traced_meta(fn, *args) -> list[dict]:
    """The static facts of the mechanism calls of ``fn(*args)``, from tracing alone (no
    compilation): ``jax.eval_shape``."""
    recorder = Recorder()
    with recorder.installed():
        jax.eval_shape(fn, *args)
    return list(recorder.meta)


def _split(tree, n_variants: int):
    """``[n_variants * B, ...]`` arrays to a list of ``n_variants`` trees of ``[B, ...]``."""
    return [jax.tree.map(lambda x, i=i: np.split(x, n_variants)[i], tree)
            for i in range(n_variants)]
