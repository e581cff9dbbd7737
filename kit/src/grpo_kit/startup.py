"""A command's start-up: importing the training stack without paying for garbage collection.

Importing torch, transformers, peft and trl builds about 700,000 objects that CPython's cyclic
garbage collector tracks, and all of them live as long as the process. The collector scans every
tracked object at each full collection: the import itself triggers several (about a fifth of its
CPU time), and every full collection after it scans them again, for nothing. So the
commands import the stack with the collector paused and then move what it built out of the
collector's reach (`gc.freeze()`, the standard library's tool for long-lived start-up objects).
A short command (`grpo reward-debug`, `grpo evaluate`) spends 2-3 s less CPU, a quarter to
a third of its total; training loops skip those scans too (`python benchmarks/startup.py`
prints the figures). Garbage made later is collected as usual.

`cli` pauses the collector for the whole start-up (the project, its backend, the command and the
stack); `recipe.parse_recipe` imports the backend and the stack through `import_stack`, so a
project's script run as a module and a test process that reads a recipe are covered too. Nothing
here imports an ML library at module import; with the Unsloth backend `import unsloth` comes
first.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

# What every command but `--help` imports (with `transformers.modeling_utils` come peft,
# accelerate and torch's distributed and compiler modules).
STACK = ("torch", "transformers.modeling_utils", "trl.trainer.grpo_config")


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic collector paused for the block; what exists at its end is frozen (never
    scanned again). Nested blocks freeze and resume only at the outermost one's end."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.freeze()
            gc.enable()


def import_stack(backend: str | None = None, modules: tuple[str, ...] = STACK) -> None:
    """Import the backend's module first (Unsloth before trl), then `modules`, with the collector
    paused, then freeze them; nothing is done (nothing frozen) once they are all imported, so a
    process that reads many recipes freezes once."""
    from . import backends

    wanted = [*([f"{backends.__name__}.{backend}"] if backend else []), *modules]
    if all(name in sys.modules for name in wanted):
        return
    with collector_paused():
        if backend:
            backends.load(backend)
        for name in modules:
            importlib.import_module(name)


_SILENCED: list[bool] = []  # registered once per process


def quiet_nanobind_exit() -> bool:
    """Triton's compiled module (`triton._C.libtriton`, loaded by Unsloth) is built with
    nanobind, whose leak check prints "nanobind: leaked N instances! ... leaked N functions!" when
    the interpreter shuts down: harmless (the OS frees it all) but it reads like a crash after a
    command's last line (`smoke passed`, its one-line error, pytest's summary). nanobind can only
    be told at build time (`nb::set_leak_warnings`, which triton does not expose, and no
    environment variable), so stderr goes to /dev/null once the atexit handlers run, as triton
    does for its own warm-up workers, when triton's module is loaded by then; GRPO_VERBOSE=1
    keeps it. `cli.main` calls this for every command, and the Unsloth backend when it loads
    (a project's test run). Returns whether this process would be silenced now."""

    def silence() -> None:
        if os.environ.get("GRPO_VERBOSE") or "triton._C.libtriton" not in sys.modules:
            return
        sys.stderr.flush()
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)

    if not _SILENCED:
        _SILENCED.append(True)
        atexit.register(silence)  # atexit runs before the module teardown that reports leaks
    return not os.environ.get("GRPO_VERBOSE") and "triton._C.libtriton" in sys.modules
