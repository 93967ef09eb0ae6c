# Validate the config (one line naming the key and the allowed values) and expose the
# target logic of xlt.targets as `T`. Nothing else belongs here.
import json
import os
import sys

from xlt import resources as R
from xlt import targets as T
from xlt.config import check_workflow_config
from xlt.errors import XltError

try:
    check_workflow_config(config)
except XltError as e:
    # One line and exit 1, before the DAG exists (a WorkflowError would add Snakemake's
    # frame lines around the message).
    print(f"error: invalid configuration: {e}", file=sys.stderr)
    sys.exit(1)

RESULTS = config["results"]


envvars:
    "PATH",


# Jobs call the scripts of workflow_scripts/ by name (found from the Snakefile, so
# `--directory elsewhere` works) and their `#!/usr/bin/env python` is the interpreter running
# Snakemake (the project's venv). --use-conda activates its env later, which then wins.
os.environ["PATH"] = os.pathsep.join(
    [
        os.path.join(workflow.basedir, "workflow_scripts"),
        os.path.dirname(sys.executable),
        os.environ.get("PATH", ""),
    ]
)
ENV = "../envs/xlt.yaml"


wildcard_constraints:
    **T.WILDCARDS,


def as_json(obj):
    return json.dumps(obj, sort_keys=True)
