"""The engine's layers keep to their side: the pure packages never import dagster (read from the
source, function-local imports included, and by importing them all in a fresh interpreter), only the
CLI imports the CLI, only `pipelines/definitions.py` imports the Dagster assets, no two engine
modules import each other however indirectly, no module imports from a package above its own
in `LAYERS`, and inside release/ no stage imports a stage above its own in `RELEASE_STAGES`."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from collections.abc import Iterator
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
    "similarity",
)
# The engine's packages from the bottom up. A module imports only from its own package and the
# packages before it here, so each package can be read, tested and changed knowing only the ones
# below it. The order is the one the code needs, not the order data flows in: the split assignment
# (splits) runs after gold but is called while silver is published, so it sits under transforms;
# the privacy building blocks (opt-outs, subjects, redaction, pseudonyms, tombstones) are used from
# ingest up, so privacy sits under ingest, and what a forget does to releases is release's.
LAYERS = (
    "runtime",  # worker processes, crash points, allocators: nothing of turnlake
    "storage",  # files, objects, URIs, Delta tables, the layout of a data root, locks, digests
    "config",  # turnlake.toml → Settings, the parts of it other packages configure, shared names
    "similarity",  # normalized words, hashed n-grams, MinHash near-duplicates, evaluation sets
    "schemas",  # the contract: one Pandera model per table
    "sources",  # one adapter per raw format
    "demo",  # demo raw files, one writer per source
    "privacy",
    "ingest",  # raw → bronze
    "partitions",  # which partition an episode's rows are stored in
    "splits",
    "transforms",  # bronze → silver
    "gold",
    "exports",  # training datasets from silver + gold
    "decisions",  # decision time travel over those datasets' decision rows
    "release",
    "warehouse",  # DuckDB views over every layer, and garbage collection after them
    "reports",
    "checks",
    "orchestration",  # Dagster resources, executors, schedule, sensor; the last build's record
)
# The stages of a release, one subpackage of pipelines/release each, from the bottom up in the same
# sense: a stage's modules import only their own stage and the stages before it, never the modules
# of release/ itself (assemble.py runs the stages, write.py writes what they made).
RELEASE_STAGES = (
    "store",  # a release's files and manifest, the release stores, the per-partition work cache
    "plan",  # what a release is a function of, which release LATEST names, provenance
    "privatize",  # pseudonyms, redaction and its memo, per-partition kept rows and their ledger
    "build",  # datasets by partition and chunk, the release order, files a slice at a time
    "trainability",
    "card",  # the dataset card, column meanings, profiles, the diff from the last release
)
# What a user or Dagster starts from: they may import any layer (and each other); no layer may
# import them (the assets live outside `pipelines/` and are imported by definitions.py alone).
ENTRY_POINTS = ("definitions", "api", "cli")
# Known imports that break a rule, each with the reason it is tolerated for now; the test fails
# when one of them is gone, so the list cannot outlive the code it excuses.
TOLERATED: dict[tuple[str, str], str] = {}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_statements(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of every import statement of a file, anywhere in it (function bodies
    and `TYPE_CHECKING` blocks too), relative ones resolved: `import a.b` gives `a.b` and no
    names, `from a import b, c` gives `a` and [b, c]."""
    package = module_name(path)
    if path.name != "__init__.py":
        package = package.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}" if base else anchor
            yield node.lineno, base, [alias.name for alias in node.names]


def imported_modules(path: Path) -> list[str]:
    """Every module a file imports, anywhere in it (function bodies too), relative ones resolved
    (`from a import b` counts as `a` and as `a.b`: b may be a module)."""
    return [
        found
        for _, base, names in import_statements(path)
        for found in [base, *(f"{base}.{name}" for name in names)]
    ]


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


# ---------------------------------------------------------------- the module graph


def engine_modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(ENGINE.rglob("*.py"))}


def engine_module_of(name: str, modules: dict[str, Path]) -> str | None:
    """The engine module `name` is or is in (`pipelines.x.y.NAME` → `pipelines.x.y`), None outside
    the engine."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_graph(modules: dict[str, Path]) -> dict[str, dict[str, int]]:
    """Module → {engine module it imports: the line of the first such import}. `from a import b`
    imports the module `a.b` when there is one, else `a`. Importing `a.b` does not count as
    importing the package `a` as well (Python runs `a/__init__.py` first, but `a.b` uses nothing
    of it), as import linters count."""
    graph: dict[str, dict[str, int]] = {module: {} for module in modules}
    for module, path in modules.items():
        for line, base, names in import_statements(path):
            targets = [f"{base}.{n}" if f"{base}.{n}" in modules else base for n in names]
            for target in targets or [base]:
                found = engine_module_of(target, modules)
                if found is not None and found != module:
                    graph[module].setdefault(found, line)
    return graph


def circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Kosaraju: modules in order of
    finishing a depth-first walk, then each one's component walked backwards)."""
    finished: list[str] = []
    seen: set[str] = set()
    for start in sorted(graph):
        if start in seen:
            continue
        seen.add(start)
        stack = [(start, iter(sorted(graph[start])))]
        while stack:
            node, following = stack[-1]
            step = next((n for n in following if n not in seen), None)
            if step is None:
                stack.pop()
                finished.append(node)
            else:
                seen.add(step)
                stack.append((step, iter(sorted(graph[step]))))
    importers: dict[str, set[str]] = {node: set() for node in graph}
    for node, targets in graph.items():
        for target in targets:
            importers[target].add(node)
    placed: set[str] = set()
    found = []
    for start in reversed(finished):
        if start in placed:
            continue
        placed.add(start)
        component, todo = [], [start]
        while todo:
            node = todo.pop()
            component.append(node)
            for importer in importers[node] - placed:
                placed.add(importer)
                todo.append(importer)
        if len(component) > 1:
            found.append(sorted(component))
    return sorted(found)


