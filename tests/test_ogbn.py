"""OGB loading through ogb's real PygNodePropPredDataset and Evaluator, on tiny datasets
written in OGB's extracted layout into a read-only mirror (no network, no stdin)."""

from __future__ import annotations

import builtins
import shutil
import socket
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import torch
from ogb.nodeproppred import Evaluator
from support.fs import read_only as read_only_mount
from support.ogb_layout import write_ogb_raw

from gnnbench.config import ConfigError
from gnnbench.data import ogb as ogbn
from gnnbench.data.ogb import OGB_DATASETS, load_ogbn

NUM_NODES = 60
DIMS = {"ogbn-arxiv": (128, 40), "ogbn-products": (100, 47)}  # features, classes (as OGB)
SPLIT_TYPE = {"ogbn-arxiv": "time", "ogbn-products": "sales_ranking"}


def make_graph(name: str, seed: int = 0) -> dict:
    gen = torch.Generator().manual_seed(seed)
    num_features, num_classes = DIMS[name]
    perm = torch.randperm(NUM_NODES, generator=gen)
    return {
        "x": torch.randn(NUM_NODES, num_features, generator=gen),
        "y": torch.randint(0, num_classes, (NUM_NODES,), generator=gen),
        "edge_index": torch.randint(0, NUM_NODES, (2, 150), generator=gen),
        "splits": {"train": perm[:30], "val": perm[30:45], "test": perm[45:]},
    }


def set_read_only(root: Path, read_only: bool = True) -> None:
    for path in sorted(root.rglob("*"), reverse=True) + [root]:
        if path.is_dir():
            path.chmod(0o555 if read_only else 0o755)
        else:
            path.chmod(0o444 if read_only else 0o644)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def no_network_no_stdin(monkeypatch):
    """Any prompt or connection attempt fails at once instead of hanging."""

    def no_input(*_args):
        raise AssertionError("ogb prompted on stdin")

    def no_network(*_args, **_kwargs):
        raise OSError("network disabled by the test")

    monkeypatch.setattr(builtins, "input", no_input)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)


@pytest.fixture(params=OGB_DATASETS)
def dataset(request, tmp_path):
    """(name, graph, read-only mirror) for each OGB dataset."""
    name = request.param
    graph = make_graph(name)
    mirror = tmp_path / "mirror"
    write_ogb_raw(mirror, name, **graph)
    with read_only_mount(mirror):  # a read-only mount: root cannot write it either
        yield name, graph, mirror
    set_read_only(mirror, read_only=False)  # let pytest clean up


def test_writer_layout(dataset):
    name, _, mirror = dataset
    root = mirror / name.replace("-", "_")
    expected = ["RELEASE_v1.txt", "raw/edge.csv.gz", "raw/node-feat.csv.gz",
                "raw/node-label.csv.gz", "raw/num-edge-list.csv.gz", "raw/num-node-list.csv.gz",
                *(f"split/{SPLIT_TYPE[name]}/{s}.csv.gz" for s in ("train", "valid", "test"))]
    if name == "ogbn-arxiv":
        expected.append("raw/node_year.csv.gz")
    assert sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()) \
        == sorted(expected)
    assert sorted(ogbn.required_files(ogbn.ogb_meta(name))) == sorted(expected)


