"""A contract's data rules answered in one query agree with Pandera: True only where Pandera
passes the frame, False on every kind of failure (which Pandera then reports)."""

import math

import pandera.polars as pa
import polars as pl
import pytest

from pipelines.checks.at_once import holds_at_once
from pipelines.schemas.strict import StrictModel


class Model(StrictModel):
    n: int = pa.Field(ge=0)
    score: float = pa.Field(in_range={"min_value": 0.0, "max_value": 1.0})
    kind: str = pa.Field(isin=["a", "b"])
    code: str = pa.Field(str_matches=r"^x\d+$")
    maybe: int = pa.Field(nullable=True, le=9)


CLEAN = {
    "n": [0, 3],
    "score": [0.0, 1.0],
    "kind": ["a", "b"],
    "code": ["x1", "x22"],
    "maybe": [None, 9],
}


def _pandera_passes(frame: pl.DataFrame) -> bool:
    try:
        Model.validate(frame, lazy=True)
    except pa.errors.SchemaErrors:
        return False
    return True


def test_a_clean_frame_holds_at_once_as_pandera_passes_it():
    frame = pl.DataFrame(CLEAN)
    assert _pandera_passes(frame) and holds_at_once(Model, frame)
    assert holds_at_once(Model, frame.head(0))


@pytest.mark.parametrize(
    "column, value",
    [
        ("n", -1),  # below ge
        ("n", None),  # null in a non-nullable column
        ("score", math.nan),  # NaN in a non-nullable float column
        ("score", 1.5),  # out of range
        ("kind", "c"),  # not in isin
        ("code", "y1"),  # no match
        ("maybe", 10),  # a nullable column's check still holds on its values
    ],
)
def test_a_failing_rule_is_not_held_at_once(column, value):
    rows = {k: list(v) for k, v in CLEAN.items()}
    rows[column][1] = value
    frame = pl.DataFrame(rows, schema=pl.DataFrame(CLEAN).schema)
    assert not _pandera_passes(frame)
    assert not holds_at_once(Model, frame)


def test_a_wrong_type_or_an_undeclared_column_is_not_held_at_once():
    frame = pl.DataFrame(CLEAN)
    assert not holds_at_once(Model, frame.with_columns(pl.col("n").cast(pl.Int32)))
    assert not holds_at_once(Model, frame.with_columns(extra=pl.lit(1)))
    assert not holds_at_once(Model, frame.drop("kind"))


class WithFrameCheck(Model):
    @pa.dataframe_check
    @classmethod
    def n_below_ten(cls, data):
        return data.lazyframe.select(pl.col("n") < 10)


def test_a_rule_of_the_whole_frame_is_left_to_pandera():
    assert not holds_at_once(WithFrameCheck, pl.DataFrame(CLEAN))
