"""Shared fixtures: every test runs offline, from the project root, on a tiny local model."""

import os
from pathlib import Path

import pytest

# Offline before anything imports huggingface_hub (it reads these once, on import).
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# The backend first: Unsloth must be imported before transformers (tiny_model imports it).
import {{ cookiecutter.package_name }}.config  # noqa: E402, F401, I001

PROJECT_ROOT = Path(__file__).resolve().parents[1]
RECIPE = "configs/grpo.yaml"


@pytest.fixture(autouse=True)
def in_project_root(monkeypatch):
    """Recipe paths (configs/, data/, outputs/) are relative to the project root."""
    monkeypatch.chdir(PROJECT_ROOT)


@pytest.fixture(scope="session")
def recipe():
    """The project's recipe on the sample data (use_cpu lets a GPU recipe parse here)."""
    from {{ cookiecutter.package_name }}.config import (
        Layer,
        parse_recipe,
        sample_data_values,
    )
    from {{ cookiecutter.package_name }}.project import SAMPLE_DATA

    previous = Path.cwd()
    os.chdir(PROJECT_ROOT)
    try:
        # Your data mapping (configs/local.yaml) stays yours: the tests read the sample data
        # with its own columns.
        sample = Layer(SAMPLE_DATA, sample_data_values())
        parsed = parse_recipe(["--config", RECIPE], extra=sample, read_only=True)
    finally:
        os.chdir(previous)
    return parsed


@pytest.fixture(scope="session")
def sample_rows(recipe):
    """The sample data as training rows: chat `prompt`, gold `answer`, the task's columns."""
    from {{ cookiecutter.package_name }} import data

    previous = Path.cwd()
    os.chdir(PROJECT_ROOT)
    try:
        rows = data.load_training_rows(recipe.script, recipe.task)
        return data.to_conversations(rows, recipe.script, recipe.task)
    finally:
        os.chdir(previous)


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory, recipe) -> Path:
    from {{ cookiecutter.package_name }}.tools.tiny_model import build_tiny_model

    previous = Path.cwd()
    os.chdir(PROJECT_ROOT)  # the tokenizer is trained on the sample data file
    try:
        return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", recipe=recipe)
    finally:
        os.chdir(previous)


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir)


def smoke_train(tiny_model_dir, output_dir, *extra):
    """Train the recipe offline (--smoke) on the tiny model into `output_dir`."""
    from {{ cookiecutter.package_name }} import train

    return train.train(
        [
            "--config", RECIPE, "--smoke", "--model_name_or_path", str(tiny_model_dir),
            "--output_dir", str(output_dir), *extra,
        ]
    )  # fmt: skip


@pytest.fixture(scope="session")
def logged_run(tiny_model_dir, tmp_path_factory) -> Path:
    """A 4-step smoke run that logs every step and its completions (for report, evaluate and
    the run record), with adaptive reward weights on."""
    run_dir = tmp_path_factory.mktemp("logged") / "run"
    previous = Path.cwd()
    os.chdir(PROJECT_ROOT)
    try:
        smoke_train(
            tiny_model_dir, run_dir, "--max_steps", "4", "--log_completions", "true",
            "--adaptive_reward_weights", "true",
        )  # fmt: skip
    finally:
        os.chdir(previous)
    return run_dir
