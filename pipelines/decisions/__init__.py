"""Decision time travel (issue 17): list, inspect and replay the decisions of the `decision`
source, each with the exact context its actor saw, rebuilt from silver + the content-addressed
`contexts` through the release's own prompt builder. Pure Polars; the API and CLI call these."""
