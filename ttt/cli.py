"""What the command-line entry points share: running a command with one-line errors."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from ttt.checkpoint import CheckpointError


def run_cli(function: Callable[[Any], Any], cfg: Any) -> None:
    """Call ``function(cfg)``; expected errors become one line on stderr and exit status 2."""
    try:
        function(cfg)
    except (CheckpointError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)
    except BrokenPipeError:  # output piped into e.g. `head`
        sys.stderr.close()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        sys.exit(130)
