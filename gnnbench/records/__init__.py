"""Records: the versioned `results.json` schema, what identifies a setting, the store on
disk, comparisons made from records, and W&B publishing (the only code importing wandb)."""
