"""Which release LATEST names: the newest release of current data, never an as-of one.

A release built with `--as-of T` from table versions other than those in force now is of past
data: its manifest records `as_of`, writing it leaves LATEST where it was, and `releases` lists it
as such. An as-of time after the last build names the current versions, so it is a current release.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.release.files import is_as_of, latest_release, point_latest, read_manifest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.uri import is_remote


def in_the_past(layout: Layout, as_of: datetime | None) -> bool:
    """Whether `as_of` names other table versions than those in force now."""
    return as_of is not None and stored.versions(layout, as_of) != stored.versions(layout)


def reuse(layout: Layout, version: str, as_of: datetime | None) -> str:
    """`version`, an existing release a new one is identical to. A release of current data that
    equals an earlier as-of release reuses it, and LATEST then names it (the newest release of
    current data); a store on S3 moves LATEST only when publishing."""
    exports = layout.exports
    if is_remote(exports) or in_the_past(layout, as_of) or latest_release(exports) == version:
        return version
    if is_as_of(read_manifest(exports / version)):
        point_latest(exports, version)
    return version
