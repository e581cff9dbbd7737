"""StopOnSignal: SIGINT/SIGTERM stop after the step with a checkpoint, SIGUSR1 (a scheduler's
early warning before its time limit) does the same and exits with the code the SLURM script
requeues on; copies of one request (the scheduler signals every process, torchrun forwards)
are one request."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from grpo_kit.callbacks import stopping
from grpo_kit.callbacks.stopping import REQUEUE_EXIT_CODE, StopOnSignal

TESTS = Path(__file__).resolve().parent  # on the training process's path, for the reward below
SIGNAL_AT_STEP = "GRPO_TEST_SIGUSR1_AT_STEP"


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def stopper():
    """A StopOnSignal with its handlers installed (as at the start of training) and a clock the
    test moves; the handlers are put back afterwards."""
    clock = Clock()
    callback = StopOnSignal(clock=clock)
    callback.clock = clock
    callback.original = signal.getsignal(signal.SIGINT)
    callback.on_train_begin(SimpleNamespace(world_size=1), None, None)
    yield callback
    callback._restore()


def test_the_early_warning_stops_after_the_step_with_the_requeue_code(stopper):
    os.kill(os.getpid(), signal.SIGUSR1)  # delivered to this (main) thread's handler
    assert stopper.received == signal.SIGUSR1
    control = stopper.on_step_end(SimpleNamespace(device="cpu"), None, SimpleNamespace())
    assert control.should_save and control.should_training_stop
    assert stopper.exit_code == REQUEUE_EXIT_CODE == 75
    assert stopping.REQUEUE_STATUS == "stopped by SIGUSR1"  # what training.run records


def test_sigterm_keeps_its_exit_code(stopper):
    os.kill(os.getpid(), signal.SIGTERM)
    assert stopper.received == signal.SIGTERM and stopper.exit_code == 128 + signal.SIGTERM


def test_copies_of_one_request_are_one_request(stopper):
    """The scheduler's SIGTERM and torchrun's forwarded copy arrive within milliseconds: the
    second must not stop at once (that would lose the checkpoint)."""
    stopper._handle(signal.SIGTERM, None)
    stopper.clock.now += 0.05
    stopper._handle(signal.SIGTERM, None)  # no KeyboardInterrupt
    assert stopper.received == signal.SIGTERM


def test_a_second_stop_later_stops_at_once_and_puts_the_handlers_back(stopper):
    stopper._handle(signal.SIGINT, None)
    stopper.clock.now += stopping.DUPLICATE_WINDOW_S + 1
    with pytest.raises(KeyboardInterrupt):
        stopper._handle(signal.SIGINT, None)
    assert signal.getsignal(signal.SIGINT) is stopper.original  # the handler from before
    assert not stopper._previous


def test_the_early_warning_never_stops_at_once(stopper):
    """SIGUSR1 repeats (the launcher forwards the scheduler's copy) and a SIGTERM after it (the
    time limit itself) keep the clean stop under way, with the requeue code."""
    stopper._handle(signal.SIGUSR1, None)
    stopper.clock.now += 60
    stopper._handle(signal.SIGUSR1, None)
    stopper._handle(signal.SIGTERM, None)
    assert stopper.received == signal.SIGUSR1 and stopper.exit_code == REQUEUE_EXIT_CODE


def test_processes_of_a_distributed_run_exit_0_after_the_early_warning():
    """torchrun's agent stops the other workers when one exits non-zero (it could cut rank 0
    short while it writes the run record); the launcher reports the requeue instead."""
    callback = StopOnSignal()
    callback.on_train_begin(SimpleNamespace(world_size=2), None, None)
    try:
        callback._handle(signal.SIGUSR1, None)
        assert callback.exit_code == 0
        callback.received = signal.SIGTERM
        assert callback.exit_code == 128 + signal.SIGTERM
    finally:
        callback._restore()


def usr1_at_step(completions, trainer_state=None, **kwargs):
    """A reward that sends this process SIGUSR1 once, when training reaches the given step (as a
    scheduler's early warning would), and otherwise scores nothing in particular."""
    step = int(os.environ.get(SIGNAL_AT_STEP, "-1"))
    if trainer_state is not None and trainer_state.global_step == step:
        os.environ.pop(SIGNAL_AT_STEP)
        os.kill(os.getpid(), signal.SIGUSR1)
    return [float(len(c[0]["content"]) % 3) for c in completions]


@pytest.mark.slow
def test_the_early_warning_saves_a_checkpoint_and_exits_for_a_requeue(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, SIGNAL_AT_STEP: "1", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    command = [
        sys.executable, "-m", "grpo_kit", "train", "--config", "configs/grpo.yaml", "--smoke",
        "--model_name_or_path", str(tiny_model_dir), "--output_dir", str(out),
        "--max_steps", "4", "--reward_funcs", "test_stopping.usr1_at_step",
        "--reward_weights", "1.0",
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == REQUEUE_EXIT_CODE, run.stderr[-3000:]
    assert "SIGUSR1 received" in run.stderr
    assert [c.name for c in out.glob("checkpoint-*")] == ["checkpoint-2"], run.stderr[-2000:]
    record = json.loads((out / "run_record.json").read_text())
    assert record["status"] == stopping.REQUEUE_STATUS and record["global_step"] == 2
    assert not (out / "adapter_model.safetensors").exists()  # no "final" model from a stop
