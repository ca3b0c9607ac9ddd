"""One serving experiment (`python -m gnnbench.serve`): a model (randomly initialised, which
the record declares, or trained first) answers requests for the predictions of a batch of
seed nodes, each request sampling its own neighbourhood; for each variant (eager, compiled,
reduce-overhead, padded) and batch size, a closed loop (the next request when the last one
is answered) gives latency percentiles, and an open loop (requests arriving at a fixed
rate, whether or not the last one is done) gives latency under load and the throughput
kept. Each variant is compiled once and serves every batch size, as one server process
would; its recompilations, graphs and CUDA-graph recordings are counted per batch size.

Whatever happens, `results.json` is written: a variant that fails is a case with its
status and reason, and the others still run."""

from __future__ import annotations

import time
from pathlib import Path

import torch
from omegaconf import DictConfig, OmegaConf

from gnnbench import config, data, models
from gnnbench.config import groups, settings
from gnnbench.measure import dynamo
from gnnbench.measure.environment import environment
from gnnbench.measure.latency import latency_summary, poisson_arrivals
from gnnbench.measure.timer import synchronize
from gnnbench.records import store
from gnnbench.records.model import (
    Compile,
    OpenLoop,
    Record,
    Serving,
    ServingCase,
    Timing,
    new_record,
)
from gnnbench.runner import loop, validate
from gnnbench.training import compilation
from gnnbench.training.precision import forward_in
from gnnbench.training.requests import Requests, answer
from gnnbench.training.sampler import CSRGraph


def run_name(cfg: DictConfig) -> str:
    return f"{cfg.model.name}-{cfg.dataset.name}-serve-s{cfg.serve.seed}"


def check(cfg: DictConfig) -> None:
    """The training checks (model, dataset, device...) of everything but `serve`, and the
    serving ones."""
    run = OmegaConf.masked_copy(cfg, [k for k in cfg if k != "serve"])
    validate(run)
    settings.check(groups.Serve, OmegaConf.to_container(cfg.serve, resolve=True), "serve")
    fanouts = list(cfg.serve.fanouts if cfg.serve.fanouts is not None else cfg.train.fanouts)
    layers = cfg.model.get("num_layers")
    config.require(layers is None or len(fanouts) == layers,
                   f"serve.fanouts={fanouts} needs one fan-out per layer "
                   f"(model.num_layers={layers})")


def _variant_forward(name: str, model: torch.nn.Module, cfg: DictConfig,
                     device: torch.device):
    """The callable a variant serves with: the model, or torch.compile of it (the
    compiler group's dynamic, fullgraph and backend; its mode per variant)."""
    if name == "eager":
        return model
    cuda = device.type == "cuda"
    mode = ("reduce-overhead" if name == "reduce-overhead" or (name == "padded" and cuda)
            else "default")
    compiler = {**OmegaConf.to_container(cfg.compiler), "mode": mode}
    return compilation.compile_model(model, OmegaConf.create(compiler))


def _warm_shapes(forward, requests: Requests, device: torch.device) -> float | None:
    """Run every bucket shape three times before timing (warm-up, CUDA-graph recording,
    a replay), as a server warms its shapes at start-up; its milliseconds, or None when
    requests are not padded."""
    rungs = requests.rung_requests()
    if not rungs:
        return None
    started = time.perf_counter()
    for request in rungs:
        for _ in range(3):
            answer(forward, request)
    synchronize(device)
    return (time.perf_counter() - started) * 1e3


def _closed_loop(forward, requests: Requests, count: int) -> tuple[list[float], set]:
    latencies, shapes = [], set()
    for _ in range(count):
        started = time.perf_counter()
        request = requests.next()
        answer(forward, request)
        latencies.append(time.perf_counter() - started)
        shapes.add(request.shape)
    return latencies, shapes


def _open_loop(forward, requests: Requests, rate: float, count: int,
               seed: int) -> tuple[OpenLoop, set]:
    """Requests arrive at `rate` per second (Poisson); one server answers them in order, so a
    request waits while earlier ones are served: its latency is from arrival to answer."""
    arrivals = poisson_arrivals(rate, count, seed)
    latencies, shapes = [], set()
    start = time.perf_counter()
    for arrival in arrivals:
        while (now := time.perf_counter() - start) < arrival:
            time.sleep(min(arrival - now, 0.001))
        request = requests.next()
        answer(forward, request)
        latencies.append(time.perf_counter() - start - arrival)
        shapes.add(request.shape)
    elapsed = time.perf_counter() - start
    achieved = count / elapsed if elapsed > 0 else None
    return OpenLoop(rate_rps=rate, achieved_rps=achieved,
                    kept_up=achieved is not None and achieved >= 0.95 * count / arrivals[-1],
                    latency=latency_summary(latencies)), shapes


