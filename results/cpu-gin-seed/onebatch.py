"""Eager vs compiled forward/backward on identical padded batches, identical weights."""
import copy, sys
import torch, torch.nn.functional as F
from gnnbench.config import compose_config
from gnnbench import data
from gnnbench.training.graph_batches import GraphBatchTrainer

seed = int(sys.argv[1]) if len(sys.argv) > 1 else 1
dyn = sys.argv[2] if len(sys.argv) > 2 else "false"
cfg = compose_config(["model=gin", "workload=synthetic-graphs", "train.shape_policy=buckets",
                      f"train.seed={seed}", "train.device=cpu", "wandb.mode=disabled",
                      "data_dir=/tmp/gin-data", "model.dropout=0.0"])
torch.manual_seed(seed)
task = data.load_task(cfg.dataset, cfg.data_dir, None, torch.device("cpu"))
tr = GraphBatchTrainer(cfg, task, torch.device("cpu"))
model = tr.variants[0].model
twin = copy.deepcopy(model)
comp = torch.compile(twin, dynamic=(dyn == "true"), fullgraph=True)
it = iter(tr.loader)
for k in range(int(sys.argv[3]) if len(sys.argv) > 3 else 3):
    inputs = tr._inputs(next(it))
    model.train(); twin.train()
    outs = []
    for m, f in ((model, model), (twin, comp)):
        m.zero_grad()
        logits = f(*inputs.model_inputs())
        loss = F.cross_entropy(logits, inputs.y)
        loss.backward()
        outs.append((logits.detach(), loss.item(), {n: p.grad.clone() for n, p in m.named_parameters()}))
    (le, lo_e, ge), (lc, lo_c, gc) = outs
    r = inputs.real_graphs
    print(f"batch {k}: nodes {inputs.x.size(0)} real {inputs.real} graphs {r}; loss eager {lo_e:.6f} comp {lo_c:.6f}")
    print("  real logits max diff", (le[:r] - lc[:r]).abs().max().item(),
          " padding-graph logits eager", le[-1].tolist(), "comp", lc[-1].tolist())
    worst = max(((n, (ge[n] - gc[n]).abs().max().item() / (ge[n].abs().max().item() + 1e-12)) for n in ge), key=lambda t: t[1])
    print("  worst rel grad diff", worst, " nan in grads eager/comp",
          any(g.isnan().any().item() for g in ge.values()), any(g.isnan().any().item() for g in gc.values()))
