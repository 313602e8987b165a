"""bfloat16 in Triton's CPU interpreter, computed as the GPU computes it.

NumPy has no bfloat16, so the interpreter keeps bf16 values as their raw 16
bits (uint16) and then computes on the bits: `tl.dot` of two bf16 tiles
multiplies integers, `x + y` adds them, a sum or a max reduces them as
integers, and `.to(tl.bfloat16)` truncates where the GPU rounds to nearest
even (Triton 3.6 to 3.9; fp16 has a NumPy type and is right). A bf16 run of
an honest kernel was then wrong on the CPU, by up to 1e35.

`install()` wraps the interpreter's few choke points so that bf16 operands
are widened to fp32 (exactly), computed on, and rounded back to bf16 (nearest
even) wherever the GPU's result is bf16: elementwise arithmetic and math
(each op rounds, as bf16 arithmetic does), fused multiply-adds, casts, the
operands of `tl.dot` (bf16 products are exact in fp32; the accumulator keeps
its own dtype), and the sum, min/max and cumulative reductions. Values stay
stored as bits, so loads, stores, bitcasts and selects are untouched. What
is left different from a GPU: a tl.sum over bf16 values adds in fp32 and
rounds once (the GPU's tree rounds each step; a loop that accumulates
`acc += x` in bf16 rounds each step here too), and atomics on bf16 memory are
not covered. Nothing here runs on a GPU: only the interpreter's classes change.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

_BUILDER_ELEMENTWISE = ("binary_op", "unary_op", "ternary_op", "create_fma", "create_erf", "create_rsqrt")
_installed: list[bool] = []


def to_float32(bits: Any) -> np.ndarray:
    """bf16 values kept as uint16 bits, as float32 values (exact)."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def to_bits(values: Any) -> np.ndarray:
    """float32 values rounded to bf16 (nearest even; NaN stays NaN), as uint16 bits."""
    f32 = np.asarray(values, dtype=np.float32)
    bits = f32.view(np.uint32)
    with np.errstate(over="ignore"):
        rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))
    return np.where(np.isnan(f32), np.uint16(0x7FC0), rounded.astype(np.uint16))


def install() -> bool:
    """Patch the interpreter once per process; False where this Triton has no interpreter of that shape."""
    if _installed:
        return _installed[0]
    try:
        import triton.language as tl
        from triton.runtime import interpreter
    except ImportError:
        _installed.append(False)
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    handle_type = getattr(interpreter, "TensorHandle", None)
    needed = (*_BUILDER_ELEMENTWISE, "create_dot", "cast_impl")
    if builder is None or handle_type is None or not all(hasattr(builder, name) for name in needed):
        _installed.append(False)
        return False
    _Patch(tl, handle_type).apply(builder, interpreter)
    _installed.append(True)
    return True


class _Patch:
    def __init__(self, tl: Any, handle_type: type):
        self.tl = tl
        self.Handle = handle_type

    def is_bf16(self, value: Any) -> bool:
        return isinstance(value, self.Handle) and value.dtype.scalar == self.tl.bfloat16

    def widened(self, handle: Any) -> Any:
        return self.Handle(to_float32(handle.data), self.tl.float32)

    def rounded(self, handle: Any) -> Any:
        return self.Handle(to_bits(handle.data), self.tl.bfloat16)

    def elementwise(self, original: Callable) -> Callable:
        """An op on same-typed operands: bf16 ones computed in fp32, a floating result rounded back to bf16."""
        patch = self

        @functools.wraps(original)
        def run(builder: Any, *args: Any, **kwargs: Any) -> Any:
            if not any(patch.is_bf16(a) for a in args):
                return original(builder, *args, **kwargs)
            out = original(builder, *[patch.widened(a) if patch.is_bf16(a) else a for a in args], **kwargs)
            # a comparison's handle keeps the operands' dtype over boolean data: only float data is a value
            if isinstance(out, patch.Handle) and np.asarray(out.data).dtype == np.float32:
                return patch.rounded(out)
            return out

        return run

    def dot(self, original: Callable) -> Callable:
        patch = self

        @functools.wraps(original)
        def run(builder: Any, a: Any, b: Any, d: Any, *args: Any, **kwargs: Any) -> Any:
            if not (patch.is_bf16(a) or patch.is_bf16(b) or patch.is_bf16(d)):
                return original(builder, a, b, d, *args, **kwargs)
            a, b = (patch.widened(x) if patch.is_bf16(x) else x for x in (a, b))
            if patch.is_bf16(d):  # a bf16 accumulator: the sum rounded to bf16
                return patch.rounded(original(builder, a, b, patch.widened(d), *args, **kwargs))
            return original(builder, a, b, d, *args, **kwargs)

        return run

    def cast(self, original: Callable) -> Callable:
        patch = self

        @functools.wraps(original)
        def run(builder: Any, src: Any, dst_type: Any) -> Any:
            into = dst_type.scalar
            if patch.is_bf16(src) and into != patch.tl.bfloat16:
                return original(builder, patch.widened(src), dst_type)
            if into == patch.tl.bfloat16 and not patch.is_bf16(src):
                return patch.Handle(to_bits(np.asarray(src.data).astype(np.float32)), patch.tl.bfloat16)
            return original(builder, src, dst_type)

        return run

    def reduction(self, original: Callable) -> Callable:
        """ReduceOps.sum / min_max and ScanOps.cumsum / cumprod: on the widened values, the values rounded back."""
        patch = self

        @functools.wraps(original)
        def run(ops: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            first = input[0] if isinstance(input, tuple) else input
            if not patch.is_bf16(getattr(first, "handle", None)):
                return original(ops, input, *args, **kwargs)
            wide = patch.tensor(first, patch.Handle(to_float32(first.handle.data), patch.tl.float32))
            out = original(ops, (wide, *input[1:]) if isinstance(input, tuple) else wide, *args, **kwargs)
            return patch.narrowed(out)

        return run

    def tensor(self, like: Any, handle: Any) -> Any:
        """A tl tensor of `like`'s shape (block or scalar) over `handle`, typed by the handle's dtype."""
        dtype = handle.dtype.scalar
        kind = self.tl.block_type(dtype, list(like.shape)) if like.type.is_block() else dtype
        return self.tl.core.tensor(handle, kind)

    def narrowed(self, out: Any) -> Any:
        """fp32 tensors among a reduction's results (one, or a tuple or list) rounded back to bf16."""
        if isinstance(out, (tuple, list)):
            return type(out)(self.narrowed(o) for o in out)
        handle = getattr(out, "handle", None)
        if isinstance(handle, self.Handle) and np.asarray(handle.data).dtype == np.float32:
            return self.tensor(out, self.Handle(to_bits(handle.data), self.tl.bfloat16))
        return out

    def apply(self, builder: type, interpreter: Any) -> None:
        for name in _BUILDER_ELEMENTWISE:
            setattr(builder, name, self.elementwise(getattr(builder, name)))
        builder.create_dot = self.dot(builder.create_dot)
        builder.cast_impl = self.cast(builder.cast_impl)
        # the casts are bound as lambdas calling self.cast_impl, so they see the patched one
        for cls, names in ((getattr(interpreter, "ReduceOps", None), ("sum", "min_max")),
                           (getattr(interpreter, "ScanOps", None), ("cumsum", "cumprod"))):
            for name in names:
                if cls is not None and hasattr(cls, name):
                    setattr(cls, name, self.reduction(getattr(cls, name)))


__all__ = ["install", "to_bits", "to_float32"]
