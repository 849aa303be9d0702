"""Sensitivity: the noisy row count and the adaptive weights of boosting.

The method (neighbours of one shape, recorded mechanisms, tolerances) is described in
``helpers_sensitivity``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import boosting
from dpjax.losses.proper import inverse_link
from dpjax.mechanisms import size
from dpjax.trees.predict import leaf_index
from tests.helpers.fits import fit_malpha
from tests.helpers.sensitivity import ADD, _assert_within, _recorded, _traced_meta
from tests.helpers.sensitivity_malpha import CLAMP, N_CODES, WEIGHT_FLOOR

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
    fit = functools.partial(fit_malpha, n_trees=1, depth=1, n_codes_per_feature=N_CODES)
    counts = []

    def first_release(value, sensitivity, epsilon, **kwargs):
        counts.append((float(value), sensitivity, kwargs.get("integer")))
        raise _Released

    for rows in (BOOST_ROWS - 1, BOOST_ROWS):      # eager: the count is the first release
        with pytest.MonkeyPatch.context() as patch, pytest.raises(_Released):
            patch.setattr(size, "plan_laplace", first_release)
            fit(jax.random.key(0), codes[:rows], y[:rows], 1.0)
    assert counts == [(BOOST_ROWS - 1, 1.0, True), (BOOST_ROWS, 1.0, True)]
    _assert_within(f"noisy row count {ADD}", abs(counts[1][0] - counts[0][0]), 1.0, exact=True)
    meta = _traced_meta(lambda c, t: fit(jax.random.key(0), c, t, 1.0, size=float(BOOST_ROWS),
                                         sensitivity=2.0), codes, y)
    assert meta and not [m for m in meta if m["kind"] == "laplace" and m["integer"]]


@pytest.mark.slow
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
    real_grow = boosting.grow_malpha_tree

    def grow(key, codes, round_weights, *args, **kwargs):
        jax.debug.callback(lambda w: weights.append(np.asarray(w)), round_weights,
                           ordered=True)
        return real_grow(key, codes, round_weights, *args, **kwargs)

    def fit(key):
        return fit_malpha(key, codes, y, jnp.float32(2.0), alpha=alpha, n_trees=BOOST_TREES,
                           depth=BOOST_DEPTH, n_codes_per_feature=N_CODES, clamp=CLAMP,
                           leaf_mechanism=leaf_mechanism, beta_mode=beta_mode)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boosting, "grow_malpha_tree", grow)
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
