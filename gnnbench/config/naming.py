"""The names a run goes by: one variant label for every place that shows a compile setting
(run folders, W&B names and tags, report rows), so that they can never disagree."""

from __future__ import annotations

from collections.abc import Mapping


def variant_label(cfg: Mapping) -> str:
    """`eager`, `eager-captured` (the eager step replayed as one CUDA graph), or
    `compile-<mode>` followed by every compiler setting that differs from the default:
    `compile-reduce-overhead step`, `compile-default dynamic=False paired`,
    `compile-reduce-overhead epoch capture_epochs=5`."""
    if cfg["compile"] is not True:
        if cfg.get("capture"):
            return "eager-captured" + (" paired" if cfg["train"].get("paired") else "")
        return "eager"
    c = cfg["compiler"]
    extras = [c["scope"] if c.get("scope") in ("step", "epoch", "layers", "nested") else "",
              f"cache={c['cache']}" if c.get("cache", "as-is") != "as-is" else "",
              f"capture_epochs={c['capture_epochs']}" if c.get("capture_epochs", 1) != 1
              else "",
              f"dynamic={c['dynamic']}" if c["dynamic"] is not True else "",
              "fullgraph=False" if c["fullgraph"] is not True else "",
              f"backend={c['backend']}" if c["backend"] != "inductor" else "",
              "paired" if cfg["train"].get("paired") else ""]
    return " ".join([f"compile-{c['mode']}", *[e for e in extras if e]])


def variant_slug(cfg: Mapping) -> str:
    """The label as one word, for folder names and W&B tags: compile-reduce-overhead-step."""
    return variant_label(cfg).replace(" ", "-")


def run_name(cfg: Mapping) -> str:
    """sage-cora-compile-default-s0: model, dataset, variant, seed."""
    return (f"{cfg['model']['name']}-{cfg['dataset']['name']}-{variant_slug(cfg)}"
            f"-s{cfg['train']['seed']}")
