"""The sandbox's recipe fields, shared by the tasks that run model-written programs (the code
task's tests, the tools task's `run_python`), and the limits they make."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class SandboxArguments:
    """Recipe fields `sandbox_*` (see sandbox/__init__.py for what each limit does)."""

    sandbox_workers: int = 2  # programs run in parallel per reward call
    sandbox_timeout: float = 5.0  # wall-clock seconds per program (all its tests)
    sandbox_memory_mb: int = 512  # address-space limit per program
    # auto: bubblewrap, else util-linux unshare, else refuse to train; or name one of them;
    # `process` opts into the weaker process-only sandbox (warned about on every run).
    sandbox_isolation: str = "auto"
    sandbox_python: str | None = None  # Python 3.11+ that runs the programs; null: this one


def sandbox_limits(args: SandboxArguments):
    """The sandbox these fields describe, checked now: without the configured isolation, the run
    stops here (before any model loads) with one line naming the fix."""
    from . import Limits

    limits = Limits(
        timeout=args.sandbox_timeout,
        memory_mb=args.sandbox_memory_mb,
        workers=args.sandbox_workers,
        isolation=args.sandbox_isolation,
        python=args.sandbox_python,
    )
    limits.level()  # raises SandboxUnavailable (a UserError) with the fix
    return limits
