"""The `ragqual pick` terminal UI: a thin Textual skin over `engine.pick.PickPlan`.

Screens: choose a subject; then filter and tick cases and type the values of every declared axis
(widgets are generated from the subject's `axes`, nothing here knows a subject); the footer shows
the trial count, the expected cache hits and the equivalent `ragqual run` command. Ctrl+R starts
the run on a progress screen that ends on the run's summary; `q` there quits.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Input, Label, SelectionList, Static
from textual.widgets.selection_list import Selection

from ragqual.cli.pick_screens import Backend, RunScreen, SubjectScreen
from ragqual.engine import loop, pick
from ragqual.engine.axes import show_value
from ragqual.engine.pick import PickPlan
from ragqual.engine.subject import Subject
from ragqual.errors import RagqualError

FILTERS = (("tag", "tag"), ("split", "split"), ("case_id", "id contains"), ("text", "text search"))


class _Column(VerticalScroll, can_focus=False):
    """A scrolling column that Tab passes through (its inputs take the focus)."""


class PlanScreen(Screen[None]):
    """Filter and tick cases, choose axis values; the summary line follows every change."""

    BINDINGS = [Binding("ctrl+r", "start", "Run"), Binding("ctrl+a", "tick(True)", "Tick shown"),
                Binding("ctrl+n", "tick(False)", "Untick shown")]

    def __init__(self, subject: Subject):
        super().__init__()
        self.subject = subject
        self.all_cases = subject.cases()

    def compose(self) -> ComposeResult:
        plan: PickPlan = self.app.plan  # type: ignore[attr-defined]
        yield Header()
        with Horizontal():
            with Vertical(id="left"):
                yield Label(f"subject {self.subject.name}: cases (space ticks)")
                for key, title in FILTERS:
                    yield Input(placeholder=title, id=f"filter-{key}")
                yield SelectionList[str](*self._selections(plan), id="cases")
            with _Column(id="right"):
                for axis in self.subject.axes:
                    yield Label(f"{axis.name} ({axis.enters}; {axis.allowed()})")
                    yield Input(",".join(show_value(v) for v in plan.axes[axis.name]),
                                id=f"axis-{axis.name}")
                if len(self.subject.modes) > 1:
                    yield Label(f"modes ({', '.join(self.subject.modes)})")
                    yield Input(",".join(plan.modes), id="modes")
                yield Label("trials per slot")
                yield Input(str(plan.trial_count), id="trials")
        yield Static("", id="summary")
        yield Footer()

    def on_mount(self) -> None:
        cases = self.query_one("#cases", SelectionList)
        cases.highlighted = 0 if cases.option_count else None
        self.query_one("#filter-text", Input).focus()
        self.refresh_summary()

    def _shown(self) -> list[Any]:
        return pick.filter_cases(self.all_cases, self.app.plan.case_filter)  # type: ignore[attr-defined]

    def _selections(self, plan: PickPlan) -> list[Selection[str]]:
        return [Selection(f"{c.slug}  {str(c.input)[:60]}", c.slug, c.slug in plan.cases)
                for c in pick.filter_cases(self.all_cases, plan.case_filter)]

    def on_input_changed(self, event: Input.Changed) -> None:
        app: PickerApp = self.app  # type: ignore[assignment]
        field = event.input.id or ""
        app.error = ""
        try:
            if field.startswith("filter-"):
                changes = {field[len("filter-"):]: event.value.strip()}
                app.plan = replace(app.plan, case_filter=replace(app.plan.case_filter, **changes))
                cases = self.query_one("#cases", SelectionList)
                cases.clear_options()
                cases.add_options(self._selections(app.plan))
                cases.highlighted = 0 if cases.option_count else None
            elif field.startswith("axis-"):
                app.plan = pick.set_axis(app.plan, self.subject.axes, event.value, field[len("axis-"):])
            elif field == "modes":
                modes = tuple(m.strip() for m in event.value.split(",") if m.strip())
                bad = [m for m in modes if m not in self.subject.modes]
                if bad or not modes:
                    raise ValueError(f"modes: use {', '.join(self.subject.modes)}")
                app.plan = replace(app.plan, modes=modes)
            elif field == "trials":
                count = int(event.value)
                if count < 1:
                    raise ValueError("trials per slot: 1 or more")
                app.plan = replace(app.plan, trial_count=count)
        except (RagqualError, ValueError) as exc:
            app.error = str(exc)
        self.refresh_summary()

    def on_selection_list_selected_changed(self, event: SelectionList.SelectedChanged) -> None:
        app: PickerApp = self.app  # type: ignore[assignment]
        shown = [c.slug for c in self._shown()]
        ticked = set(event.selection_list.selected)
        plan = pick.tick(app.plan, [s for s in shown if s not in ticked], False, self.all_cases)
        app.plan = pick.tick(plan, list(ticked), True, self.all_cases)
        self.refresh_summary()

    def action_tick(self, on: bool) -> None:
        cases = self.query_one("#cases", SelectionList)
        cases.select_all() if on else cases.deselect_all()

    def refresh_summary(self) -> None:
        app: PickerApp = self.app  # type: ignore[assignment]
        plan = app.plan
        lines = [f"{len(plan.cases)} case(s) x {pick.variant_count(plan)} variant(s) x {len(plan.modes)} mode(s) "
                 f"x {plan.trial_count} = {pick.trial_count(plan)} trial(s); {app.expected_text()}",
                 app.command(), app.error or "Ctrl+R runs"]
        self.query_one("#summary", Static).update("\n".join(lines))

    def action_start(self) -> None:
        app: PickerApp = self.app  # type: ignore[assignment]
        if app.error or not app.plan.cases:
            app.error = app.error or "tick at least one case"
            self.refresh_summary()
            return
        app.push_screen(RunScreen())


class PickerApp(App[Any]):
    """Holds the plan; screens edit it. `subject` skips the subject screen."""

    TITLE = "ragqual pick"
    CSS = """
    #left, #right { width: 1fr; }
    Input { height: 1; border: none; padding: 0 1; margin-bottom: 1; }
    Label { color: $text-muted; }
    SelectionList { height: 1fr; min-height: 5; }
    #summary { height: auto; max-height: 8; border-top: solid $accent; }
    """
    BINDINGS = [Binding("ctrl+q", "quit", "Quit")]

    def __init__(self, backend: Backend, subject: str | None = None, summary_text: Any = str):
        super().__init__()
        self.backend = backend
        self.summary_text = summary_text
        self.plan = PickPlan("", (), {}, ())
        self.error = ""
        self.outcome: loop.RunOutcome | None = None
        self._first = subject

    def on_mount(self) -> None:
        if self._first:
            self.choose_subject(self._first)
        else:
            self.push_screen(SubjectScreen())

    def choose_subject(self, name: str) -> None:
        subject = self.backend.subject(name)
        self.subject = subject
        self.plan = pick.initial_plan(name, subject.axes, subject.modes, subject.cases())
        self.push_screen(PlanScreen(subject))

    def command(self) -> str:
        s = self.subject
        return pick.cli_command(self.plan, s.axes, s.cases(), s.modes)

    def expected_text(self) -> str:
        try:
            return str(self.backend.expected(self.plan).text())
        except RagqualError as exc:
            return f"expected cache hits unknown ({exc})"
