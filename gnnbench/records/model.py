"""The `results.json` record as a type: what every reader of a run may rely on, declared once.

Reading validates (store.read: a file that fails is skipped with its first problem named),
writing validates (store.write), and code reads attributes, not string keys. Every part
keeps the keys it does not declare (`extra="allow"`): a record carries more than any one
reader needs (a newer gnnbench's keys, per-epoch stage times), and they are written back as
they came. Types are strict: a boolean is not a count and a string is not a time.

The shape on disk is published as JSON Schema for other tools
(gnnbench/records/record.schema.json, made by `python -m gnnbench.records.model --write`; a
test keeps it equal to these declarations); how older versions are read is in
records/schema.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable
from functools import cached_property
from typing import Any, Literal, TypeVar

from omegaconf import DictConfig, OmegaConf
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

from gnnbench.records.schema import SCHEMA_VERSION, STATUSES, upgrade

T = TypeVar("T")

Status = Literal["ok", "graph_break", "compile_error", "oom", "diverged", "interrupted",
                 "error", "skipped"]
assert STATUSES == Status.__args__  # noqa: S101  one list of statuses


class Part(BaseModel):
    """A part of a record: declared keys typed, other keys kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True, validate_assignment=True)

    def get(self, key: str, default: Any = None) -> Any:
        """A key that only some records have (a newer version's, a stage's time): its
        value where the record has it, else `default`."""
        return getattr(self, key) if self.has(key) else default

    def has(self, key: str) -> bool:
        """Whether the record has the key at all (as opposed to holding null)."""
        return key in self.model_fields_set or key in (self.model_extra or {})


# --- the run's configuration: the keys readers use; the rest stays as composed -------------

class ModelSettings(Part):
    name: str


class DatasetSettings(Part):
    name: str


class TrainSettings(Part):
    seed: int
    epochs: int
    warmup_epochs: int
    precision: str = "fp32"
    distributed: str = "none"
    world_size: int = 1
    paired: bool = False
    device: str = "auto"


class CompilerSettings(Part):
    mode: str
    dynamic: Any
    fullgraph: Any
    backend: str
    scope: str | None = None


class GraphSettings(Part):
    layout: str = "coo"


class WandbSettings(Part):
    mode: str
    group: str | None
    project: str | None = None
    entity: str | None = None
    job_type: str | None = None
    tags: list = []
    init_timeout_s: float | None = None


class RunConfig(Part):
    """The resolved config the run was made with. Only keys without float values are
    declared, so that validating never changes a value and the setting identity
    (records/identity.py) of a record read back is that of the run that wrote it."""

    model: ModelSettings
    dataset: DatasetSettings
    train: TrainSettings
    compile: bool
    compiler: CompilerSettings | None = None
    capture: Any = None
    graph: GraphSettings | None = None
    wandb: WandbSettings

    @model_validator(mode="after")
    def _compiled_says_how(self) -> RunConfig:
        if self.compile and self.compiler is None:
            raise ValueError("config.compiler is missing")
        return self

    @cached_property
    def as_dict(self) -> dict:
        """The config as the run recorded it (what the setting identity hashes); computed
        once: a record's config does not change."""
        return self.model_dump(exclude_unset=True)


# --- what the run measured ------------------------------------------------------------------

class Spread(Part):
    """A sample boiled down (measure/stats.summarize)."""

    median: float
    iqr: float | None = None
    n: int | None = None


class Epoch(Part):
    epoch: int | None = None
    train_s: float | None = None
    eval_s: float | None = None
    epoch_wall_s: float | None = None
    bookkeeping_s: float | None = None
    eager_train_s: float | None = None
    eager_eval_s: float | None = None
    loss: float | None = None
    eager_loss: float | None = None
    train_acc: float | None = None
    val_acc: float | None = None
    test_acc: float | None = None
    recompiles: int | None = None
    recompiles_this_epoch: int | None = None
    distinct_shapes: int | None = None  # shapes the model met so far (batches of graphs)
    # Epochs timed as one unit with this one (compiler.capture_epochs): its times are its
    # share of the unit's, its train_s holds train, eval and metrics (no eval_s). Absent: 1.
    timed_epochs: int | None = None


