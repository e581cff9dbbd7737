"""Every command that takes a model or a run folder answers a missing one with the one-line
error that names the fix, whichever way the path was given (issue 41): a RUN_DIR that is not
there, a run not merged yet (`make infer RUN_DIR=outputs/trial` used to end in the Hub's
`OSError: Repo id must be in the form ...`), and a model folder that is not there."""

import logging

import pytest
from conftest import make_project
from grpo_kit import cli

MISSING_RUN, UNMERGED_RUN, MISSING_MODEL = "outputs/gone", "outputs/trial", "models/gone/model"
# (command and its options, what the one line says): a run folder given as the command takes it
CASES = {
    "infer missing RUN_DIR": (["infer", "--model", f"{MISSING_RUN}/merged", "--prompt", "hi"],
                              "no such run folder"),
    "infer unmerged RUN_DIR": (["infer", "--model", f"{UNMERGED_RUN}/merged", "--prompt", "hi"],
                               "make merge RUN_DIR=outputs/trial"),
    "infer missing model": (["infer", "--model", MISSING_MODEL, "--prompt", "hi"],
                            "no such folder"),
    "merge missing RUN_DIR": (["merge", MISSING_RUN], "no such folder"),
    "merge unmerged RUN_DIR": (["merge", "outputs/empty"], "neither a LoRA adapter nor a model"),
    "evaluate missing RUN_DIR": (["evaluate", "--model", MISSING_RUN], "no trained model"),
    "evaluate unmerged RUN_DIR": (["evaluate", "--model", f"{UNMERGED_RUN}/merged"], "make merge"),
    "evaluate missing model": (["evaluate", "--model", MISSING_MODEL], "no trained model"),
    "report missing RUN_DIR": (["report", MISSING_RUN], "no such run folder"),
    "report unmerged RUN_DIR": (["report", "outputs/empty"], "outputs/empty"),
    "export missing model": (["export", "--engine", "verl", "--model_name_or_path", MISSING_MODEL],
                             "no such folder"),
    "export unmerged RUN_DIR": (["export", "--engine", "verl", "--model_name_or_path",
                                 f"{UNMERGED_RUN}/merged"], "make merge"),
    "preflight unmerged RUN_DIR": (["preflight", "--model_name_or_path", f"{UNMERGED_RUN}/merged"],
                                   "make merge"),
    "preflight missing model": (["preflight", "--model_name_or_path", MISSING_MODEL],
                                "no such folder"),
    "warmup missing RUN_DIR": (["warmup", "--model_name_or_path", f"{MISSING_RUN}/merged"],
                               "no such run folder"),
    "warmup missing model": (["warmup", "--model_name_or_path", MISSING_MODEL], "no such folder"),
    "reward-debug missing model": (["reward-debug", "--reward_model", MISSING_MODEL],
                                   "make reward-model"),
    "reward-debug unmerged RUN_DIR": (["reward-debug", "--reward_model", f"{UNMERGED_RUN}/merged"],
                                      "make merge"),
}  # fmt: skip


@pytest.fixture(scope="module")
def trial_project(tmp_path_factory):
    """A project with an unmerged trial run (its adapter, no merged folder) and an empty run."""
    root = make_project(tmp_path_factory.mktemp("missing-models"))
    (root / UNMERGED_RUN).mkdir(parents=True)
    (root / UNMERGED_RUN / "adapter_config.json").write_text("{}", encoding="utf-8")
    (root / "outputs" / "empty").mkdir()
    (root / "models").mkdir()
    return root


@pytest.mark.parametrize("case", CASES)
def test_a_missing_model_or_run_gets_one_line_naming_the_fix(
    case, trial_project, monkeypatch, capsys
):
    argv, says = CASES[case]
    monkeypatch.chdir(trial_project)
    monkeypatch.setattr(logging.getLogger("grpo_kit"), "handlers", [])  # logs to this stderr
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err and err.endswith(errors[0]), err
    assert says in errors[0], err
