"""Helpers the OpenClaw tests share (the fixtures are in conftest.py)."""

from __future__ import annotations

import datetime
import http.server
import json
import os
import pathlib
import shutil
import subprocess
from typing import Any, Dict, List, Union

CANARY = "CANARY-7f3a"
"""The text of the files outside the workspace: never in a result."""
NOW = datetime.datetime(2026, 11, 23, tzinfo=datetime.timezone.utc).timestamp()
"""The clock of the search tests: daily logs decay from this day."""


def write(case: pathlib.Path, relative: str, data: Union[str, bytes]) -> pathlib.Path:
    """Put a file in the workspace CASE/memories, folders made as needed."""
    target = case / "memories" / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return target


def paths_of(result: Dict[str, Any]) -> List[str]:
    return [hit["path"] for hit in result["results"]]


def openclaw_ready() -> bool:
    """Is OpenClaw installed beside its adapter, with a Node it runs on (>= 24)?"""
    from refmem_harness import openclaw_target

    node = openclaw_target.find_node()
    if not (openclaw_target.ADAPTER_DIR / "node_modules" / "openclaw").is_dir():
        return False
    if shutil.which(node) is None and not os.path.isfile(node):
        return False
    try:
        version = subprocess.run(
            [node, "-p", "process.versions.node"], capture_output=True, text=True, timeout=30
        ).stdout
    except OSError:
        return False
    major = version.strip().split(".")[0]
    return major.isdigit() and int(major) >= 24


class EmbeddingsEndpoint(http.server.BaseHTTPRequestHandler):
    """A fake OpenAI-compatible embeddings server's handler: every POST is recorded in `seen` (its path, its
    Authorization header and its JSON body), then `reply(body)` answers it; `send_json` sends a 200 answer."""

    seen: List[Dict[str, Any]]

    def do_POST(self) -> None:  # noqa: N802 - the http.server name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.seen.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        self.reply(body)

    def reply(self, body: Dict[str, Any]) -> None:
        raise NotImplementedError

    def send_json(self, document: Any) -> None:
        payload = json.dumps(document).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: Any) -> None:
        pass
