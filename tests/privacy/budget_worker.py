"""A process that spends from a stored budget until it is refused (the stored accountant's load
and fault tests, ``test_budget_store.py``).

``python budget_worker.py STORE NAME TAG EPSILON LOG``: fits small private forests at
``EPSILON`` each from the budget ``NAME`` in ``STORE`` (tag ``TAG``), and after every fit that
returned appends a line to ``LOG`` (flushed and synced: a line means a returned model), until
the accountant refuses the next fit; then it writes ``refused``.
"""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np

import dpjax


def main(store: str, name: str, tag: str, epsilon: float, log: str) -> None:
    rng = np.random.default_rng(abs(hash(tag)) % 2**32)
    X = rng.uniform(0, 1, (200, 3))
    y = (X[:, 0] + 0.2 * rng.normal(size=200) > 0.5).astype(int)
    accountant = dpjax.BudgetAccountant(store=store, name=name, tag=tag)
    with open(log, "a") as out:
        for fit in range(10**6):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    dpjax.fit(X, y, method="random_trees", epsilon=epsilon, bounds=(0, 1),
                              key=fit, n_trees=2, depth=2, accountant=accountant)
            except dpjax.BudgetExceededError:
                out.write("refused\n")
                break
            out.write(f"returned {fit}\n")
            out.flush()
            os.fsync(out.fileno())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5])
