"""Save a graph of your own for gnnbench (README, "Benchmark your own model").

    python save_graph.py                 # writes mygraph.pt (a PyG Data) and mygraph.npz
    python -m gnnbench dataset=file dataset.path=mygraph.pt

The graph here is made up (communities that mostly follow the labels, features that carry
a noisy class signal); put your own tensors in their place. What gnnbench reads:

- x: float node features, [num_nodes, num_features];
- edge_index: integer node ids, [2, num_edges], each edge source -> target (store both
  directions for an undirected graph);
- y: integer class labels, [num_nodes], in 0 .. num_classes - 1;
- train_mask, val_mask, test_mask (optional, all three or none): boolean, [num_nodes];
  without them gnnbench makes a seeded random split (dataset.train_fraction, .val_fraction,
  .split_seed).

gnnbench loads the file without running code from it (torch.load(weights_only=True),
numpy.load(allow_pickle=False)) and checks every field before it trains.
"""

import argparse

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.utils import to_undirected


def make_graph(num_nodes: int = 2000, num_classes: int = 5, num_features: int = 64,
               edges_per_node: int = 3, homophily: float = 0.6, signal: float = 0.25,
               seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(num_classes, (num_nodes,), generator=g)
    src = torch.randint(num_nodes, (num_nodes * edges_per_node,), generator=g)
    # With probability `homophily` an edge stays within its source's class, else it goes
    # to any node.
    by_class = torch.argsort(y)
    counts = torch.bincount(y, minlength=num_classes)
    starts = torch.cumsum(counts, 0) - counts
    c = y[src]
    within = by_class[starts[c] + (torch.rand(src.numel(), generator=g) * counts[c]).long()]
    anywhere = torch.randint(num_nodes, (src.numel(),), generator=g)
    same = torch.rand(src.numel(), generator=g) < homophily
    dst = torch.where(same, within, anywhere)
    keep = src != dst
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=num_nodes)
    # Features: a class centroid, weak against unit noise per feature.
    centroids = signal * torch.randn(num_classes, num_features, generator=g)
    x = centroids[y] + torch.randn(num_nodes, num_features, generator=g)
    order = torch.randperm(num_nodes, generator=g)
    masks = {name: torch.zeros(num_nodes, dtype=torch.bool)
             for name in ("train_mask", "val_mask", "test_mask")}
    masks["train_mask"][order[: num_nodes // 10]] = True
    masks["val_mask"][order[num_nodes // 10: num_nodes // 4]] = True
    masks["test_mask"][order[num_nodes // 4:]] = True
    return Data(x=x, edge_index=edge_index, y=y, **masks)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="mygraph", help="file name without suffix")
    parser.add_argument("--nodes", type=int, default=2000)
    args = parser.parse_args()
    data = make_graph(num_nodes=args.nodes)
    torch.save(data, f"{args.out}.pt")
    np.savez(f"{args.out}.npz", **{key: data[key].numpy() for key in data.keys()})
    print(f"wrote {args.out}.pt and {args.out}.npz: {data.num_nodes} nodes, "
          f"{data.num_edges} edges, {int(data.y.max()) + 1} classes")


if __name__ == "__main__":
    main()