class Timing(Part):
    warmup_epochs: int | None = None
    train_s: Spread | None = None  # the train part of each epoch after the warm-up
    eval_s: Spread | None = None
    wall_s: float | None = None
    compile_overhead_s: float | None = None
    first_epoch_s: float | None = None
    ranks: list[dict] | None = None
    throughput_nodes_per_s: float | None = None
    # Epochs were timed in groups of this many: one steady sample per group (`train_s.n`
    # counts groups), no eval time of their own. Absent: each epoch timed by itself.
    timed_epochs: int | None = None


class Accuracy(Part):
    test_at_best_val: float | None = None
    best_val: float | None = None
    best_epoch: int | None = None
    final: dict | None = None
    chance: float | None = None
    near_chance: bool | None = None
    # Epochs in groups (compiler.capture_epochs): the best validation, its epoch and the
    # test accuracy there as the device kept them; equal to the above, which the host
    # finds in the epochs it read.
    on_device: dict | None = None


class Paired(Part):
    accuracy: Accuracy
    loss_max_abs_diff: float | None = None


class Memory(Part):
    peak_bytes: float | None = None


class CompileTimes(Part):
    """Where a run's compile time went (measure/dynamo.compile_times), seconds; absent from
    records older than the cache axis."""

    frames: int | None = None
    total_s: float | None = None
    dynamo_s: float | None = None
    aot_inductor_s: float | None = None
    kernel_compile_s: float | None = None
    autotune_s: float | None = None
    inductor_s: float | None = None
    cache_saved_s: float | None = None


class CacheSetup(Part):
    """The compile cache a run was started with (`compiler.cache`, runner/priming.py): the
    state asked for, and for warm and portable the priming run's own compile time, the
    portable artifacts' size and what loading them filled in. None for `as-is`."""

    state: str
    primed_now: bool | None = None
    prime_compile_s: float | None = None
    prime_wall_s: float | None = None
    artifacts_bytes: int | None = None
    artifacts_loaded: dict[str, int] | None = None
    load_s: float | None = None
    setup_s: float | None = None


class Compile(Part):
    graphs: int | None = None
    graph_breaks: int
    recompiles: int
    graph_break_reasons: list = []
    recompile_reasons: list = []
    # Lookups in Inductor's FX-graph and AOTAutograd's caches (hits, misses, each cache's).
    cache: dict[str, int] | None = None
    times: CompileTimes | None = None
    cache_setup: CacheSetup | None = None
    # scope=layers: how many modules were compiled on their own.
    regions: int | None = None


class Shapes(Part):
    """Which input shapes the model met and what they cost (schema 9; batches of whole
    graphs and heterogeneous graphs): `padding_share` is the share of node rows and edges
    computed that were padding; `recompiles_per_epoch` and the recompile limit come from
    dynamo (compiled runs), `cuda_graphs_recorded` from Inductor (CUDA)."""

    policy: str | None = None
    calls: int | None = None
    distinct_shapes: int | None = None
    distinct_shape_modes: int | None = None  # (shape, training or no_grad evaluation) pairs
    padding_share: float | None = None
    padding_share_nodes: float | None = None
    padding_share_edges: float | None = None
    buckets: int | None = None
    recompiles_per_epoch: list[int] | None = None
    recompile_limit: int | None = None
    recompile_limit_hit: bool | None = None
    recompile_limit_hits: list[str] = []
    cuda_graphs_recorded: int | None = None


class CudaGraphAudit(Part):
    requested: Any = None
    used: str | None = None
    inductor_skips: int


class Checks(Part):
    spread: float | None = None
    load_per_cpu: float | None = None


