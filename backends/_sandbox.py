"""The sandbox around untrusted candidate code (README: "The sandbox").

A candidate is a Python file an LLM wrote; the worker imports and runs it. The
sandbox puts four walls around that process (and the compilers it starts):

1. Secrets: the worker's environment is built from an allow-list, so API keys
   never reach it; every text the executor returns is masked for key patterns.
2. Network: a fresh network namespace (no interfaces but a downed loopback)
   where the kernel allows one; an audit hook refuses sockets in any case.
3. Files and processes: a Python audit hook (`backends._audit`) refuses writes
   outside the worker's directory and the build caches, reads of databases,
   of the user's real home and of other processes' /proc entries, and every
   process launch except the compilers the backends themselves run.
4. Limits: rlimits on address space, CPU time (per candidate), file size,
   core dumps and processes, reported by name when exceeded.

It is not a VM: see `LIMITATIONS` for what it does not stop. Stdlib only, so
`backends` stays importable with torch alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from ._window import harness

AUTO = "auto"  # a limit chosen from the device: see SandboxLimits.resolved

# Measured: a CPU worker (torch + Triton interpreter) running the honest
# kernels of tests/executor_candidates.py peaks near 1 GiB of virtual memory
# (VmPeak) on 2 cores; every extra thread adds a 64 MiB malloc arena, so
# leave room for large hosts.
CPU_ADDRESS_SPACE_MB = 16384

ENV_VAR = "EVOKERNEL_SANDBOX"  # the parent's sandbox settings, as JSON, for the worker

LIMITATIONS = (
    "not a VM: one kernel is shared with the host",
    "the worker runs as the same user (often root in a container); RLIMIT_NPROC is not enforced for root",
    "audit hooks only see Python-level actions: native code (a C extension, a compiler, the GPU driver) bypasses them",
    "Python introspection can reach and disarm in-process state; the static rules make that harder, not impossible",
    "compilers started by the backends run natively, inside the namespace and rlimits but outside the audit hook",
    "the GPU driver is attack surface shared with the host",
)


@dataclasses.dataclass(frozen=True)
class SandboxLimits:
    """What a worker may use. Defaults let honest kernels on a large GPU run.

    `None` switches a limit off; `AUTO` picks one from the device.
    """

    enabled: bool = True
    network: bool = False  # True leaves the network reachable (no namespace, no socket refusal)
    audit_hook: bool = True
    # CUDA reserves terabytes of virtual address space: an AS limit would kill
    # any GPU worker, so AUTO means off there and CPU_ADDRESS_SPACE_MB on CPU.
    address_space_mb: int | str | None = AUTO
    cpu_time_s: int | None = 1800  # per candidate, all threads; the wall-clock timeout usually comes first
    file_size_mb: int | None = 4096
    max_processes: int | None = 512  # RLIMIT_NPROC headroom (threads count too); root is exempt
    # Share the build caches (Triton's, ours) across workers, as before: fast,
    # but a candidate can plant files there for later ones. False: per worker.
    shared_caches: bool = True

    def resolved(self, device: str) -> dict[str, Any]:
        """Concrete numbers for this device (what the worker applies and reports)."""
        d = dataclasses.asdict(self)
        if self.address_space_mb == AUTO:
            d["address_space_mb"] = None if device.startswith("cuda") else CPU_ADDRESS_SPACE_MB
        return d


# --- secrets ----------------------------------------------------------------

# Environment a worker inherits: names, and prefixes of names. Anything key-like
# is dropped even under an allowed prefix (TRITON_API_KEY stays home).
_ENV_NAMES = frozenset({
    "PATH", "LANG", "LANGUAGE", "TZ", "TERM", "PYTHONPATH", "PYTHONHASHSEED", "LD_LIBRARY_PATH",
    "CC", "CXX", "CUDA_HOME", "CUDA_PATH", "USER", "LOGNAME",
})
_ENV_PREFIXES = (
    "LC_", "CUDA_", "NVIDIA_", "TRITON_", "TORCH_", "TORCHINDUCTOR_", "EVOKERNEL_", "ASCEND_",
    "OMP_", "MKL_", "KMP_", "OPENBLAS_",
)
KEY_LIKE_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE", re.IGNORECASE)


def worker_build_cache(worker_dir: Path, limits: SandboxLimits, shared: Path) -> Path:
    """Where a sandboxed worker builds: the process's shared cache, or its own directory."""
    return shared if limits.shared_caches else worker_dir / ".cache" / "evokernel"


