"""Statistics: exact paired tests, score intervals, Holm, summaries over seeds, the source frontier."""
