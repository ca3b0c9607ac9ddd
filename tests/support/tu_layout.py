"""Writes a small graph-classification dataset in TU's raw layout (what PyG's TUDataset
reads: `<NAME>_A.txt` edges with 1-based node ids, `_graph_indicator`, `_graph_labels`,
`_node_labels`, `_edge_labels`), for tests of the TU loader without a download. The graphs
are gnnbench's molecule-like synthetic ones (7 atom types, MUTAG's count), labelled 1 / -1
as MUTAG's file is; the content is not MUTAG's, the layout is.

    python tests/support/tu_layout.py tests/fixtures/tu MUTAG 40
"""

from __future__ import annotations

import sys
from pathlib import Path

from gnnbench.data.synthetic_graphs import generate_graphs


def write(root: Path, name: str, num_graphs: int, seed: int = 0) -> Path:
    graphs = generate_graphs(num_graphs, median_nodes=17, size_sigma=0.3, min_nodes=6,
                             max_nodes=40, num_features=7, ring_fraction=0.1, seed=seed)
    raw = root / "TUDataset" / name / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    edges, indicator, node_labels, edge_labels, labels = [], [], [], [], []
    offset = 0
    for i, g in enumerate(graphs, start=1):
        for s, d in g.edge_index.t().tolist():
            edges.append(f"{s + offset + 1}, {d + offset + 1}")
            edge_labels.append("0")
        indicator += [str(i)] * g.num_nodes
        node_labels += [str(t) for t in g.x.argmax(dim=1).tolist()]
        labels.append("1" if int(g.y) == 1 else "-1")
        offset += g.num_nodes
    for suffix, lines in (("A", edges), ("graph_indicator", indicator),
                          ("graph_labels", labels), ("node_labels", node_labels),
                          ("edge_labels", edge_labels)):
        (raw / f"{name}_{suffix}.txt").write_text("\n".join(lines) + "\n")
    return raw


if __name__ == "__main__":
    write(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