def worker_env(base: dict[str, str], worker_dir: Path, project_root: str, device: str, limits: SandboxLimits,
               network_mode: str = "none", *, build_cache: Path | None = None) -> dict[str, str]:
    """The environment of a sandboxed worker, from an allow-list of `base`; `build_cache`
    (the worker's `--cache-dir`, default: per `worker_build_cache`) is one of its write roots."""
    env = {
        k: v for k, v in base.items()
        if (k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)) and not KEY_LIKE_NAME.search(k)
    }
    real_home = base.get("HOME") or str(Path.home())
    tmp = worker_dir / "tmp"
    tmp.mkdir(exist_ok=True)
    env["HOME"] = str(worker_dir)  # ~/.triton, ~/.nv, torch extensions: per worker
    env["TMPDIR"] = str(tmp)  # not the shared /tmp, where other workers and users keep files
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # the project's __pycache__ is out of bounds
    if build_cache is None:
        build_cache = worker_build_cache(worker_dir, limits, Path(real_home) / ".cache" / "evokernel")
    if limits.shared_caches:
        # Build caches stay shared across workers, as before the sandbox: ours (CUDA, Ascend C:
        # `build_cache`, which the worker is given) and Triton's, which HOME would otherwise move.
        env["TRITON_CACHE_DIR"] = base.get("TRITON_CACHE_DIR") or str(Path(base.get("TRITON_HOME") or real_home) / ".triton" / "cache")
    else:
        env.pop("TRITON_CACHE_DIR", None)
        env.pop("TRITON_HOME", None)
    write_roots = [str(worker_dir), str(build_cache)]
    write_roots += [env[k] for k in ("TRITON_CACHE_DIR", "TRITON_HOME", "TORCH_EXTENSIONS_DIR", "TORCHINDUCTOR_CACHE_DIR") if env.get(k)]
    for root in write_roots:  # made here, by the trusted parent: the worker may not create their parents
        with contextlib.suppress(OSError):
            os.makedirs(root, exist_ok=True)
    env[ENV_VAR] = json.dumps({
        "limits": limits.resolved(device),
        "worker_dir": str(worker_dir),
        "write_roots": write_roots,
        "real_home": real_home,
        "project_root": project_root,
        "network_mode": network_mode,
        "euid": os.geteuid(),  # inside `unshare --map-root-user` the worker sees 0 whatever it really is
    })
    return env


