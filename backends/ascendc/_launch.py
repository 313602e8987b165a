"""Launch a built kernel on the CPU model: check and convert the Python
arguments, run every block, turn hazards into AscendCRuntimeError, estimate the
cost and tell the launch hook."""

from __future__ import annotations

import contextlib
import ctypes
import re
import struct
import threading
from typing import Any, Callable, ContextManager

from ._cost import estimate_cost, parse_stats
from ._errors import AscendCRuntimeError
from ._signature import INT_RANGES, SCALAR_TYPES, Entry

MAX_BLOCK_DIM = 65535

LaunchHook = Callable[..., None]

_hook: LaunchHook | None = None
_around: Callable[[], ContextManager[Any]] | None = None
_launch_lock = threading.Lock()  # the model's per-library state is global


def set_launch_hook(fn: LaunchHook | None, *, around: Callable[[], ContextManager[Any]] | None = None) -> None:
    """Call `fn(kind="ascendc", name=entry, block_dim=N, cost=dict)` after every
    successful launch; `around()`, when given, is a context manager entered for
    the duration of each launch. Pass None to remove both."""
    global _hook, _around
    _hook = fn
    _around = around


def get_launch_hook() -> LaunchHook | None:
    return _hook


def _bad(message: str) -> AscendCRuntimeError:
    return AscendCRuntimeError(message, kind="bad_argument")


def _scalar(value: Any, scalar: str, pname: str, entry: str) -> Any:
    ctype, pykind, _ = SCALAR_TYPES[scalar]
    if not isinstance(value, (bool, int, float)) and hasattr(value, "item"):
        value = value.item()  # numpy scalars and one-element tensors
    if pykind in ("int", "bool"):
        if isinstance(value, bool) and pykind == "int":
            value = int(value)
        if not isinstance(value, int):
            raise _bad(f"{entry}: parameter '{pname}' is {scalar}; got {type(value).__name__} {value!r}")
        lo, hi = INT_RANGES.get(scalar, (0, 1))
        if not lo <= value <= hi:
            raise _bad(f"{entry}: {value} does not fit parameter '{pname}' of type {scalar} ({lo}..{hi})")
        return ctype(value)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise _bad(f"{entry}: parameter '{pname}' is {scalar}; got {type(value).__name__} {value!r}")
    if pykind == "half":
        return ctype(struct.unpack("<H", struct.pack("<e", float(value)))[0])
    if pykind == "bfloat16":
        bits = struct.unpack("<I", struct.pack("<f", float(value)))[0]
        return ctype(((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF)
    return ctype(float(value))


class KernelLauncher:
    """`ops.NAME(*tensors_and_scalars, block_dim=N)` for one kernel entry."""

    def __init__(self, library: ctypes.CDLL, entry: Entry, owner: Any, source: str = "") -> None:
        self.entry = entry
        self._owner = owner
        self._source_lines = source.splitlines()
        self._fn = getattr(library, f"evk_launch_{entry.name}")
        argtypes: list[Any] = [ctypes.c_int64]
        for p in entry.params:
            argtypes += [ctypes.c_void_p, ctypes.c_uint64] if p.is_tensor else [SCALAR_TYPES[p.scalar][0]]
        self._fn.argtypes = argtypes
        self._fn.restype = ctypes.c_int
        for name in ("evk_error_kind", "evk_error_message", "evk_stats"):
            getattr(library, name).restype = ctypes.c_char_p
        self._library = library
        self.last_cost: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"<Ascend C kernel {self.entry.describe()} on the CPU model>"

    def _quote_line(self, message: str) -> str:
        """'line 25: ...' -> 'line 25 `DataCopy(a, xGm[off], cnt);`: ...' (line numbers
        count from the first line of the kernel source string)."""
        m = re.search(r"\bline (\d+): ", message)
        if not m or not 0 < int(m.group(1)) <= len(self._source_lines):
            return message
        code = re.sub(r"\s*//.*$", "", self._source_lines[int(m.group(1)) - 1]).strip()
        return f"{message[:m.end() - 2]} `{code}`{message[m.end() - 2:]}" if code else message

    def _convert(self, args: tuple[Any, ...]) -> list[Any]:
        entry = self.entry
        if len(args) != len(entry.params):
            raise _bad(f"{entry.name} takes {len(entry.params)} arguments ({entry.describe()}); got {len(args)}")
        out: list[Any] = []
        for i, (p, value) in enumerate(zip(entry.params, args)):
            if p.is_tensor:
                if not hasattr(value, "data_ptr"):
                    raise _bad(f"{entry.name}: argument {i} '{p.name}' is a GM tensor ({p.ctype}); "
                               f"got {type(value).__name__}")
                if value.device.type != "cpu":
                    raise _bad(f"{entry.name}: argument {i} '{p.name}' is on {value.device}; the CPU model "
                               "takes CPU tensors")
                if not value.is_contiguous():
                    raise _bad(f"{entry.name}: argument {i} '{p.name}' is not contiguous; call .contiguous() "
                               "before the launch (the kernel indexes GM as a flat array)")
                out += [ctypes.c_void_p(value.data_ptr()), ctypes.c_uint64(value.numel() * value.element_size())]
            else:
                if hasattr(value, "data_ptr") and value.numel() != 1:
                    raise _bad(f"{entry.name}: argument {i} '{p.name}' is a scalar {p.scalar}; got a tensor")
                out.append(_scalar(value, p.scalar, p.name, entry.name))
        return out

    def __call__(self, *args: Any, block_dim: int) -> None:
        if isinstance(block_dim, bool) or not isinstance(block_dim, int) or not 1 <= block_dim <= MAX_BLOCK_DIM:
            raise _bad(f"{self.entry.name}: block_dim must be an int in 1..{MAX_BLOCK_DIM}; got {block_dim!r}")
        converted = self._convert(args)
        around = _around() if _around is not None else contextlib.nullcontext()
        with around, _launch_lock:
            rc = self._fn(ctypes.c_int64(block_dim), *converted)
            if rc != 0:
                kind = self._library.evk_error_kind().decode(errors="replace") or "runtime_error"
                message = self._quote_line(self._library.evk_error_message().decode(errors="replace"))
                raise AscendCRuntimeError(f"{self.entry.name}: {message}", kind=kind)
            stats = self._library.evk_stats().decode()
            cost = estimate_cost(parse_stats(stats))
            self.last_cost = cost
            self._owner.last_cost = cost
            if _hook is not None:
                _hook(kind="ascendc", name=self.entry.name, block_dim=block_dim, cost=cost)
