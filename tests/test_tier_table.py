"""The README's tier table is generated from the tuning module, not typed by hand."""

from conftest import ROOT

from grpo_template import tier_table


def test_readme_tier_table_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert tier_table.block() in readme, "run: python -m grpo_template.tier_table --write"


def test_table_covers_every_tier():
    text = tier_table.table()
    for name in ("cpu", "16GB", "24GB", "48GB", "80GB", "141GB", "multi-gpu", "multi-node"):
        assert f"| {name}" in text
