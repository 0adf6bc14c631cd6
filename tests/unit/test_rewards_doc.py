"""docs/rewards.md documents exactly the rules the code registers and rewards.toml enables."""

import re
from pathlib import Path

from pipelines.gold.params import load_params
from pipelines.gold.rules import RULES

DOC = Path(__file__).parents[2] / "docs" / "rewards.md"


def documented_rules() -> set[str]:
    table = DOC.read_text(encoding="utf-8").split("## Rules", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"^\| `([a-z_]+@\d+)` \|", table, re.MULTILINE))


def test_every_registered_rule_is_documented_and_nothing_else():
    assert documented_rules() == set(RULES)


def test_every_enabled_rule_exists_and_has_its_parameter_section_documented():
    params = load_params()
    doc = DOC.read_text(encoding="utf-8")
    for rule_id in params["rules"]["enabled"]:
        assert rule_id in RULES
        name = rule_id.split("@")[0]
        if name in params:
            for key in params[name]:
                assert re.search(rf"`[^`]*\b{re.escape(key)}\b[^`]*`", doc), (
                    f"{name}.{key} is not documented"
                )
