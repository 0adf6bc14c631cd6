"""`turnlake diff`: exit 0 with the changes, 1 when a group moved split, 2 for an unknown
release; on two tiny releases written by hand (no warehouse needed)."""

from pathlib import Path

import orjson
import polars as pl

from pipelines.cli.main import main
from pipelines.release.write import content_hash, write_release
from tests.unit.test_release_files import request, sft


def _release(exports: Path, rows: list[tuple[str, str, str]], day: str) -> str:
    req = request(
        sft(rows).with_columns(turn_id=pl.col("group_id") + "#1"), exports.parent / f"stage-{day}"
    )
    digest = content_hash(req)
    write_release(exports, f"{day}-{digest[:10]}", digest, req)
    return f"{day}-{digest[:10]}"


def test_diff_exits_1_when_a_group_moved_split_and_names_it(tmp_path, capsys):
    data = tmp_path / "data"
    exports = data / "exports"
    v1 = _release(exports, [("train", "g1", "a"), ("test", "g2", "b")], "20261101")
    v2 = _release(exports, [("train", "g1", "a"), ("train", "g2", "b")], "20261102")
    assert main(["diff", v1, v2, "--data-root", str(data)]) == 1
    out = capsys.readouterr()
    assert "Groups that moved split: 1 (must be 0)." in out.out and "`g2`: test → train" in out.out
    assert "1 groups moved split" in out.err


def test_diff_defaults_to_the_latest_two_and_exits_0_without_moves(tmp_path, capsys):
    data = tmp_path / "data"
    exports = data / "exports"
    v1 = _release(exports, [("train", "g1", "a")], "20261101")
    v2 = _release(exports, [("train", "g1", "a"), ("train", "g3", "c")], "20261102")
    assert main(["diff", "--data-root", str(data)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {v1} → {v2}") and "| `sft` | train | 1 | 2 | 1 | 0 | 0 |" in out
    card = (exports / v2 / "README.md").read_text(encoding="utf-8")
    assert f"Compared with `{v1}`" in card


def test_diff_of_an_unknown_release_exits_2(tmp_path, capsys):
    data = tmp_path / "data"
    _release(data / "exports", [("train", "g1", "a")], "20261101")
    assert main(["diff", "20260101-0000000000", "--data-root", str(data)]) == 2
    assert "no complete release '20260101-0000000000'" in capsys.readouterr().err


def test_a_release_of_another_engine_is_a_code_change_in_the_diff(tmp_path, capsys, monkeypatch):
    """Same rows, same package version and commit, another engine digest (an uncommitted edit
    or a dependency upgrade): the diff names it, as the manifests record it."""
    from pipelines.release import write

    data = tmp_path / "data"
    v1 = _release(data / "exports", [("train", "g1", "a")], "20261101")
    monkeypatch.setattr(write, "engine_digest", lambda: "another engine")
    v2 = _release(data / "exports", [("train", "g1", "a")], "20261102")
    assert main(["diff", v1, v2, "--data-root", str(data), "--json"]) == 0
    code = orjson.loads(capsys.readouterr().out)["code"]
    assert [c["field"] for c in code] == ["engine_digest"]
    assert code[0]["after"] == "another engine"
