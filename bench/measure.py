"""Run one command in a fresh subprocess and measure wall, CPU (user+sys of the process tree) and
peak RSS of the process tree (psutil polling every 50 ms, summing the RSS of the process and all
its descendants). The sum counts a page that a forked child shares with its parent once per
process, so the peak PSS of the tree (each shared page divided among its sharers) is measured too:
what the tree really holds in memory, which a worker pool forked from a large process does not
double. The PSS is sampled at most once a second: reading a process's page map takes its memory
map lock, and at every poll it slowed the 100 MB build measured by a third (a lower estimate of
the peak, as any sampling is)."""

from __future__ import annotations

import re
import resource
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psutil

from pipelines.transforms.timing import read_summary

POLL_SECONDS = 0.05
PSS_POLL_SECONDS = 1.0
STEP_LINE = re.compile(r'Finished execution of step "([^"]+)" in ([0-9hms.]+)\.?$')
# `turnlake build`'s own progress line off a terminal (pipelines/cli/progress.py), 0.1 s steps
PROGRESS_LINE = re.compile(r"^\[\d+/\d+\] (\S+)  (\d+\.\d) s")
DURATION_PART = re.compile(r"([0-9.]+)(ms|h|m|s)")
UNIT_MS = {"ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


@dataclass
class Measurement:
    name: str
    command: list[str]
    returncode: int | None
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    timed_out: bool = False
    steps_ms: dict[str, float] = field(default_factory=dict)
    extra: dict = field(default_factory=dict)
    # source → {seconds, rows} of its silver transform, from the silver step's closing line
    silver_by_source: dict[str, dict] = field(default_factory=dict)
    peak_pss_mb: float = 0.0  # the tree's peak PSS (the module docstring)

    def as_dict(self) -> dict:
        return asdict(self)


def _tree_memory(proc: psutil.Process, pss_above: int | None) -> tuple[int, int]:
    """(RSS, PSS) summed over the tree; the PSS only when the RSS exceeds `pss_above` (a tree's PSS
    never exceeds its RSS, so such a sample cannot raise the PSS peak), else (or when `pss_above`
    is None) 0."""
    try:
        members = [proc, *proc.children(recursive=True)]
    except psutil.NoSuchProcess:
        return 0, 0
    rss = sum(_memory(m, lambda p: p.memory_info().rss) for m in members)
    if pss_above is None or rss <= pss_above:
        return rss, 0
    return rss, sum(_memory(m, lambda p: p.memory_full_info().pss) for m in members)


def _memory(member: psutil.Process, read) -> int:
    try:
        return read(member)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0


def _kill_tree(proc: psutil.Process) -> None:
    try:
        members = [*proc.children(recursive=True), proc]
    except psutil.NoSuchProcess:
        return
    for member in members:
        try:
            member.kill()
        except psutil.NoSuchProcess:
            pass


def run_measured(
    name: str, command: list[str], *, env: dict, cwd: Path, log_path: Path, timeout_s: float
) -> Measurement:
    """Run `command`, stdout+stderr into `log_path`; per-step times parsed from Dagster DEBUG
    lines."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    peak = peak_pss = 0
    pss_read = -PSS_POLL_SECONDS
    peak_after = ""
    timeline: dict[int, float] = {}  # whole second since start → highest RSS (MB) seen in it
    timed_out = False
    with open(log_path, "wb") as log:
        proc = psutil.Popen(command, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
        while proc.poll() is None:
            due = time.perf_counter() - pss_read >= PSS_POLL_SECONDS
            rss, pss = _tree_memory(proc, peak_pss if due else None)
            pss_read = time.perf_counter() if pss else pss_read
            peak_pss = max(peak_pss, pss)
            second = int(time.perf_counter() - start)
            timeline[second] = max(timeline.get(second, 0.0), round(rss / 2**20, 1))
            if rss > peak:
                peak = rss
                peak_after = _last_step(log_path)
            if time.perf_counter() - start > timeout_s:
                timed_out = True
                _kill_tree(proc)
                proc.wait()
                break
            time.sleep(POLL_SECONDS)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Measurement(
        name,
        command,
        proc.returncode,
        round(wall, 3),
        round(cpu, 3),
        round(peak / 2**20, 1),
        timed_out,
        step_times(log_path),
        {"peak_rss_after_step": peak_after, "rss_mb_per_second": list(timeline.values())},
        silver_by_source(log_path),
        round(peak_pss / 2**20, 1),
    )


def _last_step(log_path: Path) -> str:
    """The step whose progress line came last (so the peak is in the step after it): where in a
    build its memory peaks."""
    with open(log_path, "rb") as log:
        log.seek(max(0, log_path.stat().st_size - 4096))
        tail = log.read().decode(errors="replace").splitlines()
    for line in reversed(tail):
        if progress := PROGRESS_LINE.match(line):
            return progress.group(1)
    return ""


def step_times(log_path: Path) -> dict[str, float]:
    """`[k/N] X  1.2 s` progress lines, or Dagster's `Finished execution of step "X" in Yms`
    lines (builds before the progress display) → {step: ms}."""
    steps: dict[str, float] = {}
    for line in log_path.read_text(errors="replace").splitlines():
        if progress := PROGRESS_LINE.match(line):
            steps[progress.group(1)] = round(float(progress.group(2)) * 1000, 1)
            continue
        match = STEP_LINE.search(line.rstrip())
        if match:  # Dagster writes 850ms, 1.5s, 2m50s, 1h2m3s
            value = sum(float(n) * UNIT_MS[u] for n, u in DURATION_PART.findall(match.group(2)))
            steps[match.group(1)] = round(value, 1)
    return steps


def silver_by_source(log_path: Path) -> dict[str, dict]:
    """{source: {seconds, rows}} of the silver step's progress line (`by source: …`); {} when the
    build did not rebuild silver or predates the figures."""
    for line in log_path.read_text(errors="replace").splitlines():
        if (progress := PROGRESS_LINE.match(line)) and progress.group(1) == "silver_tables":
            found = read_summary(line)
            return {s: {"seconds": sec, "rows": rows} for s, (sec, rows) in found.items()}
    return {}