def _serve_variant(name: str, model, cfg: DictConfig, device: torch.device, graph: CSRGraph,
                   task: data.Task, edge_weight, fanouts: list[int],
                   eager_rates: dict[int, float]) -> list[ServingCase]:
    s = cfg.serve
    cases = []
    with dynamo.DynamoRecorder() as recorder:
        forward = forward_in(cfg.train.get("precision", "fp32"), device,
                             _variant_forward(name, model, cfg, device))
        for batch_size in s.batch_sizes:
            case = ServingCase(variant=name, batch_size=batch_size, status="ok")
            before = Compile.model_validate(recorder.snapshot())
            trees_before = dynamo.recorded_cudagraph_trees(device)
            try:
                requests = Requests(graph, task.x, edge_weight, fanouts, batch_size,
                                    s.seed * 1000 + batch_size, padded=name == "padded")
                synchronize(device)
                started = time.perf_counter()
                answer(forward, requests.next())  # the first request: compiles if compiled
                case.first_request_ms = (time.perf_counter() - started) * 1e3
                case.warm_shapes_ms = _warm_shapes(forward, requests, device)
                _closed_loop(forward, requests, s.warmup_requests - 1)
                latencies, shapes = _closed_loop(forward, requests, s.requests)
                case.seeds = requests.seeds
                case.closed = latency_summary(latencies)
                case.throughput_rps = len(latencies) / sum(latencies)
                if name == "eager":
                    eager_rates[batch_size] = case.throughput_rps
                rate = s.rate or s.load * eager_rates.get(batch_size, case.throughput_rps)
                if s.open_loop_requests:
                    case.open, more = _open_loop(forward, requests, rate,
                                                 s.open_loop_requests, s.seed)
                    shapes |= more
                case.distinct_shapes = len(shapes)
                case.padding = requests.padding()
            except Exception as exc:  # a variant that fails is a case with its reason
                case.status, case.reason = (dynamo.classify_failure(exc)
                                            or ("error", loop.one_line(exc)))
            after = Compile.model_validate(recorder.snapshot())
            trees = dynamo.recorded_cudagraph_trees(device)
            case.graphs = after.graphs - before.graphs
            case.recompiles = after.recompiles - before.recompiles
            case.compile_s = after.times.total_s - before.times.total_s
            case.cudagraph_recordings = (trees - trees_before
                                         if None not in (trees, trees_before) else None)
            cases.append(case)
            if case.status != "ok":
                break  # a failed compile fails every later batch size alike
    return cases


def serve(cfg: DictConfig, out_dir: Path) -> Record:
    """Run the serving benchmark `cfg` describes; write `out_dir/results.json`."""
    started = time.perf_counter()
    record = new_record(cfg, run_name(cfg))
    record.started_at = time.time()
    record.env = environment(None)
    try:
        check(cfg)
        device = config.resolve_device(cfg.train.device)
        record.env = environment(device)
        torch.manual_seed(cfg.train.seed)
        task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
        record.dataset = task.info
        if cfg.serve.weights == "trained":
            trainer = loop.make_trainer(OmegaConf.merge(cfg, {"compile": False}), task, device)
            for epoch in range(cfg.train.epochs):
                trainer.epoch(epoch)
            model = trainer.variants[0].model
        else:
            model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
        model.eval()
        edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index,
                                                      task.num_nodes)
        graph = CSRGraph.from_edge_index(edge_index, task.num_nodes)
        fanouts = list(cfg.serve.fanouts if cfg.serve.fanouts is not None
                       else cfg.train.fanouts)
        cases, eager_rates = [], {}
        order = sorted(cfg.serve.variants, key=lambda v: v != "eager")  # eager sets the rate
        for name in order:
            cases += _serve_variant(name, model, cfg, device, graph, task, edge_weight,
                                    fanouts, eager_rates)
        record.serving = Serving(weights=cfg.serve.weights, fanouts=fanouts,
                                 precision=cfg.train.get("precision", "fp32"), cases=cases)
        failed = [c for c in cases if c.status != "ok"]
        if failed:
            record.status = failed[0].status
            record.reason = f"{failed[0].variant}: {failed[0].reason}"
    except config.ConfigError as exc:
        record.status, record.reason, record.input_error = "error", str(exc), True
    except Exception as exc:
        loop.record_failure(record, exc)
    record.timing = Timing(wall_s=time.perf_counter() - started, compile_overhead_s=None)
    record.ended_at = time.time()
    store.write(record, out_dir)
    return record
