"""Boosting past 2**23 rows (issue 30, item 4): the cell sums go wide
(:func:`dpjax.privacy.fixed_point.exact_segment_sum`) without changing a single released value,
and the public row limits say which configurations may."""

from __future__ import annotations

import collections

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dpjax
from dpjax import _preparation
from dpjax.ensembles.newton import Boosted, releases, schedule
from dpjax.ensembles.newton.schedule import MANY_FEATURES
from dpjax.learners import get_learner
from dpjax.mechanisms import laplace
from dpjax.privacy import fixed_point


def toy(m: int, n_classes: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(n_classes)
    X = rng.uniform(0.0, 1.0, size=(m, 4))
    y = (X[:, 0] * n_classes + rng.normal(scale=0.3, size=m)).astype(int) % n_classes
    return X, y


def fits(X: np.ndarray, y: np.ndarray, configs: list[dict]) -> list[list[np.ndarray]]:
    out = []
    for params in configs:
        model = dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=(0.0, 1.0), key=5,
                          classes=sorted(set(y.tolist())), n_trees=4, **params)
        assert model.privacy.epsilon <= 1.0
        out.append([np.asarray(leaf) for leaf in jax.tree.leaves(model.params)])
    return out


@pytest.mark.slow
@pytest.mark.parametrize(("n_classes", "bound"), [(2, None), (3, None), (2, 2.0**34),
                                                  (2, 2.0**44)])
def test_wide_sums_release_the_same_models_bit_for_bit(monkeypatch, n_classes, bound):
    """With the int32 limit lowered to 300 rows (chunks of 128), a 1,000-row fit takes the wide
    path and gives the same model, bit for bit, for the random and cyclic shapes, Laplace
    rounds under either relation and (two classes) Gaussian rounds: both paths hold the same
    exact integers. With the sums' public bound raised as a released size of ``2**25`` or
    ``2**35`` rows would (grids of 64 and ``2**16`` units), the wide sums' grid values are
    read through every branch of :func:`dpjax.privacy.fixed_point.shift_clip`."""
    if bound is not None:
        monkeypatch.setattr(schedule, "sums_bound", lambda size: jnp.float32(bound))
    X, y = toy(1_000, n_classes)
    configs = [{"shape": "random", "depth": 3},
               {"shape": "random", "depth": 3, "neighbouring": "replace_one"}]
    if bound is None:       # the other shape and noise on the one-unit grid
        configs.append({"shape": "cyclic"})
        if n_classes == 2:
            configs.append({"shape": "random", "depth": 3, "noise": "gaussian",
                            "delta": 1e-6})
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    narrow = fits(X, y, configs)
    monkeypatch.setattr(fixed_point, "MAX_ROWS", 300)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", 7)
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    wide = fits(X, y, configs)
    for a, b in zip(narrow, wide, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)


@pytest.mark.slow
def test_wide_level_utilities_filter_and_moments_release_the_same_models_bit_for_bit(
        monkeypatch):
    """Oblivious trees' level utilities (chunk histograms added in two limbs, their gaps
    floored exactly), the individual filter and a regression's prior (its count and target sum)
    take the wide path past the lowered int32 limit with the same models, bit for bit, private
    or not."""
    X, y = toy(1_000, 2)
    target = X[:, 0] * 4.0 + X[:, 1]
    common = {"method": "boosted", "bounds": (0.0, 1.0), "key": 5, "n_trees": 4}
    requests = [(y, {"shape": "oblivious", "depth": 3}),
                (y, {"shape": "oblivious", "depth": 2, "neighbouring": "replace_one"}),
                (y, {"shape": "random", "depth": 3, "individual": 2.0}),
                (y, {"shape": "oblivious", "depth": 3, "individual": 1.5}),
                (y, {"shape": "oblivious", "depth": 3, "epsilon": None}),
                (target, {"task": "regression", "y_bounds": (0.0, 5.0)}),
                (target, {"task": "regression", "y_bounds": (0.0, 5.0),
                          "neighbouring": "replace_one"}),
                (target, {"task": "regression", "y_bounds": (0.0, 5.0), "epsilon": None})]

    def fitted() -> list[list[np.ndarray]]:
        out = []
        for labels, params in requests:
            params = {"epsilon": 1.0, **common, **params}
            if "task" not in params:
                params["classes"] = [0, 1]
            model = dpjax.fit(X, labels, **params)
            out.append([np.asarray(leaf) for leaf in jax.tree.leaves(model.params)])
        return out

    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    narrow = fitted()
    monkeypatch.setattr(fixed_point, "MAX_ROWS", 300)
    monkeypatch.setattr(fixed_point, "CHUNK_BITS", 7)
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    wide = fitted()
    for a, b in zip(narrow, wide, strict=True):
        for u, v in zip(a, b, strict=True):
            np.testing.assert_array_equal(u, v)


