"""Row buckets (issue 30, item 6): ``dpjax.fit`` and ``dpjax.sweep`` pad the rows of a learner
that ignores padding rows (``Learner.pads_rows``) up to their bucket, so that row counts of one
bucket share one compiled program; the padded fit is the unpadded one bit for bit."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import dpjax
from dpjax import _buckets, _model
from dpjax._buckets import (
    BUCKET_MAX_ROWS,
    BUCKET_MIN_ROWS,
    BUCKET_STEPS,
    pad_to_bucket,
    row_bucket,
)
from dpjax._preparation import prepare
from dpjax.learners import LEARNERS, load_all

ROWS = 1100          # bucket 1152: 52 padding rows


def data(rows: int = ROWS, n_classes: int = 2, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0, 1, (rows, 4))
    score = X[:, 0] + 0.5 * X[:, 1] + 0.3 * rng.normal(size=rows)
    return X, np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))


def equal_trees(a, b) -> bool:
    same = jax.tree.map(lambda u, v: bool(np.array_equal(np.asarray(u), np.asarray(v))), a, b)
    return all(jax.tree.leaves(same))


def padded_and_unpadded(monkeypatch, call):
    """``call()`` with the rows padded to their bucket (the default) and without padding."""
    padded = call()
    with monkeypatch.context() as patch:
        patch.setattr(_buckets, "BUCKET_MAX_ROWS", 0)
        unpadded = call()
    return padded, unpadded


def test_row_bucket():
    assert row_bucket(1) == row_bucket(BUCKET_MIN_ROWS) == BUCKET_MIN_ROWS
    rows = np.arange(1, 3 * 2**14)
    buckets = np.array([row_bucket(int(r)) for r in rows])
    assert (buckets >= rows).all() and (np.diff(buckets) >= 0).all()
    large = rows > BUCKET_MIN_ROWS
    assert (buckets[large] <= rows[large] * (1 + 1 / BUCKET_STEPS)).all()
    # BUCKET_STEPS buckets per power of two: 2**12, 2**12 + 2**9, ..., up to 2**13
    octave = (rows > 2**12) & (rows <= 2**13)
    assert len(np.unique(buckets[octave])) == BUCKET_STEPS
    assert row_bucket(BUCKET_MAX_ROWS) == BUCKET_MAX_ROWS
    assert row_bucket(1100) == 1152


def test_every_built_in_learner_pads():
    """Pinned: every built-in learner's default ignores padding rows."""
    load_all()
    assert {name: cls().pads_rows for name, cls in LEARNERS.items()} == {
        "boosted": True, "malpha": True, "random_trees": True, "rf_exponential": True,
        "rf_laplace": True, "rule_list": True, "smooth_boost": True}


def test_a_fit_pads_with_no_class_and_no_weight():
    X, y = data()
    prepared = prepare(X, y, method="random_trees", epsilon=1.0, bounds=(0.0, 1.0),
                       classes=(0, 1, 2), n_bins=None, missing="error",
                       on_out_of_bounds="clip", neighbouring="add_remove", params={},
                       sample_weight=np.ones(ROWS), pad=True)
    codes, labels = np.asarray(prepared.codes), np.asarray(prepared.y)
    weights = np.asarray(prepared.weights)
    assert codes.shape == (1152, 4) and codes.dtype == np.uint8 and labels.shape == (1152,)
    assert (codes[ROWS:] == 0).all() and (labels[ROWS:] == 3).all()
    assert (weights[ROWS:] == 0).all() and (weights[:ROWS] == 1).all()
    big = np.ones((BUCKET_MAX_ROWS + 1, 1), np.uint8)
    assert pad_to_bucket(big, 0) is big


CASES = [
    ("random_trees", {}, 1.0),
    ("boosted", {}, 1.0),
    ("rule_list", {}, 1.0),
    pytest.param("random_trees", {}, None, marks=pytest.mark.slow),
    pytest.param("rf_laplace", {}, 1.0, marks=pytest.mark.slow),
    pytest.param("rf_exponential", {}, 1.0, marks=pytest.mark.slow),
    pytest.param("boosted", {}, None, marks=pytest.mark.slow),
    pytest.param("boosted", dict(shape="random"), 1.0, marks=pytest.mark.slow),
    pytest.param("boosted", dict(shape="oblivious"), 1.0, marks=pytest.mark.slow),
    pytest.param("boosted", dict(shape="oblivious"), None, marks=pytest.mark.slow),
    pytest.param("boosted", dict(individual=2.0), 1.0, marks=pytest.mark.slow),
    pytest.param("boosted", dict(noise="gaussian", delta=1e-5), 3.0, marks=pytest.mark.slow),
    ("malpha", {}, 1.0),
    pytest.param("malpha", {}, None, marks=pytest.mark.slow),
    pytest.param("malpha", dict(budget="paper"), 1.0, marks=pytest.mark.slow),  # noisy count
    pytest.param("malpha", dict(alpha=0.5, oc_alpha="exact"), 1.0, marks=pytest.mark.slow),
    ("smooth_boost", {}, 1.0),
    pytest.param("smooth_boost", {}, None, marks=pytest.mark.slow),
    pytest.param("smooth_boost", dict(weak_learner="tree"), 1.0, marks=pytest.mark.slow),
    pytest.param("smooth_boost", dict(weak_learner="halfspace", delta=1e-6), 1.0,
                 marks=pytest.mark.slow),
    pytest.param("smooth_boost", dict(public_size=ROWS), 1.0, marks=pytest.mark.slow),
    pytest.param("rule_list", {}, None, marks=pytest.mark.slow),
    pytest.param("rule_list", dict(pair_search="greedy"), 1.0, marks=pytest.mark.slow),
    pytest.param("rule_list", dict(max_card=1), 1.0, marks=pytest.mark.slow),
    pytest.param("rule_list", dict(selection="smooth_laplace", delta=1e-6), 1.0,
                 marks=pytest.mark.slow),
]


