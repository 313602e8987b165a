"""Ascend C API notes as memory items: seeded once into a bank, found again by
exact name (the names in the last verifier message and in the code a step
sees) and by category.

Notes are reference material, not experiences: they are not value-selected
(values learn which experiences help; a reference is not an experience), so the loop gives them to a step beside its retrieved
memories and does not credit them with rewards.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ._notes_text import NOTES

__all__ = ["ApiNote", "API_NOTES", "CATEGORIES", "BACKEND", "api_names_in", "seed_api_notes", "note_names"]

BACKEND = "ascendc"
TASK_KEY = "_api/ascendc"  # notes belong to no task; the store wants a non-empty key


@dataclass(frozen=True)
class ApiNote:
    name: str  # the exact name `api_notes_by_name` matches (an API, a member or an error kind)
    category: str  # concept, types, memory, copy, vector, reduce, cast, sync, core, debug, constants
    summary: str
    body: str

    @property
    def key_text(self) -> str:
        return f"{self.name}: {self.summary} (Ascend C {self.category})"

    @property
    def content(self) -> str:
        return f"{self.name}: {self.summary}\n{self.body}"


API_NOTES: tuple[ApiNote, ...] = tuple(ApiNote(*entry) for entry in NOTES)
CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(n.category for n in API_NOTES))
_BY_NAME = {n.name: n for n in API_NOTES}
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def note_names() -> frozenset[str]:
    return frozenset(_BY_NAME)


def api_names_in(text: str | None, *, limit: int = 64) -> list[str]:
    """Names of notes that occur in `text`, in order of first occurrence.

    Catches `AscendC::Relu`, `TQue::DeQue`, `[ub_overflow]` and plain calls
    alike, since every identifier of the text is checked against the notes."""
    if not text:
        return []
    found: dict[str, None] = {}
    for match in _IDENT.finditer(text):
        word = match.group(0)
        if word in _BY_NAME and word not in found:
            found[word] = None
            if len(found) >= limit:
                break
    return list(found)


def seed_api_notes(store: Any) -> int:
    """Write every note the bank lacks as an `api_note` item of the ascendc
    backend; returns how many were added (0 when all are there already)."""
    present = {item.name for item in store.api_notes_by_name([n.name for n in API_NOTES], BACKEND)}
    missing = [n for n in API_NOTES if n.name not in present]
    if not missing:
        return 0
    store.add_items([
        dict(kind="api_note", task_key=TASK_KEY, backend=BACKEND, key_text=n.key_text, content=n.content, name=n.name,
             category=n.category, extra={"source": "evokernel.ascendc notes (own words)"})
        for n in missing
    ])
    return len(missing)
