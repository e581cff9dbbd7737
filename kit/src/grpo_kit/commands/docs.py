"""`grpo docs [TOPIC]`: the kit's manual, as installed with this version of the kit (the one a
project pins), readable offline. Without a topic it lists the topics and the folder that holds
them; with one it prints that topic's Markdown. It needs no project and imports no ML library."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from ..errors import UserError

__all__ = ["DOCS", "main", "topics"]

DOCS = Path(__file__).resolve().parent.parent / "docs"


def topics() -> dict[str, str]:
    """Each topic (a file's name without `.md`) and its title (the file's first heading)."""
    found = {}
    for path in sorted(DOCS.glob("*.md")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        found[path.stem] = first.lstrip("# ").strip()
    return found


def main(argv: Sequence[str] | None = None) -> int:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="grpo docs",
        description=f"The manual of the installed grpo-kit ({__version__}): list its topics, or "
        "print one.",
    )
    parser.add_argument("topic", nargs="?", help="a topic to print (without one: the list)")
    parser.add_argument("--path", action="store_true", help="print the topic's file path only")
    args = parser.parse_args(argv)
    known = topics()
    if args.topic is None:
        print(f"grpo-kit {__version__} manual: {DOCS}")
        width = max(map(len, known))
        for name, title in known.items():
            print(f"  {name:<{width}}  {title}")
        print("grpo docs TOPIC prints one.")
        return 0
    try:
        path = _topic(args.topic, known)
    except UserError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    print(path if args.path else path.read_text(encoding="utf-8"), end="\n" if args.path else "")
    return 0


def _topic(name: str, known: dict[str, str]) -> Path:
    topic = name.removesuffix(".md")
    if topic not in known:
        raise UserError(f"no topic '{name}' in the manual: choose one of {', '.join(known)}")
    return DOCS / f"{topic}.md"
