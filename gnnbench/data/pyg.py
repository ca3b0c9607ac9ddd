"""Any node-level PyG dataset: `dataset=pyg dataset._target_=torch_geometric.datasets.<Class>`
with the class's keyword arguments under `dataset.args` (nested `_target_`s, such as a
transform, are built too), rooted at `<data_dir>/pyg/<Class>`.

Offline by the same rules as Planetoid: the files come from the cache, else from
`data_mirror` (`<mirror>/<Class>/...`, laid out as under the root, copied in; processed
files are not copied: PyG makes its own), and PyG downloads only when the user allows it
(`dataset.download=true`). PyG's own code reads the files (some formats are pickles): use
mirrors you trust. One graph with its own train/val/test masks uses them; without, a seeded
random split is made, and the record says which (`dataset.split`)."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench.config import ConfigError, choice, require
from gnnbench.data import cache, graph


def dataset_class(cfg: DictConfig) -> type:
    from hydra.utils import get_class
    from torch_geometric.data import Dataset

    target = cfg.get("_target_")
    require(isinstance(target, str) and bool(target.strip()),
            "dataset=pyg needs dataset._target_=torch_geometric.datasets.<Class>")
    try:
        cls = get_class(target)
    except Exception as exc:
        raise ConfigError(f"dataset._target_={target!r} is not an importable class") from exc
    require(issubclass(cls, Dataset),
            f"dataset._target_={target!r} is not a torch_geometric.data.Dataset")
    return cls


def validate(cfg: DictConfig) -> None:
    dataset_class(cfg)
    choice("dataset.download", cfg.get("download", False), (False, True))
    graph.validate_split(cfg)


def _from_mirror(mirror: str, name: str, root: Path) -> None:
    """Copy what the cache lacks from `<mirror>/<name>/` (raw files, in the layout the class
    expects under its root), never processed files."""
    source = Path(mirror) / name
    if not source.is_dir():
        return
    for found in sorted(source.rglob("*")):
        relative = found.relative_to(source)
        if found.is_file() and "processed" not in relative.parts \
                and not (root / relative).exists():
            cache.atomic_copy(found, root / relative)


def _offline(cls: type, where: str, root: Path, mirror: str | None) -> type:
    """The class with its download refused: PyG calls `download` only when a raw file it
    needs is missing, and then this says which, and where they could come from."""
    def download(self) -> None:
        missing = [os.path.relpath(p, root) for p in self.raw_paths if not os.path.exists(p)]
        source = (f"data_mirror={mirror!r} has no {cls.__name__}/{missing[0]}" if mirror
                  else f"put them in data_mirror (<mirror>/{cls.__name__}/...)")
        raise ConfigError(f"{where} needs {', '.join(missing)} under {root}: {source}, or "
                          "allow PyG to download them with dataset.download=true")

    return type(cls.__name__, (cls,), {"download": download, "__module__": cls.__module__})


def load(cfg: DictConfig, data_dir: Path, mirror: str | None, device: torch.device) -> dict:
    from hydra.utils import instantiate
    from torch_geometric.data import Dataset

    cls = dataset_class(cfg)
    where = f"dataset._target_={cfg._target_}"
    args = cfg.get("args") or {}
    kwargs = instantiate(args, _convert_="all") if args else {}
    root = data_dir / "pyg" / cls.__name__
    takes_root = "root" in inspect.signature(cls.__init__).parameters
    with cache.locked(data_dir, f"pyg-{cls.__name__}"):
        if mirror is not None and takes_root:
            try:
                _from_mirror(mirror, cls.__name__, root)
            except PermissionError as exc:
                raise cache.not_writable(data_dir, exc) from exc
        if root.is_dir():
            cache.drop_unsafe_processed(root)
        downloads = getattr(cls, "download", None) is not getattr(Dataset, "download", None)
        chosen = _offline(cls, where, root, mirror) if downloads and not cfg.get("download") \
            else cls
        try:
            with cache.quiet(cls.__name__):
                dataset = chosen(**({"root": str(root)} if takes_root else {}), **kwargs)
        except TypeError as exc:
            raise ConfigError(f"{where} cannot be built with "
                              f"{OmegaConf.to_container(args) if args else 'no arguments'} "
                              f"({exc}); its keyword arguments go under dataset.args "
                              "(+dataset.args.<name>=...)") from exc
        except PermissionError as exc:
            raise cache.not_writable(data_dir, exc) from exc
    require(len(dataset) == 1, f"{where} holds {len(dataset)} graphs; gnnbench benchmarks node "
                               "classification on one graph")
    data = dataset[0]
    parts = graph.checked({k: data[k] for k in data.keys()}, where,
                          num_nodes=data._store.get("num_nodes"), **graph.split_options(cfg))
    parts["info"].update(source="pyg", dataset_class=cfg._target_,
                         root=str(root) if takes_root else None)
    return parts
