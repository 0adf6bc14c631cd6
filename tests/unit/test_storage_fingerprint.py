"""The fingerprint building blocks every cache key is made of."""

import pytest

from pipelines.storage.fingerprint import code_digest, fingerprint


def test_a_code_root_that_does_not_exist_raises_instead_of_digesting_nothing(tmp_path):
    (tmp_path / "rule.py").write_text("REWARD = 1\n")
    with pytest.raises(FileNotFoundError, match="does-not-exist"):
        code_digest(tmp_path, tmp_path / "does-not-exist")


def test_the_code_digest_changes_when_a_code_file_changes(tmp_path):
    (tmp_path / "pkg").mkdir()
    code = tmp_path / "pkg" / "rule.py"
    code.write_text("REWARD = 1\n")
    before = code_digest(tmp_path)
    assert code_digest(tmp_path) == before  # stable while nothing changes
    code.write_text("REWARD = -1\n")
    assert code_digest(tmp_path) != before


def test_parts_are_not_confused_when_their_boundaries_move():
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])
    assert fingerprint([b"a\n", "b"]) != fingerprint(["a", "\nb"])
