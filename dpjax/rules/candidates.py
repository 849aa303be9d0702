"""Candidate rules and their Gini statistics, all candidates of a node at once (spec
``docs/specs/dp-rule-lists-smooth-sensitivity.md`` §1.3, §1.5, §6).

**Literals** are read off the public codes alone (the schema, never the data; spec A9): a
feature with two codes gives ``code = 1`` and ``code = 0`` (a binarised column and its
negation); a feature with more codes gives ``code = c`` and ``code ≠ c`` for every code ``c``
(one-hot categories and bins) and the thresholds ``code >= t`` / ``code < t`` for ``2 <= t <=
k − 2`` (the other thresholds are already equalities). A literal is ``(feature, lo, hi,
inside)``: true iff ``(lo <= code <= hi) == inside``.

**Candidates** are the literals (rules of one literal) and, with ``max_card = 2``, the
conjunctions of two literals of different features: the ``L × L`` upper triangle of literal
pairs, the diagonal holding the single literals, listed once as static pairs
(:func:`candidate_pairs`). One node's counts of every candidate are two
Gram matrices ``Lᵀ·diag(w)·L`` and ``Lᵀ·diag(w·y)·L`` of the 0/1 literal matrix ``L [m, L]``
(``w`` the records still to classify): exact in float32 at ``HIGHEST`` precision, since every
sum is an integer below ``2**24`` (no TF32).

**Scores.** With ``(a, b)`` the positives and negatives of a part, the Gini-weighted count is
``a·b/(a + b)`` (``n/2`` times the weighted Gini ``𝒢`` of spec §1.5, ``1 − p² − (1 − p)² =
2p(1 − p)``). :func:`gini_count` computes it exactly in fixed point, ``⌊a·b·2**F/(a + b)⌋``
(integer long division; no float rounding anywhere), so its sensitivity as evaluated is known.
Up to :data:`MAX_ROWS` records the scores are int32; past it (a node of up to ``2**31 − 1``
records) the same integers are canonical :class:`~dpjax.privacy.fixed_point.WideSum`
(:func:`wide_gini_count`), which path is static (the row count).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from dpjax.privacy import fixed_point
from dpjax.privacy.fixed_point import WideSum

FRACTION_BITS = fixed_point.BITS
"""``F``: Gini-weighted counts are exact integers in units of ``2**−F``
(:mod:`dpjax.privacy.fixed_point`)."""
MAX_ROWS = 2**24 - 1
"""Up to this many rows the scores are int32 (:func:`gini_count`'s long division in 8-bit digits
needs counts below ``2**24``); past it they are wide (:func:`wide_gini_count`)."""


class Literals(NamedTuple):
    """The static literal table (numpy int32 / bool ``[L]``)."""

    feature: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    inside: np.ndarray

    @property
    def size(self) -> int:
        return len(self.feature)


def literal_table(n_codes_per_feature: np.ndarray) -> Literals:
    """The literals of features with ``n_codes_per_feature`` codes (module docstring)."""
    rows: list[tuple[int, int, int, bool]] = []
    for f, k in enumerate(np.asarray(n_codes_per_feature).tolist()):
        if k == 2:
            rows += [(f, 1, 1, True), (f, 1, 1, False)]
        elif k > 2:
            for c in range(k):
                rows += [(f, c, c, True), (f, c, c, False)]
            for t in range(2, k - 1):
                rows += [(f, t, k - 1, True), (f, t, k - 1, False)]
    if not rows:
        raise ValueError("the features have a single code each: there is no rule to learn")
    feature, lo, hi, inside = (np.asarray(c) for c in zip(*rows, strict=True))
    return Literals(feature.astype(np.int32), lo.astype(np.int32), hi.astype(np.int32),
                    inside.astype(bool))


def literal_values(codes: jax.Array, feature: jax.Array, lo: jax.Array, hi: jax.Array,
                   inside: jax.Array) -> jax.Array:
    """Bool ``[m, *literal_shape]``: each literal's truth on each row of ``codes [m, n]``."""
    code = jnp.take(codes, feature, axis=1).astype(jnp.int32)
    return ((code >= lo) & (code <= hi)) == inside