@pytest.mark.parametrize(("method", "params", "epsilon"), CASES)
def test_the_padded_fit_is_the_unpadded_fit(monkeypatch, method, params, epsilon):
    X, y = data()
    padded, unpadded = padded_and_unpadded(monkeypatch, lambda: dpjax.fit(
        X, y, method=method, epsilon=epsilon, key=3, bounds=(0.0, 1.0), **params))
    assert equal_trees(padded.params, unpadded.params)
    assert padded.privacy == unpadded.privacy


@pytest.mark.slow
@pytest.mark.parametrize(("method", "options"), [
    ("boosted", dict(classes=(0, 1, 2))),                           # the softmax loss
    ("random_trees", dict(classes=(0, 1, 2))),
    ("random_trees", dict(sample_weight=np.linspace(0.0, 1.0, ROWS))),
    ("random_trees", dict(sample_weight=np.linspace(0.0, 1.0, ROWS), epsilon=None)),
    ("boosted", dict(neighbouring="replace_one")),                  # a public size
    ("rf_laplace", dict(public_size=ROWS)),
    ("random_trees", dict(budget="paper")),
    ("rf_exponential", dict(prior_share=0.0)),
])
def test_padding_is_inert_for_classes_weights_and_sizes(monkeypatch, method, options):
    X, y = data(n_classes=len(options.get("classes", (0, 1))))
    options = {"epsilon": 1.0, **options}
    padded, unpadded = padded_and_unpadded(monkeypatch, lambda: dpjax.fit(
        X, y, method=method, key=5, bounds=(0.0, 1.0), **options))
    assert equal_trees(padded.params, unpadded.params)
    assert padded.privacy == unpadded.privacy


@pytest.mark.slow
def test_every_learner_that_pads_fits_the_same_model(monkeypatch):
    """The contract of ``pads_rows``, for every registered learner that claims it."""
    load_all()
    X, y = data()
    for name, cls in sorted(LEARNERS.items()):
        if not cls().pads_rows:
            continue
        padded, unpadded = padded_and_unpadded(monkeypatch, lambda name=name: dpjax.fit(
            X, y, method=name, epsilon=1.0, key=7, bounds=(0.0, 1.0)))
        assert equal_trees(padded.params, unpadded.params), name


@pytest.mark.slow
@pytest.mark.parametrize(("method", "n_classes"), [("boosted", 2), ("boosted", 3),
                                                  ("random_trees", 2), ("malpha", 2),
                                                  ("smooth_boost", 2)])
def test_a_padded_sweep_is_the_unpadded_sweep(monkeypatch, method, n_classes):
    X, y = data(n_classes=n_classes)
    padded, unpadded = padded_and_unpadded(monkeypatch, lambda: dpjax.sweep(
        X, y, method=method, epsilon=[0.5, 2.0], seeds=[1, 2], bounds=(0.0, 1.0),
        classes=tuple(range(n_classes))))
    assert equal_trees(padded.params, unpadded.params)
    assert padded.ledgers == unpadded.ledgers


def test_row_counts_of_one_bucket_share_a_program():
    X, y = data(1150)
    first = dpjax.fit(X[:1101], y[:1101], method="random_trees", epsilon=1.0, key=0,
                      bounds=(0.0, 1.0), n_trees=7)
    assert first.timings.compile_s > 0.0
    for rows in (1102, 1150):       # the same bucket: no compile
        model = dpjax.fit(X[:rows], y[:rows], method="random_trees", epsilon=1.0, key=0,
                          bounds=(0.0, 1.0), n_trees=7)
        assert model.timings.compile_s == 0.0


