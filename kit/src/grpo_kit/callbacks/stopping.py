"""Stop cleanly on SIGINT (Ctrl-C), SIGTERM (a scheduler's time limit, `kill`) or SIGUSR1 (a
scheduler's early warning: SLURM's `--signal=B:USR1@<seconds>`, see scripts/multinode.sbatch).

The first signal lets the current optimizer step finish, saves a checkpoint and ends training;
`train` then exits instead of saving a final model, and the same command resumes from that
checkpoint (global step, optimizer, scheduler, RNG and data position, all restored by the
Trainer). Exit codes: 130/143 after SIGINT/SIGTERM; REQUEUE_EXIT_CODE (75, sysexits' EX_TEMPFAIL:
"try again later") after SIGUSR1, which tells the SLURM script to requeue the job. In a run of
several processes (torchrun) every process exits 0 after SIGUSR1 instead: torchrun's agent stops
the other processes as soon as one exits non-zero, which could cut rank 0 short while it writes
the run record; `grpo launch` reads that record and reports REQUEUE_EXIT_CODE for the run.

A second SIGINT/SIGTERM stops at once, unless it arrives within DUPLICATE_WINDOW_S of the first:
a scheduler signals every process of a job and torchrun forwards the same signal to its workers,
so one request can arrive twice. SIGUSR1 never stops at once (it is a warning, not a kill).
With several processes the request is all-reduced at each step so that every process stops
after the same step, for the same reason (SIGUSR1 when any process got it).
"""

from __future__ import annotations

import logging
import signal
import threading
import time

from transformers import TrainerCallback

logger = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
REQUEUE_SIGNAL = signal.SIGUSR1
SIGNALS = (*STOP_SIGNALS, REQUEUE_SIGNAL)
REQUEUE_EXIT_CODE = 75  # EX_TEMPFAIL: the checkpoint is saved, run the same command again
DUPLICATE_WINDOW_S = 2.0  # copies of one stop request (scheduler + torchrun) arrive this close


def stop_status(received: signal.Signals) -> str:
    """The run record's status after a stop on a signal (training.run writes it)."""
    return f"stopped by {received.name}"


# The run record's status after a stop for a requeue (the launcher reads it to exit 75).
REQUEUE_STATUS = stop_status(REQUEUE_SIGNAL)


class StopOnSignal(TrainerCallback):
    def __init__(self, clock=time.monotonic):
        self.received: signal.Signals | None = None
        self._previous: dict[int, object] = {}
        self._clock = clock
        self._first_stop: float | None = None  # when the first SIGINT/SIGTERM arrived
        self._processes = 1

    @property
    def exit_code(self) -> int:
        if self.received is None:
            return 0
        if self.received == REQUEUE_SIGNAL:
            return REQUEUE_EXIT_CODE if self._processes <= 1 else 0
        return 128 + int(self.received)

    def on_train_begin(self, args, state, control, **kwargs):
        self._processes = int(getattr(args, "world_size", 1) or 1)
        if threading.current_thread() is not threading.main_thread():
            return  # signal handlers can only be installed from the main thread
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)

    def _handle(self, signum, frame) -> None:
        sig = signal.Signals(signum)
        now = self._clock()
        if sig in STOP_SIGNALS:
            if self._first_stop is not None and now - self._first_stop > DUPLICATE_WINDOW_S:
                self._restore()
                raise KeyboardInterrupt
            if self._first_stop is None:
                self._first_stop = now
        if self.received is not None:
            logger.info("%s received: already stopping after this step", sig.name)
            return
        self.received = sig
        if sig == REQUEUE_SIGNAL:
            logger.warning(
                "%s received (the scheduler's time limit is near): finishing this step, saving "
                "a checkpoint, then stopping for a requeue",
                sig.name,
            )
        else:
            logger.warning(
                "%s received: finishing this step, saving a checkpoint, then stopping (send it "
                "again to stop at once)",
                sig.name,
            )

    def _agreed(self, args) -> bool:
        """True on every process when any process got a signal; every process then holds the
        same reason (SIGUSR1 when any process got it, else the highest signal number)."""
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return self.received is not None
        import torch

        mine = self.received
        flags = torch.tensor(
            [float(mine == REQUEUE_SIGNAL), float(int(mine) if mine else 0)], device=args.device
        )
        dist.all_reduce(flags, op=dist.ReduceOp.MAX)
        requeue, highest = (int(v) for v in flags.tolist())
        if not highest:
            return False
        self.received = REQUEUE_SIGNAL if requeue else signal.Signals(highest)
        return True

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
