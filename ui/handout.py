"""A lesson's printable handout (issue 38 §4): `POST /lesson/handout` answers a page to print to PDF from the browser.

A section per moment: the sentence, the translation so far, the moment's figure as an image (the attention heatmap
where the moment opens the Attention tab, else the candidates for the next piece), the note, and the question with
its choices and a box to tick; the answers, with why, on a page of their own at the end. The lesson comes from the
teacher's page (`ui.lesson_panel.HANDOUT_JS`) and is read as any lesson file is (`explorer.lessons.read_lesson`):
untrusted, size-limited, every note escaped. The figures are computed on the server, as the page's are; the browser
turns each into an SVG image with the plotly.js the app serves already, then marks the page ready
(`document.body.dataset.ready`), and **Print** (or the browser's own) prints it.

One handout is made at a time per process (a lesson of 60 moments takes a few seconds of one core); another asked
meanwhile is told to try again.
"""

from __future__ import annotations

import html
import json
import threading

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from explorer import Explorer, ExplorerError, ExplorerState, ModelRegistry, render
from explorer.i18n import LANGUAGES, _, speaking
from explorer.lessons import MAX_BYTES, Lesson, LessonError, note_html, read_lesson
from explorer.questions import ask

from . import fonts
from .plot import PLOTLY_JS

BUSY = threading.Lock()
FIGURE_WIDTH = 720  # px of the SVG; the printed page scales it to its column

STYLE = """
@page { size: A4; margin: 15mm 14mm; }
body { font-family: %(fonts)s; color: #111827; max-width: 760px; margin: 24px auto; padding: 0 16px;
       line-height: 1.45; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { font-size: 18px; margin: 0 0 6px; }
.lead { color: #4b5563; margin: 0 0 18px; }
.moment { break-inside: avoid; page-break-inside: avoid; border-top: 1px solid #d1d5db; padding: 14px 0; }
.sentence { margin: 2px 0; } .sentence b { color: #3730a3; }
.figure { width: 100%%; height: auto; display: block; margin: 8px 0; }
.question { background: #eef2ff; border-radius: 6px; padding: 8px 12px; margin-top: 8px; }
.question ul { list-style: none; padding-left: 4px; margin: 6px 0 0; } .question li::before { content: "☐  "; }
.answers { break-before: page; page-break-before: always; padding-top: 8px; }
.answers li { margin: 6px 0; }
.toolbar { position: sticky; top: 0; background: #fff; padding: 8px 0; margin-bottom: 12px; }
.toolbar button { font: inherit; padding: 6px 16px; border-radius: 6px; border: 1px solid #4338ca;
                  background: #4338ca; color: #fff; cursor: pointer; }
@media print { .toolbar { display: none; } body { margin: 0; max-width: none; } }
"""

# Each figure's JSON, drawn as an SVG image in its place; then the page is ready to print.
SCRIPT = """
const figures = JSON.parse(document.getElementById("figures").textContent);
Promise.all(figures.map(async ({ place, figure }) => {
    const image = document.getElementById(place);
    const height = (figure.layout && figure.layout.height) || 400;
    figure.layout = { ...figure.layout, width: %(width)d, height };
    image.src = await Plotly.toImage(figure, { format: "svg", width: %(width)d, height });
    await image.decode().catch(() => {});
})).finally(() => { document.body.dataset.ready = "1"; });
document.getElementById("print").addEventListener("click", () => window.print());
"""


def figure_of(explorer: Explorer) -> str:
    """The moment's figure, as Plotly's JSON: its attention heatmap, or the next piece's candidates."""
    snapshot = explorer.snapshot()
    if explorer.state.tab == "attention":
        return render.attention_figure(snapshot, explorer.state).to_json()
    return render.candidates_figure(snapshot).to_json()


