"""Seeded graphs with learnable labels, generated in vectorised torch (on the GPU when the
run is there), so that the suite runs with no download and scales to OGB sizes.

Each node gets a class and a power-law degree propensity. An edge picks its source in
proportion to propensity; with probability `homophily` its target is drawn (again by
propensity) from the source's class, otherwise from all nodes. Features are a class
centroid of norm `feature_signal` plus unit Gaussian noise: weak alone, strong once a GNN
averages over same-class neighbours.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import torch
from omegaconf import DictConfig, OmegaConf
from pydantic import model_validator
from torch import Tensor
from torch_geometric.utils import to_undirected

from gnnbench.config import Count, FileName, Real, Settings, check, files, first_line, require
from gnnbench.data import cache
from gnnbench.data.task import simple_accuracy


class Options(Settings):
    """conf/dataset/synthetic*.yaml: the graph's size and how learnable it is, and its split
    (planetoid: a few labels per class; random: fractions of all nodes, the rest test)."""

    name: FileName | None = None
    num_nodes: Count(1)
    num_edges: Count(0)
    num_features: Count(1)
    num_classes: Count(1)
    homophily: Real(at_least=0, at_most=1)
    feature_signal: Real(at_least=0)
    power_law: Real(above=1)  # the degree-distribution exponent (Pareto: > 1)
    split: Literal["planetoid", "random"]
    train_per_class: Count(0) | None = None
    num_val: Count(0) | None = None
    num_test: Count(0) | None = None
    train_fraction: Real(above=0, below=1) | None = None
    val_fraction: Real(above=0, below=1) | None = None
    seed: Count(0) = 0

    @model_validator(mode="after")
    def _split_sizes(self) -> Options:
        needs = (("train_per_class", "num_val", "num_test") if self.split == "planetoid"
                 else ("train_fraction", "val_fraction"))
        for key in needs:
            require(getattr(self, key) is not None,
                    f"dataset.split={self.split} needs dataset.{key}")
        if self.split == "random":
            total = self.train_fraction + self.val_fraction
            require(total < 1, f"dataset.train_fraction + dataset.val_fraction = {total:g} "
                               "leaves no test nodes; it must be < 1")
        return self


def _sample_by_weight(cum: Tensor, lo: Tensor, hi: Tensor, g: torch.Generator) -> Tensor:
    """Positions i with probability proportional to cum[i] - cum[i-1], restricted to the
    cumulative window [lo, hi) given per draw: inverse-CDF sampling, one searchsorted."""
    u = lo + torch.rand(lo.shape, generator=g, device=lo.device, dtype=cum.dtype) * (hi - lo)
    return torch.searchsorted(cum, u, right=True).clamp_(max=cum.numel() - 1)


def generate_graph(num_nodes: int, num_edges: int, num_features: int, num_classes: int,
                   homophily: float, feature_signal: float, power_law: float, seed: int,
                   device: torch.device | str = "cpu") -> dict[str, Tensor]:
    """x [N, F] float32, y [N] int64, edge_index [2, E] undirected, without self-loops."""
    device = torch.device(device)
    g = torch.Generator(device=device).manual_seed(seed)
    y = torch.randint(num_classes, (num_nodes,), generator=g, device=device)

    # Pareto propensities: P(w > t) ~ t^-(power_law - 1).
    u = torch.rand(num_nodes, generator=g, device=device, dtype=torch.float64)
    weight = (1.0 - u).pow(-1.0 / (power_law - 1.0))
    order = torch.argsort(y, stable=True)
    cum = torch.cumsum(weight[order], 0)
    counts = torch.bincount(y, minlength=num_classes)
    class_end = torch.cumsum(counts, 0)
    hi_of_class = cum[(class_end - 1).clamp(min=0)]
    lo_of_class = torch.cat([cum.new_zeros(1), hi_of_class[:-1]])
    total = cum[-1]

    zeros, full = cum.new_zeros(num_edges), total.expand(num_edges)
    src = order[_sample_by_weight(cum, zeros, full, g)]
    same = torch.rand(num_edges, generator=g, device=device) < homophily
    c = y[src]
    lo = torch.where(same, lo_of_class[c], zeros)
    hi = torch.where(same, hi_of_class[c], full)
    dst = order[_sample_by_weight(cum, lo, hi, g)]

    keep = src != dst
    edge_index = to_undirected(torch.stack([src[keep], dst[keep]]), num_nodes=num_nodes)

    centroids = torch.randn(num_classes, num_features, generator=g, device=device)
    centroids = feature_signal * centroids / centroids.norm(dim=1, keepdim=True)
    x = centroids[y] + torch.randn(num_nodes, num_features, generator=g, device=device)
    return {"x": x, "y": y, "edge_index": edge_index}


def planetoid_style_split(y: Tensor, num_classes: int, train_per_class: int, num_val: int,
                          num_test: int, seed: int) -> dict[str, Tensor]:
    """Planetoid's public-split recipe: a few labels per class to train on, then val and
    test drawn from the remaining nodes."""
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    perm = torch.randperm(y.numel(), generator=g).to(y.device)
    labels = y[perm]
    train = torch.cat([perm[labels == c][:train_per_class] for c in range(num_classes)])
    rest = perm[~torch.isin(perm, train)]
    return {"train": train.sort().values, "val": rest[:num_val].sort().values,
            "test": rest[num_val:num_val + num_test].sort().values}


def random_split(num_nodes: int, train_fraction: float, val_fraction: float,
                 seed: int) -> dict[str, Tensor]:
    """OGB-style fractions of all nodes (the rest is test)."""
    g = torch.Generator(device="cpu").manual_seed(seed + 1)
    perm = torch.randperm(num_nodes, generator=g)
    n_train, n_val = int(train_fraction * num_nodes), int(val_fraction * num_nodes)
    return {"train": perm[:n_train].sort().values,
            "val": perm[n_train:n_train + n_val].sort().values,
            "test": perm[n_train + n_val:].sort().values}


def _fingerprint(params: Mapping, device: torch.device) -> str:
    """What a cache file was generated from: its parameters as the group gives them and the
    generator's device type (CPU and CUDA random streams differ, so the same seed gives a
    different graph on each)."""
    return f"{json.dumps(dict(params), sort_keys=True)}|{device.type}"


def _cache_path(params: Mapping, data_dir: Path, device: torch.device) -> Path:
    key = hashlib.sha1(_fingerprint(params, device).encode()).hexdigest()[:12]
    return data_dir / "synthetic" / f"{params['name']}-{device.type}-{key}.pt"


def _read_cache(path: Path, fingerprint: str, device: torch.device) -> dict | None:
    """The cached graph, or None (with one warning naming the file) when the file is
    unreadable or was generated from other parameters: it is then generated again."""
    try:
        parts = torch.load(path, map_location=device, weights_only=True)
        if not isinstance(parts, dict) or parts.get("fingerprint") != fingerprint:
            raise ValueError("generated from other parameters")
    except Exception as exc:  # truncated, garbage, or another graph: never trusted
        cache.warn(f"cache file {path} is unusable ({first_line(exc, typed=True)}); "
                   "generating the graph again")
        return None
    parts.pop("fingerprint")
    return parts


def _generate(cfg: Options, device: torch.device) -> tuple[dict, float]:
    started = time.perf_counter()
    parts = generate_graph(cfg.num_nodes, cfg.num_edges, cfg.num_features, cfg.num_classes,
                           cfg.homophily, cfg.feature_signal, cfg.power_law, cfg.seed, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    generate_s = time.perf_counter() - started
    if cfg.split == "planetoid":
        splits = planetoid_style_split(parts["y"], cfg.num_classes, cfg.train_per_class,
                                       cfg.num_val, cfg.num_test, cfg.seed)
    else:
        splits = random_split(cfg.num_nodes, cfg.train_fraction, cfg.val_fraction, cfg.seed)
    return {**parts, "splits": splits}, generate_s


def _write_cache(path: Path, parts: dict, fingerprint: str) -> None:
    """A unique temporary name, then a rename: concurrent runs never clash, and a reader
    never sees half a file."""
    contents = {"fingerprint": fingerprint,
                **{k: (v.cpu() if isinstance(v, Tensor) else
                       {s: i.cpu() for s, i in v.items()}) for k, v in parts.items()}}
    files.atomic_write(path, lambda tmp: torch.save(contents, tmp))


def load_synthetic(group: Mapping, data_dir: Path, device: torch.device) -> dict:
    """Generate once per parameter set (`group`: the dataset group's keys; Hydra's `_target_`
    names the loader, not the graph, and stays out), then reuse the cached file (a sweep
    generates each graph once, and concurrent runs wait for the one generating it).
    Generation time and size are reported in `info`."""
    if isinstance(group, DictConfig):
        group = OmegaConf.to_container(group, resolve=True)
    params = {k: v for k, v in group.items() if not k.startswith("_")}
    cfg = check(Options, params, "dataset")
    data_dir = Path(data_dir)
    path = _cache_path(params, data_dir, device)
    fingerprint = _fingerprint(params, device)
    info: dict = {"source": "synthetic", "generated_on": device.type, "cache_file": str(path)}
    with cache.locked(data_dir, f"synthetic-{path.stem}"):
        started = time.perf_counter()
        parts = _read_cache(path, fingerprint, device) if path.is_file() else None
        if parts is not None:
            info.update(from_cache=True, cache_load_s=time.perf_counter() - started)
        else:
            parts, generate_s = _generate(cfg, device)
            try:
                _write_cache(path, parts, fingerprint)
            except OSError as exc:  # read-only, or full
                raise cache.not_writable(data_dir, exc) from exc
            info.update(from_cache=False, generate_s=generate_s)
    info.update(bytes=path.stat().st_size)
    return {**parts, "num_classes": cfg.num_classes, "info": info}

def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """The dataset registry's entry point (`_target_` of conf/dataset/synthetic*.yaml),
    called with the group's keys as `options`: a generated graph needs no mirror."""
    return {**load_synthetic(options, data_dir, device), "accuracy": simple_accuracy}