def test_a_coarse_grid_charges_every_coordinate_a_change_moves(monkeypatch):
    """On a coarse grid a round's integer sensitivity is ``⌈Δ/s⌉ + touched − 1``: 2
    coordinates under add/remove (one record's cell), 4 under replace-one (the removed and the
    added record may lie in two cells)."""
    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs["touched"])
        return laplace.laplace_mechanism(*args, **kwargs)

    monkeypatch.setattr(releases, "laplace_mechanism", spy)
    monkeypatch.setattr(_preparation, "_COMPILED", collections.OrderedDict())
    X, y = toy(200, 2)
    for neighbouring in ("add_remove", "replace_one"):
        dpjax.fit(X, y, method="boosted", epsilon=1.0, bounds=(0.0, 1.0), key=0,
                  shape="random", n_trees=2, neighbouring=neighbouring)
    assert sorted(set(seen)) == [2, 4]


def test_the_row_limit_is_wide_for_every_private_fit():
    """Every private fit takes up to ``WIDE_MAX_ROWS`` rows, oblivious trees, the individual
    filter and regression included; without DP there is no limit, but for oblivious trees of 18
    levels or more, whose chunked level histograms' int32 segment index (``chunks·2**(d−1)``
    nodes of up to 256 codes) caps the rows, private or not."""
    wide = fixed_point.WIDE_MAX_ROWS
    assert Boosted(shape="random").row_limit(True, 20) == wide
    assert Boosted(shape="cyclic").row_limit(True, 200) == wide
    assert Boosted().row_limit(True, MANY_FEATURES) == wide
    assert Boosted(shape="oblivious").row_limit(True, 5) == wide
    assert Boosted(shape="random", individual=2.0).row_limit(True, 5) == wide
    assert Boosted(shape="random").row_limit(True, 5, regression=True) == wide
    assert Boosted(shape="random").row_limit(False, 5) is None
    shape = (fixed_point.WIDE_MAX_ROWS + 1, 3)
    assert Boosted(shape="oblivious", depth=17).row_limit(True, 5) == wide
    for depth in (18, 19, 20):
        limit = Boosted(shape="oblivious", depth=depth).row_limit(False, 5)
        chunks = -(-limit // 2**fixed_point.CHUNK_BITS)
        assert limit < wide and chunks * 2 ** (depth - 1) * 256 < 2**31
        assert (chunks + 1) * 2 ** (depth - 1) * 256 >= 2**31
        assert Boosted(shape="oblivious", depth=depth).row_limit(True, 5) == limit
        assert Boosted(depth=depth).row_limit(True, MANY_FEATURES) == limit
        # without DP, or for a regression, "auto" grows no oblivious tree
        assert Boosted(depth=depth).row_limit(False, MANY_FEATURES) is None
        assert Boosted(depth=depth).row_limit(True, 5, regression=True) == wide
    with pytest.raises(ValueError, match="boosted regression fits at most 268435455 rows"):
        _preparation.check_limits(Boosted(shape="random"), shape, 10, 1, 1, private=True,
                                  regression=True)


def test_the_footprint_counts_a_level_histogram_per_chunk_of_rows():
    """Past ``MAX_ROWS`` rows an oblivious level histograms every chunk of ``2**CHUNK_BITS``
    rows apart: the memory guard counts one set of histograms per chunk."""
    deep = Boosted(shape="oblivious", depth=10)
    narrow = deep.level_histograms(fixed_point.MAX_ROWS, 64, 256)
    assert narrow == 16.0 * 2**9 * 64 * 256
    assert deep.level_histograms(2**26, 64, 256) == 16 * narrow
    assert Boosted(shape="random").level_histograms(2**26, 64, 256) == 0.0


def test_no_fit_takes_more_rows_than_int32_counts():
    """Every learner, private or not: counts and row indices are int32 (the tightest limit
    is the one reported)."""
    shape = (_preparation.ROW_LIMIT + 1, 3)
    for config, private in ((Boosted(shape="random"), False),
                            (get_learner("random_trees"), True),
                            (get_learner("random_trees"), False)):
        with pytest.raises(ValueError, match="dpjax fits at most 2147483647 rows"):
            _preparation.check_limits(config, shape, 10, 2, 1, private=private)
    with pytest.raises(ValueError, match="boosted fits at most 268435455 rows"):
        _preparation.check_limits(Boosted(shape="random"), shape, 10, 2, 1, private=True)
