"""Pure Polars transforms: bronze → silver → gold. No Dagster imports."""
