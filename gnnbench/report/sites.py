"""Where a model of the user's own broke torch.compile's graphs or recompiled, with the
user's file and line: lines under a run's summary, and a section of the report. gnnbench's
own models keep their counts only (their breaks are gnnbench's to fix, not the user's)."""

from __future__ import annotations

from gnnbench.config.sources import is_foreign
from gnnbench.measure.sites import shown, where
from gnnbench.records.model import Record

MOST = 8  # lines per kind under a run's summary; results.json has them all


def foreign(record: Record) -> bool:
    return is_foreign(record.config.model.get("_target_"))


def _break(site: dict) -> str:
    return f"{site['reason']} at {where(site)}"


def _recompile(site: dict) -> str:
    return f"{site['function']} ({shown(site['file'])}:{site['line']}): {site['reason']}"


def _sites(record: Record) -> tuple[list[dict], list[dict]]:
    """(graph-break sites, recompile sites) of a run's compile record."""
    c = record.compile
    if c is None:
        return [], []
    return c.get("graph_break_sites") or [], c.get("recompile_sites") or []


def run_lines(record: Record, indent: str = "    ") -> list[str]:
    """A foreign model's breaks and recompilations, each with its place in the user's code,
    and for a break that failed the run, dynamo's hints."""
    if not foreign(record):
        return []
    lines = []
    failed = record.graph_break
    if failed:
        hints = [line.strip() for line in failed.get("explanation", "").splitlines()
                 if line.strip().startswith("Hint:")]
        lines += [f"{indent}dynamo's {hint[0].lower()}{hint[1:]}" for hint in hints[:2]]
    breaks, recompiles = _sites(record)
    for kind, found, fmt in (("graph break", breaks, _break), ("recompiled", recompiles,
                                                               _recompile)):
        lines += [f"{indent}{kind}: {fmt(site)}"
                  + (f" ({site['count']}x)" if site.get("count", 1) > 1 else "")
                  for site in found[:MOST]]
        if len(found) > MOST:
            lines.append(f"{indent}... {len(found) - MOST} more {kind} place(s) in results.json")
    return lines


def report_section(rows: list, members: list[list[Record]]) -> str | None:
    """The report's list, per row of a foreign model: each distinct place where its runs
    broke or recompiled, and in how many of the row's runs; None when there is none."""
    lines = []
    for row, runs in zip(rows, members, strict=True):
        if not runs or not foreign(runs[0]):
            continue
        seen: dict[str, int] = {}
        for run in runs:
            breaks, recompiles = _sites(run)
            places = {f"graph break: {_break(s)}" for s in breaks}
            places |= {f"recompiled: {_recompile(s)}" for s in recompiles}
            if run.graph_break:
                places.add(f"graph break that failed the run: {_break(run.graph_break)}")
            for place in places:
                seen[place] = seen.get(place, 0) + 1
        lines += [f"- {row.model}/{row.dataset} {row.variant}: {place} "
                  f"({count} of {len(runs)} run(s))" for place, count in sorted(seen.items())]
    if not lines:
        return None
    return ("## Graph breaks and recompilations in your models' code\n\n"
            "Each place in the code of a model that is not gnnbench's own where dynamo broke "
            "a graph or recompiled (dynamo's full explanation is in each run's "
            "`results.json`: `compile.graph_break_sites`, `compile.recompile_sites`, "
            "`graph_break`).\n\n" + "\n".join(lines))
