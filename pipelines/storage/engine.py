"""The engine's digest: the one code part of every cache key, computed here and nowhere else.

A cached result is a function of its inputs, its settings and the code that made it. Naming that
code by a list of modules kept by hand goes stale the day someone moves a helper (it did: a
release key left out a module whose key frames its entries stored, and an upgrade published what a
from-scratch build would not). So every key contains `engine_digest()`: every file of the
`pipelines` and `assets` packages, the installed versions of every distribution turnlake depends
on (its requirement closure: the locked dependencies), and the Python version. Any code change or
upgrade recomputes every cached result, once.

One layer cannot afford that: parsing, the step that reads every raw byte. Its key uses
`code_closure_digest(roots)`: the digest of the modules the parsing code reaches through its
imports (read from the source, function-local imports included), so that the set follows the
code by construction, plus the same dependency versions.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from email.parser import HeaderParser
from functools import cache
from importlib import metadata
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from pipelines.storage.fingerprint import fingerprint

ENGINE_ROOT = Path(__file__).resolve().parents[2]
ENGINE_PACKAGES = ("pipelines", "assets")
DISTRIBUTION = "turnlake"


def engine_files(root: Path) -> list[Path]:
    """Every file of the engine's packages under `root` (Python, SQL, templates, JSON), bytecode
    aside."""
    files: list[Path] = []
    for package in ENGINE_PACKAGES:
        files += [
            path
            for path in (root / package).rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
        ]
    return sorted(files)


def tree_digest(root: Path) -> str:
    """sha256 over the engine's files under `root`, each by its path relative to `root` and its
    bytes."""
    return fingerprint([_file_part(path, root) for path in engine_files(root)])


@cache
def engine_digest() -> str:
    """The engine's code (`tree_digest` of the project), the dependency versions and the Python
    version; computed once per process."""
    return fingerprint(["engine", tree_digest(ENGINE_ROOT), dependency_versions(), sys.version])


def _file_part(path: Path, root: Path) -> bytes:
    return path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes()


# ---------------------------------------------------------------- dependencies


@cache
def dependency_versions() -> str:
    """`name==version` lines of every installed distribution in turnlake's requirement closure
    (its runtime dependencies, those of its own extras that are installed, and theirs, extras
    followed); every installed distribution when turnlake itself is not installed as one."""
    installed = _installed()
    own = installed.get(DISTRIBUTION)
    if own is None:
        names = set(installed)
    else:
        # an extra (`minari`) is code the engine runs when installed: its versions count too
        names = _closure(installed, DISTRIBUTION, frozenset(own.extras))
    lines = [f"{name}=={installed[name].version}" for name in sorted(names) if name in installed]
    return "\n".join(line for line in lines if not line.endswith("==None")) + "\n"


@dataclass(frozen=True)
class _Installed:
    version: str | None
    requires: tuple[str, ...]  # its requirement lines (markers and extras as written)
    extras: tuple[str, ...]  # the extras it provides


def _installed() -> dict[str, _Installed]:
    """Every installed distribution by its canonical name: the first one on `sys.path`, as
    `metadata.distribution(name)` finds it, the headers of its metadata parsed once. (Asked name
    by name, `metadata.requires` and `metadata.version` each parsed a distribution's whole
    metadata, long description included: 0.15 s of CPU, now 0.08 s, in every process that
    computes a digest, each step process of a multiprocess build among them.)"""
    found: dict[str, _Installed] = {}
    for dist in metadata.distributions():
        text = dist.read_text("METADATA") or dist.read_text("PKG-INFO") or ""
        # the headers end at the first empty line; the description after it is not read
        headers = HeaderParser().parsestr(text.partition("\n\n")[0])
        name = headers["Name"]
        if name is None or _canonical(name) in found:
            continue
        # as `Distribution.requires`: the dist-info's lines, else an egg-info's requires.txt
        requires = headers.get_all("Requires-Dist")
        if requires is None:
            requires = dist.requires or []
        extras = tuple(headers.get_all("Provides-Extra") or ())
        found[_canonical(name)] = _Installed(headers["Version"], tuple(requires), extras)
    return found


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _closure(
    installed: dict[str, _Installed], root: str, extras: frozenset[str] = frozenset()
) -> set[str]:
    seen: set[str] = set()
    todo: list[tuple[str, frozenset[str]]] = [(_canonical(root), extras)]
    while todo:
        name, extras = todo.pop()
        key = name if not extras else f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        if name not in installed:
            continue
        for line in installed[name].requires:
            required = _requirement(line, extras)
            if required is not None:
                todo.append(required)
    return {key.partition("[")[0] for key in seen}


@cache
def _requirement(line: str, extras: frozenset[str]) -> tuple[str, frozenset[str]] | None:
    """The distribution a requirement line names, if it applies here with `extras` asked for."""
    try:
        requirement = Requirement(line)
    except InvalidRequirement:
        return None
    marker = requirement.marker
    if marker is not None and not any(
        marker.evaluate({"extra": extra}) for extra in (*sorted(extras), "")
    ):
        return None
    return _canonical(requirement.name), frozenset(requirement.extras)


# ---------------------------------------------------------------- import closure


@cache
def module_path(module: str, root: Path) -> Path | None:
    """The source file of an engine module (`pipelines.x.y`) under `root`, or None when it is
    not one."""
    if module.split(".", 1)[0] not in ENGINE_PACKAGES:
        return None
    base = root.joinpath(*module.split("."))
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def imported_modules(path: Path, root: Path) -> list[str]:
    """Every module a file under `root` imports, anywhere in it (function bodies too), relative
    ones resolved; `from a import b` names both `a` and `a.b` (b may be a submodule)."""
    module = ".".join(path.relative_to(root).with_suffix("").parts)
    package = module.removesuffix(".__init__") if path.name == "__init__.py" else module
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    found: list[str] = []
    for node in _statements(ast.parse(path.read_bytes(), filename=str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            found += [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return found


def _statements(tree: ast.Module) -> Iterator[ast.AST]:
    """Every statement of a module, nested ones too (in functions, classes, branches, `except`
    handlers and `match` cases, which are yielded as well), and no expression: an import is a
    statement, so the expressions, most of a module's nodes, need not be visited (`ast.walk`
    visited them: a third of the CPU of the parser's key, ~0.04 s per process)."""
    todo: list[ast.AST] = [tree]
    while todo:
        node = todo.pop()
        yield node
        for field in ("body", "orelse", "finalbody", "handlers", "cases"):
            todo += getattr(node, field, None) or ()


