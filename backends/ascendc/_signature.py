"""Parse the C signature of a kernel entry, so Python arguments can be turned
into GM pointers and scalars of the right C type."""

from __future__ import annotations

import ctypes
import dataclasses
import re

from ._errors import AscendCCompileError

# C scalar type -> (ctypes type, Python kind, wrapper parameter type)
SCALAR_TYPES: dict[str, tuple[type, str, str]] = {
    "bool": (ctypes.c_bool, "bool", "bool"),
    "int8_t": (ctypes.c_int8, "int", "int8_t"),
    "uint8_t": (ctypes.c_uint8, "int", "uint8_t"),
    "int16_t": (ctypes.c_int16, "int", "int16_t"),
    "uint16_t": (ctypes.c_uint16, "int", "uint16_t"),
    "int32_t": (ctypes.c_int32, "int", "int32_t"),
    "uint32_t": (ctypes.c_uint32, "int", "uint32_t"),
    "int64_t": (ctypes.c_int64, "int", "int64_t"),
    "uint64_t": (ctypes.c_uint64, "int", "uint64_t"),
    "int": (ctypes.c_int, "int", "int"),
    "unsigned": (ctypes.c_uint, "int", "unsigned"),
    "unsigned int": (ctypes.c_uint, "int", "unsigned"),
    "size_t": (ctypes.c_size_t, "int", "size_t"),
    "float": (ctypes.c_float, "float", "float"),
    "double": (ctypes.c_double, "float", "double"),
    # 16-bit floats travel as their bit pattern and are rebuilt in C
    "half": (ctypes.c_uint16, "half", "uint16_t"),
    "bfloat16_t": (ctypes.c_uint16, "bfloat16", "uint16_t"),
}

INT_RANGES = {
    "int8_t": (-(2**7), 2**7 - 1), "uint8_t": (0, 2**8 - 1),
    "int16_t": (-(2**15), 2**15 - 1), "uint16_t": (0, 2**16 - 1),
    "int32_t": (-(2**31), 2**31 - 1), "uint32_t": (0, 2**32 - 1),
    "int": (-(2**31), 2**31 - 1), "unsigned": (0, 2**32 - 1), "unsigned int": (0, 2**32 - 1),
    "int64_t": (-(2**63), 2**63 - 1), "uint64_t": (0, 2**64 - 1), "size_t": (0, 2**64 - 1),
}

_QUALIFIERS = re.compile(r"\b(const|volatile|__gm__|__restrict__|__restrict|restrict)\b")


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    ctype: str  # the C type as written, qualifiers included ("GM_ADDR", "__gm__ half*", "uint32_t")
    is_tensor: bool
    scalar: str = ""  # normalised scalar type ("uint32_t"); empty for tensors


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    params: tuple[Param, ...]

    def describe(self) -> str:
        return f"{self.name}({', '.join(f'{p.ctype} {p.name}' for p in self.params)})"


def strip_comments(source: str) -> str:
    source = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), source, flags=re.S)
    return re.sub(r"//[^\n]*", "", source)


def _parse_param(text: str, entry: str, position: int) -> Param:
    text = " ".join(text.split())
    m = re.match(r"^(.*?)([A-Za-z_]\w*)\s*$", text)
    if not m or not m.group(1).strip():
        raise AscendCCompileError(
            f"cannot read parameter {position} '{text}' of kernel entry {entry}: write 'TYPE name'",
            kind="unsupported_signature",
        )
    ctype, name = m.group(1).strip(), m.group(2)
    bare = " ".join(_QUALIFIERS.sub(" ", ctype).split())
    if bare == "GM_ADDR" or bare.endswith("*"):
        return Param(name, ctype, True)
    bare = bare.replace("AscendC::", "")
    if bare not in SCALAR_TYPES:
        raise AscendCCompileError(
            f"parameter '{text}' of kernel entry {entry}: the launcher passes only GM_ADDR (or __gm__ T*) "
            f"tensors and scalars of type {', '.join(sorted(SCALAR_TYPES))}; pass tiling values as separate "
            "scalar parameters",
            kind="unsupported_signature",
        )
    return Param(name, ctype, False, bare)


