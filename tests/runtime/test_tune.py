"""``dpjax.tune``: private hyper-parameter selection by random stopping (Liu & Talwar 2019,
Theorem 3.4; ``docs/tuning.md``).

The fits share one data shape and one key's split wherever they can, so the compiled chunk
program is reused (a new shape is a new compile of a few seconds); statistical checks allow
``Z`` standard errors of their estimator (``tests/conftest.py``)."""

from __future__ import annotations

import re

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _tuning
from dpjax.learners import Boosted
from dpjax.mechanisms import laplace_mechanism
from tests.conftest import Z

M = 120
KEY = 7
EPSILON = 1.0
BOUNDS = (0.0, 1.0)
GAMMA = 0.1


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, (M, 2))
    y = (X[:, 0] + 0.2 * rng.standard_normal(M) > 0.5).astype(int)
    return X, y


def tune(X, y, **kwargs):
    settings = {"epsilon": EPSILON, "key": KEY, "bounds": BOUNDS, **kwargs}
    return dpjax.tune(X, y, method="boosted", **settings)


def selection(X, y, **kwargs):
    settings = dict(method="boosted", epsilon=EPSILON, bounds=BOUNDS, classes=None, key=KEY,
                    candidates=None, validation_share=0.3, stop_probability=GAMMA,
                    neighbouring="add_remove", n_bins=None, missing="error",
                    on_out_of_bounds="clip", params={})
    return _tuning.selection(X, y, **{**settings, **kwargs})


def runs_of(key: int = KEY, gamma: float = GAMMA) -> int:
    """``K`` of a key (secret: the model never states it)."""
    return _tuning.stopping_count(stop_key(key), gamma)


def stop_key(key) -> jax.Array:
    return jax.random.split(dpjax.as_key(key), 3)[1]


def split_size(key, m: int = M, share: float = 0.3) -> int:
    """The validation part's size under ``key``."""
    split_key = jax.random.split(dpjax.as_key(key), 3)[0]
    return int(_tuning.validation_coins(split_key, m, share).sum())


@pytest.fixture(scope="module")
def model(data):
    return tune(*data)


# --------------------------------------------------------------------------------------------
# The ledger
# --------------------------------------------------------------------------------------------

def test_the_ledger_is_one_selection_entry_of_three_run_budgets(model):
    ledger = model.privacy
    assert ledger.private and ledger.delta == 0.0
    assert ledger.requested_epsilon == EPSILON
    assert ledger.epsilon <= EPSILON
    (entry,) = ledger.entries        # the chosen fit's releases are inside it, not added again
    assert entry.mechanism == _tuning.MECHANISM
    epsilon_c = _tuning.run_epsilon(EPSILON)
    assert entry.epsilon == 3.0 * epsilon_c and entry.count == 1
    assert EPSILON * (1 - 1e-5) < entry.epsilon <= EPSILON
    assert f"each {epsilon_c:.4g}-DP" in entry.what
    chosen = re.search(r"chosen: (.*), noisy count", entry.what)
    assert f"learning_rate={model.hyperparams['learning_rate']:.4g}" in chosen[1]


def test_neither_k_nor_the_chosen_run_is_released(data, model):
    """The theorem covers the best run's output with ``K`` summed over: ``K``, the chosen
    run's index and the run time (which grows with ``K``) are not in the model."""
    released = str(model.privacy) + model.to_json() + model.summary()
    assert "K=" not in released and "run " not in model.privacy.entries[-1].what
    assert f"{runs_of()} runs" not in released
    assert np.isnan(model.timings.run_s)


@pytest.mark.parametrize("epsilon", [1e-3, 0.1, 1 / 3, 1.0, 2.0, 10.0, 123.456])
def test_three_run_budgets_never_exceed_epsilon(epsilon):
    epsilon_c = _tuning.run_epsilon(epsilon)
    assert epsilon * (1 - 1e-5) < 3.0 * epsilon_c <= epsilon
    assert epsilon_c == float(np.float32(epsilon_c))       # what the runs trace


@pytest.mark.parametrize("stored", [False, True])
def test_the_accountant_is_checked_before_and_spent_after(data, stored, tmp_path):
    store = tmp_path / "budget.db" if stored else None
    accountant = dpjax.BudgetAccountant(epsilon=1.5, store=store)
    model = tune(*data, accountant=accountant)
    assert accountant.total()[0] <= EPSILON
    with pytest.raises(dpjax.BudgetExceededError):
        tune(*data, accountant=accountant)
    if stored:     # the store holds the tune's ledger, and no reservation is left open
        again = dpjax.BudgetAccountant(store=store)
        assert [s.ledger for s in again.spends] == [model.privacy]
        assert again.spends[0].label.startswith("tune ") and again.reserved == ()


