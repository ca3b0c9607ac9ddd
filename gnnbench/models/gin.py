"""GIN (Xu et al. 2019) from PyG's GINConv: sum aggregation, then a 2-layer MLP per layer.

With `model.mlp_norm` the MLP has batch norm between its layers, as in Xu et al. and PyG's
own GIN example. Sum aggregation makes a node's input grow with its degree: on a power-law
graph (the arxiv-size one) hubs sum hundreds of neighbours and, without that norm, the
logits blow up and the model stays near chance (test 0.07 over 100 epochs on the H200).
"""

from __future__ import annotations

from torch import nn
from torch_geometric.nn import GINConv

from gnnbench.config import Flag
from gnnbench.models.base import GNN


class GIN(GNN):
    class Options(GNN.Options):
        train_eps: Flag = False
        mlp_norm: Flag = False  # batch norm inside each layer's MLP

    graph_readout = "sum"  # Xu et al.: sum pooling keeps GIN as expressive as the WL test

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        o = self.options
        norm = [nn.BatchNorm1d(o.hidden)] if o.mlp_norm else []
        mlp = nn.Sequential(nn.Linear(in_channels, o.hidden), *norm, nn.ReLU(),
                            nn.Linear(o.hidden, out_channels))
        return GINConv(mlp, train_eps=o.train_eps)
