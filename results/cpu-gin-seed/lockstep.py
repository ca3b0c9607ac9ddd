"""Eager and compiled twins from identical weights over the same padded batches, dropout
off: the per-step losses side by side and the largest weight difference."""
import copy, sys
import torch, torch.nn.functional as F
from gnnbench.config import compose_config
from gnnbench import data
from gnnbench.training.graph_batches import GraphBatchTrainer
from gnnbench.training.optim import make_optimizer

seed, dyn, steps = int(sys.argv[1]), sys.argv[2] == "true", int(sys.argv[3])
cfg = compose_config(["model=gin", "workload=synthetic-graphs", "train.shape_policy=buckets",
                      f"train.seed={seed}", "train.device=cpu", "wandb.mode=disabled",
                      "data_dir=/tmp/gin-data", "model.dropout=0.0"])
torch.manual_seed(seed)
task = data.load_task(cfg.dataset, cfg.data_dir, None, torch.device("cpu"))
tr = GraphBatchTrainer(cfg, task, torch.device("cpu"))
a = tr.variants[0].model
b = copy.deepcopy(a)
fa, fb = a, torch.compile(b, dynamic=dyn, fullgraph=True)
oa, ob = make_optimizer(a.parameters(), cfg.train), make_optimizer(b.parameters(), cfg.train)
step = 0
while step < steps:
    for batch in tr.loader:
        inputs = tr._inputs(batch)
        losses = []
        for m, f, o in ((a, fa, oa), (b, fb, ob)):
            m.train(); o.zero_grad()
            loss = F.cross_entropy(f(*inputs.model_inputs()), inputs.y)
            loss.backward(); o.step(); losses.append(loss.item())
        diff = max((p - q).abs().max().item() for p, q in zip(a.parameters(), b.parameters()))
        print(f"step {step:3d} eager {losses[0]:.6f} compiled {losses[1]:.6f} max|dW| {diff:.2e}", flush=True)
        step += 1
        if step == steps:
            break
