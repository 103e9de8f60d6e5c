"""vLLM's OpenAI-compatible server on 127.0.0.1 and a free port, for tests that go over HTTP.

Every wait is on a condition with a generous limit (a busy 2-core machine starts a server in minutes, not
seconds): start-up polls /health until it answers or the process exits, requests allow minutes.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

STARTUP_TIMEOUT_S = 900.0
REQUEST_TIMEOUT_S = 600.0
# A /health probe that gets no answer in this time is simply repeated (the start-up limit still applies).
PROBE_TIMEOUT_S = 10.0
PORT_ATTEMPTS = 3

# Server flags that fit the tiny model and a 2-core, no-GPU machine (the HTTP twin of TINY_ENGINE_KWARGS).
SERVER_DEFAULTS: tuple[str, ...] = (
    "--enforce-eager",
    "--max-model-len", "256",
    "--dtype", "float32",
    "--max-num-seqs", "4",
    "--max-num-batched-tokens", "256",
    "--kv-cache-memory-bytes", str(64 << 20),
)  # fmt: skip


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class OpenAIServer:
    """`python -m vllm.entrypoints.openai.api_server` in its own process group, logging to a file."""

    def __init__(
        self,
        model: Path,
        args: Sequence[str],
        env: Mapping[str, str],
        log_path: Path,
        startup_timeout: float = STARTUP_TIMEOUT_S,
    ) -> None:
        self.log_path = log_path
        deadline = time.monotonic() + startup_timeout
        # The free port can be taken by another process before the server binds it: start again on another.
        for _ in range(PORT_ATTEMPTS):
            self.port = free_port()
            self.base_url = f"http://127.0.0.1:{self.port}"
            command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
            command += ["--host", "127.0.0.1", "--port", str(self.port), *args]
            self._log = log_path.open("w", encoding="utf-8")
            self.process = subprocess.Popen(
                command, env=dict(env), stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
            )
            if self._wait_healthy(deadline, startup_timeout):
                return
            self._log.close()
        raise RuntimeError(f"the server found no free port in {PORT_ATTEMPTS} attempts:\n{self.log_tail()}")

    def _wait_healthy(self, deadline: float, timeout: float) -> bool:
        """True once /health answers; False when the port was taken under the server, which then exited."""
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "address already in use" in self.log_tail().lower():
                    return False
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.request("GET", "/health", timeout=PROBE_TIMEOUT_S)[0] == 200:
                    return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)  # poll interval between probes, not a wait for readiness
        self.stop()
        raise RuntimeError(f"the server did not answer /health within {timeout}s:\n{self.log_tail()}")

    def request(self, method: str, path: str, body: Any = None, timeout: float = REQUEST_TIMEOUT_S) -> tuple[int, Any]:
        """(status, decoded JSON or text) of one request; HTTP errors are returned, not raised."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data is not None else {}
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as error:
            status, raw = error.code, error.read()
        text = raw.decode("utf-8", errors="replace")
        try:
            return status, json.loads(text)
        except json.JSONDecodeError:
            return status, text

    def get(self, path: str) -> tuple[int, Any]:
        return self.request("GET", path)

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        return self.request("POST", path, body)

    def post_stream(self, path: str, body: Any) -> tuple[int, list[Any]]:
        """(status, the decoded JSON of each `data:` event) of a streamed request (`"stream": true` added)."""
        status, text = self.request("POST", path, {**body, "stream": True})
        if status != 200 or not isinstance(text, str):
            return status, [text]
        events = [line[len("data:") :].strip() for line in text.splitlines() if line.startswith("data:")]
        return status, [json.loads(event) for event in events if event != "[DONE]"]

    def log_tail(self, chars: int = 8000) -> str:
        if not self._log.closed:
            self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-chars:]

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGTERM)
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)
            except ProcessLookupError:
                pass
        self._log.close()
