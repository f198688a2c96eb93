import pytest

from ragqual.adapters.cache import ResponseCache
from ragqual.adapters.llm import ChatMessage, ChatRequest, ChatResponse
from ragqual.engine.services import TrialServices, services_for
from ragqual.engine.subject import Variant
from ragqual.errors import CacheMiss, InputError
from tests.engine.support import ToySubject, echo_case

REQUEST = ChatRequest(system="s", messages=(ChatMessage("user", "hello"),), options={"temperature": 0})


class Recorder:
    """A ChatModel that logs what happens to it."""

    provider = "rec"

    def __init__(self, name, log):
        self.name, self.log = name, log

    def digest(self):
        return "d1"

    def warm_up(self, options=None):
        self.log.append(("warm", self.name, options))

    def chat(self, request):
        self.log.append(("chat", self.name, request.messages[-1].content))
        return ChatResponse(text="hi", raw={"message": {"content": "hi"}}, prompt_tokens=1,
                            completion_tokens=1, latency_ms=1.0)


@pytest.fixture
def log():
    return []


def services(cache, log, **kw):
    return TrialServices(cache, lambda uri: Recorder(uri, log), **kw)


def test_a_miss_warms_up_once_then_calls_and_a_hit_calls_nothing(cache, log):
    s = services(cache, log)
    v = Variant("a", "rec:a")
    first, key1, hit1 = s.call(v, REQUEST, 0)
    again, key2, hit2 = s.call(v, REQUEST, 0)
    assert (hit1, hit2) == (False, True) and key1 == key2
    assert again.text == first.text == "hi"
    assert log == [("warm", "rec:a", {"temperature": 0}), ("chat", "rec:a", "hello")]
    assert (s.model_calls, s.cache_hits, s.warm_ups) == (1, 1, 1)


def test_the_repeat_index_is_a_distinct_cache_entry(cache, log):
    s = services(cache, log)
    v = Variant("a", "rec:a")
    _, key0, _ = s.call(v, REQUEST, 0)
    _, key1, hit = s.call(v, REQUEST, 1)
    assert key0 != key1 and hit is False
    assert s.model_calls == 2 and s.warm_ups == 1


def test_each_model_is_built_once_and_warmed_once(cache, log):
    built = []

    def factory(uri):
        built.append(uri)
        return Recorder(uri, log)

    s = TrialServices(cache, factory)
    for i in range(3):
        s.call(Variant("a", "rec:a"), REQUEST, i)
        s.call(Variant("a-hot", "rec:a", options={"temperature": 1}), REQUEST, i)
        s.call(Variant("b", "rec:b"), REQUEST, i)
    assert built == ["rec:a", "rec:b"]
    assert [e[1] for e in log if e[0] == "warm"] == ["rec:a", "rec:b"]


def test_replay_calls_nothing_and_a_miss_is_a_cache_miss(cache_dir, log):
    writer = ResponseCache.at(cache_dir)
    services(writer, log).call(Variant("a", "rec:a"), REQUEST, 0)
    writer.close()
    log.clear()
    replay = ResponseCache.at(cache_dir, "replay")
    s = services(replay, log)
    assert s.call(Variant("a", "rec:a"), REQUEST, 0)[2] is True
    with pytest.raises(CacheMiss, match="replay mode"):
        s.call(Variant("a", "rec:a"), REQUEST, 7)
    replay.close()
    assert log == [] and s.model_calls == 0 and s.warm_ups == 0


def test_services_for_uses_the_subject_mock(cache):
    s = services_for(ToySubject([echo_case("c", "word")]), cache)
    response, _, _ = s.call(Variant("mock", "mock"), REQUEST, 0)
    assert response.text == "hello"


def test_a_subject_without_mock_gets_a_clear_error(cache):
    from ragqual.engine.subject import Subject

    class NoMock(Subject):
        name = "nomock"

    with pytest.raises(InputError, match="no mock model"):
        services_for(NoMock(), cache).call(Variant("mock", "mock"), REQUEST, 0)
