"""Every option of every config group, and every preset (with every job of the reference
sweep), composes, validates, and builds its model; a broken YAML fails here, not on a GPU."""

from __future__ import annotations

import itertools

import pytest
import torch
from omegaconf import OmegaConf

from gnnbench import config, data, models
from gnnbench.runner import validate

OPTIONS = [(group, option) for group in config.CONFIG_GROUPS
           for option in config.group_choices(group)]


def build(cfg) -> None:
    try:
        validate(cfg)
    except config.ConfigError as exc:  # a CUDA-only option, checked here without CUDA
        if torch.cuda.is_available() or "needs a CUDA device" not in str(exc):
            raise
    data.loader(cfg.dataset)
    model = models.build_model(cfg.model, in_channels=8, out_channels=3)
    if isinstance(model, models.Foreign):  # PyG's stock models: their own layer stacks
        model = model.model
    assert len(model.convs) == cfg.model.num_layers


def needed(group: str, option: str, tmp_path) -> list[str]:
    """What an option needs from the user (a class, a file) to compose and build."""
    if (group, option) == ("model", "custom"):
        return ["model._target_=torch_geometric.nn.models.GraphSAGE",
                "+model.hidden_channels=8", "+model.num_layers=2"]
    if (group, option) == ("dataset", "pyg"):
        return ["dataset._target_=torch_geometric.datasets.FakeDataset"]
    if (group, option) == ("dataset", "file"):
        import numpy as np

        np.savez(tmp_path / "g.npz", x=np.ones((3, 2), np.float32), y=np.zeros(3, np.int64),
                 edge_index=np.array([[0, 1], [1, 2]]))
        return [f"dataset.path={tmp_path / 'g.npz'}"]
    if option in ("synthetic-hetero", "synthetic-mag", "ogbn-mag"):  # only sage and rgcn are hetero
        return ["model=sage"]
    return []


def test_every_group_has_options():
    assert all(config.group_choices(g) for g in config.CONFIG_GROUPS)


@pytest.mark.parametrize(("group", "option"), OPTIONS, ids=lambda v: str(v))
def test_each_option_composes_and_builds(group, option, tmp_path):
    cfg = config.compose_config([f"{group}={option}", "train.device=cpu",
                                 *needed(group, option, tmp_path)])
    build(cfg)


def sweep_jobs(cfg) -> list[list[str]]:
    params = OmegaConf.to_container(cfg.hydra.sweeper.params)
    keys = sorted(params)
    values = [str(params[k]).split(",") for k in keys]
    return [[f"{k}={v}" for k, v in zip(keys, combo, strict=True)]
            for combo in itertools.product(*values)]


@pytest.mark.parametrize(("preset", "count", "stride"), [
    ("reference", 2 * 4 * 5 * 3, 3),   # seeds only change train.seed
    ("matrix", 4 * 2 * 3 * 3 * 2, 5),  # a sample: every model, workload, precision, layout
    ("graph-batches", 2 * 2 * 4 * 3, 3),  # models x shape policies x variants x seeds
    ("hetero", 2 * 2 * 4 * 3, 3),  # models x workloads x variants x seeds
])
def test_sweep_presets_jobs_compose_and_build(preset, count, stride):
    """A preset's sweep: its jobs compose and build as a job would."""
    from hydra import compose, initialize_config_dir

    config.register_resolvers()
    with initialize_config_dir(config_dir=str(config.CONF_DIR), version_base=None):
        cfg = compose(config_name="config", overrides=[f"experiment={preset}"],
                      return_hydra_config=True)
    jobs = sweep_jobs(cfg)
    assert len(jobs) == count
    for job in jobs[::stride]:
        build(config.compose_config([f"experiment={preset}", *job, "train.device=cpu"]))


@pytest.mark.parametrize("launcher", config.group_choices("hydra/launcher"))
def test_each_launcher_preset_composes_on_hydra_launcher_plugins(launcher):
    """conf/hydra/launcher/: each preset extends an installed Hydra launcher plugin and
    resolves here (how many pool jobs: one on this CPU-only host unless gpus=N)."""
    from hydra import compose, initialize_config_dir

    config.register_resolvers()
    with initialize_config_dir(config_dir=str(config.CONF_DIR), version_base=None):
        cfg = compose(config_name="config", return_hydra_config=True,
                      overrides=[f"hydra/launcher={launcher}", "gpus=3",
                                 "train.distributed=ddp", "train.world_size=2",
                                 "hydra.sweep.dir=x", "hydra.job.name=gnnbench"])
    resolved = OmegaConf.to_container(cfg.hydra.launcher, resolve=True)
    assert resolved["_target_"].startswith("hydra_plugins.")
    if launcher == "gpu-pool":
        assert resolved["n_jobs"] == 3 and resolved["batch_size"] == "1"
    if launcher == "slurm":
        assert resolved["gpus_per_task"] == 2 and resolved["tasks_per_node"] == 1
