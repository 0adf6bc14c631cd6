"""Which release LATEST names: the release of the data and settings in force.

A release built with `--as-of T` from table versions other than those in force now is of past
data: its manifest records `as_of`, writing it leaves LATEST where it was, and `releases` lists it
as such. A build whose release equals an existing one (of current data) points LATEST at that
one. An as-of time after the last build names the current versions, so it is a current release.
"""

from __future__ import annotations

from datetime import datetime

from pipelines.release.store.files import latest_release, point_latest
from pipelines.storage import tables as stored
from pipelines.storage.layout import Layout
from pipelines.storage.uri import is_remote


def in_the_past(layout: Layout, as_of: datetime | None) -> bool:
    """Whether `as_of` names other table versions than those in force now."""
    return as_of is not None and stored.versions(layout, as_of) != stored.versions(layout)


def reuse(layout: Layout, version: str, as_of: datetime | None) -> str:
    """`version`, an existing release a new one of current data is identical to: LATEST then
    names it, even when a later release exists (made from other data or settings, e.g. before a
    setting was changed back), so LATEST always names the release of the data and settings in
    force. A release of past tables (`as_of`) leaves LATEST where it is."""
    if in_the_past(layout, as_of):
        return version
    exports = layout.exports
    if is_remote(exports):
        from pipelines.release.store.stores import repoint_latest
        from pipelines.storage.objects import ObjectRoot

        repoint_latest(ObjectRoot.parse(str(exports)), version)
    elif latest_release(exports) != version:
        point_latest(exports, version)
    return version
