"""The public binning in words: what a code or a split of a feature means (for the readable
descriptions of fitted models; reads the public :class:`~dpjax.data.FeatureSpec` only)."""

from __future__ import annotations

import numpy as np

from dpjax.data.binning import FeatureSpec


def code_label(spec: FeatureSpec, feature: int, code: int) -> str:
    """``"name in [lo, hi)"``, ``"name = category"``, ``"name is other"`` or ``"name is
    missing"`` for code ``code`` of ``feature`` (the public binning of ``spec``)."""
    name = spec.names[feature]
    if code >= spec.n_values[feature]:
        return f"{name} is missing"
    categories = spec.categories[feature]
    if categories is not None:
        return f"{name} = {categories[code]}" if code < len(categories) else f"{name} is other"
    edges = np.concatenate([[spec.lower[feature]], spec.bin_edges(feature),
                            [spec.upper[feature]]])
    close = "]" if code == len(edges) - 2 else ")"
    return f"{name} in [{edges[code]:.4g}, {edges[code + 1]:.4g}{close}"


def split_text(spec: FeatureSpec, feature: int, threshold: int) -> str:
    """The condition under which a row goes left at a split ``code <= threshold`` of
    ``feature``: ``"age < 37.5"``, ``"colour in {red, blue}"`` or ``"age is not missing"``."""
    name = spec.names[feature]
    n_values = int(spec.n_values[feature])
    if threshold >= n_values - 1:
        return f"{name} is not missing" if spec.missing[feature] else "always"
    categories = spec.categories[feature]
    if categories is not None:
        left = [str(c) for c in categories[:threshold + 1]]
        return f"{name} in {{{', '.join(left)}}}"
    edge = spec.bin_edges(feature)[threshold]
    return f"{name} < {edge:.4g}"


def code_runs(spec: FeatureSpec, feature: int, texts: list[str]) -> list[str]:
    """``"label text"`` items for the codes of ``feature``, one text per code (``texts``, the
    missing code's last where the feature has one): consecutive bins of a numeric feature with
    the same text merged into one range, ``"[0, 0.5) +0.1"``; a category ``"= red +0.1"``,
    ``"is other …"``, ``"is missing …"``."""
    name = spec.names[feature]
    ordered = int(spec.n_ordered[feature])
    items: list[str] = []
    start = 0
    for code in range(len(texts)):
        if code < ordered:
            if code + 1 < ordered and texts[code + 1] == texts[code]:
                continue
            first = code_label(spec, feature, start).removeprefix(f"{name} in ")
            last = code_label(spec, feature, code).removeprefix(f"{name} in ")
            label = first if start == code else f"{first.split(',')[0]},{last.split(',')[1]}"
            start = code + 1
        else:
            label = code_label(spec, feature, code).removeprefix(f"{name} ")
        items.append(f"{label} {texts[code]}")
    return items


def wrap_items(head: str, items: list[str], *, width: int = 100, indent: str = "      ",
               separator: str = "; ") -> list[str]:
    """``head`` and ``items`` as lines of at most ``width`` characters where the items allow:
    one line ``head items…`` when it fits, else ``head`` then the items packed greedily on
    lines that start with ``indent``."""
    one = f"{head} {separator.join(items)}"
    if len(one) <= width:
        return [one]
    lines, line, end = [head], "", separator.rstrip()
    for item in items:
        if line and len(indent + line + separator + item + end) > width:
            lines.append(indent + line + end)
            line = item
        else:
            line = f"{line}{separator}{item}" if line else item
    if line:
        lines.append(indent + line)
    return lines
