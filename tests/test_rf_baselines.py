"""The RF-L / RF-E random-forest baselines of Nock & Henecka (spec
``boosted-dp-trees-malpha.md`` §6.5, §4.1): ``method="rf_laplace"`` / ``"rf_exponential"``."""

from __future__ import annotations

import functools
import math

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import Z, binomial_tolerance, learner_fit, pf_probabilities, reference_leaf

import dpjax
from dpjax.api import grid_keys
from dpjax.ensembles import forest_predict, forest_proba
from dpjax.ensembles import random_trees as rt
from dpjax.ensembles.random_trees import fit_random_trees, leaf_epsilon
from dpjax.learners import get_learner
from dpjax.mechanisms.exact import laplace_fraction
from dpjax.mechanisms.rounding import round_up
from dpjax.trees import DenseTree, leaf_index

T_DEFAULT, D_DEFAULT = 21, 4
N_LEAVES = T_DEFAULT * 2**D_DEFAULT  # 336 per-leaf releases under the default composition
EPS = 0.7
BOUNDS = (np.zeros(3), np.ones(3))
# every budget inside a fit is rounded down (float32): totals land in [eps (1 - SLACK), eps]
SLACK = 2e-3


def laplace_cost(epsilon: float, releases: int, sensitivity: float = 1.0) -> float:
    """The cost of one count-vector release at ``eps / releases``: the float32 share rounded
    down, then ``Delta s/t`` of the exact discrete-Laplace scale ``t/s >= Delta/share``
    (computed here eagerly; a jitted fit may round the share one float32 ulp differently, so
    compare with ``rel=1e-5``)."""
    share = leaf_epsilon(jnp.float32(epsilon), releases, 0, "tree")
    t, s = laplace_fraction(round_up(jnp.float32(math.ceil(sensitivity)) / share))
    return float(np.float32(sensitivity * int(s) / int(t)))


def assert_within_budget(spent: float, epsilon: float) -> None:
    assert spent <= epsilon
    assert spent >= epsilon * (1 - SLACK)


def easy_data(seed: int, m: int, n_classes: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Three features in [0, 1]; the class is a function of feature 0 only (10 equal bins, so
    for two classes the label is ``code_0 > 4``)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, (m, 3))
    y = np.minimum((X[:, 0] * n_classes).astype(np.int64), n_classes - 1)
    return X, y


@pytest.fixture(scope="module")
def easy():
    """Train (m = 400) and test (m = 600) sets of the planted binary problem; every
    ``dpjax.fit`` on the train set with one static configuration shares one compilation."""
    return easy_data(0, 400), easy_data(1, 600)


# leaf of every example in every tree of a forest, [T, m] (jitted once per shape)
forest_leaf_index = jax.jit(jax.vmap(leaf_index, in_axes=(0, 0, None)))


