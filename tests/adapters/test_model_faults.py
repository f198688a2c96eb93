"""Model-server faults through the real clients (httpx for OpenAI-compatible servers, the `ollama`
client for Ollama) against stand-in servers on 127.0.0.1.

Unreachable at the start is a ServiceUnavailable (the run cannot begin); a dropped or reset
connection once the server has answered is one failed attempt, retried and then recorded on
the trial; the time limit bounds the whole call, however slowly the server sends; a reply whose
content is null is malformed; the circuit breaker stops a run after K failed attempts in a row.
"""

from __future__ import annotations

import pytest

from ragqual.adapters.llm import ChatMessage, ChatRequest
from ragqual.adapters.ollama_chat import OllamaChatModel
from ragqual.adapters.openai_model import OpenAIChatModel
from ragqual.engine.breaker import CircuitBreaker, CircuitOpen
from ragqual.errors import ModelCallFailed, ServiceUnavailable
from tests.support.fake_ollama import FakeOllama
from tests.support.fake_openai import FakeOpenAI, after, always, completion

QUESTION = ChatRequest(system="", messages=(ChatMessage("user", "hello"),))


def no_sleep(seconds: float) -> None:
    return None


def openai(server: FakeOpenAI, **kwargs) -> OpenAIChatModel:
    kwargs.setdefault("timeout", 5.0)
    kwargs.setdefault("retries", 2)
    return OpenAIChatModel(server.base_url, "m", sleep=no_sleep, **kwargs)


# -- 1. a dropped connection mid-run is a retried attempt, not "unreachable" -------------------------

@pytest.mark.parametrize("fault", ["drop", "reset"])
def test_a_connection_lost_after_the_server_answered_is_retried(fault):
    with FakeOpenAI(faults=lambda i: fault if i == 2 else None) as server:
        model = openai(server)
        assert model.chat(QUESTION).text == "echo: hello"
        answer = model.chat(QUESTION)  # request 2 is lost, request 3 answers
        served = list(server.served)
    assert answer.text == "echo: hello"
    assert served == ["ok", fault, "ok"]


@pytest.mark.parametrize("fault", ["drop", "reset"])
def test_a_connection_lost_on_every_attempt_fails_that_call_only(fault):
    with FakeOpenAI(faults=after(1, fault)) as server:
        model = openai(server)
        model.chat(QUESTION)
        with pytest.raises(ModelCallFailed, match="after 3 attempts") as failure:
            model.chat(QUESTION)
        requests = server.requests
    assert (failure.value.reason, failure.value.attempts, requests) == ("transport", 3, 4)


def test_a_server_that_drops_its_first_connection_is_unreachable_at_the_start():
    with FakeOpenAI(faults=always("reset")) as server:
        with pytest.raises(ServiceUnavailable, match="no OpenAI-compatible server is reachable") as failure:
            openai(server).chat(QUESTION)
    assert not isinstance(failure.value, ModelCallFailed)


def test_ollama_gone_after_answering_is_retried_then_a_trial_error():
    server = FakeOllama().start()
    model = OllamaChatModel("tiny", host=server.url, timeout=5.0, retries=1, sleep=no_sleep)
    try:
        assert model.chat(QUESTION).text == "echo: hello"
    finally:
        server.stop()  # every later connection is refused
    with pytest.raises(ModelCallFailed, match="after 2 attempts") as failure:
        model.chat(QUESTION)
    assert failure.value.reason == "transport"


# -- 2. the time limit bounds the whole call ------------------------------------------------------

def test_a_slow_drip_openai_server_is_cut_at_the_time_limit():
    body_bytes = len(__import__("json").dumps(completion("echo: hello")).encode())
    with FakeOpenAI(faults=always("drip"), drip_seconds=0.05) as server:
        model = openai(server, timeout=1.0, retries=0)
        with pytest.raises(ModelCallFailed, match="timed out") as failure:
            model.chat(QUESTION)
        dripped = server.dripped
    assert failure.value.reason == "timeout"
    # every single read came within 0.05 s; only a limit on the whole call stops it early
    assert dripped < body_bytes


def test_a_slow_drip_ollama_server_is_cut_at_the_time_limit():
    with FakeOllama(fault="drip", fault_paths=("/api/chat",), drip_seconds=0.05) as server:
        model = OllamaChatModel("tiny", host=server.url, timeout=1.0, retries=0, sleep=no_sleep)
        with pytest.raises(ModelCallFailed, match="timed out") as failure:
            model.chat(QUESTION)
        dripped = server.dripped
    assert failure.value.reason == "timeout"
    assert dripped < 120  # the whole reply is longer than 120 bytes


# -- 5. content: null is a malformed reply ------------------------------------------------------

