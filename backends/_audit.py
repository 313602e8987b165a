"""The in-process half of the sandbox: a Python audit hook (PEP 578).

Installed once in each worker (and in the Triton compile server) after the
harness's own imports; it cannot be removed. It sees what Python code does,
the candidate's and the libraries', and refuses with a PermissionError:

- writes, deletes, renames, mkdir, chmod... outside the worker directory and
  the build caches (and writes through relative paths, whose `dir_fd` the
  `open` event does not carry);
- reads of databases and credential files anywhere, of the user's real home
  (except the Python installation, the project and the caches) and of other
  processes' /proc entries (their environment holds the keys);
- sockets: connect, bind, send, name lookups (unless the network is allowed);
- fork, os.system, exec and spawn, except the backends' compilers: an
  executable allow-list resolved to absolute paths at install time, with
  argv screened for flags that run other programs (-wrapper, -fplugin, -B,
  @file, -ccbin, nvcc -run); and anything inside `_sandbox.harness()`;
- signals to other processes, new rlimits and loader-changing env variables.

A tripwire for Python-level attempts, not a wall: native code bypasses it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import sys
import threading
from typing import Any, Callable

from ._window import in_harness_window

_DB_SUFFIXES = (".db", ".sqlite", ".sqlite3", ".db-wal", ".db-shm", ".db-journal", ".sqlite-wal", ".sqlite-journal")
_SECRET_FILES = {".env", ".netrc", ".git-credentials", ".pgpass", "credentials", ".pypirc"}
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
_PROC_PID = re.compile(r"^/proc/(\d+)(/|$)")

COMPILERS = ("gcc", "g++", "cc", "c++", "clang", "clang++", "nvcc", "ptxas", "cuobjdump", "nvdisasm", "ld", "bisheng", "ccec")
# Flags with which a compiler runs or loads another program, or reads more flags from a file.
_DANGEROUS_FLAGS = ("-wrapper", "-fplugin", "-plugin", "--plugin", "-specs", "--specs", "-B", "-ccbin",
                    "--compiler-bindir", "-run", "--run", "-fuse-ld", "--ld-path")
# Variables that make a compiler or the dynamic loader run other code.
_DANGEROUS_ENV = re.compile(r"^(LD_\w+|GCC_EXEC_PREFIX|COMPILER_PATH|NVCC_(PREPEND|APPEND)_FLAGS|PATH|PYTHON\w*|BASH_ENV|ENV|HOME|EVOKERNEL_SANDBOX)$")


class _Policy:
    def __init__(self, config: dict[str, Any]):
        self.network_allowed = bool(config.get("limits", {}).get("network"))
        self.write_roots = [self._norm(p) for p in config.get("write_roots", []) if p]
        real_home = config.get("real_home") or ""
        self.real_home = self._norm(real_home) if real_home and os.path.realpath(real_home) != "/" else ""
        readable = [sys.prefix, sys.base_prefix, sys.exec_prefix, config.get("project_root", "")]
        readable += [p for p in sys.path if p and os.path.isdir(p)]
        self.home_readable = [self._norm(p) for p in readable if p] + self.write_roots
        self.pid = os.getpid()
        self.env = dict(os.environ)
        self.executables = self._executables()
        self.python = os.path.realpath(sys.executable)
        self.local = threading.local()

    @staticmethod
    def _norm(path: str) -> str:
        return os.path.realpath(path).rstrip("/") + "/"

    def _executables(self) -> set[str]:
        """Absolute, resolved paths of the tools the backends launch."""
        found: set[str] = set()
        names = list(COMPILERS) + [self.env.get("CC", ""), self.env.get("CXX", "")]
        for name in filter(None, names):
            path = shutil.which(name)
            if path:
                found.add(os.path.realpath(path))
        tool_dirs = []
        try:  # Triton bundles ptxas, cuobjdump and nvdisasm
            import triton

            tool_dirs.append(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin"))
        except ImportError:
            pass
        if "torch" in sys.modules:  # some builds ship ptxas in torch/bin for Triton (with test binaries: names only)
            torch_bin = os.path.join(os.path.dirname(sys.modules["torch"].__file__), "bin")
            found.update(os.path.realpath(os.path.join(torch_bin, n)) for n in COMPILERS if os.path.isfile(os.path.join(torch_bin, n)))
        for var, value in self.env.items():  # TRITON_PTXAS_PATH, TRITON_CUOBJDUMP_PATH, ...
            if var.startswith("TRITON_") and var.endswith("_PATH") and os.path.isfile(value):
                found.add(os.path.realpath(value))
        for var in ("CUDA_HOME", "CUDA_PATH", "ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
            if self.env.get(var):
                tool_dirs += [os.path.join(self.env[var], "bin"), os.path.join(self.env[var], "compiler", "ccec_compiler", "bin")]
        for d in tool_dirs:
            if os.path.isdir(d):
                for entry in os.scandir(d):
                    if entry.is_file():
                        found.add(os.path.realpath(entry.path))
        for ldconfig in ("/sbin/ldconfig", "/usr/sbin/ldconfig"):  # Triton's driver asks it where libcuda is
            if os.path.exists(ldconfig):
                found.add(os.path.realpath(ldconfig))
        return found

    # --- files -------------------------------------------------------------
    def _resolve(self, path: Any, dir_fd: int | None = None) -> str | None:
        if isinstance(path, int) or path is None:
            return None  # an open descriptor: opening it was checked
        text = os.fsdecode(path)
        if not os.path.isabs(text) and dir_fd not in (None, -1):
            try:
                text = os.path.join(os.readlink(f"/proc/self/fd/{dir_fd}"), text)
            except OSError:
                return text
        return os.path.realpath(text)

    def _under(self, path: str, roots: list[str]) -> bool:
        p = path.rstrip("/") + "/"
        return any(p.startswith(r) for r in roots)

    def check_write(self, path: Any, dir_fd: int | None = None, what: str = "write") -> None:
        if isinstance(path, int) or path is None:
            return
        text = os.fsdecode(path)
        if text == os.devnull:
            return
        if not os.path.isabs(text) and dir_fd in (None, -1) and what == "write":
            raise PermissionError(f"sandbox: {what} to relative path {text!r} refused: use an absolute path under the worker directory")
        resolved = self._resolve(path, dir_fd)
        if resolved is None or self._under(resolved, self.write_roots):
            return
        if what == "mkdir" and any(r.startswith(resolved.rstrip("/") + "/") for r in self.write_roots):
            return  # os.makedirs(cache_dir) walks through the cache's existing parents
        raise PermissionError(f"sandbox: {what} of {text!r} refused: candidates may only write under their worker directory")

    def check_read(self, path: Any, dir_fd: int | None = None) -> None:
        resolved = self._resolve(path, dir_fd)
        if resolved is None:
            return
        base = os.path.basename(resolved)
        if base.endswith(_DB_SUFFIXES) or base in _SECRET_FILES or base.startswith(".env."):
            raise PermissionError(f"sandbox: reading {resolved!r} refused: databases and credential files are out of reach")
        m = _PROC_PID.match(resolved)
        if m and int(m.group(1)) != os.getpid():
            raise PermissionError(f"sandbox: reading {resolved!r} refused: other processes are out of reach")
        if self.real_home and self._under(resolved, [self.real_home]) and not self._under(resolved, self.home_readable):
            raise PermissionError(f"sandbox: reading {resolved!r} refused: the user's home is out of reach")

    def on_open(self, path: Any, mode: Any, flags: Any) -> None:
        if isinstance(mode, str):
            writing = any(c in mode for c in "wax+")
        else:
            writing = bool((flags or 0) & _WRITE_FLAGS)
        if writing:
            self.check_write(path)
        self.check_read(path)

    # --- processes ---------------------------------------------------------
    def check_exec(self, executable: Any, argv: Any, env: Any, cwd: Any = None) -> None:
        if in_harness_window():
            return
        if isinstance(argv, (str, bytes)):
            argv = [argv]
        args = [os.fsdecode(a) if isinstance(a, (str, bytes, os.PathLike)) else str(a) for a in (argv or [])]
        exe = os.fsdecode(executable) if executable is not None else (args[0] if args else "")
        if os.sep not in exe:
            search = (env or {}).get("PATH", self.env.get("PATH")) if isinstance(env, dict) else self.env.get("PATH")
            exe = shutil.which(exe, path=search) or exe
        resolved = os.path.realpath(exe)
        tail = args[1:]
        if resolved == self.python:
            if tail != ["-m", "backends._triton_compile"]:
                raise PermissionError("sandbox: starting Python refused: candidates may not start processes")
        elif resolved not in self.executables:
            raise PermissionError(f"sandbox: running {exe!r} refused: candidates may not start processes")
        elif os.path.basename(resolved) == "ldconfig" and tail != ["-p"]:
            raise PermissionError("sandbox: ldconfig may only list the cache (-p)")
        self._screen_args(tail, cwd)
        if isinstance(env, dict):
            for k, v in env.items():
                k = os.fsdecode(k)
                if _DANGEROUS_ENV.match(k) and os.fsdecode(v) != self.env.get(k):
                    raise PermissionError(f"sandbox: launching with {k} changed refused")

    def _screen_args(self, args: list[str], cwd: Any) -> None:
        base = os.fsdecode(cwd) if cwd else os.getcwd()
        for i, arg in enumerate(args):
            pieces = [arg, *re.split(r"[,=]", arg)]
            if arg.startswith("@") or any(p.startswith(_DANGEROUS_FLAGS) for p in pieces):
                raise PermissionError(f"sandbox: compiler flag {arg!r} refused: it runs or loads other programs")
            out = args[i + 1] if arg == "-o" and i + 1 < len(args) else (arg[2:] if arg.startswith("-o") and len(arg) > 2 and "/" in arg else None)
            if out:
                self.check_write(os.path.join(base, out), what="compiler output")

    def check_signal(self, pid: int) -> None:
        if in_harness_window() or pid in (0, os.getpid()) or pid == -os.getpgid(0):
            return
        try:  # our own children (a compiler that timed out) may be killed
            with open(f"/proc/{abs(pid)}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            ppid = -1
        if ppid != os.getpid():
            raise PermissionError(f"sandbox: signalling process {pid} refused: other processes are out of reach")

    def refuse(self, what: str) -> Callable[..., None]:
        def handler(*args: Any) -> None:
            if not in_harness_window():
                raise PermissionError(f"sandbox: {what} refused")

        return handler

    def handlers(self) -> dict[str, Callable[..., None]]:
        w = self.check_write
        h: dict[str, Callable[..., None]] = {
            "open": self.on_open,
            "os.listdir": lambda path=None, *a: self.check_read(path),
            "os.scandir": lambda path=None, *a: self.check_read(path),
            "os.remove": lambda path, dir_fd=-1, *a: w(path, dir_fd, "delete"),
            "os.rmdir": lambda path, dir_fd=-1, *a: w(path, dir_fd, "delete"),
            "os.mkdir": lambda path, mode=0, dir_fd=-1, *a: w(path, dir_fd, "mkdir"),
            "os.rename": lambda src, dst, sfd=-1, dfd=-1, *a: (w(src, sfd, "rename"), w(dst, dfd, "rename")),
            "os.link": lambda src, dst, sfd=-1, dfd=-1, *a: w(dst, dfd, "link"),
            "os.symlink": lambda src, dst, dfd=-1, *a: w(dst, dfd, "symlink"),
            "os.truncate": lambda path, *a: w(path, None, "truncate"),
            "os.chmod": lambda path, mode=0, dir_fd=-1, *a: w(path, dir_fd, "chmod"),
            "os.chown": lambda path, uid=0, gid=0, dir_fd=-1, *a: w(path, dir_fd, "chown"),
            "os.utime": lambda path, *a: w(path, None, "utime"),
            "os.setxattr": lambda path, *a: w(path, None, "setxattr"),
            "os.removexattr": lambda path, *a: w(path, None, "removexattr"),
            "shutil.rmtree": lambda path, *a: w(path, None, "delete"),
            "shutil.copyfile": lambda src, dst, *a: w(dst, None, "copy"),
            "shutil.copytree": lambda src, dst, *a: w(dst, None, "copy"),
            "shutil.move": lambda src, dst, *a: (w(src, None, "move"), w(dst, None, "move")),
            "sqlite3.connect": lambda db, *a: None if os.fsdecode(db) == ":memory:" else self.refuse("opening a database")(),
            "subprocess.Popen": lambda exe, args, cwd=None, env=None, *a: self.check_exec(exe, args, env, cwd),
            "os.posix_spawn": lambda path, argv, env=None, *a: self.check_exec(path, argv, env),
            "os.exec": lambda path, args, env=None, *a: self.check_exec(path, args, env),
            "os.spawn": lambda mode, path, args, env=None, *a: self.check_exec(path, args, env),
            "os.system": self.refuse("os.system"),
            "os.fork": self.refuse("fork"),
            "os.forkpty": self.refuse("fork"),
            "os.kill": lambda pid, sig=0, *a: self.check_signal(pid),
            "os.killpg": lambda pgid, sig=0, *a: self.check_signal(-pgid),
            "signal.pthread_kill": lambda *a: None,
            "resource.setrlimit": self.refuse("changing resource limits"),
            "resource.prlimit": self.refuse("changing resource limits"),
            "os.putenv": lambda key, value=None, *a: self._check_putenv(key),
            "ctypes.dlopen": lambda name=None, *a: self._check_dlopen(name),
        }
        if not self.network_allowed:
            for event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg", "socket.getaddrinfo",
                          "socket.gethostbyname", "socket.gethostbyaddr", "socket.getnameinfo", "urllib.Request"):
                h[event] = self.refuse("network access (" + event + ")")
        return h

    def _check_putenv(self, key: Any) -> None:
        if not in_harness_window() and _DANGEROUS_ENV.match(os.fsdecode(key)):
            raise PermissionError(f"sandbox: setting {os.fsdecode(key)} refused: it changes what launched programs run")

    def _check_dlopen(self, name: Any) -> None:
        # A library the candidate wrote itself is native code outside every check.
        if name and os.sep in os.fsdecode(name):
            resolved = os.path.realpath(os.fsdecode(name))
            st = os.stat(resolved) if os.path.exists(resolved) else None
            if st is not None and stat.S_ISREG(st.st_mode) and self._under(resolved, self.write_roots) and not in_harness_window():
                raise PermissionError(f"sandbox: loading {resolved!r} refused: libraries written in the sandbox may not be loaded")


_installed: list[_Policy] = []


def install(config: dict[str, Any]) -> None:
    """Install the hook (once per process; it cannot be removed)."""
    if _installed:
        return
    policy = _Policy(config)
    handlers = policy.handlers()
    local = policy.local

    def hook(event: str, args: tuple) -> None:
        handler = handlers.get(event)
        if handler is None or getattr(local, "busy", False):
            return
        local.busy = True  # the hook's own reads (/proc/<pid>/stat) are not the candidate's
        try:
            handler(*args)
        finally:
            local.busy = False

    _installed.append(policy)
    sys.addaudithook(hook)