def true_leaf_counts(model: dpjax.Model, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact class counts ``[T, 2**d, C]`` of every leaf of a fitted forest, from the fitted
    splits and ``leaf_index`` (numpy accumulation)."""
    forest = model.params
    leaves = np.asarray(forest_leaf_index(forest.feature, forest.threshold, model.encode(X)))
    n_trees, n_leaves, n_classes = forest.leaf.shape
    counts = np.zeros((n_trees, n_leaves, n_classes))
    for t in range(n_trees):
        np.add.at(counts[t], (leaves[t], np.asarray(y)), 1.0)
    return counts


def assert_one_hot(leaf: jax.Array) -> None:
    leaf = np.asarray(leaf)
    assert set(np.unique(leaf)) <= {0.0, 1.0}
    np.testing.assert_array_equal(leaf.sum(-1), 1.0)


# --------------------------------------------------------------------------------------------
# 1. RF-L defaults, ledger, neighbouring relation
# --------------------------------------------------------------------------------------------


def test_rf_laplace_defaults_one_hot_leaves_and_per_leaf_ledger(easy):
    (X, y), _ = easy
    model = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=0)
    assert model.hyperparams == {
        "n_trees": 21, "depth": 4, "voting": "majority", "noise": "laplace",
        "threshold_range": "global", "leaf_estimate": "label", "leaf_composition": "leaf"}
    chex.assert_shape([model.params.feature, model.params.threshold], (21, 15))
    chex.assert_shape(model.params.leaf, (21, 16, 2))
    assert_one_hot(model.params.leaf)
    # majority vote of 21 one-hot trees: class scores are multiples of 1/21
    proba = model.predict_proba(X)
    chex.assert_shape(proba, (400, 2))
    np.testing.assert_allclose(proba * 21, np.round(proba * 21), atol=1e-4)
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    # one ledger entry: 21 * 2^4 per-leaf releases of (at most) eps / (21 * 2^4) each
    ledger = model.privacy
    assert ledger.private and ledger.neighbouring == "add_remove"
    assert ledger.requested_epsilon == EPS
    (entry,) = ledger.entries
    assert entry.what == "leaf class counts"
    assert entry.private and entry.count == N_LEAVES
    assert entry.epsilon == pytest.approx(laplace_cost(EPS, N_LEAVES), rel=1e-5)
    assert_within_budget(entry.epsilon, EPS / N_LEAVES)
    assert entry.epsilon * entry.count <= EPS
    assert entry.mechanism == "discrete Laplace (L1 sens. 1)"
    assert_within_budget(ledger.epsilon, EPS)


def test_rf_laplace_tree_composition_and_rf_exponential_ledgers(easy):
    """``leaf_composition="tree"``: one release per tree (parallel over its disjoint leaves),
    ``eps/T`` each. RF-E: one permute-and-flip selection per leaf at ``eps/(T 2^d)``; under
    replace-one with tree composition each leaf selects at half the tree's budget (a replaced
    example can touch two leaves), which the ledger charges as the tree's budget."""
    (X, y), _ = easy
    for neighbouring, sensitivity in (("add_remove", 1.0), ("replace_one", 2.0)):
        model = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=0,
                          leaf_composition="tree", neighbouring=neighbouring)
        (entry,) = model.privacy.entries
        assert entry.private and entry.count == T_DEFAULT
        assert entry.epsilon == pytest.approx(laplace_cost(EPS, T_DEFAULT, sensitivity),
                                              rel=1e-5)
        assert_within_budget(entry.total_epsilon, EPS)
        assert entry.mechanism == f"discrete Laplace (L1 sens. {sensitivity:g})"
    share = float(leaf_epsilon(jnp.float32(EPS), T_DEFAULT, D_DEFAULT, "leaf"))
    model = dpjax.fit(X, y, method="rf_exponential", epsilon=EPS, bounds=BOUNDS, key=0)
    (entry,) = model.privacy.entries
    assert entry.what == "leaf labels"
    assert entry.count == N_LEAVES and entry.mechanism == "permute-and-flip (sens. 1)"
    assert entry.epsilon == pytest.approx(share, rel=1e-6)  # permute-and-flip: its share
    assert entry.epsilon <= EPS / N_LEAVES
    assert_within_budget(model.privacy.epsilon, EPS)
    model = dpjax.fit(X, y, method="rf_exponential", epsilon=EPS, bounds=BOUNDS, key=0,
                      leaf_composition="tree", neighbouring="replace_one")
    (entry,) = model.privacy.entries
    assert entry.count == T_DEFAULT
    assert entry.epsilon == pytest.approx(float(leaf_epsilon(jnp.float32(EPS), T_DEFAULT,
                                                             D_DEFAULT, "tree")), rel=1e-6)
    assert_within_budget(model.privacy.epsilon, EPS)


