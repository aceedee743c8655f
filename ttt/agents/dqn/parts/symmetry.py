"""Part ``symmetry``: every board an update trains on (TD targets, labels, rank pairs) is replaced by a
random one of its symmetric images, drawn from its run's stream.

A symmetry maps lines to lines, so the value is unchanged; the per-line detector weights of every line in
an orbit then learn from a threat seen on any of them."""

from __future__ import annotations

from ttt.agents.dqn.parts import Part


class Symmetry(Part):
    def __init__(self, trainer, settings) -> None:
        super().__init__(trainer, settings)
        xp, symmetries = trainer.xp, trainer.game.symmetries
        self.symmetries = xp.table(symmetries) if xp.is_torch else symmetries

    def transform(self, boards, runs):
        t = self.trainer
        xp, symmetries = t.xp, self.symmetries
        if not len(boards):
            return boards
        if t.k == 1:
            perms = symmetries[xp.integers(t.rngs[0], len(symmetries), len(boards))]
        else:
            perms = xp.zeros((len(boards), boards.shape[1]), "int64")
            for r in range(t.k):
                at = xp.flatnonzero(runs == r)
                if len(at):
                    perms[at] = symmetries[xp.integers(t.rngs[r], len(symmetries), len(at))]
        return boards[xp.arange(len(boards))[:, None], perms]
