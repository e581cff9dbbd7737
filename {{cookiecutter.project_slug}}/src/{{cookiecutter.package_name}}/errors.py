"""One error type for problems the user can fix, and the wrapper that prints them as one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)


class UserError(Exception):
    """A problem with the input (recipe, data, paths) that the message explains how to fix."""


class DataError(UserError):
    """The data cannot be used as configured (the message names the file, row and column)."""


class Interrupted(Exception):  # noqa: N818 - a stop, not an error
    """Training stopped on a signal after saving a checkpoint; carries the exit code."""

    def __init__(self, code: int):
        super().__init__(code)
        self.code = code


def show_progress_logs() -> None:
    """INFO logs of this package on stderr, whatever other libraries did to the root logger."""
    package = logging.getLogger(__package__)
    if not package.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        package.addHandler(handler)
        package.setLevel(logging.INFO)
        package.propagate = False


def run(main: Callable[[Sequence[str] | None], None], argv: Sequence[str] | None = None) -> int:
    """Run a command's main; a `UserError` becomes `error: ...` on stderr and exit code 2."""
    show_progress_logs()
    try:
        main(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except Interrupted as stop:
        return stop.code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
