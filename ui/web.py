"""What the app's web server adds to gradio's: a limit on request bodies, security headers on every answer, and the
page sent compressed.

* **Request bodies.** A request of the page (an event's values, a share link's state) is a few kilobytes. A body over
  `MAX_BODY_BYTES` (64 KB) is refused with 413 before it is read whole: by its `Content-Length`, or, sent in chunks,
  as soon as the chunks pass the limit. An upload (`/gradio_api/upload`) has its own limit, gradio's `max_file_size`
  (`ui.runtime.MAX_UPLOAD_BYTES`). A probe sent 50 MB sentences from new sessions: each stayed in the server's memory
  (356 MB → 3,288 MB), even when the text was refused as too long.
* **Security headers.** `SECURITY_HEADERS`: the page may be framed only by itself and by Hugging Face (a Space is
  shown inside huggingface.co), loads its scripts, styles, images and fonts from this server only (no image from
  elsewhere, whatever a message holds), the browser does not guess types, and a link followed elsewhere does not
  tell where it came from.

* **The page compressed.** Gradio compresses the files it serves by their name's ending (`.js`, `.css`, …), and so
  never the page itself (`/`, `/?state=…`), whose HTML holds the page's whole configuration: 741 KB, which went as it
  was to every student who opened it. `Compressed` gzips an answer to an address whose last part has no ending, when the
  browser takes gzip (every browser does): the page travels in about 117 KB. The event streams are left alone
  (starlette's `GZipMiddleware` does not touch `text/event-stream`), and so are answers too small to gain.

* **The page's scripts compressed once.** Gradio compresses each file it serves again for every request: its own
  scripts and styles (`/assets/…`) and plotly.js (3.5 MB), for every student whose browser has not got them yet.
  `KeptCompressed` compresses each of these once (Brotli, in a thread: the server's event loop never waits on it),
  keeps it, and sends it with `Cache-Control`: a year for gradio's assets, whose names change with their content
  (`immutable`), a day for plotly.js. Gradio's compression passes an answer already compressed as it is.

* **Gradio's scripts mended.** `Mended` makes the changes `ui.browser_internals.MENDS` lists to the scripts of
  gradio's they name, and to its page, before they are compressed: a loop of gradio's page that went on after its
  element was gone (an idle page cost 0.054 s of CPU a second; now 0.004), and the page's language from its first
  frame.

They are ASGI middleware (`Guard`, `Compressed`, `KeptCompressed`, `Mended`), given to gradio's FastAPI app through
`launch(app_kwargs=…)` (`app.py`).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio.to_thread
import brotli
from starlette.datastructures import Headers, MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.gzip import GZipMiddleware

from ui import browser_internals

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY_BYTES = 64 * 1024
UPLOAD_SUFFIX = "/upload"  # gradio's upload route, which `max_file_size` limits

# 'unsafe-inline' and 'unsafe-eval' for scripts: gradio's page starts with an inline script (its config), and it
# makes the page's own scripts (`js=`, `js_on_load`) into functions in the browser. Everything else is this server's.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self' 'unsafe-inline' 'unsafe-eval'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self' data:",
        "media-src 'self' data: blob:",
        "connect-src 'self'",
        "worker-src 'self' blob:",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'self' https://huggingface.co https://*.huggingface.co https://*.hf.space",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "referrer-policy": "strict-origin-when-cross-origin",
}
TOO_LARGE = json.dumps(
    {"detail": f"This request is larger than the server takes ({MAX_BODY_BYTES // 1024} KB)."}
).encode()


class Guard:
    """The ASGI middleware of the module's docstring."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_body_bytes: int = MAX_BODY_BYTES):
        self.app, self.max_body_bytes = app, max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        send = with_headers(send)
        if scope["path"].endswith(UPLOAD_SUFFIX):
            await self.app(scope, receive, send)  # gradio's `max_file_size` limits it as it arrives
            return
        headers = Headers(scope=scope)
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit() or int(length) > self.max_body_bytes:
                await too_large(send)
                return
            await self.app(scope, receive, send)
            return
        if "transfer-encoding" not in headers:
            await self.app(scope, receive, send)  # no body
            return
        # A body in chunks, of no stated length: read up to the limit, then hand it on as it came.
        messages, size = [], 0
        while True:
            message = await receive()
            messages.append(message)
            size += len(message.get("body", b""))
            if size > self.max_body_bytes:
                await too_large(send)
                return
            if message["type"] != "http.request" or not message.get("more_body", False):
                break

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        await self.app(scope, replay, send)


ENCODED_HEADERS = [(name.encode(), value.encode()) for name, value in SECURITY_HEADERS.items()]  # as ASGI sends them


def with_headers(send: Send) -> Send:
    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            kept = [
                (k, v) for k, v in message.get("headers", ()) if k.lower().decode("latin-1") not in SECURITY_HEADERS
            ]
            message["headers"] = kept + ENCODED_HEADERS
        await send(message)

    return sending


