"""Serving the app with uvicorn: blocking (`serve`) or from a thread (`start`)."""

from __future__ import annotations

import dataclasses
import ipaddress
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ._app import create_app
from ._records import BrowseError

DEFAULT_PORT = 8001


@dataclasses.dataclass(frozen=True)
class ServeOptions:
    """Where to listen. A host other than loopback is refused unless `allow_remote`:
    the pages show kernels, prompts and answers to whoever can reach the port."""

    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    allow_remote: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.port <= 65535:
            raise BrowseError(f"port must be in 0..65535, got {self.port}")
        if not self.allow_remote and not is_loopback(self.host):
            raise BrowseError(
                f"{self.host} is not a loopback address: serving the bank beyond this machine needs allow_remote "
                "(`--allow-remote`); an SSH tunnel (ssh -L 8001:127.0.0.1:8001 host) keeps it private"
            )


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _server(memory: str | Path, options: ServeOptions):
    import uvicorn

    config = uvicorn.Config(create_app(memory), host=options.host, port=options.port, log_level="warning",
                            access_log=False, lifespan="off")
    return uvicorn.Server(config)


def _bind(options: ServeOptions) -> socket.socket:
    """The listening socket, bound here so a taken port is a `BrowseError` (uvicorn would
    exit the process) and port 0's choice is known."""
    family = socket.AF_INET6 if ":" in options.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((options.host, options.port))
    except OSError as exc:
        sock.close()
        raise BrowseError(f"could not listen on {options.host}:{options.port}: {exc.strerror or exc}") from None
    return sock


def url_of(options: ServeOptions, port: int) -> str:
    host = f"[{options.host}]" if ":" in options.host else options.host
    return f"http://{host}:{port}"


def serve(memory: str | Path, options: ServeOptions | None = None, *,
          on_ready: Callable[[str], None] | None = None) -> None:
    """Serve until interrupted (Ctrl-C); `on_ready(url)` is called once it listens."""
    options = options or ServeOptions()
    server = _server(memory, options)
    sock = _bind(options)
    if on_ready is not None:
        on_ready(url_of(options, sock.getsockname()[1]))
    server.run(sockets=[sock])


@dataclasses.dataclass
class BrowseServer:
    """A server running in a background thread; `url` is where it listens."""

    url: str
    _server: object
    _thread: threading.Thread

    def stop(self, timeout_s: float = 10.0) -> None:
        self._server.should_exit = True  # type: ignore[attr-defined]
        self._thread.join(timeout_s)


def start(memory: str | Path, options: ServeOptions | None = None, *, timeout_s: float = 20.0) -> BrowseServer:
    """Serve from a daemon thread and return once it listens (port 0 picks a free one)."""
    options = options or ServeOptions()
    server = _server(memory, options)
    sock = _bind(options)
    port = sock.getsockname()[1]
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="evokernel-browse", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise BrowseError(f"the browser's server did not start on {options.host}:{port}")
        time.sleep(0.02)
    return BrowseServer(url_of(options, port), server, thread)
