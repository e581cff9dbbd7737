"""YAML scalars as the rendered recipe files write them (PyYAML reads them back as written)."""

from __future__ import annotations

import json


def yaml_scalar(value: object) -> str:
    """A YAML 1.1 scalar (PyYAML) for a value: floats always carry a '.', strings are quoted."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        text = repr(value)
        if "e" in text and "." not in text.split("e")[0]:
            mantissa, exponent = text.split("e")
            text = f"{mantissa}.0e{exponent}"
        return text
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {yaml_scalar(v)}" for k, v in value.items()) + "}"
    raise TypeError(f"no YAML form for {type(value).__name__}")
