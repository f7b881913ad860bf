"""Training engine: token-level GRPO on TRL's GRPOTrainer, driven by a Method's reward."""

