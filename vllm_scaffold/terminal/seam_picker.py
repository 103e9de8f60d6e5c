"""The seam a user picks on a terminal: every catalog seam, grouped by its category, narrowed by typing.

A row is a seam's key and title; the seam under the cursor is described below the list (its summary, the vLLM
processes that load it and when), word-wrapped to the terminal's width. The list scrolls when the terminal
is too short to show it whole.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from prompt_toolkit.application import Application, get_app
from prompt_toolkit.formatted_text import StyleAndTextTuples
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent
from prompt_toolkit.layout import FormattedTextControl, HSplit, Layout, Window, WindowRenderInfo
from prompt_toolkit.layout.dimension import Dimension
from prompt_toolkit.layout.margins import ScrollbarMargin
from prompt_toolkit.styles import Style

from vllm_scaffold.catalog import Seam

STYLE = Style.from_dict(
    {
        "question": "bold",
        "hint": "italic fg:ansibrightblack",
        "category": "bold fg:ansiblue",
        "current": "reverse",
        "untemplated": "fg:ansibrightblack",
        "tag": "fg:ansigreen",
        "note": "fg:ansiyellow",
        "label": "bold",
    }
)
PAGE = 10


class SeamPicker:
    """The state behind the list: the typed filter and the highlighted seam."""

    def __init__(self, message: str, seams: Sequence[Seam], notes: Mapping[str, str], intro: str = "") -> None:
        categories = list(dict.fromkeys(seam.category for seam in seams))  # in catalog order of first use
        self.message = message
        self.intro = intro
        self.seams = sorted(seams, key=lambda seam: categories.index(seam.category))
        self.notes = notes
        self.key_width = max(len(seam.key) for seam in seams)
        self.query = ""
        self.cursor = 0

    def shown(self) -> list[Seam]:
        """The seams the filter keeps: matches in key or title, else matches anywhere in what a seam says."""
        query = self.query.lower()
        if not query:
            return self.seams
        named = [seam for seam in self.seams if query in f"{seam.key} {seam.title}".lower()]
        if named:
            return named
        return [seam for seam in self.seams if query in f"{seam.summary} {seam.process_family} {seam.api}".lower()]

    def choosable(self) -> list[Seam]:
        return [seam for seam in self.shown() if seam.has_template]

    def current(self) -> Seam | None:
        choosable = self.choosable()
        return choosable[self.cursor] if choosable else None

    def move(self, step: int) -> None:
        count = len(self.choosable())
        if count:
            self.cursor = min(max(self.cursor + step, 0), count - 1)

    def type(self, query: str) -> None:
        self.query = query
        self.cursor = 0

    def header(self, width: int) -> StyleAndTextTuples:
        hint = "\n  up/down: move, type: filter, Enter: choose, Ctrl-C: quit"
        lines: StyleAndTextTuples = [("class:question", f"? {self.message}"), ("class:hint", hint)]
        if self.intro:
            lines.append(("class:note", "\n" + _wrap(self.intro, width, indent="  ")))
        if self.query:
            found = "" if self.shown() else "  (no seam matches)"
            lines += [("", "\n  filter: "), ("class:label", self.query), ("class:hint", found)]
        return lines

    def rows(self) -> StyleAndTextTuples:
        current = self.current()
        tokens: StyleAndTextTuples = []
        category = None
        for seam in self.shown():
            if seam.category != category:
                category = seam.category
                tokens.append(("class:category", f"{category}\n"))
            marker = "> " if seam is current else "  "
            if seam is current:
                tokens.append(("[SetCursorPosition]", ""))
            style = "class:current" if seam is current else "" if seam.has_template else "class:untemplated"
            tokens.append((style, f"{marker}{seam.key:<{self.key_width}}  {seam.title}"))
            if seam.kernel:
                tokens.append(("class:tag", "  [Triton kernel]"))
            if not seam.has_template:
                tokens.append(("class:untemplated", "  (no template yet)"))
            if seam.key in self.notes:
                tokens.append(("class:note", "  *"))
            tokens.append(("", "\n"))
        return tokens[:-1]

    def details(self, width: int) -> list[tuple[str, str]]:
        """(style, line) pairs describing the highlighted seam, each line at most `width` wide."""
        seam = self.current()
        if seam is None:
            return [("class:hint", "Backspace or Ctrl-U changes the filter.")]
        paragraphs = [
            ("class:label", f"{seam.title} ({seam.key})"),
            ("", seam.summary),
            ("", f"Runs in: {seam.process_family.rstrip('.')}."),
            ("", f"Loaded: {seam.load_timing.rstrip('.')}."),
        ]
        if seam.key in self.notes:
            paragraphs.append(("class:note", f"* {self.notes[seam.key]}"))
        return [(style, line) for style, text in paragraphs for line in _wrap(text, width).splitlines()]


def _wrap(text: str, width: int, indent: str = "") -> str:
    return textwrap.fill(
        text, width=max(width, 20), initial_indent=indent, subsequent_indent=indent + "  ", break_on_hyphens=False
    )


class ScrollbarWhenCut(ScrollbarMargin):
    """A scroll bar drawn only while the list is taller than its window, so a full list shows none."""

    def create_margin(self, window_render_info: WindowRenderInfo, width: int, height: int) -> StyleAndTextTuples:
        if window_render_info.content_height <= window_render_info.window_height:
            return []
        return super().create_margin(window_render_info, width, height)


def pick_seam(message: str, seams: Sequence[Seam], notes: Mapping[str, str] | None = None, intro: str = "") -> Seam:
    """Shows `seams` and returns the one chosen; KeyboardInterrupt on Ctrl-C or Ctrl-D.

    `notes` marks a seam and adds a line to its description (e.g. which components of that seam a project
    has); `intro` is shown under the question (e.g. what the project has).
    """
    picker = SeamPicker(message, seams, notes or {}, intro)

    def width() -> int:
        return get_app().output.get_size().columns - 1

    def details() -> StyleAndTextTuples:
        lines = picker.details(width())
        return [piece for style, line in lines for piece in ((style, line), ("", "\n"))][:-1]

    keys = KeyBindings()

    @keys.add("up")
    @keys.add("c-p")
    def _(event: KeyPressEvent) -> None:
        picker.move(-1)

    @keys.add("down")
    @keys.add("c-n")
    def _(event: KeyPressEvent) -> None:
        picker.move(1)

    @keys.add("pageup")
    def _(event: KeyPressEvent) -> None:
        picker.move(-PAGE)

    @keys.add("pagedown")
    def _(event: KeyPressEvent) -> None:
        picker.move(PAGE)

    @keys.add("backspace")
    def _(event: KeyPressEvent) -> None:
        picker.type(picker.query[:-1])

    @keys.add("c-u")
    def _(event: KeyPressEvent) -> None:
        picker.type("")

    @keys.add("<any>")
    def _(event: KeyPressEvent) -> None:
        if len(event.data) == 1 and event.data.isprintable():
            picker.type(picker.query + event.data)

    @keys.add("enter")
    def _(event: KeyPressEvent) -> None:
        if picker.current() is not None:
            event.app.exit(result=picker.current())

    @keys.add("c-c")
    @keys.add("c-d")
    def _(event: KeyPressEvent) -> None:
        event.app.exit(exception=KeyboardInterrupt())

    rows = Window(
        FormattedTextControl(picker.rows, focusable=True, show_cursor=False),
        wrap_lines=True,
        height=Dimension(min=1),
        dont_extend_height=True,
        right_margins=[ScrollbarWhenCut(display_arrows=True)],
    )
    body = HSplit(
        [
            Window(FormattedTextControl(lambda: picker.header(width())), wrap_lines=True, dont_extend_height=True),
            rows,
            Window(height=1, char="-", style="class:hint"),
            Window(
                FormattedTextControl(details),
                wrap_lines=True,
                height=lambda: Dimension.exact(len(picker.details(width()))),
            ),
        ]
    )
    app: Application[Seam] = Application(
        layout=Layout(body), key_bindings=keys, style=STYLE, full_screen=False, erase_when_done=True
    )
    return app.run()
