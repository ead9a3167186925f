"""The titles and order of the report's benchmark sections, shared by ``stats`` and the
dashboard; a module of its own so that printing a cached report imports no statistics."""

# The report's benchmark sections (``doc["benchmarks"]``) in the order the CLI and the
# dashboard show them, with their titles (``tiif_accuracy``, per dimension, is JSON only).
BENCHMARK_SECTIONS = (
    ("metric_means", "Metric means per model"),
    ("paircomp", "PairComp"),
    ("geneval2_totals", "GenEval 2 totals (×100)"),
    ("geneval2_by_skill", "GenEval 2 Soft-TIFA AM per skill"),
    ("geneval2_by_atomicity", "GenEval 2 Soft-TIFA GM per atom count"),
    ("tiif_summary", "TIIF-Bench groups"),
    ("gned", "GNED (lower is better)"),
    ("consistency", "Paraphrase consistency"),
    ("problems", "Benchmarks not computed"),
)
