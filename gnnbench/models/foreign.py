"""Models that are not gnnbench's own: any `torch.nn.Module` class, or a function returning
one, named by `model._target_` (a user's model, PyG's stock `torch_geometric.nn.models`).

It is built with `hydra.utils.instantiate` from the model group's keys other than gnnbench's
own (those `Options` declares: the class cannot be expected to accept them), plus the input
and output widths under the names the class uses. The contract
(README, "Benchmark your own model"): `forward(x, edge_index)`, optionally taking
`edge_weight`, returns one row of logits per node. A model that breaks it is one clear
error before training. `Foreign` gives the user's module gnnbench's call (x, edge_index,
edge_weight); torch.compile is applied to the user's module itself (`with_compiled`), as
the user would, so dynamo's graph breaks and recompilations name the user's file and line.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf
from pydantic import ConfigDict
from torch import Tensor, nn

from gnnbench.config import (
    ConfigError,
    FileName,
    Identifier,
    Message,
    Real,
    Settings,
    check,
    first_line,
    require,
)

PROBE_NODES = 32


def _argument_line(key: str, value: object) -> None:
    default = key.rpartition(".")[2].removesuffix("_arg")
    raise ConfigError(f"{key}={value!r} must be the name of the class's argument (default: "
                      f"{default}), or null where the class takes none")


ArgumentName = Annotated[Identifier, Message(_argument_line)]


class Options(Settings):
    """gnnbench's keys in the model group of a class that is not gnnbench's; every other key
    is an option of the class, passed to it as it is (the class's signature checks it)."""

    model_config = ConfigDict(extra="allow")

    name: FileName | None = None
    in_channels_arg: ArgumentName | None = "in_channels"  # null: the class takes none
    out_channels_arg: ArgumentName | None = "out_channels"
    input_dropout: Real(at_least=0, below=1) = 0.0
    # How the graph is prepared once per run, before the model sees it: as given; self-loops
    # removed then one added per node (what GATConv does on every forward); or GCN's
    # symmetric normalisation with self-loops as edge weights (what GCNConv does).
    graph_inputs: Literal["none", "self-loops", "gcn-norm"] = "none"


def locate(target: object) -> Callable:
    """The class or factory `model._target_` names."""
    from hydra.utils import get_object

    require(isinstance(target, str) and bool(target.strip()),
            "model=custom needs model._target_=<module>.<Class or factory>, importable from "
            "the directory gnnbench is launched from")
    try:
        found = get_object(target)
    except Exception as exc:
        cause = exc.__cause__ or exc
        raise ConfigError(f"model._target_={target!r} cannot be imported "
                          f"({first_line(cause, typed=True)}); its module must be "
                          "importable from the directory gnnbench is launched from") from exc
    require(callable(found), f"model._target_={target!r} is not a class or a function")
    if isinstance(found, type):
        require(issubclass(found, nn.Module),
                f"model._target_={target!r} is not a torch.nn.Module (a model is a module "
                "whose forward(x, edge_index) returns one row of logits per node)")
    return found


def settings(cfg: DictConfig) -> Options:
    """The model group checked: its class importable, gnnbench's keys as declared."""
    locate(cfg.get("_target_"))
    group = OmegaConf.to_container(cfg, resolve=True)
    return check(Options, {k: v for k, v in group.items() if not k.startswith("_")}, "model")


def options(cfg: DictConfig) -> dict:
    """The class's own options: the group's keys other than gnnbench's (and Hydra's)."""
    return {k: v for k, v in OmegaConf.to_container(cfg, resolve=True).items()
            if k not in Options.model_fields and not k.startswith("_")}


def _takes_edge_weight(signature: inspect.Signature) -> bool:
    named = signature.parameters.get("edge_weight")
    return (named is not None and named.kind != named.POSITIONAL_ONLY) or any(
        p.kind == p.VAR_KEYWORD for p in signature.parameters.values())


def build(cfg: DictConfig, in_channels: int, out_channels: int) -> Foreign:
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    target = cfg.get("_target_")
    own = settings(cfg)
    kwargs = options(cfg)
    for name, value in ((own.in_channels_arg, in_channels), (own.out_channels_arg, out_channels)):
        if name is not None:
            kwargs[name] = value
    try:
        module = instantiate({"_target_": target, **kwargs})
    except InstantiationException as exc:
        cause = exc.__cause__ or exc
        if not isinstance(cause, TypeError):  # a bug inside the class: with its traceback
            raise cause from exc
        shown = ", ".join(f"{k}={v!r}" for k, v in kwargs.items())
        raise ConfigError(f"model._target_={target} cannot be built with {shown} "
                          f"({first_line(cause, typed=True)}); its options go under model "
                          "(+model.<option>=...), its argument names in "
                          "model.in_channels_arg / model.out_channels_arg") from exc
    require(isinstance(module, nn.Module),
            f"model._target_={target} returned a {type(module).__name__}, not a "
            "torch.nn.Module")
    signature = inspect.signature(module.forward)
    try:
        signature.bind(object(), object())
    except TypeError as exc:
        raise ConfigError(f"model._target_={target}: forward{signature} cannot be called as "
                          "forward(x, edge_index) (optionally with edge_weight)") from exc
    weighted = _takes_edge_weight(signature)
    require(own.graph_inputs != "gcn-norm" or weighted,
            f"model.graph_inputs=gcn-norm passes edge weights, but forward{signature} of "
            f"{target} takes no edge_weight")
    return Foreign(module, float(own.input_dropout), weighted)


def graph_inputs(options: Options, edge_index: Tensor,
                 num_nodes: int) -> tuple[Tensor, Tensor | None]:
    kind = options.graph_inputs
    if kind == "self-loops":
        from torch_geometric.utils import add_self_loops, remove_self_loops

        edge_index, _ = remove_self_loops(edge_index)
        return add_self_loops(edge_index, num_nodes=num_nodes)[0], None
    if kind == "gcn-norm":
        import torch_geometric.transforms as T
        from torch_geometric.data import Data

        normed = T.GCNNorm(add_self_loops=True)(Data(edge_index=edge_index,
                                                     num_nodes=num_nodes))
        return normed.edge_index, normed.edge_weight
    return edge_index, None


class Foreign(nn.Module):
    """The user's module behind gnnbench's call: optional dropout on the input features
    (`model.input_dropout`, Kipf & Welling's; 0 by default), and edge weights passed only
    to a forward that takes them."""

    def __init__(self, model: nn.Module, input_dropout: float, takes_edge_weight: bool) -> None:
        super().__init__()
        self.model = model
        self.input_dropout = input_dropout
        self.takes_edge_weight = takes_edge_weight

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        return self.call(self.model, x, edge_index, edge_weight)

    def call(self, model: Callable[..., Tensor], x: Tensor, edge_index: Tensor,
             edge_weight: Tensor | None = None) -> Tensor:
        if self.input_dropout:
            x = F.dropout(x, p=self.input_dropout, training=self.training)
        if edge_weight is not None and self.takes_edge_weight:
            return model(x, edge_index, edge_weight=edge_weight)
        return model(x, edge_index)

    def with_compiled(self, compiled: Callable[..., Tensor]) -> Callable[..., Tensor]:
        """gnnbench's call, with `compiled` (the user's module, compiled) in its place."""
        return functools.partial(self.call, compiled)

    @torch.no_grad()
    def probe(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None,
              out_channels: int, target: str) -> None:
        """The contract checked once before training, in eval mode, on the first few nodes
        of the real graph and the edges among them: one row of `out_channels` logits per
        node. (Lazy modules get their shapes here, before the optimizer sees them.)"""
        k = min(x.size(0), PROBE_NODES)
        keep = (edge_index < k).all(0)
        weight = edge_weight[keep] if edge_weight is not None else None
        was_training = self.training
        self.eval()
        try:
            out = self(x[:k], edge_index[:, keep], weight)
        finally:
            self.train(was_training)
        require(isinstance(out, Tensor), f"model._target_={target}: forward returned a "
                f"{type(out).__name__}; it must return a tensor of logits, one row per node")
        require(tuple(out.shape) == (k, out_channels) and out.is_floating_point(),
                f"model._target_={target}: forward returned a {out.dtype} tensor of shape "
                f"{tuple(out.shape)} for {k} nodes; it must return one row of "
                f"{out_channels} logits per node: shape ({k}, {out_channels})")
