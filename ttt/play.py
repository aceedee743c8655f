"""Play against an agent: ``python -m ttt.play`` (Hydra; ``--help`` shows the config).

``checkpoint=PATH`` or ``player=SPEC`` picks the opponent (the spec syntax of ``ttt.harness.specs``;
neither: the shipped dqn_444 checkpoint), ``game=NAME`` the board (default: the checkpoint's).
The board is drawn with the cell numbers of the empty cells; a move is a cell number as shown, or
coordinates ``row,col`` (2D) / ``layer,row,col`` (3D). On the gravity board ``row,col`` names a
column and the piece drops to its lowest empty cell. Commands: ``hint`` (the agent's value of each
legal move for you), ``undo`` (take back your last move and the agent's reply), ``help``, ``quit``.

``learn=true`` lets a learning agent learn from every finished game (``Player.learn_from_game``)
and save itself at the end (``save=PATH``; default: next to its checkpoint as ``<name>_play``, e.g.
``RUN_DIR/checkpoint_play.pt`` for ``checkpoint=RUN_DIR``):
after ``quit``, the end of the input, Ctrl-C (exit code 130) or any error, always atomically.

When a game ends with a win, the winning line is named by its cells. ``svg=DIR`` also saves every
position of every game as an SVG picture, ``DIR/game<G>_ply<NN>.svg`` (``ttt.games.render``: the
layers side by side, the last move framed, the winning line marked).

``play(cfg, input_stream, output_stream)`` is the plain function; tests drive it with StringIO.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import hydra
import numpy as np
from hydra.core.config_store import ConfigStore
from omegaconf import DictConfig

from ttt.checkpoint import atomic_write
from ttt.cli import Interrupted, OutputError, check_writable_file, run_cli, write_with_fallback
from ttt.config import GameConfig, check_seed_and_threads
from ttt.games import FIRST, Game, State, render_board
from ttt.games.render import line_text, render_svg
from ttt.harness.specs import agent_spec, board_name, checkpoint_file, load_agents, parse_spec
from ttt.players import Player
from ttt.players.human import MoveError, hint_text, move_syntax, parse_move


@dataclass
class PlayConfig:
    """Schema of ``configs/play.yaml``."""

    checkpoint: str | None = None  # the agent: a saved learner ...
    player: Any = None  # ... or a player spec (ttt.harness.specs syntax); neither: the shipped dqn_444
    game: GameConfig | None = None  # board (the game/ group: game=3x3); default: the checkpoint's, else 4x4x4
    seat: str = "ask"  # your seat: first, second, or ask before every game
    learn: bool = False  # the agent learns from the games and saves itself at the end
    save: str | None = None  # where learn=true saves; default <checkpoint dir>/<stem>_play<suffix>
    seed: int = 0  # the agent's random choices
    threads: int = 1  # torch intra-op threads
    svg: str | None = None  # save every position as DIR/game<G>_ply<NN>.svg


ConfigStore.instance().store(name="play_schema", node=PlayConfig)

COMMANDS = "hint, undo, help, quit"
SYMBOL = {FIRST: "X", -FIRST: "O"}


def _default_save_path(spec: Any) -> Path | None:
    kind, target, _ = parse_spec(spec)
    if kind != "checkpoint":
        return None
    path = checkpoint_file(target)  # a run folder stands for the checkpoint in it
    return path.with_name(f"{path.stem}_play{path.suffix}")


class _Console:
    """Prompts and reads lines; echoes the input when it does not come from a terminal."""

    def __init__(self, inp: TextIO, out: TextIO) -> None:
        self.inp, self.out = inp, out
        self.tty = bool(getattr(inp, "isatty", lambda: False)())

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def ask(self, prompt: str) -> str | None:
        """The next line (stripped), or None at the end of the input."""
        if self.tty and self.inp is sys.stdin and self.out is sys.stdout:
            try:
                return input(prompt).strip()
            except EOFError:
                self.say()
                return None
        self.out.write(prompt)
        self.out.flush()
        line = self.inp.readline()
        if not line:
            self.say()
            return None
        if not self.tty:
            self.out.write(line if line.endswith("\n") else line + "\n")
        return line.strip()


def play(cfg: DictConfig, input_stream: TextIO | None = None, output_stream: TextIO | None = None) -> dict:
    """Play games of a human (``input_stream``) against the configured agent until quit or end of input.

    Returns the tally from the human's side: ``games``, ``wins``, ``draws``, ``losses``, and
    ``saved`` (the checkpoint path written with learn=true, else None).
    """
    import torch

    check_seed_and_threads(cfg)
    torch.set_num_threads(int(cfg.threads))
    io = _Console(input_stream or sys.stdin, output_stream or sys.stdout)
    if cfg.seat not in ("ask", "first", "second"):
        raise ValueError(f"seat must be first, second or ask, got {cfg.seat!r}")
    spec = agent_spec(cfg)
    game, [(label, agent)] = load_agents([spec], board_name(cfg))
    save_path = None
    if cfg.learn:
        if type(agent).learn_from_game is Player.learn_from_game:
            raise ValueError(f"{label} does not learn from games; learn=true needs a learning agent's checkpoint")
        save_path = Path(cfg.save) if cfg.save else _default_save_path(spec)
        if save_path is None:
            raise ValueError("learn=true: give save=PATH for the learned agent")
        if save_path.suffix not in (".pt", ".npz"):
            raise ValueError(f"save={save_path}: a checkpoint file ends in .pt or .npz")
        check_writable_file(save_path, "save")  # before the games, not after them
    frames = None
    if cfg.svg:
        frames = Path(cfg.svg)
        if frames.exists() and not frames.is_dir():
            raise ValueError(f"svg={frames}: not a folder")
        try:
            frames.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise ValueError(f"svg={frames}: cannot create the folder ({e.strerror})") from None
    rng = np.random.default_rng(int(cfg.seed))
    tally: dict[str, Any] = dict(games=0, wins=0, draws=0, losses=0, saved=None)
    learned = 0
    io.say(f"{game.name} against {label}. Empty cells show their numbers; the margins are coordinates.")
    io.say(f"Moves: {move_syntax(game)}. Commands: {COMMANDS}.")
    stopped, error = False, None
    try:  # Ctrl-C (or SIGTERM) between or during games, or any error: what was learned is saved all the same
        while True:
            human = _choose_seat(io, cfg.seat)
            if human is None:
                break
            saver = None if frames is None else _frame_saver(frames, tally["games"] + 1)
            states = _play_game(io, game, agent, label, human, rng, saver)
            if states is None:
                break
            winner = states[-1].winner()
            key = "draws" if winner == 0 else ("wins" if winner == human else "losses")
            tally["games"] += 1
            tally[key] += 1
            if cfg.learn:
                if agent.learn_from_game(states):
                    learned += 1
                    io.say(f"{label} learned from this game.")
                else:
                    io.say(f"{label} did not learn from this game.")
            answer = io.ask("Play again? [y/n]: ")
            if answer is None or answer.lower() not in ("y", "yes"):
                break
    except KeyboardInterrupt:
        stopped = True
        io.say("\ninterrupted")
    except Exception as e:  # raised again once the learned games are saved
        error = e
    failed = None
    if cfg.learn and learned:
        try:
            write_with_fallback(save_path, agent.save, "learned agent")
            tally["saved"] = str(save_path)
        except OutputError as e:  # saved elsewhere: say so after the tally
            failed = e
            tally["saved"] = str(e.fallback)
        io.say(f"saved the agent ({learned} games learned) to {tally['saved']}")
    io.say(f"You: {tally['wins']} won, {tally['draws']} drawn, {tally['losses']} lost. Bye.")
    if error is not None:
        raise error
    if failed is not None:
        raise failed
    if stopped:
        raise Interrupted()
    return tally


def _choose_seat(io: _Console, seat: str) -> int | None:
    if seat != "ask":
        return FIRST if seat == "first" else -FIRST
    while True:
        answer = io.ask("Play first (X) or second (O)? [1/2]: ")
        if answer is None or answer.lower() in ("q", "quit"):
            return None
        if answer.lower() in ("1", "first", "f", "x"):
            return FIRST
        if answer.lower() in ("2", "second", "s", "o"):
            return -FIRST
        io.say(f"{answer!r}: answer 1 (first, X) or 2 (second, O)")


def _frame_saver(folder: Path, game_number: int):
    """Writes a position as ``folder/game<G>_ply<NN>.svg`` (after ``undo`` the replayed plies overwrite theirs)."""

    def save(state: State) -> None:
        path = folder / f"game{game_number}_ply{state.num_moves:02d}.svg"
        svg = render_svg(state.game, state.board, state.last_action)
        atomic_write(path, lambda tmp: tmp.write_text(svg))

    return save


def _play_game(io: _Console, game: Game, agent: Player, label: str, human: int,
               rng: np.random.Generator, save=None) -> list[State] | None:
    """One game; the list of states from the start to the end, or None when the human quits.
    ``save(state)``, if given, is called with every position reached."""
    states = [game.initial_state()]
    io.say(f"\nYou are {SYMBOL[human]}, {label} is {SYMBOL[-human]}.")
    io.say(render_board(game, states[-1].board, show_numbers=True))
    if save is not None:
        save(states[-1])
    while not states[-1].is_terminal():
        state = states[-1]
        if state.to_play() != human:
            action = int(agent.act(state, rng))
            states.append(state.apply(action))
            if save is not None:
                save(states[-1])
            io.say(f"{label} plays {action} ({game.cell_label(action)}).")
            io.say(render_board(game, states[-1].board, show_numbers=True))
            continue
        text = io.ask(f"Your move ({SYMBOL[human]}): ")
        if text is None or text.lower() in ("q", "quit", "exit"):
            return None
        command = text.lower()
        if command in ("help", "?"):
            io.say(f"Type {move_syntax(game)}; or {COMMANDS}.")
        elif command == "hint":
            io.say(hint_text(agent, label, state))
        elif command == "undo":
            # back to the latest earlier position where it was the human's turn
            earlier = [i for i in range(len(states) - 1) if states[i].to_play() == human]
            if not earlier:
                io.say("nothing to undo")
                continue
            del states[earlier[-1] + 1:]
            io.say(f"took back your last move and {label}'s reply.")
            io.say(render_board(game, states[-1].board, show_numbers=True))
        elif text:
            try:
                action = parse_move(state, text, COMMANDS)
            except MoveError as e:
                io.say(str(e))
                continue
            states.append(state.apply(action))
            if save is not None:
                save(states[-1])
            io.say(f"You play {action} ({game.cell_label(action)}).")
            io.say(render_board(game, states[-1].board, show_numbers=True))
    winner = states[-1].winner()
    io.say("Draw." if winner == 0 else ("You win!" if winner == human else f"{label} wins."))
    if winner != 0:
        io.say(f"{SYMBOL[winner]} completed the line {line_text(game, game.winning_line(states[-1].board))}.")
    return states


@hydra.main(version_base="1.3", config_path="../configs", config_name="play")
def main(cfg: DictConfig) -> None:
    run_cli(play, cfg)


if __name__ == "__main__":
    main()
