"""Rule lists past 2**24 rows (issue 30, item 4): the Gini-weighted counts go wide
(:func:`dpjax.rules.candidates.wide_gini_count`, canonical two-limb sums) without changing a
single released value, exact up to int32 counts."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _preparation
from dpjax.learners import get_learner
from dpjax.privacy import fixed_point
from dpjax.rules import candidates, greedy
from dpjax.rules.candidates import gini_count, wide_gini_count
from tests.rules.test_rule_lists import count_pairs, exact_gini_count

LARGEST = 2**31 - 1


def wide_pairs(seed: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs with ``a + b <= 2**31 − 1``: log-uniform totals past ``2**24`` (the largest
    included), random splits, and the extremes of the 32-bit arithmetic."""
    rng = np.random.default_rng(seed)
    total = np.exp(rng.uniform(np.log(2**24), np.log(LARGEST), count)).astype(np.int64)
    total[: count // 4] = rng.integers(LARGEST - 10_000, LARGEST + 1, count // 4)
    a = (rng.uniform(size=count) * (total + 1)).astype(np.int64).clip(0, total)
    extremes = [(LARGEST, 0), (0, LARGEST), (LARGEST - 1, 1), (2**30, 2**30 - 1),
                (2**30 - 1, 2**30), (2**16, 2**16), (2**31 - 2**16, 2**16 - 1), (0, 0),
                (1, 1), (2**24, 2**24)]
    a = np.concatenate([a, [e[0] for e in extremes]])
    b = np.concatenate([total - a[: count], [e[1] for e in extremes]])
    assert np.all(a + b <= LARGEST) and np.all(a >= 0) and np.all(b >= 0)
    return a, b


def value(w: fixed_point.WideSum) -> np.ndarray:
    lo = np.asarray(w.lo, np.int64)
    assert np.all((lo >= 0) & (lo < 2**16))                       # canonical
    return np.asarray(w.hi, np.int64) * 2**16 + lo


def test_wide_gini_count_is_the_exact_floor_up_to_int32_counts():
    a, b = wide_pairs(3, 20_000)
    got = value(jax.jit(wide_gini_count)(jnp.asarray(a, jnp.int32), jnp.asarray(b, jnp.int32)))
    want = np.array([exact_gini_count(int(x), int(z)) for x, z in zip(a, b, strict=True)])
    np.testing.assert_array_equal(got, want)
    assert want.max() >= 2**36                                    # past int32 exercised


def test_wide_gini_count_equals_gini_count_below_its_limit():
    a, b = (jnp.asarray(x, jnp.int32) for x in count_pairs(4, 5_000))
    np.testing.assert_array_equal(value(jax.jit(wide_gini_count)(a, b)),
                                  np.asarray(jax.jit(gini_count)(a, b), np.int64))


def test_wide_gini_count_rises_by_less_than_one_count_per_record():
    """The sensitivity argument: one more record in a part raises ``a·b/s`` by less than one
    count (``2**8`` units, the floor moving it by less than one unit) and never lowers it."""
    a, b = wide_pairs(5, 5_000)
    keep = a + b + 1 <= LARGEST
    a, b = jnp.asarray(a[keep], jnp.int32), jnp.asarray(b[keep], jnp.int32)
    fn = jax.jit(wide_gini_count)
    base = value(fn(a, b))
    for more in (fn(a + 1, b), fn(a, b + 1)):
        step = value(more) - base
        assert np.all(step >= 0) and np.all(step <= 256)


def toy(m: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    X = rng.integers(0, 4, size=(m, 4)).astype(float)
    y = ((X[:, 0] >= 2) ^ (rng.uniform(size=m) < 0.15)).astype(int)
    return X, y


CONFIGS = [
    {},                                                        # the defaults (exhaustive pairs)
    {"pair_search": "greedy"},
    {"max_card": 1},
    {"neighbouring": "replace_one"},
    {"selection": "smooth_laplace", "delta": 1e-6},
    {"selection": "exponential", "calibration": "paper"},      # labelled not private
    {"selection": "smooth_cauchy", "delta": 1e-6, "calibration": "paper"},
    {"epsilon": None},                                         # GreedyRL, its tie-breaks
]


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::dpjax.data.DataDependentWarning",
                            "ignore::dpjax.rules.UnprovenClaimWarning")
def test_wide_scores_release_the_same_rule_lists_bit_for_bit(monkeypatch):
    """With the int32 limit lowered to 300 rows, a 1,000-row fit scores wide and gives the
    same rule list and ledger, bit for bit, for the default search, the greedy pair search,
    single literals, replace-one, the paper's selections and the non-private GreedyRL: both
    paths hold the same exact integers."""
    X, y = toy(1_000)

    def fitted() -> list[list[np.ndarray]]:
        out = []
        for params in CONFIGS:
            params = {"epsilon": 1.0, **params}
            model = dpjax.fit(X, y, method="rule_list", bounds=(0.0, 3.0), n_bins=4,
                              key=5, classes=[0, 1], **params)
            out.append([np.asarray(leaf) for leaf in jax.tree.leaves(model.params)]
                       + [np.float64(model.privacy.epsilon)])
        return out

    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    narrow = fitted()
    monkeypatch.setattr(candidates, "MAX_ROWS", 300)
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    widened = []
    wide = candidates.wide_gini_count
    monkeypatch.setattr(candidates, "wide_gini_count",
                        lambda *a: widened.append(1) or wide(*a))
    wide_fits = fitted()
    assert len(widened) >= 3 * len(CONFIGS)
    for a, b in zip(narrow, wide_fits, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)


def test_rule_lists_take_up_to_wide_max_rows():
    """Past ``2**24 − 1`` rows the scores are wide; the released counts keep the limit at
    ``WIDE_MAX_ROWS`` (the Laplace mechanism's ``2**28`` grid steps)."""
    config = get_learner("rule_list")
    assert config.row_limit(True, 10) == fixed_point.WIDE_MAX_ROWS
    _preparation.check_limits(config, (2**24 + 1, 3), 10, 2, 1, private=True)
    with pytest.raises(ValueError, match="rule_list fits at most 268435455 rows"):
        _preparation.check_limits(config, (2**28, 3), 10, 2, 1, private=True)


def test_non_private_labels_compare_exact_counts(monkeypatch):
    """GreedyRL (not private) labels each rule by its exact int32 counts: past ``2**24``
    records in a cell, float32 counts would round a one-record majority into a tie (to 1)."""
    counts = jnp.asarray([[2**24 + 1, 2**24], [2**24, 2**24 + 1], [7, 7]], jnp.int32)
    np.testing.assert_array_equal(greedy.label_of(counts), [0, 1, 1])
    assert int(greedy.label_of(counts.astype(jnp.float32))[0]) == 1    # the tie avoided
    seen = []
    label_of = greedy.label_of
    monkeypatch.setattr(greedy, "label_of", lambda c: seen.append(c.dtype) or label_of(c))
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    X, y = toy(200)
    model = dpjax.fit(X, y, method="rule_list", epsilon=None, bounds=(0.0, 3.0), n_bins=4,
                      key=0, classes=[0, 1])
    assert seen == [jnp.int32]
    cells = np.asarray(greedy.rule_cells(model.params, model.encode(X)))
    exact = np.stack([np.bincount(cells[y == c], minlength=model.params.label.shape[0])
                      for c in (0, 1)], axis=1)
    np.testing.assert_array_equal(model.params.label, (exact[:, 1] >= exact[:, 0]))
