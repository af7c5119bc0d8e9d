"""ξ, the scenario–skill trajectory of solving an environment: its value types live in envevo.catalog.

The catalog sits below trace and builds ξ itself (a chain is a typed ξ), so Step and Trace are defined there; this
module keeps the names where trace's own modules import them.
"""

from envevo.catalog import Step, Trace

__all__ = ["Step", "Trace"]
