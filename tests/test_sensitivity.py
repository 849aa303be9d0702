"""Sensitivity property tests: neighbouring datasets never move a released statistic by more
than the sensitivity its mechanism is calibrated to.

Every dpjax mechanism adds noise for an *assumed* sensitivity. Each test here computes a
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
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax import api
from dpjax.ensembles import boosted, random_trees
from dpjax.ensembles.boosted import (
    beta_rounding,
    fit_boosted,
    leaf_link,
    leveraging_coefficient,
    link_alpha,
    release_leaves,
)
from dpjax.losses.proper import (
    clamped_split_risk,
    criterion_sensitivity,
    inverse_link,
    split_risk,
    split_sensitivity,
)
from dpjax.mechanisms import accounting
from dpjax.mechanisms.accounting import Cost
from dpjax.mechanisms.laplace import GRID_BITS, MAX_GRID_VALUE, grid_step
from dpjax.trees import malpha
from dpjax.trees.histogram import leaf_stats, node_histogram, split_stats, valid_thresholds
from dpjax.trees.malpha import (
    MAX_FIXED_POINT_ROWS,
    WEIGHT_BITS,
    WEIGHT_UNIT,
    class_stats,
    grow_malpha_tree,
    weighted_error,
)
from dpjax.trees.predict import leaf_index

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
    """Recording stand-ins for ``laplace_mechanism``, ``permute_and_flip`` and ``parallel``.

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
        return accounting.parallel(cost, axis, touched=touched)

    @contextlib.contextmanager
    def installed(self):
        """The stand-ins in place of the mechanisms of the forest, the Mα tree and the boosting
        loop (for tracing; compiled programs keep them)."""
        with pytest.MonkeyPatch.context() as patch:
            for module in (random_trees, malpha, boosted):
                for name, stand_in in (("laplace_mechanism", self.laplace),
                                       ("permute_and_flip", self.select),
                                       ("parallel", self.parallel)):
                    if hasattr(module, name):
                        patch.setattr(module, name, stand_in)
            patch.setattr(Recorder, "current", self)
            yield self


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


