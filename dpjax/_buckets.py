"""Row buckets: the padded row counts that let fits and predictions of different row counts
share one compiled program (``docs/design.md``, "Compile cache"). A fit pads only for the
learners that ignore padding rows (:attr:`~dpjax.learner.Learner.pads_rows`); a deterministic
prediction is row by row, so its padding rows are computed and dropped."""

from __future__ import annotations

from typing import Any

import numpy as np

BUCKET_MAX_ROWS = 2**20
"""The most rows padded: past it a fit's run outweighs its compile, and the padding would cost
more than the program it saves."""
BUCKET_MIN_ROWS = 2**10
BUCKET_STEPS = 8
"""Buckets per power of two (:func:`row_bucket`): padding adds at most ``1/8`` of the rows."""


def row_bucket(rows: int) -> int:
    """The padded row count of ``rows`` rows (at most :data:`BUCKET_MAX_ROWS`): the least
    multiple of ``2**(e−3)`` at least ``rows``, where ``2**e <= rows < 2**(e+1)``
    (:data:`BUCKET_STEPS` buckets per power of two), and at least :data:`BUCKET_MIN_ROWS`. Row
    counts in one bucket share one compiled program; the shape tells the bucket, not the
    count."""
    if rows <= BUCKET_MIN_ROWS:
        return BUCKET_MIN_ROWS
    step = 2 ** (rows.bit_length() - 1) // BUCKET_STEPS
    return -(-rows // step) * step


def pads(rows: int) -> bool:
    """Whether ``rows`` rows are padded to their bucket (at most :data:`BUCKET_MAX_ROWS`)."""
    return rows <= BUCKET_MAX_ROWS


def padded_rows(rows: int, multiple: int = 1) -> int:
    """The rows a fit of ``rows`` rows holds once padded: its bucket (:func:`row_bucket`; past
    :data:`BUCKET_MAX_ROWS` the rows themselves), rounded up to a multiple of ``multiple`` (the
    devices that split the rows evenly)."""
    bucket = row_bucket(rows) if pads(rows) else rows
    return -(-bucket // multiple) * multiple


def pad_rows(array: np.ndarray, rows: int, fill: Any) -> np.ndarray:
    """``array`` with rows (its first axis) of ``fill`` appended up to ``rows`` rows."""
    if rows == array.shape[0]:
        return array
    extra = np.full((rows - array.shape[0], *array.shape[1:]), fill, array.dtype)
    return np.concatenate([array, extra])


def pad_to_bucket(array: np.ndarray, fill: Any) -> np.ndarray:
    """``array`` with rows of ``fill`` appended up to :func:`padded_rows` rows (unchanged past
    :data:`BUCKET_MAX_ROWS` rows)."""
    return pad_rows(array, padded_rows(array.shape[0]), fill)
