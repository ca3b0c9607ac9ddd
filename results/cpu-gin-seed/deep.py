"""The padding graph's logits at init on real padded batches, by depth (GIN, sum)."""
import torch, torch.nn.functional as F
from gnnbench.config import compose_config
from gnnbench import data
from gnnbench.training.graph_batches import GraphBatchTrainer
for layers in (5, 6, 7, 8, 10):
    cfg = compose_config(["model=gin", "workload=synthetic-graphs", "train.shape_policy=buckets",
                          "train.device=cpu", "wandb.mode=disabled", "data_dir=/tmp/gin-data",
                          f"model.num_layers={layers}"])
    torch.manual_seed(0)
    task = data.load_task(cfg.dataset, cfg.data_dir, None, torch.device("cpu"))
    tr = GraphBatchTrainer(cfg, task, torch.device("cpu"))
    m = tr.variants[0].model
    worst, nan_grads = 0.0, 0
    for k, b in enumerate(tr.loader):
        if k == 10: break
        i = tr._inputs(b)
        m.zero_grad()
        logits = m(*i.model_inputs())
        F.cross_entropy(logits, i.y).backward()
        worst = max(worst, logits[-1].abs().max().item())
        nan_grads += any(not p.grad.isfinite().all() for p in m.parameters())
    print(f"layers {layers}: padding-graph |logit| max {worst:.3g}, batches with non-finite grads {nan_grads}/10", flush=True)
