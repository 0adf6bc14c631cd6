"""SQL over the DuckDB views of the warehouse, and the saved research queries."""

from __future__ import annotations

import polars as pl

from pipelines.api.errors import NotBuilt, QueryFailed, UnknownQuery
from pipelines.api.roots import PathLike, resolve_settings
from pipelines.warehouse.queries import SavedQuery, saved_queries


def query(
    sql: str | None = None,
    *,
    saved: str | None = None,
    params: list | None = None,
    raw_root: PathLike | None = None,
    data_root: PathLike | None = None,
) -> pl.DataFrame:
    """Run `sql`, or the saved research query named `saved` (see `saved_queries()`), against the
    warehouse's DuckDB views (silver and gold tables, `bronze.<table>`, `release.<dataset>` for
    the latest release), read-only; `params` fill `?` placeholders.

    Raises `UnknownQuery` (no such saved query, or not exactly one of `sql` / `saved`),
    `NotBuilt` (no warehouse yet), `QueryFailed` (DuckDB refused the SQL).
    """
    import duckdb

    from pipelines.storage.layout import Layout
    from pipelines.warehouse.views import query as run_query

    if (sql is None) == (saved is None):
        raise UnknownQuery("give either a SQL query or --saved NAME (see --list)")
    if saved is not None:
        known = saved_queries()
        if saved not in known:
            raise UnknownQuery(f"no saved query {saved!r}; known: {', '.join(known)}")
        sql = known[saved].sql
    settings = resolve_settings(raw_root=raw_root, data_root=data_root)
    layout = Layout(settings.data_root)
    if not layout.duckdb.exists():
        raise NotBuilt(f"no warehouse at {layout.duckdb}: run `turnlake build` first")
    try:
        return run_query(layout, sql, params)
    except duckdb.Error as err:
        raise QueryFailed(f"SQL error: {err}") from err


__all__ = ["SavedQuery", "query", "saved_queries"]