def _np_leaves(feature: np.ndarray, threshold: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Leaf of every row in every tree, numpy: ``feature``/``threshold`` ``[B, T, 2**d − 1]``,
    ``codes`` ``[B, R, n]`` -> ``[B, T, R]`` (right iff code > threshold, heap order)."""
    n_internal = feature.shape[-1]
    b, t, r = feature.shape[0], feature.shape[1], codes.shape[1]
    node = np.zeros((b, t, r), np.int64)
    rows = np.broadcast_to(codes[:, None], (b, t, r, codes.shape[2]))
    while True:
        inside = node < n_internal
        if not inside.any():
            return node - n_internal
        safe = np.minimum(node, n_internal - 1)
        f = np.take_along_axis(feature, safe, axis=2)
        th = np.take_along_axis(threshold, safe, axis=2)
        code = np.take_along_axis(rows, f[..., None].astype(np.int64), axis=3)[..., 0]
        node = np.where(inside, 2 * node + 1 + (code.astype(np.int64) > th), node)


# ------------------------------------------------------------------------------------------
# 0. The neighbouring relations and the absent-record representation
# ------------------------------------------------------------------------------------------


def test_replace_one_doubles_the_count_sensitivities():
    """The api's neighbouring relations: count sensitivity 1 under add/remove-one and 2 under
    replace-one (random-trees spec A2, Mα spec §4.1); every fit gets it as ``sensitivity``."""
    assert api.SENSITIVITY == {"add_remove": 1.0, "replace_one": 2.0}


@pytest.mark.parametrize("fixed_point", [False, True], ids=["float", "fixed-point"])
def test_absent_rows_are_removed_rows(fixed_point):
    """A zero-weight row gives exactly the histograms and leaf sums of the dataset without it
    (the representation of "D" used by the weighted-sum tests below), for the float class
    statistics and for the int32 fixed-point ones of a private tree."""
    rng = np.random.default_rng(0)
    m = 23
    codes = rng.integers(0, 5, (m + 1, 3)).astype(np.uint8)
    node = rng.integers(0, 4, m + 1).astype(np.int32)
    weights = rng.uniform(0, 1, m + 1).astype(np.float32)
    y = rng.integers(0, 2, m + 1)
    weights[-1] = 0.0

    def sums(codes, node, weights, y):
        stats = class_stats(weights, y, fixed_point=fixed_point)
        assert stats.dtype == (jnp.int32 if fixed_point else jnp.float32)
        return node_histogram(codes, node, stats, 4, 5), leaf_stats(node, stats, 4)

    with_row = sums(codes, node, weights, y)
    without_row = sums(codes[:-1], node[:-1], weights[:-1], y[:-1])
    for a, b in zip(with_row, without_row, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


# ------------------------------------------------------------------------------------------
# 1–2. Random trees (Bojarski et al.) and RF-L / RF-E (Nock & Henecka §6.5)
# ------------------------------------------------------------------------------------------

RF_TREES, RF_DEPTH, RF_CLASSES, RF_ROWS, RF_CASES = 4, 3, 3, 24, 300
RF_CODES = np.array([10, 10, 10], np.int32)


def _forest_neighbours(seed: int, n_cases: int):
    """Codes and labels ``[3, B, R + 1, ...]`` of ``(D, D_add, D_rep)``. The last row is
    ``D_add``'s extra record; in ``D`` and ``D_rep`` its label is out of range, so it is absent.
    ``D_rep`` replaces one record of ``D``."""
    rng = np.random.default_rng(seed)
    high = rng.choice([2, 10], size=(n_cases, 1, 1))        # narrow codes crowd the leaves
    codes = (rng.integers(0, 10, (n_cases, RF_ROWS + 1, 3)) % high).astype(np.uint8)
    y = rng.integers(0, RF_CLASSES, (n_cases, RF_ROWS + 1))
    pure = rng.uniform(size=n_cases) < 0.3
    y[pure, :-1] = 0
    y_base = y.copy()
    y_base[:, -1] = RF_CLASSES
    codes_rep, y_rep = codes.copy(), y_base.copy()
    cases, row = np.arange(n_cases), rng.integers(0, RF_ROWS, n_cases)
    codes_rep[cases, row] = rng.integers(0, 10, (n_cases, 3)) % high[:, 0]
    y_rep[cases, row] = rng.integers(0, RF_CLASSES, n_cases)
    return np.stack([codes, codes, codes_rep]), np.stack([y_base, y, y_rep]).astype(np.int32)


def _forest_fit(noise: str, composition: str, sensitivity: float = 1.0):
    def fit(key, codes, y):
        forest, _ = random_trees.fit_random_trees(
            key, codes, y, jnp.float32(1.0), n_trees=RF_TREES, depth=RF_DEPTH,
            n_codes_per_feature=RF_CODES, n_classes=RF_CLASSES, sensitivity=sensitivity,
            noise=noise, leaf_estimate="label", leaf_composition=composition)
        return forest.feature, forest.threshold
    return fit


@functools.cache
def _forest_run(noise: str, composition: str):
    """The recorded pre-noise leaf counts of ``(D, D_add, D_rep)`` for ``RF_CASES`` random
    forests, each case with its own structure key (shared by its three variants)."""
    codes, y = _forest_neighbours(1 + len(noise) + len(composition), RF_CASES)
    keys = jax.random.split(jax.random.key(11), RF_CASES)
    keys = jnp.concatenate([keys] * 3)
    (feature, threshold), meta, arrays = _recorded(
        _forest_fit(noise, composition), keys, codes.reshape(-1, *codes.shape[2:]),
        y.reshape(-1, y.shape[-1]))
    assert [m["kind"] for m in meta if m["kind"] != "parallel"] == [
        "laplace" if noise == "laplace" else "select"]
    record = arrays[[m["kind"] for m in meta].index(
        "laplace" if noise == "laplace" else "select")]
    return {"codes": codes, "y": y, "feature": _split(feature, 3), "threshold":
            _split(threshold, 3), "record": _split(record, 3), "meta": meta}


def _np_counts(run: dict, variant: int, drop_last: bool) -> np.ndarray:
    """numpy leaf class counts ``[B, T, 2**d, C]`` of a variant, its absent rows *removed*."""
    codes, y = run["codes"][variant], run["y"][variant]
    if drop_last:
        codes, y = codes[:, :-1], y[:, :-1]
    leaves = _np_leaves(run["feature"][variant], run["threshold"][variant], codes)
    b, t, r = leaves.shape
    counts = np.zeros((b, t, 2**RF_DEPTH, RF_CLASSES + 1))
    np.add.at(counts, (np.arange(b)[:, None, None], np.arange(t)[None, :, None], leaves,
                       np.broadcast_to(y[:, None, :], (b, t, r))), 1.0)
    return counts[..., :RF_CLASSES]


@pytest.mark.parametrize("composition", ["tree", "leaf"])
def test_random_tree_leaf_counts(composition):
    """Random trees / RF-L (Bojarski et al. Alg. 2, §3.1; spec A2; Nock & Henecka §6.5): the
    leaf class counts ``[2**d, C]`` of a data-independent tree. Assumed L1 sensitivity of a
    tree's array (``"tree"``) or of one leaf's counts (``"leaf"``): 1 add/remove, 2 replace."""
    run = _forest_run("laplace", composition)
    (meta,) = run["meta"]
    assert meta["integer"] and meta["sensitivity"] == 1.0
    assert meta["event_ndim"] == (2 if composition == "tree" else 1)
    # the structures read no data: every variant of a case has the same trees
    for v in (1, 2):
        np.testing.assert_array_equal(run["feature"][v], run["feature"][0])
        np.testing.assert_array_equal(run["threshold"][v], run["threshold"][0])
    counts = [r["value"] for r in run["record"]]
    sensitivity = run["record"][0]["sensitivity"]
    # the recorded statistic is the leaf counts, and an absent row is a removed row
    np.testing.assert_array_equal(counts[0], _np_counts(run, 0, drop_last=True))
    np.testing.assert_array_equal(counts[1], _np_counts(run, 1, drop_last=False))
    np.testing.assert_array_equal(counts[2], _np_counts(run, 2, drop_last=True))
    event_axes = (-2, -1) if composition == "tree" else (-1,)
    add = np.abs(counts[1] - counts[0]).sum(event_axes)
    replace = np.abs(counts[2] - counts[0]).sum(event_axes)
    s = _expand(sensitivity, add.ndim)
    ratio_add = _assert_within(f"RF counts ({composition}) {ADD}", add, s, exact=True)
    ratio_rep = _assert_within(f"RF counts ({composition}) {REPLACE}", replace, 2 * s,
                               exact=True)
    assert ratio_add == 1.0 and ratio_rep == 1.0      # attained: the bounds are tight
    # under replace-one the fit is given sensitivity 2 and passes it on unchanged
    codes, y = run["codes"][0][0], run["y"][0][0]
    traced = _traced_meta(_forest_fit("laplace", composition, 2.0), jax.random.key(0), codes, y)
    assert [m["sensitivity"] for m in traced if m["kind"] == "laplace"] == [2.0]


@pytest.mark.parametrize("composition", ["tree", "leaf"])
def test_rf_exponential_leaf_label_utilities(composition):
    """RF-E (Nock & Henecka §6.5): a leaf's label is selected with utility = class count.
    Assumed per-candidate sensitivity 1 under both relations. A record reaches one leaf per tree
    under add/remove and at most two under replace-one. With ``"tree"`` composition the code
    then splits the tree's budget over ``touched = 2`` leaves (``parallel(touched=2)``)."""
    run = _forest_run("exponential", composition)
    select = [m for m in run["meta"] if m["kind"] == "select"]
    assert len(select) == 1
    utility = [r["utility"] for r in run["record"]]
    s = _expand(run["record"][0]["sensitivity"], utility[0].ndim)
    np.testing.assert_array_equal(s, 1.0)
    np.testing.assert_array_equal(utility[0], _np_counts(run, 0, drop_last=True))
    for name, other in ((ADD, utility[1]), (REPLACE, utility[2])):
        change = np.abs(other - utility[0])
        _assert_within(f"RF-E leaf utilities ({composition}) {name}", change, s, exact=True)
    touched_add = (np.abs(utility[1] - utility[0]).sum(-1) > 0).sum(-1)   # leaves per tree
    touched_rep = (np.abs(utility[2] - utility[0]).sum(-1) > 0).sum(-1)
    assert touched_add.max() == 1 and touched_rep.max() == 2
    # what the code assumes (traced with the api's replace-one sensitivity 2)
    codes, y = run["codes"][0][0], run["y"][0][0]
    for sensitivity, touched in ((1.0, 1), (2.0, 2)):
        traced = _traced_meta(_forest_fit("exponential", composition, sensitivity),
                              jax.random.key(0), codes, y)
        parallel = [m["touched"] for m in traced if m["kind"] == "parallel"]
        # "tree": the leaves of a tree are one parallel release, reached `touched` times;
        # "leaf": every leaf is its own sequential release (eps / (k 2^d)), no parallel step
        assert parallel == ([touched] if composition == "tree" else [])


# ------------------------------------------------------------------------------------------
# 3–4, 7. The Mα split criterion, the O.C level errors, β_t: direct property tests
# ------------------------------------------------------------------------------------------

N_CODES = np.array([6, 4, 5], np.int32)
N_CODE_MAX, NODES = int(N_CODES.max()), 4
DIRECT_ROWS, DIRECT_CASES = 34, 1500            # 32 records + the two neighbour slots
CLAMP, ZETA, WEIGHT_FLOOR = 4.0, 1e-4, 1e-6


def _weighted_neighbours(seed: int, n_cases: int, rows: int, n_groups: int):
    """Random weighted datasets and their neighbours, as arrays ``[B, rows]``.

    ``rows − 2`` base records (some absent: weight 0) and two slots. Row ``-2`` is the record
    ``a`` that ``D_add`` adds, row ``-1`` the record ``b`` that replaces it in ``D_rep``. So
    ``(D, D_add)`` are add/remove neighbours and ``(D_add, D_rep)`` replace-one neighbours.
    Raw weights (clipped to ``[0, 1]`` by :func:`class_stats`) come in regimes: uniform, all 1,
    0/1, tiny, out of range, and "pure" (one class of weight 1 plus a record of the other
    class of weight 1, the case that attains the criterion's bound). Also returned: each case's
    α (in ``[0, 1]``, endpoints included), public size ``ñ`` (from 1 to 10 m, so both above
    and below the record count ``m`` of ``D``) and ``m``.
    """
    rng = np.random.default_rng(seed)
    base = rows - 2
    codes = (rng.integers(0, 1000, (n_cases, rows, len(N_CODES))) % N_CODES).astype(np.uint8)
    group = rng.integers(0, n_groups, (n_cases, rows))
    one_group = rng.uniform(size=n_cases) < 0.2
    group[one_group] = 0
    y = rng.integers(0, 2, (n_cases, rows))
    regime = rng.integers(0, 6, n_cases)
    weights = rng.uniform(0, 1, (n_cases, rows))
    weights = np.where((regime == 1)[:, None], 1.0, weights)
    weights = np.where((regime == 2)[:, None], rng.integers(0, 2, (n_cases, rows)), weights)
    weights = np.where((regime == 3)[:, None], 10.0 ** rng.uniform(-6, -3, (n_cases, rows)),
                       weights)
    weights = np.where((regime == 4)[:, None], rng.uniform(-0.5, 1.5, (n_cases, rows)), weights)
    pure = regime == 5
    weights[pure] = 1.0
    y[pure, :base] = rng.integers(0, 2, pure.sum())[:, None]
    y[pure, base:] = 1 - y[pure, :1]
    # the neighbours' extra records: any weight in [0, 1] (0 and 1 included) and any label
    slot_weight = rng.choice([0.0, 1.0, 1.0, -1.0], size=(n_cases, 2))
    slot_weight = np.where(slot_weight < 0, rng.uniform(0, 1, (n_cases, 2)), slot_weight)
    weights[:, base:] = np.where(pure[:, None], 1.0, slot_weight)
    present = rng.uniform(size=(n_cases, base)) < rng.choice([1.0, 0.7, 0.3], (n_cases, 1))
    present[pure] = True
    weights[:, :base] = np.where(present, weights[:, :base], 0.0)
    m = present.sum(1)
    d, d_add, d_rep = weights.copy(), weights.copy(), weights.copy()
    d[:, base:] = 0.0
    d_add[:, base + 1] = 0.0
    d_rep[:, base] = 0.0
    alpha = rng.uniform(0, 1, n_cases)
    alpha = np.where(rng.uniform(size=n_cases) < 0.2, 1.0, alpha)
    alpha = np.where(rng.uniform(size=n_cases) < 0.1, 0.0, alpha)
    factor = rng.choice([0.0, 0.05, 0.25, 0.5, 1.0, 2.0, 10.0], n_cases)
    size = np.maximum(np.round(factor * m), 1.0)
    return {"codes": codes, "group": group.astype(np.int32), "y": y.astype(np.int32),
            "weights": np.stack([d, d_add, d_rep]).astype(np.float32),
            "alpha": alpha.astype(np.float32), "size": size.astype(np.float32), "m": m}


@functools.cache
def _direct_run():
    """Split criteria (clamped and not), node errors, leaf values and ``β`` of every case and
    variant: one compiled program."""
    data = _weighted_neighbours(7, DIRECT_CASES, DIRECT_ROWS, NODES)
    rng = np.random.default_rng(8)
    # fixed (released) leaf values h in [−M, M] for β, with ±M well represented
    h = rng.choice([-CLAMP, CLAMP, 0.0, np.nan], (DIRECT_CASES, NODES))
    h = np.where(np.isnan(h), rng.uniform(-CLAMP, CLAMP, h.shape), h).astype(np.float32)

    def statistics(codes, group, weights, y, alpha, size, h):
        stats = class_stats(weights, y)
        left, right = split_stats(node_histogram(codes, group, stats, NODES, N_CODE_MAX))
        node_sums = left[:, 0, -1, :]            # as grow_malpha_tree reads a level's nodes
        a = alpha / CLAMP**2
        values = jnp.clip(leaf_link(node_sums, alpha, ZETA), -CLAMP, CLAMP)
        # under DP the O.C errors are read from fixed-point (int32) histograms
        fixed = class_stats(weights, y, fixed_point=True)
        fixed_sums = split_stats(node_histogram(codes, group, fixed, NODES, N_CODE_MAX))[0]
        fixed_sums = fixed_sums[:, 0, -1, :]
        return {
            "crit": clamped_split_risk(left, right, alpha, size),
            "unclamped": split_risk(left, right, alpha),
            "fixed_sums": fixed_sums,
            "error": weighted_error(fixed_sums),
            "beta": leveraging_coefficient(h, node_sums, a, size),
            "folded": leveraging_coefficient(values, node_sums, a, size) * values,
            "weight": stats.sum(),
        }

    n = DIRECT_CASES
    tile = functools.partial(np.concatenate, axis=0)
    out = jax.jit(jax.vmap(statistics))(
        tile([data["codes"]] * 3), tile([data["group"]] * 3),
        data["weights"].reshape(3 * n, -1), tile([data["y"]] * 3), tile([data["alpha"]] * 3),
        tile([data["size"]] * 3), tile([h] * 3))
    out = _split(jax.tree.map(np.asarray, out), 3)
    valid = np.asarray(valid_thresholds(N_CODES, N_CODE_MAX))
    return data, h, out, valid


def test_malpha_split_criterion_clamped_to_public_size():
    """Mα split criterion (Nock & Henecka; Mα spec §2.2, §1.7, Cor. 7). The utility of every
    candidate split is ``−crit_α``, from ``clamped_split_risk(left, right, α, ñ)`` on weighted
    class sums. The assumed sensitivity ``Δ^(α)(ñ) = 3 + 2α(√ñ − 1)`` (add/remove, doubled
    under replace-one, §4.1) must hold for any record count ``m``, ñ both above and below it,
    α in [0, 1], and an extra record of any weight in [0, 1] and either label."""
    data, _, out, valid = _direct_run()
    delta = np.asarray(split_sensitivity(data["size"], data["alpha"]), np.float64)
    delta = delta[:, None, None, None]
    crit = [o["crit"] for o in out]
    for name, (a, b), factor in ((ADD, (0, 1), 1.0), (REPLACE, (1, 2), 2.0)):
        change = np.abs(crit[b] - crit[a])[:, :, valid]
        scale = (np.abs(crit[a]) + np.abs(crit[b]))[:, :, valid]
        _assert_within(f"Mα clamped split criterion {name}", change,
                       factor * delta[:, :, 0], scale)
    # ñ below m (clamping) and the Matsushita end (α = 1) are among the cases
    assert np.any(data["size"] < data["m"] / 2) and np.any(data["size"] > data["m"])
    assert np.any(data["alpha"] == 1.0) and np.any(data["alpha"] == 0.0)


def test_malpha_split_criterion_unclamped_with_m_at_most_public_size():
    """The unclamped ``split_risk`` (Mα spec §2.2, Cor. 7 with the record count ``m`` of the
    smaller neighbour): change ``<= Δ^(α)(m)`` add/remove and ``2·Δ^(α)(m)`` replace-one. Where
    no class sum exceeds ñ the clamped criterion is this one, exactly."""
    data, _, out, valid = _direct_run()
    m = data["m"].astype(np.float32)
    delta = np.asarray(split_sensitivity(m, data["alpha"]), np.float64)[:, None, None]
    risk = [o["unclamped"] for o in out]
    for name, (a, b), factor in ((ADD, (0, 1), 1.0), (REPLACE, (1, 2), 2.0)):
        change = np.abs(risk[b] - risk[a])[:, :, valid]
        scale = (np.abs(risk[a]) + np.abs(risk[b]))[:, :, valid]
        _assert_within(f"Mα split criterion, unclamped, Δ(m) {name}", change,
                       factor * delta, scale)
    big = data["size"] >= data["m"] + 1          # every class sum <= m + 1 <= ñ
    assert big.sum() > 100
    for o in out:
        np.testing.assert_array_equal(o["crit"][big], o["unclamped"][big])


def test_oc_level_weighted_errors():
    """O.C level errors (Mα spec §5.1, §5.3): ``E = Σ_nodes min(w−, w+)`` of a level's nodes.
    Under DP the node sums are int32 fixed-point sums (exactly the numpy int64 reference), and
    ``E`` is released with sensitivity ``WEIGHT_UNIT`` (add/remove) and ``2·WEIGHT_UNIT``
    (replace-one), one or two weights of at most 1. Compared exactly, and attained."""
    data, _, out, _ = _direct_run()
    for o, weights in zip(out, data["weights"], strict=True):
        assert o["fixed_sums"].dtype == np.int32 and o["error"].dtype == np.int32
        np.testing.assert_array_equal(o["fixed_sums"], _np_class_sums(
            weights, data["y"], data["group"], NODES))
    error = [o["error"].astype(np.int64) for o in out]
    for name, (a, b), s in ((ADD, (0, 1), WEIGHT_UNIT), (REPLACE, (1, 2), 2 * WEIGHT_UNIT)):
        ratio = _assert_within(f"O.C level error (fixed-point) {name}",
                               np.abs(error[b] - error[a]), s, exact=True)
        assert ratio == 1.0 or name == REPLACE


def test_leveraging_coefficient_beta_laplace_mode():
    """``β̃_t`` (Mα spec §4.5, paper (142), ``beta_mode="laplace"``): ``β = (a/ñ)·Σ_λ h(λ)·(w⁺(λ)
    − w⁻(λ))`` with the released leaf values ``h ∈ [−M, M]`` fixed and ``a = α/M²``. Assumed
    sensitivity ``2aM/ñ`` under both relations: one record changes its own term."""
    data, h, out, _ = _direct_run()
    a = data["alpha"].astype(np.float64) / CLAMP**2
    s = 2 * a * CLAMP / data["size"]
    beta = [o["beta"] for o in out]
    for name, (x, y) in ((ADD, (0, 1)), (REPLACE, (1, 2))):
        _assert_within(f"β_t (laplace mode) {name}", np.abs(beta[y] - beta[x]), s,
                       np.abs(beta[x]) + np.abs(beta[y]))
    assert np.all(np.abs(h) <= CLAMP)


def test_folded_leaf_values_are_clipped_to_alpha_link():
    """``"value"`` + ``"fold"`` leaves (Mα spec §4.5): the release is ``clip(β·h, ±α_LC)``
    (``laplace_mechanism``'s bound), of assumed range ``2·α_LC`` for any data and any public
    size. Unclipped, ``|β·h| <= α_LC·w(S)/ñ``: within ``α_LC`` when ``ñ >= m`` and beyond it
    for some data when ñ is below m, which is why the clip is needed."""
    data, _, out, _ = _direct_run()
    alpha = data["alpha"].astype(np.float64)[:, None]
    for o in out:
        folded = o["folded"].astype(np.float64)
        limit = alpha * (o["weight"][:, None] / data["size"][:, None])
        _assert_within("folded leaf value |β·h| vs α_LC·w(S)/ñ", np.abs(folded), limit,
                       np.abs(folded))
        released = np.clip(folded, -alpha, alpha)
        assert np.all(np.abs(released) <= alpha)
    beyond = np.abs(out[1]["folded"]) > alpha * (1 + REL)
    assert beyond.any() and np.all(data["size"][beyond.any(1)] < data["m"][beyond.any(1)] + 1)


# ------------------------------------------------------------------------------------------
# 3–8. End to end: a private Mα tree and its leaf releases, mechanisms recorded
# ------------------------------------------------------------------------------------------

TREE_DEPTH, TREE_ROWS, TREE_CASES = 3, 42, 300
LEAF_MODES = (("counts", "post"), ("counts", "laplace"), ("value", "fold"), ("value", "laplace"))


def _tree_and_leaves(multiplier: float):
    """One private Mα tree (O.C private, or a fixed α) and the four leaf release modes of
    ``release_leaves``. The counts modes use ``"parallel"`` leaf composition."""
    def fit(key, codes, weights, y, alpha, size):
        k_tree, k_leaves = jax.random.split(key)
        grown, _ = grow_malpha_tree(
            k_tree, codes, weights, y, TREE_DEPTH, N_CODES, alpha, jnp.float32(1.0),
            size=size, oc_alpha="private", epsilon_oc=jnp.float32(0.5),
            sensitivity_multiplier=multiplier)
        for i, (leaf_mechanism, beta_mode) in enumerate(LEAF_MODES):
            _recorder_tag(f"{leaf_mechanism}/{beta_mode}")
            release_leaves(
                jax.random.fold_in(k_leaves, i), grown.leaf_stats, link_alpha(alpha),
                clamp=CLAMP, zeta=ZETA, epsilon_leaf=jnp.float32(0.25),
                epsilon_beta=jnp.float32(0.25), sensitivity=multiplier, size=size,
                leaf_mechanism=leaf_mechanism, beta_mode=beta_mode,
                leaf_composition="parallel" if leaf_mechanism == "counts" else "sequential")
        _recorder_tag("")
        return grown.feature, grown.threshold, grown.example_leaf, grown.leaf_stats
    return fit


def _recorder_tag(tag: str) -> None:
    """Tag the following mechanism calls of the installed recorder."""
    Recorder.current.tag = tag


@functools.cache
def _tree_run():
    """Recorded releases of ``(D, D_add)`` under the add/remove program (multiplier 1) and of
    ``(D_add, D_rep)`` under the replace-one program (multiplier 2)."""
    data = _weighted_neighbours(21, TREE_CASES, TREE_ROWS, 1)
    rng = np.random.default_rng(22)
    alpha = np.where(rng.uniform(size=TREE_CASES) < 0.3, -1.0, data["alpha"])   # −1: O.C
    alpha = np.where(alpha == 0.0, 0.05, alpha).astype(np.float32)   # the learner needs α > 0
    keys = jax.random.split(jax.random.key(5), TREE_CASES)
    runs = {}

    def stack(x):
        return np.concatenate([x, x])

    for name, multiplier, variants in ((ADD, 1.0, (0, 1)), (REPLACE, 2.0, (1, 2))):
        weights = np.concatenate([data["weights"][v] for v in variants])
        out, meta, arrays = _recorded(
            _tree_and_leaves(multiplier), jnp.concatenate([keys, keys]), stack(data["codes"]),
            weights, stack(data["y"]), stack(alpha), stack(data["size"]))
        runs[name] = {"out": _split(out, 2), "meta": meta, "records": _split(arrays, 2)}
    return data, alpha, runs


def _check_laplace(name: str, meta: dict, first: dict, second: dict, factor: float = 1.0,
                   whole_tree: bool = False) -> None:
    """A recorded ``laplace_mechanism`` call on neighbours: the pre-noise value (what is put on
    the grid) moves by at most its sensitivity in L1 per release, and its grid values by at
    most the integer sensitivity the mechanism calibrates the noise to. With ``whole_tree`` the
    check covers the tree's whole array: the releases are parallel (disjoint leaves), so the
    one record's change across all of them must fit one release's sensitivity.

    * real values (``integer=False``): clipped to ``±B``, compared up to ``REL``; grid values
      ``floor(v/g)``, integer sensitivity ``ceil(Δ/g) + (coordinates − 1)``, exactly;
    * integer statistics (``integer=True``): int32, not clipped, compared *exactly*; grid
      values ``v >> k`` (step ``2**k`` from the bound, :func:`_integer_grid_shift`), integer
      sensitivity ``ceil(Δ/2**k)``, exactly.
    """
    s = first["sensitivity"].astype(np.float64)
    np.testing.assert_array_equal(s, second["sensitivity"])
    bound = first["bound"]
    value_ndim = first["value"].ndim
    event_axes = tuple(range(value_ndim - meta["event_ndim"], value_ndim))
    if whole_tree:
        event_axes = tuple(range(1, value_ndim))
    if meta["integer"]:
        _check_integer_laplace(name, first, second, s, factor, event_axes)
        return
    pre = [np.clip(r["value"], -_expand(bound, value_ndim), _expand(bound, value_ndim))
           for r in (first, second)]
    coordinates = int(np.prod([first["value"].shape[i] for i in
                               range(value_ndim - meta["event_ndim"], value_ndim)]))
    change = np.abs(pre[1].astype(np.float64) - pre[0]).sum(event_axes)
    scale = (np.abs(pre[0]) + np.abs(pre[1])).sum(event_axes)
    s_block = _expand(s, change.ndim) if s.ndim <= change.ndim else s
    _assert_within(name, change, factor * s_block, scale)
    positive = s > 0
    step = np.asarray(grid_step(first["sensitivity"], first["epsilon"], bound), np.float64)
    step = np.where(positive, step, 1.0)
    ints = [_grid_ints(p, _expand(step, value_ndim)) for p in pre]
    int_change = np.abs(ints[1] - ints[0]).sum(event_axes)
    int_sensitivity = np.ceil(np.float32(s) / np.float32(step)) + (coordinates - 1)
    int_sensitivity = np.where(positive, int_sensitivity, 0.0)
    _assert_within(name + " [grid integers]", int_change,
                   factor * _expand(int_sensitivity, int_change.ndim), exact=True)


def _check_integer_laplace(name: str, first: dict, second: dict, s: np.ndarray, factor: float,
                           event_axes: tuple[int, ...]) -> None:
    """The integer branch of :func:`_check_laplace`: exact int32 statistics, exact bounds."""
    values = [r["value"] for r in (first, second)]
    for v in values:
        assert v.dtype == np.int32, f"{name}: an integer release of a {v.dtype} statistic"
    values = [v.astype(np.int64) for v in values]
    change = np.abs(values[1] - values[0]).sum(event_axes)
    s_block = _expand(s, change.ndim)
    np.testing.assert_array_equal(s_block, np.round(s_block))        # integer sensitivities
    _assert_within(name, change, factor * s_block, exact=True)
    shift = _integer_grid_shift(first["sensitivity"], first["epsilon"], first["bound"])
    np.testing.assert_array_equal(
        shift, _integer_grid_shift(second["sensitivity"], second["epsilon"], second["bound"]))
    grid = [np.clip(np.right_shift(v, _expand(shift, v.ndim)), -MAX_GRID_VALUE, MAX_GRID_VALUE)
            for v in values]
    int_change = np.abs(grid[1] - grid[0]).sum(event_axes)
    coordinates = int(np.prod([values[0].shape[a] for a in event_axes], dtype=int))
    int_sensitivity = np.ceil(s / 2.0**shift) + np.where(shift > 0, coordinates - 1, 0)
    _assert_within(name + " [grid integers]", int_change,
                   factor * _expand(int_sensitivity, int_change.ndim), exact=True)


def test_private_malpha_tree_split_utilities_end_to_end():
    """The selections of a private Mα tree (``grow_malpha_tree``, Mα spec §4.3). At every
    level, given the same released splits (and O.C α's), every node's utility ``−crit_α`` moves
    by at most the sensitivity the code passes to the selection (``Δ^(α)(ñ)``,
    ``2·Δ^(α)(ñ)`` under replace-one)."""
    data, alpha, runs = _tree_run()
    for name, run in runs.items():
        for v in (0, 1):        # same releases, same structure
            np.testing.assert_array_equal(run["out"][v][0], run["out"][0][0])
            np.testing.assert_array_equal(run["out"][v][1], run["out"][0][1])
        selects = [i for i, m in enumerate(run["meta"]) if m["kind"] == "select"]
        assert len(selects) == TREE_DEPTH
        for level, i in enumerate(selects):
            first, second = (r[i] for r in run["records"])
            u0, u1 = first["utility"], second["utility"]
            np.testing.assert_array_equal(np.isfinite(u0), np.isfinite(u1))
            finite = np.isfinite(u0)
            change = np.abs(np.where(finite, u1, 0.0) - np.where(finite, u0, 0.0))
            scale = np.where(finite, np.abs(u0) + np.abs(u1), 0.0)
            s = first["sensitivity"][..., None]
            np.testing.assert_array_equal(s, second["sensitivity"][..., None])
            fixed = alpha >= 0
            multiplier = 1.0 if name == ADD else 2.0
            expected = multiplier * np.asarray(criterion_sensitivity(data["size"], alpha))
            np.testing.assert_allclose(s[fixed, :, 0], np.broadcast_to(
                expected[fixed, None], s[fixed, :, 0].shape), rtol=1e-6)
            _assert_within(f"Mα tree splits (level {level}) {name}", change, s, scale)


def test_private_malpha_tree_oc_level_errors_end_to_end():
    """The O.C level errors of a private Mα tree (Mα spec §5.3), given the same earlier
    releases. Under DP ``E_k`` is an exact int32 sum of fixed-point weights (units of
    ``2**−WEIGHT_BITS``): it must equal the numpy int64 reference on the released structure, and
    it is released with ``integer=True``, sensitivity one weight, ``WEIGHT_UNIT`` (add/remove)
    or ``2·WEIGHT_UNIT`` (replace-one), bound ``ñ·WEIGHT_UNIT``. Its change and its grid
    values' change are compared exactly."""
    data, _, runs = _tree_run()
    for name, run in runs.items():
        errors = [i for i, m in enumerate(run["meta"])
                  if m["kind"] == "laplace" and m["tag"] == ""]
        assert len(errors) == TREE_DEPTH                 # E_0 .. E_{d−1}, one per level
        multiplier = 1.0 if name == ADD else 2.0
        variants = (0, 1) if name == ADD else (1, 2)
        for level, i in enumerate(errors):
            assert run["meta"][i]["integer"] and run["meta"][i]["event_ndim"] == 0
            assert run["meta"][i]["sensitivity"] == multiplier * WEIGHT_UNIT
            first, second = (r[i] for r in run["records"])
            np.testing.assert_array_equal(first["sensitivity"], multiplier * WEIGHT_UNIT)
            np.testing.assert_array_equal(first["bound"], data["size"] * WEIGHT_UNIT)
            np.testing.assert_array_equal(_integer_grid_shift(
                first["sensitivity"], first["epsilon"], first["bound"]), 0)       # g = 1
            for record, v, out in zip((first, second), variants, run["out"], strict=True):
                node = _np_level_nodes(out[0], out[1], data["codes"], level)
                sums = _np_class_sums(data["weights"][v], data["y"], node, 2**level)
                assert record["value"].dtype == np.int32
                np.testing.assert_array_equal(record["value"], sums.min(-1).sum(-1))
            _check_laplace(f"O.C level error (tree, fixed-point) {name}", run["meta"][i], first,
                           second)


@pytest.mark.parametrize("mode", LEAF_MODES, ids="/".join)
def test_boosted_leaf_releases_end_to_end(mode):
    """The leaf releases of ``release_leaves`` (Mα spec §4.4–§4.5) on a private Mα tree's leaf
    sums, given the same released structure.

    * ``"counts"``: the weighted class sums ``[2]`` of each leaf, exact int32 fixed-point sums
      (``GrownTree.leaf_stats``, equal to the numpy int64 reference), released with
      ``integer=True``, L1 sensitivity one / two weights (``WEIGHT_UNIT`` / ``2·WEIGHT_UNIT``),
      bound ``ñ·WEIGHT_UNIT``; compared exactly. Released in parallel (``"parallel"``): the
      whole tree's ``[2**d, 2]`` array moves by at most that, and its grid values by at most
      one leaf's integer sensitivity.
    * ``"value"``: leaf values ``clip(ψ(q), ±M)``, or ``clip(β·h, ±α_LC)`` when folded; range
      sensitivity ``2M`` / ``2α_LC`` for any data (no multiplier).
    * ``β̃`` (``"laplace"``): ``(a/ñ)·Σ_λ h(λ)(w⁺ − w⁻)`` with the released ``h``,
      sensitivity ``2aM/ñ``.
    """
    data, alpha, runs = _tree_run()
    tag = "/".join(mode)
    alpha_link = np.where(alpha < 0, 1.0, alpha)
    for name, run in runs.items():
        calls = [i for i, m in enumerate(run["meta"]) if m["tag"] == tag]
        kinds = [run["meta"][i]["kind"] for i in calls]
        parallel = [i for i in calls if run["meta"][i]["kind"] == "parallel"]
        assert len(parallel) == (1 if mode[0] == "counts" else 0)
        laplace = [i for i in calls if run["meta"][i]["kind"] == "laplace"]
        assert len(laplace) == (2 if mode[1] == "laplace" else 1), kinds
        leaf_call, beta_call = laplace[0], (laplace[1] if len(laplace) > 1 else None)
        meta = run["meta"][leaf_call]
        first, second = (r[leaf_call] for r in run["records"])
        s = first["sensitivity"]
        if mode[0] == "counts":
            # int32 fixed-point leaf sums, exactly the grown tree's, sensitivity in units
            multiplier = 1.0 if name == ADD else 2.0
            assert meta["integer"] and meta["sensitivity"] == multiplier * WEIGHT_UNIT
            np.testing.assert_array_equal(s, multiplier * WEIGHT_UNIT)
            np.testing.assert_array_equal(first["bound"], data["size"] * WEIGHT_UNIT)
            variants = (0, 1) if name == ADD else (1, 2)
            for record, v, out in zip((first, second), variants, run["out"], strict=True):
                leaf = _np_level_nodes(out[0], out[1], data["codes"], TREE_DEPTH)
                np.testing.assert_array_equal(out[2], leaf)
                assert record["value"].dtype == np.int32
                np.testing.assert_array_equal(record["value"], out[3])
                np.testing.assert_array_equal(record["value"], _np_class_sums(
                    data["weights"][v], data["y"], leaf, 2**TREE_DEPTH))
            assert meta["event_ndim"] == 1
            _check_laplace(f"boosted counts leaf {name}", meta, first, second)
            _check_laplace(f"boosted counts whole tree (parallel) {name}", meta, first, second,
                           whole_tree=True)
        else:
            bound = first["bound"]
            if mode[1] == "fold":
                np.testing.assert_allclose(bound, alpha_link, rtol=1e-7)
            else:
                np.testing.assert_array_equal(bound, CLAMP)
            np.testing.assert_allclose(s, 2 * bound, rtol=1e-7)     # the range of the clip
            assert meta["event_ndim"] == 0
            _check_laplace(f"boosted {tag} leaf value {name}", meta, first, second)
        if beta_call is not None:
            first, second = (r[beta_call] for r in run["records"])
            a = alpha_link / CLAMP**2
            np.testing.assert_allclose(
                first["sensitivity"],
                2 * a * CLAMP / data["size"] + 2 * beta_rounding(a, CLAMP, 2**TREE_DEPTH),
                rtol=1e-6)
            _check_laplace(f"boosted β̃ ({tag}) {name}", run["meta"][beta_call], first,
                           second)


# ------------------------------------------------------------------------------------------
# 8, and the adaptive weights of boosting
# ------------------------------------------------------------------------------------------

BOOST_ROWS, BOOST_TREES, BOOST_DEPTH = 60, 3, 2


def _boost_data():
    rng = np.random.default_rng(31)
    codes = (rng.integers(0, 1000, (BOOST_ROWS, 3)) % N_CODES).astype(np.uint8)
    y = ((codes[:, 0] > 2) ^ (rng.uniform(size=BOOST_ROWS) < 0.1)).astype(np.int32)
    return codes, y


class _Released(Exception):
    """Stops a fit right after the release being looked at."""


def test_noisy_row_count():
    """The noisy row count (Mα spec §4.1, released when the size is private): the value is
    the row count, with sensitivity 1 under add/remove. There is no count under replace-one,
    where the size is public."""
    codes, y = _boost_data()
    fit = functools.partial(fit_boosted, n_trees=1, depth=1, n_codes_per_feature=N_CODES)
    counts = []

    def first_release(key, value, sensitivity, epsilon, **kwargs):
        counts.append((float(value), sensitivity, kwargs.get("integer")))
        raise _Released

    for rows in (BOOST_ROWS - 1, BOOST_ROWS):      # eager: the count is the first release
        with pytest.MonkeyPatch.context() as patch, pytest.raises(_Released):
            patch.setattr(boosted, "laplace_mechanism", first_release)
            fit(jax.random.key(0), codes[:rows], y[:rows], 1.0)
    assert counts == [(BOOST_ROWS - 1, 1.0, True), (BOOST_ROWS, 1.0, True)]
    _assert_within(f"noisy row count {ADD}", abs(counts[1][0] - counts[0][0]), 1.0, exact=True)
    meta = _traced_meta(lambda c, t: fit(jax.random.key(0), c, t, 1.0, size=float(BOOST_ROWS),
                                         sensitivity=2.0), codes, y)
    assert meta and not [m for m in meta if m["kind"] == "laplace" and m["integer"]]


@pytest.mark.parametrize("mode", [("value", "fold", -1.0), ("counts", "laplace", 0.6)],
                         ids=["value-fold-oc", "counts-laplace"])
def test_boosting_weights_depend_only_on_the_released_model(mode):
    """Adaptive composition (Mα spec §3, §4.1): the weights of round ``t`` are
    ``clip(ψ⁻¹(−y·H_{t−1}), ζ', 1 − ζ')`` with ``H`` built from the *released* trees. Then a
    record's weight is a function of the earlier releases and of that record alone, and the
    per-round sensitivities above hold given the releases. The releases here come from the
    key alone (recorded mechanisms), so any use of a pre-noise value would show up as a
    mismatch."""
    leaf_mechanism, beta_mode, alpha = mode
    codes, y = _boost_data()
    weights: list[np.ndarray] = []
    real_grow = boosted.grow_malpha_tree

    def grow(key, codes, round_weights, *args, **kwargs):
        jax.debug.callback(lambda w: weights.append(np.asarray(w)), round_weights,
                           ordered=True)
        return real_grow(key, codes, round_weights, *args, **kwargs)

    def fit(key):
        return fit_boosted(key, codes, y, jnp.float32(2.0), alpha=alpha, n_trees=BOOST_TREES,
                           depth=BOOST_DEPTH, n_codes_per_feature=N_CODES, clamp=CLAMP,
                           leaf_mechanism=leaf_mechanism, beta_mode=beta_mode)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boosted, "grow_malpha_tree", grow)
        (model, _), _, _ = _recorded(fit, jax.random.key(4), vmap=False, keep_arrays=False)
        jax.effects_barrier()
    assert len(weights) == BOOST_TREES
    alpha_link = 1.0 if alpha < 0 else alpha
    sign = 2.0 * y - 1.0
    margin = np.zeros(BOOST_ROWS)
    beta = np.asarray(model.beta, np.float64)
    assert np.any(beta != 0.0)
    for t in range(BOOST_TREES):
        expected = np.clip(np.asarray(inverse_link(jnp.asarray(-sign * margin, jnp.float32),
                                                   alpha_link), np.float64),
                           WEIGHT_FLOOR, 1 - WEIGHT_FLOOR)
        np.testing.assert_allclose(weights[t], expected, rtol=1e-5, atol=1e-6)
        leaf = np.asarray(leaf_index(model.trees.feature[t], model.trees.threshold[t], codes))
        margin = margin + beta[t] * np.asarray(model.trees.leaf[t], np.float64)[leaf]
    assert np.ptp(weights[-1]) > 1e-3     # the released model did move the weights


