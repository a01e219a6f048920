"""view: what a user sees of a search: the live view as it goes (:class:`FindView`) and
the files written at the end (:func:`write_outputs`), shared by ``redline find``, its
experiments and the demo."""

from __future__ import annotations

import sys
import time
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # the search pulls in numpy/scipy: `redline run` must not pay for them
    from redline.find.step import Step


class FindView:
    """FindView shows the search as it goes: a rich panel on a terminal (the step, its
    progress, offered and achieved rate, p50/p95/p99, errors, service CPU and fds, elapsed and
    maximum time), one plain line per interval elsewhere."""

    def __init__(
        self,
        max_time_s: float,
        max_step_s: float,
        stream: IO[str] | None = None,
        monitor: Any = None,
    ):
        self.stream = stream or sys.stderr
        self.monitor = monitor
        self.max_time_s = max_time_s
        self.max_step_s = max_step_s
        self.started = time.monotonic()
        self.step_started = self.started
        self.last_load: float | None = None
        self.steps: list[str] = []
        self._live = None
        if self.stream.isatty():
            from rich.console import Console
            from rich.live import Live

            self._live = Live("searching...", console=Console(file=self.stream), transient=True)
            self._live.start()

    def snapshot(self, s: dict[str, Any], load: float, phase: str) -> None:
        """snapshot hears each interval of the search."""
        if load != self.last_load:
            self.last_load, self.step_started = load, time.monotonic()
        now = time.monotonic()
        offered = s.get("intended_rate")
        parts = [
            f"{phase} load={load:g}",
            f"offered={offered:.0f}/s" if offered else "",
            f"achieved={s.get('achieved_rate', 0):.0f}/s",
            f"p50={s.get('p50_ms', 0):.1f}ms p95={s.get('p95_ms', s.get('p90_ms', 0)):.1f}ms"
            f" p99={s.get('p99_ms', 0):.1f}ms",
            f"errors={s.get('errors', 0)}",
            self._service(),
            f"elapsed={now - self.started:.0f}s/{self.max_time_s:.0f}s",
        ]
        line = "  ".join(p for p in parts if p)
        if self._live is None:
            print(line, file=self.stream, flush=True)
            return
        from rich.console import Group
        from rich.progress_bar import ProgressBar
        from rich.text import Text

        done = min((now - self.step_started) / self.max_step_s, 1.0)
        total = min((now - self.started) / self.max_time_s, 1.0)
        self._live.update(
            Group(
                *(Text(x) for x in self.steps[-8:]),
                Text(line, style="bold"),
                Text("step  ", end=""),
                ProgressBar(total=1.0, completed=done, width=40),
                Text("total ", end=""),
                ProgressBar(total=1.0, completed=total, width=40),
            )
        )

    def _service(self) -> str:
        """_service is the monitored service's latest CPU and fds, when there is a monitor."""
        latest = self.monitor.latest() if self.monitor is not None else None
        if latest is None:
            return ""
        cpu = "?" if latest.cpu_percent is None else f"{latest.cpu_percent:.0f}%"
        fds = "?" if latest.fds is None else f"{latest.fds:.0f}"
        return f"service cpu={cpu} fds={fds}"

    def step(self, st: Step) -> None:
        """step hears each judged step."""
        verdict = "ok" if st.ok else ",".join(st.fired) + f" ({st.why})"
        cpu = st.service.get("cpu_percent")
        # --stream: the time to first token (else to first byte) beside the latency.
        first = st.stream.get("ttft") or st.stream.get("first_byte") or {}
        named = "ttft" if "ttft" in st.stream else "first byte"
        p50, p99 = first.get("p50_ms", 0.0), first.get("p99_ms", 0.0)
        line = (
            f"step {st.index + 1:>2} {st.phase:<7} load {st.load:>8g}  {st.throughput_rps:>8.0f}"
            f" req/s  p50 {st.p50_ms:7.1f} ms  p99 {st.p99_ms:7.1f} ms  errors"
            f" {st.error_rate:6.2%}"
            + (f"  cpu {cpu:.0f}%" if cpu is not None else "")
            + (f"  {named} p50 {p50:.1f} ms p99 {p99:.1f} ms" if first else "")
            + f"  {verdict}"
        )
        self.steps.append(line)
        if self._live is None:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        """close ends the live panel and leaves the step table on the screen."""
        if self._live is not None:
            self._live.stop()
            for line in self.steps:
                print(line, file=self.stream)


def write_outputs(
    result: dict[str, Any], json_path: str | None, html: str | None, markdown: str | None
) -> None:
    """write_outputs writes the JSON document and the reports that were asked for."""
    from redline.find import finder

    if json_path:
        finder.write_json(result, json_path)
    if html or markdown:
        from redline.report.render import write_reports

        write_reports(result, html, markdown)
