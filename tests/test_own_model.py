"""A model of the user's own (`model=custom model._target_=<module>.<Class>`): built from its
own options, checked against the contract before training, identified by its class and
options, and, compiled, its graph breaks and recompilations named by the user's file and
line. The user's module is a file in a folder of its own, as a user would have it."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import REPO
from omegaconf import OmegaConf
from support.processes import clean_env

from gnnbench import config
from gnnbench.records import identity
from gnnbench.report.summary import format_summary

EXAMPLE = REPO / "examples" / "mymodel.py"
QUICK = ("train.epochs=3", "train.warmup_epochs=1")
# Contract breakers, each in a module of its own: (source, what the one error line says).
BROKEN = {
    "not_module": ("class Net:\n    def __init__(self, in_channels, out_channels):\n"
                   "        pass\n", "is not a torch.nn.Module"),
    "factory": ("def Net(in_channels, out_channels):\n    return 3\n",
                "returned a int, not a torch.nn.Module"),
    "signature": ("import torch\nclass Net(torch.nn.Module):\n"
                  "    def __init__(self, in_channels, out_channels):\n"
                  "        super().__init__()\n"
                  "    def forward(self, data):\n        return data\n",
                  "cannot be called as forward(x, edge_index)"),
    "shape": ("import torch\nclass Net(torch.nn.Module):\n"
              "    def __init__(self, in_channels, out_channels):\n"
              "        super().__init__()\n        self.lin = torch.nn.Linear(in_channels, 2)\n"
              "    def forward(self, x, edge_index):\n        return self.lin(x)\n",
              "it must return one row of 7 logits per node"),
    "output": ("import torch\nclass Net(torch.nn.Module):\n"
               "    def __init__(self, in_channels, out_channels):\n"
               "        super().__init__()\n"
               "    def forward(self, x, edge_index):\n        return (x, edge_index)\n",
               "forward returned a tuple"),
}


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    """A user's folder holding mymodel.py (examples/), importable as the CLI makes it."""
    folder = tmp_path / "user"
    folder.mkdir()
    shutil.copy(EXAMPLE, folder / "mymodel.py")
    monkeypatch.syspath_prepend(str(folder))
    # An earlier test's copy (another folder) must not answer `import mymodel` here.
    monkeypatch.delitem(sys.modules, "mymodel", raising=False)
    return folder


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_a_model_that_breaks_the_contract_is_one_error_before_training(run, tmp_path,
                                                                      monkeypatch, kind):
    source, expected = BROKEN[kind]
    (tmp_path / f"broken_{kind}.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run("model=custom", f"model._target_=broken_{kind}.Net", *QUICK)
    assert result.status == "error" and result.get("input_error") is True
    assert expected in result.reason and "\n" not in result.reason
    assert result.epochs == []


@pytest.mark.parametrize(("overrides", "expected"), [
    (["model._target_=nowhere_to_be_found.Net"], "cannot be imported"),
    (["model._target_=mymodel.Net", "+model.hiden=8"], "unexpected keyword argument 'hiden'"),
    ([], "model=custom needs model._target_"),
    (["model._target_=mymodel.Net", "graph.layout=csr"], "needs gnnbench's own layers"),
    (["model._target_=mymodel.Net", "model.graph_inputs=gcn-norm"], "takes no edge_weight"),
])
def test_bad_custom_model_settings_are_one_line(run, user_dir, overrides, expected):
    result = run("model=custom", *overrides, *QUICK)
    assert result.status == "error" and result.get("input_error") is True
    assert expected in result.reason and "\n" not in result.reason


def test_custom_model_trains_with_its_own_options(run, user_dir):
    result = run("model=custom", "model._target_=mymodel.Net", "+model.hidden=8", *QUICK)
    assert result.status == "ok", result.reason
    assert result.name == "Net-synthetic-eager-s0"
    assert result.config.model.hidden == 8
    assert len(result.epochs) == 3 and result.accuracy is not None


def test_edge_weights_reach_a_forward_that_takes_them(run, tmp_path, monkeypatch):
    (tmp_path / "weighted.py").write_text(textwrap.dedent("""\
        import torch
        from torch_geometric.nn import GCNConv
        SEEN = []
        class Net(torch.nn.Module):
            def __init__(self, dim_in, dim_out):
                super().__init__()
                self.conv = GCNConv(dim_in, dim_out, normalize=False)
            def forward(self, x, edge_index, edge_weight=None):
                SEEN.append(edge_weight is not None)
                return self.conv(x, edge_index, edge_weight)
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run("model=custom", "model._target_=weighted.Net", "model.graph_inputs=gcn-norm",
                 "model.in_channels_arg=dim_in", "model.out_channels_arg=dim_out", *QUICK)
    assert result.status == "ok", result.reason
    import weighted

    assert weighted.SEEN and all(weighted.SEEN)


def test_minibatch_training_runs_the_model_on_sampled_subgraphs(run, user_dir):
    result = run("model=custom", "model._target_=mymodel.Net", "train.batching=neighbor",
                 "train.fanouts=[5,5]", "train.batch_size=64", *QUICK)
    assert result.status == "ok", result.reason
    assert result.batching.inference == "sampled subgraphs"
    assert result.accuracy.final["test"] is not None


def _key(*overrides: str) -> str:
    cfg = config.compose_config(["train.device=cpu", *overrides])
    return identity.setting_key(OmegaConf.to_container(cfg, resolve=True), "cpu")


def test_the_class_and_its_options_are_the_setting(user_dir):
    net = _key("model=custom", "model._target_=mymodel.Net")
    assert net == _key("model=custom", "model._target_=mymodel.Net")
    assert net != _key("model=custom", "model._target_=mymodel.BrokenNet")
    assert net != _key("model=custom", "model._target_=mymodel.Net", "+model.hidden=32")
    assert net != _key("model=custom", "model._target_=mymodel.Net", "model.input_dropout=0.5")
    # gnnbench's own models are named by `name`; their `_target_` stays out, as before.
    setting = identity.setting(OmegaConf.to_container(
        config.compose_config(["model=gcn"]), resolve=True), "cpu")
    assert "_target_" not in setting["model"] and "_target_" not in setting["dataset"]


def test_extra_options_need_a_plus_and_only_for_a_class_of_ones_own():
    config.check_overrides(["model=custom", "model._target_=m.Net", "+model.hidden=3"])
    config.check_overrides(["dataset=pyg", "+dataset.args.name=Cora"])
    with pytest.raises(config.ConfigError, match=r"add it with a '\+': \+model.hidden=3"):
        config.check_overrides(["model=custom", "model.hidden=3"])
    with pytest.raises(config.ConfigError, match="not a setting gnnbench reads"):
        config.check_overrides(["model=gcn", "+model.hidden_channels=3"])


@pytest.mark.slow
def test_graph_breaks_and_recompiles_name_the_users_line(run, user_dir):
    """fullgraph=false: the run goes on; each break is recorded with the user's frame."""
    result = run("model=custom", "model._target_=mymodel.BrokenNet", "compile=true",
                 "compiler.fullgraph=false", *QUICK)
    assert result.status == "ok", result.reason
    line = line_of(user_dir / "mymodel.py", "if x.abs().max() > 10:")
    sites = result.compile.graph_break_sites
    users = [s["user"] for s in sites if s["user"]]
    assert any(u["file"] == str(user_dir / "mymodel.py") and u["line"] == line for u in users)
    assert all(s["explanation"] for s in sites)
    assert any(r["file"] == str(user_dir / "mymodel.py")
               for r in result.compile.recompile_sites)
    summary = format_summary(result)
    assert f"mymodel.py:{line} in forward" in summary and "recompiled: " in summary


def _cli(args: list[str], cwd: Path, script: bool = False) -> subprocess.CompletedProcess:
    command = ([str(Path(sys.executable).with_name("gnnbench"))] if script
               else [sys.executable, "-m", "gnnbench"])
    return subprocess.run([*command, *args, "train.device=cpu"], cwd=cwd, env=clean_env(cwd),
                          capture_output=True, text=True, timeout=1800,
                          stdin=subprocess.DEVNULL)


def _record(cwd: Path, name: str) -> dict:
    found = [json.loads(p.read_text()) for p in (cwd / "outputs").rglob("results.json")]
    return next(r for r in found if r["name"].startswith(name))


@pytest.mark.slow
def test_own_model_from_a_users_folder(tmp_path):
    """The README's walk-through: a model file in a folder outside the checkout, compiled
    with an eager twin; its broken variant stops at the user's line."""
    shutil.copy(EXAMPLE, tmp_path / "mymodel.py")
    common = ["model=custom", "dataset=cora", "compile=true", "train.paired=true",
              "train.epochs=12", "train.warmup_epochs=2"]
    good = _cli([*common, "model._target_=mymodel.Net"], tmp_path)
    assert good.returncode == 0, good.stderr
    assert "Net on cora" in good.stdout and "=> " in good.stdout
    assert "against paired eager twin" in good.stdout
    record = _record(tmp_path, "Net-cora")
    assert record["status"] == "ok" and record["comparison"]["speedup"] > 0
    assert record["paired"]["accuracy"] is not None

    broken = _cli([*common, "model._target_=mymodel.BrokenNet"], tmp_path)
    line = line_of(tmp_path / "mymodel.py", "if x.abs().max() > 10:")
    assert broken.returncode == 1
    assert "status graph_break" in broken.stdout
    assert f"mymodel.py:{line}" in broken.stdout and f"mymodel.py:{line}" in broken.stderr
    record = _record(tmp_path, "BrokenNet-cora")
    assert record["status"] == "graph_break"
    assert record["graph_break"]["user"]["file"] == str(tmp_path / "mymodel.py")
    assert record["graph_break"]["user"]["line"] == line
    assert "Data-dependent branching" in record["graph_break"]["explanation"]
    from gnnbench.report.cli import render

    markdown = render([tmp_path / "outputs" / "runs"], "own")[2]
    assert "## Graph breaks and recompilations in your models' code" in markdown
    assert f"mymodel.py:{line} in forward" in markdown
    assert "- Net/cora compile-default paired: recompiled: forward (" in markdown


@pytest.mark.slow
def test_console_script_imports_the_model_from_the_launch_folder(tmp_path):
    """`gnnbench` (not `python -m`) has no working directory on its import path of its own."""
    shutil.copy(EXAMPLE, tmp_path / "mymodel.py")
    proc = _cli(["model=custom", "model._target_=mymodel.Net", *QUICK], tmp_path, script=True)
    assert proc.returncode == 0, proc.stderr
    assert _record(tmp_path, "Net-synthetic")["status"] == "ok"