# Kernel types (the values kernel_operator.h's KERNEL_TYPE_* macros and the launch wrapper use).
KERNEL_TYPES = {"KERNEL_TYPE_AIV_ONLY": 0, "KERNEL_TYPE_AIC_ONLY": 1, "KERNEL_TYPE_MIX_AIC_1_2": 2,
                "KERNEL_TYPE_MIX_AIC_1_1": 3, "KERNEL_TYPE_MIX_AIV_1_0": 4, "KERNEL_TYPE_MIX_AIC_1_0": 5}
KERNEL_TYPE_NAMES = {v: k for k, v in KERNEL_TYPES.items()}
_CUBE = re.compile(r"\b(?:Mmad|LoadData|LoadDataWithTranspose|Fixpipe|Nd2NzParams)\b|"
                   r"\b(?:TPosition|QuePosition)::(?:A1|A2|B1|B2|C1|C2|CO1|TSCM)\b")
_MATMUL_API = re.compile(r"\bREGIST_MATMUL_OBJ\b|\bMatmul\s*<")
_VECTOR = re.compile(r"\b(?:TPosition|QuePosition)::VEC(?:IN|OUT|CALC)\b|\bTBuf\s*<\s*>|\bTBuf\s+\w")


def kernel_type(source: str) -> int:
    """Which cores a launch of this source occupies, as the NPU compiler decides it:
    an explicit KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_...) wins; otherwise cube
    work (Mmad, LoadData, Fixpipe, A1/B1/A2/B2/CO1 queues) with vector work is a
    MIX kernel (one AIC and two AIVs per block), cube work alone an AIC-only
    kernel, and the Matmul API a MIX kernel unless ASCENDC_CUBE_ONLY is defined."""
    clean = strip_comments(source)
    explicit = re.search(r"KERNEL_TASK_TYPE_DEFAULT\s*\(\s*(KERNEL_TYPE_\w+)\s*\)", clean)
    if explicit and explicit.group(1) in KERNEL_TYPES:
        return KERNEL_TYPES[explicit.group(1)]
    if _MATMUL_API.search(clean):
        return KERNEL_TYPES["KERNEL_TYPE_AIC_ONLY" if re.search(r"#\s*define\s+ASCENDC_CUBE_ONLY\b", clean)
                            else "KERNEL_TYPE_MIX_AIC_1_2"]
    cube, vector = bool(_CUBE.search(clean)), bool(_VECTOR.search(clean))
    if cube and vector:
        return KERNEL_TYPES["KERNEL_TYPE_MIX_AIC_1_2"]
    return KERNEL_TYPES["KERNEL_TYPE_AIC_ONLY" if cube else "KERNEL_TYPE_AIV_ONLY"]


def parse_entries(source: str, functions: list[str] | tuple[str, ...]) -> dict[str, Entry]:
    """Find each named `__global__ __aicore__ void NAME(...)` definition in the source."""
    clean = strip_comments(source)
    entries: dict[str, Entry] = {}
    for fn in functions:
        if not re.fullmatch(r"[A-Za-z_]\w*", fn):
            raise AscendCCompileError(f"'{fn}' is not a C identifier", kind="unsupported_signature")
        found = list(re.finditer(rf"\bvoid\s+{fn}\s*\(([^)]*)\)\s*\{{", clean))
        if not found:
            raise AscendCCompileError(
                f"kernel entry '{fn}' not found: the source needs a definition "
                f'extern "C" __global__ __aicore__ void {fn}(GM_ADDR x, ..., uint32_t n) {{ ... }}',
                kind="unsupported_signature",
            )
        head = clean[max(0, found[0].start() - 200) : found[0].start()]
        if "__aicore__" not in head.split(";")[-1].split("}")[-1]:
            raise AscendCCompileError(
                f"kernel entry '{fn}' must be declared 'extern \"C\" __global__ __aicore__ void {fn}(...)'",
                kind="unsupported_signature",
            )
        raw = found[0].group(1).strip()
        parts = [] if raw in ("", "void") else [p for p in raw.split(",")]
        entries[fn] = Entry(fn, tuple(_parse_param(p, fn, i) for i, p in enumerate(parts)))
    return entries