def test_rf_laplace_replace_one_doubles_sensitivity(easy):
    """Replace-one: count-vector sensitivity 2, so RF-L at 2 eps under replace-one releases the
    very same noisy counts (hence labels) as at eps under add/remove, with the same key."""
    (X, y), _ = easy
    add_remove = dpjax.fit(X, y, method="rf_laplace", epsilon=EPS, bounds=BOUNDS, key=3)
    replace = dpjax.fit(X, y, method="rf_laplace", epsilon=2 * EPS, bounds=BOUNDS, key=3,
                        neighbouring="replace_one")
    chex.assert_trees_all_equal(add_remove.params, replace.params)
    ledger = replace.privacy
    assert ledger.neighbouring == "replace_one"
    (entry,) = ledger.entries
    assert "sens. 2" in entry.mechanism and entry.count == N_LEAVES
    assert entry.epsilon == 2 * add_remove.privacy.entries[0].epsilon
    assert_within_budget(ledger.epsilon, 2 * EPS)


def test_laplace_noise_scale_through_the_forest(monkeypatch):
    """With the leaf estimate replaced by the identity, ``fit_random_trees`` returns its noisy
    counts: integer noise whose mean absolute value is the discrete Laplace's ``2q/(1 - q^2)``,
    ``q = exp(-s/t)`` with scale ``t/s >= Delta / eps_each``, ``eps_each = eps / (T 2^d)``
    ("leaf") or ``eps / T`` ("tree"); sensitivity 2 at ``eps`` draws exactly the noise of
    sensitivity 1 at ``eps/2`` (same key)."""
    monkeypatch.setattr(rt, "leaf_distribution", lambda key, counts, estimate="smoothed": counts)
    rng = np.random.default_rng(2)
    codes = jnp.asarray(rng.integers(0, 10, (200, 3)), jnp.uint8)
    y = jnp.asarray(rng.integers(0, 2, 200), jnp.int32)
    fit = functools.partial(fit_random_trees, n_trees=21, depth=4,
                            n_codes_per_feature=np.full(3, 10), n_classes=2,
                            leaf_estimate="label")

    @jax.jit  # traced here, after the monkeypatch; one compilation for the five fits
    def counts(key, epsilon):
        return [fit(key, codes, y, e, sensitivity=s, leaf_composition=c)[0].leaf
                for e, s, c in ((None, 1.0, "leaf"), (epsilon, 1.0, "leaf"),
                                (epsilon, 2.0, "leaf"), (epsilon / 2, 1.0, "leaf"),
                                (epsilon, 1.0, "tree"))]

    epsilon = 50.0
    true, leaf1, leaf2, half, tree1 = (np.asarray(a, np.float64)
                                       for a in counts(jax.random.key(5), epsilon))
    np.testing.assert_array_equal(true.sum(axis=(1, 2)), 200)  # really the exact counts
    np.testing.assert_array_equal(leaf2, half)
    # sensitivity 2 at eps: the scale of sensitivity 1 at eps / 2
    for noise, releases in ((leaf1 - true, N_LEAVES), (leaf2 - true, 2 * N_LEAVES),
                            (tree1 - true, T_DEFAULT)):
        assert np.all(noise == np.round(noise))
        share = leaf_epsilon(jnp.float32(epsilon), releases, 0, "tree")
        t, s = (int(v) for v in laplace_fraction(round_up(1.0 / share)))
        assert releases / epsilon <= t / s <= releases / epsilon * (1 + SLACK)
        q = math.exp(-s / t)
        mean_abs = 2 * q / (1 - q**2)
        var_abs = 2 * q / (1 - q) ** 2 - mean_abs**2
        assert abs(np.abs(noise).mean() - mean_abs) < Z * math.sqrt(var_abs / noise.size), t / s


