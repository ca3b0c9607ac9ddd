"""Human-readable views of records: a run's console summary, and the comparison report over
folders of records (Markdown, CSV, plots, a W&B table, the README headline)."""