def candidate_mask(literals: Literals, max_card: int) -> np.ndarray:
    """Static bool ``[L, L]``: candidate ``(i, j)`` exists (``i == j``: the single literal ``i``;
    ``i < j`` with different features: their conjunction when ``max_card = 2``)."""
    same = literals.feature[:, None] == literals.feature[None, :]
    index = np.arange(literals.size)
    single = index[:, None] == index[None, :]
    if max_card == 1:
        return single
    return single | ((index[:, None] < index[None, :]) & ~same)


def candidate_pairs(literals: Literals, max_card: int) -> np.ndarray:
    """Static int32 ``[C, 2]``: the literal pairs ``(i, j)`` of the candidates, in row-major
    order of :func:`candidate_mask` (only these are scored, noised and released)."""
    return np.argwhere(candidate_mask(literals, max_card)).astype(np.int32)


BLOCK_ELEMENTS = 2**24
"""Rows of the literal matrix are read in blocks of about this many entries (at least
:data:`MIN_BLOCK_ROWS` rows): the float32 operands of a block's Gram matrix, not of all rows."""
MIN_BLOCK_ROWS = 1024


def row_block(m: int, n_literals: int) -> int:
    """Rows per block of :func:`pair_counts` (static): all ``m`` when they fit one block."""
    return min(m, max(MIN_BLOCK_ROWS, BLOCK_ELEMENTS // max(n_literals, 1)))


def pair_counts(values: jax.Array, weight: jax.Array, block: int | None = None) -> jax.Array:
    """``Σ_rows weight·value_i·value_j`` for every literal pair, int32 ``[L, L]``, exact: each
    block of ``block`` rows (default :func:`row_block`) is an integer-valued float32 product at
    ``HIGHEST`` precision (its sums below ``2**24``), and the blocks add up in int32. Only one
    block's float32 operands exist at a time, so memory stays ``O(block·L + L²)`` past the
    ``[m, L]`` literal matrix itself."""
    m, n_literals = values.shape
    block = row_block(m, n_literals) if block is None else block
    blocks = -(-m // block)
    pad = blocks * block - m
    rows = jnp.pad(values, ((0, pad), (0, 0))).reshape(blocks, block, n_literals)
    weights = jnp.pad(weight, (0, pad)).reshape(blocks, block)

    def add_block(total: jax.Array, part: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
        v = part[0].astype(jnp.float32)
        gram = jnp.matmul((v * part[1].astype(jnp.float32)[:, None]).T, v,
                          precision=jax.lax.Precision.HIGHEST)
        return total + gram.astype(jnp.int32), None

    total, _ = jax.lax.scan(add_block, jnp.zeros((n_literals, n_literals), jnp.int32),
                            (rows, weights))
    return total


def gini_count(a: jax.Array, b: jax.Array) -> jax.Array:
    """``⌊a·b·2**F/(a + b)⌋`` exactly (0 when ``a + b = 0``), int32, for counts with
    ``a + b <= MAX_ROWS``.

    The 48-bit product ``a·b`` is formed from 12-bit limbs and divided by ``s = a + b`` in
    8-bit digits (every partial remainder times 256 stays below ``2**32``); ``a·b/s <=
    min(a, b) < 2**23``, so the result fits int32. Sensitivity: adding a record to a part
    raises ``a·b/s`` by ``a²/(s(s + 1)) < 1`` (a negative; symmetrically a positive), never
    lowers it; the floor moves it by less than one unit ``2**−F``."""
    a, b = a.astype(jnp.uint32), b.astype(jnp.uint32)
    s = a + b
    divisor = jnp.maximum(s, 1)
    mask12 = jnp.uint32(0xFFF)
    a1, a0, b1, b0 = a >> 12, a & mask12, b >> 12, b & mask12
    mid = a1 * b0 + a0 * b1
    lo = a0 * b0 + ((mid & mask12) << 12)
    hi = a1 * b1 + (mid >> 12) + (lo >> 24)
    lo = lo & jnp.uint32(0xFFFFFF)
    remainder = jnp.zeros_like(s)
    quotient = jnp.zeros_like(s)
    for word, shift in ((hi, 16), (hi, 8), (hi, 0), (lo, 16), (lo, 8), (lo, 0)):
        current = (remainder << 8) | ((word >> shift) & jnp.uint32(0xFF))
        quotient = (quotient << 8) | (current // divisor)
        remainder = current % divisor
    fraction = (remainder << FRACTION_BITS) // divisor
    value = (quotient << FRACTION_BITS) | fraction
    return jnp.where(s > 0, value, 0).astype(jnp.int32)


WIDE_DIVISION_STEPS = 62 + FRACTION_BITS
"""Quotient bits :func:`wide_gini_count` produces: the 62 bits of ``a·b`` (``a, b < 2**31``),
then ``F`` fraction bits."""


def _product_64(a: jax.Array, b: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The exact product of uint32 ``a, b < 2**31`` as uint32 words ``(high, low)``, from 16-bit
    limbs (``a = a1·2**16 + a0``): ``a0·b0 < 2**32`` and the cross terms ``a1·b0 + a0·b1 <
    2**32`` (each below ``2**31``), their low half shifted into the low word with its carry."""
    mask16 = jnp.uint32(0xFFFF)
    a1, a0, b1, b0 = a >> 16, a & mask16, b >> 16, b & mask16
    low_product = a0 * b0
    mid = a1 * b0 + a0 * b1
    low = low_product + (mid << 16)
    carry = (low < low_product).astype(jnp.uint32)
    return a1 * b1 + (mid >> 16) + carry, low


def wide_gini_count(a: jax.Array, b: jax.Array) -> WideSum:
    """:func:`gini_count` for counts with ``a + b <= 2**31 − 1``: ``⌊a·b·2**F/(a + b)⌋`` exactly
    (0 when ``a + b = 0``) as a canonical :class:`~dpjax.privacy.fixed_point.WideSum`.

    The 62-bit product ``a·b`` (:func:`_product_64`) followed by ``F`` zero bits is divided by
    ``s = a + b`` one bit at a time (:data:`WIDE_DIVISION_STEPS` steps of a ``fori_loop``):
    each partial remainder is below ``s``, so doubled plus a bit it stays below ``2**32``. The
    quotient ``a·b·2**F/s <= min(a, b)·2**F < 2**(30 + F)`` is collected in two words. The
    sensitivity argument of :func:`gini_count` holds as is (the same integers)."""
    a, b = a.astype(jnp.uint32), b.astype(jnp.uint32)
    s = a + b
    divisor = jnp.maximum(s, 1)
    high, low = _product_64(a, b)
    one = jnp.uint32(1)

    def step(i, state):
        remainder, q_high, q_low = state
        position = jnp.uint32(61) - i.astype(jnp.uint32)      # wraps past 0: a fraction bit
        bit = jnp.where(position >= 32, (high >> (position - 32)) & one,
                        (low >> position) & one)
        bit = jnp.where(i < 62, bit, jnp.uint32(0))
        current = (remainder << 1) | bit
        take = current >= divisor
        q_high = (q_high << 1) | (q_low >> 31)
        return (jnp.where(take, current - divisor, current), q_high,
                (q_low << 1) | take.astype(jnp.uint32))

    zeros = jnp.zeros_like(s)
    _, q_high, q_low = jax.lax.fori_loop(0, WIDE_DIVISION_STEPS, step, (zeros, zeros, zeros))
    hi = ((q_high << 16) | (q_low >> 16)).astype(jnp.int32)
    lo = (q_low & jnp.uint32(0xFFFF)).astype(jnp.int32)
    live = s > 0
    return WideSum(jnp.where(live, hi, 0), jnp.where(live, lo, 0))


class NodeStats(NamedTuple):
    """One node's statistics: ``score`` ``[1 + C]`` the Gini-weighted counts ``Σ_parts
    a·b/(a + b)`` in units of ``2**−F`` (index 0: no rule, ``∅``; then candidate ``c`` of
    ``pairs`` at ``1 + c``), ``caught`` the caught part's share of it (−1 for ``∅``: the
    non-private tie-break of spec §1.6), both int32 or, past :data:`MAX_ROWS` rows, canonical
    :class:`~dpjax.privacy.fixed_point.WideSum`; ``size`` the records still to classify
    (int32)."""

    score: jax.Array | WideSum
    caught: jax.Array | WideSum
    size: jax.Array


def node_stats(values: jax.Array, remaining: jax.Array, y: jax.Array,
               pairs: np.ndarray | tuple[jax.Array, jax.Array]) -> NodeStats:
    """The Gini-weighted counts of the candidates ``pairs`` (literal indices ``[C, 2]``, or the
    pair of index arrays ``(first [C], second [C])``) of a node: the caught part and the
    rest."""
    remaining = remaining.astype(jnp.int32)
    positive = remaining * y.astype(jnp.int32)
    if isinstance(pairs, np.ndarray):
        pairs = (jnp.asarray(pairs[:, 0]), jnp.asarray(pairs[:, 1]))
    first, second = pairs
    caught = pair_counts(values, remaining)[first, second]
    caught_pos = pair_counts(values, positive)[first, second]
    return split_stats(caught, caught_pos, jnp.sum(remaining), jnp.sum(positive),
                       wide=values.shape[0] > MAX_ROWS)


def literal_counts(codes: jax.Array, weights: jax.Array, literals: Literals,
                   n_codes_per_feature: np.ndarray) -> jax.Array:
    """``Σ_rows weights[k]·literal_j(row)`` for every literal, int32 ``[K, L]``, exact, from
    the features' weighted code histograms (one segment sum over the ``m·n`` codes) and their
    prefix sums: a literal's count is its interval's sum (or the total minus it), so the cost is
    ``O(m·n + L)`` and no ``[m, L]`` literal matrix exists."""
    n_codes = np.asarray(n_codes_per_feature, np.int64)
    offsets = np.concatenate([[0], np.cumsum(n_codes)[:-1]])
    m, n = codes.shape
    k = weights.shape[0]
    # a code past its feature's count would land in the next feature's histogram (and count
    # a record twice): the encoder never makes one, and the clip keeps it so
    flat = jnp.minimum(codes.astype(jnp.int32), jnp.asarray(n_codes - 1, jnp.int32)) + (
        jnp.asarray(offsets, jnp.int32))
    data = jnp.broadcast_to(weights.T.astype(jnp.int32)[:, None, :], (m, n, k))
    hist = fixed_point.segment_sum(data.reshape(m * n, k), flat.reshape(-1),
                                   int(n_codes.sum()))
    prefix = jnp.concatenate([jnp.zeros((1, k), jnp.int32), jnp.cumsum(hist, axis=0)])
    start = offsets[literals.feature] + literals.lo
    inside = prefix[start + literals.hi - literals.lo + 1] - prefix[start]      # [L, K]
    total = jnp.sum(weights.astype(jnp.int32), axis=1)
    return jnp.where(jnp.asarray(literals.inside)[:, None], inside, total[None, :] - inside).T


def extension_stats(codes: jax.Array, remaining: jax.Array, y: jax.Array, literals: Literals,
                    n_codes_per_feature: np.ndarray, caught_by: jax.Array | None = None
                    ) -> NodeStats:
    """The Gini-weighted counts of the ``L`` candidates ``(first, j)`` of a node, ``j`` every
    literal, where ``caught_by`` (bool ``[m]``) holds the rows the literal ``first`` catches
    (``None``: the single literals ``j``), with ``∅`` at index 0: :func:`literal_counts`,
    ``O(m·n + L)`` (the single literals and the greedy pair search of
    :func:`dpjax.rules.greedy.fit`)."""
    rows = (remaining if caught_by is None else remaining & caught_by).astype(jnp.int32)
    positive = y.astype(jnp.int32)
    caught, caught_pos = literal_counts(codes, jnp.stack([rows, rows * positive]), literals,
                                        n_codes_per_feature)
    remaining = remaining.astype(jnp.int32)
    return split_stats(caught, caught_pos, jnp.sum(remaining), jnp.sum(remaining * positive),
                       wide=codes.shape[0] > MAX_ROWS)


def split_stats(caught: jax.Array, caught_pos: jax.Array, size: jax.Array,
                pos: jax.Array, wide: bool = False) -> NodeStats:
    """:class:`NodeStats` of candidates that catch ``caught`` records, ``caught_pos`` of them
    positive, of a node with ``size`` records, ``pos`` positive (``∅`` first); ``wide``
    (static): the scores as :class:`~dpjax.privacy.fixed_point.WideSum`
    (:func:`wide_gini_count`)."""
    gini = wide_gini_count if wide else gini_count
    caught_neg = caught - caught_pos
    rest_pos, rest_neg = pos - caught_pos, (size - pos) - caught_neg
    caught_part = gini(caught_pos, caught_neg)
    split = fixed_point.add(caught_part, gini(rest_pos, rest_neg))
    empty = gini(pos, size - pos)

    def first(head, rest):
        return jnp.concatenate([jnp.asarray(head, rest.dtype).reshape(1), rest])

    return NodeStats(jax.tree.map(first, empty, split),
                     jax.tree.map(first, no_rule(caught_part), caught_part), size)


def no_rule(caught: jax.Array | WideSum) -> jax.Array | WideSum:
    """The caught share ``−1`` of ``∅`` (and of a candidate barred from the non-private
    tie-break), in the form of ``caught``."""
    if isinstance(caught, WideSum):
        return fixed_point.canonical(jnp.int32(0), jnp.int32(-1))
    return jnp.int32(-1)


def device_pairs(literals: Literals, max_card: int) -> tuple[jax.Array, jax.Array]:
    """The candidates' literal pairs of :func:`candidate_pairs`, built on the device from the
    ``L`` literals' features (``jnp.nonzero`` of the mask, its size static): no ``L²`` table is
    baked into the program as a constant."""
    feature = jnp.asarray(literals.feature)
    index = jnp.arange(literals.size)
    mask = index[:, None] == index[None, :]
    if max_card > 1:
        mask = mask | ((index[:, None] < index[None, :])
                       & (feature[:, None] != feature[None, :]))
    first, second = jnp.nonzero(mask, size=n_candidate_pairs(literals, max_card))
    return first.astype(jnp.int32), second.astype(jnp.int32)


def n_candidate_pairs(literals: Literals, max_card: int) -> int:
    """The number of candidates (without ``∅``): ``L`` single literals and, with ``max_card =
    2``, the pairs of literals of different features."""
    if max_card == 1:
        return literals.size
    per_feature = np.bincount(literals.feature)
    return literals.size + (literals.size**2 - int(np.sum(per_feature**2))) // 2


def normalised_gini(score: jax.Array, size: jax.Array) -> jax.Array:
    """The weighted Gini impurity ``𝒢 = 2·score·2**−F/n`` in ``[0, 1/2]`` (float32; 0 at
    ``n = 0``), spec §1.5."""
    scale = 2.0 * 2.0**-FRACTION_BITS / jnp.maximum(size, 1).astype(jnp.float32)
    return fixed_point.as_float(score) * scale