class Stability(Part):
    ok: bool
    warnings: list[str]
    checks: Checks


class Verdict(Stability):
    """A run's stability verdict as the report judges it: `recorded` when the run checked
    itself as it ran (schema 3 on), else judged from its epochs when read."""

    recorded: bool


class Env(Part):
    device: str | None = None
    device_name: str | None = None
    host: str | None = None
    device_index: int | None = None


class SplitSizes(Part):
    train: int | None = None


class DatasetInfo(Part):
    split_sizes: SplitSizes | None = None


class Distributed(Part):
    world_size: int | None = None
    ranks: list[dict] | None = None


class Batching(Part):
    mode: str = "full"


class Interval(Part):
    level: str | None = None


class Speedup(Part):
    """Eager over compiled steady-state medians, with its interval (measure/stats.py)."""

    speedup: float | None = None
    speedup_ci95: list[float | None] = [None, None]
    interval: Interval | None = None
    eager_step_median_s: float | None = None
    compiled_step_median_s: float | None = None
    break_even_epochs: float | None = None
    measurable: bool | None = None


class PayBack(Part):
    """When compiled runs that started with one cache state paid back their compile cost."""

    median_epoch: float | None = None
    runs: int
    never: int
    epochs: int


class Comparison(Speedup):
    """A compiled run (or a report row's runs) against its eager reference (records/compare)."""

    inference: Speedup | None = None
    epoch: Speedup | None = None
    compute: Speedup | None = None  # mini-batch: the step without the batches' loading
    per_run: list[float] = []
    pays_back: dict[str, PayBack] = {}
    end_to_end: dict | None = None
    reference_runs: list[dict] = []
    reference_notes: list[str] = []
    test_acc_delta: float | None = None
    eager_test_acc: float | None = None
    memory_ratio: float | None = None
    reference: str | None = None
    # Kept as an undeclared key where set, `timed_epochs`: the compiled runs' epochs were
    # timed in groups of this many (compiler.capture_epochs), so the train figure is train
    # and eval together on both sides, and there is no inference figure.


class Scaling(Part):
    """A DDP run on N ranks against the same setting on one (records/compare)."""

    world_size: int | None = None
    speedup: float | None = None
    speedup_ci95: list[float | None] = [None, None]
    efficiency: float | None = None
    efficiency_ci95: list[float | None] = [None, None]
    throughput_nodes_per_s: float | None = None


class Latency(Part):
    """Request latencies boiled down (measure/latency.py), milliseconds."""

    n: int
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    max_ms: float | None = None
    p50_ci_ms: list[float] | None = None
    p95_ci_ms: list[float] | None = None
    p99_ci_ms: list[float] | None = None


class OpenLoop(Part):
    rate_rps: float
    achieved_rps: float | None = None
    kept_up: bool | None = None
    latency: Latency


class ServingCase(Part):
    """One variant at one batch size of a serving run (runner/serving.py)."""

    variant: str
    batch_size: int
    status: str
    reason: str | None = None
    seeds: int | None = None
    first_request_ms: float | None = None
    warm_shapes_ms: float | None = None  # padded: every bucket shape run before timing
    closed: Latency | None = None
    throughput_rps: float | None = None
    open: OpenLoop | None = None
    distinct_shapes: int | None = None
    graphs: int | None = None
    recompiles: int | None = None
    compile_s: float | None = None
    cudagraph_recordings: int | None = None
    padding: dict | None = None


class Serving(Part):
    """A serving run's answers (`python -m gnnbench.serve`): its weights (random ones are
    declared), fan-outs, precision and one case per variant and batch size."""

    weights: str
    fanouts: list[int]
    precision: str
    cases: list[ServingCase]


