"""Progress bars (tqdm) for the long runs: audits, experiments, benchmarks.

A bar shows only where someone watches: when stderr is a terminal (so never inside pytest or a
log file), unless ``$DPJAX_PROGRESS`` says otherwise (``1``: always, ``0``: never), or the
caller asks explicitly.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")


def wanted(enabled: bool | None = None) -> bool:
    """Whether to show a bar: ``enabled`` if given, else ``$DPJAX_PROGRESS`` (``0``/``1``),
    else whether stderr is a terminal."""
    if enabled is not None:
        return enabled
    setting = os.environ.get("DPJAX_PROGRESS")
    if setting in ("0", "1"):
        return setting == "1"
    return sys.stderr.isatty()


def bar(total: int, desc: str, *, unit: str = "it", enabled: bool | None = None) -> Any:
    """A tqdm bar to ``update(n)`` and ``close()`` (a silent one when not :func:`wanted`)."""
    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=not wanted(enabled))


def progress(items: Iterable[T], desc: str, *, total: int | None = None, unit: str = "it",
             enabled: bool | None = None) -> Iterator[T]:
    """``items`` with a bar (:func:`bar`)."""
    return iter(tqdm(items, desc=desc, total=total, unit=unit, leave=False,
                     disable=not wanted(enabled)))
