"""The engine's layers keep to their side: the pure packages never import dagster (read from the
source, function-local imports included, and by importing them all in a fresh interpreter), only the
CLI imports the CLI, and only `pipelines/definitions.py` imports the Dagster assets."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ENGINE = ROOT / "pipelines"
PURE_PACKAGES = (
    "sources",
    "transforms",
    "gold",
    "splits",
    "exports",
    "release",
    "privacy",
    "schemas",
    "storage",
    "ingest",
    "config",
)
# Known imports that break a rule, each with the reason it is tolerated for now; the test fails
# when one of them is gone, so the list cannot outlive the code it excuses.
TOLERATED = {
    ("pipelines/config/schema.py", "dagster._utils.schedules"): (
        "settings validate `[schedule] cron` with Dagster's own test of what a schedule accepts"
    ),
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, anywhere in it (function bodies too), relative ones resolved."""
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found += [base] + [f"{base}.{alias.name}" for alias in node.names]
    return found


def is_within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def violations(files: list[Path], forbidden) -> list[tuple[str, str]]:
    """(file, imported module) for every import that `forbidden(module)` rejects."""
    return sorted(
        {
            (path.relative_to(ROOT).as_posix(), module)
            for path in files
            for module in imported_modules(path)
            if forbidden(module)
        }
    )


def untolerated(found: list[tuple[str, str]]) -> list[tuple[str, str]]:
    return [
        (file, module)
        for file, module in found
        if not any(file == known and is_within(module, base) for known, base in TOLERATED)
    ]


def pure_files() -> list[Path]:
    return sorted(p for package in PURE_PACKAGES for p in (ENGINE / package).rglob("*.py"))


def imports_dagster(module: str) -> bool:
    return is_within(module, "dagster") or module.startswith("dagster_")


def test_pure_packages_never_import_dagster_in_their_source():
    assert untolerated(violations(pure_files(), imports_dagster)) == []


def test_every_tolerated_import_still_exists():
    engine_files = sorted(ENGINE.rglob("*.py"))
    found = set(violations(engine_files, lambda m: any(m == mod for _, mod in TOLERATED)))
    assert set(TOLERATED) <= found, "remove the entries that no longer apply from TOLERATED"


def test_importing_every_pure_module_leaves_dagster_unloaded():
    modules = sorted({module_name(p) for p in pure_files()})
    code = textwrap.dedent(
        """
        import importlib, sys
        for name in sys.argv[1:]:
            importlib.import_module(name)
            if "dagster" in sys.modules:
                sys.exit(f"importing {name} loads dagster")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *modules],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_only_the_cli_imports_the_cli():
    outside_cli = [p for p in ENGINE.rglob("*.py") if (ENGINE / "cli") not in p.parents]
    found = violations(outside_cli, lambda m: is_within(m, "pipelines.cli"))
    assert untolerated(found) == []


def test_only_the_definitions_module_imports_the_assets():
    others = [p for p in ENGINE.rglob("*.py") if p != ENGINE / "definitions.py"]
    assert untolerated(violations(others, lambda m: is_within(m, "assets"))) == []
