"""OGB node-classification datasets (ogbn-arxiv, ogbn-products) through ogb's own loader,
from a read-only mirror or the cache, never prompting on stdin.

ogb's `PygNodePropPredDataset` can block on `input()` in two places: when the dataset
directory exists without `RELEASE_v1.txt`, and in `decide_download` for archives over 1 GB
(ogbn-products). Both are made unreachable here: every file ogb reads is checked before the
dataset is constructed (so PyG never calls ogb's `download`), and a missing dataset is
fetched by this module itself, without a size prompt, or reported as a `ConfigError`.
"""

from __future__ import annotations

import logging
import shutil
import typing
import zipfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal
from urllib.request import urlopen

import torch
from torch import Tensor

from gnnbench.config import ConfigError, FileName, Flag, Settings, check, first_line
from gnnbench.data import cache

OgbName = Literal["ogbn-arxiv", "ogbn-products"]
OGB_DATASETS: tuple[str, ...] = typing.get_args(OgbName)
SPLIT_NAMES = {"train": "train", "val": "valid", "test": "test"}  # ours -> OGB's file names
MIRROR_SUBDIRS = ("raw", "split", "mapping")  # mapping/ is optional (id maps, not read by ogb)
DOWNLOAD_TIMEOUT_S = 60.0  # per socket operation: a dead network fails, a slow one still works
PROCESSED_FILE = "processed/geometric_data_processed.pt"

log = logging.getLogger(__name__)


def ogb_meta(name: str) -> dict[str, str]:
    """ogb's own master.csv column for `name`, every value a string (as ogb reads it)."""
    import pandas as pd
    from ogb import nodeproppred

    if name not in OGB_DATASETS:
        raise ConfigError(f"OGB dataset {name!r} is not supported; "
                          f"choose one of: {', '.join(OGB_DATASETS)}")
    master = pd.read_csv(Path(nodeproppred.__file__).parent / "master.csv", index_col=0,
                         keep_default_na=False)
    return {str(k): str(v) for k, v in master[name].items()}


def dir_name(name: str) -> str:
    """ogb's directory name for a dataset: ogbn-arxiv -> ogbn_arxiv."""
    return name.replace("-", "_")


def listed_files(meta: Mapping[str, str], key: str) -> list[str]:
    return [] if meta[key] == "None" else meta[key].split(",")


def required_files(meta: Mapping[str, str], processed: bool = False) -> list[str]:
    """Paths, relative to the dataset directory, that ogb reads. With the processed file
    present only PyG's `raw_file_names` (else PyG calls ogb's download) and the split files
    are read; without it `process()` reads every raw file."""
    if meta["binary"] == "True":
        raw = ["data.npz"] + ([] if processed else ["node-label.npz"])
    else:
        raw = ["edge.csv.gz"]
        raw += ["node-feat.csv.gz"] if meta["has_node_attr"] == "True" else []
        raw += ["edge-feat.csv.gz"] if meta["has_edge_attr"] == "True" else []
        if not processed:
            raw += ["num-node-list.csv.gz", "num-edge-list.csv.gz", "node-label.csv.gz"]
            raw += [f"{f}.csv.gz" for f in listed_files(meta, "additional node files")]
            raw += [f"{f}.csv.gz" for f in listed_files(meta, "additional edge files")]
    split = [f"split/{meta['split']}/{s}.csv.gz" for s in SPLIT_NAMES.values()]
    return [*(f"raw/{f}" for f in raw), *split, f"RELEASE_v{meta['version']}.txt"]


def _first_missing(root: Path, files: list[str]) -> Path | None:
    return next((root / f for f in files if not (root / f).is_file()), None)


def _expected_layout(name: str) -> str:
    return f"{dir_name(name)}/{{raw,split,RELEASE_v1.txt}}"


