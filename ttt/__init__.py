"""ttt: deep reinforcement learning for the tic-tac-toe family (3x3, 4x4, 3x3x3, Qubic, Score Four).

Importing ``ttt`` registers the Gymnasium environments ``ttt/<board>-v0`` when Gymnasium is
installed (``ttt.interop.register_gymnasium_envs``); without it nothing is imported.
"""

import sys

if sys.argv[:1] == ["-m"]:  # `python -m ttt.<entry point>`: this runs first (while runpy finds the module,
    # sys.argv[0] is "-m"); Ctrl-C or SIGTERM during the imports that follow exits with 130, no traceback
    from ttt.cli import exit_on_signals, guard_config_files

    exit_on_signals()
    guard_config_files()  # a config file that is not valid YAML: one line, not the parser's traceback

from importlib.util import find_spec  # noqa: E402

__version__ = "0.1.0"


def _gymnasium_installed() -> bool:
    try:
        return find_spec("gymnasium") is not None
    except ValueError:  # sys.modules["gymnasium"] = None: deliberately hidden
        return False


if _gymnasium_installed():
    from ttt.interop import register_gymnasium_envs

    register_gymnasium_envs()
