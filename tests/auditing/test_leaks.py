"""Regression tests for the five leaks an outside audit found (issue 7); each fails on the
code before the fix.

1. β_t of Mα-boost divided by the private row count m.
2. Floating-point Laplace noise on released real values (Mironov 2012).
3. ``dpjax.sweep`` gave every grid point of a seed the same key.
4. Exceptions that depend on a record's value (single class, out-of-bounds values).
5. "Public" metadata read off private data (bounds helpers, category dtypes, label domains).
"""

from __future__ import annotations

import math
import warnings

import jax
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.data import DataDependentWarning, OutOfBoundsWarning
from dpjax.ensembles.malpha import leveraging_coefficient, release_leaves
from dpjax.mechanisms.laplace import grid_step
from tests.conftest import small
from tests.helpers.fits import fit_malpha

pytestmark = pytest.mark.slow

BOUNDS = {"a": (0.0, 1.0), "b": (0.0, 1.0)}


def _toy(m: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.uniform(0, 1, m), "b": rng.uniform(0, 1, m)})
    return X, (X.a > 0.5).astype(int).to_numpy()


# --- leak 1: the private row count --------------------------------------------------------


def test_leak1_beta_of_two_versus_three_rows_stays_within_a_claim_of_0_1():
    """The audit's own finding: counts leaves, β by post-processing, m = 2 -> 3, claim 0.1
    (measured before the fix: ε lower bound 3.7)."""
    X, y = pd.DataFrame({"a": [0.2, 0.8], "b": [0.3, 0.6]}), np.array([0, 1])
    report = dpjax.audit(X, y, method="malpha", epsilon=0.1, bounds=BOUNDS, n=4_000, key=3,
                         n_trees=1, depth=1, leaf_mechanism="counts", beta_mode="post")
    assert report.passed, report.summary()


def test_leak1_beta_is_normalised_by_the_public_size_not_the_row_count():
    values = np.array([1.0, -2.0])
    stats = np.array([[3.0, 1.0], [0.5, 4.0]])
    assert float(leveraging_coefficient(values, stats, 0.01, 50.0)) == pytest.approx(
        0.01 / 50 * (1.0 * (1 - 3) - 2.0 * (4 - 0.5)))
    X, y = _toy(40)
    for public_size in (40, 80):
        model = dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, key=0,
                          n_trees=2, depth=2, public_size=public_size)
        assert all("row count" not in e.what for e in model.privacy.entries)
    model = dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=2,
                      depth=2, prior_share=0.0)
    entry = next(e for e in model.privacy.entries if e.what == "row count")
    assert entry.count == 1 and 0 < entry.epsilon <= 0.05
    # by default the released class counts are the size (no row count of their own)
    model = dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=2,
                      depth=2)
    entry = next(e for e in model.privacy.entries if e.what.startswith("class counts"))
    assert entry.count == 1 and 0 < entry.epsilon <= 0.1
    assert all("row count" not in e.what for e in model.privacy.entries)


# --- leak 2: floating-point noise on released values -------------------------------------


@pytest.mark.parametrize("beta_mode, leaf_mechanism", [("fold", "value"), ("laplace", "value"),
                                                       ("post", "counts")])
def test_leak2_released_values_lie_on_a_public_grid(beta_mode, leaf_mechanism):
    """Every released real value is a multiple of a power-of-two grid step set by the public
    sensitivity, budget and bound (before the fix: value + float32 Laplace noise)."""
    stats = np.array([[3.0, 1.0], [0.5, 4.0], [2.0, 2.0], [0.0, 0.25]], np.float32)
    alpha, clamp, eps = 1.0, 10.0, 0.3
    values, beta, costs = release_leaves(
        jax.random.key(0), stats, alpha, clamp=clamp, zeta=1e-4, epsilon_leaf=eps,
        epsilon_beta=eps, sensitivity=1.0, size=20.0, leaf_mechanism=leaf_mechanism,
        beta_mode=beta_mode, leaf_composition="sequential")
    if leaf_mechanism == "value":
        sensitivity, bound = (2 * alpha, alpha) if beta_mode == "fold" else (2 * clamp, clamp)
        step = float(grid_step(sensitivity, eps, bound))
        units = np.asarray(values, np.float64) / step
        assert np.array_equal(units, np.round(units))
    if beta_mode == "laplace":
        a = alpha / clamp**2
        step = float(grid_step(2 * a * clamp / 20.0, eps, 2 * a * clamp))
        assert float(beta) / step == round(float(beta) / step)
    assert all(float(np.max(c.epsilon)) <= eps for c in costs.values())


