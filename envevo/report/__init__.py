"""Reports: the self-contained HTML lineage page."""

from envevo.report._html import build_report

__all__ = ["build_report"]
