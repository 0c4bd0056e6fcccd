"""``browserq resolve`` as a user types it (issue 22, item 14): a `browserq run` that ends
needs_review names the command; the command refuses to re-run the unknown step blindly, then
carries the in-process run on in this process once the person says they checked."""

from __future__ import annotations

import re
from pathlib import Path

from browserq.store import Store
from tests.cli.helpers import ANSI, browserq, no_traceback
from tests.execute.test_resolve import ORDER, Orders
from tests.support.http import serve_http


def test_resolve_a_needs_review_run_from_the_command_line(tmp_path: Path) -> None:
    orders = Orders()
    with serve_http(orders.handler()) as host:
        templates = tmp_path / "templates"
        templates.mkdir()
        (templates / "order.yaml").write_text(
            "name: order\nversion: 1.0.0\n" + ORDER.format(host=host).replace("{{", "{")
        )
        env = {"BROWSERQ_TEMPLATES_DIR": str(templates)}
        ran = browserq(tmp_path, "run", "order", **env)
        out = ANSI.sub("", ran.stdout)
        assert ran.returncode == 1 and "NEEDS_REVIEW" in out.upper(), out[-2000:]
        run_id = re.search(
            r"browserq resolve ([0-9a-f]+) --completed\|--failed\|--retry-from STEP", out
        ).group(1)

        neither = browserq(tmp_path, "resolve", run_id[:10], **env)
        assert (
            neither.returncode == 2
            and "exactly one of --completed, --failed, --retry-from" in neither.stderr
        )
        blind = browserq(tmp_path, "resolve", run_id[:10], "--retry-from", "1", **env)
        assert blind.returncode == 2 and "--rerun-unknown" in ANSI.sub("", blind.stderr), (
            blind.stderr
        )
        no_traceback(blind)
        assert orders.count == 1

        checked = browserq(
            tmp_path,
            "resolve",
            run_id[:10],
            "--retry-from",
            "1",
            "--i-checked",
            "--by",
            "ana",
            "--reason",
            "no order in the shop",
            **env,
        )
        assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
        assert "COMPLETED" in ANSI.sub("", checked.stdout).upper() and orders.count == 2
        again = browserq(tmp_path, "resolve", run_id, "--failed", **env)
        assert again.returncode == 2 and "is completed, not needs_review" in ANSI.sub(
            "", again.stderr
        )

    store = Store(f"sqlite:///{tmp_path / 'cli.db'}")
    history = [(t.from_status, t.to_status, t.worker) for t in store.transitions.transitions(run_id)]
    assert ("needs_review", "queued", "ana") in history and history[-1][1] == "completed"
    shown = browserq(tmp_path, "show", run_id, **env)
    assert "resolved by ana: retry from step 1" in ANSI.sub("", shown.stdout).replace("\n", " ")
    store.dispose()