def _copy_dataset(src: Path, dst: Path, release: str) -> None:
    """Copy raw/, split/, mapping/ and the RELEASE file; skip files already there. copyfile
    never carries the mirror's read-only bits over; the rename keeps a half-copied file from
    ever looking complete to a concurrent run."""
    files = [src / release] + [p for d in MIRROR_SUBDIRS if (src / d).is_dir()
                               for p in sorted((src / d).rglob("*")) if p.is_file()]
    for path in files:
        target = dst / path.relative_to(src)
        if target.is_file():
            continue
        cache.atomic_copy(path, target)


def _copy_from_mirror(name: str, meta: Mapping[str, str], mirror: str, root: Path) -> None:
    src = Path(mirror) / dir_name(name)
    if not src.is_dir():
        raise ConfigError(f"data_mirror={mirror!r} has no {dir_name(name)}/ directory; "
                          f"expected {_expected_layout(name)} as ogb extracts it")
    missing = _first_missing(src, required_files(meta))
    if missing is not None:
        raise ConfigError(f"data_mirror={mirror!r} is incomplete: {missing} is missing")
    _copy_dataset(src, root, f"RELEASE_v{meta['version']}.txt")


def _download(name: str, meta: Mapping[str, str], root: Path) -> None:
    """Fetch ogb's archive into the cache, without ogb's size prompt (`decide_download`
    asks on stdin above 1 GB) and with a socket timeout, so no network fails fast."""
    url = meta["url"]
    staging = root.parent / f".{root.name}.download"
    try:
        staging.mkdir(parents=True, exist_ok=True)
        archive = staging / url.rpartition("/")[2]
        log.info("downloading %s to %s", url, archive)
        with urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response, open(archive, "wb") as out:
            shutil.copyfileobj(response, out, 1 << 20)
        with zipfile.ZipFile(archive) as zipped:
            zipped.extractall(staging)
        extracted = staging / meta["download_name"]
        if not extracted.is_dir():
            raise OSError(f"{archive.name} holds no {meta['download_name']}/ directory")
        _copy_dataset(extracted, root, f"RELEASE_v{meta['version']}.txt")
    except (OSError, zipfile.BadZipFile) as exc:  # URLError and socket timeouts are OSErrors
        reason = first_line(exc, limit=10_000)
        raise ConfigError(f"cannot download {name} ({reason}); set data_mirror to a directory "
                          f"holding {_expected_layout(name)}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def allow_pyg_pickles() -> None:
    """torch >= 2.6 loads with weights_only=True; ogb 1.3.6's processed file pickles these
    PyG classes, which PyG itself does not allow-list (Data is)."""
    from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
    from torch_geometric.data.storage import GlobalStorage

    torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])


def ogb_accuracy(name: str) -> Callable[[Tensor, Tensor], float]:
    """Accuracy by ogb's own Evaluator: 1-D predicted and true class indices."""
    from ogb.nodeproppred import Evaluator

    evaluator = Evaluator(name)

    def accuracy(pred: Tensor, target: Tensor) -> float:
        return float(evaluator.eval({"y_true": target.view(-1, 1).cpu(),
                                     "y_pred": pred.view(-1, 1).cpu()})["acc"])

    return accuracy


def _dataset(name: str, data_dir: Path, meta: Mapping[str, str], root: Path):
    from ogb.nodeproppred import PygNodePropPredDataset

    with cache.quiet(name):
        return PygNodePropPredDataset(name, root=str(data_dir),
                                      meta_dict={**meta, "dir_path": str(root)})