@pytest.mark.parametrize("composition", ["leaf", "tree"])
@pytest.mark.parametrize("sensitivity", [1.0, 2.0])
def test_budget_wiring_per_release(composition, sensitivity):
    """The epsilon and sensitivity of each release inside ``fit_random_trees``, read off the
    costs it returns: one count vector per tree ("tree") or per leaf ("leaf"), at ``eps`` over
    the number of releases (rounded down), for RF-L; and for RF-E one selection per leaf with
    utility sensitivity 1, a replaced example's two leaves of one tree sharing the tree's
    budget ("tree": the leaves select at half of it, charged as the tree's)."""
    codes = jnp.zeros((4, 3), jnp.uint8)
    y = jnp.asarray([0, 1, 1, 0], jnp.int32)
    epsilon, n_trees, depth = 3.0, 5, 2
    releases = n_trees * (2**depth if composition == "leaf" else 1)
    shape = (n_trees, 2**depth) if composition == "leaf" else (n_trees,)
    costs = {noise: jax.jit(lambda key, noise=noise: fit_random_trees(
        key, codes, y, epsilon, n_trees=n_trees, depth=depth,
        n_codes_per_feature=np.full(3, 10), n_classes=2, sensitivity=sensitivity,
        noise=noise, leaf_estimate="label", leaf_composition=composition)[1])(
            jax.random.key(0)) for noise in ("laplace", "exponential")}
    (what, laplace), = costs["laplace"].items()
    assert what == "leaf class counts"
    assert laplace.mechanism == f"discrete Laplace (L1 sens. {sensitivity:g})"
    chex.assert_shape(laplace.epsilon, shape)
    np.testing.assert_allclose(laplace.epsilon, laplace_cost(epsilon, releases, sensitivity),
                               rtol=1e-5)
    assert_within_budget(float(np.asarray(laplace.epsilon, np.float64).sum()), epsilon)
    (what, selection), = costs["exponential"].items()
    assert what == "leaf labels"
    assert selection.mechanism == "permute-and-flip (sens. 1)"
    chex.assert_shape(selection.epsilon, shape)
    share = float(leaf_epsilon(jnp.float32(epsilon), releases, 0, "tree"))
    np.testing.assert_allclose(selection.epsilon, share, rtol=1e-6)  # charged as the tree's
    assert_within_budget(float(np.asarray(selection.epsilon, np.float64).sum()), epsilon)
    np.testing.assert_array_equal(selection.delta, 0.0)


# --------------------------------------------------------------------------------------------
# 2. Huge epsilon: leaf label = argmax of the true counts
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_class():
    """Train (m = 400) and test (m = 300) sets of a planted three-class problem."""
    return easy_data(4, 400, n_classes=3), easy_data(5, 300, n_classes=3)


def fit_three_class(method: str, epsilon: float, key: int, data) -> dpjax.Model:
    (X, y), _ = data
    return dpjax.fit(X, y, method=method, epsilon=epsilon, bounds=BOUNDS, classes=[0, 1, 2],
                     key=key)


def assert_labels_are_true_argmax(model: dpjax.Model, X: np.ndarray, y: np.ndarray) -> None:
    """Every leaf whose true class counts have a unique maximum is labelled with it."""
    assert_one_hot(model.params.leaf)
    counts = true_leaf_counts(model, X, y)
    np.testing.assert_array_equal(counts.sum(axis=(1, 2)), [len(y)] * 21)
    top = counts.max(-1, keepdims=True)
    untied = (counts == top).sum(-1) == 1
    assert untied.sum() >= 150, untied.sum()  # most leaves are informative
    labels = np.asarray(model.params.leaf).argmax(-1)
    np.testing.assert_array_equal(labels[untied], counts.argmax(-1)[untied],
                                  err_msg=model.method)


def test_huge_epsilon_labels_are_true_argmax(easy, three_class):
    (X, y), _ = easy
    assert_labels_are_true_argmax(
        dpjax.fit(X, y, method="rf_laplace", epsilon=1e6, bounds=BOUNDS, key=11), X, y)
    (X3, y3), _ = three_class
    structures = []
    for method in ("rf_laplace", "rf_exponential"):
        model = fit_three_class(method, 1e6, 11, three_class)
        assert_labels_are_true_argmax(model, X3, y3)
        structures.append((model.params.feature, model.params.threshold))
    # the structure is drawn from the key alone: RF-L and RF-E share it
    chex.assert_trees_all_equal(*structures)


