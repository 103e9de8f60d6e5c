"""A program on a pseudo-terminal, seen through a VT100 screen and typed at the way a user types.

Assertions read the screen a user would see (`pyte` applies every cursor move and erase the program sends),
not the raw byte stream, so a partial redraw cannot hide or fake text. Waiting is always for a condition on
that screen, with a generous deadline, never for a fixed time.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pexpect
import pyte

DEADLINE_S = 240.0  # a condition a busy two-core machine takes far less to reach

KEYS = {"up": "\x1b[A", "down": "\x1b[B", "enter": "\r", "ctrl-c": "\x03", "ctrl-u": "\x15"}


def flat(text: str) -> str:
    """`text` with every run of white space (line ends included) made one space."""
    return " ".join(text.split())


class _Screen(pyte.Screen):
    """A screen that answers the program's cursor-position queries as a real terminal does."""

    def __init__(self, columns: int, rows: int, reply) -> None:
        super().__init__(columns, rows)
        self._reply = reply

    def write_process_input(self, data: str) -> None:
        self._reply(data)


class Terminal:
    def __init__(self, *args: str, cwd: Path, columns: int = 80, rows: int = 30) -> None:
        env = {key: value for key, value in os.environ.items() if key not in {"COLUMNS", "LINES"}}
        env["TERM"] = "xterm-256color"
        self.child = pexpect.spawn(
            sys.executable, ["-m", "vllm_scaffold", *args], cwd=str(cwd), env=env, dimensions=(rows, columns)
        )
        self.screen = _Screen(columns, rows, self.child.send)
        self.stream = pyte.ByteStream(self.screen)

    def text(self) -> str:
        return "\n".join(line.rstrip() for line in self.screen.display)

    def lines(self) -> list[str]:
        return [line.rstrip() for line in self.screen.display]

    def _read(self, timeout: float) -> bool:
        """Feeds what the program wrote to the screen; False once the program has closed the terminal."""
        try:
            self.stream.feed(self.child.read_nonblocking(65536, timeout=timeout))
        except pexpect.TIMEOUT:
            pass
        except pexpect.EOF:
            return False
        return True

    def wait_for(self, *texts: str) -> str:
        """Waits until every one of `texts` is on the screen (line breaks read as spaces); returns the screen."""
        self.wait_until(lambda _: all(flat(text) in flat(self.text()) for text in texts), f"all of {texts}")
        return self.text()

    def wait_until(self, check: Callable[[list[str]], bool], what: str) -> None:
        """Waits until `check` holds for the screen's lines."""
        deadline = time.monotonic() + DEADLINE_S
        while not check(self.lines()):
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._read(min(remaining, 1.0)):
                raise AssertionError(f"never on the screen: {what}\n--- screen ---\n{self.text()}")

    def press(self, *keys: str) -> None:
        for key in keys:
            self.child.send(KEYS[key])

    def type(self, text: str) -> None:
        self.child.send(text)

    def answer(self, text: str) -> None:
        """Replaces whatever the current question holds with `text` and sends it."""
        self.press("ctrl-u")
        self.type(text)
        self.press("enter")

    def exit_status(self) -> int:
        """Waits for the program to end and returns its exit status."""
        deadline = time.monotonic() + DEADLINE_S
        while self._read(1.0):
            if time.monotonic() > deadline:
                raise AssertionError(f"still running\n--- screen ---\n{self.text()}")
        self.child.close()
        return self.child.exitstatus if self.child.exitstatus is not None else 128 + self.child.signalstatus

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
