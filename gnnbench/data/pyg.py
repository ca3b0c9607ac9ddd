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
from typing import Annotated, Any

import torch
from omegaconf import DictConfig, OmegaConf
from pydantic import AfterValidator, BeforeValidator

from gnnbench.config import ConfigError, Flag, check, require
from gnnbench.data import cache, graph


def dataset_class(target: object) -> type:
    """The PyG dataset class `dataset._target_` names."""
    from hydra.utils import get_class
    from torch_geometric.data import Dataset

    require(isinstance(target, str) and bool(target.strip()),
            "dataset=pyg needs dataset._target_=torch_geometric.datasets.<Class>")
    try:
        cls = get_class(target)
    except Exception as exc:
        raise ConfigError(f"dataset._target_={target!r} is not an importable class") from exc
    require(issubclass(cls, Dataset),
            f"dataset._target_={target!r} is not a torch_geometric.data.Dataset")
    return cls


def _importable(target: str | None) -> str | None:
    dataset_class(target)
    return target


class Options(graph.SplitOptions):
    """conf/dataset/pyg.yaml. The group's `_target_` is the PyG class, so its loader is
    `dataset.loader` (this module's `load`), which receives the class as `dataset_class`."""

    dataset_class: Annotated[str | None, AfterValidator(_importable)] = None
    # The class's keyword arguments, checked by the class itself.
    args: Annotated[dict, BeforeValidator(
        lambda v: OmegaConf.to_container(v) if isinstance(v, DictConfig) else v)] = {}
    download: Flag = False  # true: PyG may download what the cache and the mirror lack


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


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """The loader of conf/dataset/pyg.yaml (`dataset.loader`), called with the group's keys
    as `options` and the class its `_target_` names as `dataset_class`."""
    from hydra.utils import instantiate
    from torch_geometric.data import Dataset

    cfg = check(Options, options, "dataset")
    cls = dataset_class(cfg.dataset_class)
    where = f"dataset._target_={cfg.dataset_class}"
    args = cfg.args
    kwargs = instantiate(args, _convert_="all") if args else {}
    data_dir = Path(data_dir)
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
        chosen = _offline(cls, where, root, mirror) if downloads and not cfg.download else cls
        try:
            with cache.quiet(cls.__name__):
                dataset = chosen(**({"root": str(root)} if takes_root else {}), **kwargs)
        except TypeError as exc:
            raise ConfigError(f"{where} cannot be built with "
                              f"{args or 'no arguments'} "
                              f"({exc}); its keyword arguments go under dataset.args "
                              "(+dataset.args.<name>=...)") from exc
        except PermissionError as exc:
            raise cache.not_writable(data_dir, exc) from exc
    require(len(dataset) == 1, f"{where} holds {len(dataset)} graphs; gnnbench benchmarks node "
                               "classification on one graph")
    data = dataset[0]
    parts = graph.checked({k: data[k] for k in data.keys()}, where,
                          num_nodes=data._store.get("num_nodes"), **cfg.split())
    parts["info"].update(source="pyg", dataset_class=cfg.dataset_class,
                         root=str(root) if takes_root else None)
    return parts
