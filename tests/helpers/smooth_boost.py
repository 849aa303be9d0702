"""Shared helpers of the smooth-boosting sensitivity tests (stumps §3.5, top-down trees §4.5):
a random history of ``±1`` 1-rule votes on random codes, the boosting levels it gives, and the
neighbouring sample with one row replaced."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class VoteProblem(NamedTuple):
    """``n`` rows of ``d`` features with ``n_codes`` codes, labels in ``{−1, 1}``, and a history
    of ``rounds`` 1-rules ``(feature, code, polarity)``; ``kappa``, ``rate`` of the measure."""

    n: int
    d: int
    n_codes: int
    rounds: int
    kappa: float
    rate: float
    codes: np.ndarray
    y: np.ndarray
    history: list[tuple[int, int, int]]


def random_vote_problem(rng: np.random.Generator, max_rows: int, n_codes: int,
                        max_rounds: int, d: int = 3) -> VoteProblem:
    """A :class:`VoteProblem` of ``[5, max_rows)`` rows and ``[1, max_rounds)`` rounds."""
    n, rounds = int(rng.integers(5, max_rows)), int(rng.integers(1, max_rounds))
    kappa, rate = float(rng.uniform(0.05, 0.9)), float(rng.uniform(0.1, 2.0))
    codes = rng.integers(0, n_codes, (n, d)).astype(np.uint8)
    y = rng.choice([-1, 1], n)
    history = [(rng.integers(d), rng.integers(n_codes), rng.choice([-1, 1])) for _ in
               range(rounds)]
    return VoteProblem(n, d, n_codes, rounds, kappa, rate, codes, y, history)


def correct_votes(codes: np.ndarray, y: np.ndarray, history: list) -> np.ndarray:
    """Each row's level: how many of the history's 1-rules vote its label."""
    votes = np.stack([p * np.where(codes[:, f] == b, 1, -1) for f, b, p in history])
    return (votes == y).sum(0)


def replace_one_row(rng: np.random.Generator, problem: VoteProblem, trial: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The neighbouring ``(codes, y)``: odd trials replace a random row by a random one, even
    trials the heaviest row (the fewest correct votes) by its codes shifted and label flipped."""
    codes, y = problem.codes, problem.y
    random = trial % 2 == 1
    i = int(rng.integers(problem.n)) if random else int(np.argmin(
        correct_votes(codes, y, problem.history)))
    codes2, y2 = codes.copy(), y.copy()
    codes2[i] = (rng.integers(0, problem.n_codes, problem.d) if random
                 else (codes[i] + 1) % problem.n_codes)
    y2[i] = rng.choice([-1, 1]) if random else -y[i]
    return codes2, y2
