"""A local stand-in for an OpenAI-compatible server that answers after a delay.

It answers every chat completion, after `--delay` seconds, with one honest
Triton kernel for `relu(x + bias) * scale` (the bundled `relu_add` task and
copies of it), and counts how many requests it is answering at once. It is
what `benchmarks/concurrency.py` times `--jobs` against; it can also be run
alone:

    python benchmarks/llm_standin.py --port 8011 --delay 10
    OPENAI_BASE_URL=http://127.0.0.1:8011/v1 evokernel run relu_add --model openai:standin --jobs 8

GET /stats returns {"requests", "in_flight", "peak_in_flight"} as JSON.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KERNEL = '''import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def relu_add_kernel(x_ptr, bias_ptr, out_ptr, n_elements, n_cols, scale, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    bias = tl.load(bias_ptr + offsets % n_cols, mask=mask, other=0.0)
    y = tl.maximum(x + bias, 0.0) * scale
    tl.store(out_ptr + offsets, y, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, scale: float):
        super().__init__()
        self.scale = scale

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x)
        n = x.numel()
        relu_add_kernel[(triton.cdiv(n, 1024),)](x, bias.contiguous(), out, n, bias.numel(), self.scale, BLOCK=1024)
        return out
'''

ANSWER = "Here is the kernel.\n\n```python\n" + KERNEL + "```\n"


class StandIn:
    """The server, in a thread: `with StandIn(delay_s=10) as s: s.url`."""

    def __init__(self, *, delay_s: float = 10.0, host: str = "127.0.0.1", port: int = 0):
        self.delay_s = delay_s
        self.requests = 0
        self.in_flight = 0
        self.peak_in_flight = 0
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _send(self, status: int, body: dict[str, Any]) -> None:
                payload = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                self._send(200, standin.stats())

            def do_POST(self) -> None:  # noqa: N802
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with standin._lock:
                    standin.requests += 1
                    standin.in_flight += 1
                    standin.peak_in_flight = max(standin.peak_in_flight, standin.in_flight)
                try:
                    time.sleep(standin.delay_s)
                finally:
                    with standin._lock:
                        standin.in_flight -= 1
                self._send(200, {
                    "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()), "model": "standin",
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
                    "usage": {"prompt_tokens": 1000, "completion_tokens": 400, "total_tokens": 1400},
                })

            def log_message(self, *args: Any) -> None:
                pass

        self._httpd = ThreadingHTTPServer((host, port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"requests": self.requests, "in_flight": self.in_flight, "peak_in_flight": self.peak_in_flight}

    def reset(self) -> None:
        with self._lock:
            self.requests = self.peak_in_flight = 0

    def __enter__(self) -> "StandIn":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--delay", type=float, default=10.0, help="seconds before each answer")
    args = parser.parse_args()
    with StandIn(delay_s=args.delay, host=args.host, port=args.port) as server:
        print(f"answering at {server.url}/v1 after {args.delay:g} s", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
