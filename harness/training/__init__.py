"""Training engine: token-level GRPO on TRL's GRPOTrainer, driven by a Method's reward."""

# This part's import layer (tests/core/test_import_graph.py reads it; docs/CONTRACTS.md, "Packages").
LAYER = "method runtime"