def described(circle: list[str], graph: dict[str, dict[str, int]], modules: dict[str, Path]) -> str:
    ties = [
        f"  {modules[a].relative_to(ROOT)}:{graph[a][b]} imports {b}"
        for a in circle
        for b in sorted(graph[a])
        if b in circle
    ]
    return "\n".join([" <-> ".join(circle), *ties])


def rank(module: str) -> int:
    """A module's place in LAYERS; the entry points above every layer, the root package below."""
    parts = module.split(".")
    if len(parts) == 1:
        return -1  # `pipelines` itself: an empty package
    if parts[1] in ENTRY_POINTS:
        return len(LAYERS)
    return LAYERS.index(parts[1])


def upward_imports(graph: dict[str, dict[str, int]], modules: dict[str, Path]) -> list[str]:
    return [
        f"{modules[module].relative_to(ROOT)}:{line} imports {target}"
        for module, targets in sorted(graph.items())
        if rank(module) < len(LAYERS)
        for target, line in sorted(targets.items())
        if rank(target) > rank(module)
    ]


def test_circles_are_the_groups_of_modules_that_reach_each_other():
    graph = {
        "a": {"b": 1},
        "b": {"c": 1},
        "c": {"a": 1, "d": 1},  # a -> b -> c -> a
        "d": {"e": 1},
        "e": {"d": 1},  # d <-> e, reached from the first circle but not reaching back
        "f": {"a": 1},  # imports a circle, is in none
    }
    assert circles(graph) == [["a", "b", "c"], ["d", "e"]]
    assert circles({"a": {"b": 1}, "b": {}}) == []


def test_no_engine_modules_import_each_other_in_a_circle():
    modules = engine_modules()
    graph = module_graph(modules)
    found = [described(circle, graph, modules) for circle in circles(graph)]
    assert found == [], "import circles:\n" + "\n".join(found)


def test_every_engine_package_has_its_place_in_the_layers():
    packages = {path.relative_to(ENGINE).parts[0].removesuffix(".py") for path in ENGINE.glob("*")}
    packages -= {"__init__", "__pycache__"}
    assert sorted(packages - set(LAYERS) - set(ENTRY_POINTS)) == []


def test_no_module_imports_from_a_layer_above_its_own():
    modules = engine_modules()
    found = upward_imports(module_graph(modules), modules)
    assert found == [], "imports from a higher layer:\n" + "\n".join(found)


# ---------------------------------------------------------------- the stages of a release

RELEASE = "pipelines.release"


def release_stage(module: str) -> str | None:
    """The stage of a module of pipelines/release (`pipelines.release.build.units` → `build`); None
    for release/'s own modules and for modules outside the release."""
    parts = module.split(".")
    return parts[2] if len(parts) > 3 and is_within(module, RELEASE) else None


def stage_graph(graph: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """The module graph folded onto the release's stages: stage → {other stage it imports: 1}."""
    folded: dict[str, dict[str, int]] = {}
    for module, targets in graph.items():
        stage = release_stage(module)
        if stage is not None:
            folded.setdefault(stage, {})
            for target in targets:
                other = release_stage(target)
                if other is not None and other != stage:
                    folded[stage][other] = 1
                    folded.setdefault(other, {})
    return folded


def test_every_release_subpackage_is_a_stage():
    folders = {p.name for p in (ENGINE / "release").iterdir() if (p / "__init__.py").exists()}
    assert sorted(folders) == sorted(RELEASE_STAGES)


def test_folding_onto_stages_keeps_the_imports_between_stages_only():
    graph = {
        "pipelines.release.build.units": {"pipelines.release.build.chunking": 1},
        "pipelines.release.build.chunking": {"pipelines.release.store.part_cache": 1},
        "pipelines.release.store.part_cache": {"pipelines.storage.layout": 1},
        "pipelines.release.assemble": {"pipelines.release.build.units": 1},
        "pipelines.storage.layout": {},
    }
    assert stage_graph(graph) == {"build": {"store": 1}, "store": {}}


def test_the_release_stages_import_each_other_in_no_circle():
    modules = engine_modules()
    found = circles(stage_graph(module_graph(modules)))
    assert found == [], f"release stages in a circle: {found}"


def test_no_release_stage_imports_a_stage_above_its_own_or_release_itself():
    modules = engine_modules()
    found = [
        f"{modules[module].relative_to(ROOT)}:{line} imports {target}"
        for module, targets in sorted(module_graph(modules).items())
        if (stage := release_stage(module)) is not None
        for target, line in sorted(targets.items())
        if is_within(target, RELEASE)
        and (
            (other := release_stage(target)) is None
            or RELEASE_STAGES.index(other) > RELEASE_STAGES.index(stage)
        )
    ]
    assert found == [], "release stages importing upward:\n" + "\n".join(found)
