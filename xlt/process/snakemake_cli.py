"""The project venv's `snakemake`: Snakemake's own command line, its --configfile files first
read as YAML, so that one that is not says its file and line.

Snakemake 9 reads the --configfile files while it parses its arguments (ConfigSettings in
snakemake/settings/types.py), before any line of the Snakefile runs, and says only "Config
file is not valid JSON or YAML": no file, no line, and no workflow code can run first. `make
install` writes `.venv/bin/snakemake` (`install`) to call `check_configfiles` here, then
Snakemake's own `main`; `python -m xlt.workflow.config` does the full check (keys, values) and
the workflow repeats it.

    python -m xlt.process.snakemake_cli install .venv/bin/snakemake
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from xlt.errors import DataFormatError
from xlt.io import read_yaml
from xlt.process.cli import snakemake_configfiles


def yaml_problem(argv: list[str]) -> str | None:
    """The one-line error of the first --configfile file of a Snakemake command line that is not
    YAML (`<file>:<line>: invalid YAML (…)`), or None; a missing file is Snakemake's to report."""
    for path in snakemake_configfiles(argv):
        if Path(path).is_file():
            try:
                read_yaml(path)
            except DataFormatError as e:
                return f"error: invalid configuration: {e}"
    return None


def check_configfiles() -> None:
    """Exit 1 with the one line of a config file that is not YAML; else return (the script then
    runs Snakemake's own `main`: the library imports no Snakemake)."""
    if line := yaml_problem(sys.argv[1:]):
        print(line, file=sys.stderr)
        sys.exit(1)


SCRIPT = """#!{python}
# Written by `make install` (xlt/process/snakemake_cli.py) over Snakemake's own entry point:
# the --configfile files are read as YAML first, so that a bad one names its file and line.
import sys

from xlt.process.snakemake_cli import check_configfiles

if __name__ == "__main__":
    check_configfiles()
    from snakemake.cli import main

    sys.argv[0] = sys.argv[0].removesuffix(".exe")
    sys.exit(main())
"""


def install(script: str | Path) -> None:
    """Write the entry point `script` (the venv's bin/snakemake) for this interpreter."""
    script = Path(script)
    tmp = script.with_name(f".{script.name}.tmp")
    tmp.write_text(SCRIPT.format(python=sys.executable))
    tmp.chmod(0o755)
    os.replace(tmp, script)


if __name__ == "__main__":
    if sys.argv[1:2] != ["install"] or len(sys.argv) != 3:
        sys.exit("usage: python -m xlt.process.snakemake_cli install <the venv's bin/snakemake>")
    install(sys.argv[2])
