"""SIGTERM mid-run saves a checkpoint and exits; the same command resumes from that step, with
the callbacks' state of the checkpoint (adaptive reward weights, active health findings)."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from grpo_kit.callbacks.adaptive_weights import STATE_KEY, WEIGHTS_LOG
from grpo_kit.callbacks.health import HEALTH_LOG, read_events
from grpo_kit.rewards.base import RewardRange

TESTS = Path(__file__).resolve().parent  # on the training process's path, for the reward below
KILL_AT_STEP = "GRPO_TEST_SIGTERM_AT_STEP"


def sigterm_at_step(completions, trainer_state=None, **kwargs):
    """A reward that sends this process SIGTERM once, when training reaches the given step (as
    a scheduler's time limit would), and otherwise scores nothing in particular."""
    step = int(os.environ.get(KILL_AT_STEP, "-1"))
    if trainer_state is not None and trainer_state.global_step == step:
        os.environ.pop(KILL_AT_STEP)
        os.kill(os.getpid(), signal.SIGTERM)
    return [float(len(c[0]["content"]) % 3) for c in completions]


# A documented range (as @reward gives one) far above the scores: the reward is "rarely met", so
# the adaptive weights raise its weight by adaptive_factor (1.25) at every log.
sigterm_at_step.reward_range = RewardRange(0.0, 100.0)


def train_command(tiny_model_dir, output_dir, *extra):
    return [
        sys.executable, "-m", "grpo_kit", "train", "--config",
        "configs/grpo.yaml", "--smoke", "--model_name_or_path", str(tiny_model_dir),
        "--output_dir", str(output_dir), "--max_steps", "6", "--reward_funcs",
        "test_resume.sigterm_at_step", "--reward_weights", "1.0",
        "--adaptive_reward_weights", "true", *extra,
    ]  # fmt: skip


def state_of(folder):
    return json.loads((folder / "trainer_state.json").read_text())


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_the_rerun_resumes_from_it(tiny_model_dir, tmp_path):
    out = tmp_path / "run"
    path = os.pathsep.join(p for p in (str(TESTS), os.environ.get("PYTHONPATH")) if p)
    env = {**os.environ, KILL_AT_STEP: "2", "OMP_NUM_THREADS": "1", "PYTHONPATH": path}
    first = subprocess.run(
        train_command(tiny_model_dir, out), capture_output=True, text=True, env=env, timeout=600
    )
    assert first.returncode == 128 + signal.SIGTERM, first.stderr[-3000:]
    assert "SIGTERM received" in first.stderr
    checkpoints = sorted(out.glob("checkpoint-*"))
    assert [c.name for c in checkpoints] == ["checkpoint-3"], first.stderr[-2000:]
    assert state_of(checkpoints[0])["global_step"] == 3
    assert not (out / "adapter_model.safetensors").exists()  # no "final" model from a stop
    assert json.loads((out / "run_record.json").read_text())["status"] == "stopped by SIGTERM"
    # The adaptive weight after 3 logs (1.25 ** 3) is in the checkpoint's state.
    checkpoint_state = state_of(checkpoints[0])
    saved = checkpoint_state["stateful_callbacks"][STATE_KEY]
    assert saved["names"] == ["sigterm_at_step"]
    assert saved["weights"] == pytest.approx([1.25**3])

    env.pop(KILL_AT_STEP)
    second = subprocess.run(
        train_command(tiny_model_dir, out), capture_output=True, text=True, env=env, timeout=600
    )
    assert second.returncode == 0, second.stderr[-3000:]
    assert "resuming from" in second.stderr and "checkpoint-3" in second.stderr
    state = state_of(out)
    assert state["global_step"] == 6
    logged = [row["step"] for row in state["log_history"] if "reward" in row]
    assert logged == [1, 2, 3, 4, 5, 6]  # steps 1-3 come from the checkpoint, 4-6 were trained
    record = json.loads((out / "run_record.json").read_text())
    assert record["status"] == "finished" and record["resumed_from"].endswith("checkpoint-3")
    # The resumed run went on from the checkpoint's weight, not the recipe's 1.0.
    events = [json.loads(line) for line in (out / WEIGHTS_LOG).read_text().splitlines()]
    resumed = events.index(next(e for e in events if e.get("event") == "resumed"))
    assert events[resumed] == {"step": 3, "event": "resumed",
                               "weights": {"sigterm_at_step": 1.953125}}  # fmt: skip
    after = events[resumed + 1 :]
    assert [e["step"] for e in after] == [4, 5, 6]
    assert after[0]["old"] == pytest.approx(1.25**3) and after[-1]["new"] == pytest.approx(1.25**6)
    # The health monitor took back the findings active at the checkpoint.
    active = [
        f["check"] for f in checkpoint_state["stateful_callbacks"]["grpo_kit.health"]["active"]
    ]
    started = [e for e in read_events(out / HEALTH_LOG) if e["event"] == "started"]
    assert [(e["step"], e["active"]) for e in started] == [(0, []), (3, sorted(active))]


def test_no_resume_starts_from_the_base_model(tiny_model_dir, tmp_path):
    from conftest import smoke_train

    out = tmp_path / "run"
    smoke_train(tiny_model_dir, out, "--save_strategy", "steps", "--save_steps", "1")
    trainer = smoke_train(tiny_model_dir, out, "--no-resume", "--max_steps", "1")
    assert trainer.state.global_step == 1
