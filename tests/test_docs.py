"""The README stays short and names every module of the engine, and no relative link in the README
or under docs/ points at a file or heading that is not there.

The README's layout is the fenced block under "## Layout": a line whose name starts before the
description column is an entry (a folder `name/` or a file `name.py`, nested by two spaces a
level), a line indented to the description column continues the entry above. A folder's modules are
named as `stem.py` in its own entry, so a module added, moved or removed without the README
following fails here.
"""

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PACKAGES = ("pipelines", "assets")
MAX_README_LINES = 300
# Where the layout's descriptions start: anything indented less is an entry's name.
DESCRIPTION_COLUMN = 24

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
CODE_BLOCK = re.compile(r"^```.*?^```", re.MULTILINE | re.DOTALL)


def layout_block(readme: str) -> str:
    section = readme.split("\n## Layout\n", 1)[1].split("\n## ", 1)[0]
    return section.split("```", 2)[1]


def layout_entries(block: str) -> dict[str, str]:
    """{path of a folder under the project root: the text of its entry and of its file entries}."""
    entries: dict[str, str] = {}
    stack: list[str] = []
    current = None
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        if indent >= DESCRIPTION_COLUMN:
            entries[current] += " " + line.strip()
            continue
        assert indent % 2 == 0, f"layout line not indented by two spaces a level: {line!r}"
        name, _, text = line.strip().partition(" ")
        depth = indent // 2
        del stack[depth:]
        if name.endswith("/"):
            stack.append(name.rstrip("/"))
            current = "/".join(stack)
            entries[current] = text
        else:  # a file of the folder above: its line is part of that folder's entry
            current = "/".join(stack)
            entries[current] += f" {name} {text}"
    return entries


def package_folders() -> dict[str, list[str]]:
    """{folder under pipelines/ or assets/: the module files it holds}."""
    folders = {}
    for package in PACKAGES:
        for folder in sorted([ROOT / package, *(ROOT / package).rglob("*")]):
            if not folder.is_dir() or "__pycache__" in folder.parts:
                continue
            modules = sorted(p.name for p in folder.glob("*.py"))
            folders[folder.relative_to(ROOT).as_posix()] = modules
    return folders


def named_modules(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w/.])(\w+\.py)\b", text))


def test_readme_is_at_most_300_lines():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines"


def test_readme_layout_names_every_folder_and_module_of_the_engine():
    entries = layout_entries(layout_block(README.read_text(encoding="utf-8")))
    folders = package_folders()
    assert "pipelines/release" in folders  # the walk found the engine
    missing_folders = sorted(set(folders) - set(entries))
    assert not missing_folders, f"README layout does not name these folders: {missing_folders}"
    missing = {
        folder: sorted(set(modules) - {"__init__.py"} - named_modules(entries[folder]))
        for folder, modules in folders.items()
    }
    missing = {folder: names for folder, names in missing.items() if names}
    assert not missing, f"README layout does not name these modules: {missing}"


def test_readme_layout_names_no_module_or_folder_that_is_gone():
    entries = layout_entries(layout_block(README.read_text(encoding="utf-8")))
    folders = package_folders()
    engine_entries = {p: t for p, t in entries.items() if p.split("/")[0] in PACKAGES}
    assert not sorted(set(engine_entries) - set(folders)), "README layout names missing folders"
    gone = {
        folder: sorted(named_modules(text) - set(folders[folder]))
        for folder, text in engine_entries.items()
    }
    gone = {folder: names for folder, names in gone.items() if names}
    assert not gone, f"README layout names modules that do not exist: {gone}"


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def relative_links(path: Path) -> list[str]:
    text = CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # code spans are not links
    return [
        target
        for target in LINK.findall(text)
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target)  # no URL with a scheme
    ]


def heading_anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, slugged as GitHub and MkDocs both do for the
    headings used here: lower case, punctuation but `-` and `_` dropped, spaces to `-`."""
    text = CODE_BLOCK.sub("", path.read_text(encoding="utf-8"))
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-") for h in headings}


def test_every_relative_link_in_the_readme_and_docs_resolves_to_a_file_and_heading():
    broken = []
    count = 0
    for path in markdown_files():
        for target in relative_links(path):
            count += 1
            file, _, anchor = target.partition("#")
            linked = path.parent / file if file else path
            if not linked.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in heading_anchors(linked):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert count > 50  # the links were found at all
    assert not broken, f"broken links: {broken}"
