"""The redaction rules, hand-checked; and the cache key's use of them."""

from __future__ import annotations

import pytest

from ragqual.core.cachekey import response_cache_key
from ragqual.core.hashing import hash_value
from ragqual.core.redact import redact_argv, redact_text, redact_value, secret_digest


@pytest.mark.parametrize(("text", "expected"), [
    ("openai:http://alice:pw@host/v1#m", "openai:http://***@host/v1#m"),
    ("http://bob:pw@127.0.0.1:11434", "http://***@127.0.0.1:11434"),
    ("postgresql+psycopg://u:p%40ss@db:5432/eval", "postgresql+psycopg://***@db:5432/eval"),
    ("https://TOKEN@github.com/x.git", "https://***@github.com/x.git"),
    ("unreachable at http://a:b@h/v1: start it", "unreachable at http://***@h/v1: start it"),
    ("sqlite:////tmp/a@b.db", "sqlite:////tmp/a@b.db"),
    ("mail me at someone@example.com", "mail me at someone@example.com"),
    ("http://host/v1#m", "http://host/v1#m"),
])
def test_url_userinfo_is_masked(text, expected):
    assert redact_text(text) == expected


def test_argv_options_env_assignments_and_urls():
    argv = ["ragqual", "--db", "postgresql://u:pw@h/db", "run", "--model", "openai:http://alice:pw@h/v1#m",
            "--api-key", "sk-live-1", "--token=abc", "OPENAI_API_KEY=sk-2", "--chunk-tokens", "256",
            "--client-secret", "--verbose"]
    assert redact_argv(argv) == [
        "ragqual", "--db", "postgresql://***@h/db", "run", "--model", "openai:http://***@h/v1#m",
        "--api-key", "***", "--token=***", "OPENAI_API_KEY=***", "--chunk-tokens", "256",
        "--client-secret", "--verbose"]


def test_values_named_like_credentials_are_masked_but_numbers_are_not():
    params = {"api_key": "sk", "QDRANT_API_KEY": "q", "password": "", "chars_per_token": 4, "max_tokens": "64",
              "host": "http://a:b@h", "variants": [{"model": "openai:http://a:b@h#m", "auth_token": "t"}]}
    assert redact_value(params) == {
        "api_key": "***", "QDRANT_API_KEY": "***", "password": "", "chars_per_token": 4, "max_tokens": "64",
        "host": "http://***@h", "variants": [{"model": "openai:http://***@h#m", "auth_token": "***"}]}


def test_secret_digest_changes_with_the_secret_and_is_absent_without_one():
    assert secret_digest("openai:http://h/v1#m") is None
    one, two = secret_digest("openai:http://a:pw1@h/v1#m"), secret_digest("openai:http://a:pw2@h/v1#m")
    assert one and two and one != two and "pw1" not in one


def _key(model: str) -> str:
    return response_cache_key(provider="openai", model=model, digest=None, request_material={"m": 1}, repeat_index=0)


def test_cache_key_changes_with_the_endpoint_and_the_secret_without_holding_it():
    assert len({_key("http://a:pw1@h/v1#m"), _key("http://a:pw2@h/v1#m"), _key("http://h/v1#m"),
                _key("http://a:pw1@other/v1#m")}) == 4


def test_cache_key_of_a_name_without_credentials_is_unchanged():
    """Existing caches stay valid: the material of a plain name is what it always was."""
    expected = hash_value({"v": 1, "provider": "openai", "model": "http://h/v1#m", "digest": None,
                           "request": {"m": 1}, "repeat": 0})
    assert _key("http://h/v1#m") == expected


# -- the values of the credentials ragqual holds ---------------------------------------------------

@pytest.fixture
def registry():
    from ragqual.core.redact import forget_secrets

    forget_secrets()
    yield
    forget_secrets()


def test_a_registered_value_is_masked_under_any_name_or_none(registry):
    from ragqual.core.redact import redact_known, remember_bearer

    remember_bearer("sk-live-abcdef123")
    echoed = 'HTTP 500: {"headers": {"Authorization": "Bearer sk-live-abcdef123"}}'
    assert redact_text(echoed) == 'HTTP 500: {"headers": {"Authorization": "Bearer ***"}}'
    assert redact_value({"note": "key sk-live-abcdef123 seen", "n": 3}) == {"note": "key *** seen", "n": 3}
    assert redact_known({"choices": [{"message": {"content": "it was sk-live-abcdef123"}}], "usage": {
        "completion_tokens_details": {"reasoning_tokens": 0}}}) == {
        "choices": [{"message": {"content": "it was ***"}}], "usage": {"completion_tokens_details": {
            "reasoning_tokens": 0}}}  # only the value: names and numbers of a raw output stay
    assert redact_argv(["ragqual", "--note", "sk-live-abcdef123"]) == ["ragqual", "--note", "***"]


def test_values_shorter_than_the_minimum_are_not_registered(registry):
    from ragqual.core.redact import MIN_SECRET_CHARS, known_secret_count, remember_secret

    remember_secret("pw")
    remember_secret("12345")
    remember_secret("ragqual")  # a test server's password that is also the program's name
    remember_secret("")
    remember_secret(None)
    assert MIN_SECRET_CHARS == 8 and known_secret_count() == 0
    assert redact_text("the pw field holds 12345") == "the pw field holds 12345"
    assert redact_text("ragqual: error: run `ragqual verify`") == "ragqual: error: run `ragqual verify`"


def test_a_url_password_is_registered_raw_decoded_and_as_the_basic_header(registry):
    import base64

    from ragqual.core.redact import remember_url_secrets

    remember_url_secrets("postgresql://alice:p%40ssw0rd!@db:5432/eval")
    basic = base64.b64encode(b"alice:p@ssw0rd!").decode()
    assert redact_text(f"auth: Basic {basic}") == "auth: Basic ***"
    assert redact_text("was p@ssw0rd! or p%40ssw0rd!") == "was *** or ***"
    assert redact_text("alice is a user name") == "alice is a user name"


def test_the_longest_value_is_masked_first_and_the_cache_key_ignores_the_registry(registry):
    from ragqual.core.redact import remember_secret

    before = _key("http://h/v1#model-secret-name")
    remember_secret("secret-token")
    remember_secret("secret-token-longer")
    assert redact_text("a secret-token-longer b secret-token") == "a *** b ***"
    remember_secret("model-secret-name")
    assert _key("http://h/v1#model-secret-name") == before