# ------------------------------------------------------------------------------------------
# 9. The grid release of laplace_mechanism
# ------------------------------------------------------------------------------------------

GRID_CASES, GRID_MAX_K = 20000, 8


def _grid_cases(seed: int, per_element: bool):
    """Random ``(v, v', Δ, ε, B, k)`` with ``||v − v'||_1 <= Δ`` (or ``|v_i − v'_i| <= Δ`` for
    every ``i`` with ``per_element``). Exact in float32, checked in float64. Half the cases sit
    ``v`` just below a grid point and move it up (the worst case for the floors). Some values
    lie beyond ``±B`` and are clipped."""
    rng = np.random.default_rng(seed)
    n = GRID_CASES
    delta = 2.0 ** rng.uniform(-12, 8, n)
    kind = rng.integers(0, 3, n)
    delta = np.where(kind == 1, 2.0 ** rng.integers(-12, 8, n), delta)            # powers of 2
    delta = np.where(kind == 2, rng.integers(1, 40, n), delta)                     # integers
    delta = delta.astype(np.float32)
    epsilon = (2.0 ** rng.uniform(-16, 6, n)).astype(np.float32)
    bound = (delta * 2.0 ** rng.uniform(-3, 34, n)).astype(np.float32)
    step = np.asarray(grid_step(delta, epsilon, bound), np.float64)
    k = rng.integers(1, GRID_MAX_K + 1, n)
    active = np.arange(GRID_MAX_K)[None, :] < k[:, None]
    d = delta[:, None].astype(np.float64)
    if per_element:
        move = d * rng.choice([1.0, -1.0], (n, GRID_MAX_K)) * np.where(
            rng.uniform(size=(n, GRID_MAX_K)) < 0.5, 1.0, rng.uniform(0, 1, (n, GRID_MAX_K)))
    else:
        share = rng.dirichlet(np.ones(GRID_MAX_K), n) * active
        share /= share.sum(1, keepdims=True)
        fill = np.where(rng.uniform(size=(n, 1)) < 0.5, 1.0, rng.uniform(0, 1, (n, 1)))
        move = d * fill * share * rng.choice([1.0, -1.0], (n, GRID_MAX_K))
    top = rng.uniform(size=n) < 0.5                     # just below a grid point, moving up
    cell = rng.integers(-50, 50, (n, GRID_MAX_K))
    v = np.where(top[:, None], step[:, None] * (cell + 1) - step[:, None] * 2.0**-12,
                 bound[:, None] * rng.uniform(-1.3, 1.3, (n, GRID_MAX_K)))
    move = np.where(top[:, None], np.abs(move), move)
    v = np.where(active, v, 0.0).astype(np.float32)
    v2 = (v.astype(np.float64) + np.where(active, move, 0.0)).astype(np.float32)
    diff = np.abs(v2.astype(np.float64) - v.astype(np.float64))
    ok = diff.max(1) <= delta if per_element else diff.sum(1) <= delta   # premise holds exactly
    return v[ok], v2[ok], delta[ok], epsilon[ok], bound[ok], step[ok], k[ok]