def section(registry: ModelRegistry, lesson: Lesson, index: int, language: str) -> tuple[str, str | None, str]:
    """A moment's section, its figure's JSON (None if the view cannot be opened), and its answer (or "")."""
    moment = lesson.moments[index]
    name = _("Moment {number}").format(number=index + 1)
    heading = f"<h2>{html.escape(name)}</h2>"
    try:
        # from the shared cache when a page has shown this view (a lesson the class went through), else computed
        explorer = Explorer.showing(registry, moment.state(ExplorerState(language=language)))
        snapshot = explorer.snapshot()
    except ExplorerError as error:
        said = _("This moment's view cannot be opened on this server: {error}").format(error=error)
        return f'<section class="moment">{heading}<p>{html.escape(said)}</p></section>', None, ""
    lines = [
        (_("Sentence"), explorer.state.source),
        (_("Translation so far"), snapshot.output_text or "…"),
    ]
    said = "".join(f'<p class="sentence"><b>{html.escape(k)}:</b> {html.escape(v)}</p>' for k, v in lines)
    note = note_html(moment.note) if moment.note else ""
    alt = _("The moment's figure")
    figure = f'<img class="figure" id="figure-{index}" alt="{html.escape(alt)}">'
    question, answer = "", ""
    if moment.question:
        asked = ask(explorer, moment.question, seed=index)
        choices = "".join(f"<li>{html.escape(asked.label(c))}</li>" for c in asked.choices)
        question = (
            f'<div class="question"><b>{html.escape(asked.title())}</b> {html.escape(asked.text())}'
            f"<ul>{choices}</ul></div>"
        )
        right = next(asked.label(c) for c in asked.choices if c.key == asked.answer)
        answer = f"<li><b>{html.escape(name)}:</b> {html.escape(right)}. {html.escape(asked.explanation())}</li>"
    body = f'<section class="moment">{heading}{said}{figure}<div class="note">{note}</div>{question}</section>'
    return body, figure_of(explorer), answer


def handout_html(registry: ModelRegistry, lesson: Lesson, language: str) -> str:
    """The whole handout page, in `language`."""
    with speaking(language):
        sections, figures, answers = [], [], []
        for index in range(len(lesson.moments)):
            body, figure, answer = section(registry, lesson, index, language)
            sections.append(body)
            if figure is not None:
                figures.append({"place": f"figure-{index}", "figure": json.loads(figure)})
            if answer:
                answers.append(answer)
        title = lesson.title or _("A lesson")
        heading = _("Answers")
        answers_html = (
            f'<section class="answers"><h1>{html.escape(heading)}</h1><ol>{"".join(answers)}</ol></section>'
            if answers
            else ""
        )
        lead = _("A lesson of Transformer Explorer: {count} moments.").format(count=len(lesson.moments))
        button = _("Print or save as PDF")
        toolbar = f'<div class="toolbar"><button id="print">{html.escape(button)}</button></div>'
        data = json.dumps(figures, ensure_ascii=False).replace("<", "\\u003c")  # never ends its <script>
        font_css = fonts.font_faces().replace("url('gradio_api/", "url('../gradio_api/")
        style = STYLE % {"fonts": ", ".join(f"'{name}'" for name in fonts.STACK[:-3]) + ", system-ui, sans-serif"}
        return (
            f'<!doctype html><html lang="{"zh-CN" if language == "zh" else "en"}"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{font_css}{style}</style>"
            f'<script src="../gradio_api/file={PLOTLY_JS.as_posix()}"></script></head><body>{toolbar}'
            f'<h1>{html.escape(title)}</h1><p class="lead">{html.escape(lead)}</p>{"".join(sections)}'
            f"{answers_html}"
            f'<script type="application/json" id="figures">{data}</script>'
            f"<script>{SCRIPT % {'width': FIGURE_WIDTH}}</script></body></html>"
        )


def message_page(message: str, status: int, language: str) -> HTMLResponse:
    lang = "zh-CN" if language == "zh" else "en"
    return HTMLResponse(
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8"><title>Transformer Explorer</title></head>'
        f"<body><p>{html.escape(message)}</p></body></html>",
        status_code=status,
    )


def routes(registry: ModelRegistry) -> list[Route]:
    """`POST /lesson/handout`: the handout of the lesson in the form's field `lesson`, in the field `language`."""

    async def handout(request: Request) -> Response:
        try:
            form = await request.form(max_files=0, max_fields=4, max_part_size=MAX_BYTES + 1024)
        except Exception:  # starlette's parser refuses a malformed or oversized form in several ways
            return message_page("Send the lesson as a form.", 400, "en")
        language = form.get("language") if form.get("language") in LANGUAGES else "en"
        with speaking(language):
            try:
                text = form.get("lesson")
                lesson = read_lesson(text if isinstance(text, str) else "")
            except LessonError as error:
                return message_page(_("This lesson cannot be printed: {error}").format(error=error), 400, language)
            if not BUSY.acquire(blocking=False):
                return message_page(_("The server is making another handout: try again in a moment."), 429, language)
        try:
            return HTMLResponse(await run_in_threadpool(handout_html, registry, lesson, language))
        finally:
            BUSY.release()

    return [Route("/lesson/handout", handout, methods=["POST"])]
