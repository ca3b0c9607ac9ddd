"""A seeded heterogeneous graph shaped like ogbn-mag (`dataset=synthetic-hetero`): papers,
authors, institutions and fields of study; authors write papers, papers cite papers,
papers have topics (fields), authors are affiliated with institutions. Only papers have
features; the task is a paper's class (ogbn-mag: its venue). Generated in vectorised torch
on the run's device, so the same code makes a CPU test graph and one of ogbn-mag's size
(736k papers, 1.1M authors, 21M edges: the YAML's sizes).

Every endpoint is drawn by a power-law propensity (Pareto, `power_law`), so degrees are
heavy-tailed as in mag. Classes shape the edges, not only the features: each author and
each field has a class of its own; with probability `homophily` a paper's authors, topics
and citations are drawn from its own class, otherwise from all. Paper features are a class
centroid of norm `feature_signal` plus unit noise, weak alone: the relations carry the rest.
Edges are stored in both directions (PyG's `T.ToUndirected`, as PyG's and OGB's mag
examples do), so messages reach papers from every type.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
import torch_geometric.transforms as T
from pydantic import model_validator
from torch import Tensor
from torch_geometric.data import HeteroData

from gnnbench.config import Count, FileName, Real, Settings, check, require
from gnnbench.data.synthetic import _sample_by_weight
from gnnbench.data.task import simple_accuracy

LEVEL = "hetero"  # what load_task builds from this loader: a HeteroTask
TARGET = "paper"


class Options(Settings):
    """conf/dataset/synthetic-hetero.yaml: node counts per type, edges per relation, and how
    learnable the paper classes are."""

    name: FileName | None = None
    num_papers: Count(10)
    num_authors: Count(1)
    num_institutions: Count(1)
    num_fields: Count(1)
    num_writes: Count(1)
    num_cites: Count(1)
    num_has_topic: Count(1)
    num_affiliated_with: Count(1)
    num_features: Count(1)
    num_classes: Count(2)
    homophily: Real(at_least=0, at_most=1)
    feature_signal: Real(at_least=0)
    power_law: Real(above=1)
    train_fraction: Real(above=0, below=1)
    val_fraction: Real(above=0, below=1)
    seed: Count(0) = 0

    @model_validator(mode="after")
    def _split(self) -> Options:
        total = self.train_fraction + self.val_fraction
        require(total < 1, f"dataset.train_fraction + dataset.val_fraction = {total:g} "
                           "leaves no test papers; it must be < 1")
        return self


class Pool:
    """Nodes of one type with a class each and power-law propensities: draws by propensity,
    from all nodes or only from a given class."""

    def __init__(self, classes: Tensor, power_law: float, g: torch.Generator) -> None:
        device, n = classes.device, classes.numel()
        u = torch.rand(n, generator=g, device=device, dtype=torch.float64)
        weight = (1.0 - u).pow(-1.0 / (power_law - 1.0))
        self.order = torch.argsort(classes, stable=True)
        self.cum = torch.cumsum(weight[self.order], 0)
        end = torch.cumsum(torch.bincount(classes, minlength=int(classes.max()) + 1), 0)
        self.hi = self.cum[(end - 1).clamp(min=0)]
        self.lo = torch.cat([self.cum.new_zeros(1), self.hi[:-1]])
        self.g = g

    def draw(self, wanted: Tensor, same: Tensor) -> Tensor:
        """One node per entry: of class `wanted[i]` where `same[i]`, else of any class."""
        zeros = self.cum.new_zeros(wanted.numel())
        full = self.cum[-1].expand(wanted.numel())
        wanted = wanted.clamp(max=self.hi.numel() - 1)
        lo = torch.where(same, self.lo[wanted], zeros)
        hi = torch.where(same, self.hi[wanted], full)
        return self.order[_sample_by_weight(self.cum, lo, hi, self.g)]


def generate_hetero(cfg: Options, device: torch.device) -> HeteroData:
    g = torch.Generator(device=device).manual_seed(cfg.seed)
    c = cfg.num_classes

    def classes(n: int) -> Tensor:
        return torch.randint(c, (n,), generator=g, device=device)

    y = classes(cfg.num_papers)
    pools = {"paper": Pool(y, cfg.power_law, g), "author": Pool(classes(cfg.num_authors),
                                                                cfg.power_law, g),
             "field_of_study": Pool(classes(cfg.num_fields), cfg.power_law, g),
             "institution": Pool(torch.zeros(cfg.num_institutions, dtype=torch.long,
                                             device=device), cfg.power_law, g)}
    paper_pool = pools["paper"]

    def relation(source: str, target: str, count: int, by_class: bool) -> Tensor:
        """`count` edges source -> target: the paper end drawn by propensity; the other end
        from the paper's class with probability `homophily` (by_class) or from all."""
        anchor = paper_pool.draw(torch.zeros(count, dtype=torch.long, device=device),
                                 torch.zeros(count, dtype=torch.bool, device=device))
        same = torch.rand(count, generator=g, device=device) < (cfg.homophily if by_class
                                                                 else 0.0)
        other_type = target if source == "paper" else source
        other = pools[other_type].draw(y[anchor], same)
        edges = torch.stack([anchor, other] if source == "paper" else [other, anchor])
        return torch.unique(edges, dim=1)  # no repeated edge

    data = HeteroData()
    centroids = torch.randn(c, cfg.num_features, generator=g, device=device)
    centroids = cfg.feature_signal * centroids / centroids.norm(dim=1, keepdim=True)
    data["paper"].x = centroids[y] + torch.randn(cfg.num_papers, cfg.num_features,
                                                 generator=g, device=device)
    data["paper"].y = y
    for kind, n in (("author", cfg.num_authors), ("institution", cfg.num_institutions),
                    ("field_of_study", cfg.num_fields)):
        data[kind].num_nodes = n
    data["author", "writes", "paper"].edge_index = relation("author", "paper",
                                                            cfg.num_writes, True)
    cites = relation("paper", "paper", cfg.num_cites, True)
    data["paper", "cites", "paper"].edge_index = cites[:, cites[0] != cites[1]]
    data["paper", "has_topic", "field_of_study"].edge_index = relation(
        "paper", "field_of_study", cfg.num_has_topic, True)
    # Affiliations carry no class: an author's institution is drawn by propensity alone.
    author = pools["author"].draw(torch.zeros(cfg.num_affiliated_with, dtype=torch.long,
                                              device=device),
                                  torch.zeros(cfg.num_affiliated_with, dtype=torch.bool,
                                              device=device))
    institution = pools["institution"].draw(torch.zeros_like(author),
                                            torch.zeros_like(author, dtype=torch.bool))
    data["author", "affiliated_with", "institution"].edge_index = torch.unique(
        torch.stack([author, institution]), dim=1)
    return T.ToUndirected()(data)