def import_closure(modules: Iterable[str], root: Path) -> list[Path]:
    """The engine files under `root` that `modules` reach through imports (a package's
    `__init__` and every parent package's are reached too, as Python runs them), sorted."""
    todo = [name for module in modules for name in _with_parents(module)]
    seen: dict[str, Path] = {}
    while todo:
        name = todo.pop()
        path = module_path(name, root)
        if path is None or name in seen:
            continue
        seen[name] = path
        for imported in _imports_of(path, root):
            todo += _with_parents(imported)
    return sorted(set(seen.values()))


@cache
def _imports_of(path: Path, root: Path) -> tuple[str, ...]:
    # Parsed once per process: the parser's key asks for the closure of every source in turn, and
    # they share most files (a file does not change while the engine runs).
    return tuple(imported_modules(path, root))


def _with_parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]


def package_modules(package: str, root: Path = ENGINE_ROOT) -> list[str]:
    """Every module of an engine package (`pipelines.sources.study` → its files)."""
    path = module_path(package, root)
    if path is None:
        raise ModuleNotFoundError(f"{package} is not an engine module")
    if path.name != "__init__.py":
        return [package]
    folder = path.parent
    return [
        ".".join((package, *p.relative_to(folder).with_suffix("").parts)).removesuffix(".__init__")
        for p in sorted(folder.rglob("*.py"))
        if "__pycache__" not in p.parts
    ]


def closure_digest(modules: Iterable[str], root: Path) -> str:
    """sha256 over the engine files under `root` that `modules` reach through imports."""
    return fingerprint([_file_part(path, root) for path in import_closure(modules, root)])


@cache
def code_closure_digest(modules: tuple[str, ...]) -> str:
    """`closure_digest` of the project, the dependency versions and the Python version: the code
    part of a key that must not change with unrelated modules; computed once per process."""
    code = closure_digest(modules, ENGINE_ROOT)
    return fingerprint(["closure", code, dependency_versions(), sys.version])
