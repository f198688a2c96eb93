import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.store.runstore import RunStore


@pytest.fixture
def store(head_db):
    opened = RunStore.open(f"sqlite:///{head_db}")
    yield opened
    opened.engine.dispose()


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


@pytest.fixture
def cache(cache_dir):
    opened = ResponseCache.at(cache_dir)
    yield opened
    opened.close()
