"""Weights & Biases: each run, and each sweep's report table. The only module that imports
wandb; `results.json` is written before W&B starts and stays the source of truth."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

from gnnbench.config import first_line, variant_slug
from gnnbench.records import offline
from gnnbench.records.model import Accuracy, Record, Spread, Timing, WandbSettings

# W&B is driven only after the last timed epoch: its background service then cannot steal
# CPU from, or add syncs to, the epochs we measure. results.json is already on disk when
# W&B starts, so a W&B failure costs a warning, never a result.


def _has_credentials() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    netrc = Path(os.environ.get("NETRC", Path.home() / ".netrc"))
    try:
        return "api.wandb.ai" in netrc.read_text()
    except OSError:
        return False


def wandb_mode(requested: str) -> str:
    """`auto`: online where credentials exist, otherwise offline (never a login prompt)."""
    if requested != "auto":
        return requested
    if os.environ.get("WANDB_MODE") in ("online", "offline", "disabled"):
        return os.environ["WANDB_MODE"]
    return "online" if _has_credentials() else "offline"


def _settings(wandb, init_timeout_s: float | None):
    """Quiet, bounded, and without W&B's system monitor: runs are logged after training, when
    there is no system load of the run's to watch."""
    return wandb.Settings(init_timeout=init_timeout_s, silent=True, console="off",
                          x_disable_stats=True)


@contextlib.contextmanager
def _logs_under(folder: Path) -> Iterator[None]:
    """W&B's background service writes its own debug log under $WANDB_CACHE_DIR or
    $XDG_CACHE_HOME (else ~/.cache): while it starts, point both at the run's (or sweep's)
    folder, so no log of a run lands in the user's home. Restored at once: nothing else in
    this process sees them (gnnbench logs no W&B artifacts, which that cache would hold)."""
    target = str(Path(folder).resolve() / "wandb" / "service")
    saved = {k: os.environ.get(k) for k in ("WANDB_CACHE_DIR", "XDG_CACHE_HOME")}
    os.environ.update(WANDB_CACHE_DIR=target, XDG_CACHE_HOME=target)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _ms(seconds: float | None) -> float | None:
    return seconds * 1e3 if seconds is not None else None


def _spread(spread: Spread | None) -> tuple[float | None, float | None]:
    return (spread.median * 1e3, _ms(spread.iqr)) if spread is not None else (None, None)


