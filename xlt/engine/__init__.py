"""One training engine: encoder -> extras -> head(s), one resumable loop for every job.

runtime (device, seeding, DDP, grace signal, optimizer, checkpoints) · streams (named batch
streams) · objectives (loss terms) · kinds (one object per head kind) · extras · model
(spec, save/load) · loop · evalset/predict (full-precision evaluation) · recipes (finetune,
mlm).
"""
