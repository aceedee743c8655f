"""The update of K runs side by side, eager against ``torch.compile``: milliseconds a ply.

    python experiments/compile_update.py [runs=16] [rows=2] [plies=2000] [board=4x4x4_gravity] [compile=loss,step]

The update of a ply of the paper's online protocol (``ttt.perf``'s ``ONLINE_NETWORK``: the deep structured
network without biases; squared error; SGD) for ``runs`` networks side by side, their parameters stacked
(``ttt.nets.runs``), each with ``rows`` examples: clear the gradients, the stacked forward pass and the loss,
autograd's backward, the optimiser's step. Timed as the learner does it (eager), then with the loss's forward
pass compiled (``torch.compile``, inductor: C++ on the CPU; the stacked networks' call with each network's
rows already together, as ``RowNets`` makes it, without its host-side layout), then with the optimiser's step
compiled too (``compile=loss``: only the first). Before timing, the compiled loss's gradients are compared
with the eager ones (``torch.allclose``, atol 1e-5; exit 1 if they differ). One thread; the compile's own
seconds are printed apart. Fixed shapes (``dynamic=False``): the learner's plies vary the rows a network has,
and each new shape would compile again.
"""

from __future__ import annotations

import sys
import time

import torch

from ttt.cli import exit_on_help, key_values, run_cli

DEFAULTS = {"runs": "16", "rows": "2", "plies": "2000", "board": "4x4x4_gravity", "compile": "loss,step"}
COMPILED = ("loss", "step")


def parse(argv: list[str]) -> dict:
    """``key=value`` arguments over ``DEFAULTS``; ValueError (one line) on an unknown key or a bad value."""
    opts = key_values(argv, DEFAULTS)
    for key in ("runs", "rows", "plies"):
        if not opts[key].isdigit() or int(opts[key]) < (2 if key == "runs" else 1):
            raise ValueError(f"{key}={opts[key]}: a whole number, at least {2 if key == 'runs' else 1}")
    parts = [p for p in opts["compile"].split(",") if p]
    if any(p not in COMPILED for p in parts):
        raise ValueError(f"compile={opts['compile']}: a comma-separated list of {', '.join(COMPILED)} (or empty)")
    opts["compile"] = parts
    return opts


def measure(argv: list[str]) -> int:
    from omegaconf import OmegaConf

    from ttt.games import make_game
    from ttt.nets.runs import _SHELLS, RowNets, stack_parameters
    from ttt.nets.structured import build_value_net
    from ttt.perf import ONLINE_AGENT, ONLINE_NETWORK

    opts = parse(argv)
    game = make_game(opts["board"])
    k, w, plies = int(opts["runs"]), int(opts["rows"]), int(opts["plies"])
    torch.set_num_threads(1)
    torch.manual_seed(0)
    nets = [build_value_net(OmegaConf.create(ONLINE_NETWORK), game) for _ in range(k)]
    stacks = stack_parameters(nets)
    opt = torch.optim.SGD(stacks, lr=ONLINE_AGENT["lr"])
    x = torch.randint(-1, 2, (k * w, game.num_cells)).float()
    target = torch.rand(k * w) * 2 - 1
    rows = RowNets(nets, torch.arange(k).repeat_interleave(w))
    rows(x)  # makes the networks' shell: what the compiled loss calls
    shell, xs, ts = _SHELLS[nets[0]], x.view(k, w, -1), target.view(k, w)

    def loss() -> torch.Tensor:  # the learner's call: RowNets (its rows' layout worked out on the host)
        return ((rows(x) - target) ** 2).sum()

    def stacked_loss() -> torch.Tensor:  # the same sums without the host's part, which the compiler cannot trace
        return ((shell.call("forward", stacks, xs) - ts) ** 2).sum()

    def ply(loss_fn, step) -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        step()

    def ms_a_ply(loss_fn, step) -> float:
        for _ in range(min(50, plies)):
            ply(loss_fn, step)
        t0 = time.perf_counter()
        for _ in range(plies):
            ply(loss_fn, step)
        return (time.perf_counter() - t0) / plies * 1e3

    def grads(loss_fn) -> list[torch.Tensor]:
        opt.zero_grad(set_to_none=True)
        loss_fn().backward()
        return [s.grad.clone() for s in stacks]

    print(f"{k} runs side by side, {w} examples each, {opts['board']}: ms a ply (zero_grad, forward, backward, step)")
    print(f"eager                 {ms_a_ply(loss, opt.step):.3f}", flush=True)
    print(f"eager, no host layout {ms_a_ply(stacked_loss, opt.step):.3f}", flush=True)
    if not opts["compile"]:
        return 0
    t0 = time.perf_counter()
    compiled = torch.compile(stacked_loss, dynamic=False)
    same = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(grads(loss), grads(compiled), strict=True))
    print(f"compiled loss: the same gradients as eager: {same} (compiled in {time.perf_counter() - t0:.1f} s)")
    if not same:
        return 1
    print(f"compiled loss         {ms_a_ply(compiled, opt.step):.3f}", flush=True)
    if "step" in opts["compile"]:
        step = torch.compile(opt.step)
        t0 = time.perf_counter()
        ply(compiled, step)
        print(f"compiled step: compiled in {time.perf_counter() - t0:.1f} s")
        print(f"compiled loss + step  {ms_a_ply(compiled, step):.3f}")
    print(f"eager again           {ms_a_ply(loss, opt.step):.3f}")
    return 0


def main(argv: list[str]) -> int:
    exit_on_help(argv, __doc__, needed=False)
    return run_cli(measure, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
