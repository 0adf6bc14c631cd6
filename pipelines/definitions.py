import dagster as dg

@dg.asset
def hello() -> None:
    return None

defs = dg.Definitions(assets=[hello])
