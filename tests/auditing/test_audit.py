"""The empirical auditor: it flags every deliberately broken mechanism at a modest number of
draws, and no learner or mode of dpjax exceeds its claim (small audits here; the large ones and
their table live in ``audits/``)."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
import pandas as pd
import pytest

import dpjax
from dpjax.auditing import audit_release
from dpjax.auditing.canaries import canaries
from dpjax.auditing.stats import clopper_pearson, epsilon_lower_bound
from dpjax.mechanisms import laplace_mechanism

pytestmark = pytest.mark.slow

CANARIES = {canary.name: canary for canary in canaries(1.0)}


@pytest.mark.parametrize("name", sorted(CANARIES))
def test_every_canary_is_flagged(name):
    canary = CANARIES[name]
    report = audit_release(canary.release, canary.data, canary.data_prime,
                           epsilon=canary.epsilon, n=3_000, key=1, name=name)
    assert not report.passed, report.summary()
    assert report.epsilon_lb > canary.epsilon


def test_exact_laplace_audit_is_tight_and_within_the_claim():
    """The exact mechanism on a count: the auditor gets close to ε = 1 but not above it."""
    report = audit_release(
        lambda key, count: laplace_mechanism(key, count, 1.0, 1.0, integer=True)[0],
        jnp.float32(0.0), jnp.float32(1.0), epsilon=1.0, n=20_000, key=2, name="laplace")
    assert report.passed, report.summary()
    assert report.epsilon_lb > 0.8


def test_clopper_pearson_and_bound():
    lower, upper = clopper_pearson(np.array([0, 5, 10]), 10, 0.025)
    assert lower[0] == 0 and upper[2] == 1
    assert upper[0] == pytest.approx(1 - 0.025 ** (1 / 10))
    # k1 = k2: no evidence; k2 = 0: bounded by the sample size
    assert epsilon_lower_bound(50, 100, 50, 100) == 0
    assert epsilon_lower_bound(100, 100, 0, 100) == pytest.approx(
        math.log((0.025 ** (1 / 100)) / (1 - 0.025 ** (1 / 100))))
    assert epsilon_lower_bound(100, 100, 0, 100, delta=0.99) == 0


def test_report_summary_is_one_line():
    canary = CANARIES["no_noise"]
    report = audit_release(canary.release, canary.data, canary.data_prime, epsilon=1.0, n=500)
    assert "\n" not in report.summary() and "VIOLATION" in report.summary()
    assert report.counts[1] == 0


# --------------------------------------------------------------------------------------------
# Every learner and mode, both neighbouring relations
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small():
    """Twelve rows in [0, 1]^2, label = a > 1/2: one added outlier moves a leaf noticeably."""
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.uniform(0, 1, 12), "b": rng.uniform(0, 1, 12)})
    return X, (X.a > 0.5).astype(int).to_numpy(), {"a": (0.0, 1.0), "b": (0.0, 1.0)}


MODES = [
    ("boosted", dict()),
    ("boosted", dict(shape="random", n_trees=2, depth=2)),
    ("boosted", dict(shape="random", n_trees=60, depth=1, delta=1e-5, min_signal=1e-3)),
    ("boosted", dict(noise="gaussian", delta=1e-5, min_signal=1e-3)),
    ("malpha", dict(n_trees=1, depth=2, budget="paper")),
    ("random_trees", dict(n_trees=1, depth=2)),
    ("rf_laplace", dict(n_trees=1, depth=1)),
    ("rf_exponential", dict(n_trees=1, depth=1)),
    ("malpha", dict(n_trees=1, depth=2)),
    ("malpha", dict(n_trees=1, depth=2, leaf_mechanism="value", beta_mode="fold",
                     leaf_composition="sequential")),
    ("malpha", dict(n_trees=1, depth=1, alpha=1.0, leaf_mechanism="counts",
                     beta_mode="post", leaf_composition="parallel", beta_tree=0.1)),
    ("malpha", dict(n_trees=2, depth=1, alpha=0.5, leaf_mechanism="value",
                     beta_mode="laplace")),
    ("smooth_boost", dict(n_rounds=2, min_signal=1e-3)),
    ("smooth_boost", dict(weak_learner="tree", n_rounds=1, tree_splits=1, min_signal=1e-3)),
    ("smooth_boost", dict(weak_learner="halfspace", n_rounds=1, min_signal=1e-3, delta=1e-5)),
    ("rule_list", dict(max_rules=2)),
    ("rule_list", dict(max_rules=2, selection="smooth_laplace", delta=1e-5, min_support=0.2)),
    ("rule_list", dict(max_rules=2, selection="smooth_cauchy", delta=1e-5, min_support=0.2)),
    ("rule_list", dict(max_rules=1, max_card=1, selection="global_laplace")),
    ("rule_list", dict(max_rules=1, max_card=1, selection="global_gaussian", delta=1e-5)),
    ("rule_list", dict(max_rules=2, selection="exponential")),
]


@pytest.mark.parametrize("neighbouring", ["add_remove", "replace_one"])
@pytest.mark.parametrize("mode", range(len(MODES)))
def test_learners_stay_within_their_claim(small, mode, neighbouring):
    X, y, bounds = small
    method, params = MODES[mode]
    report = dpjax.audit(X, y, method=method, epsilon=1.0, bounds=bounds,
                         neighbouring=neighbouring, n=2_000, key=mode, **params)
    assert report.passed, report.summary()


def test_sweep_releases_compose_within_the_summed_claim(small):
    """Two models of one sweep (ε = 1 and 2) are audited together against 1 + 2: with a shared
    noise draw (the old sweep) the auditor recovers the data exactly (a residual event)."""
    X, y, bounds = small
    report = dpjax.audit(X, y, method="random_trees", epsilon=[1.0, 2.0], bounds=bounds,
                         n=2_000, n_trees=1, depth=1)
    assert report.epsilon == 3.0
    assert report.passed, report.summary()


def test_paper_fast_beta_is_flagged_as_not_private(small):
    X, y, bounds = small
    with pytest.warns(dpjax.data.DataDependentWarning):
        report = dpjax.audit(X, y, method="malpha", epsilon=1.0, bounds=bounds, n=200,
                             n_trees=1, depth=1, leaf_mechanism="value",
                             beta_mode="paper_fast")
    assert "NOT PRIVATE" in report.name


def test_user_given_neighbours_and_records(small):
    X, y, bounds = small
    report = dpjax.audit(X, y, method="rf_laplace", epsilon=1.0, bounds=bounds, n=300,
                         record=([0.0, 1.0], 0), n_trees=1, depth=1)
    assert report.n == 300
    X2 = pd.concat([X, X.iloc[:1]], ignore_index=True)
    report = dpjax.audit(X, y, method="rf_laplace", epsilon=1.0, bounds=bounds, n=300,
                         X_prime=X2, y_prime=np.append(y, 1), n_trees=1, depth=1)
    assert report.passed
    with pytest.raises(ValueError, match="y_prime"):
        dpjax.audit(X, y, method="rf_laplace", bounds=bounds, X_prime=X2, n=10)
