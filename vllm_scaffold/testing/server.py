"""vLLM's OpenAI-compatible server on 127.0.0.1 and a free port, for tests that go over HTTP."""

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
        self, model: Path, args: Sequence[str], env: Mapping[str, str], log_path: Path, startup_timeout: float = 300
    ) -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
        command += ["--host", "127.0.0.1", "--port", str(self.port), *args]
        self._log = log_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            command, env=dict(env), stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self._wait_healthy(startup_timeout)

    def _wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                if self.get("/health")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the server did not answer /health within {timeout}s:\n{self.log_tail()}")

    def request(self, method: str, path: str, body: Any = None, timeout: float = 120) -> tuple[int, Any]:
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
        return self.request("GET", path, timeout=5)

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        return self.request("POST", path, body)

    def log_tail(self, chars: int = 8000) -> str:
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
