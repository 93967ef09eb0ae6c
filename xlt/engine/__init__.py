"""One training engine: an encoder, a head for the task, optional extras.

`train()` fine-tunes with AdamW and a linear schedule, evaluates on dev for model
selection, checkpoints and resumes; `predict()` runs a saved model on a split.
"""