@pytest.mark.parametrize(("method", "options", "padded"), [
    ("random_trees", {}, True),
    ("rule_list", dict(calibration="paper", selection="smooth_laplace"), False),  # reads m
    ("malpha", {}, True),
    ("smooth_boost", {}, True),
    ("boosted", dict(task="regression", y_bounds=(0.0, 2.0)), False),
])
def test_which_fits_are_padded(method, options, padded):
    X, y = data()
    prepared = prepare(X, y, method=method, epsilon=1.0, bounds=(0.0, 1.0), classes=None,
                       n_bins=None, missing="error", on_out_of_bounds="clip",
                       neighbouring="add_remove", params={k: v for k, v in options.items()
                                                          if k not in ("task", "y_bounds")},
                       task=options.get("task", "classification"),
                       y_bounds=options.get("y_bounds"), delta=1e-6, pad=True)
    assert prepared.codes.shape[0] == prepared.rows == (row_bucket(ROWS) if padded else ROWS)


def test_fits_past_the_largest_bucket_are_not_padded(monkeypatch):
    """(A fit over several devices pads them to a multiple of the device count:
    ``tests/runtime/test_sharding.py`` shows it equals the one-device fit.)"""
    X, y = data()
    monkeypatch.setattr(_buckets, "BUCKET_MAX_ROWS", ROWS - 1)
    prepared = prepare(X, y, method="random_trees", epsilon=1.0, bounds=(0.0, 1.0),
                       classes=None, n_bins=None, missing="error", on_out_of_bounds="clip",
                       neighbouring="add_remove", params={}, pad=True)
    assert prepared.codes.shape[0] == ROWS


PREDICTORS = [("random_trees", {}), ("boosted", {}), ("malpha", {}), ("rule_list", {}),
              ("smooth_boost", {}), ("rf_laplace", dict(voting="probabilistic"))]


@pytest.mark.parametrize(("method", "params"), PREDICTORS)
def test_padded_predictions_are_the_unpadded_ones(monkeypatch, method, params):
    """A deterministic rule's rows are padded to their bucket and dropped after (its scores
    as an unpadded call's up to the last float32 bit: each shape's program is its own); a
    randomised rule (``voting="probabilistic"``) keeps its rows, so its draws are the same."""
    X, y = data()
    model = dpjax.fit(X[:300], y[:300], method=method, epsilon=1.0, key=0,
                      bounds=(0.0, 1.0), **params)
    key = 4 if model.learner.needs_predict_key else None

    def predictions():
        out = [model.predict(X, key=key), model.score(X, y, key=key)]
        if not model.learner.needs_predict_key:
            out.append(model.predict_proba(X))
        if method in ("boosted", "malpha"):
            out.append(model.decision_function(X))
        return out

    padded, unpadded = padded_and_unpadded(monkeypatch, predictions)
    assert padded[0].shape == (ROWS,)
    np.testing.assert_array_equal(padded[0], unpadded[0])           # the labels
    for a, b in zip(padded[1:], unpadded[1:], strict=True):         # scores: to the last bit
        np.testing.assert_allclose(a, b, rtol=4e-7, atol=0)


def test_predictions_of_one_bucket_share_a_program():
    X, y = data(1152)
    model = dpjax.fit(X, y, method="boosted", epsilon=1.0, key=0, bounds=(0.0, 1.0))
    _model._jitted_proba.cache_clear()
    for rows in (1025, 1100, 1152):         # one bucket: one program
        assert model.predict_proba(X[:rows]).shape == (rows, 2)
    assert _model._jitted_proba(model.learner)._cache_size() == 1


@pytest.mark.slow
def test_a_sweeps_padded_predictions_are_the_unpadded_ones(monkeypatch):
    X, y = data()
    swept = dpjax.sweep(X[:300], y[:300], method="boosted", epsilon=[0.5, 2.0], seeds=2,
                        bounds=(0.0, 1.0))
    padded, unpadded = padded_and_unpadded(monkeypatch, lambda: (
        swept.predict(X), swept.predict_proba(X), swept.score(X, y)))
    assert padded[0].shape == (2, 2, ROWS)
    np.testing.assert_array_equal(padded[0], unpadded[0])
    np.testing.assert_allclose(padded[1], unpadded[1], rtol=4e-7, atol=0)
    np.testing.assert_array_equal(padded[2], unpadded[2])


@pytest.mark.parametrize(("method", "params"), [
    ("boosted", dict(noise="gaussian", delta=1e-5, epsilon=2.0)),
    ("random_trees", {}), ("malpha", {}), ("smooth_boost", {}), ("rule_list", {})])
def test_a_rows_scores_are_the_same_bits_in_every_batch_of_its_bucket(method, params):
    """Batches of 1 to 1024 rows run the 1024-row program, and of 1025 to 1152 rows the
    1152-row one: within a bucket a row's scores do not depend on the rows beside it."""
    X, y = data(1152)
    params = {"epsilon": 1.0, **params}
    model = dpjax.fit(X[:500], y[:500], method=method, key=1, bounds=(0.0, 1.0), **params)
    score = (model.decision_function if method in ("boosted", "malpha")
             else model.predict_proba)
    for bucket, batches in ((1024, (1, 37, 1000)), (1152, (1025, 1100))):
        every = score(X[:bucket])
        for rows in batches:
            np.testing.assert_array_equal(score(X[:rows]), every[:rows])