@pytest.mark.parametrize("per_element", [False, True], ids=["L1-block", "per-element"])
def test_laplace_grid_release_integer_sensitivity(per_element):
    """``laplace_mechanism`` on a grid (Canonne, Kamath & Steinke 2020 §5, module docstring):
    the release is ``floor(clip(v, ±B)/g)``, ``g = grid_step(Δ, ε, B)``. For
    ``||v − v'||_1 <= Δ`` over ``k`` coordinates, the grid values move by at most
    ``ceil(Δ/g) + (k − 1)`` in L1 (the integer sensitivity of the noise). Per element, with
    ``|v_i − v'_i| <= Δ``, each moves by at most ``ceil(Δ/g)``."""
    v, v2, delta, _, bound, step, k = _grid_cases(3 + per_element, per_element)
    assert len(v) > 0.5 * GRID_CASES
    clip = bound[:, None]
    ints = [_grid_ints(np.clip(x, -clip, clip), step[:, None]) for x in (v, v2)]
    base = np.ceil(np.float32(delta) / np.float32(step)).astype(np.float64)
    if per_element:
        change = np.abs(ints[1] - ints[0])
        name = "grid release, per element"
        _assert_within(name, change, base[:, None], exact=True)
    else:
        change = np.abs(ints[1] - ints[0]).sum(1)
        name = "grid release, L1 block"
        ratio = _assert_within(name, change, base + (k - 1), exact=True)
        assert ratio == 1.0       # the bound is attained
    assert np.any(step > delta) and np.any(step < delta / 500)   # coarse and fine grids