# --------------------------------------------------------------------------------------------
# 3-4. RF-E: the exponential mechanism's label distribution through the forest fit
# --------------------------------------------------------------------------------------------

# depth-1 trees on three 10-code features: a row of all-0 codes always goes left (0 > t is
# false for every threshold t >= 0), a row of all-9 codes always goes right (t <= 8).
PLANTED_CODES = np.array([[0, 0, 0]] * 4 + [[9, 9, 9]] * 2, np.uint8)
PLANTED_Y = np.array([0, 0, 0, 2, 1, 1], np.int32)
PLANTED_COUNTS = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0]])  # left leaf, right leaf
RFE_TREES, RFE_KEYS = 5, 4000


@functools.cache
def rfe_sampler():
    """``(key, eps_a, eps_b) -> (labels_a, labels_b)``, each ``[RFE_KEYS, RFE_TREES, 2]``: the
    leaf labels of RF-E forests of depth-1 trees on the planted data, one forest per key, with
    (a) per-leaf composition under add/remove at ``eps_a`` and (b) per-tree composition under
    replace-one (sensitivity 2) at ``eps_b``. One compilation for every check below."""
    def fit(composition, sensitivity):
        return functools.partial(
            fit_random_trees, codes=jnp.asarray(PLANTED_CODES), y=jnp.asarray(PLANTED_Y),
            n_trees=RFE_TREES, depth=1, n_codes_per_feature=np.full(3, 10), n_classes=3,
            sensitivity=sensitivity, noise="exponential", leaf_estimate="label",
            leaf_composition=composition)

    fit_a, fit_b = fit("leaf", 1.0), fit("tree", 2.0)

    def sample(key, eps_a, eps_b):
        keys = jax.random.split(key, RFE_KEYS)
        a = jax.vmap(lambda k: fit_a(k, epsilon=eps_a)[0].leaf.argmax(-1))(keys)
        b = jax.vmap(lambda k: fit_b(k, epsilon=eps_b)[0].leaf.argmax(-1))(keys)
        return a, b

    return jax.jit(sample)


def label_probabilities(eps_each: float) -> np.ndarray:
    """Permute-and-flip label probabilities ``[leaf, class]`` of the planted leaves (utility
    the class counts, sensitivity 1)."""
    return np.stack([pf_probabilities(counts, 1.0, eps_each) for counts in PLANTED_COUNTS])


def assert_label_frequencies(labels: np.ndarray, eps_each: float) -> None:
    """Each leaf's label frequencies match the exact permute-and-flip probabilities at
    ``eps_each`` within Z binomial standard errors (every tree of every forest is an
    independent draw)."""
    chex.assert_shape(labels, (RFE_KEYS, RFE_TREES, 2))
    n = labels.shape[0] * labels.shape[1]
    expected = label_probabilities(eps_each)
    for leaf in range(2):
        freq = np.bincount(labels[:, :, leaf].ravel(), minlength=3) / n
        np.testing.assert_array_less(np.abs(freq - expected[leaf]),
                                     binomial_tolerance(expected[leaf], n),
                                     err_msg=f"leaf {leaf}, eps_each {eps_each}")


def test_planted_rows_reach_fixed_leaves():
    """The premise of the statistical tests below: for every split a depth-1 tree can draw
    (any feature, threshold in 0..8), the all-0 rows go left and the all-9 rows go right."""
    for feature in range(3):
        for threshold in range(9):
            leaves = [reference_leaf(np.array([feature]), np.array([threshold]), row)
                      for row in PLANTED_CODES]
            assert leaves == [0, 0, 0, 0, 1, 1]
    np.testing.assert_array_equal(
        [np.bincount(PLANTED_Y[PLANTED_CODES[:, 0] == code], minlength=3) for code in (0, 9)],
        PLANTED_COUNTS)


