"""Run one benchmark against several revisions of browserq, interleaved, and print them side by side.

Why: a change that must not cost anything ("within 3 %") can only be judged against the revision
before it measured in the same minutes, on the same machine, under the same load. Each revision is
checked out into a temporary git worktree and runs *its own* copy of the benchmark script (so an old
revision is measured by the script it shipped with), with ``PYTHONPATH`` set to that tree. Rounds
are interleaved ``A, B, A, B, …`` so that a change in the machine's load falls on both.

    .venv/bin/python bench/revisions.py --rev 0c5f85b --rev HEAD --rounds 3 -- \\
        scrape_and_form.py --iterations 5
    .venv/bin/python bench/revisions.py --rev 0c5f85b --rev . -- throughput.py \\
        --ways raw_fresh,browserq --jobs 20 --rounds 1

``--rev .`` is the working tree as it is (uncommitted changes included). The script's ``--json``
output is read; ``--metric a.b.c`` picks figures by their path in it (defaults are known for
``scrape_and_form.py`` and ``throughput.py``). Progress goes to stderr; ``--json`` prints every
sample as JSON on stdout. Nothing is asserted: this measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]

#: What each known benchmark is judged by (paths into its --json output); the first is the headline.
DEFAULT_METRICS: dict[str, list[str]] = {
    "scrape_and_form.py": ["ratio_median_b_over_a", "browserq.median_ms", "playwright.median_ms"],
    "throughput.py": ["ways.browserq.pages_per_s_median", "ratios.browserq/raw_fresh",
                      "ways.raw_fresh.pages_per_s_median"],
}


@dataclass
class Revision:
    """One revision under test: its label as given, the commit it names and the tree it runs in."""

    label: str
    commit: str
    tree: Path
    samples: dict[str, list[float]] = field(default_factory=dict)
    raw: list[dict[str, Any]] = field(default_factory=list)


def git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


def checkout(label: str, scratch: Path) -> Revision:
    """``.`` is this working tree; anything else becomes a detached worktree under ``scratch``."""
    if label == ".":
        dirty = " (dirty)" if git("status", "--porcelain", "--untracked-files=no") else ""
        return Revision(label, git("rev-parse", "--short", "HEAD") + dirty, REPO)
    commit = git("rev-parse", "--short", label)
    tree = scratch / commit
    if not tree.exists():
        git("worktree", "add", "--detach", "--quiet", str(tree), commit)
    return Revision(label, commit, tree)


def pick(document: Any, path: str) -> float:
    """The number at ``path`` (keys joined by dots) in a benchmark's JSON output."""
    value = document
    for key in path.split("."):
        if not isinstance(value, dict) or key not in value:
            raise SystemExit(f"revisions: the benchmark's JSON has no {path!r} (missing {key!r}); "
                             "name a figure it prints with --metric")
        value = value[key]
    if not isinstance(value, int | float):
        raise SystemExit(f"revisions: {path!r} is {type(value).__name__}, not a number")
    return float(value)


def run_once(rev: Revision, script: str, script_args: list[str], metrics: list[str]) -> None:
    """One run of the revision's own benchmark script; its figures are appended to ``rev``."""
    env = {**os.environ, "PYTHONPATH": str(rev.tree)}
    argv = [sys.executable, str(rev.tree / "bench" / script), *script_args, "--json"]
    done = subprocess.run(argv, cwd=rev.tree, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"revisions: {script} failed on {rev.label} ({rev.commit}), exit {done.returncode}")
    document = json.loads(done.stdout)
    rev.raw.append(document)
    for metric in metrics:
        rev.samples.setdefault(metric, []).append(pick(document, metric))


def measure(revs: list[Revision], rounds: int, script: str, script_args: list[str],
            metrics: list[str]) -> None:
    for round_no in range(1, rounds + 1):
        for rev in revs:
            started = time.monotonic()
            run_once(rev, script, script_args, metrics)
            figures = ", ".join(f"{m.rsplit('.', 1)[-1]}={rev.samples[m][-1]:g}" for m in metrics)
            print(f"round {round_no}/{rounds} {rev.label} ({rev.commit}): {figures} "
                  f"[{time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f}]", file=sys.stderr)


def report(revs: list[Revision], metrics: list[str], script: str, script_args: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    for metric in metrics:
        table = Table(title=f"{script} {' '.join(script_args)} — {metric}")
        table.add_column("revision")
        table.add_column("per round")
        table.add_column("median", justify="right")
        table.add_column(f"vs {revs[0].label}", justify="right")
        base = statistics.median(revs[0].samples[metric])
        for rev in revs:
            values = rev.samples[metric]
            median = statistics.median(values)
            table.add_row(f"{rev.label} ({rev.commit})", ", ".join(f"{v:g}" for v in values),
                          f"{median:.3f}", f"{median / base:.3f}" if base else "-")
        console.print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rev", action="append", required=True,
                        help="a git revision (or . for the working tree); give two or more, oldest first")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds per revision (default 3)")
    parser.add_argument("--metric", action="append", help="a figure of the script's --json output, as a.b.c")
    parser.add_argument("--json", action="store_true", help="print every sample as JSON on stdout")
    parser.add_argument("bench", nargs=argparse.REMAINDER, help="-- SCRIPT [ARGS…] (a script in bench/)")
    args = parser.parse_args()
    bench = args.bench[1:] if args.bench[:1] == ["--"] else args.bench
    if not bench:
        parser.error("name the benchmark after --, e.g. -- scrape_and_form.py --iterations 5")
    script, script_args = Path(bench[0]).name, bench[1:]
    metrics = args.metric or DEFAULT_METRICS.get(script)
    if not metrics:
        parser.error(f"no default figures for {script}: name them with --metric")
    with tempfile.TemporaryDirectory(prefix="browserq-revisions-") as scratch:
        revs = [checkout(label, Path(scratch)) for label in args.rev]
        try:
            measure(revs, args.rounds, script, script_args, metrics)
        finally:
            for rev in revs:
                if rev.tree != REPO:
                    git("worktree", "remove", "--force", str(rev.tree))
    if args.json:
        print(json.dumps({"script": script, "args": script_args, "metrics": metrics,
                          "revisions": [{"label": r.label, "commit": r.commit, "samples": r.samples}
                                        for r in revs]}, indent=2))
    else:
        report(revs, metrics, script, script_args)


if __name__ == "__main__":
    main()
