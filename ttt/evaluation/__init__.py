"""Evaluation: what measures a player, and nothing that trains one.

Match play and its statistics (``evaluate``), Elo fits (``elo``), exact exploitability on 3x3 and 4x4
(``exploitability``), the tactics suites (``suites``), the value measures (``value_quality``, the games
they sample in ``value_games``) and defence in a player's own games (``defence``). Training, the
entry points and the agents call these; none of them calls back.
"""
