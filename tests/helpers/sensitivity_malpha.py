"""Random weighted neighbours and the recorded Mα programs shared by the sensitivity tests of
the Mα statistics (split utilities, O.C level errors, leaf releases): the direct statistics
(one compiled program), a private Mα tree with the four leaf release modes (recorded), and
the check of a recorded Laplace release on neighbours.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.ensembles.malpha import (
    class_stats,
    grow_malpha_tree,
    leaf_link,
    leveraging_coefficient,
    link_alpha,
    release_leaves,
)
from dpjax.ensembles.malpha.tree import weighted_error
from dpjax.losses.proper import clamped_split_risk, split_risk
from dpjax.mechanisms.laplace import MAX_GRID_VALUE, grid_step
from dpjax.trees.histogram import node_histogram, split_stats, valid_thresholds
from tests.helpers.sensitivity import (
    ADD,
    REPLACE,
    Recorder,
    _assert_within,
    _expand,
    _grid_ints,
    _integer_grid_shift,
    _recorded,
    _split,
)

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
        fixed = class_stats(weights, y, exact=True)
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
            sensitivity_multiplier=multiplier, budget="paper")
        for i, (leaf_mechanism, beta_mode) in enumerate(LEAF_MODES):
            _recorder_tag(f"{leaf_mechanism}/{beta_mode}")
            release_leaves(
                jax.random.fold_in(k_leaves, i), grown.leaf_stats, link_alpha(alpha,
                                                                              oc_link_alpha=1.0),
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
