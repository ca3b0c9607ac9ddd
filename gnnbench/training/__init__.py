"""Training: steps, epochs (full batch or neighbour batches), the sampler, the optimizer and
compilation. Builds on data, models and measure; knows nothing of records or reports."""