@pytest.mark.parametrize("undirected", [False, True])
def test_round_trip_from_read_only_mirror(dataset, tmp_path, undirected, no_network_no_stdin):
    name, graph, mirror = dataset
    data_dir = tmp_path / "data"
    before = snapshot(mirror)
    parts = load_ogbn(name, data_dir, str(mirror), undirected=undirected)
    assert snapshot(mirror) == before

    num_features, num_classes = DIMS[name]
    assert parts["x"].dtype == torch.float32 and parts["x"].shape == (NUM_NODES, num_features)
    assert torch.equal(parts["x"], graph["x"])
    assert parts["y"].dtype == torch.long and parts["y"].shape == (NUM_NODES,)
    assert torch.equal(parts["y"], graph["y"])
    assert parts["num_classes"] == num_classes
    assert set(parts["splits"]) == {"train", "val", "test"}
    for split, index in graph["splits"].items():
        assert parts["splits"][split].dtype == torch.long
        assert torch.equal(parts["splits"][split], index)

    ei = graph["edge_index"]
    if undirected:  # every edge in both directions, deduplicated, sorted (coalesced)
        expected = torch.unique(torch.cat([ei, ei.flip(0)], dim=1), dim=1)
    elif name == "ogbn-products":  # master.csv: add_inverse_edge; ogb interleaves (u,v),(v,u)
        expected = torch.stack([ei, ei.flip(0)], dim=2).reshape(2, -1)
    else:
        expected = ei
    assert torch.equal(parts["edge_index"], expected)

    assert parts["info"]["source"] == "ogb" and parts["info"]["from_cache"] is False
    assert parts["info"]["split_type"] == SPLIT_TYPE[name]
    copied = data_dir / name.replace("-", "_")
    assert (copied / "processed" / "geometric_data_processed.pt").is_file()
    for path in copied.rglob("*"):  # the mirror's read-only bits are not carried over
        if path.is_file():
            assert path.stat().st_mode & 0o200, path


def test_accuracy_is_ogb_evaluator(dataset, tmp_path):
    name, graph, mirror = dataset
    parts = load_ogbn(name, tmp_path / "data", str(mirror), undirected=False)
    num_classes = DIMS[name][1]
    y = parts["y"]
    pred = y.clone()
    pred[:12] = (y[:12] + 1) % num_classes  # exactly 12 of 60 wrong
    assert parts["accuracy"](pred, y) == pytest.approx(48 / 60, abs=1e-12)
    assert parts["accuracy"](y, y) == 1.0

    test = parts["splits"]["test"]
    by_hand = (pred[test] == y[test]).sum().item() / test.numel()
    evaluator = Evaluator(name).eval({"y_true": y[test].numpy()[:, None],
                                      "y_pred": pred[test].numpy()[:, None]})["acc"]
    assert parts["accuracy"](pred[test], y[test]) == pytest.approx(by_hand, abs=1e-12)
    assert parts["accuracy"](pred[test], y[test]) == pytest.approx(evaluator, abs=1e-12)
    assert isinstance(parts["accuracy"](pred, y), float)


def test_second_load_uses_processed_cache(dataset, tmp_path, no_network_no_stdin, monkeypatch):
    name, graph, mirror = dataset
    data_dir = tmp_path / "data"
    load_ogbn(name, data_dir, str(mirror), undirected=False)
    processed = data_dir / name.replace("-", "_") / "processed" / "geometric_data_processed.pt"
    stamp = processed.stat().st_mtime_ns

    def no_process(self):
        raise AssertionError("processed again instead of using the cache")

    monkeypatch.setattr("ogb.nodeproppred.PygNodePropPredDataset.process", no_process)
    parts = load_ogbn(name, data_dir, None, undirected=True)
    assert parts["info"]["from_cache"] is True
    assert processed.stat().st_mtime_ns == stamp
    assert torch.equal(parts["x"], graph["x"]) and torch.equal(parts["y"], graph["y"])
    assert torch.equal(parts["splits"]["val"], graph["splits"]["val"])


@pytest.mark.parametrize("drop", ["raw/node-label.csv.gz", "raw/edge.csv.gz",
                                  "split/{split}/valid.csv.gz", "RELEASE_v1.txt"])
def test_incomplete_mirror_names_missing_file(dataset, tmp_path, drop, no_network_no_stdin):
    name, _, mirror = dataset
    broken = tmp_path / "broken"
    shutil.copytree(mirror, broken)
    set_read_only(broken, read_only=False)
    missing = broken / name.replace("-", "_") / drop.format(split=SPLIT_TYPE[name])
    missing.unlink()
    with pytest.raises(ConfigError) as err:
        load_ogbn(name, tmp_path / "data", str(broken), undirected=False)
    message = str(err.value)
    assert "\n" not in message
    assert str(missing) in message and "data_mirror=" in message
    # Failed before copying anything (only the cache's lock file is there).
    assert not (tmp_path / "data" / name.replace("-", "_")).exists()


