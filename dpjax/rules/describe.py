"""Rule lists in words: the literals and the ``if … then … else`` list with its released counts
(reads the released rule list and the public feature spec only)."""

from __future__ import annotations

import numpy as np

from dpjax.data.binning import FeatureSpec
from dpjax.data.describe import code_label
from dpjax.rules.greedy import RuleList


def literal_text(spec: FeatureSpec, feature: int, lo: int, hi: int, inside: bool) -> str:
    """A literal ``(lo <= code <= hi) == inside`` readably: ``"age >= 40"``, ``"sex = F"``,
    ``"not priors"`` (a 0/1 column), ``"colour in {red, blue}"``, ..."""
    name = spec.names[feature]
    n_values = int(spec.n_values[feature])
    categories = spec.categories[feature]
    if categories is None and lo == hi == 1 and n_values == 2 and (
            spec.lower[feature], spec.upper[feature]) == (0.0, 1.0):
        return name if inside else f"not {name}"
    if categories is None and 0 < lo < n_values and hi == n_values - 1:
        edge = f"{spec.bin_edges(feature)[lo - 1]:.4g}"
        missing = " or missing" if spec.missing[feature] and not inside else ""
        return f"{name} >= {edge}" if inside else f"{name} < {edge}{missing}"
    if lo == hi:
        text = code_label(spec, feature, lo)
    else:
        labels = [code_label(spec, feature, c).removeprefix(f"{name} ") for c in range(lo, hi + 1)]
        text = f"{name} in {{{', '.join(labels)}}}"
    return text if inside else f"not ({text})"


def describe_rule_list(rules: RuleList, spec: FeatureSpec, classes: tuple) -> str:
    """The list as ``if … then …`` lines with the released counts of each rule."""
    arrays = [np.asarray(a) for a in rules]
    feature, lo, hi, inside, active, counts, label, _ = arrays
    lines = []
    for r in np.flatnonzero(active):
        parts = {literal_text(spec, int(feature[r, k]), int(lo[r, k]), int(hi[r, k]),
                              bool(inside[r, k])) for k in range(2)}
        keyword = "if" if not lines else "else if"
        lines.append(f"{keyword} {' and '.join(sorted(parts))} then {classes[label[r]]}"
                     f"   [counts {counts[r, 0]:.0f} / {counts[r, 1]:.0f}]")
    default = f"{classes[label[-1]]}   [counts {counts[-1, 0]:.0f} / {counts[-1, 1]:.0f}]"
    lines.append(f"else {default}" if lines else
                 f"no rule (majority fallback): always {default}")
    return "\n".join(["rule list (counts: label 0 / label 1):", *lines])
