"""The results database: every trial saved the moment it ends."""

from pickfs.store.results import ResultStore, RunRecord, RunSummaryRow

__all__ = ["ResultStore", "RunRecord", "RunSummaryRow"]