def test_mirror_without_dataset_dir(tmp_path):
    (tmp_path / "mirror").mkdir()
    with pytest.raises(ConfigError, match=r"has no ogbn_arxiv/ directory"):
        load_ogbn("ogbn-arxiv", tmp_path / "data", str(tmp_path / "mirror"), undirected=False)


def test_unknown_dataset_name(tmp_path):
    with pytest.raises(ConfigError, match=r"'ogbn-mag' is not supported"):
        load_ogbn("ogbn-mag", tmp_path / "data", None, undirected=False)


@pytest.mark.parametrize("name", OGB_DATASETS)
@pytest.mark.parametrize("state", ["empty", "without_release"])
def test_no_mirror_no_data_fails_fast_without_prompt(name, state, tmp_path, monkeypatch,
                                                     no_network_no_stdin):
    """ogb would prompt when the directory lacks RELEASE_v1.txt, and for products (>1 GB)
    before downloading; with no network the download must fail at once."""
    data_dir = tmp_path / "data"
    if state == "without_release":
        write_ogb_raw(data_dir, name, **make_graph(name))
        (data_dir / name.replace("-", "_") / "RELEASE_v1.txt").unlink()
    monkeypatch.chdir(tmp_path)  # ogb's own download would write into the working directory
    started = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        load_ogbn(name, data_dir, None, undirected=False)
    assert time.perf_counter() - started < 30
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"cannot download {name} (")
    assert "network disabled by the test" in message
    assert f"set data_mirror to a directory holding {name.replace('-', '_')}/" in message
    leftovers = {p.name for p in tmp_path.iterdir()} | {p.name for p in data_dir.iterdir()}
    assert not any(n.endswith(".download") or n.endswith(".zip") for n in leftovers)


@pytest.mark.parametrize("name", OGB_DATASETS)
def test_download_goes_through_ogb_url_without_prompt(name, tmp_path, monkeypatch,
                                                      no_network_no_stdin):
    """The download path end to end, with ogb's archive served from a local file."""
    graph = make_graph(name)
    meta = ogbn.ogb_meta(name)
    staged = tmp_path / "staged"
    root = write_ogb_raw(staged, name, **graph)
    (root / "mapping").mkdir()
    (root / "mapping" / "README.md").write_text("id maps\n")
    root.rename(staged / meta["download_name"])  # the archive holds arxiv/, products/
    archive = shutil.make_archive(str(tmp_path / meta["download_name"]), "zip", staged)
    requested = []

    def local_urlopen(url, timeout):
        requested.append(url)
        return urllib.request.urlopen(Path(archive).as_uri(), timeout=timeout)

    monkeypatch.setattr(ogbn, "urlopen", local_urlopen)
    data_dir = tmp_path / "data"
    parts = load_ogbn(name, data_dir, None, undirected=False)
    assert requested == [meta["url"]]
    assert torch.equal(parts["x"], graph["x"]) and torch.equal(parts["y"], graph["y"])
    dataset_dir = data_dir / name.replace("-", "_")
    assert (dataset_dir / "mapping" / "README.md").is_file()
    # The staging folder is gone: only the dataset (and the cache's lock file) remain.
    assert sorted(p.name for p in data_dir.iterdir() if not p.name.endswith(".lock")) == [
        name.replace("-", "_")]


def test_writer_accepts_ogb_split_names_and_node_files(tmp_path):
    graph = make_graph("ogbn-arxiv")
    splits = {"train": graph["splits"]["train"], "valid": graph["splits"]["val"],
              "test": graph["splits"]["test"]}
    years = torch.arange(NUM_NODES) + 1971
    root = write_ogb_raw(tmp_path, "ogbn-arxiv", graph["x"], graph["y"], graph["edge_index"],
                         splits, node_files={"node_year": years})
    written = np.loadtxt(root / "raw" / "node_year.csv.gz", dtype=np.int64)
    assert np.array_equal(written, years.numpy())
    parts = load_ogbn("ogbn-arxiv", tmp_path / "data", str(tmp_path), undirected=False)
    assert torch.equal(parts["splits"]["val"], graph["splits"]["val"])