class Record(Part):
    """One run: its outcome (`status`, `reason`), how it was made (`config`, `env`) and what
    it measured. `path` and `folder`: where it was read from (never written)."""

    schema_version: int = SCHEMA_VERSION
    name: str
    status: Status = "ok"
    reason: str | None = None
    config: RunConfig
    env: Env | None = None
    dataset: DatasetInfo | None = None
    timing: Timing | None = None
    compile: Compile | None = None
    memory: Memory | None = None
    accuracy: Accuracy | None = None
    comparison: Comparison | None = None
    paired: Paired | None = None
    batching: Batching | None = None
    cuda_graphs: str | None = None
    cuda_graph_audit: CudaGraphAudit | None = None
    shapes: Shapes | None = None
    stability: Stability | None = None
    distributed: Distributed | None = None
    scaling: Scaling | None = None
    graph_break: dict | None = None
    serving: Serving | None = None
    epochs: list[Epoch] = []
    started_at: float | None = None
    ended_at: float | None = None
    traceback: str | None = None
    input_error: bool | None = None
    path: str | None = Field(default=None, exclude=True)
    folder: str | None = Field(default=None, exclude=True)
    # What records/identity.py computed of this record (its setting key...): a report asks
    # each record several times, and a record's config and device do not change.
    _identity: dict[Hashable, Any] = PrivateAttr(default_factory=dict)

    def remembered(self, what: Hashable, make: Callable[[], T]) -> T:
        """`make()`, computed once per record (for `what`: a key naming what it depends on)."""
        # Straight from pydantic's slot: `self._identity` goes through a Python __getattr__,
        # which a report over thousands of records calls a hundred thousand times.
        cache = self.__pydantic_private__["_identity"]
        if what not in cache:
            cache[what] = make()
        return cache[what]

    def dump(self) -> dict:
        """The record as JSON holds it: every key it was given, in its order."""
        return self.model_dump(mode="json", exclude_unset=True, exclude={"path", "folder"})


def finished_problem(record: Record) -> str | None:
    """What a finished (ok) run lacks of what the report and the comparisons read of it;
    checked where records are read and written, not while a run fills its record in."""
    if record.status != "ok" or record.serving is not None:  # serving: no epochs
        return None
    for key in ("timing", "memory", "accuracy"):
        if getattr(record, key) is None:
            return f"{key} is null, expected an object"
    for key, kind in (("warmup_epochs", "an integer"), ("train_s", "an object")):
        if getattr(record.timing, key) is None:
            return f"timing.{key} is missing, expected {kind}"
    if record.accuracy.test_at_best_val is None:
        return "accuracy.test_at_best_val is missing, expected a number"
    for i, epoch in enumerate(record.epochs):
        if epoch.train_s is None:
            return f"epochs[{i}].train_s is missing, expected a number"
    if len(record.epochs) <= record.timing.warmup_epochs:
        return (f"status ok, but none of its {len(record.epochs)} epochs is after its "
                f"{record.timing.warmup_epochs} warm-up epochs")
    return None


class CommandRecord(Part):
    """The record of a command that could not even be composed (cli/invalid.py): its
    outcome and the command, so that it is not lost; no config, so no reader takes it for
    a run (store.read skips it, naming the null config)."""

    schema_version: int = SCHEMA_VERSION
    name: str
    status: Literal["error"] = "error"
    reason: str
    input_error: Literal[True] = True
    command: list[str]
    config: None = None
    env: Env | None = None
    epochs: list[Epoch] = []

    def dump(self) -> dict:
        return self.model_dump(mode="json")


# JSON's names for what a value is, and what pydantic's error types expected.
_EXPECTED = {"int_type": "an integer", "float_type": "a number", "string_type": "a string",
             "bool_type": "a boolean", "dict_type": "an object", "model_type": "an object",
             "list_type": "an array", "model_attributes_type": "an object"}