@pytest.mark.parametrize(("epsilon", "eps_each"), [(10.0, 1.0), (4.0, 0.4)])
def test_rf_exponential_label_distribution_per_leaf(epsilon, eps_each):
    """Per-leaf composition: eps_leaf = eps / (T 2^d) = eps / 10."""
    labels, _ = rfe_sampler()(jax.random.key(21), epsilon, 10.0)
    assert_label_frequencies(np.asarray(labels), eps_each)


def test_rf_exponential_tree_composition_replace_one_halves_epsilon():
    """Tree composition under replace-one (sensitivity 2): eps_leaf = eps / (T * 2) = 1 at
    eps = 10, not the add/remove eps / T = 2."""
    _, labels = rfe_sampler()(jax.random.key(22), 10.0, 10.0)
    labels = np.asarray(labels)
    assert_label_frequencies(labels, 1.0)
    # the test has power: eps_leaf = 2 predicts P(label 0 | counts (3, 0, 1)) ~ 0.90 vs ~ 0.74
    n = RFE_KEYS * RFE_TREES
    wrong = label_probabilities(2.0)[0, 0]
    assert abs(np.mean(labels[:, :, 0] == 0) - wrong) > 10 * binomial_tolerance(wrong, n)


# --------------------------------------------------------------------------------------------
# 5. Majority vote
# --------------------------------------------------------------------------------------------


def random_one_hot_forest(seed: int, n_trees: int, depth: int, n_classes: int,
                          n_used: int) -> DenseTree:
    """Random splits on three 10-code features; one-hot leaves over the first ``n_used``
    classes."""
    rng = np.random.default_rng(seed)
    n_internal = 2**depth - 1
    labels = rng.integers(0, n_used, (n_trees, 2**depth))
    return DenseTree(
        feature=jnp.asarray(rng.integers(0, 3, (n_trees, n_internal)), jnp.int32),
        threshold=jnp.asarray(rng.integers(0, 9, (n_trees, n_internal)), jnp.int32),
        leaf=jnp.asarray(np.eye(n_classes, dtype=np.float32)[labels]))


class MajorityVoteTest(chex.TestCase):

    @chex.variants(with_jit=True, without_jit=True)
    def test_majority_vote_is_most_common_tree_label(self):
        n_trees, n_classes = 21, 3
        codes = np.random.default_rng(0).integers(0, 10, (120, 3)).astype(np.uint8)
        both = self.variant(lambda forest, codes: (forest_predict(forest, codes, "majority"),
                                                   forest_proba(forest, codes, "majority")))
        # forests with labels in {0, 1} (an odd number of two-way votes never ties) and in
        # {0, 1, 2}; all of one shape, so each variant compiles once
        for seed, n_used in enumerate([2, 3, 3]):
            forest = random_one_hot_forest(seed, n_trees, 3, n_classes, n_used)
            feature, threshold = np.asarray(forest.feature), np.asarray(forest.threshold)
            labels = np.asarray(forest.leaf).argmax(-1)
            votes = np.array([[labels[t, reference_leaf(feature[t], threshold[t], row)]
                               for t in range(n_trees)] for row in codes])
            tally = np.stack([np.bincount(v, minlength=n_classes) for v in votes])
            got, proba = both(forest, jnp.asarray(codes))
            chex.assert_shape(got, (120,))
            chex.assert_shape(proba, (120, n_classes))
            # np.argmax takes the first maximum: three-class ties go to the lower class
            np.testing.assert_array_equal(got, tally.argmax(-1))
            np.testing.assert_allclose(proba, tally / n_trees, rtol=1e-6)
            if n_used == 2:
                assert np.all(tally.max(-1) > n_trees / 2)
            else:  # the fixed seeds do produce three-way votes
                assert np.any(tally.min(-1) > 0)


# --------------------------------------------------------------------------------------------
# 6. Structure: uniform, data-independent
# --------------------------------------------------------------------------------------------

