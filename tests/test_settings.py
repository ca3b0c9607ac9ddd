"""Settings declared once: every key of the run's groups is declared (and nothing more),
values are checked from the declarations with one line naming the value and the choices,
and models and datasets are built by `hydra.utils.instantiate` from their config group."""

from __future__ import annotations

import pytest
import torch
from hydra.utils import instantiate
from omegaconf import OmegaConf, open_dict

from gnnbench import config, data, models
from gnnbench.config import groups
from gnnbench.models.gcn import GCN
from gnnbench.models.sage import SAGE
from gnnbench.runner import validate
from gnnbench.training.epochs import Trainer


def composed(*overrides: str):
    return config.compose_config(["train.device=cpu", *overrides])


@pytest.mark.parametrize("group,declaration", [
    ("train", groups.Train), ("compiler", groups.Compiler), ("graph", groups.Graph),
    ("wandb", groups.Wandb), (None, groups.Run)])
def test_every_key_of_config_yaml_is_declared_and_every_declared_key_is_set(group,
                                                                           declaration):
    cfg = composed()
    keys = set(cfg[group] if group else cfg)
    assert keys == set(declaration.model_fields)


@pytest.mark.parametrize("overrides,line", [
    (["compiler.dynamic=1"], "compiler.dynamic=1 is not valid; choose one of: true, false, null"),
    (["train.precision=fp16"], "train.precision='fp16' is not valid; choose one of: fp32, "
                               "tf32, bf16"),
    (["train.epochs=abc"], "train.epochs='abc' is not an integer; it must be an integer >= 1"),
    (["train.warmup_epochs=200"], "train.warmup_epochs=200 must be less than train.epochs=200"),
    (["gpus=0"], "gpus=0 must be null (one job per GPU of this host) or an integer >= 1"),
    (["model=sage", "model.aggr=avg"], "model.aggr='avg' is not valid; choose one of: mean, "
                                       "max, sum, lstm"),
    (["model=gat", "model.hidden=10"], "model.hidden=10 must be a multiple of model.heads=8"),
    (["model=pyg-gcn", "model.graph_inputs=gcn"], "model.graph_inputs='gcn' is not valid; "
                                                  "choose one of: none, self-loops, gcn-norm"),
    (["dataset.homophily=2"], "dataset.homophily=2 must be >= 0 and <= 1"),
    (["dataset=cora", "dataset.root_name=cora"], "dataset.root_name='cora' is not valid; "
                                                 "choose one of: Cora, CiteSeer, PubMed"),
    (["dataset=ogbn-arxiv", "dataset.ogb_name=ogbn-mag"], "dataset.ogb_name='ogbn-mag' is not "
                                                          "valid; choose one of: ogbn-arxiv"),
])
def test_a_bad_value_is_one_line_from_its_declaration(overrides, line):
    with pytest.raises(config.ConfigError) as err:
        validate(composed(*overrides))
    assert line in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("key,meant", [("train.epoch", "train.epochs"),
                                       ("model.hiden", "model.hidden"),
                                       ("wandb.modes", "wandb.mode")])
def test_a_key_that_a_yaml_file_sets_and_nothing_declares_is_an_error(key, meant):
    """An experiment preset with a typo is not silently ignored."""
    cfg = composed()
    group, leaf = key.split(".")
    with open_dict(cfg):
        cfg[group][leaf] = 3
    with pytest.raises(config.ConfigError, match=rf"{key} is not a setting gnnbench reads; "
                                                 rf"did you mean {meant}\?$"):
        validate(cfg)


@pytest.mark.parametrize("model", ["gcn", "sage", "gat", "gin"])
def test_gnnbench_models_are_built_by_instantiate_from_their_group(model):
    cfg = composed(f"model={model}")
    built = instantiate(cfg.model, in_channels=8, out_channels=3)
    assert type(built).__name__ == model.upper() and built.name == model
    group = OmegaConf.to_container(cfg.model, resolve=True)
    assert {k: getattr(built.options, k) for k in group if k != "_target_"} == {
        k: v for k, v in group.items() if k != "_target_"}
    assert len(built.convs) == cfg.model.num_layers


