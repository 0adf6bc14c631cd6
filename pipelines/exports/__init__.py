"""Exports: training datasets built from silver + gold (datasets/) and written as releases
(pipelines/release)."""
