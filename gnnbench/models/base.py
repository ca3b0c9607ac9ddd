"""The shape every model shares: a stack of PyG message-passing layers with optional batch
norm, ReLU and dropout between them. A model is a subclass that says which convolution to
stack, declares its own options (`Options`, a subclass of `GNN.Options`) and what graph
inputs it consumes.

Built by `hydra.utils.instantiate(cfg.model, in_channels=..., out_channels=...)`: the group's
keys are the constructor's keyword options, checked against `Options` (the one declaration
of their types, ranges and choices), so a bad value is the same one-line error whether it
comes from a YAML file, the command line or Python (`GCN(8, 3, hidden=0)`). `name` is one of
them: the name runs go by, which the model records and does not otherwise use."""

from __future__ import annotations

from typing import Any, Literal

import torch.nn.functional as F
from torch import Tensor, nn

from gnnbench.config import Count, FileName, Flag, Real, Settings, check
from gnnbench.models.csr import CSRAdjacency

ACTIVATIONS = {"relu": F.relu, "elu": F.elu}


class GNN(nn.Module):
    """[dropout → conv → (batch norm) → activation] …, conv.

    `input_dropout` is Kipf & Welling's dropout on the input features; OGB's examples use 0.
    `hidden` is a hidden layer's width (for attention: heads × channels per head).
    """

    class Options(Settings):
        """The options every model has (conf/model/<name>.yaml); subclasses add their own."""

        name: FileName | None = None
        num_layers: Count(1) = 2
        hidden: Count(1) = 16
        dropout: Real(at_least=0, below=1) = 0.5
        input_dropout: Real(at_least=0, below=1) = 0.0
        batch_norm: Flag = False
        activation: Literal["relu", "elu"] = "relu"
        # A hidden layer adds its input to its output (deep models: gradients reach the
        # first layers; experiment=deep-sage). Only where widths agree: not the first or last.
        residual: Flag = False

    uses_edge_weight = False  # whether the convolution takes per-edge weights
    # How graph classification pools the node embeddings (models/readout.py); GIN sums.
    graph_readout = "mean"
    gnnbench_native = True  # built from the model group as a whole, wherever it is defined

    def __init__(self, in_channels: int, out_channels: int, **options: Any) -> None:
        super().__init__()
        self.options = o = self.settings(options)
        self.name = o.name
        dims = [in_channels] + [o.hidden] * (o.num_layers - 1) + [out_channels]
        last = len(dims) - 2
        self.convs = nn.ModuleList(self.make_conv(i, out, k == last)
                                   for k, (i, out) in enumerate(zip(dims[:-1], dims[1:],
                                                                    strict=True)))
        self.norms = nn.ModuleList(
            nn.BatchNorm1d(o.hidden) if o.batch_norm else nn.Identity()
            for _ in self.convs[:-1]
        )
        self.dropout = float(o.dropout)
        self.input_dropout = float(o.input_dropout)
        self.activation = ACTIVATIONS[o.activation]
        self.residual = bool(o.residual)

    @classmethod
    def settings(cls, options: Any) -> Options:
        """`options` (a mapping of the model group's keys, `_target_` aside) checked against
        the class's declaration."""
        return check(cls.Options, options, "model")

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        """One layer, from `self.options`."""
        raise NotImplementedError

    @classmethod
    def csr_aggregation(cls, options: Options) -> str | None:
        """How graph.layout=csr-op and csr-triton aggregate for this model ("sum" over
        weighted edges, "mean"), or None where the model cannot use them (its layers are not
        one SpMM)."""
        return None

    def aggregate_csr(self, i: int, x: Tensor, adjacency: CSRAdjacency) -> Tensor:
        raise NotImplementedError

    @classmethod
    def graph_inputs(cls, options: Options, edge_index: Tensor,
                     num_nodes: int) -> tuple[Tensor, Tensor | None]:
        """The edges (and per-edge weights) the model consumes, prepared once per run."""
        return edge_index, None

    def layer(self, i: int, x: Tensor, edge_index: Tensor,
              edge_weight: Tensor | None = None) -> Tensor:
        """Layer i without dropout: what layer-wise inference applies to all nodes in turn."""
        conv = self.convs[i]
        if isinstance(edge_index, CSRAdjacency):  # the same weights, aggregated by one SpMM
            out = self.aggregate_csr(i, x, edge_index)
        elif self.uses_edge_weight:
            out = conv(x, edge_index, edge_weight)
        else:
            out = conv(x, edge_index)
        if i == len(self.convs) - 1:
            return out
        out = self.activation(self.norms[i](out))
        return out + x if self.residual and i > 0 else out

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        x = F.dropout(x, p=self.input_dropout, training=self.training)
        for i in range(len(self.convs)):
            x = self.layer(i, x, edge_index, edge_weight)
            if i < len(self.convs) - 1:
                x = F.dropout(x, p=self.dropout, training=self.training)
        return x
