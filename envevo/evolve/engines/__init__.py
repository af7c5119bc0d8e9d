"""Engines that drive evolution: `procedural` (offline scenario–skill graph) and, later, `llm`."""
