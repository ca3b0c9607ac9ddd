"""Eager training as the runner does it (same seed, same trainer), step by step: the loss,
the share of live ReLU units (head hidden layer, GNN output after the readout's ReLU), and
the gradient norm, to see when and how a run collapses."""
import sys
import torch, torch.nn.functional as F
from gnnbench.config import compose_config
from gnnbench import data
from gnnbench.training.graph_batches import GraphBatchTrainer

seed, policy = int(sys.argv[1]), sys.argv[2]
extra = sys.argv[3:]
cfg = compose_config(["model=gin", "workload=synthetic-graphs", f"train.shape_policy={policy}",
                      f"train.seed={seed}", "train.device=cpu", "wandb.mode=disabled",
                      "data_dir=/tmp/gin-data", *extra])
torch.manual_seed(seed)
task = data.load_task(cfg.dataset, cfg.data_dir, None, torch.device("cpu"))
tr = GraphBatchTrainer(cfg, task, torch.device("cpu"))
v = tr.variants[0]
m = v.model
seen = {}
m.gnn.register_forward_hook(lambda mod, a, out: seen.__setitem__("gnn", out.detach()))
m.head[1].register_forward_hook(lambda mod, a, out: seen.__setitem__("head", out.detach()))
step = 0
for epoch in range(2):
    for b in tr.loader:
        inputs = tr._inputs(b)
        m.train(); v.optimizer.zero_grad()
        logits = v.forward(*inputs.model_inputs())
        loss = F.cross_entropy(logits, inputs.y)
        loss.backward()
        gn = torch.sqrt(sum((p.grad ** 2).sum() for p in m.parameters() if p.grad is not None))
        r = inputs.real_graphs
        g = seen["gnn"][: inputs.real[0]]
        h = seen["head"][:r]
        if step % 4 == 0 or loss.item() > 1.0:
            print(f"ep {epoch} step {step:3d} loss {loss.item():.4f} |grad| {gn:.3g} "
                  f"gnn-out live units {(g > 0).any(0).float().mean():.2f} max {g.abs().max():.3g} "
                  f"head live units {(h > 0).any(0).float().mean():.2f} "
                  f"logits std {logits[:r].std(0).tolist()}")
        v.optimizer.step()
        step += 1
