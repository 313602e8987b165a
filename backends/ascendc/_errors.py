"""Typed errors of the Ascend C backend: each carries a `kind` the executor can
store and a message written for the LLM that wrote the kernel."""

from __future__ import annotations

# Kinds a launch on the CPU model can fail with (AscendCRuntimeError.kind).
RUNTIME_KINDS = (
    "ub_overflow",  # InitBuffer calls ask for more than 196,608 bytes of UB per core
    "datacopy_align",  # DataCopy length not a multiple of 32 bytes
    "ub_align",  # a vector/copy operand that does not start on a 32-byte UB boundary
    "queue_empty",  # DeQue with nothing enqueued (a forgotten EnQue)
    "queue_depth",  # AllocTensor with every buffer of the queue in use (a missing FreeTensor)
    "queue_misuse",  # other queue protocol errors (double EnQue, FreeTensor of a foreign tensor...)
    "use_after_free",  # a LocalTensor used after FreeTensor
    "gm_out_of_bounds",
    "ub_out_of_bounds",
    "sync_deadlock",  # WaitFlag without a SetFlag, or every core of a launch waiting on another
    "l1_overflow", "l0a_overflow", "l0b_overflow", "l0c_overflow", "bt_overflow",  # cube buffers over capacity
    "wrong_position",  # a tensor in the wrong buffer for the call (Mmad from A1, Add on CO1, DataCopy into L0A...)
    "cube_align",  # an L0A/L0B/L0C/L1 operand off its alignment (512 bytes for L0A/L0B)
    "buffer_out_of_bounds",  # past the end of an L1/L0 tensor
    "core_type",  # cube code on a vector core or the other way round (a MIX kernel without ASCEND_IS_AIC/AIV)
    "cross_core_race",  # GM written by one core and read (or overwritten) by another without synchronisation
    "matmul_misuse",  # the Matmul API out of order or with a tiling that breaks its rules
    "invalid_argument",  # a mask, repeat count or calCount the hardware rejects
    "bad_argument",  # the Python call does not match the entry (wrong tensors, scalars, block_dim)
    "runtime_error",  # any other C++ exception inside the model
)

# Kinds of AscendCCompileError.
COMPILE_KINDS = ("unknown_api", "compile_error", "unsupported_signature", "toolchain_missing")


class AscendCError(Exception):
    """Base class; `kind` names the failure, `message` explains it."""

    kind: str = "error"

    def __init__(self, message: str, *, kind: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"


class AscendCCompileError(AscendCError):
    """The kernel source did not build. `unknown_names` lists the identifiers that
    look like Ascend C APIs the model does not have (kind 'unknown_api')."""

    kind = "compile_error"

    def __init__(
        self,
        message: str,
        *,
        kind: str | None = None,
        unknown_names: tuple[str, ...] = (),
        log: str = "",
    ) -> None:
        super().__init__(message, kind=kind)
        self.unknown_names = unknown_names
        self.log = log  # the raw compiler output


class AscendCRuntimeError(AscendCError):
    """A launch broke a rule of the hardware (see RUNTIME_KINDS)."""

    kind = "runtime_error"