def random_split(num: int, train_fraction: float, val_fraction: float,
                 seed: int) -> dict[str, Tensor]:
    g = torch.Generator().manual_seed(seed + 1)
    perm = torch.randperm(num, generator=g)
    n_train, n_val = int(train_fraction * num), int(val_fraction * num)
    return {"train": perm[:n_train].sort().values,
            "val": perm[n_train:n_train + n_val].sort().values,
            "test": perm[n_train + n_val:].sort().values}


def degree_spread(data: HeteroData) -> dict:
    """Max and median in-degree per relation: how heavy the tails are."""
    out = {}
    for edge_type in data.edge_types:
        dst = data[edge_type].edge_index[1]
        deg = torch.bincount(dst, minlength=data[edge_type[2]].num_nodes).float()
        out["__".join(edge_type)] = {"median": float(deg.median()), "max": int(deg.max())}
    return out


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """Generated on the run's device (no cache: a few seconds even at ogbn-mag's size)."""
    cfg = check(Options, options, "dataset")
    started = time.perf_counter()
    data = generate_hetero(cfg, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    info = {"source": "synthetic", "generate_s": time.perf_counter() - started,
            "in_degree": degree_spread(data)}
    return {"hetero": data, "target": TARGET, "num_classes": cfg.num_classes,
            "splits": random_split(cfg.num_papers, cfg.train_fraction, cfg.val_fraction,
                                   cfg.seed),
            "accuracy": simple_accuracy, "info": info}
