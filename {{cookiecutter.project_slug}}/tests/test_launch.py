"""The multi-GPU launcher: the commands it plans for this tier, and its orchestration (a stand-in
server and trainer replace vLLM and accelerate, so this runs on a CPU)."""

import sys

import pytest

from {{ cookiecutter.package_name }} import project
from {{ cookiecutter.package_name }}.errors import UserError
from {{ cookiecutter.package_name }}.training import launch


def plan(env=None):
    return launch.plan(
        ["--max_steps", "5"], env or {"MASTER_ADDR": "10.0.0.1", "SLURM_NODEID": "1"}
    )


def test_plan_matches_the_tier():
    steps = plan()
    train = steps[-1]
    assert train.command[-2:] == ["--max_steps", "5"]
    assert f"configs/accelerate/{project.DISTRIBUTED}.yaml" in train.command
    processes = train.command[train.command.index("--num_processes") + 1]
    assert int(processes) == project.TRAINING_PROCESSES
    if project.TIER_NODES > 1:
        assert len(steps) == 1
        assert train.command[train.command.index("--machine_rank") + 1] == "1"
        assert train.command[train.command.index("--main_process_ip") + 1] == "10.0.0.1"
    else:
        server = steps[0]
        assert server.background and server.environment()["VLLM_SERVER_DEV_MODE"] == "1"
        visible_train = train.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        visible_server = server.environment()["CUDA_VISIBLE_DEVICES"].split(",")
        assert len(visible_server) == project.VLLM_SERVER_GPUS
        assert not set(visible_train) & set(visible_server)
        assert len(visible_train) + len(visible_server) == project.TIER_GPUS
        assert "serve" in server.command


def test_overrides_reach_the_vllm_server_as_well_as_the_trainer():
    """The server is built from the same resolved recipe as the trainer: a longer completion
    lengthens the server's context, another port moves the server."""
    if project.TIER_NODES > 1 or not project.VLLM_SERVER_GPUS:
        pytest.skip("no vLLM server in this plan")
    steps = launch.plan(["--max_completion_length", "4096", "--vllm_server_port", "8123"], {})
    server = steps[0].command
    recipe = launch.launch_recipe([])
    assert int(server[server.index("--max-model-len") + 1]) == (
        recipe.script.max_prompt_tokens + 4096
    )
    assert server[server.index("--port") + 1] == "8123"


def test_multi_node_needs_the_main_address():
    if project.TIER_NODES == 1:
        pytest.skip("single node")
    with pytest.raises(UserError, match="MASTER_ADDR"):
        launch.plan([], {})


def test_dry_run_prints_the_commands(capsys, monkeypatch):
    monkeypatch.setenv("MASTER_ADDR", "10.0.0.1")
    assert launch.main(["--dry-run"]) == 0
    assert "accelerate.commands.launch" in capsys.readouterr().out


def fake_server(directory):
    """A stand-in for the vLLM server: serves a `health` file on a free port."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    (directory / "health").write_text("ok")
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1",
               "--directory", str(directory)]  # fmt: skip
    return command, f"http://127.0.0.1:{port}/health"


def test_execute_waits_for_the_server_then_trains_then_stops_it(tmp_path):
    command, url = fake_server(tmp_path)
    marker = tmp_path / "trained"
    steps = [
        launch.Step("vllm-server", command, background=True),
        launch.Step("train", [sys.executable, "-c", f"open({str(marker)!r}, 'w').write('x')"]),
    ]
    assert launch.execute(steps, url, timeout=30) == 0
    assert marker.exists()


def test_a_server_that_dies_is_reported(tmp_path):
    steps = [
        launch.Step("vllm-server", [sys.executable, "-c", "raise SystemExit(3)"], background=True)
    ]
    with pytest.raises(UserError, match="exited with code 3"):
        launch.execute(steps, "http://127.0.0.1:9/health", timeout=30)


def test_a_failing_training_step_returns_its_code():
    assert (
        launch.execute([launch.Step("train", [sys.executable, "-c", "raise SystemExit(4)"])], "", 1)
        == 4
    )
