"""ttt: deep reinforcement learning for the tic-tac-toe family (3x3, 4x4, 3x3x3, Qubic, Score Four)."""

__version__ = "0.1.0"
