"""Keyed pseudonyms: stable, key-dependent, ids replaced inside session ids and JSON text."""

from __future__ import annotations

import hashlib
import hmac

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.privacy.pseudonyms import (
    KEY_ENV,
    IdReplacer,
    Pseudonymizer,
    PseudonymKeyError,
    key_from_env_or_file,
)

KEY = b"k" * 32
PID = "5ed9dc4f-6630-4cc5-8619-10584891a2ab"


def test_pseudonym_is_kind_prefixed_hmac() -> None:
    p = Pseudonymizer(KEY)
    expected = hmac.new(KEY, f"participant\x00{PID}".encode(), hashlib.sha256).hexdigest()[:16]
    assert p.pseudonym("participant", PID) == f"participant_{expected}"


def test_pseudonyms_are_stable_and_key_and_kind_dependent() -> None:
    a, b = Pseudonymizer(KEY), Pseudonymizer(KEY)
    assert a.pseudonym("actor", "user-ana") == b.pseudonym("actor", "user-ana")
    assert a.pseudonym("actor", "user-ana") != Pseudonymizer(b"x" * 32).pseudonym(
        "actor", "user-ana"
    )
    assert a.pseudonym("actor", "user-ana") != a.pseudonym("participant", "user-ana")
    assert a.pseudonym("actor", "user-ana") != a.pseudonym("actor", "user-ann")
    assert "k" * 16 not in repr(a)


def test_id_inside_session_id_and_json_is_replaced() -> None:
    p = Pseudonymizer(KEY)
    mapping = p.mapping("participant", [PID])
    alias = mapping[PID]
    session = f"{PID}_niki_1767943131"
    replacer = IdReplacer(mapping)
    assert replacer.replace(session) == f"{alias}_niki_1767943131"
    doc = orjson.dumps(
        {"participant_id": PID, "session": f"study:{session}#3", "note": f"see {PID}."}
    ).decode()
    out = replacer.replace(doc)
    assert PID not in out and orjson.loads(out)["participant_id"] == alias
    assert orjson.loads(out)["session"] == f"study:{alias}_niki_1767943131#3"


def test_longest_id_first_and_no_partial_ids() -> None:
    r = IdReplacer({"u-7": "A", "u-71": "B", "user-ana": "C"})
    assert r.replace("u-71 u-7 u-712 user-anastasia user-ana/x") == "B A u-712 user-anastasia C/x"
    assert r.replace_counted("u-7,u-7") == ("A,A", 2)
    assert IdReplacer({}).replace("u-7") == "u-7"


def test_key_from_env_first_then_file(tmp_path) -> None:
    key_file = tmp_path / "key"
    key_file.write_bytes(b"file-key-0123456789abcdef\n")
    assert key_from_env_or_file(str(key_file), environ={}) == b"file-key-0123456789abcdef"
    assert (
        key_from_env_or_file(str(key_file), environ={KEY_ENV: "env-key-0123456789abcdef"})
        == b"env-key-0123456789abcdef"
    )
    assert (
        key_from_env_or_file("key", environ={}, base_dir=tmp_path) == b"file-key-0123456789abcdef"
    )


@pytest.mark.parametrize(
    ("key_file", "environ", "message"),
    [
        (None, {}, "no pseudonym key"),
        ("/nonexistent/key", {}, "cannot read pseudonym key file"),
        (None, {KEY_ENV: "short"}, "at least 16"),
    ],
)
def test_key_errors_are_clear(key_file, environ, message) -> None:
    with pytest.raises(PseudonymKeyError, match=message):
        key_from_env_or_file(key_file, environ=environ)


def _alternation_replace(mapping: dict[str, str], text: str) -> tuple[str, int]:
    """The former implementation: one alternation of every id, longest first."""
    import re

    ids = sorted(mapping, key=lambda k: (-len(k), k))
    pattern = re.compile(
        rf"(?<![A-Za-z0-9])(?:{'|'.join(re.escape(i) for i in ids)})(?![A-Za-z0-9])"
    )
    return pattern.subn(lambda m: mapping[m.group(0)], text)


_ID_CHARS = st.sampled_from(list("ab17-_.:"))


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.text(_ID_CHARS, min_size=1, max_size=6), min_size=1, max_size=12),
    st.lists(
        st.one_of(
            st.text(st.sampled_from(list("ab17-_ x/#")), max_size=4), st.text(_ID_CHARS, max_size=6)
        ),
        max_size=12,
    ),
)
def test_trie_pattern_replaces_exactly_like_the_longest_first_alternation(ids, pieces) -> None:
    mapping = {i: f"<{n}>" for n, i in enumerate(sorted(ids))}
    text = "".join(pieces) + "".join(sorted(ids))
    assert IdReplacer(mapping).replace_counted(text) == _alternation_replace(mapping, text)


def test_many_texts_replaced_at_once_like_one_by_one() -> None:
    r = IdReplacer({"u-7": "A", "u-71": "B", "é-1": "C"})
    texts = ["u-71 u-7 u-712 xu-7 é-1/u-7é", "nothing", "", None, "u-7u-7 u-7,u-7"]
    # `é` is two bytes in UTF-8 and not a letter of [A-Za-z0-9]: a boundary, and offsets shift
    assert r.replace_many_counted(texts) == [
        ("B A u-712 xu-7 C/Aé", 4),
        ("nothing", 0),
        ("", 0),
        (None, 0),
        ("u-7u-7 A,A", 2),
    ]
    assert r.replace_many(["u-7"]) == ["A"] and IdReplacer({}).replace_many(["u-7"]) == ["u-7"]


@settings(max_examples=300, deadline=None)
@given(
    st.sets(st.text(st.sampled_from(list("ab17-_.:é")), min_size=1, max_size=6), max_size=12),
    st.lists(st.text(st.sampled_from(list("ab17-_ x/#éß")), max_size=20), max_size=6),
)
def test_many_texts_replaced_exactly_like_the_longest_first_alternation(ids, texts) -> None:
    mapping = {i: f"<{n}>" for n, i in enumerate(sorted(ids))}
    texts = [*texts, "".join(sorted(ids))]
    expected = [_alternation_replace(mapping, t) if mapping else (t, 0) for t in texts]
    assert IdReplacer(mapping).replace_many_counted(texts) == expected


def test_id_replacement_cost_does_not_grow_with_the_number_of_ids() -> None:
    import time
    import uuid

    text = " ".join(str(uuid.UUID(int=i)) + "_x_1767943131" for i in range(2000))

    def seconds(n_ids: int) -> float:
        replacer = IdReplacer({str(uuid.UUID(int=10**6 + i)): "P" for i in range(n_ids)})
        replacer.replace("x")  # the pattern is compiled on first use: not what is timed here
        start = time.perf_counter()
        replacer.replace(text)
        return time.perf_counter() - start

    assert seconds(5000) < 5 * seconds(50) + 0.05
