"""A value network valued through a board's symmetries: ``SymmetryAveraged(net, images)``.

An ensemble of one network over the board's symmetries, what one image gets wrong the others need not:
every score of a board (the value head's logit, the rank head's) is the mean of the network's score
over K images of the board, and its value the Tanh of that mean logit. The wrapper is a function of
boards with the methods move selection and the tools call (``forward``, ``logit``, ``rank_logit``,
``afterstate_scores``, ``afterstate_values``, ``afterstate_logits``); the network itself is unchanged,
so whatever else holds it (another player, the trainer) still values each board alone. It holds no
weights of its own: a player's symmetries are a way of playing, not weights (``DQNPlayer.symmetries``).
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from ttt.device import module_device
from ttt.nets.structured import AfterstateScores, ValueNet


class SymmetryAveraged(AfterstateScores, nn.Module):
    """``net`` valued through ``images`` (K, cells), each row a permutation of the cells that maps the
    board's lines onto lines (rows of ``Game.symmetries``; ``ttt.games.symmetry.symmetry_sample``),
    image k showing cell ``images[k, j]`` of the board at cell j. The afterstate of cell c of a board
    is the afterstate of cell ``inverse[k, c]`` of its image k."""

    def __init__(self, net: ValueNet, images: np.ndarray | torch.Tensor) -> None:
        super().__init__()
        images = torch.tensor(np.array(images, dtype=np.int64), device=module_device(net))
        if images.ndim != 2 or len(images) < 1 or not torch.equal(
                images.sort(1).values, torch.arange(images.shape[-1], device=images.device).expand_as(images)):
            raise ValueError("symmetry averaging needs a (K, cells) array whose rows are permutations of the cells")
        self.net = net
        self.register_buffer("images", images, persistent=False)
        self.register_buffer("inverse", images.argsort(1), persistent=False)

    @property
    def rank(self) -> nn.Module | None:
        """The network's rank head (None without one)."""
        return self.net.rank

    def _mean_over_images(self, score, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) the mean of ``score`` over the images of each board."""
        k, cells = self.images.shape
        return score(x[..., self.images.to(x.device)].reshape(-1, cells)).reshape(*x.shape[:-1], k).mean(-1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) values: the Tanh of the mean logit."""
        return torch.tanh(self.logit(x))

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) the mean over the images of the network's ``logit``."""
        return self._mean_over_images(self.net.logit, x)

    def rank_logit(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) the mean over the images of the rank head's scores, or without one
        the mean ``logit``."""
        if self.net.rank is None:
            return self.logit(x)
        return self._mean_over_images(self.net.rank_logit, x)

    def afterstate_heads(self, boards: torch.Tensor, ranks: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``ValueNet.afterstate_heads``, each score the mean over the images of the boards."""
        images, inverse = self.images.to(boards.device), self.inverse.to(boards.device)
        logits = rank = 0.0
        for image, back in zip(images, inverse, strict=True):
            z, r = self.net.afterstate_heads(boards[..., image], ranks)
            logits, rank = logits + z[..., back], (rank + r[..., back] if ranks else None)
        return logits / len(images), (rank / len(images) if ranks else None)
