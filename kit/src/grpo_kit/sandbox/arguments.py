"""The sandbox's recipe fields, shared by the tasks that run model-written programs (the code
task's tests, the tools task's `run_python`); `sandbox_limits` (in sandbox/__init__.py) makes
the limits they describe."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class SandboxArguments:
    """Recipe fields `sandbox_*` (see sandbox/__init__.py for what each limit does); their
    defaults are the sandbox's (`Limits`)."""

    sandbox_workers: int = field(
        default=2, metadata={"help": "programs run in parallel when scoring a batch"}
    )
    sandbox_timeout: float = field(
        default=5.0,
        metadata={"help": "CPU seconds per program, tests included (waits count, host load not)"},
    )
    sandbox_memory_mb: int = field(default=512, metadata={"help": "memory limit per program"})
    # `process` opts into the weaker process-only sandbox: isolation.PROCESS_WARNING, logged on
    # every run and shown by `make doctor`, says what it still stops and what it does not.
    sandbox_isolation: str = field(
        default="auto",
        metadata={
            "help": "auto: bubblewrap, else unshare, else refuse; process: your files, warned"
        },
    )
    sandbox_python: str | None = field(
        default=None, metadata={"help": "Python 3.11+ running the programs; null: this one"}
    )
