"""Figures from one size's measurements: every run's numbers, and the ratios the targets are
stated in (to the lower bound, to the pandas peer, 1 % rebuild to full build, work beyond start-up).
"""

from __future__ import annotations

from pathlib import Path


def _steps_sum(m: dict, prefix: str = "") -> float:
    return sum(v for k, v in m["steps_ms"].items() if k.startswith(prefix)) / 1000


def study_part(steps_ms: dict, by_source: dict, share: float) -> dict:
    """The study's part of a full build, two ways. Byte share (the first metric): its bronze step
    + its share of the raw bytes × the whole silver step. Measured: its bronze step + its own
    silver transform (the step's `by source` seconds) + its share of the silver rows × the rest
    of the silver step (assembly: keys, partitions, sorting, writing, and the step's overhead).
    Neither includes gold, the release or start-up: the peer does none of them."""
    bronze, silver = steps_ms.get("bronze_study", 0) / 1000, steps_ms.get("silver_tables", 0) / 1000
    out = {
        "study_bytes_share": round(share, 3),
        "turnlake_study_part_s (byte share)": round(bronze + share * silver, 2),
    }
    if "study" not in by_source:  # a build before silver timed its sources
        return out
    transforms = sum(s["seconds"] for s in by_source.values())
    rows = sum(s["rows"] for s in by_source.values())
    own = by_source["study"]
    row_share = own["rows"] / rows if rows else 0.0
    assembly = max(silver - transforms, 0.0)
    out.update(
        {
            "study.silver_transform_s": round(own["seconds"], 2),
            "study.silver_rows_share": round(row_share, 3),
            "silver.assembly_s": round(assembly, 2),
            "turnlake_study_part_s (measured)": round(
                bronze + own["seconds"] + row_share * assembly, 2
            ),
        }
    )
    return out


def figures(label: str, info: dict, r: dict) -> dict:
    f: dict = {
        "size": label,
        "scale": info["scale"],
        "files": info["files"],
        "mb": round(info["bytes"] / 1e6, 1),
    }
    for name, m in r.items():
        f[f"{name}.wall_s"] = m["wall_s"]
        f[f"{name}.cpu_s"] = m["cpu_s"]
        f[f"{name}.rss_mb"] = m["peak_rss_mb"]
        f[f"{name}.pss_mb"] = m.get("peak_pss_mb")  # absent in results from before it was measured
        f[f"{name}.exit"] = m["returncode"]
    lb = r["lower_bound"]["wall_s"]
    if "full_build" in r:
        full = r["full_build"]
        f["full_build.steps_sum_s"] = round(_steps_sum(full), 2)
        f["full / lower_bound (wall)"] = round(full["wall_s"] / lb, 1)
        f["full / lower_bound (cpu)"] = round(full["cpu_s"] / r["lower_bound"]["cpu_s"], 1)
        f["full_build.mb_per_s"] = round(info["bytes"] / 1e6 / full["wall_s"], 2)
        f["full_build.projected_1GB_s"] = round(full["wall_s"] * 1e9 / info["bytes"], 0)
        study_bytes = sum(
            p.stat().st_size
            for p in (Path(info["raw"]) / "survey_responses").rglob("*")
            if p.is_file()
        )
        share = study_bytes / info["bytes"]
        study = study_part(full["steps_ms"], full.get("silver_by_source") or {}, share)
        f.update(study)
        if "peer_pandas_study" in r:  # corpora of other shapes have no study sessions
            peer = r["peer_pandas_study"]["wall_s"]
            f["peer / full_build (wall)"] = round(peer / full["wall_s"], 2)
            for how in ("byte share", "measured"):
                part = study.get(f"turnlake_study_part_s ({how})")
                f[f"peer / turnlake_study_part ({how})"] = round(peer / part, 2) if part else None
    for name in ("nochange_rebuild", "rebuild_1pct_new", "release_unchanged", "release_fresh"):
        if name in r:
            f[f"{name} / lower_bound (wall)"] = round(r[name]["wall_s"] / lb, 1)
    if "nochange_rebuild" in r:
        f["nochange_beyond_startup_s"] = round(
            r["nochange_rebuild"]["wall_s"] - r["startup"]["wall_s"], 2
        )
        f["nochange.steps_sum_s"] = round(_steps_sum(r["nochange_rebuild"]), 2)
    for name in r:
        if name.startswith("full_build_workers_") and "full_build" in r:
            ratio = r[name]["wall_s"] / r["full_build"]["wall_s"]
            f[f"{name} / full_build (wall)"] = round(ratio, 2)
    if "rebuild_1pct_new" in r:
        f["1pct / full_build (wall)"] = round(
            r["rebuild_1pct_new"]["wall_s"] / r["full_build"]["wall_s"], 3
        )
        extra = r["rebuild_1pct_new"]["extra"]
        f.update({f"1pct.{k}": v for k, v in extra.items() if not k.startswith("load")})
    return f


def print_table(rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for row in rows for k in row))
    labels = [row["size"] for row in rows]
    width = max(len(k) for k in keys)
    print(f"\n{'figure':<{width}}  " + "  ".join(f"{lab:>12}" for lab in labels))
    for key in keys:
        cells = "  ".join(f"{row.get(key, '')!s:>12}" for row in rows)
        print(f"{key:<{width}}  {cells}")
