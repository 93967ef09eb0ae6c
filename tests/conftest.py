import pytest

from xlt.world import World
from xlt.world.config import default_config


@pytest.fixture(scope="session")
def tiny_world(tmp_path_factory):
    """The default world (9 languages, all tasks, 600/150/150), written once per session."""
    world = World(default_config(seed=13))
    raw = tmp_path_factory.mktemp("raw")
    manifest = world.write(raw)
    return world, raw, manifest
