"""`--dist loadfile` with files that must share a worker, and without pytest-xdist 3.8's hangs
after a worker crash.

pytest-xdist 3.8's `LoadScopeScheduling` can leave a run waiting forever once a worker dies (a
native crash in a test): it puts the dead worker's *finished* files back on the queue as empty
units, which never complete and so never hand out the next file (pytest-xdist #1378); it gives the
replacement worker one file, and a worker holding a single test waits for a next one that is
never sent (#1327); and it runs the test that crashed again on the replacement (#1371), which
crashes that one too. A hang is a CI run that times out after 90 minutes instead of a failed test.
"""

from __future__ import annotations

from xdist.scheduler import LoadFileScheduling

# A worker runs one test behind the one it holds (it needs the next to know what to tear down), so
# it waits until it holds two or is told to shut down.
HELD_TO_RUN = 2


class FileScheduling(LoadFileScheduling):
    """Whole files per worker; `same_worker` maps a file to the file whose worker also runs it."""

    def __init__(self, config, log=None, same_worker: dict[str, str] | None = None) -> None:
        super().__init__(config, log)
        self.same_worker = same_worker or {}

    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        return self.same_worker.get(path, path)

    def remove_node(self, node) -> str | None:
        workload = self.assigned_work.pop(node)
        crashed = next(
            (nodeid for unit in workload.values() for nodeid, done in unit.items() if not done),
            None,
        )
        if crashed is None:
            return None
        for scope, unit in workload.items():
            if crashed in unit:
                unit[crashed] = True  # reported as failed by the caller; not run again
            if not all(unit.values()):
                self.workqueue[scope] = unit
        for other in self.assigned_work:
            self._reschedule(other)
        return crashed

    def _reschedule(self, node) -> None:
        if node.shutting_down:
            return
        if self.workqueue and self._pending_of(self.assigned_work[node]) <= HELD_TO_RUN:
            self._assign_work_unit(node)
        while self.workqueue and self._pending_of(self.assigned_work[node]) < HELD_TO_RUN:
            self._assign_work_unit(node)
        if not self.workqueue:
            node.shutdown()  # the worker runs what it holds, then stops
