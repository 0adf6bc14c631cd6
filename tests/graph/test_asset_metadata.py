"""What the Dagster UI shows: column schemas from the Pandera models, `dagster/row_count` on
materializations (against rows counted by hand in tiny fixtures), owners, the release's rows per
dataset and split with its card, and a release description that renders."""

import json
from pathlib import Path

import dagster as dg
import orjson
from markdown_it import MarkdownIt

from assets.bronze import BRONZE_ASSETS
from assets.exports import release as release_asset
from assets.metadata import COLUMN_SCHEMA, OWNERS, ROW_COUNT, release_metadata
from assets.silver import silver_tables
from pipelines.config.settings import settings_from_config
from pipelines.definitions import defs
from pipelines.orchestration.resources import TurnlakeResource

PROJECT_CONFIG = Path(__file__).parents[2] / "turnlake.toml"

PAIRS = [
    {
        "chosen": f"\n\nHuman: Q{i}?\n\nAssistant: good {i}.",
        "rejected": f"\n\nHuman: Q{i}?\n\nAssistant: bad {i}.",
    }
    for i in range(3)
]


def write_hh_rlhf(raw_root: Path, extra_lines: list[str]) -> None:
    """Three valid preference pairs, then `extra_lines` verbatim."""
    folder = raw_root / "hh_rlhf" / "helpful-base"
    folder.mkdir(parents=True)
    lines = [json.dumps(pair) for pair in PAIRS] + extra_lines
    (folder / "train.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def materialize(assets: list, raw_root: Path, data_root: Path) -> dg.ExecuteInProcessResult:
    settings = settings_from_config(raw_root, data_root, PROJECT_CONFIG)
    return dg.materialize(assets, resources={"turnlake": TurnlakeResource.from_settings(settings)})


def materialization_metadata(result: dg.ExecuteInProcessResult, key: str) -> dict:
    [event] = [
        e for e in result.get_asset_materialization_events() if e.asset_key == dg.AssetKey(key)
    ]
    return {k: v.value for k, v in event.materialization.metadata.items()}


def spec_of(key: str) -> dg.AssetSpec:
    graph = defs.resolve_asset_graph()
    return graph.get(dg.AssetKey(key)).to_asset_spec()


def test_bronze_row_count_is_the_three_hand_counted_pairs_of_the_clean_file(tmp_path):
    write_hh_rlhf(tmp_path / "raw", [])
    bronze = next(a for a in BRONZE_ASSETS if a.key == dg.AssetKey("bronze_hh_rlhf"))
    result = materialize([bronze], tmp_path / "raw", tmp_path / "data")
    assert materialization_metadata(result, "bronze_hh_rlhf")[ROW_COUNT] == 3


def test_bronze_row_count_leaves_out_the_quarantined_line_of_the_dirty_file(tmp_path):
    write_hh_rlhf(tmp_path / "raw", ['{"chosen": "cut off'])
    bronze = next(a for a in BRONZE_ASSETS if a.key == dg.AssetKey("bronze_hh_rlhf"))
    result = materialize([bronze], tmp_path / "raw", tmp_path / "data")
    metadata = materialization_metadata(result, "bronze_hh_rlhf")
    assert (metadata[ROW_COUNT], metadata["quarantined"]) == (3, 1)


def test_silver_episodes_row_count_is_one_episode_per_hand_counted_pair(tmp_path):
    write_hh_rlhf(tmp_path / "raw", [])
    result = materialize([*BRONZE_ASSETS, silver_tables], tmp_path / "raw", tmp_path / "data")
    assert materialization_metadata(result, "silver_episodes")[ROW_COUNT] == 3


def test_splits_column_schema_names_the_model_columns_types_and_constraints():
    schema = spec_of("gold_splits").metadata[COLUMN_SCHEMA]
    assert [(c.name, c.type) for c in schema.columns] == [
        ("group_id", "String"),
        ("bucket", "Int64"),
        ("split", "String"),
        ("salt", "String"),
        ("split_group", "String"),  # the group hashed: itself, or its near-duplicate cluster's
    ]
    assert [c.constraints.unique for c in schema.columns] == [True, False, False, False, False]
    assert all(c.description for c in schema.columns)


def test_bronze_column_schema_of_a_two_table_source_names_columns_by_table():
    names = [c.name for c in spec_of("bronze_study").metadata[COLUMN_SCHEMA].columns]
    assert names[:4] == [
        "study_sessions.file",
        "study_sessions.locator",
        "study_sessions.copy_kind",
        "study_sessions.session_id",
    ]
    assert "study_participants.confirmation_number" in names


def test_every_table_asset_has_a_column_schema_and_every_asset_an_owner():
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        spec = graph.get(key).to_asset_spec()
        assert spec.owners == OWNERS, key
        # gold_partition is a slice of every gold table, not a table of its own
        if key.path[0].split("_")[0] in {"bronze", "silver", "gold"} and not spec.partitions_def:
            assert COLUMN_SCHEMA in spec.metadata, key


def test_release_metadata_has_rows_per_dataset_and_split_and_the_card(tmp_path):
    counts = {"sft": {"train": 5, "test": 2}, "kto": {"train": 4}}
    (tmp_path / "manifest.json").write_bytes(orjson.dumps({"counts": counts}))
    (tmp_path / "README.md").write_text("# card\n", encoding="utf-8")
    metadata = release_metadata(tmp_path)
    assert {k: v for k, v in metadata.items() if k.startswith("rows/")} == {
        "rows/kto/train": 4,
        "rows/sft/test": 2,
        "rows/sft/train": 5,
    }
    assert metadata[ROW_COUNT] == 11
    assert metadata["dataset_card"].value == "# card\n"


def test_release_description_renders_its_path_in_markdown():
    html = MarkdownIt("commonmark").render(release_asset.descriptions_by_key[release_asset.key])
    assert "&lt;data root&gt;/exports/&lt;version&gt;/" in html
