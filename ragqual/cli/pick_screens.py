"""The picker's subject list and run screens (`ragqual pick`; the plan screen is in `pick_tui`)."""

from __future__ import annotations

from typing import Any, Protocol

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, OptionList, ProgressBar, Static

from ragqual.engine import loop, pick
from ragqual.engine.pick import PickPlan
from ragqual.engine.subject import Subject
from ragqual.errors import RagqualError


class Backend(Protocol):
    def subject_names(self) -> list[str]: ...
    def subject(self, name: str) -> Subject: ...
    def expected(self, plan: PickPlan) -> Any: ...
    def run(self, plan: PickPlan, progress: loop.ProgressCallback) -> tuple[loop.RunOutcome, Any]: ...


class SubjectScreen(Screen[None]):
    """Choose the subject (arrow keys, Enter)."""

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("Choose a subject (Enter):")
        yield OptionList(*self.app.backend.subject_names(), id="subjects")  # type: ignore[attr-defined]
        yield Footer()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.app.choose_subject(str(event.option.prompt))  # type: ignore[attr-defined]


class RunScreen(Screen[None]):
    """The run's progress, then its summary."""

    BINDINGS = [Binding("q", "quit_picker", "Quit")]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(self.app.command(), id="command")  # type: ignore[attr-defined]
        yield ProgressBar(id="progress", total=pick.trial_count(self.app.plan))  # type: ignore[attr-defined]
        yield Static("starting...", id="result")
        yield Footer()

    def on_mount(self) -> None:
        self.start()

    @work(thread=True, exclusive=True)
    def start(self) -> None:
        app: Any = self.app

        def progress(event: loop.Progress) -> None:
            app.call_from_thread(self._advance, event)

        try:
            outcome, summary = app.backend.run(app.plan, progress)
        except RagqualError as exc:
            app.call_from_thread(self._finish, None, f"the run stopped: {exc}")
            return
        app.call_from_thread(self._finish, outcome, app.summary_text(summary))

    def _advance(self, event: loop.Progress) -> None:
        bar = self.query_one("#progress", ProgressBar)
        bar.update(total=event.total, progress=event.done)
        self.query_one("#result", Static).update(f"run {event.run_id}: {event.done}/{event.total} trial(s)")

    def _finish(self, outcome: loop.RunOutcome | None, text: str) -> None:
        app: Any = self.app
        app.outcome = outcome
        head = "" if outcome is None else (
            f"run {outcome.run_id} {outcome.status}: {outcome.trials_run} trial(s), {outcome.model_calls} model "
            f"call(s), {outcome.cache_hits} cache hit(s), {outcome.trial_errors} error(s)\n\n")
        self.query_one("#result", Static).update(head + text + "\n\nq quits")

    def action_quit_picker(self) -> None:
        self.app.exit(self.app.outcome)  # type: ignore[attr-defined]
