"""Graph classification from a node-level GNN: node embeddings pooled per graph, then an
MLP head. The shape of PyG's `examples/gin.py` (Xu et al.'s GIN for graph classification:
GINConv layers, global sum pooling, an MLP with dropout); a GCN pools by mean instead.

The GNN is gnnbench's own model class, built with its last layer as wide as its hidden
ones; the readout comes from the class (`GNN.graph_readout`: GIN sums, as Xu et al. argue
sum pooling is what keeps GIN injective on multisets; the others take the mean).

`num_graphs` is passed to the pooling as the output size: without it PyG reads
`batch.max() + 1` from the device, a data-dependent value (a host sync, and a graph break
under torch.compile). With padded batches it counts the padding graph too, whose logits
the loss ignores."""

from __future__ import annotations

from torch import Tensor, nn
from torch_geometric.nn import global_add_pool, global_max_pool, global_mean_pool

from gnnbench.models.base import GNN

POOLING = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}


class GraphClassifier(nn.Module):
    """[GNN → activation] → pool per graph → Linear → ReLU → dropout → Linear."""

    def __init__(self, gnn: GNN, out_channels: int) -> None:
        super().__init__()
        hidden = gnn.options.hidden
        self.gnn = gnn
        self.name = gnn.name
        self.readout = gnn.graph_readout
        self.pool = POOLING[self.readout]
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(),
                                  nn.Dropout(float(gnn.options.dropout)),
                                  nn.Linear(hidden, out_channels))

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None,
                batch: Tensor, num_graphs: int) -> Tensor:
        h = self.gnn.activation(self.gnn(x, edge_index, edge_weight))
        return self.head(self.pool(h, batch, size=num_graphs))
