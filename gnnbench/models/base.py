"""The shape every model shares: a stack of PyG message-passing layers with optional batch
norm, ReLU and dropout between them. A model is a subclass that says which convolution to
stack, which of its options are valid, and what graph inputs it consumes."""

from __future__ import annotations

import torch.nn.functional as F
from omegaconf import DictConfig
from torch import Tensor, nn

from gnnbench.config import choice, integer, number
from gnnbench.models.csr import CSRAdjacency

ACTIVATIONS = {"relu": F.relu, "elu": F.elu}


class GNN(nn.Module):
    """[dropout → conv → (batch norm) → activation] …, conv.

    `input_dropout` is Kipf & Welling's dropout on the input features; OGB's examples use 0.
    `hidden` is a hidden layer's width (for attention: heads × channels per head).
    """

    uses_edge_weight = False  # whether the convolution takes per-edge weights
    gnnbench_native = True  # built from the model group as a whole, wherever it is defined

    def __init__(self, cfg: DictConfig, in_channels: int, out_channels: int) -> None:
        super().__init__()
        dims = [in_channels] + [cfg.hidden] * (cfg.num_layers - 1) + [out_channels]
        last = len(dims) - 2
        self.convs = nn.ModuleList(self.make_conv(i, o, cfg, k == last)
                                   for k, (i, o) in enumerate(zip(dims[:-1], dims[1:],
                                                                  strict=True)))
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(cfg.hidden) if cfg.batch_norm else nn.Identity()
            for _ in self.convs[:-1]
        )
        self.dropout = float(cfg.dropout)
        self.input_dropout = float(cfg.get("input_dropout", 0.0))
        self.activation = ACTIVATIONS[cfg.get("activation", "relu")]

    def make_conv(self, in_channels: int, out_channels: int, cfg: DictConfig,
                  last: bool) -> nn.Module:
        raise NotImplementedError

    @classmethod
    def validate(cls, cfg: DictConfig) -> None:
        """The options every model has; subclasses add their own."""
        integer("model.num_layers", cfg.num_layers, 1)
        integer("model.hidden", cfg.hidden, 1)
        for key in ("dropout", "input_dropout"):
            number(f"model.{key}", cfg.get(key, 0.0), at_least=0, below=1)
        choice("model.batch_norm", cfg.batch_norm, (False, True))
        choice("model.activation", cfg.get("activation", "relu"), tuple(ACTIVATIONS))

    @classmethod
    def csr_aggregation(cls, cfg: DictConfig) -> str | None:
        """How graph.layout=csr-op aggregates for this model ("sum" over weighted edges,
        "mean"), or None where the model cannot use it (its layers are not one SpMM)."""
        return None

    def aggregate_csr(self, i: int, x: Tensor, adjacency: CSRAdjacency) -> Tensor:
        raise NotImplementedError

    @classmethod
    def graph_inputs(cls, cfg: DictConfig, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """The edges (and per-edge weights) the model consumes, prepared once per run."""
        return edge_index, None

    def layer(self, i: int, x: Tensor, edge_index: Tensor,
              edge_weight: Tensor | None = None) -> Tensor:
        """Layer i without dropout: what layer-wise inference applies to all nodes in turn."""
        conv = self.convs[i]
        if isinstance(edge_index, CSRAdjacency):  # the same weights, aggregated by one SpMM
            x = self.aggregate_csr(i, x, edge_index)
        elif self.uses_edge_weight:
            x = conv(x, edge_index, edge_weight)
        else:
            x = conv(x, edge_index)
        return self.activation(self.norms[i](x)) if i < len(self.convs) - 1 else x

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        x = F.dropout(x, p=self.input_dropout, training=self.training)
        for i in range(len(self.convs)):
            x = self.layer(i, x, edge_index, edge_weight)
            if i < len(self.convs) - 1:
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x
