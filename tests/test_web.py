"""`ui.web.Guard`: request bodies over the limit refused before they are read whole, and the security headers."""

from __future__ import annotations

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.testclient import TestClient

import app
from ui import web

SEEN: list[int] = []


async def echo(request: Request) -> JSONResponse:
    body = await request.body()
    SEEN.append(len(body))
    return JSONResponse({"size": len(body)})


@pytest.fixture
def client():
    SEEN.clear()
    routes = [
        Route("/gradio_api/queue/join", echo, methods=["POST"]),
        Route("/gradio_api/upload", echo, methods=["POST"]),
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


def test_the_app_launches_with_the_guard():
    assert [m.cls for m in app.LAUNCH_OPTIONS["app_kwargs"]["middleware"]] == [web.Guard]
