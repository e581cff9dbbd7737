"""The classification project's golden reward tests test YOUR labels (issue 41): they read the
label set from the recipe, as the kit's ProjectChecks do, instead of hard-coding AG News's
(which passed whatever labels configs/local.yaml named, testing nothing of yours)."""

import json

from conftest import ROOT, assert_ok, bake_ok, run_in

TEST = ROOT / "{{cookiecutter.project_slug}}" / "tests" / "test_classification_rewards.py"
AG_NEWS = ("World", "Sports", "Business", "Sci/Tech")


def test_the_golden_cases_name_no_sample_label():
    text = TEST.read_text(encoding="utf-8")
    assert not [label for label in AG_NEWS if label in text]
    assert "checks.recipe.task.labels" in text


def test_the_golden_cases_run_on_your_labels(cookies_session):
    project = bake_ok(cookies_session, task_type="classification", gpu_tier="cpu",
                      model="Qwen/Qwen3.5-0.8B", project_slug="own-labels")  # fmt: skip
    rows = [
        {"text": "The cat purred.", "label": "Cats"},
        {"text": "A dog barked.", "label": "Dogs"},
    ]
    (project / "data" / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (project / "configs" / "local.yaml").write_text(
        "dataset_name: data/mine.jsonl\nlabels: [Cats, Dogs]\n"
    )
    probe = project / "tests" / "test_probe_labels.py"  # what the golden cases were built from
    probe.write_text(
        "def test_labels(checks):\n    assert list(checks.recipe.task.labels) == ['Cats', 'Dogs']\n"
    )
    env = {"PYTHONPATH": f"{project / 'src'}:{ROOT / 'kit' / 'src'}"}
    tests = ["tests/test_rewards.py", str(probe.relative_to(project))]
    result = run_in(project, "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", *tests,
                    env=env)  # fmt: skip
    assert_ok(result)
    assert "8 passed" in result.stdout, result.stdout
