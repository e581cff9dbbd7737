"""Held-out rows: the rows `grpo evaluate` scores, which the training commands (warm-up, train,
filter, preflight) never see (`grpo export` gives the engines the same two sides).

A dataset with a test split of its own (a Hub dataset whose recipe names a `dataset_test_split`
other than its `dataset_train_split`) is evaluated on that split and trains on its whole
training split. Any other data (a single local file, or a Hub dataset read as one split) is split
here, deterministically: a row is held out when its problem (the prompt column's text: a chat's
last user message) hashes into the lowest HELD_OUT_SHARE of the hash range; at least
HELD_OUT_MIN rows are held out (the lowest hashes), never more than half the rows. The hash is
of the problem's text alone, so the split does not depend on the seed or the order of the rows,
nor, once the share holds more than HELD_OUT_MIN rows, on the other rows of the file;
identical problems fall on the same side, and a copy of the training rows (the filter's) holds
none of evaluate's.

The training side is then cut to `max_train_samples`; evaluate takes the first `--limit` of the
held-out side. `data.load_training_rows` stays the loader of a whole split (reward-debug,
doctor and the project's tests check every row).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from . import data
from .errors import DataError
from .rows import is_local
from .task import message_text

logger = logging.getLogger(__name__)

__all__ = [
    "HELD_OUT_MIN",
    "HELD_OUT_SHARE",
    "Split",
    "evaluation_rows",
    "held_out_indices",
    "own_test_split",
    "problem_hash",
    "split_rows",
    "training_rows",
]

HELD_OUT_SHARE = 0.1  # the share of a one-split dataset's rows evaluate scores, never trained on
HELD_OUT_MIN = 8  # at least this many held out (at most half the rows): small files too
HASH = "sha256 of each problem's text"  # how the rows are chosen, as the run record says it


def own_test_split(script, split: str | None = None) -> bool:
    """Whether the data has a test split of its own (`split`, default the recipe's
    `dataset_test_split`): a Hub dataset whose test split is not its training split. A local
    file has one split."""
    split = split or script.dataset_test_split
    return not is_local(script.dataset_name) and split != script.dataset_train_split


def problem_hash(value) -> float:
    """Where a problem falls in [0, 1): the first 8 bytes of the sha256 of its text (the prompt
    cell's text, or a chat's last user message), stable across Python runs and machines."""
    digest = hashlib.sha256(message_text(value).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def held_out_indices(problems: Sequence) -> list[int]:
    """The indices of the rows held out of `problems` (prompt cells), in order: those whose hash
    is below HELD_OUT_SHARE, raised to the HELD_OUT_MIN lowest hashes and cut to half the rows;
    rows with the same problem are held out together (none, when every row is one problem)."""
    hashes = [problem_hash(value) for value in problems]
    below = sum(h < HELD_OUT_SHARE for h in hashes)
    wanted = min(max(below, HELD_OUT_MIN), len(hashes) // 2)
    if wanted == 0:
        return []
    cutoff = sorted(hashes)[wanted - 1]
    held = [i for i, h in enumerate(hashes) if h <= cutoff]
    return held if len(held) < len(hashes) else []  # copies of one problem: none to hold out


@dataclass(frozen=True)
class Split:
    """The training rows and where evaluate's rows come from."""

    train: object  # a datasets.Dataset: the rows the training commands use
    held: object | None  # the held-out rows (None: the dataset's own test split, not loaded)
    held_rows: tuple[int, ...]  # their indices in the data (empty for a test split)
    total: int  # rows in the data the held-out rows were taken from
    source: str  # one line: where the held-out rows come from

    def record(self) -> dict:
        """What the run record keeps (`held_out`), which evaluate reads back."""
        if self.held is None:
            return {"by": "split", "from": self.source}
        return {"by": "hash", "hash": HASH, "from": self.source, "share": HELD_OUT_SHARE,
                "minimum": HELD_OUT_MIN, "rows": len(self.held_rows), "of": self.total}  # fmt: skip


def split_rows(script, task_args, task) -> Split:
    """The recipe's data, split into training rows and evaluate's held-out rows (see the
    module's docstring); every row checked as `data.load_training_rows` checks it."""
    if own_test_split(script):
        rows = data.load_training_rows(script, task_args, task)
        where = f"the test split {script.dataset_name}[{script.dataset_test_split}]"
        found = Split(rows, None, (), len(rows), where)
    else:
        found = _hash_split(script, task_args, task)
    if found.held is not None and len(found.held) == 0:
        logger.warning(
            "%s has %d row(s): none held out for evaluation (make evaluate will need "
            "--dataset_name FILE or --all-rows)", script.dataset_name, found.total,
        )  # fmt: skip
    logger.info("training on %d rows; evaluate's rows: %s", len(found.train), found.source)
    return found


def _hash_split(script, task_args, task) -> Split:
    """The training split (a local file: all of it) split by `held_out_indices`."""
    whole = data.load_training_rows(
        dataclasses.replace(script, max_train_samples=None), task_args, task
    )
    held = held_out_indices(whole[script.prompt_column])
    chosen = set(held)
    rest = [i for i in range(len(whole)) if i not in chosen]
    if script.max_train_samples is not None:
        rest = rest[: script.max_train_samples]
    where = (
        f"{_name(script, script.dataset_train_split)} (held out by a hash of each problem: "
        f"{len(held)} of its {len(whole)} rows, the lowest {HELD_OUT_SHARE:.0%} and at least "
        f"{HELD_OUT_MIN})"
    )
    return Split(whole.select(rest), whole.select(held), tuple(held), len(whole), where)


def _name(script, split: str) -> str:
    """The data as messages name it: the file, or the Hub dataset with its split."""
    name = script.dataset_name
    return name if is_local(name) else f"{name}[{split}]"


def training_rows(script, task_args, task):
    """The rows warm-up, train, filter and preflight use: the recipe's training data without
    evaluate's held-out rows, cut to `max_train_samples`."""
    return split_rows(script, task_args, task).train


def evaluation_rows(script, task_args, task, split: str | None = None, all_rows: bool = False):
    """(the rows evaluate scores, where they come from): the dataset's own test split (`split`,
    default the recipe's `dataset_test_split`) when it has one, else the held-out rows of the
    data; `all_rows`: every row of the data or split, training rows included."""
    whole = dataclasses.replace(script, max_train_samples=None)
    split = split or script.dataset_test_split
    if all_rows or own_test_split(script, split):
        rows = data.load_training_rows(whole, task_args, task, split)
        if all_rows:
            return rows, f"{_name(script, split)}, every row (--all-rows)"
        return rows, f"the test split {_name(script, split)}"
    found = _hash_split(dataclasses.replace(whole, dataset_train_split=split), task_args, task)
    if len(found.held) == 0:
        raise DataError(
            f"no row of {script.dataset_name} can be held out for evaluation (it has "
            f"{found.total} row(s): too few, or all one problem); add rows, pass held-out data "
            "with --dataset_name FILE, or score every row with --all-rows"
        )
    return found.held, found.source
