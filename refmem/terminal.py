"""What the harness's command lines share about their terminal: ending quietly when a reader leaves early.

`refmem-conformance ... | head` closes the pipe while the runner still writes; the write raises BrokenPipeError,
and the interpreter's last flush would raise it again and print a traceback. Pointing the stream's descriptor at
/dev/null lets the command end with its own exit status and nothing more said. (`refmem/cli.py` keeps its own
copy: the handler's package imports nothing of the harness.)
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