# ------------------------------------------------------------------------------------------
# 10. The fixed-point weights, and a regression: float32 rounding vs the grid's integer sensitivity
# ------------------------------------------------------------------------------------------

QUANT_CASES, QUANT_ROWS, QUANT_GROUPS = 4000, 40, 4


def test_fixed_point_weights_have_sensitivity_one_weight_unit():
    """The fixed-point quantisation of the boosting weights (Mα spec §1.7: weights in [0, 1]).
    ``class_stats(w, y, fixed_point=True)`` is int32 ``floor(clip(w, 0, 1)·2**WEIGHT_BITS)``,
    one-hot by class. A neighbour's extra record of any weight in [0, 1] changes any fixed-point
    class sum (over any set of records) by at most ``WEIGHT_UNIT``, and all of them together by
    at most ``WEIGHT_UNIT`` in L1, exactly: the sensitivity the O.C and counts-leaf releases
    are calibrated to. The sums are exact: equal to numpy int64 sums of ``floor(w·256)``, and
    int32 cannot overflow below ``MAX_FIXED_POINT_ROWS`` rows."""
    assert WEIGHT_UNIT == 2.0**WEIGHT_BITS == 256.0
    assert MAX_FIXED_POINT_ROWS * WEIGHT_UNIT <= 2**31 - 1
    rng = np.random.default_rng(41)
    n, rows = QUANT_CASES, QUANT_ROWS + 1            # the last row: the added record
    regime = rng.integers(0, 5, (n, 1))
    weights = rng.uniform(0, 1, (n, rows))
    on_grid = rng.integers(0, 257, (n, rows)) / WEIGHT_UNIT
    weights = np.where(regime == 1, on_grid, weights)                         # k/256 exactly
    weights = np.where(regime == 2, np.nextafter(on_grid.astype(np.float32), np.float32(-1)),
                       weights)                                               # just below
    weights = np.where(regime == 3, rng.uniform(-0.5, 1.5, (n, rows)), weights)   # clipped
    weights = np.where(regime == 4, np.float32(1 - WEIGHT_FLOOR), weights)    # boosting's cap
    extra = rng.choice([0.0, 1.0, np.nextafter(np.float32(1), np.float32(0)), -1.0, -2.0], n)
    extra = np.where(extra == -1.0, rng.uniform(0, 1, n), extra)
    extra = np.where(extra == -2.0, on_grid[:, 0], extra)
    weights[:, -1] = extra
    weights = weights.astype(np.float32)
    without = weights.copy()
    without[:, -1] = 0.0
    y = rng.integers(0, 2, (n, rows)).astype(np.int32)
    group = rng.integers(0, QUANT_GROUPS, (n, rows)).astype(np.int32)

    def sums(weights, y, group):
        stats = class_stats(weights, y, fixed_point=True)
        return stats, stats.sum(0), leaf_stats(group, stats, QUANT_GROUPS)

    stats, total, by_group = jax.tree.map(np.asarray, jax.jit(jax.vmap(sums))(
        np.concatenate([without, weights]), np.concatenate([y, y]),
        np.concatenate([group, group])))
    for x in (stats, total, by_group):
        assert x.dtype == np.int32
    fixed = _np_fixed_point(np.concatenate([without, weights]))
    y2, group2 = np.concatenate([y, y]), np.concatenate([group, group])
    np.testing.assert_array_equal(stats, np.stack([fixed * (1 - y2), fixed * y2], -1))
    np.testing.assert_array_equal(total, np.stack(
        [(fixed * (1 - y2)).sum(1), (fixed * y2).sum(1)], -1))
    np.testing.assert_array_equal(by_group, _np_class_sums(
        np.concatenate([without, weights]), y2, group2, QUANT_GROUPS))
    for name, x in (("total", total), ("by group", by_group)):
        before, after = np.split(x.astype(np.int64), 2)
        change = np.abs(after - before)
        _assert_within(f"fixed-point class sum ({name}) {ADD}", change, WEIGHT_UNIT, exact=True)
        ratio = _assert_within(f"fixed-point class sums, L1 ({name}) {ADD}",
                               change.reshape(n, -1).sum(1), WEIGHT_UNIT, exact=True)
        assert ratio == 1.0                                  # attained by a weight-1 record
    assert np.any(extra == 1.0) and np.any((extra > 0) & (extra < 1))


