"""A job's process on this machine: the fork server (zygote), the CPU ISA guard every process runs
at import, the script runner (cli), why a fetch failed."""