def test_null_content_from_an_openai_server_is_malformed():
    with FakeOpenAI(faults=always("null_content")) as server:
        with pytest.raises(ModelCallFailed, match="malformed response.*content is null") as failure:
            openai(server).chat(QUESTION)
        requests = server.requests
    assert (failure.value.reason, requests) == ("malformed", 1)


def test_null_content_from_ollama_is_malformed():
    with FakeOllama(fault="null_content", fault_paths=("/api/chat",)) as server:
        model = OllamaChatModel("tiny", host=server.url, timeout=5.0, retries=2, sleep=no_sleep)
        with pytest.raises(ModelCallFailed, match="malformed response.*content is null") as failure:
            model.chat(QUESTION)
    assert failure.value.reason == "malformed"


def test_an_empty_answer_is_still_an_answer():
    with FakeOpenAI(reply=lambda body: "") as server:
        assert openai(server).chat(QUESTION).text == ""


# -- 3. the circuit breaker ---------------------------------------------------------------------

def test_the_breaker_trips_on_the_kth_consecutive_failure_and_a_success_resets_it():
    breaker = CircuitBreaker(3)
    breaker.attempt_failed("a")
    breaker.attempt_failed("b")
    breaker.attempt_succeeded()
    breaker.attempt_failed("c")
    breaker.attempt_failed("d")
    with pytest.raises(CircuitOpen, match=r"failed 3 calls in a row \(last: e\)"):
        breaker.attempt_failed("e")
    with pytest.raises(CircuitOpen):
        breaker.before_attempt()


def test_a_breaker_of_zero_never_trips():
    breaker = CircuitBreaker(0)
    for _ in range(100):
        breaker.attempt_failed("x")
    breaker.before_attempt()


def test_the_breaker_stops_a_hung_server_after_k_attempts_across_calls():
    with FakeOpenAI(faults=always("hang")) as server:
        model = openai(server, timeout=0.3, retries=2)
        model.observer = CircuitBreaker(5)
        with pytest.raises(ModelCallFailed, match="timed out after 3 attempts"):
            model.chat(QUESTION)
        with pytest.raises(CircuitOpen, match="failed 5 calls in a row"):
            model.chat(QUESTION)
        with pytest.raises(CircuitOpen):
            model.chat(QUESTION)  # an open breaker sends nothing
        requests = server.requests
    assert requests == 5


# -- the warm-up has the retries of a trial; "unreachable" only for a server that never answered ----

@pytest.mark.parametrize("fault", ["drop", "reset"])
def test_a_warm_up_whose_first_connection_is_lost_is_retried(fault):
    with FakeOpenAI(faults=lambda i: fault if i == 1 else None) as server:
        openai(server).warm_up()
        served = list(server.served)
    assert served == [fault, "ok"]


def test_a_warm_up_after_the_server_answered_that_fails_every_attempt_is_not_called_unreachable():
    with FakeOpenAI(faults=always("drop")) as server:
        model = openai(server)
        model.ensure_available()  # GET /models answers: the server is there
        with pytest.raises(ModelCallFailed) as failure:
            model.warm_up()
        requests = server.requests
    message = str(failure.value)
    assert requests == 3 and failure.value.attempts == 3
    assert "after 3 attempts" in message and "RemoteProtocolError" in message
    assert "reachable" not in message


def test_a_closed_port_is_unreachable_after_every_attempt_and_says_it_never_answered():
    from tests.support.fake_ollama import refused_url

    tries: list[float] = []
    model = OpenAIChatModel(f"{refused_url()}/v1", "m", timeout=5.0, retries=2, sleep=tries.append)
    with pytest.raises(ServiceUnavailable, match="no OpenAI-compatible server is reachable") as failure:
        model.ensure_available()
    assert not isinstance(failure.value, ModelCallFailed)
    assert "never answered; 3 attempt(s), last: ConnectError" in str(failure.value)
    assert tries == [0.5, 1.0]  # the retries of any call, with their backoff


def test_ensure_available_asks_the_models_list_and_sends_no_generation():
    with FakeOpenAI() as server:
        openai(server).ensure_available()
        gets, posts = server.gets, server.requests
    assert (gets, posts) == (1, 0)


def test_ollama_first_connection_refused_is_retried_then_unreachable():
    from tests.support.fake_ollama import refused_url

    tries: list[float] = []
    model = OllamaChatModel("tiny", host=refused_url(), timeout=5.0, retries=2, sleep=tries.append)
    with pytest.raises(ServiceUnavailable, match="Ollama is not reachable") as failure:
        model.chat(QUESTION)
    assert not isinstance(failure.value, ModelCallFailed)
    assert tries == [0.5, 1.0]
