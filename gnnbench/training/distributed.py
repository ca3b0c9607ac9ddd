"""One rank of a DDP run: neighbour-sampled mini-batches of its own share of the training
seeds, gradients all-reduced by DistributedDataParallel (compiled runs compile the DDP
model: dynamo's DDP optimizer splits the graph at the gradient buckets' boundaries),
inference on rank 0, and each epoch's per-rank timings gathered so that rank 0 records the
whole run. How the ranks are started and watched is gnnbench/runner/distributed.py.
"""

from __future__ import annotations

import math
import os
from datetime import timedelta

import torch
import torch.distributed as dist
from omegaconf import DictConfig
from torch import Tensor
from torch.nn.parallel import DistributedDataParallel

from gnnbench.data import Task
from gnnbench.training.epochs import Trainer, Variant

STAGES = ("train_s", "sample_s", "transfer_s", "compute_s")


def backend(cfg: DictConfig, device: torch.device) -> str:
    """`train.dist_backend`, where auto is nccl on CUDA and gloo on the CPU."""
    if cfg.train.dist_backend != "auto":
        return cfg.train.dist_backend
    return "nccl" if device.type == "cuda" else "gloo"


def init(cfg: DictConfig, device: torch.device, rank: int, world_size: int,
         init_method: str) -> None:
    """Join the run's process group. Every collective of the run, the rendezvous included,
    fails after `train.dist_timeout_s` instead of waiting for a rank that died or hangs."""
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(backend(cfg, device), init_method=init_method, rank=rank,
                            world_size=world_size,
                            timeout=timedelta(seconds=float(cfg.train.dist_timeout_s)),
                            device_id=device if device.type == "cuda" else None)


def shard(seeds: Tensor, rank: int, world_size: int, seed: int) -> Tensor:
    """Rank `rank`'s share of the training seeds: a permutation (the same on every rank)
    dealt out round-robin, padded by wrapping around so that every rank has as many seeds,
    hence as many batches: a rank with one batch more would wait forever in an all-reduce
    that the others never join. One rank keeps every seed in its order."""
    if world_size == 1:
        return seeds
    generator = torch.Generator().manual_seed(seed)
    order = seeds.cpu()[torch.randperm(seeds.numel(), generator=generator)]
    total = math.ceil(seeds.numel() / world_size) * world_size
    order = torch.cat([order, order[: total - seeds.numel()]])
    return order[rank::world_size].to(seeds.device)


def peer_failure(exc: BaseException) -> bool:
    """Whether `exc` is a collective that failed because another rank did (died, timed out):
    that rank, not this one, is the run's cause of failure."""
    text = str(exc)
    return isinstance(exc, dist.DistError) or any(sign in text for sign in (
        "Connection reset by peer", "Connection closed by peer", "gloo/transport",
        "NCCL", "ProcessGroup", "Timed out", "timed out"))


def gather(value: object) -> list:
    found = [None] * dist.get_world_size()
    dist.all_gather_object(found, value)
    return found


class DistributedTrainer(Trainer):
    """A Trainer for one rank of an initialised process group."""

    def __init__(self, cfg: DictConfig, task: Task, device: torch.device) -> None:
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self.is_main = self.rank == 0
        if device.type == "cpu":  # ranks of one host share its cores rather than fight
            local = int(os.environ.get("LOCAL_WORLD_SIZE", self.world_size))
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local))
        super().__init__(cfg, task, device)
        self.batching.update(world_size=self.world_size, seeds_per_rank=int(
            self.train_seeds()[0].numel()))

    def wrap(self, model: torch.nn.Module) -> torch.nn.Module:
        """DDP broadcasts rank 0's initial weights, then all-reduces gradients in buckets."""
        ids = [self.device] if self.device.type == "cuda" else None
        return DistributedDataParallel(model, device_ids=ids)

    def train_seeds(self) -> tuple[Tensor, int]:
        train = self.cfg.train
        return (shard(self.task.splits.train, self.rank, self.world_size, train.seed),
                train.seed + 7919 * self.rank)  # rank 0 samples as a one-process run does

    def agree(self, value: int) -> int:
        flag = torch.tensor([value], dtype=torch.long,
                            device=self.device if self.device.type == "cuda" else "cpu")
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        return int(flag.item())

    def _neighbor_epoch(self, v: Variant) -> dict:
        """The rank's epoch, then (outside every timed region) all ranks' figures gathered:
        the epoch ends when its slowest rank does, so that rank's time and split are the
        epoch's; the loss is the mean over all batches of all ranks; accuracy is rank 0's."""
        own = super()._neighbor_epoch(v)
        rows = gather(own)
        slowest = max(rows, key=lambda r: r["train_s"])
        batches = sum(r["batches"] for r in rows)
        merged = {**rows[0], **{k: slowest[k] for k in STAGES},
                  "loss": sum(r["loss"] * r["batches"] for r in rows) / max(batches, 1),
                  "slowest_rank": rows.index(slowest)}
        merged.update({f"rank_{k}": [r[k] for r in rows] for k in (*STAGES, "loss")})
        return merged
