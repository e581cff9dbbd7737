"""One error type for problems the user can fix, and the wrapper that prints them as one line."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence

logger = logging.getLogger(__name__)


class UserError(Exception):
    """A problem with the input (recipe, data, paths) that the message explains how to fix."""


def run(main: Callable[[Sequence[str] | None], None], argv: Sequence[str] | None = None) -> int:
    """Run a command's main; a `UserError` becomes `error: ...` on stderr and exit code 2."""
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", force=False
    )
    try:
        main(argv)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
