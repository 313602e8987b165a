"""Compile server for the Triton backend: compiles launched kernels for sm_90.

Runs as a child of the worker with the interpreter off. Reads one JSON request
per line ({"file": candidate path, "specs": [{"name", "args", "kwargs"}]}),
imports the candidate, compiles each recorded specialisation with Triton's own
compiler for an H100/H200 target, and answers with compile errors or the
kernels' resource use (registers, local memory, shared memory).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

LAUNCH_OPTIONS = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug", "launch_cooperative_grid"}


def _unwrap_jit(obj: Any) -> Any:
    from triton.runtime.jit import JITFunction

    for _ in range(5):
        if isinstance(obj, JITFunction) or not hasattr(obj, "fn"):
            break
        obj = obj.fn
    return obj if isinstance(obj, JITFunction) else None


def signature_for(fn: Any, args: list[Any], kwargs: dict[str, Any]) -> tuple[dict, dict, dict]:
    """Triton signature, constexprs and options from a described launch."""
    kwargs = dict(kwargs)
    options = {k: kwargs.pop(k) for k in list(kwargs) if k in LAUNCH_OPTIONS}
    signature: dict[str, str] = {}
    constexprs: dict[str, Any] = {}
    for i, param in enumerate(fn.params):
        if i < len(args):
            value = args[i]
        elif param.name in kwargs:
            value = kwargs[param.name]
        elif param.default is not inspect.Parameter.empty:
            value = param.default
        else:
            raise LookupError(f"launch of {fn.__name__} gave no value for {param.name}")
        if param.is_constexpr or value is None or isinstance(value, str):
            signature[param.name] = "constexpr"
            constexprs[param.name] = value
        elif isinstance(value, dict):
            signature[param.name] = "*" + value["tensor"]
        elif isinstance(value, bool):
            signature[param.name] = "i1"
        elif isinstance(value, int):
            signature[param.name] = "i32" if -(2**31) <= value < 2**31 else "i64"
        elif isinstance(value, float):
            signature[param.name] = "fp32"
    return signature, constexprs, options


def resource_usage(cubin: bytes | None) -> dict[str, Any]:
    """Registers and local memory (spills, stack arrays) from the cuobjdump inside triton."""
    import triton

    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    if not cubin or not tool.exists():
        return {}
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "k.cubin"
        path.write_bytes(cubin)
        try:
            out = subprocess.run([str(tool), "-res-usage", str(path)], capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            return {}
    fields = dict(re.findall(r"(REG|LOCAL):(\d+)", out.stdout))
    return {
        "registers": int(fields["REG"]) if "REG" in fields else None,
        "spills": int(fields["LOCAL"]) if "LOCAL" in fields else None,
    }


def _clean(text: str, limit: int = 1500) -> str:
    text = re.sub(r"\n\s*\n", "\n", text).strip()
    return text if len(text) <= limit else text[:limit] + " ..."


def text_key(fn: Any) -> str | None:
    """`fn`'s Triton cache key as if its definition started on line 0: the same kernel text, with
    the same callees and global constants, gets the same key wherever a candidate has it. Triton
    hashes the starting line into its own key (for line info), so the launch-plan helper every
    generated candidate carries, or a kernel a rule-set variant moved down a few lines, was
    compiled again in full each time: 217 of the 832 kernels one run of the test suite compiled
    differed from an earlier one only so, and each such pair had the same registers, spills,
    shared memory and warps. None where this Triton's JITFunction keeps no line and hash to set
    aside (then every launch compiles, as before)."""
    if not (hasattr(fn, "starting_line_number") and hasattr(fn, "hash") and hasattr(fn, "_hash_lock")):
        return None
    with fn._hash_lock:
        line, kept = fn.starting_line_number, fn.hash
        try:
            fn.starting_line_number, fn.hash = 0, None
            return fn.cache_key
        except Exception:
            return None
        finally:
            fn.starting_line_number, fn.hash = line, kept


def compile_specs(file: str, specs: list[dict[str, Any]], modules: dict[str, Any],
                  compiled: dict[tuple[str, ...], dict[str, Any]] | None = None) -> dict[str, Any]:
    """Compile each launch in `specs` for sm_90. `compiled` (the server's, kept across requests):
    what each kernel text compiled to, by `text_key`, signature, constexprs and options; a kernel
    found there is not compiled again, since only its line differs. Failed compiles are not kept."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    from ._task import import_file

    key = f"{file}:{os.path.getmtime(file)}"
    if key not in modules:
        modules[key] = import_file(Path(file), "evokernel_compilecheck")
    module = modules[key]
    kernels, seen = [], set()
    for spec in specs:
        fn = _unwrap_jit(getattr(module, spec["name"], None))
        if fn is None:
            continue  # not at module level: the interpreter run is all we have
        try:
            signature, constexprs, options = signature_for(fn, spec["args"], spec["kwargs"])
        except LookupError:
            continue  # a malformed launch: the runtime error already says what is wrong
        ident = (spec["name"], repr(sorted(signature.items())), repr(sorted(constexprs.items(), key=str)), repr(options))
        if ident in seen:
            continue
        seen.add(ident)
        text = text_key(fn) if compiled is not None else None
        memo = (text, *ident[1:]) if text is not None else None
        if memo is not None and memo in compiled:
            kernels.append({**compiled[memo], "name": spec["name"]})
            continue
        try:
            binary = triton.compile(
                ASTSource(fn=fn, signature=signature, constexprs=constexprs),
                target=GPUTarget("cuda", 90, 32),
                options=options or None,
            )
        except Exception as exc:
            return {
                "ok": False,
                "message": f"Triton compile for sm_90 failed for kernel {spec['name']}: {_clean(str(exc))}",
                "kernels": kernels,
            }
        info = {"name": spec["name"], "shared_bytes": binary.metadata.shared, "num_warps": binary.metadata.num_warps}
        info.update(resource_usage(binary.asm.get("cubin")))
        kernels.append(info)
        if memo is not None:
            compiled[memo] = info
    return {"ok": True, "message": "", "kernels": kernels}


class ForkedServer:
    """A compile server forked by `prefork`, seen as the backend sees a started one (Popen's
    `poll`, `stdin` and `stdout`)."""

    def __init__(self, pid: int, stdin: Any, stdout: Any):
        self.pid, self.stdin, self.stdout = pid, stdin, stdout
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                self.returncode = -1
            else:
                if pid:
                    self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


_preforked: ForkedServer | None = None


def prefork() -> None:
    """Fork this process's compile server now, for `take_preforked`: a CPU worker calls it once torch is
    imported and before anything of Triton is, so the server starts with torch in memory instead of
    importing it again (about 1.7 s of a core each, in a fresh `python -m backends._triton_compile`).
    The child keeps only its two pipes and stderr (to /dev/null, as the started server's), and
    serves as `main` until the worker closes its end."""
    global _preforked
    if _preforked is not None or "triton" in sys.modules:
        return  # one server a process; Triton imported already may be the interpreter's
    req_r, req_w = os.pipe()
    rep_r, rep_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the server
        code = 1
        try:
            os.dup2(req_r, 0)
            os.dup2(rep_w, 1)
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.closerange(3, 1 << 16)  # the worker's protocol pipe, logs: its parent must see them close with it
            code = main()
        except BaseException:
            pass
        finally:
            os._exit(code)
    os.close(req_r)
    os.close(rep_w)
    _preforked = ForkedServer(pid, os.fdopen(req_w, "w", buffering=1), os.fdopen(rep_r, "r"))


def take_preforked() -> ForkedServer | None:
    """The server `prefork` started, once, if it still runs; else None (start one)."""
    global _preforked
    server, _preforked = _preforked, None
    return server if server is not None and server.poll() is None else None


def main() -> int:
    os.environ.pop("TRITON_INTERPRET", None)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # candidate module-level prints must not corrupt replies
    # The candidate's module-level code runs here too: same sandbox as the
    # worker (namespace and rlimits are inherited; the audit hook is per process).
    from ._sandbox import WorkerSandbox

    WorkerSandbox.from_env().arm()
    modules: dict[str, Any] = {}
    compiled: dict[tuple[str, ...], dict[str, Any]] = {}
    for line in sys.stdin:
        try:
            req = json.loads(line)
            reply = compile_specs(req["file"], req["specs"], modules, compiled)
        except Exception as exc:
            reply = {"ok": True, "message": f"sm_90 compile check skipped: {type(exc).__name__}: {exc}", "kernels": []}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
