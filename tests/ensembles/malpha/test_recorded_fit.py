"""One un-jitted private Mα-boost fit with every mechanism call recorded (spec §4): it is the
jitted fit (shorter fits are prefixes), its weights come from the released model (§4.1) and
each release gets its eq. (18) budget and the right sensitivity."""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from dpjax.ensembles.malpha import WEIGHT_UNIT, boosting, leaves
from dpjax.ensembles.malpha import tree as malpha
from dpjax.trees import leaf_index
from tests.helpers.fits import fit_malpha
from tests.helpers.malpha import (
    CODES,
    M_ROWS,
    N_BINS,
    N_CODES,
    Y,
    assert_budget,
    assert_spent,
    np_leaf_sums,
    np_leaf_values,
    private_fit,
    released_margins,
    tree_arrays,
    weights_of,
)

pytestmark = pytest.mark.slow

EAGER = dict(epsilon=2.0, beta_tree=0.4, n_trees=2, depth=3, beta_oc=0.1)


@pytest.fixture(scope="module")
def eager_private():
    """One *un-jitted* private fit (O.C private, settings ``EAGER``, public size ``M_ROWS``)
    with its costs, and the boosting weights and every mechanism call's shape, sensitivity,
    budget and bound recorded through ``jax.debug.callback`` (the scan body is traced once, so
    the records are taken at run time, once per round). The sensitivities are what the costs
    cannot show."""
    records = {"weights": [], "leaf": [], "oc": [], "splits": []}
    real_grow = boosting.grow_malpha_tree

    def grow(key, codes, weights, *args, **kwargs):
        jax.debug.callback(lambda w: records["weights"].append(np.asarray(w)), weights,
                           ordered=True)
        return real_grow(key, codes, weights, *args, **kwargs)

    def recorder(name, real):
        def mechanism(key, value, sensitivity, epsilon, **kwargs):
            jax.debug.callback(
                lambda v, s, e, b: records[name].append((np.shape(v), np.asarray(s),
                                                         float(e), b)),
                value, sensitivity, epsilon, kwargs.get("bound"), ordered=True)
            return real(key, value, sensitivity, epsilon, **kwargs)
        return mechanism

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(boosting, "grow_malpha_tree", grow)
        patch.setattr(leaves, "laplace_mechanism", recorder("leaf", leaves.laplace_mechanism))
        patch.setattr(malpha, "laplace_mechanism", recorder("oc", malpha.laplace_mechanism))
        patch.setattr(malpha, "permute_and_flip", recorder("splits", malpha.permute_and_flip))
        model, costs = fit_malpha(jax.random.key(3), jnp.asarray(CODES), jnp.asarray(Y),
                                   EAGER["epsilon"], alpha=-1.0, beta_tree=EAGER["beta_tree"],
                                   size=M_ROWS, n_trees=EAGER["n_trees"], depth=EAGER["depth"],
                                   beta_oc=EAGER["beta_oc"], n_codes_per_feature=N_CODES)
        model, costs = jax.block_until_ready((model, costs))
    jax.effects_barrier()
    return model, costs, records


# ------------------------------------------------------------------------------------------
# jit == no-jit
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_jit_equals_no_jit_and_shorter_fits_are_prefixes(eager_private):
    """Tree ``t`` draws from ``fold_in(key, t)``, spends ``ε/T`` and is weighted by the released
    trees before it, so the un-jitted 2-tree fit at ε = 2 is exactly the first two trees of the
    jitted 3-tree fit at ε = 3 (the same ``ε/T = 1`` per tree, the same public size), and so
    are its costs."""
    eager, eager_costs, _ = eager_private
    jitted, costs = private_fit(3)(jax.random.key(3), 1.5 * EAGER["epsilon"], -1.0,
                                   EAGER["beta_tree"])
    prefix = jax.tree.map(lambda a: a[:2] if a.ndim else a, jitted)
    chex.assert_trees_all_equal(eager.trees.feature, prefix.trees.feature)
    chex.assert_trees_all_equal(eager.trees.threshold, prefix.trees.threshold)
    chex.assert_trees_all_close(eager, prefix, rtol=1e-5, atol=1e-6)
    assert list(costs) == list(eager_costs)
    for what, cost in costs.items():
        chex.assert_trees_all_close(eager_costs[what], jax.tree.map(lambda a: a[:2], cost),
                                    rtol=1e-6)


# ------------------------------------------------------------------------------------------
# Under DP the weights come from the released model (§4.1)
# ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_private_weights_come_from_the_released_noisy_model(eager_private):
    model, _, records = eager_private
    weights = records["weights"]
    assert len(weights) == EAGER["n_trees"]
    released = np.asarray(model.trees.leaf)
    np.testing.assert_array_equal(np.asarray(model.beta), 1.0)  # folded β
    assert np.all(np.abs(released) <= 1.0)  # α_LC = 1 under O.C
    clamp, a = 10.0, 1.0 / 10.0**2
    for t in range(EAGER["n_trees"]):
        expected = weights_of(released_margins(model, t), 1.0)
        np.testing.assert_allclose(weights[t], expected, rtol=1e-5, atol=1e-6)
        if t == 0:
            continue
        # The noise-free route (folded values of tree t-1 before the noise) would give
        # clearly different weights: the check above tells the two apart.
        feature, threshold = tree_arrays(model, t - 1)
        leaf = np.asarray(leaf_index(feature, threshold, CODES))
        sums = np_leaf_sums(leaf, weights[t - 1], 2 ** EAGER["depth"])
        values = np.clip(np_leaf_values(sums, 1.0), -clamp, clamp)
        beta = a / M_ROWS * np.sum(values * (sums[:, 1] - sums[:, 0]))
        noise_free = np.clip(beta * values, -1.0, 1.0)
        margins = released_margins(model, t - 1) + noise_free[leaf]
        assert np.abs(weights_of(margins, 1.0) - weights[t]).max() > 0.05


