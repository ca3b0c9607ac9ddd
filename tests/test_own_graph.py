"""A graph of the user's own: a saved file (`dataset=file dataset.path=...`, a torch.save'd
PyG Data or an .npz) or any PyG dataset (`dataset=pyg dataset._target_=...`). Loaded with
no code run from a file, checked field by field before training (one line naming the
field), and identified by its content, not its path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf
from support.processes import clean_env
from torch_geometric.data import Data

from gnnbench import config
from gnnbench.records import identity

QUICK = ("train.epochs=3", "train.warmup_epochs=1")
N = 120


def graph(masks: bool = True, **changes) -> Data:
    """A small learnable graph: two communities, labels by community."""
    g = torch.Generator().manual_seed(0)
    y = torch.arange(N) % 3
    src = torch.randint(N, (4 * N,), generator=g)
    dst = (src + 3 * torch.randint(1, 5, (4 * N,), generator=g)) % N  # same class mostly
    data = Data(x=torch.randn(N, 8, generator=g) + y.unsqueeze(1).float(), y=y,
                edge_index=torch.cat([torch.stack([src, dst]), torch.stack([dst, src])], 1))
    if masks:
        order = torch.randperm(N, generator=g)
        for name, part in (("train_mask", order[:30]), ("val_mask", order[30:60]),
                           ("test_mask", order[60:])):
            mask = torch.zeros(N, dtype=torch.bool)
            mask[part] = True
            data[name] = mask
    for key, value in changes.items():
        data[key] = value
    return data


def save(data: Data, path: Path) -> Path:
    if path.suffix == ".npz":
        np.savez(path, **{k: (v.numpy() if isinstance(v, torch.Tensor) else np.array(v))
                          for k, v in data.items()})
    else:
        torch.save(data, path)
    return path


@pytest.mark.parametrize(("suffix", "masks"), [(".pt", True), (".npz", True), (".pt", False)])
def test_a_saved_graph_trains(run, tmp_path, suffix, masks):
    path = save(graph(masks), tmp_path / f"mine{suffix}")
    result = run("dataset=file", f"dataset.path={path}", *QUICK)
    assert result.status == "ok", result.reason
    assert result.name == "gcn-mine-eager-s0"
    info = result.dataset
    assert info.num_nodes == N and info.num_classes == 3 and info.source == "file"
    assert info.split["kind"] == ("own masks" if masks else "seeded random")
    assert info.split_sizes.train == (30 if masks else 72)
    assert result.config.dataset.sha256 == info.sha256


BAD = {  # name: (a change to the graph, the suffix, what the error line says)
    "label below range": ({"y": torch.full((N,), -1)}, ".pt",
                          "y holds label -1 at node 0; labels must be in 0..-1"),
    "label above range": ({"num_classes": 2}, ".npz",
                          "y holds label 2 at node 2; labels must be in 0..1 (2 classes)"),
    "mask length": ({"val_mask": torch.ones(N - 1, dtype=torch.bool)}, ".pt",
                    "val_mask has shape (119,); it must have one entry per node (120)"),
    "node beyond": ({"edge_index": torch.tensor([[0, 1], [1, N]])}, ".npz",
                    f"edge_index names node {N} (edge 1) but the graph has {N} nodes"),
    "node count": ({"num_nodes": N + 5}, ".pt", f"num_nodes is {N + 5} but x has {N} rows"),
    "integer features": ({"x": torch.ones(N, 3, dtype=torch.long)}, ".pt",
                         "x is torch.int64; node features must be floats"),
    "labels per node": ({"y": torch.zeros(N - 2, dtype=torch.long)}, ".npz",
                        f"y has {N - 2} labels for {N} nodes"),
    "two masks": ({"test_mask": None}, ".pt", "has train_mask, val_mask but not test_mask"),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_file_is_one_line_naming_the_field(run, tmp_path, kind):
    change, suffix, expected = BAD[kind]
    data = graph()
    if change.get("test_mask", 0) is None:
        del data["test_mask"]
    else:
        for key, value in change.items():
            data[key] = value
    path = save(data, tmp_path / f"bad{suffix}")
    result = run("dataset=file", f"dataset.path={path}", *QUICK)
    assert result.status == "error" and result.get("input_error") is True
    assert expected in result.reason, result.reason
    assert result.reason.startswith(f"dataset.path='{path}'") and "\n" not in result.reason


class Payload:
    """What a crafted file would carry: unpickling it calls open(), creating a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.mark.parametrize("suffix", [".pt", ".npz"])
