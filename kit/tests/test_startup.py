"""A command's start-up: the training stack imported with the garbage collector paused, then
frozen out of its reach (grpo_kit/startup.py); `python benchmarks/startup.py` has the figures."""

import gc
import json
import subprocess
import sys

import pytest
from grpo_kit import startup


@pytest.fixture
def collector():
    """The collector as the test found it: running, nothing frozen by the test left frozen."""
    assert gc.isenabled()
    yield
    gc.unfreeze()
    gc.enable()


def test_the_pause_freezes_what_it_built_then_resumes(collector):
    gc.unfreeze()
    with startup.collector_paused():
        assert not gc.isenabled()
        built = [[] for _ in range(1000)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(built)
    del built


def test_a_nested_pause_resumes_only_at_the_outermost_end(collector):
    gc.unfreeze()
    with startup.collector_paused():
        with startup.collector_paused():
            pass
        assert not gc.isenabled() and gc.get_freeze_count() == 0
    assert gc.isenabled() and gc.get_freeze_count() > 0


def test_the_collector_resumes_when_the_block_fails(collector):
    with pytest.raises(RuntimeError), startup.collector_paused():
        raise RuntimeError("a failed import")
    assert gc.isenabled()


def test_the_stack_is_imported_paused_then_frozen(collector, tmp_path, monkeypatch):
    (tmp_path / "probe_stack.py").write_text("import gc\nPAUSED = not gc.isenabled()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    gc.unfreeze()
    startup.import_stack(modules=("probe_stack",))
    assert sys.modules["probe_stack"].PAUSED
    assert gc.isenabled() and gc.get_freeze_count() > 0
    del sys.modules["probe_stack"]


def test_an_imported_stack_is_not_frozen_again(collector):
    """A process that reads many recipes (a test worker) freezes once: later garbage is not
    frozen out of the collector's reach."""
    startup.import_stack(backend="transformers", modules=("json",))
    gc.unfreeze()
    startup.import_stack(backend="transformers", modules=("json",))
    assert gc.get_freeze_count() == 0


def test_a_paused_collector_stays_paused(collector, tmp_path, monkeypatch):
    """A process that turned collection off itself keeps it off, and nothing is frozen for it."""
    (tmp_path / "probe_off.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    gc.disable()
    gc.unfreeze()
    startup.import_stack(modules=("probe_off",))
    assert not gc.isenabled() and gc.get_freeze_count() == 0
    del sys.modules["probe_off"]


PROBE = """
import gc, json, sys
from grpo_kit import cli, startup
seen = {}
def command(argv):
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count(),
                stack=[m for m in startup.STACK if m in sys.modules])
cli._target = lambda name: command
cli.main(sys.argv[1:])
print(json.dumps(seen))
"""


@pytest.mark.parametrize("argv", [["reward-debug"], ["reward-debug", "--help"]])
def test_a_command_starts_with_its_stack_imported_and_frozen(argv, project_root):
    """Every command but `--help` finds the stack imported and frozen and the collector running
    (a fresh interpreter: this test process has imported the stack already)."""
    out = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True, text=True,
                         cwd=project_root, check=True).stdout  # fmt: skip
    seen = json.loads(out.strip().splitlines()[-1])
    assert seen["enabled"]
    if "--help" in argv:  # help stays instant: nothing heavy imported
        assert seen["stack"] == []
    else:
        assert seen["stack"] == list(startup.STACK) and seen["frozen"] > 100_000
