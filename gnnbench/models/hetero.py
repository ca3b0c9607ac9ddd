"""Models of heterogeneous graphs (several node and edge types), full batch:

- `model=sage`: GraphSAGE made heterogeneous by PyG's `to_hetero` (one SAGEConv per edge
  type, summed per destination type), as in PyG's heterogeneous-graph guide;
- `model=rgcn`: R-GCN (Schlichtkrull et al.) as PyG's `HeteroConv` of one `GraphConv` per
  relation with mean aggregation, summed: W_0 h_i + sum_r mean_{j in N_r(i)} W_r h_j.

Node types without features (ogbn-mag's authors, institutions, fields) get a learnable
embedding per node, as OGB's own R-GCN example for mag does. Layers are lazy (-1: widths
per type are found on the first forward, which `build_hetero_model` runs before training).
Dropout is an `nn.Dropout` module, not `F.dropout(training=self.training)`: to_hetero
traces the model once with torch.fx, which would freeze that flag at its traced value."""

from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import GraphConv, HeteroConv, SAGEConv, to_hetero

from gnnbench.config import ConfigError
from gnnbench.models.base import GNN
from gnnbench.models.sage import SAGE


class RGCN(GNN):
    """R-GCN. On a homogeneous graph (one relation) it is a stack of GraphConv."""

    def make_conv(self, in_channels: int, out_channels: int, last: bool) -> nn.Module:
        return GraphConv(in_channels, out_channels, aggr="mean")


class SAGEStack(nn.Module):
    """The homogeneous GraphSAGE that to_hetero turns into one per edge type."""

    def __init__(self, options: SAGE.Options, out_channels: int) -> None:
        super().__init__()
        widths = [options.hidden] * (options.num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(SAGEConv((-1, -1), w, aggr=options.aggr) for w in widths)
        self.act, self.drop = nn.ReLU(), nn.Dropout(float(options.dropout))

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        for conv in self.convs[:-1]:
            x = self.drop(self.act(conv(x, edge_index)))
        return self.convs[-1](x, edge_index)


class RGCNStack(nn.Module):
    """HeteroConv layers, one GraphConv per relation, relations summed per node type."""

    def __init__(self, options: GNN.Options, out_channels: int, metadata: tuple) -> None:
        super().__init__()
        widths = [options.hidden] * (options.num_layers - 1) + [out_channels]
        self.convs = nn.ModuleList(
            HeteroConv({rel: GraphConv((-1, -1), w, aggr="mean") for rel in metadata[1]},
                       aggr="sum") for w in widths)
        self.act, self.drop = nn.ReLU(), nn.Dropout(float(options.dropout))

    def forward(self, x_dict: dict[str, Tensor],
                edge_index_dict: dict[tuple, Tensor]) -> dict[str, Tensor]:
        for conv in self.convs[:-1]:
            x_dict = {k: self.drop(self.act(v)) for k, v in conv(x_dict, edge_index_dict).items()}
        return self.convs[-1](x_dict, edge_index_dict)


class HeteroNet(nn.Module):
    """Embeddings for featureless node types, the heterogeneous encoder, the target's
    logits: `forward(x_dict, edge_index_dict)` -> [target nodes, classes]. On a sampled
    subgraph (training/hetero_sampler.py) `n_id_dict` holds each featureless type's global
    node ids, so those types get their own nodes' embedding rows, not the whole table."""

    def __init__(self, encoder: nn.Module, embeddings: dict[str, int], width: int,
                 target: str, name: str | None) -> None:
        super().__init__()
        self.encoder, self.target, self.name = encoder, target, name
        self.embeddings = nn.ModuleDict({t: nn.Embedding(n, width)
                                         for t, n in embeddings.items()})

    def forward(self, x_dict: dict[str, Tensor], edge_index_dict: dict[tuple, Tensor],
                n_id_dict: dict[str, Tensor] | None = None) -> Tensor:
        if n_id_dict is None:  # the whole graph: every node's row
            inputs = {t: e.weight for t, e in self.embeddings.items()}
        else:
            inputs = {t: e(n_id_dict[t]) for t, e in self.embeddings.items()}
        inputs.update(x_dict)
        return self.encoder(inputs, edge_index_dict)[self.target]


def build_hetero_model(cls: type[GNN], options: GNN.Options, metadata: tuple,
                       num_nodes: dict[str, int], featured: dict[str, int], target: str,
                       num_classes: int) -> HeteroNet:
    """The model for `cls` (SAGE: to_hetero; RGCN: HeteroConv); featureless node types get
    embeddings as wide as the target's features."""
    if issubclass(cls, SAGE):
        encoder = to_hetero(SAGEStack(options, num_classes), metadata, aggr="sum")
    elif issubclass(cls, RGCN):
        encoder = RGCNStack(options, num_classes, metadata)
    else:
        raise ConfigError(f"model {options.name or cls.__name__} has no heterogeneous form; "
                          "a heterogeneous dataset needs one of: sage, rgcn")
    width = featured[target]
    return HeteroNet(encoder, {t: n for t, n in num_nodes.items() if t not in featured},
                     width, target, options.name)