# ------------------------------------------------------------------------------------------
# Laplace scales and budgets of the fit (§4.2, §4.4, §4.5, §5.3)
# ------------------------------------------------------------------------------------------


def test_fit_spends_eq_18_budgets_with_the_right_sensitivities(eager_private):
    """The costs of the un-jitted O.C fit, per round: ``d`` levels of selections (``2^k`` nodes
    at ``(1 − β_oc)·β_tree·ε/(T·d·2^k)`` each), ``d`` O.C releases (``β_oc·β_tree·ε/(T·d)``
    each) and ``2^d`` folded leaves (``(1 − β_tree)·ε/(T·2^d)`` each); one tree spends ``ε/T``.
    The recorded mechanism calls give the sensitivities: ``Δ^(α_ℓ)(ñ)`` with the node's own α
    for the splits, one weight for the O.C errors (exact fixed-point sums bounded by the public
    size), range ``2·α_LC`` for the folded leaves (bounded by ``α_LC``)."""
    model, costs, records = eager_private
    eps, bt, n_trees, depth, boc = (EAGER[k] for k in ("epsilon", "beta_tree", "n_trees",
                                                       "depth", "beta_oc"))
    assert list(costs) == [*(f"splits at depth {k}" for k in range(depth)),
                           "O.C level errors", "leaves"]  # public size: no row count
    for k in range(depth):
        cost = costs[f"splits at depth {k}"]
        chex.assert_shape(cost.epsilon, (n_trees, 2**k))
        assert cost.mechanism == "permute-and-flip (sens. (Δ^(α)(ñ) + 2^-18·ñ))"
        np.testing.assert_allclose(cost.epsilon, (1 - boc) * bt * eps / (n_trees * depth * 2**k),
                                   rtol=1e-6)
        assert_spent(cost.epsilon, (1 - boc) * bt * eps / (n_trees * depth * 2**k))
    chex.assert_shape(costs["O.C level errors"].epsilon, (n_trees, depth))
    assert_spent(costs["O.C level errors"].epsilon, boc * bt * eps / (n_trees * depth))
    chex.assert_shape(costs["leaves"].epsilon, (n_trees, 2**depth))
    assert costs["leaves"].mechanism == "discrete Laplace (range 2α_LC)"
    assert_spent(costs["leaves"].epsilon, (1 - bt) * eps / (n_trees * 2**depth))
    # one tree spends ε/T: 2^k nodes per level, d O.C releases, 2^d leaves
    per_tree = sum(np.asarray(c.epsilon, np.float64).reshape(n_trees, -1).sum(-1)
                   for c in costs.values())
    assert_spent(per_tree, eps / n_trees)
    # what each mechanism was called with
    assert len(records["splits"]) == len(records["oc"]) == n_trees * depth
    assert len(records["leaf"]) == n_trees
    for t in range(n_trees):
        for k in range(depth):
            # every level is drawn at the last level's 2**(d-1) nodes (one program for the
            # levels); the nodes past the level's 2**k hold no example and are dropped
            shape, sensitivity, epsilon, _ = records["splits"][t * depth + k]
            assert shape == (2 ** (depth - 1), len(N_CODES) * N_BINS)
            assert epsilon == float(costs[f"splits at depth {k}"].epsilon[t, 0])
            node_alpha = np.asarray(model.alpha[t, 2**k - 1: 2 ** (k + 1) - 1])
            np.testing.assert_allclose(  # Δ^(α)(ñ) + the float32 rounding margin 2^-18·ñ
                np.ravel(sensitivity)[:2**k],
                3 + 2 * node_alpha * (np.sqrt(M_ROWS) - 1) + 2.0**-18 * M_ROWS, rtol=1e-6)
            shape, sensitivity, epsilon, bound = records["oc"][t * depth + k]
            assert shape == ()  # one weight (fixed point), errors bounded by the public size
            np.testing.assert_allclose(sensitivity, WEIGHT_UNIT)
            assert float(bound) == M_ROWS * WEIGHT_UNIT
            assert_budget(epsilon, boc * bt * eps / (n_trees * depth))
        shape, sensitivity, epsilon, bound = records["leaf"][t]
        assert shape == (2**depth,)
        np.testing.assert_allclose(sensitivity, 2.0)  # 2·α_LC, α_LC = 1 under O.C
        assert float(bound) == 1.0
        assert_budget(epsilon, (1 - bt) * eps / (n_trees * 2**depth))
