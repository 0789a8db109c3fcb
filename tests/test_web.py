"""`ui.web`: request bodies over the limit refused before they are read whole, the security headers, and the page
sent compressed."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import app
from ui import web
from ui.browser_internals import ATTACHED_EVENTS, IDLE_TIMER, NODE_LOOKUP

SEEN: list[int] = []
EVENT_STREAM = "text/event-stream"
TRACKER = "function ze(){me(()=>{F(Pe,1),W&&ze()})}" + " " * 4000  # gradio's status tracker, in part
CORE = "var a=1;" + NODE_LOOKUP.before + ATTACHED_EVENTS.before + " " * 4000  # gradio's core script, in part
PAGE = "<html><script>window.gradio_config = {...}</script></html>" * 2000  # a page as gradio's: its config inside


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    SEEN.append(len(body))
    return JSONResponse({"size": len(body)})


def script(request: Request) -> PlainTextResponse:
    SEEN.append(-1)  # a script served
    return PlainTextResponse(PAGE, media_type="text/javascript")


def tracker(request: Request) -> PlainTextResponse:
    return PlainTextResponse(TRACKER, media_type="text/javascript")


def core(request: Request) -> PlainTextResponse:
    return PlainTextResponse(CORE, media_type="text/javascript")


@pytest.fixture
def client():
    SEEN.clear()
    routes = [
        Route("/gradio_api/queue/join", echo, methods=["POST"]),
        Route("/gradio_api/upload", echo, methods=["POST"]),
        Route("/", lambda request: HTMLResponse(PAGE)),
        Route("/assets/index.js", script),
        Route("/assets/statustracker-Ab1-2.js", tracker),
        Route("/assets/core-Cd3-4.js", core),
        Route("/gradio_api/queue/data", lambda request: StreamingResponse(iter([PAGE]), media_type=EVENT_STREAM)),
    ]
    return TestClient(Starlette(routes=routes, middleware=web.middleware()))


def chunks(size: int, piece: int = 8192):
    for start in range(0, size, piece):
        yield b"x" * min(piece, size - start)


def test_a_body_within_the_limit_reaches_the_app_whole(client):
    assert client.post("/gradio_api/queue/join", content=b"x" * web.MAX_BODY_BYTES).json() == {
        "size": web.MAX_BODY_BYTES
    }
    assert client.post("/gradio_api/queue/join", content=chunks(30_000)).json() == {"size": 30_000}


def test_a_larger_body_is_refused_before_the_app_reads_it(client):
    stated = client.post("/gradio_api/queue/join", content=b"x" * (web.MAX_BODY_BYTES + 1))
    streamed = client.post("/gradio_api/queue/join", content=chunks(50 * 1024 * 1024))
    for answer in (stated, streamed):
        assert answer.status_code == 413
        assert "larger than the server takes" in answer.json()["detail"]
    assert SEEN == []  # the app never saw them
    assert client.post("/gradio_api/queue/join", content=b"1", headers={"content-length": "nonsense"}).status_code in (
        400,
        413,
    )


def test_uploads_are_left_to_gradios_own_limit(client):
    assert client.post("/gradio_api/upload", content=b"x" * (web.MAX_BODY_BYTES * 4)).status_code == 200


def test_every_answer_has_the_security_headers(client):
    for answer in (
        client.get("/nowhere"),
        client.post("/gradio_api/queue/join", content=b"{}"),
        client.post("/gradio_api/queue/join", content=b"x" * (web.MAX_BODY_BYTES + 1)),
    ):
        for name, value in web.SECURITY_HEADERS.items():
            assert answer.headers[name] == value
    policy = web.SECURITY_HEADERS["content-security-policy"]
    assert "frame-ancestors 'self' https://huggingface.co" in policy  # a Space is framed by huggingface.co
    assert "img-src 'self' data: blob:;" in policy  # no image from another server, whatever a message holds


def test_the_page_is_sent_compressed_and_what_gradio_compresses_or_streams_is_left_alone(client):
    page = client.get("/?state=abc", headers={"accept-encoding": "gzip, deflate, br"})
    assert page.headers["content-encoding"] == "gzip" and page.text == PAGE  # (the client decompresses it)
    assert int(page.headers["content-length"]) < len(PAGE) / 20
    assert page.headers["content-security-policy"] == web.CONTENT_SECURITY_POLICY  # the guard's headers still
    assert "content-encoding" not in client.get("/", headers={"accept-encoding": "identity"}).headers
    script = client.get("/assets/index.js", headers={"accept-encoding": "gzip"})  # gradio's brotli does files
    stream = client.get("/gradio_api/queue/data", headers={"accept-encoding": "gzip"})
    for answer in (script, stream):
        assert "content-encoding" not in answer.headers and answer.text == PAGE


def test_gradios_scripts_are_compressed_once_and_kept_and_a_browser_may_keep_them_for_a_year(client):
    brotli = {"accept-encoding": "gzip, deflate, br, zstd"}
    first, again = (client.get("/assets/index.js", headers=brotli) for _ in range(2))
    for answer in (first, again):
        assert answer.status_code == 200 and answer.text == PAGE  # (the client decompresses it)
        assert answer.headers["content-encoding"] == "br" and int(answer.headers["content-length"]) < len(PAGE) / 20
        assert answer.headers["cache-control"] == "public, max-age=31536000, immutable"
        assert answer.headers["content-security-policy"] == web.CONTENT_SECURITY_POLICY
    assert SEEN == [-1]  # gradio served it once
    assert client.get("/assets/missing.js", headers=brotli).status_code == 404  # not kept: as gradio answers
    for other in ({"accept-encoding": "gzip"}, brotli | {"range": "bytes=0-9"}):  # no Brotli; a part of the file
        assert "cache-control" not in client.get("/assets/index.js", headers=other).headers
    assert SEEN == [-1, -1, -1]
    plotly = "/gradio_api/file=/srv/venv/site-packages/plotly/package_data/plotly.min.js"
    assert web.kept_for(plotly) == "public, max-age=86400"
    assert web.kept_for("/gradio_api/file=/tmp/an-upload.js") is None  # a file of a user's: never kept


@pytest.mark.parametrize(
    ("address", "script", "mends"),
    [
        ("/assets/statustracker-Ab1-2.js", TRACKER, (IDLE_TIMER,)),
        ("/assets/core-Cd3-4.js", CORE, (NODE_LOOKUP, ATTACHED_EVENTS)),
    ],
)
def test_gradios_scripts_are_sent_mended_compressed_or_not_and_others_as_they_are(client, address, script, mends):
    mended = script
    for mend in mends:
        mended = mended.replace(mend.before, mend.after)
    assert mended != script
    for encoding in ("gzip, deflate, br", "gzip", "identity"):
        answer = client.get(address, headers={"accept-encoding": encoding})
        assert answer.status_code == 200 and answer.text == mended, encoding
    plain = client.get(address, headers={"accept-encoding": "identity"})
    assert int(plain.headers["content-length"]) == len(mended.encode())
    assert client.get("/assets/index.js").text == PAGE
    assert client.get("/assets/statustracker-Missing.js").status_code == 404


def test_the_page_is_sent_with_its_language_script_first():
    from ui.browser_internals import PAGE_LANGUAGE_JS

    page = "<html><head><title>t</title></head><body>" + "x" * 5000 + "</body></html>"
    routes = [Route("/", lambda request: HTMLResponse(page), methods=["GET", "HEAD"])]
    client = TestClient(Starlette(routes=routes, middleware=web.middleware()))
    for encoding in ("gzip", "identity"):
        answer = client.get("/?lang=zh", headers={"accept-encoding": encoding})
        assert answer.text == page.replace("<head>", "<head>" + PAGE_LANGUAGE_JS), encoding
    assert client.head("/").status_code == 200


def test_the_app_launches_with_the_guard_the_compression_and_the_mends():
    middleware = [m.cls for m in app.LAUNCH_OPTIONS["app_kwargs"]["middleware"]]
    assert middleware == [web.Guard, web.Compressed, web.KeptCompressed, web.Mended]
