"""The dense-retrieval seam: any object with `embed(texts) -> array` will do.

No embedding model ships with the store; vectors live in `embeddings` as
float32 blobs and cosine similarity is computed in numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into one row vector each: shape (len(texts), dim)."""

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


def embedder_model(embedder: Embedder) -> str:
    """The name vectors are stored under: `embedder.model_id` or its class."""
    name = getattr(embedder, "model_id", None)
    return str(name) if name else f"{type(embedder).__module__}.{type(embedder).__qualname__}"


def to_blob(vector: np.ndarray) -> bytes:
    return np.ascontiguousarray(vector, dtype=np.float32).tobytes()


def from_blob(blob: bytes, dim: int) -> np.ndarray:
    vector = np.frombuffer(blob, dtype=np.float32)
    if vector.shape[0] != dim:
        raise ValueError(f"embedding blob holds {vector.shape[0]} floats, expected {dim}")
    return vector


def embed_checked(embedder: Embedder, texts: Sequence[str]) -> np.ndarray:
    vectors = np.asarray(embedder.embed(list(texts)), dtype=np.float32)
    if vectors.ndim != 2 or vectors.shape[0] != len(texts):
        raise ValueError(
            f"embedder returned shape {vectors.shape}, expected ({len(texts)}, dim)"
        )
    if not np.all(np.isfinite(vectors)):
        raise ValueError("embedder returned non-finite values")
    return vectors


def cosine_top_k(query: np.ndarray, matrix: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and cosines of the k rows of `matrix` closest to `query`, best first."""
    if matrix.shape[0] == 0:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    cos = (matrix @ query) / np.maximum(norms, 1e-12)
    k = min(k, cos.shape[0])
    top = np.argpartition(-cos, k - 1)[:k]
    # Stable order: by cosine, then by row (older item first) on ties.
    order = np.lexsort((top, -cos[top]))
    top = top[order]
    return top, cos[top]
