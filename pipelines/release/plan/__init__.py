"""Which release LATEST names, and the code that made it."""