# Order matters: the Anthropic prefix is a special case of the OpenAI one.
_SECRET_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9])sk-ant-[A-Za-z0-9_\-]{6,}"), "sk-ant-***"),
    (re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{6,}"), "sk-***"),
    (re.compile(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])"), "AKIA***"),
    (re.compile(r"(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,})"), "gh***"),
    (re.compile(r"(?<![A-Za-z0-9])xox[abpr]-[A-Za-z0-9\-]{10,}"), "xox***"),
    (re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*"), r"\1***"),
    (re.compile(r"(?i)((?:x-api-key|api[_-]?key|auth[_-]?token|secret[_-]?access[_-]?key)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{8,}"), r"\1***"),
)

# Keys of local servers need not look like `sk-...`; mask their exact values too.
KEY_ENV_VARS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")


def _secret_values(environ: dict[str, str]) -> list[str]:
    names = set(KEY_ENV_VARS) | {k for k in environ if KEY_LIKE_NAME.search(k)}
    # Short values ("x", "none") are dummies for local servers and would
    # otherwise mask ordinary words everywhere.
    return [v for v in (environ.get(n) for n in names) if v and len(v) >= 8]


def mask_secrets(text: str, environ: dict[str, str] | None = None) -> str:
    """Return `text` with anything key-like replaced by a masked stub.

    Masks the exact values of key-like variables in `environ` (default: this
    process's environment) and well-known key shapes (`sk-`, `sk-ant-`, AWS
    key ids, GitHub and Slack tokens, bearer tokens, `api_key=...`).
    """
    if not text:
        return text
    for value in _secret_values(dict(os.environ) if environ is None else environ):
        if value in text:
            stub = "sk-ant-***" if value.startswith("sk-ant-") else ("sk-***" if value.startswith("sk-") else "***")
            text = text.replace(value, stub)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def mask_obj(value: Any, environ: dict[str, str] | None = None) -> Any:
    """`mask_secrets` applied to every string inside dicts, lists and tuples."""
    if isinstance(value, str):
        return mask_secrets(value, environ)
    if isinstance(value, dict):
        return {k: mask_obj(v, environ) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(mask_obj(v, environ) for v in value)
    return value


# --- limits: naming the one that was hit --------------------------------------

_MEMORY_ERROR = re.compile(r"MemoryError|bad_alloc|can't allocate memory|Cannot allocate memory|\[Errno 12\]")
_FILE_TOO_LARGE = re.compile(r"File too large|\[Errno 27\]")


def limit_signal_message(rc: int, limits: dict[str, Any]) -> str | None:
    """The message for a worker killed by an rlimit's signal, else None."""
    if rc == -signal.SIGXCPU:
        return f"CPU-time limit of {limits.get('cpu_time_s')} s exceeded (RLIMIT_CPU, SIGXCPU)"
    if rc == -signal.SIGXFSZ:
        return f"file-size limit of {limits.get('file_size_mb')} MiB exceeded (RLIMIT_FSIZE, SIGXFSZ)"
    return None


def limit_in_text(text: str, limits: dict[str, Any]) -> str | None:
    """Which limit an error message shows was hit (MemoryError, EFBIG), else None."""
    if limits.get("address_space_mb") and _MEMORY_ERROR.search(text):
        return f"address-space limit of {limits['address_space_mb']} MiB exceeded (RLIMIT_AS)"
    if limits.get("file_size_mb") and _FILE_TOO_LARGE.search(text):
        return f"file-size limit of {limits['file_size_mb']} MiB exceeded (RLIMIT_FSIZE)"
    return None


# --- the worker side -----------------------------------------------------------

_wrapper_cache: dict[str, tuple[list[str], str]] = {}


def namespace_wrapper() -> tuple[list[str], str]:
    """The command prefix that starts a worker in a new network namespace.

    Probed once per process with util-linux's `unshare`: a plain network
    namespace where we may (root, CAP_SYS_ADMIN), else an unprivileged user
    namespace with our uid mapped to root in it. `unshare` execs the worker
    in place, so the worker's pid and signals are unchanged. Returns
    (prefix, mode); mode "none" when neither works (then only the audit hook
    refuses sockets).
    """
    if "probe" in _wrapper_cache:
        return _wrapper_cache["probe"]
    found: tuple[list[str], str] = ([], "none")
    tool = shutil.which("unshare") if sys.platform.startswith("linux") else None
    if tool:
        for prefix, mode in (([tool, "--net", "--"], "netns"), ([tool, "--user", "--map-root-user", "--net", "--"], "userns+netns")):
            try:
                ok = subprocess.run(prefix + ["true"], capture_output=True, timeout=10).returncode == 0
            except (OSError, subprocess.TimeoutExpired):
                ok = False
            if ok:
                found = (prefix, mode)
                break
    _wrapper_cache["probe"] = found
    return found


def _network_isolated() -> bool:
    """True when this process sees no interface but loopback (a fresh namespace)."""
    import socket

    try:
        return all(name == "lo" for _, name in socket.if_nameindex())
    except OSError:
        return False


def _uid_tasks(uid: int) -> int:
    """Tasks (threads) the user runs now: what RLIMIT_NPROC counts."""
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
    return count


def apply_rlimits(limits: dict[str, Any], real_euid: int | None = None) -> dict[str, str]:
    """Set the process limits in this process (inherited by its children)."""
    import resource

    applied: dict[str, str] = {}

    def setlimit(which: int, soft: int, name: str) -> None:
        _, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            soft = min(soft, hard)
        try:
            resource.setrlimit(which, (soft, hard))
            applied[name] = str(soft)
        except (ValueError, OSError) as exc:
            applied[name] = f"not set: {exc}"

    setlimit(resource.RLIMIT_CORE, 0, "core")  # a crash must not leave gigabytes behind
    if limits.get("address_space_mb"):
        setlimit(resource.RLIMIT_AS, int(limits["address_space_mb"]) << 20, "address_space")
    if limits.get("file_size_mb"):
        setlimit(resource.RLIMIT_FSIZE, int(limits["file_size_mb"]) << 20, "file_size")
    if limits.get("max_processes"):
        if (os.geteuid() if real_euid is None else real_euid) == 0:
            applied["processes"] = "not enforced for root: the audit hook refuses fork and spawn instead"
        elif sys.platform.startswith("linux"):
            setlimit(resource.RLIMIT_NPROC, _uid_tasks(os.getuid()) + int(limits["max_processes"]), "processes")
    return applied


def start_candidate_clock(limits: dict[str, Any]) -> None:
    """Give the next candidate `cpu_time_s` of CPU time from now (RLIMIT_CPU is cumulative)."""
    seconds = limits.get("cpu_time_s")
    if not seconds:
        return
    import resource

    usage = resource.getrusage(resource.RUSAGE_SELF)
    soft = int(usage.ru_utime + usage.ru_stime) + int(seconds)
    with harness():  # the audit hook refuses setrlimit to candidates
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_CPU, (soft, resource.getrlimit(resource.RLIMIT_CPU)[1]))


class WorkerSandbox:
    """The sandbox as the worker (or the Triton compile server) applies it."""

    def __init__(self, config: dict[str, Any] | None):
        self.config = config or {}
        self.limits: dict[str, Any] = self.config.get("limits", {})
        self.info: dict[str, Any] = {"enabled": bool(self.config) and bool(self.limits.get("enabled", True))}

    @classmethod
    def from_env(cls) -> "WorkerSandbox":
        raw = os.environ.get(ENV_VAR)
        return cls(json.loads(raw) if raw else None)

    def enter(self) -> None:
        """At worker start: rlimits, and a check that the network namespace is in force."""
        if not self.info["enabled"]:
            return
        self.info["env"] = "allow-list"
        if self.limits.get("network"):
            self.info["network"] = "allowed"
        else:  # trust, but verify, what the parent's wrapper promised
            promised = self.config.get("network_mode", "none")
            self.info["network"] = promised if promised != "none" and _network_isolated() else "none"
        self.info["rlimits"] = apply_rlimits(self.limits, self.config.get("euid"))
        self.info["limits"] = {k: self.limits.get(k) for k in ("address_space_mb", "cpu_time_s", "file_size_mb", "max_processes")}

    def arm(self) -> None:
        """After the harness's own imports: the audit hook, for good."""
        if not self.info["enabled"]:
            return
        # `python -m` put the worker directory on sys.path: a module the
        # candidate writes there must not become importable, unchecked.
        writable = [os.path.realpath(p) for p in self.config.get("write_roots", [])]
        sys.path[:] = [p for p in sys.path if p and not any(os.path.realpath(p).startswith(w) for w in writable)]
        if self.limits.get("audit_hook", True):
            from ._audit import install

            install(self.config)
            self.info["audit_hook"] = True
            self.info["files"] = "audit-hook: writes only under the worker dir and build caches"
            self.info["processes"] = "audit-hook: only the backends' compilers may be launched"
            if self.info.get("network") == "none":
                self.info["network"] = "audit-hook"  # no namespace here: the hook refuses sockets
        else:
            self.info["audit_hook"] = False

    def before_candidate(self) -> None:
        if self.info["enabled"]:
            start_candidate_clock(self.limits)


__all__ = [
    "AUTO",
    "LIMITATIONS",
    "SandboxLimits",
    "WorkerSandbox",
    "harness",
    "limit_in_text",
    "limit_signal_message",
    "mask_obj",
    "mask_secrets",
    "worker_build_cache",
    "worker_env",
]
