# Validate the config (one line naming the key and the allowed values) and expose the
# target logic of xlt.targets as `T`. Nothing else belongs here.
import json

from snakemake.exceptions import WorkflowError

from xlt import targets as T
from xlt.config import validate
from xlt.errors import XltError

try:
    validate(config)
except XltError as e:
    raise WorkflowError(f"invalid configuration: {e}") from None

RESULTS = config["results"]
ENV = "../envs/xlt.yaml"


wildcard_constraints:
    **T.WILDCARDS,


def as_json(obj):
    return json.dumps(obj, sort_keys=True)
