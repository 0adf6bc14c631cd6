"""bench/figures.py and bench/measure.py: the study's part of a build against the pandas peer,
charged by raw bytes (the first metric) and as measured (its own silver transform, its rows'
share of assembly); the silver step's per-source line read back from a build log."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from figures import figures, study_part
from measure import silver_by_source

from pipelines.transforms.timing import SilverTimes, read_summary

STEPS = {"bronze_study": 6000.0, "silver_tables": 30000.0, "bronze_dialogue": 9000.0}
BY_SOURCE = {
    "dialogue": {"seconds": 6.0, "rows": 300},
    "study": {"seconds": 2.0, "rows": 100},
}


def test_study_part_charges_its_own_transform_and_its_row_share_of_assembly():
    part = study_part(STEPS, BY_SOURCE, 0.4)
    # by hand: byte share 6 + 0.4 × 30 = 18; measured: transforms 6 + 2 = 8, assembly 30 - 8 = 22,
    # rows 100 of 400 = 0.25 → 6 + 2 + 0.25 × 22 = 13.5
    assert part == {
        "study_bytes_share": 0.4,
        "turnlake_study_part_s (byte share)": 18.0,
        "study.silver_transform_s": 2.0,
        "study.silver_rows_share": 0.25,
        "silver.assembly_s": 22.0,
        "turnlake_study_part_s (measured)": 13.5,
    }


def test_a_build_without_per_source_times_gives_the_byte_share_only():
    assert study_part(STEPS, {}, 0.4) == {
        "study_bytes_share": 0.4,
        "turnlake_study_part_s (byte share)": 18.0,
    }


def test_figures_give_the_peer_ratio_both_ways(tmp_path):
    study = tmp_path / "raw" / "survey_responses" / "conversations"
    study.mkdir(parents=True)
    (study / "s.json").write_bytes(b"x" * 40)  # 40 of the corpus's 100 bytes: share 0.4
    info = {"raw": str(tmp_path / "raw"), "scale": 1, "files": 2, "bytes": 100}
    run = {"wall_s": 40.0, "cpu_s": 40.0, "peak_rss_mb": 1.0, "returncode": 0}
    runs = {
        "lower_bound": {**run, "wall_s": 4.0, "cpu_s": 4.0},
        "full_build": {**run, "steps_ms": STEPS, "silver_by_source": BY_SOURCE},
        "peer_pandas_study": {**run, "wall_s": 9.0},
    }
    f = figures("t", info, runs)
    # by hand: 9 / 18 = 0.5; 9 / 13.5 = 0.667
    assert f["peer / turnlake_study_part (byte share)"] == 0.5
    assert f["peer / turnlake_study_part (measured)"] == 0.67


def test_the_silver_steps_line_is_read_back_per_source(tmp_path):
    log = tmp_path / "build.log"
    log.write_text(
        "[3/12] bronze_study  6.1 s  study: 10 files\n"
        "[7/12] silver_tables  30.0 s  silver rebuilt: {'episodes': 5, 'turns': 9}; "
        "by source: dialogue 6.00 s / 300 rows, study 2.25 s / 100 rows\n"
    )
    assert silver_by_source(log) == {
        "dialogue": {"seconds": 6.0, "rows": 300},
        "study": {"seconds": 2.25, "rows": 100},
    }


def test_silver_times_written_are_read_back():
    times = SilverTimes(seconds={"study": 0.804, "oasst": 12.0}, rows={"study": 7, "oasst": 0})
    assert times.summary() == "by source: study 0.80 s / 7 rows, oasst 12.00 s / 0 rows"
    assert read_summary(f"silver rebuilt: {{}}; {times.summary()}") == {
        "study": (0.8, 7),
        "oasst": (12.0, 0),
    }


def test_silver_times_add_up_each_source_over_the_partitions_it_is_transformed_in():
    times = SilverTimes()
    times.add("study", 0.5, 4)
    times.add("oasst", 0.25, 0)
    times.add("study", 0.25, 3)  # a second partition holding study units
    assert times.seconds == {"study": 0.75, "oasst": 0.25}
    assert times.rows == {"study": 7, "oasst": 0}
