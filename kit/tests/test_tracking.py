"""The recipe's tracker works offline: a short run leaves its local files."""

import os

import pytest

from conftest import smoke_train


def test_the_tracker_records_a_run_offline(recipe, tiny_model_dir, tmp_path, monkeypatch):
    TRACKER = (recipe.training.report_to or ["none"])[0]  # noqa: N806
    if TRACKER == "none":
        pytest.skip("this project reports to no tracker")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    monkeypatch.setenv("TRACKIO_DIR", str(tmp_path / "trackio"))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.delenv("WANDB_MODE", raising=False)
    smoke_train(tiny_model_dir, tmp_path / "run", "--report_to", TRACKER, "--max_steps", "1")
    written = {
        "tensorboard": lambda: list((tmp_path / "run").rglob("events.out.tfevents.*")),
        "wandb": lambda: list(tmp_path.rglob("offline-run-*")),
        "trackio": lambda: list((tmp_path / "trackio").rglob("*")),
    }[TRACKER]()
    assert written, f"{TRACKER} left no local files"
    if TRACKER == "wandb":
        assert os.environ.get("WANDB_MODE") == "offline"