STRUCT_CODES = np.array([3, 5, 10, 2], np.int32)
STRUCT_TREES, STRUCT_DEPTH = 301, 4


@functools.cache
def rf_structure_fit():
    """``(key, codes, y, epsilon) -> (RF-L forest, RF-E forest)``, jitted once."""
    fit = functools.partial(
        fit_random_trees, n_trees=STRUCT_TREES, depth=STRUCT_DEPTH,
        n_codes_per_feature=STRUCT_CODES, n_classes=2, leaf_estimate="label",
        leaf_composition="leaf")
    return jax.jit(lambda key, codes, y, epsilon: tuple(
        fit(key, codes, y, epsilon, noise=noise)[0] for noise in ("laplace", "exponential")))


def struct_data(seed: int) -> tuple[jax.Array, jax.Array]:
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, n, 80) for n in STRUCT_CODES], 1).astype(np.uint8)
    return jnp.asarray(codes), jnp.asarray(rng.integers(0, 2, 80), jnp.int32)


def test_rf_structure_is_uniform_and_within_global_range():
    codes, y = struct_data(0)
    forest, _ = rf_structure_fit()(jax.random.key(31), codes, y, 1.0)
    feature = np.asarray(forest.feature).ravel()
    threshold = np.asarray(forest.threshold).ravel()
    n = feature.size
    n_features = len(STRUCT_CODES)
    freq = np.bincount(feature, minlength=n_features) / n
    assert freq.size == n_features
    np.testing.assert_array_less(np.abs(freq - 1 / n_features),
                                 binomial_tolerance(1 / n_features, n))
    for f, n_codes in enumerate(STRUCT_CODES):
        t = threshold[feature == f]
        assert t.min() >= 0 and t.max() <= n_codes - 2, (f, t.min(), t.max())
        share = np.bincount(t, minlength=n_codes - 1) / t.size
        assert share.size == n_codes - 1
        np.testing.assert_array_less(np.abs(share - 1 / (n_codes - 1)),
                                     binomial_tolerance(1 / (n_codes - 1), t.size) + 1e-12)


def test_rf_structure_is_data_independent():
    codes, y = struct_data(1)
    other_codes, other_y = struct_data(2)
    key = jax.random.key(32)
    forests = [forest for c, labels in ((codes, y), (codes, 1 - y), (other_codes, other_y))
               for forest in rf_structure_fit()(key, c, labels, 1e6)]
    for forest in forests[1:]:
        chex.assert_trees_all_equal((forest.feature, forest.threshold),
                                    (forests[0].feature, forests[0].threshold))
    # while the leaves did read the labels (RF-L and RF-E, flipped labels)
    for before, after in ((forests[0], forests[2]), (forests[1], forests[3])):
        assert not np.array_equal(np.asarray(before.leaf), np.asarray(after.leaf))


# --------------------------------------------------------------------------------------------
# 7. Multi-class
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["rf_laplace", "rf_exponential"])
def test_multiclass(method, three_class):
    _, (X_test, y_test) = three_class
    model = fit_three_class(method, 20.0, 6, three_class)
    assert model.classes == (0, 1, 2)
    chex.assert_shape([model.params.feature, model.params.threshold], (21, 15))
    chex.assert_shape(model.params.leaf, (21, 16, 3))
    assert_one_hot(model.params.leaf)
    proba = model.predict_proba(X_test)
    chex.assert_shape(proba, (300, 3))
    np.testing.assert_allclose(proba.sum(-1), 1.0, rtol=1e-6)
    pred = model.predict(X_test)
    chex.assert_shape(pred, (300,))
    assert set(np.unique(pred)) <= {0, 1, 2}
    np.testing.assert_array_equal(pred, proba.argmax(-1))
    assert np.mean(pred == y_test) > 0.6  # the label is a function of feature 0; chance 1/3
    assert_within_budget(model.privacy.epsilon, 20.0)


# --------------------------------------------------------------------------------------------
# 8. Sweep
# --------------------------------------------------------------------------------------------


