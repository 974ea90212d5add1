"""The results database: every trial saved the moment it ends."""

from pickfs.model import RunRecord
from pickfs.store.results import ResultStore, RunSummaryRow

__all__ = ["ResultStore", "RunRecord", "RunSummaryRow"]
