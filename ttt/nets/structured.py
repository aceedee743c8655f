"""The structured value network of van de Steeg, Drugan & Wiering (2015) and its unstructured baselines.

``StructuredLayer`` gives every winning line of the board ``detectors`` hidden units that see only
the line's cells: L blocks of (k x D) weights, a block-diagonal map from the L*k gathered line cells
to L*D units (76 lines x 4 detectors = 304 units on 4x4x4). It is computed as a gather plus a batched
per-line product, never as a dense masked matrix, so off-block weights do not exist and cannot be
trained. Lines come from the game, so one layer class serves every board.

``build_body(network_cfg, game)`` builds the body every network here shares (the structured layer or
a Linear one, then fully connected Tanh layers) from the ``network`` config group;
``build_value_net`` puts one output in [-1, 1] on it (the five networks of the paper: Xavier
initialisation, Tanh activations), and AlphaZero's policy-value network puts its two heads on it.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

from ttt.games.symmetry import line_orbits

# the hidden units' functions (``network.activation``): the function and its module
ACTIVATIONS = {"tanh": (torch.tanh, nn.Tanh), "sigmoid": (torch.sigmoid, nn.Sigmoid)}


class StructuredLayer(nn.Module):
    """Line detectors: ``detectors`` units per line, each seeing only the cells of its line.

    ``lines`` is an (L, k) tensor of cell indices (``Game.lines``). ``forward`` maps (N, num_cells) to
    the (N, L*detectors) pre-activations, ordered line by line (units ``l*D .. l*D+D-1`` belong to line l).

    ``orbits`` (optional, (L,) orbit numbers 0..O-1, ``ttt.games.symmetry.line_orbits``) ties the
    weights: every line of an orbit uses its orbit's one (k x D) block (and D biases), position j of
    the block on position j of the line, so ``lines`` should then be oriented by the same function.
    The layer keeps its L*D units and its block-diagonal form; only O blocks are trained, and each
    learns from a pattern seen on any line of its orbit. ``blocks()`` and ``biases()`` give the
    per-line weights either way.

    ``dense`` computes the forward pass as one matrix product with ``dense_weight()``, the blocks
    placed in a zero (L*D, num_cells) matrix: the same parameters and sums, rounded in another order,
    and on a CPU several times faster than the per-line products (the zeros cost less than the gather).

    ``stacked`` (set on the copy that ``ttt.nets.runs`` computes K networks with) takes parameters with a
    leading axis over K networks and (K, N, num_cells) boards: products and sums of the line cells for a
    few boards per network, else one batched product with ``stacked_dense_weight()``.

    ``below`` (optional, (num_cells,) the cell below each cell, -1 on the floor: ``Game.below``) gives
    the layer a second input plane, the playable cells (empty, and on the floor or above a filled
    cell), computed from the board by ``inputs``: each line's block is then (2k x D), positions k..2k-1
    seeing the playable flags of the line's cells. On a gravity board whether a line's empty cell can
    be taken now depends on a cell outside the line; this plane shows it to the line's detectors.
    """

    def __init__(self, lines: torch.Tensor, num_cells: int, detectors: int = 4, bias: bool = False,
                 orbits: torch.Tensor | None = None, dense: bool = False, below: torch.Tensor | None = None) -> None:
        super().__init__()
        self.dense = bool(dense)
        self.stacked = False  # set on the copy that computes K stacked networks at once (ttt.nets.runs)
        lines = torch.as_tensor(lines, dtype=torch.long)
        if lines.ndim != 2 or lines.numel() == 0:
            raise ValueError(f"lines must be a non-empty (L, k) tensor, got shape {tuple(lines.shape)}")
        if int(lines.min()) < 0 or int(lines.max()) >= num_cells:
            raise ValueError(f"line cells must lie in 0..{num_cells - 1}")
        self.num_cells = int(num_cells)
        self.detectors = int(detectors)
        self.playable = below is not None
        if self.playable:
            below = torch.as_tensor(below, dtype=torch.long)
            if below.shape != (num_cells,):
                raise ValueError(f"below must have one entry per cell ({num_cells}), got shape {tuple(below.shape)}")
            above = torch.full((num_cells,), -1, dtype=torch.long)
            above[below[below >= 0]] = torch.nonzero(below >= 0).flatten()
            # the cell below each cell in a board padded with one filled cell (index num_cells): the floor
            self.register_buffer("below", torch.where(below < 0, num_cells, below), persistent=False)
            self.register_buffer("above", above, persistent=False)
            lines = torch.cat([lines, lines + num_cells], 1)  # positions k..2k-1: the cells' playable flags
        self.num_inputs = self.num_cells * (2 if self.playable else 1)
        self.register_buffer("lines", lines.clone(), persistent=False)
        num_lines, k = lines.shape
        if orbits is None:
            self.orbits = None
            self.weight = nn.Parameter(torch.empty(num_lines, k, detectors))  # one (k x D) block per line
            self.bias = nn.Parameter(torch.zeros(num_lines * detectors)) if bias else None
        else:
            orbits = torch.as_tensor(orbits, dtype=torch.long)
            if orbits.shape != (num_lines,) or int(orbits.min()) < 0:
                raise ValueError(f"orbits must be ({num_lines},) orbit numbers from 0, got shape {tuple(orbits.shape)}")
            count = int(orbits.max()) + 1
            if len(torch.unique(orbits)) != count:
                raise ValueError("orbits must number the orbits 0, 1, ... without gaps")
            self.register_buffer("orbits", orbits.clone(), persistent=False)
            self.shared_weight = nn.Parameter(torch.empty(count, k, detectors))  # one block per orbit
            self.shared_bias = nn.Parameter(torch.zeros(count, detectors)) if bias else None
        self.reset_parameters()

    @property
    def num_lines(self) -> int:
        return int(self.lines.shape[0])

    @property
    def out_features(self) -> int:
        return self.num_lines * self.detectors

    @property
    def tied(self) -> bool:
        return self.orbits is not None

    def blocks(self) -> torch.Tensor:
        """(L, k, D): the weights of every line's detectors (an orbit's shared block when tied)."""
        return self.weight if self.orbits is None else self.shared_weight[..., self.orbits, :, :]

    def biases(self) -> torch.Tensor | None:
        """(L*D,) biases of the units, or None without biases."""
        if self.orbits is None:
            return self.bias
        if self.shared_bias is None:
            return None
        bias = self.shared_bias[..., self.orbits, :]
        return bias.reshape(*bias.shape[:-2], -1)

    def reset_parameters(self) -> None:
        """Xavier-uniform per block: each detector has fan-in k (its line) and fan-out D."""
        weight = self.weight if self.orbits is None else self.shared_weight
        bias = self.bias if self.orbits is None else self.shared_bias
        k, d = weight.shape[1:]
        bound = math.sqrt(6.0 / (k + d))
        nn.init.uniform_(weight, -bound, bound)
        if bias is not None:
            nn.init.zeros_(bias)

    def inputs(self, boards: torch.Tensor) -> torch.Tensor:
        """(..., cells) boards -> (..., 2 * cells): each board and its plane of playable cells."""
        padded = torch.cat([boards, boards.new_ones(*boards.shape[:-1], 1)], -1)
        playable = (boards == 0) & (padded[..., self.below] != 0)
        return torch.cat([boards, playable.to(boards.dtype)], -1)

    def move_columns(self) -> torch.Tensor:
        """(..., cells, L*D): what placing an own piece on each cell adds to the pre-activations (a
        column of ``dense_weight``; with the playable plane, also the flags of that cell and the one
        above it changing), stacked networks along the leading axis."""
        w = self.stacked_dense_weight() if self.stacked else self.dense_weight()  # (..., L*D, inputs)
        n = self.num_cells
        cols = w[..., :n]
        if self.playable:
            up = w[..., n + self.above.clamp(min=0)] * (self.above >= 0).to(w.dtype)
            cols = cols - w[..., n:] + up
        return cols.transpose(-1, -2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.playable:
            x = self.inputs(x)
        if self.dense:  # the same sums as one matrix product with the zero-padded weight (other rounding)
            return F.linear(x, self.dense_weight(), self.biases())
        if self.stacked:  # (K, N, cells) boards of K networks whose parameters are stacked (ttt.nets.runs)
            if x.shape[1] <= 4:  # few boards: products and sums of the line cells (no zero-padded weights)
                cells = x[..., self.lines]  # (K, N, L, k)
                out = (cells.unsqueeze(-1) * self.blocks().unsqueeze(1)).sum(-2).flatten(-2)
            else:  # one batched product with the zero-padded weights
                out = torch.bmm(x, self.stacked_dense_weight().transpose(1, 2))
            bias = self.biases()
            return out if bias is None else out + bias.unsqueeze(1)
        cells = x[:, self.lines]  # (N, L, k): the cells of every line
        out = torch.einsum("nlk,lkd->nld", cells, self.blocks()).reshape(x.shape[0], self.out_features)
        bias = self.biases()
        return out if bias is None else out + bias

    def dense_weight(self) -> torch.Tensor:
        """The equivalent (L*D, num_cells) Linear weight, zero outside the blocks (differentiable)."""
        blocks = self.blocks()
        num_lines, k, d = blocks.shape
        dense = blocks.new_zeros(num_lines, self.num_inputs, d)
        rows = torch.arange(num_lines, device=blocks.device)[:, None].expand(num_lines, k)
        dense = dense.index_put((rows, self.lines), blocks, accumulate=True)  # (L, cells, D)
        return dense.permute(0, 2, 1).reshape(num_lines * d, self.num_inputs)

    def stacked_dense_weight(self) -> torch.Tensor:
        """``dense_weight`` of K networks whose blocks are stacked, (K, L, k, D) -> (K, L*D, num_cells): each
        block entry copied to its one place (entries never share one)."""
        blocks = self.blocks()
        num_lines, k, d = blocks.shape[1:]
        at = getattr(self, "_stacked_at", None)  # entry (l, j, d) -> its place, worked out once
        if at is None or at.device != blocks.device:
            with torch.inference_mode(False):  # a normal tensor, which autograd may save, wherever it is made
                unit = torch.arange(num_lines * d, device=blocks.device).view(num_lines, 1, d)
                at = self._stacked_at = (unit * self.num_inputs + self.lines.unsqueeze(-1)).reshape(-1)
        size = num_lines * d * self.num_inputs
        dense = blocks.new_zeros(blocks.shape[0], size).index_copy_(1, at, blocks.reshape(blocks.shape[0], -1))
        return dense.view(-1, num_lines * d, self.num_inputs)

    def extra_repr(self) -> str:
        tied = f", tied in {int(self.orbits.max()) + 1} orbits" if self.tied else ""
        dense = ", dense forward" if self.dense else ""
        playable = ", with the playable plane" if self.playable else ""
        return f"lines={self.num_lines}, line_length={self.lines.shape[1]}, detectors={self.detectors}, " \
               f"bias={self.biases() is not None}{tied}{dense}{playable}"


class AfterstateScores:
    """The scores of every legal afterstate of a batch of boards, in one pass, from ``afterstate_heads``
    (the heads' outputs at the afterstate of every cell) and ``rank`` (the rank head, or None): the
    methods move selection calls, shared by ``ValueNet`` and what values boards through it
    (``ttt.nets.averaged.SymmetryAveraged``)."""

    rank: nn.Module | None

    def afterstate_heads(self, boards: torch.Tensor, ranks: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        raise NotImplementedError

    def afterstate_values(self, boards: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """Values of every legal afterstate in one pass: (E, cells) boards from the mover's view and a
        (E, cells) bool mask -> (E, cells) values, -inf where illegal."""
        return self._afterstates(boards, legal, False)[0]

    def afterstate_scores(self, boards: torch.Tensor, legal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``(values, ranks)`` of every legal afterstate in one pass, each (E, cells), -inf where illegal:
        the value head's values (``afterstate_values``) and the rank head's scores (``rank_logit``), the
        trunk computed once; ``ranks`` is None without a rank head."""
        return self._afterstates(boards, legal, self.rank is not None)

    def _afterstates(self, boards: torch.Tensor, legal: torch.Tensor,
                     ranks: bool) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``afterstate_scores``, the rank head's scores only when ``ranks``."""
        logits, rank = self.afterstate_heads(boards, ranks)
        values = torch.tanh(logits).masked_fill(~legal, float("-inf"))
        return values, (rank.masked_fill(~legal, float("-inf")) if ranks else None)

    def afterstate_logits(self, boards: torch.Tensor, legal: torch.Tensor) -> torch.Tensor:
        """The value head's logits (the Tanh's inputs) of every legal afterstate in one pass, as
        ``afterstate_values`` computes them: (E, cells), -inf where illegal (``train/health/logit``)."""
        return self.afterstate_heads(boards, False)[0].masked_fill(~legal, float("-inf"))


class ValueNet(AfterstateScores, nn.Module):
    """Afterstate value V(s') in [-1, 1] of boards seen from the player who just moved.

    ``first`` (a StructuredLayer or Linear) is linear in the board, then Tanh, then ``rest``, which
    starts with a Linear and ends with the value head, a Linear unit and its Tanh (``build_value_net``).

    ``rank`` (optional, a Linear with one output): the rank head, a second output on the trunk (the
    first layer and the hidden layers, what ``rest`` computes before the value head). Its output is a
    score whose order alone counts (``rank_logit``): the rank pairs train it, so that they no longer
    move the values. Without it ``rank_logit`` is the value head's ``logit``.
    """

    def __init__(self, first: nn.Module, rest: nn.Sequential, rank: nn.Linear | None = None,
                 activation: str = "tanh") -> None:
        super().__init__()
        self.act = ACTIVATIONS[activation][0]  # the hidden units' function (``first`` is followed by it)
        self.first = first
        self.rest = rest
        self.rank = rank  # registered as a submodule only when given: the state_dict without it is unchanged

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) values."""
        return self.rest(self.act(self.first(x))).squeeze(-1)

    def logit(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) inputs of the output unit's Tanh: ``forward(x) == tanh(logit(x))``."""
        if not isinstance(self.rest[-1], nn.Tanh):
            raise ValueError("logit needs a network whose output unit is a Tanh (build_value_net)")
        return self.rest[:-1](self.act(self.first(x))).squeeze(-1)

    def _output_unit(self) -> nn.Linear:
        """The value head's output unit, the Linear under its Tanh."""
        out = self.rest[-2] if len(self.rest) >= 2 else None
        if not isinstance(self.rest[-1], nn.Tanh) or not isinstance(out, nn.Linear) or out.out_features != 1:
            raise ValueError("rescale_logit needs a network whose value head is one Linear unit and its Tanh")
        return out

    def takes_shift(self) -> bool:
        """Whether ``rescale_logit`` can shift the logit: the output unit has a bias (``network.bias``)."""
        return self._output_unit().bias is not None

    @torch.no_grad()
    def rescale_logit(self, scale: float, shift: float = 0.0) -> None:
        """Fold ``logit -> scale * logit + shift`` into the value head's output unit (its weights times
        ``scale``, its bias ``scale * bias + shift``): afterwards ``forward(x)`` is ``tanh(scale * logit(x)
        + shift)`` of the network before, with the same parameters. The rank head is not changed."""
        out = self._output_unit()
        if shift and out.bias is None:
            raise ValueError("a network without biases (network.bias=false) cannot take a shift of its logit")
        out.weight.mul_(float(scale))
        if out.bias is not None:
            out.bias.mul_(float(scale)).add_(float(shift))

    def trunk(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N, width): what both heads read, the units below the value head."""
        return self.rest[:-2](self.act(self.first(x)))

    def rank_logit(self, x: torch.Tensor) -> torch.Tensor:
        """(N, cells) boards -> (N,) scores that order afterstates: the rank head's output, or without
        one the value head's ``logit``."""
        if self.rank is None:
            return self.logit(x)
        return self.rank(self.trunk(x)).squeeze(-1)

    def _by_lines(self) -> bool:
        """Whether afterstates are valued line by line (``_structured_next``): a structured first layer
        without the playable plane (a move there changes flags of lines that do not pass through it)."""
        return isinstance(self.first, StructuredLayer) and not self.first.playable

    def _linear_after(self, boards: torch.Tensor) -> torch.Tensor:
        """(E, cells, H): the hidden units after the first layer at every afterstate of ``boards``, every
        cell (a fixed shape; any leading axes, as for the stacked networks of runs side by side,
        ``ttt.nets.runs``): the board's pre-activation plus what each move adds (``move_columns``)."""
        base = self.first(boards)  # (E, H)
        cols = self.first.move_columns() if isinstance(self.first, StructuredLayer) \
            else self.first.weight.transpose(-1, -2)
        return self.act(base.unsqueeze(-2) + cols.unsqueeze(-3))

    def afterstate_heads(self, boards: torch.Tensor, ranks: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
        """(E, cells) the value head's logits at the afterstate of every cell (legal or not), and the rank
        head's scores when ``ranks`` (else None).

        Placing an own piece on cell a adds column a of the first (linear) layer to the board's
        pre-activation, so the afterstates share one first-layer product per board. With a structured
        first layer, only the detectors of the lines through a change, so the next layer's input
        changes by a sum over those lines (computed once per line and position).
        """
        if self._by_lines() and len(self.rest) == 2:
            # no hidden layer: the output unit (and the rank unit) read the line detectors
            logits = self._structured_next(boards, self.rest[0]).squeeze(-1)
            return logits, (self._structured_next(boards, self.rank).squeeze(-1) if ranks else None)
        if self._by_lines():
            h = self.rest[1:-2](self._structured_next(boards, self.rest[0]))  # (E, cells, width)
        else:
            h = self.rest[:-2](self._linear_after(boards))
        return self.rest[-2](h).squeeze(-1), (self.rank(h).squeeze(-1) if ranks else None)

    def _structured_next(self, boards: torch.Tensor, nxt: nn.Linear) -> torch.Tensor:
        """(E, cells, H): the Linear ``nxt`` after the line detectors, at every afterstate of ``boards``."""
        first = self.first
        blocks = first.blocks()
        num_lines, k, d = blocks.shape[-3:]
        lead = boards.shape[:-1]  # (E,), or (K, E) for K stacked networks (ttt.nets.runs)
        pre = first(boards).view(*lead, num_lines, 1, d)
        act = self.act(pre)
        z = nxt(act.reshape(*lead, num_lines * d))  # (E, H): the next layer at the board itself
        w_next = nxt.weight.view(*nxt.weight.shape[:-1], num_lines, d).movedim(-3, -1)  # (L, D, H)
        # an own piece at position j of line l adds weight[l, j] to that line's detectors
        delta = self.act(pre + blocks.unsqueeze(-4)) - act  # (E, L, k, D)
        if first.stacked:  # (K, E, L, k, H): one batched product of every network's and line's blocks
            runs = delta.shape[0]
            delta_z = torch.bmm(delta.transpose(1, 2).reshape(runs * num_lines, -1, d),
                                w_next.reshape(runs * num_lines, d, -1)).view(runs, num_lines, *lead[1:], k, -1)
            delta_z = delta_z.movedim(1, -3)
        else:
            delta_z = torch.einsum("elkd,ldh->elkh", delta, w_next)
        z_after = z.unsqueeze(-2).repeat(*(1,) * len(lead), first.num_cells, 1)  # (E, cells, H)
        z_after.index_add_(-2, first.lines.reshape(-1), delta_z.reshape(*lead, num_lines * k, z.shape[-1]))
        return z_after


def _xavier_linear(n_in: int, n_out: int, bias: bool) -> nn.Linear:
    layer = nn.Linear(n_in, n_out, bias=bias)
    nn.init.xavier_uniform_(layer.weight)
    if bias:
        nn.init.zeros_(layer.bias)
    return layer


def build_body(network, game, xavier: bool = True) -> tuple[nn.Module, list[nn.Module], int]:
    """The body every network of the project shares, for ``game``: ``(first, layers, width)``.

    ``network`` is a ``network`` config (a DictConfig or a dict): ``kind`` (``structured``: the
    line-detector layer with ``detectors`` units per line; ``mlp``: a Linear layer of ``hidden[0]``
    units), ``hidden`` (sizes of the fully connected Tanh layers; for ``mlp`` the first is the first
    layer's), ``bias`` (default true), ``tie_orbits`` (default false: structured only; the lines of an
    orbit of the board's symmetry group share their detectors' weights, ``StructuredLayer``), ``tie_lines``
    (default false: structured only; every line shares one block of detectors, each line oriented as for
    ``tie_orbits``: a pattern learned on a line of any kind is seen on all) and
    ``dense_forward`` (default false: structured only; the layer's forward pass as one matrix product
    with its zero-padded weight, ``StructuredLayer``), ``activation`` (default ``tanh``; or ``sigmoid``:
    the hidden units' function, ``hidden_activation``) and ``playable`` (default false: structured only;
    the line detectors also see which of their cells can be played now, ``StructuredLayer``'s ``below``).
    ``first`` is linear in the board and is followed by the activation; ``layers`` are the
    Linear-activation pairs after it, ``width`` the size of the last. Linear layers get Xavier-uniform
    weights and zero biases when ``xavier``, else PyTorch's default initialisation.
    """
    kind, hidden = str(network["kind"]), [int(h) for h in network["hidden"]]
    bias = bool(network.get("bias", True))
    activation = hidden_activation(network)
    playable = bool(network.get("playable", False))
    if playable and kind != "structured":
        raise ValueError("network.playable=true needs network.kind=structured (its line detectors see the plane)")
    tie_lines = bool(network.get("tie_lines", False))
    if tie_lines and kind != "structured":
        raise ValueError("network.tie_lines=true needs network.kind=structured (it ties its line detectors)")

    def linear(n_in: int, n_out: int) -> nn.Linear:
        return _xavier_linear(n_in, n_out, bias) if xavier else nn.Linear(n_in, n_out, bias=bias)

    cells = game.num_cells
    if kind == "structured":
        lines, orbits = game.lines, None
        if bool(network.get("tie_orbits", False)) or tie_lines:
            orbits, lines = line_orbits(game.lines, game.symmetries)
            orbits = torch.as_tensor(orbits)
            if tie_lines:  # one orbit of every line
                orbits = torch.zeros_like(orbits)
        first: nn.Module = StructuredLayer(torch.tensor(lines), cells, int(network.get("detectors", 4)), bias, orbits,
                                           bool(network.get("dense_forward", False)),
                                           torch.as_tensor(game.below) if playable else None)
        sizes = [first.out_features, *hidden]
    elif kind == "mlp":
        if not hidden:
            raise ValueError("an mlp network needs at least one hidden layer")
        first = linear(cells, hidden[0])
        sizes = hidden
    else:
        raise ValueError(f"unknown network kind {kind!r}; choose 'structured' or 'mlp'")
    layers: list[nn.Module] = []
    for n_in, n_out in zip(sizes[:-1], sizes[1:], strict=True):
        layers += [linear(n_in, n_out), ACTIVATIONS[activation][1]()]
    return first, layers, sizes[-1]


def hidden_activation(network) -> str:
    """The hidden units' function a ``network`` config names (``activation``, default ``tanh``)."""
    name = str(network.get("activation", "tanh"))
    if name not in ACTIVATIONS:
        raise ValueError(f"network.activation={name!r}: choose one of {', '.join(ACTIVATIONS)}")
    return name


def build_value_net(network_cfg, game, rank_head: bool = False) -> ValueNet:
    """The value network a ``network`` config describes, for ``game``: (N, cells) -> (N,) in [-1, 1].

    The body of ``build_body`` (Xavier initialisation), then one Tanh output unit; with ``rank_head``
    also a rank head, one Linear unit without bias on the same trunk (``ValueNet``), initialised after
    everything else, so that the rest starts as the network without it does for the same seed.
    """
    first, layers, width = build_body(network_cfg, game)
    bias = bool(network_cfg.get("bias", True))
    out = _xavier_linear(width, 1, bias)
    # the rank head needs no bias: its scores are only compared (rank_loss sees differences), so one would not learn
    rank = _xavier_linear(width, 1, False) if rank_head else None
    return ValueNet(first, nn.Sequential(*layers, out, nn.Tanh()), rank, hidden_activation(network_cfg))


def count_parameters(module: nn.Module) -> int:
    """Number of trainable scalars."""
    return sum(p.numel() for p in module.parameters() if p.requires_grad)
