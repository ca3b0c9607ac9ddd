"""How things are measured: synchronised timers, statistics, dynamo's and Inductor's
counters, memory and the environment. Knows nothing of models, data or training."""
