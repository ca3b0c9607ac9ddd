"""One experiment: validate, load the data, build and (maybe) compile, train, measure,
record, compare with eager records of the same setting, publish.

Whatever happens, `results.json` is written: a failed run is a result too.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable
from contextlib import nullcontext
from pathlib import Path

import torch
from omegaconf import DictConfig
from pydantic import ValidationError

from gnnbench import config, data, models
from gnnbench.measure import dynamo
from gnnbench.measure.environment import environment
from gnnbench.measure.summary import rank_timing, timing_summary
from gnnbench.records import compare, identity, publish, store
from gnnbench.records.model import CommandRecord, Record, Timing, new_record
from gnnbench.runner import distributed, interrupts, loop, priming, refusal
from gnnbench.training import compilation, sampler
from gnnbench.training.precision import matmul_precision


def validate(cfg: DictConfig) -> None:
    """Every check, each registry checking its own options."""
    config.validate(cfg)
    models.validate(cfg.model)
    data.validate(cfg.dataset)
    compilation.validate(cfg.compiler)
    layout = cfg.get("graph", {}).get("layout", "coo")
    if models.foreign_model(cfg.model):
        config.require(layout not in ("csr", "csr-op", "csr-triton"),
                       f"graph.layout={layout} needs gnnbench's own layers (model=gcn, sage, "
                       f"gat, gin); model {cfg.model.name} is not one: choose one of: coo, "
                       "edge_index")
    elif layout in ("csr-op", "csr-triton"):
        config.require(models.csr_aggregation(cfg.model) is not None,
                       f"graph.layout={layout} aggregates by one SpMM: it supports gcn "
                       f"(normalize=precompute) and sage (aggr=mean), not "
                       f"model={cfg.model.name}")
    scope = cfg.compiler.scope
    if cfg.compile and scope in ("layers", "nested"):
        config.require(not models.foreign_model(cfg.model),
                       f"compiler.scope={scope} compiles gnnbench's own layers one by one; "
                       f"model {cfg.model.name} is not one of them: choose one of: model, step")
        config.require(layout in ("coo", "edge_index"),
                       f"compiler.scope={scope} compiles each convolution, which graph.layout="
                       f"{layout} bypasses: choose one of: coo, edge_index")
        config.require(scope != "nested" or compilation.has_nested_regions(),
                       f"compiler.scope=nested needs torch.compiler.nested_compile_region "
                       f"(torch 2.8 or later; this is {torch.__version__}): choose layers")
    _validate_level(cfg, data.level(cfg.dataset), layout)
    if cfg.train.batching == "neighbor" and cfg.train.sampler == "pyg":
        config.require(sampler.pyg_available(), "train.sampler='pyg' needs pyg-lib or "
                       "torch-sparse; choose one of: auto, gnnbench")


def _validate_level(cfg: DictConfig, level: str, layout: str) -> None:
    """Graph-level and heterogeneous datasets train gnnbench's own models, model-compiled,
    in their own batches (training/graph_batches.py, training/hetero.py); what they do not
    support is one line naming the dataset."""
    train, name = cfg.train, cfg.dataset.name
    policy = train.get("shape_policy", "exact")
    if level == "node":
        config.require(policy == "exact", f"train.shape_policy={policy} shapes batches of "
                       f"whole graphs; dataset {name} is one graph (node-level): choose "
                       "exact, or train.pad_batches=true for neighbour batches")
        return
    what = ("graph-level: it trains in batches of train.batch_size whole graphs"
            if level == "graph" else "heterogeneous: it trains full batch or in neighbour "
            "batches of gnnbench's typed sampler")
    config.require(not models.foreign_model(cfg.model),
                   f"dataset {name} is {what}, with gnnbench's own models; model "
                   f"{cfg.model.name} is not one")
    config.require(train.batching == "full" or level == "hetero",
                   f"train.batching={train.batching} samples neighbours of one graph; "
                   f"dataset {name} is {what}: choose full")
    if level == "hetero" and train.batching == "neighbor":
        _validate_hetero_neighbors(cfg)
    config.require(not train.paired, f"train.paired=true is not supported for dataset {name} "
                   f"({what}); compare with an eager run of the same setting")
    config.require(not cfg.get("capture") and (not cfg.compile or cfg.compiler.scope ==
                                               "model"),
                   f"dataset {name} ({what}) is compiled as a model: needs "
                   "compiler.scope=model and capture=false")
    config.require(layout == "coo", f"graph.layout={layout} is not supported for dataset "
                   f"{name} ({what}); choose coo")
    if level == "hetero":
        config.require(models.hetero_capable(cfg.model), f"model {cfg.model.name} has no "
                       f"heterogeneous form; dataset {name} is {what}: choose one of: sage, rgcn")
        config.require(policy == "exact", f"train.shape_policy={policy} shapes batches of "
                       f"whole graphs; dataset {name} is one heterogeneous graph: choose exact")
        return
    norms = [k for k in ("batch_norm", "mlp_norm") if cfg.model.get(k)]
    config.require(policy != "buckets" or not norms,
                   f"train.shape_policy=buckets needs model.{norms[0] if norms else ''}=false "
                   "(batch norm would see the padding rows)")


def _validate_hetero_neighbors(cfg: DictConfig) -> None:
    """Neighbour batches of a heterogeneous dataset come from gnnbench's typed sampler
    (training/hetero_sampler.py) unpadded, one process: the rest is one line each."""
    train, name = cfg.train, cfg.dataset.name
    if train.sampler == "pyg":
        config.require(sampler.pyg_available(), "train.sampler='pyg' needs pyg-lib or "
                       "torch-sparse; choose one of: auto, gnnbench")
        config.require(False, f"train.sampler='pyg' samples homogeneous graphs only here; "
                       f"dataset {name} is heterogeneous: choose one of: auto, gnnbench")
    for key in ("pad_batches", "prefetch"):
        config.require(not train.get(key), f"train.{key}=true is not supported for the "
                       f"neighbour batches of heterogeneous dataset {name}; choose false")
    config.require(train.get("distributed", "none") == "none", f"train.distributed="
                   f"{train.distributed} is not supported for heterogeneous dataset {name}; "
                   "choose none")


def skipped_record(cfg: DictConfig, holder: str) -> Record:
    """A sweep job that would repeat an eager run another job of the sweep makes (`holder`)."""
    record = new_record(cfg, config.run_name(cfg))
    record.status, record.reason = "skipped", f"same eager run as {holder}"
    record.env = environment(None)
    record.timing = Timing(wall_s=0.0, compile_overhead_s=None)
    return record


def _problem(cfg: DictConfig) -> str | None:
    """What the checks say of the config (a bad value), or None."""
    try:
        validate(cfg)
    except config.ConfigError as exc:
        return str(exc)
    return None


def run_experiment(cfg: DictConfig, out_dir: Path, *, reference_dirs: Iterable[Path] = (),
                   wandb_group: str | None = None, log_dir: Path | None = None,
                   devices: list[torch.device] | None = None,
                   live_progress: bool = True,
                   prime_root: Path | None = None) -> Record | CommandRecord | None:
    """Run one configuration, write `out_dir/results.json`, then log it to W&B; never raises
    for a failed run. A compiled run compares itself with the newest eager record of the
    same setting and seed found under `reference_dirs` whose own timing checks passed (the
    newest of any, named as unstable, where none did), or with its paired twin; a DDP run
    with its world_size 1 twin. `devices`: the ones leased for the run (a DDP run: one per
    rank); default: `train.device`. Returns None, recording nothing, in a DDP rank other
    than 0 started by torchrun or srun (rank 0 records the run). Bad input (a `ConfigError`:
    a value, a dataset with no files) is recorded with `input_error` and not logged to W&B;
    a value of a type no run's record holds (compile=maybe) as a command that could not run.
    `live_progress=False`: plain progress lines even on a terminal (jobs side by side).
    `prime_root`: where warm and portable runs keep the priming of their setting (default:
    the folder of `out_dir`, so the runs of one sweep share it)."""
    started = time.perf_counter()
    reference_dirs = list(reference_dirs)
    refused = refusal.refuse(cfg, out_dir, started)  # what the declaration alone refuses
    if refused is not None:
        return refused
    try:
        record = new_record(cfg, config.run_name(cfg))
    except ValidationError:
        problem = _problem(cfg)
        if problem is None:  # a value the checks let through: a bug in gnnbench
            raise
        return refusal.invalid_command(cfg, problem, out_dir)
    # When it ran (Unix time), so runs of a sweep run side by side can be told apart.
    record.started_at = time.time()
    record.env = environment(None)
    ddp = cfg.train.get("distributed") == "ddp"
    stopped_at_once: BaseException | None = None
    cache_setup: dict | None = None
    try:
        validate(cfg)
        device = devices[0] if devices else config.resolve_device(cfg.train.device)
        if ddp:
            distributed.train(cfg, record, devices, out_dir)
        else:
            if device.type == "cuda":
                torch.cuda.set_device(device)
            record.env = environment(device)
            primes = prime_root or out_dir.parent
            with priming.compile_cache(cfg, device, primes) as cache_setup, \
                    matmul_precision(cfg.train.get("precision", "fp32")), \
                    dynamo.DynamoRecorder() if cfg.compile else nullcontext() as recorder:
                loop.train_epochs(cfg, device, record, recorder, live_progress)
    except config.ConfigError as exc:  # bad input (a value, a missing dataset): the user's
        record.status, record.reason = "error", str(exc)  # to fix; nothing trained
        record.input_error = True
    except (interrupts.Interrupted, KeyboardInterrupt) as exc:
        stopped_at_once = exc
        loop.record_stopped_at_once(record, exc, cfg.train.epochs)
    except Exception as exc:  # a failed run is an outcome: classify it and keep going
        loop.record_failure(record, exc)
    if ddp and not distributed.records_run():
        return None
    wall_s = time.perf_counter() - started
    if cache_setup is not None:  # the priming ran before, elsewhere: not this run's time
        wall_s -= cache_setup.get("setup_s", 0.0)
        if record.compile is not None:
            record.compile.cache_setup = cache_setup
    if record.epochs:
        warmup = min(cfg.train.warmup_epochs, len(record.epochs) - 1)
        # A captured eager step also pays once, for the capture: it counts as one-off cost.
        one_off = bool(cfg.compile) or bool(cfg.get("capture"))
        timing = timing_summary(record.epochs, warmup, wall_s, one_off, cfg.train.warmup_epochs)
        if ddp:
            timing.update(rank_timing(record.epochs, warmup, record.dataset.split_sizes.train))
        record.timing = timing
    else:
        record.timing = Timing(wall_s=wall_s, compile_overhead_s=None)
    if record.status == "ok" and (cfg.compile or cfg.get("capture")):
        if record.paired is not None:
            record.comparison = compare.compare_paired([record])
        else:
            record.reference_search = [str(d) for d in reference_dirs]
            eager = store.eager_references(reference_dirs, record)
            if eager:
                # The newest stable one; the answer names it if it was not stable.
                record.comparison = compare.compare(compare.choose_reference(eager), [record])
            else:  # its sweep's eager job may still be running (jobs side by side)
                record.reference_pending = store.claim_holder(
                    reference_dirs, identity.record_run_key(record))
    record.ended_at = time.time()
    if record.status == "ok" and identity.record_world_size(record) > 1:
        single = store.scaling_references(reference_dirs, record)
        if single:
            record.scaling = compare.compare_scaling(single[-1:], [record])
    if record.input_error:  # a record already in out_dir is a real run's: kept
        out_dir = store.beside(out_dir, "invalid-command")
    store.write(record, out_dir)
    if record.input_error:  # no W&B run named like a real one for a run never made
        return record
    if stopped_at_once is not None:  # asked to stop now: no W&B, and the caller sees it
        if isinstance(stopped_at_once, KeyboardInterrupt):
            raise stopped_at_once
        return record
    group = wandb_group or cfg.wandb.group or f"{cfg.model.name}-{cfg.dataset.name}"
    record.wandb_dir = publish.publish_to_wandb(record, out_dir, group, log_dir)
    try:  # the record on disk is whole already: this adds where W&B put the run (or null)
        store.write(record, out_dir)
    except store.WriteError as exc:
        print(f"gnnbench: warning: {exc}; the record stays as written before its W&B run "
              "(without wandb_dir)", file=sys.stderr, flush=True)
    return record
