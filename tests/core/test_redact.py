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
