"""What the REST client sends where: no redirected token posts, nothing from ~/.netrc or proxies.

Each test runs small local HTTP servers that record every request they receive; the effect is
judged there (the redirect target or the proxy saw nothing, no Basic auth reached the server).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from icecore.catalog.rest import RestCatalog, Secret
from icecore.errors import CatalogUnavailable

CLIENT_ID = "analyst"
SECRET = "s3cr3t-Zq9-redirected"


@dataclass
class Recorder:
    """A local HTTP server: every request's method, path, headers and body, and a reply."""

    url: str
    seen: list[dict[str, str]] = field(default_factory=list)


Reply = Callable[[BaseHTTPRequestHandler], tuple[int, dict[str, str], bytes]]


def _json_reply(body: object) -> Reply:
    def reply(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return 200, {"Content-Type": "application/json"}, json.dumps(body).encode()

    return reply


@pytest.fixture
def serve() -> Iterator[Callable[[Reply], Recorder]]:
    servers: list[ThreadingHTTPServer] = []

    def start(reply: Reply) -> Recorder:
        recorder = Recorder("")

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode("latin-1") if length else ""
                recorder.seen.append(
                    {"method": self.command, "path": self.path, "body": body, **self.headers}
                )
                status, headers, payload = reply(self)
                self.send_response(status)
                for key, value in {**headers, "Content-Length": str(len(payload))}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = do_HEAD = do_CONNECT = _any

            def log_message(self, *_: object) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
        recorder.url = f"http://127.0.0.1:{server.server_address[1]}"
        return recorder

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_token_post_is_never_redirected(serve: Callable[[Reply], Recorder], status: int) -> None:
    target = serve(_json_reply({"access_token": "stolen", "token_type": "bearer"}))

    def redirect(_: BaseHTTPRequestHandler) -> tuple[int, dict[str, str], bytes]:
        return status, {"Location": f"{target.url}/v1/oauth/tokens"}, b""

    origin = serve(redirect)
    with pytest.raises(CatalogUnavailable) as caught:
        RestCatalog(origin.url, credential=Secret(f"{CLIENT_ID}:{SECRET}", "the test"))
    message = str(caught.value)
    assert "redirect" in message
    assert SECRET not in message
    assert message.count(". ") == 0 and message.endswith(".")
    assert [seen["path"] for seen in origin.seen] == ["/v1/oauth/tokens"]
    assert target.seen == []


def test_netrc_and_proxy_variables_are_not_used(
    serve: Callable[[Reply], Recorder],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    catalog_server = serve(_json_reply({"defaults": {}, "overrides": {}, "namespaces": []}))
    proxy = serve(_json_reply({"defaults": {}, "overrides": {}}))
    (tmp_path / ".netrc").write_text(
        f"machine 127.0.0.1 login {CLIENT_ID} password {SECRET}\n", encoding="utf-8"
    )
    (tmp_path / ".netrc").chmod(0o600)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NETRC", str(tmp_path / ".netrc"))
    for var in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(var, proxy.url)

    catalog = RestCatalog(catalog_server.url)
    catalog.list_namespaces()

    assert proxy.seen == []
    assert catalog_server.seen, "the catalog server itself was never called"
    for seen in catalog_server.seen:
        assert "Authorization" not in seen