def _headline(result: Record) -> dict:
    """The figures a W&B user compares runs by, flat so the runs table can show them."""
    t, acc, dyn = result.timing or Timing(), result.accuracy or Accuracy(), result.compile
    stable, audit = result.stability, result.cuda_graph_audit
    (step_ms, step_iqr_ms), (eval_ms, _) = _spread(t.train_s), _spread(t.eval_s)
    summary = {
        "status": result.status,
        "reason": result.reason,
        "train_step_median_ms": step_ms,
        "train_step_iqr_ms": step_iqr_ms,
        "eval_median_ms": eval_ms,
        "first_epoch_s": t.first_epoch_s,
        "compile_overhead_s": t.compile_overhead_s,
        "wall_s": t.wall_s,
        "peak_memory_bytes": result.memory.peak_bytes if result.memory else None,
        "test_acc_at_best_val": acc.test_at_best_val,
        "best_val_acc": acc.best_val,
        "best_epoch": acc.best_epoch,
        "near_chance": acc.near_chance,  # None: a record older than the check
        "graphs": dyn.graphs if dyn else None,
        "graph_breaks": dyn.graph_breaks if dyn else None,
        "recompiles": dyn.recompiles if dyn else None,
        "cuda_graphs": result.cuda_graphs,
        "cuda_graph_skips": audit.inductor_skips if audit else None,
        # None (left out) for records with no steady epochs to judge.
        "unstable": (not stable.ok) if stable else None,
        "stability_warnings": len(stable.warnings) if stable else None,
    }
    if result.comparison is not None:
        c = result.comparison
        summary.update({f"vs_eager/{k}": v for k, v in c.model_dump().items()
                        if not isinstance(v, (list, dict))})
        for measure in ("inference", "epoch"):  # the other two speedups, flat for the table
            if (speedup := getattr(c, measure)) is not None:
                summary.update({f"vs_eager/{measure}_speedup": speedup.speedup,
                                f"vs_eager/{measure}_break_even_epochs":
                                    speedup.break_even_epochs})
        # What the interval covers ("epochs": one run a side, within-process only), its
        # bounds, and what a reader must know of the reference runs.
        summary.update({"vs_eager/ci_level": c.interval.level if c.interval else None,
                        "vs_eager/ci_low": c.speedup_ci95[0],
                        "vs_eager/ci_high": c.speedup_ci95[1],
                        "vs_eager/end_to_end_speedup": (c.end_to_end or {}).get("speedup"),
                        "vs_eager/reference_notes": "; ".join(c.reference_notes) or None})
    if result.shapes is not None:  # batches of whole graphs, heterogeneous graphs
        sh = result.shapes
        per_epoch = sh.recompiles_per_epoch or []
        summary.update({"shapes/policy": sh.policy, "shapes/distinct": sh.distinct_shapes,
                        "shapes/padding_share": sh.padding_share,
                        "shapes/recompile_limit_hit": sh.recompile_limit_hit,
                        "shapes/cuda_graphs_recorded": sh.cuda_graphs_recorded,
                        "shapes/recompiles_first_epoch": per_epoch[0] if per_epoch else None,
                        "shapes/recompiles_per_later_epoch":
                            sum(per_epoch[1:]) / (len(per_epoch) - 1)
                            if len(per_epoch) > 1 else None})
    if result.distributed is not None:  # a DDP run: its ranks, throughput, against one rank
        summary.update(world_size=result.distributed.world_size,
                       throughput_nodes_per_s=t.throughput_nodes_per_s)
        if result.scaling is not None:
            summary.update({f"scaling/{k}": v for k, v in result.scaling.model_dump().items()
                            if not isinstance(v, (list, dict))})
    return {k: v for k, v in summary.items() if v is not None}


def upload_hint(local_dir: str) -> str:
    """How to upload a W&B run logged offline: the command, ready to paste."""
    return f"W&B offline run saved in {local_dir}; upload it with: wandb sync {local_dir}"


@contextlib.contextmanager
def _no_log_tracebacks() -> Iterator[None]:
    """W&B's own log files on a full disk: their write errors are not printed as pages of
    '--- Logging error ---' tracebacks (the one line gnnbench prints says what failed)."""
    saved, logging.raiseExceptions = logging.raiseExceptions, False
    try:
        yield
    finally:
        logging.raiseExceptions = saved


def _record_type(blob: bytes) -> str | None:
    from wandb.proto.wandb_internal_pb2 import Record

    record = Record()
    record.ParseFromString(blob)
    return record.WhichOneof("record_type")


def _offline_saved(local_dir: str, out_dir: Path) -> str | None:
    """`local_dir` if W&B really saved the offline run there (and how to upload it); else
    one line saying it did not and why, with its partial files removed (nothing to upload)."""
    why = offline.not_saved(local_dir, _record_type)
    if why is None:
        print(upload_hint(local_dir))
        return local_dir
    shutil.rmtree(local_dir, ignore_errors=True)
    print(f"gnnbench: warning: W&B offline run not saved in {local_dir} ({why}; its partial "
          f"files are removed); results.json in {out_dir} is complete", file=sys.stderr)
    return None


def publish_to_wandb(result: Record, out_dir: Path, group: str,
                     log_dir: Path | None = None) -> str | None:
    """Log one finished run to W&B; returns the local run directory, or None when disabled
    or when W&B failed (after one warning on stderr). `log_dir`: where W&B's own service log
    goes if this run starts the service (a sweep's folder; default: the run's)."""
    with _no_log_tracebacks():
        return _publish_run(result, out_dir, group, log_dir)


