import pytest

from ragqual.adapters.retry import Retryable, with_retries
from ragqual.errors import ModelCallFailed


def _gave_up(failure, attempts):
    return ModelCallFailed(f"{failure.reason} after {attempts}", reason=failure.reason, attempts=attempts)


def test_backoff_doubles_then_gives_up_with_the_last_failure():
    waits = []

    def always_fails():
        raise Retryable("timeout", "ReadTimeout")

    with pytest.raises(ModelCallFailed, match="timeout after 3") as err:
        with_retries(always_fails, retries=2, backoff=0.5, sleep=waits.append, gave_up=_gave_up)
    assert waits == [0.5, 1.0] and err.value.attempts == 3


def test_a_later_success_is_returned_and_other_errors_pass_through():
    calls = iter([Retryable("server_error", "500"), "ok"])

    def flaky():
        item = next(calls)
        if isinstance(item, Exception):
            raise item
        return item

    assert with_retries(flaky, retries=1, backoff=0.1, sleep=lambda s: None, gave_up=_gave_up) == "ok"
    with pytest.raises(KeyError):
        with_retries(lambda: {}["x"], retries=3, backoff=0.1, sleep=lambda s: None, gave_up=_gave_up)
