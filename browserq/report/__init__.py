"""``browserq report RUN_ID``: one run as a self-contained HTML page — its header, the step
timeline drawn to scale, screenshots, the failure snapshot, outputs and how to open its traces.

:mod:`~browserq.report.collect` gathers the run from the store (artifacts only through the
artifact store), :mod:`~browserq.report.render` writes the page.
"""

from browserq.report.collect import RunNotFound, build_report
from browserq.report.evidence import trace_command
from browserq.report.model import Report
from browserq.report.render import render_html, write_report

__all__ = ["Report", "RunNotFound", "build_report", "render_html", "trace_command", "write_report"]
