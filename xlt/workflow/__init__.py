"""What runs around Snakemake and reads the whole paper registry: the config check, the bill, the
plan, `make help`, the README status, the report's index and captions, the run summary, the
progress line, the packs of seeds."""
