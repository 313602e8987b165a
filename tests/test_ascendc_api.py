"""The public surface of backends.ascendc and the promises its header makes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import backends.ascendc as ascendc
from backends.ascendc import API_NAMES, KNOWN_UNMODELLED, MEMBER_NAMES
from backends.ascendc._api import nearest, unknown_api_message
from backends.ascendc._signature import parse_entries

PACKAGE = Path(ascendc.__file__).parent
HEADERS = "\n".join(p.read_text() for p in sorted((PACKAGE / "include").rglob("*.h")))


def test_every_api_name_is_defined_by_the_header():
    missing = [name for name in API_NAMES if not re.search(rf"\b{re.escape(name)}\b", HEADERS)]
    assert missing == []
    for members in MEMBER_NAMES.values():
        assert [m for m in members if not re.search(rf"\b{m}\b", HEADERS)] == []


def test_unmodelled_names_are_really_absent():
    assert [n for n in KNOWN_UNMODELLED if re.search(rf"\b{n}\s*\(", HEADERS)] == []
    assert not set(KNOWN_UNMODELLED) & set(API_NAMES)


def test_exports():
    for name in ("load_inline", "detect_mode", "AscendCCompileError", "AscendCRuntimeError", "set_launch_hook",
                 "estimate_cost", "API_NAMES", "AscendCBackend"):
        assert name in ascendc.__all__ and hasattr(ascendc, name)


def test_backends_package_imports_only_stdlib_torch_numpy():
    allowed_roots = {"torch", "numpy", "torch_npu", "backends"}
    import sys

    stdlib = set(sys.stdlib_module_names)
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                roots = [a.name.split(".")[0] for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = [node.module.split(".")[0]]
            else:
                continue
            for root in roots:
                assert root in stdlib or root in allowed_roots, (path.name, root)
                assert root not in ("evokernel", "memory_store")


def test_suggestions():
    assert nearest("DeQueue", member_of="TQue")[0] == "DeQue"
    assert nearest("ReduceMaximum")[0] == "ReduceMax"
    assert "nearest real ones: Exp" in unknown_api_message("Expp")


def test_signature_parsing():
    src = """
    // extern "C" __global__ __aicore__ void k(int nope) {}
    extern "C" __global__ __aicore__ void k(GM_ADDR x, __gm__ float* y, const uint32_t n,
                                            float alpha, half beta, int64_t big) { }
    """
    (entry,) = parse_entries(src, ["k"]).values()
    assert [(p.name, p.is_tensor, p.scalar) for p in entry.params] == [
        ("x", True, ""), ("y", True, ""), ("n", False, "uint32_t"), ("alpha", False, "float"),
        ("beta", False, "half"), ("big", False, "int64_t")]
