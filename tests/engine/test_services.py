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


class Unreachable(Recorder):
    """A backend whose server never answers: `ensure_available` refuses, a failed warm-up is one call."""

    def ensure_available(self):
        from ragqual.errors import ServiceUnavailable

        self.log.append(("ensure", self.name))
        raise ServiceUnavailable(f"no server for {self.name}")

    def warm_up(self, options=None):
        from ragqual.errors import ModelCallFailed

        raise ModelCallFailed("http://h/v1 failed on 'm' after 3 attempts: RemoteProtocolError", reason="transport",
                              attempts=3)


def test_describe_asks_the_server_first_except_in_replay_mode(tmp_path, log):
    from ragqual.errors import ServiceUnavailable

    live = TrialServices(ResponseCache.at(tmp_path / "a", "auto"), lambda uri: Unreachable(uri, log))
    with pytest.raises(ServiceUnavailable, match="no server for x:m"):
        live.describe(Variant("m", "x:m"))
    replay = TrialServices(ResponseCache.at(tmp_path / "b", "replay"), lambda uri: Unreachable(uri, log))
    assert replay.describe(Variant("m", "x:m"))["model"] == "x:m"
    assert log == [("ensure", "x:m")]  # the replay asked no server


def test_a_warm_up_that_fails_every_attempt_says_so_on_the_trial_and_is_not_repeated(cache, log):
    from ragqual.errors import ModelCallFailed

    s = TrialServices(cache, lambda uri: Unreachable(uri, log))
    v = Variant("m", "x:m")
    with pytest.raises(ModelCallFailed, match=r"^the warm-up call failed: http://h/v1 failed on 'm' after 3") as failed:
        s.call(v, REQUEST, 0)
    assert (failed.value.reason, failed.value.attempts) == ("transport", 3)
    s.call(v, REQUEST, 1)  # the next trial calls the model without a second warm-up
    assert s.warm_ups == 1 and log == [("chat", "x:m", "hello")]


class _CountingLock:
    """A lock that counts how often it is taken."""

    def __init__(self, lock):
        self.lock, self.taken = lock, 0

    def __enter__(self):
        self.taken += 1
        return self.lock.__enter__()

    def __exit__(self, *exc):
        return self.lock.__exit__(*exc)


def test_a_built_model_is_handed_out_without_the_lock_and_replays_is_asked_once_per_model(cache, log):
    """The loop asks `replays` and `call` (twice for the model) for every trial: a model already
    built is read without taking the lock, and whether it replays answers is looked at once per URI."""
    looked = []

    class Replaying(Recorder):
        @property
        def lookup(self):
            looked.append(self.name)
            return lambda case_id, mode: None

    s = TrialServices(cache, lambda uri: Replaying(uri, log) if uri == "rec:r" else Recorder(uri, log))
    a, r = Variant("a", "rec:a"), Variant("r", "rec:r")
    first = s.model(a)
    s._lock = counting = _CountingLock(s._lock)
    assert [s.replays(a), s.replays(r), s.replays(a), s.replays(r)] == [False, True, False, True]
    assert looked == ["rec:r"]
    taken = counting.taken  # building rec:r took it once
    for i in range(3):
        assert s.model(a) is first
        s.call(a, REQUEST, i)
    assert counting.taken - taken == 3  # the model-call counter only, for the three misses
