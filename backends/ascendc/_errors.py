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
    "sync_deadlock",  # WaitFlag without a SetFlag
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
