import cProfile, pstats, statistics, sys, tempfile, time
from pathlib import Path
import torch, torch.nn.functional as F
from gnnbench import compile as compiler, config, data, models, timing, loop
from gnnbench.run import run_experiment
from gnnbench.benchmarks.overhead import bare_loop

def timer_loop(cfg, device):
    torch.manual_seed(cfg.train.seed)
    task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
    ei, ew = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
    model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.train.lr, weight_decay=cfg.train.weight_decay)
    if cfg.compile: compiler.reset()
    fwd = compiler.compile_model(model, cfg.compiler) if cfg.compile else model
    timer = timing.EpochTimer(device); out = []
    for _ in range(cfg.train.epochs):
        timing.synchronize(device); t = time.perf_counter()
        loss = timer.measure("train_s", lambda: loop.train_step(fwd, model, opt, task, ei, ew))
        pred = timer.measure("eval_s", lambda: loop.predict(fwd, model, task, ei, ew))
        acc, lv = loop.split_accuracy(pred, task), loss.item()
        timer.read()
        timing.synchronize(device); out.append(time.perf_counter() - t)
    return out

def runner(cfg):
    with tempfile.TemporaryDirectory() as d:
        r = run_experiment(cfg, Path(d))
    return [e["epoch_wall_s"] for e in r["epochs"]]

dev = torch.device("cuda")
mirror = sys.argv[1]
for compiled in ("false", "true"):
    cfg = config.compose_config(["dataset=cora", f"compile={compiled}", "train.epochs=60", "train.warmup_epochs=10",
                                 "wandb.mode=disabled", "data_dir=/tmp/data0", f"data_mirror={mirror}"])
    sides = {"bare": lambda: bare_loop(cfg, dev), "bare+timer": lambda: timer_loop(cfg, dev), "runner": lambda: runner(cfg)}
    res = {k: [] for k in sides}
    for i in range(6):
        names = list(sides) if i % 2 == 0 else list(sides)[::-1]
        for k in names:
            res[k].append(statistics.median(sides[k]()[10:]) * 1e3)
    print(f"compile={compiled}", {k: [round(v, 3) for v in vs] for k, vs in res.items()}, flush=True)
    print("  median of rounds (ms)", {k: round(statistics.median(v), 3) for k, v in res.items()}, flush=True)
    cfg2 = config.compose_config(["dataset=cora", f"compile={compiled}", "train.epochs=300", "train.warmup_epochs=10",
                                  "wandb.mode=disabled", "data_dir=/tmp/data0", f"data_mirror={mirror}"])
    stats = {}
    for k, fn in (("bare", lambda: bare_loop(cfg2, dev)), ("runner", lambda: runner(cfg2))):
        p = cProfile.Profile(); p.enable(); fn(); p.disable()
        stats[k] = {(f.split("site-packages/")[-1], l, n): (nc, tt) for (f, l, n), (cc, nc, tt, ct, _) in pstats.Stats(p).stats.items()}
    keys = set(stats["bare"]) | set(stats["runner"])
    diff = sorted(keys, key=lambda key: -(stats["runner"].get(key, (0, 0))[1] - stats["bare"].get(key, (0, 0))[1]))
    print("  cProfile: runner minus bare, us per epoch (calls per epoch)")
    for key in diff[:30]:
        r, b = stats["runner"].get(key, (0, 0)), stats["bare"].get(key, (0, 0))
        print(f"   {(r[1]-b[1])/300*1e6:8.1f} us  calls {r[0]/300:6.1f} vs {b[0]/300:6.1f}  {key[0]}:{key[1]}({key[2]})", flush=True)

s = torch.cuda.current_stream(); evs = [torch.cuda.Event(enable_timing=True) for _ in range(2000)]
for name, fn in (("current_stream()", lambda e: torch.cuda.current_stream()), ("record()", lambda e: e.record()), ("record(s)", lambda e: e.record(s)),):
    torch.cuda.synchronize(); t = time.perf_counter()
    for e in evs[:1000]: fn(e)
    torch.cuda.synchronize(); print(f"{name}: {(time.perf_counter()-t)/1000*1e6:.2f} us")
torch.cuda.synchronize(); t = time.perf_counter()
for a, b in zip(evs[:1000], evs[1000:]): a.elapsed_time(b)
print(f"elapsed_time: {(time.perf_counter()-t)/1000*1e6:.2f} us")
