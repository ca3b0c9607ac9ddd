"""How the graph reaches the message-passing layers, with the same model weights: PyG's
`edge_index` with scatter (coo), a `torch.sparse_csr` adjacency (csr: cuSPARSE SpMM on GPU,
which dynamo refuses to compile), PyG's `EdgeIndex` sorted by target (edge_index: PyG's
segment-reduction paths), or gnnbench's CSR custom op (csr-op: the same SpMM as an op
torch.compile keeps in its graph; GCN and mean-SAGE), or the same op with gnnbench's own
Triton kernel and row-balanced schedule (csr-triton; csr-op's SpMM where no CUDA). The
conversion is done once, before training, and timed apart from the steps."""

from __future__ import annotations

import warnings

from torch import Tensor


def convert(layout: str, edge_index: Tensor, edge_weight: Tensor | None,
            num_nodes: int, csr_aggr: str | None = None) -> tuple[object, Tensor | None]:
    """(what the convolutions take as `edge_index`, the edge weights to pass alongside).
    `csr_aggr`: the model's aggregation for csr-op and csr-triton (sum with weights, or mean)."""
    if layout == "coo":
        return edge_index, edge_weight
    if layout in ("csr-op", "csr-triton"):
        from gnnbench.models.csr import CSRAdjacency
        from gnnbench.models.csr_triton import TritonAdjacency

        kind = CSRAdjacency if layout == "csr-op" else TritonAdjacency
        adjacency = kind.from_edge_index(edge_index, num_nodes, edge_weight,
                                         aggr=csr_aggr or "sum")
        return adjacency, None
    if layout == "csr":
        from torch_geometric.utils import to_torch_csr_tensor

        # Transposed adjacency (rows are targets) with the weights as values: PyG's layers
        # read a sparse `adj_t` that way, and aggregate with one SpMM. torch's notices that
        # sparse CSR is "beta" and unchecked are said once in README, not on every run.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=r".*[Ss]parse (CSR tensor support|"
                                                      r"invariant checks)")
            adj_t = to_torch_csr_tensor(edge_index.flip(0), edge_weight,
                                        size=(num_nodes, num_nodes))
        return adj_t, None
    from torch_geometric import EdgeIndex

    index = EdgeIndex(edge_index, sparse_size=(num_nodes, num_nodes))
    index, perm = index.sort_by("col")
    return index, (edge_weight[perm] if edge_weight is not None and perm is not None
                   else edge_weight)
