"""The fingerprint building blocks every cache key is made of, and the engine digest (the one code
part of every key: storage/engine.py)."""

from pathlib import Path

import pytest

from pipelines.ingest.incremental import parser_version
from pipelines.storage.engine import (
    ENGINE_ROOT,
    closure_digest,
    dependency_versions,
    import_closure,
    imported_modules,
    package_modules,
    tree_digest,
)
from pipelines.storage.fingerprint import fingerprint


def test_parts_are_not_confused_when_their_boundaries_move():
    assert fingerprint(["ab", "c"]) != fingerprint(["a", "bc"])
    assert fingerprint([b"a\n", "b"]) != fingerprint(["a", "\nb"])


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


ENGINE = {
    "pipelines/__init__.py": "",
    "pipelines/gold/__init__.py": "",
    "pipelines/gold/rule.py": "REWARD = 1\n",
    "pipelines/warehouse/queries/q.sql": "SELECT 1\n",
    "assets/__init__.py": "",
    "assets/gold.py": "X = 1\n",
}


@pytest.mark.parametrize(
    "edited", ["pipelines/gold/rule.py", "pipelines/warehouse/queries/q.sql", "assets/gold.py"]
)
def test_the_engine_digest_changes_with_any_file_of_the_engine(tmp_path, edited):
    _write(tmp_path, ENGINE)
    before = tree_digest(tmp_path)
    assert tree_digest(tmp_path) == before  # stable while nothing changes
    (tmp_path / edited).write_text((tmp_path / edited).read_text() + "# changed\n")
    assert tree_digest(tmp_path) != before


def test_the_engine_digest_ignores_bytecode_and_files_outside_the_engine(tmp_path):
    _write(tmp_path, ENGINE)
    before = tree_digest(tmp_path)
    _write(tmp_path, {"pipelines/gold/__pycache__/rule.cpython-311.pyc": "x", "tests/t.py": "x"})
    assert tree_digest(tmp_path) == before


def test_a_file_moved_to_another_module_changes_the_engine_digest(tmp_path):
    """Same bytes under another path are other code (an import resolves by path)."""
    _write(tmp_path, ENGINE)
    before = tree_digest(tmp_path)
    (tmp_path / "pipelines/gold/rule.py").rename(tmp_path / "pipelines/gold/rules.py")
    assert tree_digest(tmp_path) != before


CLOSURE = {
    "pipelines/__init__.py": "",
    "pipelines/sources/__init__.py": "",
    "pipelines/sources/study.py": "from pipelines.sources import values\n",
    "pipelines/sources/values.py": (
        "def typed():\n    from ..storage.layout import Layout  # a function-local import\n"
    ),
    "pipelines/storage/__init__.py": "",
    "pipelines/storage/layout.py": "import polars\nimport pipelines.storage.uri\n",
    "pipelines/storage/uri.py": "",
    "pipelines/gold/__init__.py": "",
    "pipelines/gold/rule.py": "from pipelines.sources import values\n",
}


def test_the_import_closure_follows_every_import_and_no_more(tmp_path):
    _write(tmp_path, CLOSURE)
    reached = import_closure(["pipelines.sources.study"], tmp_path)
    expected = [
        "pipelines/__init__.py",
        "pipelines/sources/__init__.py",
        "pipelines/sources/study.py",
        "pipelines/sources/values.py",
        "pipelines/storage/__init__.py",
        "pipelines/storage/layout.py",
        "pipelines/storage/uri.py",
    ]
    assert [p.relative_to(tmp_path).as_posix() for p in reached] == expected


# An import in every kind of block a statement can sit in; the names it imports, by hand.
NESTED_IMPORTS = """\
import a
class C:
    def m(self):
        if x:
            pass
        elif y:
            import b
        else:
            from c import d
try:
    import e
except ImportError:
    import f
else:
    import g
finally:
    import h
for i in []:
    pass
else:
    import j
while False:
    import k
with open("x") as handle:
    import m
async def n():
    async with z:
        import o
match value:
    case 1:
        import p
    case _:
        from . import q
"""


def test_an_import_in_any_block_of_a_module_is_found(tmp_path):
    _write(tmp_path, {"pipelines/__init__.py": "", "pipelines/nested.py": NESTED_IMPORTS})
    found = imported_modules(tmp_path / "pipelines/nested.py", tmp_path)
    expected = ["a", "b", "c", "c.d", "e", "f", "g", "h", "j", "k", "m", "o", "p"]
    assert sorted(found) == sorted([*expected, "pipelines", "pipelines.q"])


def test_the_closure_digest_changes_with_a_reached_module_only(tmp_path):
    _write(tmp_path, CLOSURE)
    before = closure_digest(["pipelines.sources.study"], tmp_path)
    (tmp_path / "pipelines/gold/rule.py").write_text("X = 2\n")  # not reached
    assert closure_digest(["pipelines.sources.study"], tmp_path) == before
    (tmp_path / "pipelines/storage/uri.py").write_text("X = 2\n")  # reached through two imports
    assert closure_digest(["pipelines.sources.study"], tmp_path) != before


def test_package_modules_lists_every_module_of_a_package(tmp_path):
    _write(
        tmp_path,
        {**CLOSURE, "pipelines/sources/deep/__init__.py": "", "pipelines/sources/deep/x.py": ""},
    )
    assert package_modules("pipelines.sources", tmp_path) == [
        "pipelines.sources",
        "pipelines.sources.deep",
        "pipelines.sources.deep.x",
        "pipelines.sources.study",
        "pipelines.sources.values",
    ]


def test_the_parser_version_covers_what_parsing_imports_not_the_release():
    """The study parser's code: its adapter, the ingest package, the shared readers they import;
    a release module is not parsing code (a change there must not re-parse every raw byte)."""
    modules = (
        *package_modules("pipelines.sources.study"),
        *package_modules("pipelines.ingest"),
        "pipelines.schemas.bronze.study",
    )
    reached = {p.relative_to(ENGINE_ROOT).as_posix() for p in import_closure(modules, ENGINE_ROOT)}
    for needed in (
        "pipelines/sources/jsonio.py",
        "pipelines/sources/values.py",
        "pipelines/sources/base.py",
        "pipelines/ingest/untypable.py",
        "pipelines/schemas/bronze/study.py",
        "pipelines/schemas/bronze_dtypes.py",
        "pipelines/sources/study/records.py",
    ):
        assert needed in reached
    # another source's bronze dtypes: a change there re-parses that source, not this one
    assert "pipelines/schemas/bronze/dialogue.py" not in reached
    assert "pipelines/release/build/datasets.py" not in reached
    assert "pipelines/gold/outcomes.py" not in reached
    assert parser_version("study") != parser_version("dialogue")


def test_the_dependency_versions_name_the_locked_libraries():
    lines = dependency_versions().splitlines()
    names = {line.partition("==")[0] for line in lines}
    assert {"polars", "pyarrow", "orjson", "pandera", "dagster", "duckdb", "deltalake"} <= names
    assert "pytest" not in names  # a dev tool shapes no result


def test_the_dependency_versions_are_the_installed_versions():
    import dagster
    import duckdb
    import polars
    import pyarrow

    lines = dependency_versions().splitlines()
    libraries = {"dagster": dagster, "duckdb": duckdb, "polars": polars, "pyarrow": pyarrow}
    for name, module in libraries.items():
        assert f"{name}=={module.__version__}" in lines
