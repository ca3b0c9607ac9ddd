"""Test-only: a GCN whose first forward emits what PyTorch and Inductor emit on a GPU run
(the TF32 hint, the online-softmax note), with their messages, category and modules, so a
CPU test sees where they end up; and a warning of its own, which is about the run."""

from __future__ import annotations

import warnings

from torch import Tensor

from gnnbench.models.gcn import GCN

TF32_HINT = ("TensorFloat32 tensor cores for float32 matrix multiplication available but not "
             "enabled. Consider setting `torch.set_float32_matmul_precision('high')` for "
             "better performance.")
ONLINE_SOFTMAX = ("\nOnline softmax is disabled on the fly since Inductor decides to\nsplit "
                  "the reduction. Cut an issue to PyTorch if this is an\nimportant use case "
                  "and you want to speed it up with online\nsoftmax.\n")
OWN = "NoisyGCN: a warning about this run"


class NoisyGCN(GCN):
    warned = False

    def forward(self, x: Tensor, edge_index: Tensor, edge_weight: Tensor | None = None) -> Tensor:
        if not NoisyGCN.warned:
            NoisyGCN.warned = True
            for message, module in ((TF32_HINT, "compile_fx"), (ONLINE_SOFTMAX, "lowering")):
                warnings.warn_explicit(message, UserWarning, f"torch/_inductor/{module}.py", 1,
                                       module=f"torch._inductor.{module}")
            warnings.warn(OWN, UserWarning, stacklevel=1)
        return super().forward(x, edge_index, edge_weight)
