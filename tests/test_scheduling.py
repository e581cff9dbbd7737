"""The suite's own order: the long tests dealt among pytest-xdist's workers (conftest.deal)."""

import pytest
from conftest import deal


def worksteal_split(items: list, workers: int) -> list[list]:
    """pytest-xdist 3.8's first hand-out under --dist worksteal (WorkStealingScheduling.
    check_schedule, every worker idle): to each worker in turn, what is left divided evenly."""
    shares, left = [], list(items)
    for place in range(workers):
        size = len(left) // (workers - place)
        shares.append(left[:size])
        left = left[size:]
    return shares


@pytest.mark.parametrize(("workers", "total", "long"), [(2, 3749, 19), (3, 100, 7), (4, 9, 2)])
def test_each_worker_starts_with_its_share_of_the_long_tests(workers, total, long):
    items = [f"long-{n}" for n in range(long)] + [f"short-{n}" for n in range(total - long)]
    dealt = deal(items, workers, long)
    assert sorted(dealt) == sorted(items)
    shares = worksteal_split(dealt, workers)
    for place, share in enumerate(shares):
        mine = [f"long-{n}" for n in range(place, long, workers)]
        assert share[: len(mine)] == mine  # its long tests first, longest first
        assert not any(item.startswith("long") for item in share[len(mine) :])