def test_rf_laplace_sweep(easy):
    (X, y), (X_test, y_test) = easy
    epsilons = [0.1, 1.0, 10.0]
    sweep = dpjax.sweep(X, y, method="rf_laplace", epsilon=epsilons, seeds=3, bounds=BOUNDS)
    chex.assert_shape([sweep.params.feature, sweep.params.threshold], (3, 3, 21, 15))
    chex.assert_shape(sweep.params.leaf, (3, 3, 21, 16, 2))
    assert_one_hot(sweep.params.leaf)
    assert [g["epsilon"] for g in sweep.grid] == epsilons
    for eps, ledger in zip(epsilons, sweep.ledgers, strict=True):
        assert ledger.requested_epsilon == eps
        assert_within_budget(ledger.epsilon, eps)
        (entry,) = ledger.entries
        assert entry.count == N_LEAVES
        assert entry.epsilon == pytest.approx(laplace_cost(eps, N_LEAVES), rel=1e-5)
    accuracy = sweep.score(X_test, y_test)
    chex.assert_shape(accuracy, (3, 3))
    assert accuracy[2].mean() >= accuracy[0].mean(), accuracy
    assert accuracy[2].mean() > 0.8 and accuracy[2].min() >= 0.75, accuracy
    # grid point i of seed j is the learner's fit with its own key and the seed's (shared,
    # data-independent) structure key
    structure, points = grid_keys(dpjax.as_key(1), len(sweep.grid))
    params, costs = learner_fit(sweep.model(2, 1), X, y, points[2], 10.0,
                                structure_key=structure)
    chex.assert_trees_all_equal(sweep.model(2, 1).params, params)
    assert dpjax.PrivacyLedger(requested_epsilon=10.0).with_costs(costs).entries == (
        sweep.ledgers[2].entries)
    # so the grid points of one seed share the structure and draw their own noise
    for i in (1, 2):
        chex.assert_trees_all_equal(
            (sweep.params.feature[0, 1], sweep.params.threshold[0, 1]),
            (sweep.params.feature[i, 1], sweep.params.threshold[i, 1]))
    assert not np.array_equal(sweep.params.feature[2, 0], sweep.params.feature[2, 1])


# --------------------------------------------------------------------------------------------
# 9. Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("method", "params", "match"), [
    ("rf_exponential", {"noise": "laplace"}, "noise"),
    ("rf_exponential", {"noise": "discrete_laplace"}, "noise"),
    ("rf_laplace", {"noise": "discrete_laplace"}, "noise"),
    ("rf_laplace", {"noise": "exponential"}, "noise"),
    ("rf_laplace", {"alpha": 0.5}, "no parameter"),
    ("rf_exponential", {"beta_tree": 0.5}, "no parameter"),
    ("rf_laplace", {"leaf_composition": "parallel"}, "leaf_composition"),
    ("rf_laplace", {"n_trees": 0}, "n_trees"),
    ("rf_exponential", {"depth": 2.5}, "depth"),
    ("rf_laplace", {"voting": "mean"}, "voting"),
])
def test_invalid_hyper_parameters_raise(method, params, match):
    X, y = easy_data(7, 20)
    with pytest.raises(ValueError, match=match):
        dpjax.fit(X, y, method=method, epsilon=1.0, bounds=BOUNDS, key=0, **params)
    with pytest.raises(ValueError, match=match):
        get_learner(method).resolve(params)


def test_rf_noise_defaults_and_allowed_options():
    assert get_learner("rf_exponential").resolve({})["noise"] == "exponential"
    assert get_learner("rf_laplace").resolve({})["noise"] == "laplace"
    # the Laplace mechanism always draws exact discrete Laplace noise on the integer counts:
    # the separate "discrete_laplace" option is gone
    for method in ("rf_laplace", "random_trees"):
        with pytest.raises(ValueError, match="noise"):
            get_learner(method).resolve({"noise": "discrete_laplace"})
