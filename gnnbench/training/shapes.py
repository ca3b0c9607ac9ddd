"""Which input shapes a run's model met, and how much of its work was padding: what decides
whether compiling pays (every new shape is a recompilation without dynamic shapes, and a
CUDA-graph recording under reduce-overhead) and what padding to a few shapes costs.

Counted on the host from tensor shapes, never read from the device: no sync."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ShapeLog:
    """Every call of the model: its shape (nodes, edges, graphs) as the model saw it, and
    the real rows and edges within it."""

    policy: str = "exact"
    calls: int = 0
    real_nodes: int = 0
    real_edges: int = 0
    nodes: int = 0
    edges: int = 0
    shapes: set[tuple[int, ...]] = field(default_factory=set)
    # (shape, grad mode): without dynamic shapes, each needs a compiled version of its own
    # (training and evaluation under no_grad are different graphs).
    shape_modes: set[tuple] = field(default_factory=set)

    def add(self, shape: tuple[int, ...], real: tuple[int, int] | None = None,
            grad: bool = True) -> None:
        """`shape` starts with (nodes, edges); `real`: the unpadded (nodes, edges)."""
        real = real or (shape[0], shape[1])
        self.calls += 1
        self.shapes.add(tuple(shape))
        self.shape_modes.add((tuple(shape), grad))
        self.nodes += shape[0]
        self.edges += shape[1]
        self.real_nodes += real[0]
        self.real_edges += real[1]

    def summary(self) -> dict:
        """padding_share 0.12: 12 % of the node rows and edges computed were padding."""
        def share(real: int, total: int) -> float:
            return 1 - real / total if total else 0.0

        return {"policy": self.policy, "calls": self.calls, "distinct_shapes": len(self.shapes),
                "distinct_shape_modes": len(self.shape_modes),
                "padding_share": share(self.real_nodes + self.real_edges,
                                       self.nodes + self.edges),
                "padding_share_nodes": share(self.real_nodes, self.nodes),
                "padding_share_edges": share(self.real_edges, self.edges)}
