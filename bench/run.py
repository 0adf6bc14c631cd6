"""turnlake benchmark (issue 7): full build, no-change rebuild, +1 % new files, release, against a
lower bound (orjson → Parquet) and a pandas peer (study sessions), at several corpus sizes.

    bench/run [--sizes 10MB,100MB,1GB] [--work /tmp/turnlake-bench] [--timeout 900]
              [--workers 2,4] [--quick] [--shapes long_jsonl,big_contexts,tiny_files]

`--shapes`: corpora of other shapes of about each size (bench/shapes.py: a few long JSONL files,
large decision contexts in big SQLite files, ~100 k tiny files), measured like the demo's mix
(no peer: they hold no study sessions); their 1 % is what a night does to that shape (long files
grow, the database grows, new tiny files land).

1GB runs only when the 100MB full build of the same run took less than GUARD_1GB_S (otherwise
the 1 GB measurements would take hours on this machine and say nothing more than the projection).

Every measured command runs in a fresh subprocess, one at a time. Results: a table on stdout and
bench/results/<timestamp>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

BENCH = Path(__file__).resolve().parent
PROJECT = BENCH.parent
sys.path.insert(0, str(BENCH))

import commands
import shapes
from commands import (
    DEFINITIONS_ONLY,
    IMPORTS,
    PY,
    TURNLAKE,
    WARM_PAGE_CACHE,
    dagster_home,
    demo,
    env_for,
    workers_options,
)
from corpora import (
    EXTRA_SEED,
    SIZES,
    add_new_files,
    calibrate,
    check_intact,
    corpus,
    remove_added,
    shape_corpus,
)
from figures import figures, print_table
from machine import machine
from measure import Measurement, run_measured

GUARD_1GB_S = 180
# ------------------------------------------------------------------ one size


def bench_size(
    label: str,
    info: dict,
    work: Path,
    timeout: float,
    workers: list[int] | None = None,
    quick: bool = False,
) -> dict:
    """Every measurement of one size; `workers`: also a full build with each number of worker
    processes (fresh data root and instance each); `quick`: no 1 % rebuild or release runs."""
    run_dir = work / f"run-{label}"
    if run_dir.exists():
        shutil.rmtree(run_dir)
    logs = run_dir / "logs"
    logs.mkdir(parents=True)
    data = run_dir / "data"
    home = dagster_home(run_dir / "dagster")
    env = env_for(home)
    raw = info["raw"]
    check_intact(info)

    def build_into(data_root: Path, *options: str) -> list[str]:
        return [TURNLAKE, "build", "--raw-root", raw, "--data-root", str(data_root), *options]

    build = build_into(data, "--log-level", "DEBUG")
    out: dict[str, Measurement] = {}

    def measure(name: str, command: list[str]) -> Measurement:
        print(f"  [{label}] {name} …", flush=True)
        load_before = os.getloadavg()[0]  # other users of the cores slow a measurement down
        m = run_measured(
            name, command, env=env, cwd=run_dir, log_path=logs / f"{name}.log", timeout_s=timeout
        )
        m.extra["load_1min_before"] = round(load_before, 2)
        print(
            f"  [{label}] {name}: wall {m.wall_s:.1f} s, cpu {m.cpu_s:.1f} s, peak RSS "
            f"{m.peak_rss_mb:.0f} MB (after step {m.extra.get('peak_rss_after_step') or '-'}),"
            f" peak PSS {m.peak_pss_mb:.0f} MB,"
            f" exit {m.returncode}{' TIMED OUT' if m.timed_out else ''}, load {load_before:.1f}",
            flush=True,
        )
        out[name] = m
        return m

    subprocess.run([PY, "-c", IMPORTS], env=env, cwd=run_dir, check=True)  # warm the bytecode cache
    measure("startup", [PY, "-c", IMPORTS])
    measure("startup_definitions_only", [PY, "-c", DEFINITIONS_ONLY])
    cold = run_measured(
        "startup_no_bytecode_cache",
        [PY, "-c", IMPORTS],
        env=env_for(home, bytecode_cache=False),
        cwd=run_dir,
        log_path=logs / "startup_no_bytecode_cache.log",
        timeout_s=timeout,
    )
    out[cold.name] = cold
    measure("page_cache_warmup", [PY, "-c", WARM_PAGE_CACHE, raw])
    measure("lower_bound", [PY, str(BENCH / "lower_bound.py"), raw, str(run_dir / "lower_bound")])
    if (Path(raw) / "survey_responses").is_dir():
        measure("peer_pandas_study", [PY, str(BENCH / "peer.py"), raw, str(run_dir / "peer")])
    full = measure("full_build", build)
    if full.returncode is None or full.timed_out:
        return {k: v.as_dict() for k, v in out.items()}
    measure("nochange_rebuild", build)
    for n in workers or []:
        env = env_for(dagster_home(run_dir / f"dagster-workers-{n}"))  # read by `measure`
        measure(
            f"full_build_workers_{n}",
            build_into(run_dir / f"data-workers-{n}", *workers_options(n)),
        )
    env = env_for(home)
    if quick:
        return {k: v.as_dict() for k, v in out.items()}
    shape = info.get("shape", "demo")
    if shape != "demo":
        undo = shapes.add_one_percent(shape, Path(raw), info["scale"], EXTRA_SEED, run_dir / "1pct")
        try:
            measure("rebuild_1pct_new", build)
        finally:
            undo()
        return {k: v.as_dict() for k, v in out.items()}
    added = add_new_files(work, info, demo)
    try:
        m = measure("rebuild_1pct_new", build)
        m.extra.update(files_added=len(added), bytes_added=sum(p.stat().st_size for p in added))
        release = [TURNLAKE, "release", "--raw-root", raw, "--data-root", str(data)]
        measure("release_unchanged", release)
        exports = data / "exports"
        aside = data / "exports-aside"
        if exports.exists():
            exports.rename(aside)
        measure("release_fresh", release)
    finally:
        remove_added(Path(raw), added)
    return {k: v.as_dict() for k, v in out.items()}


def _guard_1gb(label: str, done: dict) -> str | None:
    """Why 1GB is skipped, if the 100MB full build of this run was too slow to make it worth
    hours."""
    full = done.get("100MB", {}).get("runs", {}).get("full_build")
    if label != "1GB" or full is None:
        return None
    if full["timed_out"] or full["returncode"] != 0 or full["wall_s"] >= GUARD_1GB_S:
        return (
            f"1GB skipped: the 100MB full build took {full['wall_s']:.0f} s "
            f"(runs only under {GUARD_1GB_S} s; projection in the figures)"
        )
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--sizes", default="10MB,100MB,1GB", help="comma list of 10MB, 100MB, 1GB (default all)"
    )
    parser.add_argument(
        "--work", default="/tmp/turnlake-bench", help="corpora and run folders (cached corpora)"
    )
    parser.add_argument(
        "--timeout", type=float, default=900, help="kill a measured command after this many seconds"
    )
    parser.add_argument(
        "--workers",
        default="",
        help="comma list of worker counts, e.g. 2,4: also a full build with `--workers N` each",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="startup, lower bound, peer, full and no-change builds only (no 1 %% / release runs)",
    )
    parser.add_argument(
        "--shapes",
        default="",
        help=f"comma list of other corpus shapes ({', '.join(shapes.SHAPES)}), each at every size "
        "of --sizes, besides the demo's mix (`demo` in the list: the demo's mix too)",
    )
    args = parser.parse_args(argv)
    workers = [int(n) for n in args.workers.split(",") if n.strip()]
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    commands.PYCACHE = work / "pycache"
    labels = [s.strip() for s in args.sizes.split(",") if s.strip()]
    unknown = set(labels) - set(SIZES)
    if unknown:
        parser.error(f"unknown sizes {sorted(unknown)}; choose from {list(SIZES)}")
    per_scale = calibrate(work, demo)
    result = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "command": "bench/run " + " ".join(argv if argv is not None else sys.argv[1:]),
        "bytes_per_scale": round(per_scale),
        "sizes": {},
    }
    rows = []
    shape_list = [s.strip() for s in args.shapes.split(",") if s.strip()]
    unknown = set(shape_list) - {"demo", *shapes.SHAPES}
    if unknown:
        parser.error(f"unknown shapes {sorted(unknown)}; choose from {list(shapes.SHAPES)}")
    runs_of = (
        [(label, "demo") for label in labels] if not shape_list or "demo" in shape_list else []
    )
    runs_of += [(label, shape) for shape in shape_list if shape != "demo" for label in labels]
    for label, shape in runs_of:
        skip = _guard_1gb(label, result["sizes"])
        if skip:
            print(skip, flush=True)
            result["skipped"] = {label: skip}
            continue
        info = (
            corpus(work, label, per_scale, demo)
            if shape == "demo"
            else shape_corpus(work, label, shape)
        )
        label = label if shape == "demo" else f"{label}-{shape}"
        print(
            f"{label}: scale {info['scale']}, {info['files']} files, {info['bytes'] / 1e6:.1f} MB",
            flush=True,
        )
        runs = bench_size(label, info, work, args.timeout, workers, args.quick)
        row = figures(label, info, runs)
        rows.append(row)
        result["sizes"][label] = {"corpus": info, "runs": runs, "figures": row}
        out = BENCH / "results" / f"{result['started'].replace(':', '').replace('-', '')}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(result, indent=1))
    print_table(rows)
    print(f"\nresults: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