def test_a_pickle_payload_runs_no_code(run, tmp_path, suffix):
    marker = tmp_path / "ran"
    path = tmp_path / f"payload{suffix}"
    if suffix == ".npz":
        np.savez(path, x=np.array([Payload(marker)], dtype=object))
    else:
        torch.save({"x": Payload(marker), "edge_index": torch.zeros(2, 0)}, path)
    marker.unlink(missing_ok=True)  # np.savez / torch.save did not unpickle, but be sure
    result = run("dataset=file", f"dataset.path={path}", *QUICK)
    assert result.status == "error" and result.get("input_error") is True
    assert "cannot be" in result.reason and "\n" not in result.reason
    assert not marker.exists()


def test_missing_path_says_what_to_give(run, tmp_path):
    assert "dataset=file needs dataset.path" in run("dataset=file", *QUICK).reason
    missing = run("dataset=file", f"dataset.path={tmp_path / 'nope.pt'}", *QUICK)
    assert "is not a file" in missing.reason and missing.input_error is True


def _key(path: Path) -> str:
    cfg = config.compose_config(["dataset=file", f"dataset.path={path}"])
    return identity.setting_key(OmegaConf.to_container(cfg, resolve=True), "cpu")


def test_the_content_is_the_setting_not_the_path(tmp_path):
    first = save(graph(), tmp_path / "a.pt")
    moved = tmp_path / "elsewhere" / "a.pt"
    moved.parent.mkdir()
    shutil.copy(first, moved)
    assert _key(first) == _key(moved)
    save(graph(y=(torch.arange(N) + 1) % 3), moved)
    assert _key(first) != _key(moved)


def test_a_bad_file_from_the_command_line(tmp_path):
    """One line on stderr, exit 1, and a record with status error."""
    path = save(graph(val_mask=torch.ones(N - 1, dtype=torch.bool)), tmp_path / "bad.pt")
    proc = subprocess.run([sys.executable, "-m", "gnnbench", "dataset=file",
                           f"dataset.path={path.name}", "train.device=cpu", *QUICK],
                          cwd=tmp_path, env=clean_env(tmp_path), capture_output=True, text=True,
                          timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        "gnnbench: error: dataset.path='bad.pt': val_mask has shape (119,); it must have one "
        "entry per node (120)"]
    [record] = [json.loads(p.read_text()) for p in tmp_path.rglob("results.json")]
    assert record["status"] == "error" and record["input_error"] is True


FAKE = ("dataset=pyg", "dataset._target_=torch_geometric.datasets.FakeDataset",
        "+dataset.args.avg_num_nodes=200", "+dataset.args.num_channels=8",
        "+dataset.args.num_classes=3")


def test_a_pyg_dataset_without_splits_gets_a_seeded_one(run):
    result = run(*FAKE, *QUICK)
    assert result.status == "ok", result.reason
    assert result.name == "gcn-fakedataset-eager-s0"
    assert result.dataset.split == {"kind": "seeded random", "train_fraction": 0.6,
                                          "val_fraction": 0.2, "seed": 0}
    assert result.dataset.source == "pyg"


def test_a_graph_level_pyg_dataset_is_refused(run):
    result = run(*FAKE, "+dataset.args.num_graphs=3", *QUICK)
    assert result.status == "error" and "holds 3 graphs" in result.reason


@pytest.fixture
def planetoid_mirror(tmp_path, mirror) -> Path:
    """The Cora raw files laid out as PyG's Planetoid expects under its root."""
    root = tmp_path / "pyg-mirror"
    shutil.copytree(mirror / "Cora", root / "Planetoid" / "Cora")
    return root


def test_a_pyg_dataset_comes_from_the_mirror_with_its_own_splits(run_in, planetoid_mirror):
    result = run_in("dataset=pyg", "dataset._target_=torch_geometric.datasets.Planetoid",
                    "+dataset.args.name=Cora", f"data_mirror={planetoid_mirror}", *QUICK)
    assert result.status == "ok", result.reason
    assert result.name == "gcn-planetoid-cora-eager-s0"
    assert result.dataset.split == {"kind": "own masks"}
    assert result.dataset.split_sizes.model_dump() == {"train": 140, "val": 500, "test": 1000}


def test_a_pyg_dataset_is_never_downloaded_unless_allowed(run_in):
    result = run_in("dataset=pyg", "dataset._target_=torch_geometric.datasets.Planetoid",
                    "+dataset.args.name=Cora", *QUICK)
    assert result.status == "error" and result.input_error is True
    assert "dataset.download=true" in result.reason and "ind.cora.x" in result.reason
