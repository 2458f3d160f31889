"""Thin DVC stage entry points: run as ``python -m stages.<name>`` from the repo root.

Each script ends in ``run_stage(main)``. An error the user can fix (a params value,
a corpus file or row, a corrupt file the pipeline wrote) then prints one line (what,
where, why, the fix) to stderr and exits with status 2, with no traceback; pass
``--debug`` to the stage, or set ``SCRATCHFORMER_DEBUG=1``, to see the traceback.
Any other error is a bug and keeps its traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

from scratchformer.config import UserError

USER_ERROR_STATUS = 2


def run_stage(main: Callable[[], object]) -> None:
    """Call ``main``; a user error becomes one line on stderr and exit status 2 (see the module docstring)."""
    if "--debug" in sys.argv[1:]:
        sys.argv.remove("--debug")
        os.environ["SCRATCHFORMER_DEBUG"] = "1"  # torchrun's worker processes inherit it
    if os.environ.get("SCRATCHFORMER_DEBUG", "0") not in ("", "0"):
        main()
        return
    try:
        main()
    except UserError as err:  # ConfigError, DataError, CorruptFileError, HubUnreachableError
        line = " ".join(str(err).split("\n"))
        print(f"error: {line} (--debug or SCRATCHFORMER_DEBUG=1 shows the traceback)", file=sys.stderr)
        sys.exit(USER_ERROR_STATUS)
