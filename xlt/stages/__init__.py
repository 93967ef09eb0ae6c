"""The stages that make data and models: prepare (with its two-language sets), adapt, finetune."""