# --------------------------------------------------------------------------------------------
# The number of runs K: geometric, uncapped, from the key alone
# --------------------------------------------------------------------------------------------

def test_runs_are_geometric_with_mean_one_over_gamma():
    """``K`` over 20,000 keys: mean ``1/γ`` and ``P[K = k] = (1 − γ)^(k−1)·γ`` within ``Z``
    standard errors (``Var K = (1 − γ)/γ²``); the vectorised first block of coins agrees with
    :func:`stopping_count` on 100 keys."""
    gamma, n = 0.2, 20_000
    keys = jax.random.split(jax.random.key(11), n)
    threshold = _tuning._stop_threshold(gamma)
    coins = np.asarray(jax.jit(jax.vmap(lambda k: _tuning.stop_coins(k, 0, threshold)))(keys))
    assert coins.any(axis=1).all()       # P[K > 64] = 0.8**64: none of these keys
    runs = coins.argmax(axis=1) + 1
    assert [_tuning.stopping_count(k, gamma) for k in keys[:100]] == runs[:100].tolist()
    gamma_exact = (threshold + 1) / 2**32
    assert abs(gamma_exact - gamma) < 2**-32
    assert runs.min() >= 1
    mean, sd = 1 / gamma_exact, np.sqrt((1 - gamma_exact) / gamma_exact**2)
    assert abs(runs.mean() - mean) <= Z * sd / np.sqrt(n)
    for k in range(1, 8):
        p = (1 - gamma_exact) ** (k - 1) * gamma_exact
        assert abs(np.mean(runs == k) - p) <= Z * np.sqrt(p * (1 - p) / n), k
    tail = (1 - gamma_exact) ** 10
    assert abs(np.mean(runs > 10) - tail) <= Z * np.sqrt(tail * (1 - tail) / n)


def test_stop_probability_one_is_one_run_and_runs_are_not_capped():
    for key in range(20):
        assert _tuning.stopping_count(jax.random.key(key), 1.0) == 1
    # a tiny γ: K runs well past any block of coins (P[K <= 64] = 1 − (1 − 1e-3)**64 ~ 6%)
    runs = [_tuning.stopping_count(jax.random.key(key), 1e-3) for key in range(10)]
    assert max(runs) > _tuning.STOP_BLOCK


def test_runs_read_the_key_alone(data, model):
    """Another dataset of the same shape under the same key: the same ``K`` (and split)."""
    X, y = data
    selected, other = selection(X, y), selection(1.0 - X, 1 - y)
    assert selected.runs == other.runs == runs_of()
    np.testing.assert_array_equal(np.asarray(selected.val_y).shape,
                                  np.asarray(other.val_y).shape)
    assert selection(X, y, stop_probability=1.0).runs == 1


# --------------------------------------------------------------------------------------------
# Keys: same key, same model; every run its own keys
# --------------------------------------------------------------------------------------------

def test_same_key_same_model_other_key_other_model(data, model):
    again = tune(*data)
    chex.assert_trees_all_equal(model.params, again.params)
    assert again.privacy == model.privacy
    assert again.timings.compile_s == 0.0          # the chunk program is reused
    # another key whose split has the same size (the compiled program is reused)
    other_key = next(k for k in range(KEY + 1, KEY + 200) if split_size(k) == split_size(KEY))
    other = tune(*data, key=other_key)
    leaves = zip(jax.tree.leaves(model.params), jax.tree.leaves(other.params), strict=True)
    assert not all(np.array_equal(a, b) for a, b in leaves)


@pytest.fixture(scope="module")
def fixed_runs(data):
    """One chunk of runs whose candidates are all the defaults (tune's compiled program)."""
    fixed = {n: [getattr(Boosted(), n)] for n in Boosted.traced_names()}
    chosen = selection(*data, candidates=fixed)
    return chosen, chosen.chunk(0)


def test_every_run_has_its_own_keys_and_noise(fixed_runs):
    chosen, chunk = fixed_runs
    for values in chunk.points.values():
        assert np.unique(np.asarray(values)).size == 1     # identical hyper-parameters
    chex.assert_shape([chunk.scores, chunk.score_epsilons], (_tuning.CHUNK,))
    keys = [jax.random.key_data(k) for run in range(_tuning.CHUNK)
            for k in _tuning.run_keys(chosen.runs_key, run)]
    assert len({tuple(np.asarray(k).tolist()) for k in keys}) == 2 * _tuning.CHUNK
    # every fit drew its own noise: its released prior and moves (at this size and ε the prior
    # alone may read both counts at their floor, even odds, in several fits)
    released = np.concatenate([np.asarray(a, np.float32).reshape(_tuning.CHUNK, -1) for a in (
        chunk.params.prior, chunk.params.table, chunk.params.trees.leaf)], axis=1)
    assert len({row.tobytes() for row in released}) == _tuning.CHUNK
    noise = chunk.scores - correct_counts(chosen, chunk)
    assert np.unique(noise).size > 1                      # and every score


