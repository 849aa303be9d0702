"""``boosted(individual=κ)``: the individual filter (``docs/individual_filter.md``). Each
record's loss per round follows its own contributions, its losses never sum past the rounds'
budget, the ledger states the filter's budget, and the mode refuses what it cannot prove."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.ensembles.newton.individual import FILTER_LABEL, filter_records, individual_losses
from dpjax.ensembles.newton.releases import GRAD_UNIT, PRIOR_LABEL
from dpjax.ensembles.newton.rounds import gradient_stats
from dpjax.mechanisms.exponential import GAMMA_SLACK
from dpjax.mechanisms.laplace import integer_grid
from tests.helpers.fits import fit_newton_boosted


def test_a_record_loses_in_proportion_to_its_own_contributions():
    """The leaves' loss is ``ε_r·(|g| + |h|)/(2⁸ + 2)`` and each level draw's
    ``ε_l·|g|/2⁸`` plus its float slack: a record at full sensitivity loses the round's whole
    budget or less."""
    stats = jnp.array([[GRAD_UNIT, 0], [-GRAD_UNIT, 0], [-100, 60], [0, 0]], jnp.int32)
    loss = np.asarray(individual_losses(stats, 0.6, 0.1, 4, bound=None))
    slack = 4 * GAMMA_SLACK
    np.testing.assert_allclose(loss, [0.6 * 256 / 258 + 0.4 + slack, 0.6 * 256 / 258 + 0.4
                                      + slack, 0.6 * 160 / 258 + 0.4 * 100 / 256 + slack, 0.0],
                               rtol=1e-6)
    worst = gradient_stats(jnp.linspace(-30.0, 30.0, 2001), jnp.zeros(2001), private=True)
    assert float(individual_losses(worst, 1.0, 0.0, 0, bound=None).max()) <= 1.0


@pytest.mark.parametrize(("epsilon", "bound"), [(2e-5, None), (0.5, 2.0**34)])
def test_on_a_coarse_grid_a_record_loses_its_grid_shift(epsilon, bound):
    """A tiny ``ε_r``, or a large released size (the sums' public bound), releases the sums on
    a grid of step ``s > 1`` with a larger integer sensitivity
    (:func:`dpjax.mechanisms.laplace.integer_grid`, a record touching 2 coordinates): a record
    that moves its cell's two grid values by ``⌈|g|/s⌉ + ⌈|h|/s⌉`` loses that many grid units
    at the noise's rate (a small record far more than its proportional share)."""
    _, step, sensitivity_int = integer_grid(258.0, epsilon, 2, bound)
    assert float(step) > 1
    stats = jnp.array([[1, 1], [-256, 2], [40, 63]], jnp.int32)
    loss = np.asarray(individual_losses(stats, epsilon, 0.0, 0, bound=bound))
    shift = np.ceil(np.abs(np.asarray(stats)) / float(step)).sum(1)
    np.testing.assert_allclose(loss, epsilon * shift / float(sensitivity_int), rtol=1e-6)
    assert loss[0] > 2 * epsilon * 2 / 258      # a tiny record: far above its share


def test_the_filter_never_lets_a_record_spend_past_its_cap():
    """Rounds of random contributions at a large per-round budget: every record's spent sum
    stays at most the cap; a record with budget left at full weight keeps its contributions;
    the scaled contributions never grow (truncation towards zero)."""
    rng = np.random.default_rng(0)
    cap, spent = 1.0, jnp.zeros(500, jnp.float32)
    for _ in range(40):
        stats = jnp.asarray(np.stack([rng.integers(-256, 257, 500), rng.integers(0, 65, 500)],
                                     -1), jnp.int32)
        kept, loss = filter_records(stats, spent, cap, 0.2, 0.03, 3, bound=None)
        assert np.all(np.abs(np.asarray(kept)) <= np.abs(np.asarray(stats)))
        np.testing.assert_allclose(np.asarray(loss), np.asarray(individual_losses(
            kept, 0.2, 0.03, 3, bound=None)) * (np.asarray(loss) > 0), rtol=1e-6)
        full = np.asarray(individual_losses(stats, 0.2, 0.03, 3, bound=None))
        fits = np.asarray(spent) + full <= cap
        np.testing.assert_array_equal(np.asarray(kept)[fits], np.asarray(stats)[fits])
        spent = spent + loss
        assert float(spent.max()) <= cap
    assert float(spent.min()) > 0.95 * cap      # everyone ran out, up to a truncation


@pytest.mark.parametrize("shape", ["cyclic", "oblivious"])
def test_a_filtered_fit_states_the_filters_budget_and_is_a_function_of_its_key(shape):
    """The ledger: the prior and one filter entry, ``ε − ε_0`` (within the request); the
    rounds ran at ``κ`` times their share (less noise: another model than ``κ = 1``)."""
    rng = np.random.default_rng(1)
    codes = jnp.asarray(rng.integers(0, 8, (400, 3)), jnp.uint8)
    y = jnp.asarray((np.asarray(codes[:, 0]) > 3) ^ (rng.random(400) < 0.1), jnp.int32)
    fields = dict(n_codes_per_feature=np.full(3, 8), shape=shape, oblivious_trees=3, depth=2)
    model, costs = fit_newton_boosted(jax.random.key(3), codes, y, jnp.float32(1.0),
                                      individual=2.0, **fields)
    assert list(costs) == [PRIOR_LABEL, FILTER_LABEL]
    prior, rounds = float(costs[PRIOR_LABEL].epsilon), float(costs[FILTER_LABEL].epsilon)
    assert 1.0 - 1e-4 <= prior + rounds <= 1.0
    again, _ = fit_newton_boosted(jax.random.key(3), codes, y, jnp.float32(1.0),
                                  individual=2.0, **fields)
    chex_equal = jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), np.asarray(b)),
                              model, again)
    assert all(jax.tree.leaves(chex_equal))
    plain, _ = fit_newton_boosted(jax.random.key(3), codes, y, jnp.float32(1.0), **fields)
    assert not np.array_equal(np.asarray(plain.trees.leaf if shape == "oblivious"
                                         else plain.table),
                              np.asarray(model.trees.leaf if shape == "oblivious"
                                         else model.table))


def test_the_mode_refuses_what_it_cannot_prove():
    X = pd.DataFrame({"a": np.linspace(0, 1, 40), "b": np.linspace(1, 0, 40)})
    y = (X.a > 0.5).astype(int).to_numpy()
    bounds = {"a": (0.0, 1.0), "b": (0.0, 1.0)}
    with pytest.raises(ValueError, match="add_remove"):
        dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=bounds, individual=2.0,
                  neighbouring="replace_one", key=0)
    with pytest.raises(ValueError, match="noise='laplace'"):
        dpjax.fit(X, y, method="boosted", epsilon=1.0, delta=1e-6, bounds=bounds,
                  individual=2.0, noise="gaussian", key=0)
    with pytest.raises(ValueError, match="at least 1"):
        dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=bounds, individual=0.5, key=0)
    with pytest.raises(ValueError, match="too small"):      # a round beyond its sampler
        dpjax.fit(X, y, method="boosted", epsilon=1e-10, bounds=bounds, individual=1.5, key=0)
    model = dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=bounds, individual=1.5,
                      key=0)
    assert model.privacy.epsilon <= 1.0
    assert "individual filter" in str(model.privacy)
