"""Every test runs offline, from the project root (the recipe names relative paths)."""

import os
from pathlib import Path

import pytest

# Offline before anything imports huggingface_hub (it reads these once, on import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PROJECT_ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def in_project_root(monkeypatch):
    monkeypatch.chdir(PROJECT_ROOT)


@pytest.fixture(scope="session")
def checks():
    """grpo-kit's checks of this project: its recipe, task and rewards on your data
    (the sample while the recipe names the task's default dataset)."""
    from grpo_kit.testing import ProjectChecks

    return ProjectChecks(PROJECT_ROOT)
