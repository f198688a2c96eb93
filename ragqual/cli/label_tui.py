"""The review queue of `ragqual label` in the terminal (Textual): a view of a ReviewQueue.

Every decision (order, sample, resume, what a key appends) is the queue's
(ragqual.core.label_queue, ragqual.app.labelling); this app shows the current trial and hands
keys to the queue. Tests drive it headless with `App.run_test()` and assert the rows appended.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.app import App, ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Input, Static

from ragqual.app.labelling import ReviewItem, ReviewQueue
from ragqual.core.label_queue import CRITERIA, key_help

MARK = {True: "pass", False: "FAIL", None: "not scored"}
# Keys that move the trial's text, not the queue: a long context is taller than a terminal.
SCROLL_KEYS = {"up": "scroll_up", "down": "scroll_down", "pageup": "scroll_page_up",
               "pagedown": "scroll_page_down", "home": "scroll_home",
               "end": "scroll_end"}


def _checks(item: ReviewItem) -> Text:
    text = Text(f"deterministic verdict: {MARK[item.passed]}", style="bold green" if item.passed else "bold red")
    if item.correctness is not None:
        text.append(f"   correctness {item.correctness:.2f}")
    if item.error:
        text.append(f"\ntrial error: {item.error}", style="red")
    for c in item.checks:
        text.append(f"\n  {'✓' if c.passed else '✗'} {c.name} ({c.category}, weight {c.weight:g})",
                    style=None if c.passed else "red")
    return text


def _context(item: ReviewItem) -> Text:
    text = Text("relevant documents: " + (", ".join(item.relevant) or "(none: out of corpus)"), style="bold")
    for chunk, relevant in item.chunks:
        text.append(f"\n  {'★' if relevant else ' '} {chunk}", style="bold yellow" if relevant else "dim")
    text.append("\n\n")
    text.append(item.context or "(no context: the model was given none)")
    return text


def _question(item: ReviewItem) -> Text:
    text = Text()
    for role, said in item.turns:
        text.append(f"{role}: ", style="bold")
        text.append(f"{said}\n", style="dim")
    if item.turns:
        text.append("user (the question): ", style="bold")
    text.append(item.question)
    return text


def render_item(queue: ReviewQueue, item: ReviewItem) -> list[tuple[str, Text]]:
    """(section title, body) of one trial, top to bottom."""
    given = queue.session.given(item.trial_id)
    labels = Text("  ".join(f"{c}: {given.get(c, '—')}" for c in CRITERIA))
    note = queue.session.notes.get(item.trial_id)
    if note:
        labels.append(f"\nnote: {note}")
    return [
        ("question" + (" (after the earlier turns)" if item.turns else ""), _question(item)),
        ("deterministic verdicts", _checks(item)),
        ("answer", Text(item.answer or "(empty)")),
        ("context (★ = a relevant document of the golden)", _context(item)),
        (f"your labels ({queue.labeller})", labels),
    ]


NOTE_EDIT_KEYS = {"backspace": "action_delete_left", "delete": "action_delete_right", "left": "action_cursor_left",
                  "right": "action_cursor_right", "home": "action_home", "end": "action_end"}


class NoteLine(Input):
    """The note line. It never takes focus: every key goes to the app, which edits it (see
    `LabelApp.note_key`), so keys are handled in the order they were typed."""

    can_focus = False


class LabelApp(App[None]):
    """One screen: status line, the trial, the keys; `n` opens a note line at the bottom."""

    CSS = """
    #status { background: $accent; color: $text; height: 1; }
    #body { height: 1fr; }
    .title { text-style: bold underline; margin-top: 1; }
    #keys { height: 4; background: $panel; }
    #note { display: none; }
    #note.open { display: block; }
    """

    def __init__(self, queue: ReviewQueue, **kwargs: Any):
        super().__init__(**kwargs)
        self.queue = queue

    def compose(self) -> ComposeResult:
        yield Static(id="status")
        yield VerticalScroll(id="body")
        yield NoteLine(placeholder="note on this trial, enter to save, escape to cancel", id="note")
        yield Static(key_help(), id="keys")

    def on_mount(self) -> None:
        self.refresh_view()

    def status(self) -> str:
        q, s = self.queue, self.queue.session
        sample = f" · sample {q.sample_size} seed {q.sample_seed}" if q.sample_size is not None else ""
        where = "done" if s.finished else f"trial {s.position + 1} of {len(s.order)}"
        return (f" run {q.run_id} · {q.labeller} · {where} · {q.already_done} of {q.run_trials} trials labelled "
                f"before{sample} · {len(q.saved)} label row(s) saved")

    def refresh_view(self) -> None:
        self.query_one("#status", Static).update(self.status())
        body = self.query_one("#body", VerticalScroll)
        body.remove_children()
        trial = self.queue.session.current
        if trial is None:
            body.mount(Static(Text("Nothing left in this queue: every trial in it is labelled or was skipped.\n"
                                   "b goes back, q quits.")))
            return
        item = self.queue.items[trial]
        head = f"trial {item.trial_id} · case {item.case_id} · {item.variant} · {item.mode} · repeat {item.repeat}"
        widgets = [Static(Text(head, style="bold"))]
        for title, text in render_item(self.queue, item):
            widgets += [Static(title, classes="title"), Static(text)]
        body.mount_all(widgets)
        body.scroll_home(animate=False)

    def on_key(self, event: events.Key) -> None:
        event.stop()
        note = self.query_one("#note", NoteLine)
        if note.has_class("open"):
            self.note_key(note, event)
        elif event.key == "q":
            self.exit()
        elif event.key in SCROLL_KEYS:
            getattr(self.query_one("#body", VerticalScroll), SCROLL_KEYS[event.key])(animate=False)
        elif event.key == "n" and not self.queue.session.finished:
            note.value = self.queue.session.notes.get(self.queue.session.current or 0, "")
            note.cursor_position = len(note.value)
            note.add_class("open")
        else:
            self.queue.press(event.key)
            self.refresh_view()

    def note_key(self, note: NoteLine, event: events.Key) -> None:
        """A key while the note line is open. The app edits the line itself, in the order keys
        arrive: a focused input would receive keys queued behind its `enter` after the app had
        already moved on (a verdict typed right after a note landed in the note)."""
        if event.key == "escape":
            self.close_note()
        elif event.key == "enter":
            self.queue.note(note.value)
            self.close_note()
        elif event.key in NOTE_EDIT_KEYS:
            getattr(note, NOTE_EDIT_KEYS[event.key])()
        elif event.is_printable and event.character:
            note.insert_text_at_cursor(event.character)

    def on_paste(self, event: events.Paste) -> None:
        note = self.query_one("#note", NoteLine)
        if note.has_class("open") and event.text:
            note.insert_text_at_cursor(event.text.splitlines()[0])

    def close_note(self) -> None:
        note = self.query_one("#note", NoteLine)
        note.remove_class("open")
        note.value = ""
        self.refresh_view()
