"""What every command line of the project shares about its terminal: ending quietly when a reader leaves early.

`refmem exec ... | head` or `refmem-conformance ... | head` closes the pipe while the command still writes; the
write raises BrokenPipeError, and the interpreter's last flush would raise it again and print a traceback.
Pointing the stream's descriptor at /dev/null lets the command end with its own exit status and nothing more said.
Here, in the handler's package, so that refmem's own command line, the suite's and the fuzzer's share one copy.
"""

from __future__ import annotations

import os
from typing import TextIO


def stream_to_devnull(stream: TextIO) -> None:
    """Point the stream's descriptor at /dev/null, so that later prints and the interpreter's last flush find
    somewhere to write; nothing to do when the stream is not a real file (a test's capture)."""
    try:
        fileno = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is an OSError and a ValueError
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fileno)
    finally:
        os.close(devnull)
