"""Make the project root and this folder (the vulnerable test backend) importable."""

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
for entry in (str(HERE.parent.parent), str(HERE)):
    if entry not in sys.path:
        sys.path.insert(0, entry)
