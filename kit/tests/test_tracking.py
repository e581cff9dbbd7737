"""Each tracker a recipe can report to works offline: a short run leaves its local files."""

import importlib.util
import os
import sys
from pathlib import Path

import pytest
from conftest import smoke_train

# tracker (`report_to` in the recipe) -> the package it needs
TRACKERS = {"tensorboard": "tensorboard", "wandb": "wandb", "trackio": "trackio"}


def installed(tracker: str):
    package = TRACKERS[tracker]
    missing = importlib.util.find_spec(package) is None
    reason = f"{package} is not installed (report_to: {tracker})"
    return pytest.param(tracker, marks=pytest.mark.skipif(missing, reason=reason))


def trackio_writes_to(folder: Path, monkeypatch) -> None:
    """TRACKIO_DIR for this test. trackio reads it once, on import, into module constants (an
    earlier test of the session may have imported it): those are pointed at `folder` too."""
    monkeypatch.setenv("TRACKIO_DIR", str(folder))
    paths = {"TRACKIO_DIR": folder, "MEDIA_DIR": folder / "media",
             "ARTIFACTS_DIR": folder / "artifacts"}  # fmt: skip
    for name, module in list(sys.modules.items()):
        if name == "trackio" or name.startswith("trackio."):
            for constant, path in paths.items():
                if isinstance(getattr(module, constant, None), Path):
                    monkeypatch.setattr(module, constant, path)


@pytest.mark.parametrize("tracker", [installed(t) for t in TRACKERS])
def test_the_tracker_records_a_run_offline(tracker, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    trackio_writes_to(tmp_path / "trackio", monkeypatch)
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    # Set, then deleted: monkeypatch restores the variable the run sets (WANDB_MODE=offline).
    monkeypatch.setenv("WANDB_MODE", "")
    monkeypatch.delenv("WANDB_MODE")
    smoke_train(tiny_model_dir, tmp_path / "run", "--report_to", tracker, "--max_steps", "1")
    written = {
        "tensorboard": lambda: list((tmp_path / "run").rglob("events.out.tfevents.*")),
        "wandb": lambda: list(tmp_path.rglob("offline-run-*")),
        "trackio": lambda: list((tmp_path / "trackio").rglob("*")),
    }[tracker]()
    assert written, f"{tracker} left no local files"
    if tracker == "wandb":
        assert os.environ.get("WANDB_MODE") == "offline"
