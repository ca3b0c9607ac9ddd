"""`gnnbench --help`: a page of our own (Hydra's, one flag away, lists its internals)."""

from __future__ import annotations

from gnnbench.config import group_choices

PAGE = """\
gnnbench: does torch.compile make my GNN faster, by how much, at what one-off cost,
and does it still learn the same thing?

usage:
  gnnbench [KEY=VALUE ...]              one run (python -m gnnbench works the same)
  gnnbench -m KEY=V1,V2 ...             a sweep over every combination (Hydra multirun)
  gnnbench report DIR [DIR ...]         compare the runs under folders (python -m gnnbench.report)
  gnnbench --hydra-help                 Hydra's own help (config groups, overrides syntax)
  gnnbench --version                    gnnbench's, torch's, PyG's and CUDA's versions

common commands:
  gnnbench                                         GCN on a built-in synthetic graph, eager
  gnnbench model=sage dataset=cora compile=true    one compiled run (Cora ships with gnnbench)
  gnnbench -m model=gcn,sage dataset=cora,citeseer compile=false,true
  gnnbench -m experiment=reference                 the reference sweep (GPU-sized)
  gnnbench model=sage dataset=cora compile=true train.paired=true
                                                   eager twin in the same process: speedup at once
  gnnbench model=custom model._target_=mymodel.Net dataset=file dataset.path=mygraph.pt
                                                   your own nn.Module on your own graph (README,
                                                   "Benchmark your own model"; examples/)

scaling out (README, "Scaling out"):
  gnnbench -m hydra/launcher=gpu-pool experiment=reference     one job per GPU of this host
  gnnbench -m hydra/launcher=slurm hydra.launcher.partition=P experiment=reference
                                                   a SLURM job array, one GPU per job
  gnnbench experiment=synthetic-products-sage train.distributed=ddp train.world_size=2
                                                   DDP on 2 GPUs (torchrun works too)

choices (conf/<group>/):
{groups}

keys you will set most (conf/config.yaml has them all, with comments):
  compile=false|true
  compiler.mode=default|reduce-overhead|max-autotune|max-autotune-no-cudagraphs
  compiler.scope=model|step compiler.dynamic=true|false|null     compiler.fullgraph=true|false
  train.epochs=200 train.warmup_epochs=10 train.seed=0 train.lr=0.01
  train.device=auto|cpu|cuda|cuda:N
  train.batching=full|neighbor  train.fanouts=[15,10]  train.batch_size=1024
  wandb.mode=auto|online|offline|disabled   data_dir=DIR   data_mirror=DIR   rerun=false|true
  hydra/launcher={launchers}   gpus=N
  train.distributed=none|ddp   train.world_size=1   train.dist_backend=auto|nccl|gloo

where results go:
  outputs/runs/<time>_<name>_<tag>/results.json     one run (also W&B's offline run in wandb/)
  outputs/sweeps/<time>_<pid>/<n>_<name>/...        a sweep, with report.md, report.csv and plots
  A compiled run compares itself with the eager run of the same setting and seed found in its
  sweep folder (one run: in outputs/runs/) or in reference_dirs=[DIR,...]. Re-running a sweep
  with hydra.sweep.dir=<its folder> resumes it. README.md has the rest.
"""


def page() -> str:
    groups = "\n".join(f"  {g + '=':12s}{', '.join(group_choices(g))}"
                       for g in ("model", "dataset", "variant", "workload", "regime",
                                 "experiment"))
    return PAGE.format(groups=groups, launchers="|".join(group_choices("hydra/launcher")))
