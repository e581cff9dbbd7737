"""`recommended_sampling` in the project's [tool.grpo]: the catalog's model-card sampling for the
chat mode the recipe renders, which evaluate and infer decode with by default (greedy when
absent)."""

from __future__ import annotations

import re
import tomllib

import pytest
from conftest import bake_ok

from grpo_template import catalog, derived, tasks, tuning

REASONING = tasks.TASKS["math"]  # a task with a reasoning block: the model's own default mode
ANSWER_ONLY = tasks.TASKS["json"]  # JSON only: a thinking template's thinking is switched off


def card(spec: catalog.ModelSpec) -> dict | None:
    sampling = spec.sampling
    if sampling is None:
        return None
    return {"temperature": sampling.temperature, "top_p": sampling.top_p, "top_k": sampling.top_k}


def rendered(spec: catalog.ModelSpec, task: tasks.TaskSpec) -> tuple[dict | None, str]:
    return derived.recommended_sampling(spec, tuning.thinks(spec, task))


def project_value(project) -> dict | None:
    """The value in the baked pyproject.toml, read without importing anything of the project."""
    table = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    return table["tool"]["grpo"].get("recommended_sampling")


@pytest.mark.parametrize("hub_id", list(catalog.CATALOG))
def test_every_catalog_model_renders_its_card_sampling_with_its_source(hub_id):
    spec = catalog.CATALOG[hub_id]
    assert tuning.thinks(spec, REASONING) == spec.thinking  # the mode the card's is for
    value, why = rendered(spec, REASONING)
    assert value == card(spec)
    if spec.sampling is not None:  # its source in words, not the catalog's tag
        assert catalog.SOURCES[spec.sampling.source] in why
        assert f"[{spec.sampling.source}]" not in why and spec.sampling.source not in why


def test_the_catalog_recommends_sampling_where_the_issue_expects_it():
    """Qwen2.5, Llama, Gemma 3 and Phi-4-mini cards recommend none the catalog holds, nor does
    SmolLM2-135M's GGUF (its only source here); Qwen3's thinking mode is the card's T=0.6,
    top_p 0.95, top_k 20."""
    without = [hub_id for hub_id, spec in catalog.CATALOG.items() if spec.sampling is None]
    known = ("Qwen/Qwen2.5", "meta-llama/", "google/gemma-3", "microsoft/Phi-4",
             "HuggingFaceTB/SmolLM2-")  # fmt: skip
    assert without and all(hub_id.startswith(known) for hub_id in without)
    qwen3 = catalog.CATALOG["Qwen/Qwen3-0.6B"]
    assert rendered(qwen3, REASONING)[0] == {
        "temperature": 0.6,
        "top_p": 0.95,
        "top_k": 20,
    }


def test_a_task_that_switches_thinking_off_gets_no_thinking_mode_sampling():
    """The catalog's sampling is for the model's default mode: where the recipe switches a
    thinking model's thinking off, the project decodes greedily rather than with the card's
    thinking-mode sampling; a model that does not think keeps its card's sampling."""
    switched = [
        spec
        for spec in catalog.CATALOG.values()
        if spec.sampling is not None and tuning.thinks(spec, ANSWER_ONLY) != spec.thinking
    ]
    assert switched, "some thinking models switch thinking off for JSON answers"
    for spec in switched:
        value, why = rendered(spec, ANSWER_ONLY)
        assert value is None, spec.hub_id
        assert "is for thinking mode, not this recipe's" in why, spec.hub_id
    kept = catalog.CATALOG["LiquidAI/LFM2.5-1.2B-Instruct"]
    assert rendered(kept, ANSWER_ONLY)[0] == card(kept)


def test_a_custom_model_has_no_recommended_sampling():
    spec = catalog.custom_model("mistralai/Mistral-7B-Instruct-v0.3", 7.2)
    value, why = rendered(spec, REASONING)
    assert value is None and "no model-card sampling" in why


@pytest.mark.parametrize(
    "hub_id, task, expected",
    [
        ("Qwen/Qwen3-0.6B", "math", {"temperature": 0.6, "top_p": 0.95, "top_k": 20}),
        ("Qwen/Qwen2.5-0.5B-Instruct", "math", None),  # the catalog has no card sampling
        ("Qwen/Qwen3-0.6B", "json", None),  # thinking off: the card's is for thinking mode
    ],
)
def test_the_baked_project_holds_the_catalogs_sampling(cookies_session, hub_id, task, expected):
    project = bake_ok(cookies_session, model=hub_id, gpu_tier="cpu", task_type=task)
    assert project_value(project) == expected
    text = (project / "pyproject.toml").read_text(encoding="utf-8")
    assert not re.search(r"#.*\[[A-Z0-9]{3,}\]", text)  # no catalog tag in a comment
