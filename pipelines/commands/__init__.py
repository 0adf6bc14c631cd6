"""Sub-command groups of the `turnlake` CLI beyond build/demo/sql (see pipelines/cli.py)."""