def test_leak2_value_leaves_audit_within_their_claim():
    """Before the fix the float Laplace leaf (then the default ``value``/``fold`` leaves) gave an
    ε lower bound of 9.2 at a claim of 1."""
    X, y = _toy(10, seed=3)
    report = dpjax.audit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, n=4_000, key=4,
                         n_trees=1, depth=1, leaf_mechanism="value", beta_mode="fold",
                         leaf_composition="sequential")
    assert report.passed, report.summary()


# --- leak 3: sweeps -------------------------------------------------------------------------


def test_leak3_grid_points_of_a_seed_have_independent_noise():
    """Two grid points with the same ε used to be the same model (same key, same scale)."""
    X, y = _toy(60)
    sweep = dpjax.sweep(X, y, method="random_trees", epsilon=[1.0, 1.0], seeds=[7], bounds=BOUNDS,
                        n_trees=2, depth=3)
    leaves = np.asarray(sweep.params.leaf)
    assert not np.array_equal(leaves[0, 0], leaves[1, 0])
    np.testing.assert_array_equal(np.asarray(sweep.params.feature)[0, 0],
                                  np.asarray(sweep.params.feature)[1, 0])


def test_leak3_default_seeds_draw_fresh_entropy():
    X, y = _toy(60)
    first, second = (dpjax.sweep(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, n_trees=2,
                                 depth=3)
                     for _ in range(2))
    assert first.seeds == (None,)
    assert not np.array_equal(np.asarray(first.params.leaf), np.asarray(second.params.leaf))


def test_leak3_int_seeds_keep_64_bits():
    assert not np.array_equal(jax.random.key_data(dpjax.as_key(5)),
                              jax.random.key_data(dpjax.as_key(2**40 + 5)))
    with pytest.raises(ValueError, match="key"):
        dpjax.as_key(2**64)


def test_a_raw_key_is_copied_not_shared():
    """A ``uint32[2]`` key's later writes do not reach the key: on CPU ``device_put`` shares
    numpy memory that is 64-byte aligned, so the raw key is placed at such an address."""
    buffer = np.zeros(64, np.uint32)
    start = (-buffer.ctypes.data % 64) // 4
    raw = buffer[start:start + 2]
    raw[:] = [0, 1]
    key = dpjax.as_key(raw)
    raw[1] = 2
    np.testing.assert_array_equal(jax.random.key_data(key), [0, 1])


# --- leak 4: exceptions and messages that depend on a record ---------------------------------


@pytest.mark.parametrize("method", sorted(dpjax.LEARNERS))
def test_leak4_a_single_class_dataset_fits(method):
    """Removing the only positive used to raise 'single class' while the neighbour fitted."""
    X, _ = _toy(30)
    model = dpjax.fit(X, np.zeros(30, int), method=method, epsilon=1.0, bounds=BOUNDS, key=0,
                      **small(method))
    assert model.classes == (0, 1) and model.privacy.private
    assert model.predict_proba(X).shape == (30, 2)


def test_leak4_values_outside_the_bounds_are_clipped_without_printing_them():
    X, y = _toy(30)
    X.loc[3, "a"] = 123.456
    with pytest.warns(OutOfBoundsWarning) as caught:
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=2,
                          depth=2)
    assert model.privacy.private
    assert all("123" not in str(w.message) for w in caught)
    with pytest.raises(ValueError) as error:
        dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0,
                  on_out_of_bounds="error")
    assert "123" not in str(error.value)


def test_leak4_unseen_categories_get_the_other_code():
    X = pd.DataFrame({"c": ["x", "y", "x", "z"] * 5, "a": np.linspace(0, 1, 20)})
    y = np.arange(20) % 2
    bounds = {"c": ["x", "y"], "a": (0.0, 1.0)}
    with pytest.warns(OutOfBoundsWarning, match="other"):
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds=bounds, key=0, n_trees=2,
                          depth=2)
    codes = np.asarray(model.encode(pd.DataFrame({"c": ["q"], "a": [0.5]})))
    assert codes[0, 0] == 2 and model.spec.n_codes[0] == 3


def test_leak4_unknown_label_message_prints_no_label():
    X, y = _toy(20)
    with pytest.raises(ValueError, match="outside the declared classes") as error:
        dpjax.fit(X, np.where(y == 1, "secret-label", "no"), method="random_trees", epsilon=1.0,
                  bounds=BOUNDS, classes=["no", "yes"])
    assert "secret" not in str(error.value)


