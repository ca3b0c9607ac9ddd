"""Planetoid (Cora, CiteSeer, PubMed) through PyG's own loader, public split, row-normalised
features.

PyG reads the raw files with `pickle.load`, so a crafted file would run code: every raw file
is checked against the official file's hash before PyG sees it, and a mismatch is an error
naming the file. Raw files come, in order, from `data_mirror`, from the copies of Cora and
CiteSeer inside this package (byte-identical to the official ones: same hashes, and no
network wait on an offline machine), or from PyG's download URL, through a staging folder
so a failed download leaves nothing behind.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal
from urllib.request import urlopen

import torch

from gnnbench.config import ConfigError, FileName, Settings, check, first_line
from gnnbench.data import cache
from gnnbench.data.task import simple_accuracy

RAW_PARTS = ("x", "tx", "allx", "y", "ty", "ally", "graph", "test.index")
BUILTIN = Path(__file__).resolve().parent / "builtin"
URL = "https://github.com/kimiyoung/planetoid/raw/master/data"
DOWNLOAD_TIMEOUT_S = 30.0
# SHA-256 of the official files (github.com/kimiyoung/planetoid, data/). PubMed's allx is
# larger than the copy these were taken from held: it is checked by its git blob id.
OFFICIAL = {
    "ind.cora.allx": "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543",
    "ind.cora.ally": "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71",
    "ind.cora.graph": "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d",
    "ind.cora.test.index": "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875",
    "ind.cora.tx": "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a",
    "ind.cora.ty": "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad",
    "ind.cora.x": "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab",
    "ind.cora.y": "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1",
    "ind.citeseer.allx": "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668",
    "ind.citeseer.ally": "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95",
    "ind.citeseer.graph": "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7",
    "ind.citeseer.test.index":
        "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4",
    "ind.citeseer.tx": "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21",
    "ind.citeseer.ty": "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce",
    "ind.citeseer.x": "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6",
    "ind.citeseer.y": "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924",
    "ind.pubmed.allx": "git:3b86bccf08111c37c632a9dd8ab63db25ea76361",
    "ind.pubmed.ally": "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e",
    "ind.pubmed.graph": "5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9",
    "ind.pubmed.test.index":
        "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5",
    "ind.pubmed.tx": "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d",
    "ind.pubmed.ty": "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd",
    "ind.pubmed.x": "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33",
    "ind.pubmed.y": "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3",
}


def raw_files(name: str) -> list[str]:
    return [f"ind.{name.lower()}.{part}" for part in RAW_PARTS]


def is_official(path: Path) -> bool:
    """Whether `path` holds exactly the official file of its name (nothing is unpickled)."""
    expected = OFFICIAL[path.name]
    if expected.startswith("git:"):
        return cache.git_blob_sha1(path) == expected[4:]
    return cache.sha256(path) == expected


def _from_mirror(name: str, mirror: str, raw: Path, wanted: list[str]) -> None:
    src = Path(mirror) / name / "raw"
    missing = [f for f in wanted if not (src / f).is_file()]
    if missing:
        raise ConfigError(f"data_mirror={mirror!r} is incomplete: {src} lacks "
                          f"{', '.join(missing)}")
    for f in wanted:
        if not is_official(src / f):
            raise ConfigError(f"{src / f} is not the official Planetoid file (its hash differs: "
                              "truncated, altered or another version); nothing was loaded")
        cache.atomic_copy(src / f, raw / f)


def _download(name: str, raw: Path, wanted: list[str]) -> None:
    """Into a staging folder in data_dir, checked, then moved: a failed or partial download
    leaves nothing behind, not even an empty raw/."""
    raw.parent.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=raw.parent.parent, prefix=f".{name}-download-"))
    try:
        for f in wanted:
            with urlopen(f"{URL}/{f}", timeout=DOWNLOAD_TIMEOUT_S) as response, \
                    open(staging / f, "wb") as out:
                shutil.copyfileobj(response, out)
            if not is_official(staging / f):
                raise ConfigError(f"the download of {f} from {URL} is not the official file "
                                  "(its hash differs); nothing was loaded")
        raw.mkdir(parents=True, exist_ok=True)
        for f in wanted:
            (staging / f).replace(raw / f)
    except OSError as exc:  # URLError and socket timeouts are OSErrors
        reason = first_line(exc, limit=10_000)
        raise ConfigError(f"cannot download {name} ({reason}); set data_mirror to a directory "
                          f"holding {name}/raw/ind.{name.lower()}.*") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ensure_raw(name: str, data_dir: Path, mirror: str | None) -> None:
    """Every raw file of `name` in the cache, official by its hash. A cached file that is
    not (a truncated copy, say) is replaced, with one warning naming it."""
    raw = data_dir / name / "raw"
    wanted = []
    for f in raw_files(name):
        if not (raw / f).is_file():
            wanted.append(f)
        elif not is_official(raw / f):
            cache.warn(f"{raw / f} is not the official file (truncated or altered); "
                       "replacing it")
            wanted.append(f)
    if not wanted:
        return
    try:
        if mirror is not None:
            _from_mirror(name, mirror, raw, wanted)
        elif (BUILTIN / name / "raw").is_dir():
            _from_mirror(name, str(BUILTIN), raw, wanted)
        else:
            _download(name, raw, wanted)
    except PermissionError as exc:
        raise cache.not_writable(data_dir, exc) from exc


def _processed(data_dir: Path, name: str):
    from torch_geometric.datasets import Planetoid
    from torch_geometric.transforms import NormalizeFeatures

    with cache.quiet(name):
        return Planetoid(str(data_dir), name, split="public", transform=NormalizeFeatures())[0]


class Options(Settings):
    """conf/dataset/{cora,citeseer,pubmed}.yaml."""

    name: FileName | None = None
    root_name: Literal["Cora", "CiteSeer", "PubMed"]  # PyG's name: the folder in data_dir


def load(data_dir: Path, mirror: str | None, device: torch.device, **options: Any) -> dict:
    """The dataset registry's entry point (`_target_` of the Planetoid YAMLs), called with
    the group's keys as `options`."""
    name = check(Options, options, "dataset").root_name
    data_dir = Path(data_dir)
    with cache.locked(data_dir, name):
        ensure_raw(name, data_dir, mirror)
        processed = data_dir / name / "processed"
        cache.drop_unsafe_processed(data_dir / name)
        try:
            data = _processed(data_dir, name)
        except PermissionError as exc:
            raise cache.not_writable(data_dir, exc) from exc
        except Exception as exc:  # the raw files are verified: the processed file is bad
            no_room = cache.full(data_dir)  # or could not be written: say so, in one line
            if no_room:
                raise no_room from exc
            cache.warn(f"{processed} could not be read ({type(exc).__name__}); processing "
                       f"{name} again from its raw files")
            shutil.rmtree(processed, ignore_errors=True)
            data = _processed(data_dir, name)
    splits = {s: getattr(data, f"{s}_mask").nonzero().view(-1) for s in ("train", "val", "test")}
    return {"x": data.x, "y": data.y, "edge_index": data.edge_index, "splits": splits,
            "num_classes": int(data.y.max()) + 1, "accuracy": simple_accuracy,
            "info": {"source": "planetoid"}}
