"""grpo_kit.testing's helper for test suites run with pytest-xdist."""

import pytest
from grpo_kit.testing import share_cores_among_test_workers


@pytest.mark.parametrize(
    ("environ", "cores", "threads"),
    [
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, 2, "1"),
        ({"PYTEST_XDIST_WORKER_COUNT": "2"}, 8, "4"),
        ({"PYTEST_XDIST_WORKER_COUNT": "4"}, 2, "1"),
        ({"PYTEST_XDIST_WORKER_COUNT": "2", "OMP_NUM_THREADS": "3"}, 2, "3"),  # yours wins
        ({}, 2, None),  # not under xdist: torch's own default
    ],
)
def test_the_cores_are_shared_among_the_workers(environ, cores, threads):
    share_cores_among_test_workers(environ, cores)
    assert environ.get("OMP_NUM_THREADS") == threads


def test_this_suite_runs_with_its_share():
    import os

    if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
        import torch

        assert torch.get_num_threads() == int(os.environ["OMP_NUM_THREADS"])