def test_a_constructor_checks_its_options_as_the_command_line_does():
    assert len(GCN(8, 3, hidden=4, num_layers=3).convs) == 3
    with pytest.raises(config.ConfigError, match=r"^model.hidden=0 must be an integer >= 1$"):
        GCN(8, 3, hidden=0)
    with pytest.raises(config.ConfigError, match="did you mean model.hidden"):
        GCN(8, 3, hiden=4)
    with pytest.raises(config.ConfigError, match="choose one of: mean, max, sum, lstm"):
        SAGE(8, 3, aggr="avg")


def test_a_users_subclass_of_gnn_declares_and_gets_its_own_options():
    """model=custom with a GNN subclass outside gnnbench: its own option is checked from its
    declaration and passed to it; it is built as gnnbench's models are."""
    cfg = composed("model=custom", "model._target_=support.cheb_model.Cheb", "+model.k=3",
                   "+model.num_layers=2", "+model.hidden=8", "+model.dropout=0.5")
    validate(cfg)
    model = models.build_model(cfg.model, 8, 3)
    assert isinstance(model, models.GNN) and model.options.k == 3 and model.name == "Cheb"
    with pytest.raises(config.ConfigError, match=r"model.k=0 must be an integer >= 1"):
        validate(composed("model=custom", "model._target_=support.cheb_model.Cheb",
                          "+model.k=0"))
    # model=custom's keys for wrapping a foreign class do not apply to it: never ignored.
    with pytest.raises(config.ConfigError, match="model.graph_inputs is not a setting"):
        validate(composed("model=custom", "model._target_=support.cheb_model.Cheb",
                          "model.graph_inputs=gcn-norm"))


def test_a_foreign_class_gets_its_own_options_only():
    """PyG's GCN would refuse `name` or `graph_inputs`: gnnbench's keys are not passed."""
    cfg = composed("model=pyg-gcn")
    model = models.build_model(cfg.model, 8, 3)
    assert isinstance(model, models.Foreign) and model.model.hidden_channels == 16
    assert models.foreign.options(cfg.model) == {"hidden_channels": 16, "num_layers": 2,
                                                 "dropout": 0.5, "normalize": False}


def test_datasets_are_built_by_instantiate_from_their_group(tmp_path):
    cfg = composed("dataset.num_nodes=300", "dataset.num_edges=600", "dataset.num_val=50",
                   "dataset.num_test=100")
    parts = instantiate(cfg.dataset, data_dir=tmp_path, mirror=None,
                        device=torch.device("cpu"))
    assert parts["x"].shape == (300, 256) and parts["num_classes"] == 7
    pyg = composed("dataset=pyg", "dataset._target_=torch_geometric.datasets.FakeDataset")
    spec = data.spec(pyg.dataset)
    assert spec["_target_"] == "gnnbench.data.pyg.load"
    assert spec["dataset_class"] == "torch_geometric.datasets.FakeDataset"
    assert "loader" in pyg.dataset and pyg.dataset._target_.endswith("FakeDataset")


def test_a_trainer_has_every_attribute_from_its_construction(tmp_path):
    cfg = composed("dataset.num_nodes=300", "dataset.num_edges=600", "dataset.num_val=50",
                   "dataset.num_test=100", "train.paired=true", "capture=false")
    task = data.load_task(cfg.dataset, str(tmp_path), None, torch.device("cpu"))
    trainer = Trainer(cfg, task, torch.device("cpu"))
    assert trainer.captured_metrics is None and trainer.csr is None
    assert trainer.batches is None and trainer.buckets is None and trainer.prefetch is False
    assert [v.twin for v in trainer.variants] == [False]  # eager: no twin to pair with
