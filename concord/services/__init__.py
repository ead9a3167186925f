"""Use cases: what pages and the CLI call; the only callers of the store."""
