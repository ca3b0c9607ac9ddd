"""Files gnnbench did not write itself are data, never code: a processed dataset file that
holds a pickle payload is not loaded (the dataset is made again from its hash-checked raw
files), whatever loader PyG would otherwise fall back to."""

from __future__ import annotations

from pathlib import Path

import torch


class Payload:
    """Unpickling this creates `marker`: the proof that a file's code ran."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_crafted_processed_planetoid_file_runs_no_code(run_in, tmp_path, capsys):
    first = run_in("dataset=cora", "train.epochs=2")
    assert first.status == "ok", first.reason
    processed = tmp_path / "data" / "Cora" / "processed" / "data.pt"
    marker = tmp_path / "the-payload-ran"
    torch.save(Payload(marker), processed)

    again = run_in("dataset=cora", "train.epochs=2")
    assert not marker.exists()
    assert again.status == "ok", again.reason
    assert again.dataset.num_nodes == first.dataset.num_nodes == 2708
    err = capsys.readouterr().err
    assert f"{processed} is not plain data" in err and "processing again" in err
    # Made again from the raw files: plain data now, loadable with weights_only=True.
    torch.load(processed, weights_only=True)
