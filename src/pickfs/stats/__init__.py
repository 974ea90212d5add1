"""Pure statistics: no I/O, no printing."""

from pickfs.stats.summary import percentile_from_histogram, relative, summarize

__all__ = ["percentile_from_histogram", "relative", "summarize"]
