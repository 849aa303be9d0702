"""A tour of a fitted dpjax model, notebook style (run: ``python examples/model_tour.py``).

Fit, print, plot, export and reload a model on the banknote data shipped with dpjax, sweep the
privacy budget, then run a scikit-learn grid search under a budget accountant that stops it at
its total. Pictures and the exported model go to ``examples/results/`` (or
``$DPJAX_EXAMPLE_OUT``).
"""

# %% setup
from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.model_selection import GridSearchCV  # noqa: E402

import dpjax  # noqa: E402
from dpjax import plots  # noqa: E402
from dpjax.data.splits import stratified_split  # noqa: E402
from dpjax.sklearn import DPBoostedTreesClassifier  # noqa: E402

OUT = Path(os.environ.get("DPJAX_EXAMPLE_OUT", Path(__file__).resolve().parent / "results"))
OUT.mkdir(exist_ok=True)


def save(ax: plt.Axes, name: str) -> None:
    ax.figure.tight_layout()
    ax.figure.savefig(OUT / name, dpi=110)
    plt.close(ax.figure)
    print(f"  wrote {OUT.name}/{name}")


X, y = dpjax.load_dataset("banknote")
bounds = dpjax.data.public_bounds("banknote")      # public: the benchmark file's ranges
train, test = stratified_split(y, 0.3, seed=0)
X_train, y_train, X_test, y_test = X.iloc[train], y[train], X.iloc[test], y[test]

# %% fit and print: the model as text, then its privacy ledger
# key=0 makes the tour reproducible; a model you release uses key=None (fresh entropy)
model = dpjax.fit(X_train, y_train, method="boosted", epsilon=1.0, bounds=bounds, key=0)
print(model)
print(f"\ntest accuracy {model.score(X_test, y_test):.3f}")

# %% importances (read off the released model alone) and pictures
for name, value in zip(model.spec.names, model.feature_importances(), strict=True):
    print(f"  importance of {name}: {value:.3f}")
save(plots.plot_importances(model), "importances.png")
save(plots.plot_ledger(model.privacy), "ledger.png")
forest = dpjax.fit(X_train, y_train, method="random_trees", n_trees=5, depth=3, epsilon=1.0,
                   bounds=bounds, key=0)
save(plots.plot_tree(forest, tree=0), "tree.png")

# %% export to JSON and load it back: the same predictions, bit for bit
path = OUT / "boosted_banknote.json"
model.to_json(path)
loaded = dpjax.load(path)
assert np.array_equal(loaded.predict_proba(X_test), model.predict_proba(X_test))
print(f"\nexported to {OUT.name}/{path.name} ({path.stat().st_size} bytes) and loaded back")

# %% accuracy against epsilon: 4 budgets x 5 seeds in one compiled sweep
sweep = dpjax.sweep(X_train, y_train, method="boosted", epsilon=[0.05, 0.2, 1.0, 5.0],
                    seeds=5, bounds=bounds)
save(plots.plot_sweep(sweep, X_test, y_test), "sweep_accuracy.png")

# %% a grid search under a budget: every fit of the search spends from one accountant
accountant = dpjax.BudgetAccountant(epsilon=5.0)
search = GridSearchCV(
    DPBoostedTreesClassifier(epsilon=0.5, bounds=bounds, random_state=0, accountant=accountant),
    {"learning_rate": [0.5, 1.0], "regularisation": [1.0, 4.0]}, cv=3, error_score="raise")
try:
    search.fit(X_train, y_train)             # 4 settings x 3 folds + the refit = 13 fits
except dpjax.BudgetExceededError as error:
    print(f"\nthe grid search stopped at its budget:\n  {error}")
print(accountant)