ROUNDING_ROWS = 96


def _rounding_cases():
    """Two neighbouring pairs ``(D, D + one class-0 record)``, rows ``[2, ROUNDING_ROWS]``,
    whose float32 O.C root error moves by slightly more than 1.

    * unit weights: class 0 has 31 records of weight 1 and one of weight ``1 − 2**-19``, and
      class 1 has 40 records of weight 1. The added record has weight 1. In float32,
      ``E = 32 − 2**-19`` becomes ``fl(33 − 2**-19) = 33`` (a tie, rounded to even): a change
      of ``1 + 2**-19``.
    * boosting weights (seed 23865 of a search, about 1 pair in 25 000): weights in
      ``[0.5, 1 − 10**-6]``, most at the fit's cap ``1 − ζ'``, random codes. The added record
      has weight ``1 − ζ'``.
    """
    unit_w = np.zeros(ROUNDING_ROWS, np.float32)
    unit_w[:72] = 1.0
    unit_w[31] = 1 - 2.0**-19
    unit_w[-1] = 1.0
    unit_y = np.zeros(ROUNDING_ROWS, np.int32)
    unit_y[32:72] = 1
    unit_codes = np.zeros((ROUNDING_ROWS, 3), np.uint8)
    rng = np.random.default_rng([2024, 23865])
    codes = rng.integers(0, 6, (ROUNDING_ROWS, 3)).astype(np.uint8)
    n0 = rng.integers(33, 47)
    y = (np.arange(ROUNDING_ROWS) >= n0).astype(np.int32)
    y[-1] = 0
    cap = np.float32(1 - WEIGHT_FLOOR)
    w = np.where(rng.uniform(size=ROUNDING_ROWS) < 0.8, cap,
                 rng.uniform(0.5, 1, ROUNDING_ROWS)).astype(np.float32)
    w[-1] = cap
    return np.stack([unit_codes, codes]), np.stack([unit_w, w]), np.stack([unit_y, y])


