"""The hook command Claude Code runs: `<absolute python> -S <path>/_client.py EVENT`.

Only this small file is compiled at every start; the client itself is `_client_core`, imported
from the cached bytecode beside it (see `_client_core` for what it does and why it is so lean).
"""

from __future__ import annotations

import sys

if __name__ == "__main__":
    from _client_core import run  # type: ignore[import-not-found]  # a sibling, run as script

    run(sys.argv)
