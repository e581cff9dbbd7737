"""Stop cleanly on SIGINT (Ctrl-C) or SIGTERM (a scheduler's time limit, `kill`).

The first signal lets the current optimizer step finish, saves a checkpoint and ends training;
`train` then exits with 130/143 instead of saving a final model, and the same command resumes
from that checkpoint (global step, optimizer, scheduler, RNG and data position, all restored by
the Trainer). A second signal stops at once. With several processes the flag is all-reduced at
each step so that every process stops after the same step.
"""

from __future__ import annotations

import logging
import signal
import threading

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopOnSignal(TrainerCallback):
    def __init__(self):
        self.received: signal.Signals | None = None
        self._previous: dict[int, object] = {}

    @property
    def exit_code(self) -> int:
        return 128 + int(self.received) if self.received else 0

    def on_train_begin(self, args, state, control, **kwargs):
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed from the main thread
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        if self.received is not None:
            self._restore()
            raise KeyboardInterrupt
        self.received = signal.Signals(signum)
        logger.warning(
            "%s received: finishing this step, saving a checkpoint, then stopping (send it again "
            "to stop at once)",
            self.received.name,
        )

    def _agreed(self, args) -> bool:
        """True on every process when any process got a signal."""
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return self.received is not None
        import torch

        flag = torch.tensor([1.0 if self.received else 0.0], device=args.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        if flag.item() > 0 and self.received is None:
            self.received = signal.SIGTERM  # another process was signalled
        return flag.item() > 0

    def on_step_end(self, args, state, control, **kwargs):
        if self._agreed(args):
            control.should_save = True
            control.should_training_stop = True
        return control

    def on_train_end(self, args, state, control, **kwargs):
        self._restore()

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()