def test_oc_error_exact_fixed_point_under_float32_rounding():
    """Regression for a finding of this file. The O.C level errors (sensitivity one weight) used
    to be float32 sums of the boosting weights. On the neighbours of :func:`_rounding_cases`
    float32 rounding moved them by ``1 + 2**-19``; their grid step ``g = 2**-10`` divided Δ = 1,
    so the grid values moved by ``1025 > ceil(Δ/g) = 1024`` steps and the release cost
    ``1025/1024·ε_oc``. Fixed at the root: under DP the weights are fixed-point integers
    ``floor(w·2**8)`` and every released sum is an exact int32 sum, with sensitivity
    ``WEIGHT_UNIT`` on the integer grid (``g = 1`` here, no rounding). Checked through
    ``grow_malpha_tree`` on both levels: the recorded ``E_k`` is int32, equal to the numpy int64
    reference, and moves by at most ``WEIGHT_UNIT``, exactly (the unit case attains it)."""
    codes, w, y = _rounding_cases()
    size, epsilon_oc = jnp.float32(100.0), jnp.float32(0.5)
    without = w.copy()
    without[:, -1] = 0.0                                  # D: the last record absent
    both = (np.concatenate([codes, codes]), np.concatenate([without, w]), np.concatenate([y, y]))

    def float_root_error(codes, weights, y):             # the statistic before the fix
        stats = class_stats(weights, y)
        left, _ = split_stats(node_histogram(codes, jnp.zeros(len(y), jnp.int32), stats, 1, 6))
        return weighted_error(left[:, 0, -1, :])

    old = np.asarray(jax.jit(jax.vmap(float_root_error))(*both), np.float64).reshape(2, -1)
    assert np.all(np.abs(old[1] - old[0]) > 1.0)       # the cases still hit the rounding

    def fit(codes, weights, y):
        grown, _ = grow_malpha_tree(jax.random.key(0), codes, weights, y, 2, np.full(3, 6),
                                    jnp.float32(1.0), jnp.float32(1.0), size=size,
                                    oc_alpha="private", epsilon_oc=epsilon_oc)
        return grown.feature, grown.threshold

    out, meta, arrays = _recorded(fit, *both)
    feature, threshold = (x.reshape(2, 2, -1) for x in out)
    errors = [i for i, m in enumerate(meta) if m["kind"] == "laplace"]
    assert len(errors) == 2                               # E_0 (root) and E_1
    for level, i in enumerate(errors):
        assert meta[i]["integer"] and meta[i]["sensitivity"] == WEIGHT_UNIT
        error = arrays[i]["value"].reshape(2, -1)
        assert error.dtype == np.int32
        np.testing.assert_array_equal(arrays[i]["bound"], size * WEIGHT_UNIT)
        np.testing.assert_array_equal(_integer_grid_shift(
            arrays[i]["sensitivity"], arrays[i]["epsilon"], arrays[i]["bound"]), 0)
        for v, weights in enumerate((without, w)):
            node = _np_level_nodes(feature[v], threshold[v], codes, level)
            expected = _np_class_sums(weights, y, node, 2**level).min(-1).sum(-1)
            np.testing.assert_array_equal(error[v], expected)
        first, second = ({k: x.reshape(2, -1)[v] for k, x in arrays[i].items()} for v in (0, 1))
        _check_laplace(f"O.C level error (rounding cases, level {level}) {ADD}", meta[i],
                       first, second)
        if level == 0:           # the unit case moves by exactly one weight: 256 units
            np.testing.assert_array_equal(np.abs(error[1] - error[0]), [256, 255])


def test_print_max_ratio_summary():
    """Prints the largest ``change / assumed sensitivity`` seen per statistic (``-s``)."""
    for name, ratio in sorted(RATIOS.items()):
        print(f"[sensitivity summary] {ratio:.9f}  {name}")
    assert all(r <= 1.0 + REL for r in RATIOS.values())