def _publish_run(result: Record, out_dir: Path, group: str,
                 log_dir: Path | None) -> str | None:
    cfg, settings = result.config, result.config.wandb
    mode = wandb_mode(settings.mode)
    if mode == "disabled":
        return None
    try:
        import wandb

        def start(mode: str):
            with _logs_under(log_dir or out_dir):
                return _init(mode)

        def _init(mode: str):
            env = result.env.model_dump() if result.env is not None else {}
            return wandb.init(
                project=settings.project, entity=settings.entity, group=group,
                job_type=settings.job_type, name=result.name, dir=str(out_dir),
                mode=mode, tags=[cfg.model.name, cfg.dataset.name, variant_slug(cfg.as_dict),
                                 str(env.get("device") or "unknown").split(":")[0],
                                 *settings.tags],
                config={**cfg.as_dict, "env": env},
                settings=_settings(wandb, settings.init_timeout_s),
            )

        try:
            run = start(mode)
        except Exception as exc:
            if mode != "online":
                raise
            # No server (or no network): keep the run, offline, to upload later.
            print(f"gnnbench: warning: W&B could not start online "
                  f"({first_line(exc, typed=True)}); logging this run offline instead",
                  file=sys.stderr)
            mode = "offline"
            run = start(mode)
        try:
            run.define_metric("epoch")
            run.define_metric("*", step_metric="epoch")
            for row in result.epochs:
                logged = {"epoch": row.epoch, "loss": row.loss,
                          "train_step_ms": row.train_s * 1e3, "eval_ms": _ms(row.eval_s),
                          "acc/train": row.train_acc, "acc/val": row.val_acc,
                          "acc/test": row.test_acc,
                          # batches of whole graphs: what each epoch cost in compiles
                          "recompiles_this_epoch": row.recompiles_this_epoch
                          if result.shapes is not None else None,
                          "distinct_shapes": row.distinct_shapes}
                run.log({k: v for k, v in logged.items() if v is not None})
            run.summary.update(_headline(result))
            dynamo = result.compile
            if dynamo:
                run.summary.update({  # W&B's summary takes a dict, not keywords
                    "graph_break_reasons": wandb.Table(
                        columns=["reason", "count"],
                        data=[[r.get("reason"), r.get("count")]
                              for r in dynamo.graph_break_reasons]),
                    "recompile_reasons": wandb.Table(
                        columns=["index", "reason"],
                        data=[[i, r] for i, r in enumerate(dynamo.recompile_reasons)])})
            local_dir = str(run.settings.sync_dir)
        finally:
            run.finish(exit_code=0 if result.status == "ok" else 1)
        if mode == "offline" and local_dir:
            return _offline_saved(local_dir, out_dir)
        return local_dir
    except Exception as exc:  # W&B must never cost a result
        print(f"gnnbench: warning: W&B logging failed ({first_line(exc, typed=True)}); "
              f"results.json in {out_dir} is complete", file=sys.stderr)
        return None


def publish_report(rows: list[dict], columns: list[str], settings: WandbSettings, root: Path,
                   group: str) -> str | None:
    """The sweep's comparison table as a W&B run of job_type `report` in the sweep's group.
    Returns the run's local directory when it was logged offline (to be uploaded), else
    None."""
    mode = wandb_mode(settings.mode)
    if mode == "disabled":
        return None
    try:
        import wandb

        # One report run per folder, updated by each report: a fixed id, resumed, and the
        # superseded local copies removed (each holds the whole table).
        run_id = "report-" + hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:12]
        for old in (root / "wandb").glob(f"*-{run_id}"):
            shutil.rmtree(old, ignore_errors=True)
        with _logs_under(root):
            run = wandb.init(project=settings.project, entity=settings.entity,
                             group=group, job_type="report", name=f"report-{root.name}",
                             id=run_id, resume="allow", dir=str(root), mode=mode,
                             settings=_settings(wandb, settings.init_timeout_s))
        try:
            run.summary["comparison"] = wandb.Table(
                columns=columns, data=[[row[c] for c in columns] for row in rows])
            local_dir = str(run.settings.sync_dir)
        finally:
            run.finish()
        why = offline.not_saved(local_dir, _record_type) if mode == "offline" else None
        if why is not None:
            shutil.rmtree(local_dir, ignore_errors=True)
            print(f"gnnbench: warning: W&B report run not saved in {local_dir} ({why}); "
                  f"report files in {root} are complete", file=sys.stderr)
            return None
        return local_dir if mode == "offline" else None
    except Exception as exc:
        print(f"gnnbench: warning: W&B report logging failed ({type(exc).__name__}); "
              f"report files in {root} are complete", file=sys.stderr)
        return None