# --- leak 5: metadata read off private data ----------------------------------------------------


def test_leak5_bounds_helpers_refuse_private_frames():
    X, _ = dpjax.load_dataset("banknote")
    with pytest.raises(TypeError, match="registered dataset"):
        dpjax.data.public_bounds(X)
    with pytest.raises(TypeError, match="registered dataset"):
        dpjax.data.missing_columns(X)
    assert set(dpjax.data.public_bounds("banknote")) == set(X.columns)


def test_leak5_category_dtype_is_not_a_declaration():
    """``astype("category")`` lists exactly the values present: a rare one would be published."""
    X = pd.DataFrame({"c": pd.Series(["x", "y"] * 10 + ["rare"]).astype("category"),
                      "a": np.linspace(0, 1, 21)})
    y = np.arange(21) % 2
    with pytest.warns(DataDependentWarning, match="NOT differentially private"):
        model = dpjax.fit(X, y, method="random_trees", epsilon=1.0, bounds={"a": (0.0, 1.0)}, key=0,
                          n_trees=2, depth=2)
    assert not model.privacy.private and model.privacy.epsilon == math.inf
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataDependentWarning)
        declared = dpjax.fit(X, y, method="random_trees", epsilon=1.0,
                             bounds={"a": (0.0, 1.0), "c": ["x", "y"]}, key=0, n_trees=2, depth=2)
    assert declared.privacy.private and "rare" not in declared.spec.categories[0]


def test_leak5_label_domain_does_not_switch_with_the_data():
    """A dataset of ones used to get classes (0, 1) and its neighbour with one -1 got (-1, 1)."""
    X, _ = _toy(21)
    ones = np.ones(21, int)
    assert dpjax.fit(X, ones, method="random_trees", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=2,
                     depth=2).classes == (0, 1)
    with pytest.raises(ValueError, match="default classes"):
        dpjax.fit(X, np.append(ones[:-1], -1), method="random_trees", epsilon=1.0, bounds=BOUNDS,
                  key=0)
    declared = dpjax.fit(X, np.append(ones[:-1], -1), method="random_trees", epsilon=1.0,
                         bounds=BOUNDS, key=0, classes=(-1, 1), n_trees=2, depth=2)
    assert declared.classes == (-1, 1) and declared.privacy.private


# --- found by the independent review after the fixes ------------------------------------------


def test_sweep_structure_keys_never_coincide_with_noise_keys():
    """With JAX's partitionable threefry ``split(k)[t] == fold_in(k, t)``: a sweep that used the
    seed key both for the trees' structure (``fold_in(k, t)``) and for the grid points' noise
    (``fold_in(k, i)``) gave tree ``t`` the noise key of model ``t``. ``grid_keys`` separates
    the two families first."""
    from dpjax._keys import grid_keys
    from dpjax.ensembles.random_trees import tree_keys

    seed = dpjax.as_key(3)
    structure, points = grid_keys(seed, 8)
    structures = {tuple(np.asarray(jax.random.key_data(k)))
                  for k in tree_keys(structure, 32)}
    noise = set()
    for point in points:
        for child in (point, *jax.random.split(point, 3), *jax.random.split(point, 2)):
            noise.add(tuple(np.asarray(jax.random.key_data(child))))
    assert not structures & noise


def test_inactive_boosting_rounds_release_nothing():
    """``n_active = T'`` rounds past ``T'`` used to return their (budgeted) splits at zero cost;
    they are now zeroed like their leaves."""
    X, y = _toy(40)
    model = dpjax.fit(X, y, method="malpha", epsilon=1.0, bounds=BOUNDS, key=0, n_trees=3,
                      depth=2, public_size=40)
    codes = np.asarray(model.encode(X))
    params, costs = fit_malpha(
        jax.random.key(0), codes, y.astype(np.int32), 1.0, alpha=-1.0, beta_tree=0.5,
        size=40.0, n_trees=3, depth=2, n_codes_per_feature=model.spec.n_codes, n_active=1)
    assert (np.asarray(params.trees.feature)[1:] == 0).all()
    assert (np.asarray(params.trees.threshold)[1:] == 0).all()
    assert (np.asarray(params.alpha)[1:] == 1).all()
    for cost in costs.values():
        assert (np.asarray(cost.epsilon)[1:] == 0).all()
