"""The training engine: encoders, task heads and the loops that drive them."""
