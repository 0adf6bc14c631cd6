"""Reward rules, one module per source; each registers its rules in `pipelines.gold.registry`."""
