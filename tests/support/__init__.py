"""Code the tests and the benchmarks share that is not part of Concord: the load-test
driver (``loadtest``) and the tiny random-weight VLMs built offline (``tiny_models``)."""