def slot_keys(chosen, index: int) -> jax.Array:
    """The score and predict keys ``[CHUNK, 2]`` of the runs of one chunk."""
    runs = jnp.arange(index * _tuning.CHUNK, (index + 1) * _tuning.CHUNK)
    noise_keys = jax.vmap(lambda run: _tuning.run_keys(chosen.runs_key, run)[1])(runs)
    return jax.vmap(lambda k: jax.random.split(k, 3)[1:])(noise_keys)


def correct_counts(chosen, chunk) -> np.ndarray:
    """Each run's correct count on the validation part, recomputed from its released model."""
    predict = jax.vmap(chosen.part.config.predict, in_axes=(0, None, 0))
    predicted = jax.jit(predict)(chunk.params, chosen.val_codes, slot_keys(chosen, 0)[:, 1])
    return np.sum(np.asarray(predicted) == np.asarray(chosen.val_y)[None], axis=1)


def test_the_score_is_the_exact_discrete_laplace_release_of_the_correct_count(fixed_runs):
    """Each run's score is :func:`laplace_mechanism` (exact discrete Laplace, integer,
    sensitivity 1, at ``ε_c``) of its model's correct count, with the run's own score key;
    its cost is at most ``ε_c``."""
    chosen, chunk = fixed_runs
    correct = correct_counts(chosen, chunk)
    assert (correct >= 0).all() and (correct <= chosen.val_y.shape[0]).all()
    release = jax.vmap(lambda key, count: laplace_mechanism(
        key, count, 1, jnp.float32(chosen.epsilon_c), integer=True))
    expected, cost = jax.jit(release)(slot_keys(chosen, 0)[:, 0], jnp.asarray(correct, jnp.int32))
    np.testing.assert_array_equal(chunk.scores, np.asarray(expected))
    np.testing.assert_array_equal(chunk.score_epsilons, np.asarray(cost.epsilon))
    assert (chunk.score_epsilons <= chosen.epsilon_c).all()
    assert "discrete Laplace" in cost.mechanism


# --------------------------------------------------------------------------------------------
# Candidates and the search space
# --------------------------------------------------------------------------------------------

def test_listed_candidates_are_drawn_from_their_lists(data):
    lists = {"learning_rate": [0.5, 2.0], "min_signal": [2.0, 8.0]}
    model = tune(*data, candidates=lists, stop_probability=0.3)
    for name, values in lists.items():
        assert model.hyperparams[name] in values
    assert model.hyperparams["regularisation"] == Boosted().regularisation
    assert model.privacy.epsilon <= EPSILON


def test_a_callable_draws_each_run_with_its_own_key(data):
    seen = []

    def draw(key):
        seen.append(tuple(np.asarray(jax.random.key_data(key)).tolist()))
        return {"learning_rate": float(jax.random.uniform(key, minval=0.5, maxval=2.0))}

    model = tune(*data, candidates=draw, stop_probability=0.3)
    assert 0.5 <= model.hyperparams["learning_rate"] <= 2.0
    assert len(seen) == len(set(seen)) and len(seen) % _tuning.CHUNK == 0


def test_the_default_space_is_around_the_defaults():
    config = Boosted()
    space = _tuning.search_space(config, fixed=("regularisation",))
    names = {d.name for d in space.dimensions}
    assert {"learning_rate", "min_signal", "cell_signal", "split_share"} <= names
    assert "regularisation" not in names and "regularisation" in space.fixed
    points = jax.vmap(space.draw)(jax.random.split(jax.random.key(3), 2000))
    for dimension in space.dimensions:
        values = np.asarray(points[dimension.name])
        default = getattr(config, dimension.name)
        if dimension.kind == "log":
            assert (values >= default / _tuning.SPREAD * (1 - 1e-6)).all()
            assert (values <= default * _tuning.SPREAD * (1 + 1e-6)).all()
            # log-uniform: the median of log(value / default) is 0
            assert abs(np.median(np.log(values / default))) < 0.1
        else:
            assert ((values > 0) & (values < 1)).all()
        config.replace(**{dimension.name: float(values.max())})     # valid values


# --------------------------------------------------------------------------------------------
# Data the fit must take, and argument errors
# --------------------------------------------------------------------------------------------

