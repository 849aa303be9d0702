"""Proper losses and split criteria: the Mα family (Bayes risks, links, surrogate, split
sensitivity; ``docs/specs/boosted-dp-trees-malpha.md`` §1, §2.2)."""

from dpjax.losses.proper import (
    bayes_risk,
    canonical_link,
    clamped_split_risk,
    criterion_sensitivity,
    gini_risk,
    inverse_link,
    log_risk,
    matsushita_risk,
    node_risk,
    split_risk,
    split_sensitivity,
    surrogate_loss,
    zero_one_risk,
)

__all__ = [
    "bayes_risk",
    "canonical_link",
    "clamped_split_risk",
    "criterion_sensitivity",
    "gini_risk",
    "inverse_link",
    "log_risk",
    "matsushita_risk",
    "node_risk",
    "split_risk",
    "split_sensitivity",
    "surrogate_loss",
    "zero_one_risk",
]
