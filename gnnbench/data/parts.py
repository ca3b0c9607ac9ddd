"""What a loader returns, declared: a node-level loader's graph (`NodeGraph`, and with its
accuracy `NodeParts`), a graph-level loader's graphs (`GraphParts`) and a heterogeneous
loader's graph (`HeteroParts`). Loaders return plain dicts; `load_task` validates one
into its declaration once and reads attributes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict
from torch import Tensor


class _Parts(BaseModel):
    # Tensors, graphs and callables are checked by type only; keys a loader adds beyond the
    # declared ones are its own (nothing reads them).
    model_config = ConfigDict(arbitrary_types_allowed=True, extra="ignore")


class NodeGraph(_Parts):
    """One graph with node labels (what `synthetic.load_synthetic` gives)."""

    x: Tensor
    y: Tensor
    edge_index: Tensor
    splits: dict[str, Tensor]
    num_classes: int
    info: dict = {}


class NodeParts(NodeGraph):
    accuracy: Callable


class GraphParts(_Parts):
    graphs: list
    splits: dict[str, Any]
    num_features: int
    num_classes: int
    accuracy: Callable
    metric: str = "accuracy"
    info: dict = {}


class HeteroParts(_Parts):
    hetero: Any  # a PyG HeteroData
    target: str
    splits: dict[str, Tensor]
    num_classes: int
    accuracy: Callable
    info: dict = {}
