"""Warnings that point at the caller's code: :func:`warn` gives ``warnings.warn`` the stack
level of the first frame outside dpjax, whatever the depth of the dpjax call that warns (a fit,
a prediction, an estimator), so the warning names the user's line, and Python's default filter
shows it once per line of theirs."""

from __future__ import annotations

import os
import sys
import warnings
from pathlib import Path

PACKAGES = tuple({str(Path(__file__).absolute().parents[1]) + os.sep,
                  str(Path(__file__).resolve().parents[1]) + os.sep})
"""The directory of the dpjax package, as imported and with its links resolved (a frame's file
name is the path it was imported by): frames under it are skipped."""


def warn(message: str, category: type[Warning] = UserWarning) -> None:
    """``warnings.warn(message, category)`` attributed to the first frame outside dpjax."""
    level, frame = 2, sys._getframe(1)         # stacklevel 2: the caller of warn
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGES):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


__all__ = ["warn"]
