"""Partitions of silver and gold (DESIGN §8): which partition a group lives in, and which
partitions a build must recompute. Pure: no Dagster here."""
