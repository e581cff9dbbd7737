"""How a command runs: progress logs on stderr, and a `UserError` as one line with exit code 2."""

from __future__ import annotations

import logging
import os
import sys
import warnings
from collections.abc import Callable, Sequence

from .errors import Interrupted, UserError

__all__ = [
    "run",
]

PACKAGE = __name__.rpartition(".")[0]

# Library warnings that carry no action for the user of a command (each seen on every run of
# the pinned stack); anything else still shows.
QUIET_WARNINGS = (
    r".*`torch_dtype` is deprecated.*",
    r".*generation flags are not valid and may be ignored.*",
    r".*The following generation flags are not valid.*",
    r".*Passing `generation_config` together with generation-related arguments.*",
)


def show_progress_logs(names: Sequence[str] = ()) -> None:
    """INFO logs of the kit (and of `names`, e.g. the project's package) on stderr, whatever
    other libraries did to the root logger."""
    for name in (PACKAGE, *names):
        logger = logging.getLogger(name)
        if not logger.handlers:
            handler = logging.StreamHandler()
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
            )
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False


def quiet_libraries() -> None:
    """Silence what the libraries print on every run that a user cannot act on (set
    GRPO_VERBOSE=1 to see it all)."""
    if os.environ.get("GRPO_VERBOSE"):
        return
    for pattern in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", message=pattern)
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory's notice


def run(main: Callable[[Sequence[str] | None], object], argv: Sequence[str] | None = None) -> int:
    """Run a command's main; a `UserError` becomes `error: ...` on stderr and exit code 2."""
    show_progress_logs()
    quiet_libraries()
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
