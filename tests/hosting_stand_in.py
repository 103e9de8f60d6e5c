"""A stand-in for the hosting API (GitHub's REST issues endpoints) and the package index's JSON API, on
127.0.0.1, for rehearsing a generated package's release canary without the network.

It answers the calls `.github/release_canary.py` makes: list the open issues with a label, open an issue,
comment on one, close one (`/repos/OWNER/NAME/...`), and the newest release of a distribution
(`/pypi/NAME/json`). A request without the expected token gets 401, as GitHub answers it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

REPOSITORY = "northwind/my-plugin"
TOKEN = "canary-token"


@dataclass
class Hosting:
    releases: dict[str, str]  # distribution -> newest version
    issues: list[dict[str, Any]] = field(default_factory=list)
    comments: dict[int, list[str]] = field(default_factory=dict)
    url: str = ""

    def issue(self, number: int) -> dict[str, Any]:
        return next(issue for issue in self.issues if issue["number"] == number)

    def add_issue(self, title: str, body: str, labels: list[str], pull_request: bool = False) -> dict[str, Any]:
        issue: dict[str, Any] = {
            "number": len(self.issues) + 1,
            "title": title,
            "body": body,
            "state": "open",
            "labels": [{"name": label} for label in labels],
        }
        if pull_request:
            issue["pull_request"] = {"url": f"{self.url}/pulls/{issue['number']}"}
        self.issues.append(issue)
        return issue


def _handler(hosting: Hosting) -> type[BaseHTTPRequestHandler]:
    prefix = f"/repos/{REPOSITORY}"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
            pass

        def _answer(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _payload(self) -> dict[str, Any]:
            length = int(self.headers.get("Content-Length", "0"))
            return json.loads(self.rfile.read(length)) if length else {}

        def _authorised(self) -> bool:
            if self.headers.get("Authorization") == f"Bearer {TOKEN}":
                return True
            self._answer(401, {"message": "Bad credentials"})
            return False

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            url = urlsplit(self.path)
            if url.path.startswith("/pypi/") and url.path.endswith("/json"):
                name = url.path.split("/")[2]
                if name not in hosting.releases:
                    self._answer(404, {"message": "Not Found"})
                else:
                    self._answer(200, {"info": {"name": name, "version": hosting.releases[name]}})
            elif url.path != f"{prefix}/issues":
                self._answer(404, {"message": "Not Found"})
            elif self._authorised():
                query = parse_qs(url.query)
                state, labels = query.get("state", ["open"])[0], set(query.get("labels", [""])[0].split(","))
                found = [
                    issue
                    for issue in hosting.issues
                    if issue["state"] == state and labels <= {label["name"] for label in issue["labels"]}
                ]
                self._answer(200, found)

        def do_POST(self) -> None:  # noqa: N802
            if not self._authorised():
                return
            path, payload = urlsplit(self.path).path, self._payload()
            if path == f"{prefix}/issues":
                self._answer(201, hosting.add_issue(payload["title"], payload["body"], payload.get("labels", [])))
            elif path.startswith(f"{prefix}/issues/") and path.endswith("/comments"):
                number = int(path.split("/")[-2])
                hosting.comments.setdefault(number, []).append(payload["body"])
                self._answer(201, {"body": payload["body"]})
            else:
                self._answer(404, {"message": "Not Found"})

        def do_PATCH(self) -> None:  # noqa: N802
            if not self._authorised():
                return
            path, payload = urlsplit(self.path).path, self._payload()
            number = int(path.rsplit("/", 1)[-1])
            issue = hosting.issue(number)
            issue.update({key: payload[key] for key in ("state", "state_reason", "title", "body") if key in payload})
            self._answer(200, issue)

    return Handler


@contextmanager
def serving(releases: dict[str, str]) -> Iterator[Hosting]:
    """The stand-in, listening on a free port of 127.0.0.1 until the block ends; `url` is its base URL."""
    hosting = Hosting(releases)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hosting))
    hosting.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hosting
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def runner_variables(hosting: Hosting) -> dict[str, str]:
    """What a GitHub runner sets for the canary's steps, pointed at the stand-in."""
    return {
        "GITHUB_API_URL": hosting.url,
        "GITHUB_SERVER_URL": hosting.url,
        "GITHUB_REPOSITORY": REPOSITORY,
        "GITHUB_RUN_ID": "4242",
        "GITHUB_TOKEN": TOKEN,
        "PYPI_URL": hosting.url,
    }