def offline_files(name: str, meta: Mapping[str, str], needed: list[str], data_dir: Path,
                  mirror: str | None, no_download: str = "") -> Path:
    """`<data_dir>/<name>/` with the `needed` files ogb reads (paths in ogb's layout), copied
    from `<mirror>/<name>/` where a mirror is given, for a dataset gnnbench never downloads;
    a ConfigError names the first file missing. Processed files that are not safe to load
    are dropped. Call it under `cache.locked`. `no_download`: why not, after the error."""
    root = data_dir / dir_name(name)
    if mirror is not None:
        source = Path(mirror) / dir_name(name)
        missing = _first_missing(source, needed)
        if missing is not None:
            raise ConfigError(f"data_mirror={mirror!r} has no {missing.relative_to(mirror)}"
                              f"; expected {dir_name(name)}/{{raw,split,RELEASE_v"
                              f"{meta['version']}.txt}} as ogb extracts it")
        _copy_dataset(source, root, f"RELEASE_v{meta['version']}.txt")
    missing = _first_missing(root, needed)
    if missing is not None:
        raise ConfigError(f"{name} needs {missing}: set data_mirror to a directory holding "
                          f"{dir_name(name)}/ as ogb extracts it{no_download}")
    cache.drop_unsafe_processed(root)
    allow_pyg_pickles()
    return root


def load_ogbn(name: str, data_dir: Path, mirror: str | None, undirected: bool) -> dict:
    """Load an OGB node-classification dataset with ogb's `PygNodePropPredDataset`.

    The dataset lives in `<data_dir>/<ogbn_name>/` (ogb's own layout). With `mirror`, its
    `<mirror>/<ogbn_name>/` is checked and copied there first; without one, a cache that is
    not complete is downloaded (ConfigError when that fails). Returns x, y (1-D), edge_index
    (symmetrised when `undirected`), splits {train, val, test}, num_classes, accuracy, info."""
    from torch_geometric.utils import to_undirected

    meta = ogb_meta(name)
    root = Path(data_dir) / dir_name(name)
    with cache.locked(Path(data_dir), dir_name(name)):
        if mirror is not None:
            _copy_from_mirror(name, meta, str(mirror), root)
        cached = (root / PROCESSED_FILE).is_file()
        if _first_missing(root, required_files(meta, processed=cached)) is not None:
            _download(name, meta, root)
        # Every file ogb reads now exists, RELEASE_v1.txt included: ogb neither downloads
        # nor prompts. Check again in case the archive itself lacked something.
        missing = _first_missing(root, required_files(meta, processed=cached))
        if missing is not None:
            raise ConfigError(f"{name} in {root} is incomplete: {missing} is missing")
        allow_pyg_pickles()
        try:
            dataset = _dataset(name, data_dir, meta, root)
        except Exception as exc:
            if not cached:
                raise
            cache.warn(f"{root / PROCESSED_FILE} could not be read ({type(exc).__name__}); "
                       f"processing {name} again from its raw files")
            shutil.rmtree(root / "processed", ignore_errors=True)
            if _first_missing(root, required_files(meta)) is not None:
                _download(name, meta, root)
            dataset = _dataset(name, data_dir, meta, root)
    data = dataset[0]
    split = dataset.get_idx_split()
    edge_index = data.edge_index
    if undirected:
        edge_index = to_undirected(edge_index, num_nodes=data.num_nodes)
    return {
        "x": data.x.float(),
        "y": data.y.view(-1).long(),
        "edge_index": edge_index,
        "splits": {ours: split[theirs] for ours, theirs in SPLIT_NAMES.items()},
        "num_classes": int(meta["num classes"]),
        "accuracy": ogb_accuracy(name),
        "info": {"source": "ogb", "ogb_name": name, "root": str(root), "from_cache": cached,
                 "split_type": meta["split"], "eval_metric": meta["eval metric"],
                 "add_inverse_edge": meta["add_inverse_edge"] == "True",
                 "undirected": undirected},
    }


class Options(Settings):
    """conf/dataset/ogbn-*.yaml."""

    name: FileName | None = None
    ogb_name: OgbName
    undirected: Flag = False  # symmetrise the graph (OGB's arxiv examples do)


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """The dataset registry's entry point (`_target_` of conf/dataset/ogbn-*.yaml), called
    with the group's keys as `options`."""
    o = check(Options, options, "dataset")
    return load_ogbn(o.ogb_name, Path(data_dir), mirror, o.undirected)
