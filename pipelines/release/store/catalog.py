"""Listing the complete releases of an exports folder or a store."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from pipelines.storage.objects import ObjectRoot


def list_releases(exports: Path | ObjectRoot) -> pl.DataFrame:
    """Complete releases in an exports folder or a store, oldest first; `as_of` names the time
    whose tables an as-of release was built from (null for a release of current data)."""
    from pipelines.release.store.stores import store_latest, store_manifest, store_releases

    root = exports if isinstance(exports, ObjectRoot) else ObjectRoot.parse(exports)
    latest = store_latest(root)
    rows = []
    for version in store_releases(root):
        manifest = store_manifest(root, version)
        rows.append(
            {
                "version": version,
                "created_at": manifest["created_at"],
                "latest": version == latest,
                "as_of": manifest.get("as_of"),  # built from the tables of that time
                **{
                    name: sum(counts.values())
                    for name, counts in sorted(manifest["counts"].items())
                },
            }
        )
    return (
        pl.DataFrame(rows, schema_overrides={"as_of": pl.String})
        if rows
        else pl.DataFrame(schema={"version": pl.String})
    )