def _what(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    return {float: "a number", str: "a string", dict: "an object",
            list: "an array"}.get(type(value), f"a {type(value).__name__}")


def _short(value: object) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."


def _where(loc: tuple) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def first_problem(exc: ValidationError) -> str:
    """pydantic's first error in the words of a one-line warning."""
    error = exc.errors(include_url=False)[0]
    where, kind = _where(error["loc"]), error["type"]
    if kind == "missing":
        return f"{where} is missing"
    if kind == "value_error":
        return str(error["ctx"]["error"]) if "ctx" in error else error["msg"]
    if kind == "literal_error" and where == "status":
        return f"status {_short(error['input'])} is not one of {', '.join(STATUSES)}"
    if kind in _EXPECTED:
        return f"{where} is {_what(error['input'])}, expected {_EXPECTED[kind]}"
    return f"{where}: {error['msg']}"


def _version_problem(raw: object) -> str | None:
    if not isinstance(raw, dict):
        return f"the file holds {_what(raw)}, expected an object"
    version = raw.get("schema_version", 1)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        return f"schema_version {_short(version)} is not a version gnnbench knows"
    if version > SCHEMA_VERSION:
        return (f"schema_version {version} is newer than this gnnbench reads "
                f"({SCHEMA_VERSION}): update gnnbench to read it")
    if "status" not in raw:
        return "status is missing"
    if not isinstance(raw.get("config"), dict):
        return f"config is {_what(raw.get('config'))}, expected an object"
    return None


class RecordProblem(ValueError):
    """What makes a file's JSON not a record, in a few words for a one-line warning."""


_CURRENT = re.compile(rf'"schema_version":\s*{SCHEMA_VERSION}\s*[,}}]')


def parse_text(text: str) -> Record:
    """A file's text as today's Record. A record of today's version is validated straight
    from its JSON (pydantic's parser: a report reads thousands); anything else, or anything
    that fails there, goes through `parse`, which upgrades and names the first problem."""
    if _CURRENT.search(text):
        try:
            record = Record.model_validate_json(text)
        except ValidationError:
            record = None
        if (record is not None and record.schema_version == SCHEMA_VERSION
                and finished_problem(record) is None):
            return record
    try:
        raw = json.loads(text)
    except ValueError as exc:  # cut short, or not JSON at all
        raise RecordProblem(f"not JSON: {exc}") from None
    except RecursionError:
        raise RecordProblem("not JSON: nested too deep") from None
    return parse(raw)


def parse(raw: object) -> Record:
    """A file's parsed JSON as today's Record (older versions upgraded, records/schema.py).
    Raises RecordProblem naming the first thing no reader could use."""
    problem = _version_problem(raw)
    if problem:
        raise RecordProblem(problem)
    try:
        record = Record.model_validate(upgrade(raw))
    except ValidationError as exc:
        raise RecordProblem(first_problem(exc)) from None
    problem = finished_problem(record)
    if problem:
        raise RecordProblem(problem)
    return record


def new_record(cfg: DictConfig, name: str) -> Record:
    """The record of a run about to start: a success until something says otherwise."""
    return Record(name=name, status="ok", reason=None,
                  config=RunConfig.model_validate(OmegaConf.to_container(cfg, resolve=True)),
                  env=None, dataset=None, timing=None, compile=None, memory=None,
                  accuracy=None, comparison=None, paired=None, batching={"mode": "full"},
                  cuda_graphs=None, cuda_graph_audit=None, stability=None, distributed=None,
                  scaling=None, graph_break=None, epochs=[], schema_version=SCHEMA_VERSION)


SCHEMA_FILE = "record.schema.json"


def json_schema() -> dict:
    """The record's JSON Schema, for tools other than gnnbench."""
    schema = Record.model_json_schema(mode="serialization")
    return {**schema, "title": f"gnnbench run record (schema_version {SCHEMA_VERSION})"}


if __name__ == "__main__":
    import sys
    from pathlib import Path

    text = json.dumps(json_schema(), indent=2) + "\n"
    if sys.argv[1:] == ["--write"]:
        (Path(__file__).parent / SCHEMA_FILE).write_text(text)
    else:
        print(text, end="")
