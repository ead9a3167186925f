"""Code the tests and the benchmarks share that is not part of Concord: the load-test
driver (``loadtest``), the tiny random-weight VLMs built offline (``tiny_models``) and a
throw-away PostgreSQL server (``pg_server``)."""