async def too_large(send: Send) -> None:
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(TOO_LARGE)).encode())]
    await send_answer(send, 413, headers, TOO_LARGE)


class Compressed:
    """The ASGI middleware of the module's docstring: starlette's `GZipMiddleware` for the addresses whose last part
    has no ending (`/`, `/config`), which gradio's own compression leaves out."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]):
        self.app = app
        self.gzipped = GZipMiddleware(app, minimum_size=1024, compresslevel=6)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        named = scope["type"] == "http" and "." in scope["path"].rsplit("/", 1)[-1]
        await (self.app if named or scope["type"] != "http" else self.gzipped)(scope, receive, send)


# The files `KeptCompressed` keeps, and for how long a browser may keep them: gradio's assets, named by a hash of
# their content; plotly.js, as `ui.plot` has the page load it.
KEPT = (
    (re.compile(r"^/assets/[\w.-]+\.(js|css|svg|json)$"), "public, max-age=31536000, immutable"),
    (re.compile(r"^/gradio_api/file=.*/plotly/package_data/plotly\.min\.js$"), "public, max-age=86400"),
)
KEPT_QUALITY = 6  # Brotli's: plotly.js in 1.4 MB, about a second once; gradio's own quality 4 for every request


class KeptCompressed:
    """The ASGI middleware of the module's docstring: a file of `KEPT`, asked for by a browser that takes Brotli (every
    browser does), is answered from what was kept, or is fetched from gradio whole, compressed, kept and sent."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]):
        self.app = app
        self.kept: dict[str, tuple[int, list[tuple[bytes, bytes]], bytes]] = {}
        self.making = asyncio.Lock()  # one file compressed at a time; a request for it meanwhile waits for it

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        policy = scope["type"] == "http" and scope["method"] == "GET" and kept_for(scope["path"])
        headers = Headers(scope=scope) if policy else None  # (read only for the files it keeps)
        if not policy or "range" in headers or "br" not in headers.get("accept-encoding", ""):
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        if path not in self.kept:
            async with self.making:
                if path not in self.kept:
                    status, raw, body = await whole_answer(self.app, scope, receive)
                    if status != 200 or any(name.lower() == b"content-encoding" for name, _ in raw):
                        await send_answer(send, status, raw, body)  # not a file to keep: as gradio sent it
                        return
                    compressed = await anyio.to_thread.run_sync(lambda: brotli.compress(body, quality=KEPT_QUALITY))
                    kept = MutableHeaders(raw=[(k, v) for k, v in raw if k.lower() != b"content-length"])
                    kept["content-encoding"], kept["content-length"] = "br", str(len(compressed))
                    kept["cache-control"] = policy
                    kept.add_vary_header("Accept-Encoding")
                    self.kept[path] = (status, kept.raw, compressed)
        await send_answer(send, *self.kept[path])


class Mended:
    """The ASGI middleware of the module's docstring: a script of gradio's (or its page) that a mend of
    `ui.browser_internals.MENDS` names is fetched from gradio whole and sent mended. Anything else passes as it is, and
    so does an answer that is not the whole file (a part of it, not modified since, compressed)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        asked = scope["type"] == "http" and scope["method"] == "GET"  # (a HEAD has no body to mend)
        if not asked or not any(mend.applies_to(path) for mend in browser_internals.MENDS):
            await self.app(scope, receive, send)
            return
        status, raw, body = await whole_answer(self.app, scope, receive)
        if status == 200 and not any(name.lower() in (b"content-encoding", b"content-range") for name, _ in raw):
            body = browser_internals.mended(path, body)
            headers = MutableHeaders(raw=raw)
            headers["content-length"] = str(len(body))
            raw = headers.raw
        await send_answer(send, status, raw, body)


def kept_for(path: str) -> str | None:
    """How long a browser may keep the file at `path`, if `KeptCompressed` keeps it."""
    return next((policy for pattern, policy in KEPT if pattern.match(path)), None)


async def whole_answer(app, scope: Scope, receive: Receive) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
    """`app`'s answer to the request, whole: its status, its headers and its body."""
    start: Message = {}
    body = bytearray()

    async def keep(message: Message) -> None:
        nonlocal start
        if message["type"] == "http.response.start":
            start = message
        elif message["type"] == "http.response.body":
            body.extend(message.get("body", b""))

    await app(scope, receive, keep)
    return start.get("status", 500), list(start.get("headers", [])), bytes(body)


async def send_answer(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


def middleware() -> list[Middleware]:
    """What `launch(app_kwargs={"middleware": …})` takes: the guard outermost, its headers on every answer."""
    return [Middleware(Guard), Middleware(Compressed), Middleware(KeptCompressed), Middleware(Mended)]
