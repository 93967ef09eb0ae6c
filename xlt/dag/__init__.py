"""The workflow's DAG as data: every file's path (targets), what each job asks a scheduler
(resources), its work in tokens (work) and what that costs (throughput). Papers and rules build
on it."""
