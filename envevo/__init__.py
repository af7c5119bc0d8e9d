"""envevo: evolve verifiable RL environments for terminal agents."""

__version__ = "0.1.0"
