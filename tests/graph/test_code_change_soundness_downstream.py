"""An upgrade never publishes what a from-scratch build would not: a one-line change in a module of
each downstream layer (splits, exports, privacy, release), then an incremental build on a data
root built by today's code publishes the release a fresh build with the changed code publishes
(harness and changes: tests/graph/soundness.py).
"""

import pytest

from tests.graph.soundness import built_today, check_layer

__all__ = ["built_today"]


@pytest.mark.parametrize("layer", ["splits", "exports", "privacy", "release"])
def test_an_incremental_build_after_a_code_change_publishes_what_a_fresh_build_does(
    built_today, tmp_path, layer
):
    check_layer(built_today, tmp_path, layer)
