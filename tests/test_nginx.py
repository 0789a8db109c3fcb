"""`deploy/nginx.conf` as it runs: nginx in front of two stand-in app processes, its limits per address and on
bodies (docs/deployment.md, "What nginx adds"). The stand-ins answer 200 to everything, so that every other answer
is nginx's own."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)

if NGINX is None:
    if os.environ.get("CI"):
        raise RuntimeError("nginx is missing: .ci/run installs Debian's nginx-light package")
    pytest.skip("Debian's nginx is not installed", allow_module_level=True)


class StandIn(BaseHTTPRequestHandler):
    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        self.send_response(200)
        self.send_header("content-length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    do_GET = do_POST = _answer

    def log_message(self, *args) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def front():
    # nginx's workers (user nobody, where nginx runs as root) write large bodies under the prefix: a folder they can
    # reach, not pytest's own (readable by its owner only)
    folder = tempfile.TemporaryDirectory(prefix="explorer-nginx-")
    prefix = Path(folder.name)
    prefix.chmod(0o755)
    apps = [ThreadingHTTPServer(("127.0.0.1", 0), StandIn) for _ in range(2)]
    for server in apps:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    port = free_port()
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    conf = conf.replace("listen 8080;", f"listen 127.0.0.1:{port};")
    for default, server in zip(("127.0.0.1:7861", "127.0.0.1:7862"), apps, strict=True):
        assert default in conf
        conf = conf.replace(default, f"127.0.0.1:{server.server_address[1]}")
    (prefix / "nginx.conf").write_text(conf)
    nginx = subprocess.Popen(
        [NGINX, "-p", str(prefix), "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    url = f"http://127.0.0.1:{port}"
    for _ in range(100):
        try:
            httpx.get(url + "/", timeout=1)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    yield url
    nginx.terminate()
    nginx.wait(timeout=10)
    for server in apps:
        server.shutdown()
    folder.cleanup()


def flood(url: str, limit: int) -> tuple[list[int], float]:
    """POST to `url` one request after another until nginx refuses one, or `limit` of them: the answers' statuses,
    and the seconds they took (the rate lets more through the longer a flood lasts)."""
    answers, started = [], time.monotonic()
    with httpx.Client(timeout=10) as client:
        while len(answers) < limit and 429 not in answers:
            answers.append(client.post(url, content=b"{}").status_code)
    return answers, time.monotonic() - started


def zone(name: str) -> tuple[int, float]:
    """The burst and the rate per second of a `limit_req` zone of deploy/nginx.conf."""
    conf = (ROOT / "deploy" / "nginx.conf").read_text()
    burst = int(re.search(rf"limit_req zone={name} burst=(\d+)", conf).group(1))
    rate = float(re.search(rf"zone={name}:\w+ rate=(\d+)r/s", conf).group(1))
    return burst, rate


@pytest.mark.parametrize(
    "name, path",
    [
        ("explorer_events", "/gradio_api/queue/join"),  # a class of 60 pressing Step at once passes
        ("explorer_api", "/gradio_api/call/translate"),  # the public API has a smaller budget
    ],
)
def test_a_flood_from_one_address_is_let_through_up_to_its_burst_then_turned_away_with_429(front, name, path):
    burst, rate = zone(name)
    answers, seconds = flood(front + path, burst + 1000)
    assert answers[-1] == 429 and set(answers[:-1]) == {200}
    assert burst <= len(answers) - 1 <= burst + rate * seconds + 1  # the burst, and what the rate refilled meanwhile


def test_bodies_over_the_limits_are_refused_at_the_door(front):
    with httpx.Client(timeout=30) as client:
        assert client.post(front + "/gradio_api/queue/join", content=b"x" * 100_000).status_code == 413
        assert client.post(front + "/gradio_api/upload", content=b"x" * 1_000_000).status_code == 200
        assert client.post(front + "/gradio_api/upload", content=b"x" * 18_000_000).status_code == 413


def test_a_browser_is_kept_on_one_process_by_its_cookie(front):
    answer = httpx.get(front + "/", timeout=10)
    assert answer.status_code == 200
    assert re.match(r"explorer_route=\w+; Path=/; HttpOnly", answer.headers["set-cookie"])
