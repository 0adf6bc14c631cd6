"""What a build report reuses from the one before: each plot's SVG, and the whole page.

Drawing a plot (vl-convert starting its JavaScript engine, then Vega laying it out) is most of
what a report costs, and a rebuild that changed nothing draws the same plots again. So an SVG is
kept under `<data root>/.turnlake/report/` keyed by the digest of its Vega-Lite spec (data
included) and the engine digest (storage/engine.py: vl-convert's version among the dependencies),
and drawn only when that key is new. The page itself is
kept too, keyed by the digest of everything it shows; only the subtitle (run id and time) is
filled in per run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from markupsafe import escape

from pipelines.storage.engine import engine_digest
from pipelines.storage.files import write_bytes_atomic
from pipelines.storage.fingerprint import fingerprint, json_part

if TYPE_CHECKING:
    import altair as alt

    from pipelines.reports.section import Section
    from pipelines.storage.layout import Layout

PAGE = "page.html"
PAGE_DIGEST = "page.digest"
# Stands for the subtitle in the kept page; the run's own subtitle replaces it.
SUBTITLE_MARK = "@@turnlake-report-subtitle@@"


def cache_dir(layout: Layout) -> Path:
    """`.turnlake/report/`: the kept SVGs and page (state, never released)."""
    return layout.report_cache


def draw_svg(spec: dict) -> str:
    """The renderer: a Vega-Lite spec drawn as one `<svg>` element."""
    import vl_convert

    return vl_convert.vegalite_to_svg(spec)


def svg_key(spec: dict) -> str:
    """Digest of a spec (its data inline) and of the engine (the renderer's version with it)."""
    return fingerprint([json_part(spec), engine_digest()])


class SvgCache:
    """Charts drawn as SVG, each drawn once per spec; `prune()` keeps only the ones used since."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.used: set[str] = set()

    def __call__(self, chart: alt.TopLevelMixin) -> str:
        # Unvalidated: the same dict, without loading Vega-Lite's JSON schema (~0.4 s a process);
        # the charts are ours, and vl-convert rejects a bad spec when it draws one.
        spec = chart.to_dict(validate=False)
        key = svg_key(spec)
        self.used.add(key)
        path = self.directory / f"{key}.svg"
        if path.exists():
            return path.read_text(encoding="utf-8")
        svg = draw_svg(spec)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, svg.encode("utf-8"))
        return svg

    def prune(self) -> None:
        """Delete the SVGs this report did not use (plots of earlier data)."""
        for path in self.directory.glob("*.svg"):
            if path.stem not in self.used:
                path.unlink(missing_ok=True)


def page_digest(sections: list[Section], title: str) -> str:
    """Digest of everything a page shows but its subtitle, and of the engine (its templates with
    it: a changed template must not reuse the old page)."""
    parts: list[str | bytes] = [engine_digest(), title]
    for section in sections:
        parts += [section.key, section.title, section.note or "", section.svg or ""]
        for caption, frame in section.tables:
            parts += [caption, json_part(frame.schema), frame.write_csv()]
    return fingerprint(parts)


def reuse_or_render(
    directory: Path,
    sections: list[Section],
    title: str,
    subtitle: str,
    render: Callable[[list[Section], str, str], str],
) -> str:
    """The page: the kept one when its digest is unchanged, else `render`ed and kept."""
    digest = page_digest(sections, title)
    page, digest_file = directory / PAGE, directory / PAGE_DIGEST
    kept = digest_file.read_text().strip() if digest_file.exists() else None
    if kept == digest and page.exists():
        template = page.read_text(encoding="utf-8")
    else:
        template = render(sections, title, SUBTITLE_MARK)
        directory.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(page, template.encode("utf-8"))
        write_bytes_atomic(digest_file, digest.encode())
    return template.replace(SUBTITLE_MARK, str(escape(subtitle)))
