"""Where a served request's time goes, per variant and batch size: sampling its
neighbourhood (then a device synchronisation) against answering it (the model's forward,
the argmax and the read to the host), and a torch.profiler table of the answers of the
compiled and eager variants at one batch size. Run from the repository root:

    python results/h200-serving/split.py [data_dir]
"""

import statistics
import sys
import time

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from gnnbench import config, data, models
from gnnbench.measure.timer import synchronize
from gnnbench.runner.serving import _variant_forward, _warm_shapes
from gnnbench.training.precision import forward_in
from gnnbench.training.requests import Requests, answer
from gnnbench.training.sampler import CSRGraph

data_dir = sys.argv[1] if len(sys.argv) > 1 else "/tmp/data"
cfg = config.compose_config(["model=sage", "dataset=cora", f"data_dir={data_dir}",
                             "wandb.mode=disabled"], name="serve")
device = config.resolve_device(cfg.train.device)
torch.manual_seed(0)
task = data.load_task(cfg.dataset, cfg.data_dir, cfg.data_mirror, device)
model = models.build_model(cfg.model, task.num_features, task.num_classes).to(device).eval()
edge_index, edge_weight = models.graph_inputs(cfg.model, task.edge_index, task.num_nodes)
graph = CSRGraph.from_edge_index(edge_index, task.num_nodes)
fanouts = list(cfg.train.fanouts)


def pct(values, q):
    return float(np.percentile(np.asarray(values) * 1e3, q))


for name in ("eager", "compiled", "padded"):
    forward = forward_in("fp32", device, _variant_forward(name, model, cfg, device))
    for batch in (1, 16, 256):
        requests = Requests(graph, task.x, edge_weight, fanouts, batch, batch,
                            padded=name == "padded")
        answer(forward, requests.next())
        _warm_shapes(forward, requests, device)
        for _ in range(20):
            answer(forward, requests.next())
        sample, reply, whole = [], [], []
        for _ in range(300):
            t0 = time.perf_counter()
            request = requests.next()
            synchronize(device)
            t1 = time.perf_counter()
            answer(forward, request)
            t2 = time.perf_counter()
            sample.append(t1 - t0)
            reply.append(t2 - t1)
            whole.append(t2 - t0)
        print(f"{name:9s} batch {batch:4d}: request p50 {pct(whole, 50):.3f} p99 "
              f"{pct(whole, 99):.3f} ms | sampling p50 {pct(sample, 50):.3f} p99 "
              f"{pct(sample, 99):.3f} | answer p50 {pct(reply, 50):.3f} p99 "
              f"{pct(reply, 99):.3f} ms", flush=True)
        if batch == 16 and name in ("eager", "compiled"):
            ready = [requests.next() for _ in range(30)]
            synchronize(device)
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for request in ready:
                    answer(forward, request)
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=18,
                                            max_name_column_width=70), flush=True)
            kernels = [e for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA]
            print(f"{name} batch 16: {len(kernels) / 30:.1f} kernels per answer, GPU busy "
                  f"{statistics.fsum(e.device_time for e in kernels) / 30 / 1e3:.3f} ms "
                  f"per answer", flush=True)
