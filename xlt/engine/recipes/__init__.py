"""Recipes: short compositions of the engine's blocks (streams, loss terms, a model spec,
the loop) — fine-tuning, MLM pretraining / adaptation, and what the papers add."""
