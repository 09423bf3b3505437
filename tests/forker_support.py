"""Children forked by a small process instead of by the test process.

A fork copies the page tables of the process that forks. A pytest process that has collected the whole suite holds
about 190 MB, and each fork from it costs about 16 ms of CPU (measured on the 2-core machine); a process that has
imported only what the child runs forks in 1-2 ms. The tests that kill a child a thousand times fork their children
here: `Forker(preload)` starts `python` importing the modules named (and calling, for "module:function", the
function, which warms what the children use: lazy imports, caches), `start("module:function", *args)` forks a child
that runs the function (which never returns; its arguments travel as JSON) and answers with its pid, which the
test may signal directly (the child is not reaped before `wait`), and `wait(pid)` reaps it and answers with its
wait status (`os.WIFSIGNALED` and friends read it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any, Optional, Sequence

SERVER = r"""
import importlib, json, os, signal, sys
started = set()
for name in sys.argv[1:]:
    module, _, warm = name.partition(":")
    loaded = importlib.import_module(module)
    if warm:
        getattr(loaded, warm)()
reply = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_RDWR), 1)
for line in sys.stdin:
    request = json.loads(line)
    if request["op"] == "start":
        module, _, name = request["call"].partition(":")
        function = getattr(importlib.import_module(module), name)
        pid = os.fork()
        if pid == 0:
            try:
                devnull = os.open(os.devnull, os.O_RDWR)
                os.dup2(devnull, 0)
                reply.close()
                function(*request["args"])
            finally:
                os._exit(70)
        started.add(pid)
        print(pid, file=reply, flush=True)
    else:
        started.discard(request["pid"])
        print(os.waitpid(request["pid"], 0)[1], file=reply, flush=True)
for pid in started:  # the test ended without reaping them (it failed): none is left running
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
"""


class Forker:
    def __init__(self, preload: Sequence[str] = ()) -> None:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self._process: Optional[subprocess.Popen[str]] = subprocess.Popen(
            [sys.executable, "-c", SERVER, *preload], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
        )

    def _ask(self, request: Any) -> int:
        assert self._process is not None and self._process.stdin and self._process.stdout
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        answer = self._process.stdout.readline()
        assert answer, f"the forking process ended (exit {self._process.wait()})"
        return int(answer)

    def start(self, call: str, *args: Any) -> int:
        """Fork a child that runs `call` ("module:function") with `args`; its pid."""
        return self._ask({"op": "start", "call": call, "args": list(args)})

    def wait(self, pid: int) -> int:
        """Reap the child `pid`; its wait status."""
        return self._ask({"op": "wait", "pid": pid})

    def close(self) -> None:
        if self._process is not None:
            assert self._process.stdin is not None
            self._process.stdin.close()
            self._process.wait(30)
            self._process = None

    def __enter__(self) -> Forker:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