def test_a_single_class_still_fits(data):
    X, _ = data
    model = tune(X, np.ones(M, int))
    assert model.privacy.private and model.privacy.epsilon <= EPSILON
    assert set(np.unique(model.predict(X))) <= {0, 1}


def test_an_empty_training_part_still_fits():
    """The coins may leave no training row (here: 4 rows, validation share 0.99): the fit
    runs on none, no exception depends on the data."""
    rng = np.random.default_rng(1)
    X, y = rng.uniform(0, 1, (4, 2)), np.array([0, 1, 1, 0])
    assert split_size(KEY, 4, 0.99) == 4
    model = tune(X, y, validation_share=0.99, stop_probability=0.5)
    assert model.privacy.private and model.privacy.epsilon <= EPSILON
    assert model.predict(X).shape == (4,)


def test_the_training_part_size_is_public_under_replace_one_only(data):
    """Under replace-one the row count and the key's coins are public, so the training part's
    size is too (the learner uses it); under add/remove the learner releases a noisy count."""
    assert selection(*data).part.size is None
    replace = selection(*data, neighbouring="replace_one")
    assert replace.part.size == replace.part.codes.shape[0] == M - split_size(KEY)
    assert replace.part.sensitivity == 2.0 and _tuning.SCORE_SENSITIVITY == 1


def test_bounds_read_off_the_data_make_the_model_not_private(data):
    with pytest.warns(dpjax.data.DataDependentWarning):
        model = tune(*data, bounds="data")
    assert not model.privacy.private and model.privacy.epsilon == np.inf
    assert model.privacy.entries[-1].mechanism == _tuning.MECHANISM


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"epsilon": None}, "epsilon must be a positive budget"),
    ({"epsilon": 0.0}, "epsilon must be > 0"),
    ({"epsilon": -1.0}, "epsilon must be > 0"),
    ({"validation_share": 0.0}, r"validation_share must be in \(0, 1\)"),
    ({"validation_share": 1.0}, r"validation_share must be in \(0, 1\)"),
    ({"validation_share": "a"}, r"validation_share must be in \(0, 1\)"),
    ({"stop_probability": 0.0}, r"stop_probability must be in \(0, 1\]"),
    ({"stop_probability": 1.5}, r"stop_probability must be in \(0, 1\]"),
    ({"candidates": {"nope": [1.0]}}, r"candidates: .*no hyper-parameter\(s\) \['nope'\]"),
    ({"candidates": {"n_trees": [2, 3]}}, r"\['n_trees'\] of boosted are static"),
    ({"candidates": {"learning_rate": []}}, r"candidates\['learning_rate'\] is empty"),
    ({"candidates": {"learning_rate": 0.5}}, r"candidates\['learning_rate'\] must be a list"),
    ({"candidates": {"learning_rate": [-1.0]}}, "learning_rate must be a positive"),
    ({"candidates": {"learning_rate": [1.0]}, "learning_rate": 0.5}, "one way"),
    ({"candidates": 5}, "candidates must be None, a dict"),
    ({"candidates": lambda key: {"depth": 2}}, r"candidates\(key\): \['depth'\] of boosted"),
    ({"bounds": "private"}, "bounds='private' is dpjax.fit's"),
    ({"neighbouring": "nope"}, "neighbouring"),
])
def test_bad_arguments_are_named(data, kwargs, match):
    with pytest.raises(ValueError, match=match):
        tune(*data, **kwargs)


# --------------------------------------------------------------------------------------------
# The audit's release is tune's selection for a fixed split
# --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_audit_release_is_tunes_selection_for_its_split(data, model):
    chosen = selection(*data)
    release = _tuning.selection_release(chosen.part, chosen.space, EPSILON, GAMMA)
    params, score, point = jax.jit(release)(dpjax.as_key(KEY), (
        chosen.part.codes, chosen.part.y, chosen.val_codes, chosen.val_y))
    assert f"noisy count {float(score):.0f}" in model.privacy.entries[-1].what
    assert float(point["learning_rate"]) == pytest.approx(model.hyperparams["learning_rate"])
    chex.assert_trees_all_close(params, model.params, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("epsilon", [1e-38, 3 * float(np.finfo(np.float32).tiny)])
def test_an_epsilon_whose_third_is_not_a_normal_float32_is_refused(epsilon):
    """Refused whenever ``ε_c``, rounded down, is below the smallest normal float32 (at three
    times it, the rounded-down third is subnormal)."""
    with pytest.raises(ValueError, match="epsilon is too small for tune"):
        _tuning.run_epsilon(epsilon)
