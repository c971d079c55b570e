"""A fault-injecting HTTP proxy for S3 tests: forwards to moto, fails some requests.

Every ``every``-th request (counted over all requests, 1-based) is answered by the proxy
itself with an S3-style error instead of being forwarded, alternating ``503 SlowDown`` and
``500 InternalError``, at most ``max_faults`` times. Clients reach it as an ordinary S3
endpoint (``AWS_ENDPOINT_URL``), so the retries under test are the real client's.
``GetCounter`` is the same proxy without faults, counting GETs; ``Forbidding`` and
``Throttling`` answer every request 403 or 503 SlowDown. ``GcsAnswering`` stands in for the GCS
JSON API answering every request 403 or 429.
"""

from __future__ import annotations

import http.client
import http.server
import json
import threading
import urllib.parse

# Hop-by-hop headers (RFC 9110 7.6.1) and ones this proxy recomputes.
_DROP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding",
         "upgrade", "expect", "content-length", "server", "date"}
FAULTS = (
    (503, "SlowDown", "Please reduce your request rate."),
    (500, "InternalError", "We encountered an internal error. Please try again."),
)


class FaultProxy:
    def __init__(self, upstream: str, *, every: int, max_faults: int):
        if every < 2:
            raise ValueError("every must be >= 2, or a retried request could fail forever")
        parsed = urllib.parse.urlsplit(upstream)
        self.upstream = (parsed.hostname, parsed.port)
        self.every = every
        self.max_faults = max_faults
        self.requests = 0
        self.faults: list[tuple[str, str, int]] = []  # (method, path, status)
        self._lock = threading.Lock()
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.proxy = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FaultProxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)

    def next_fault(self, method: str, path: str):
        with self._lock:
            self.requests += 1
            if self.requests % self.every or len(self.faults) >= self.max_faults:
                return None
            fault = FAULTS[len(self.faults) % len(FAULTS)]
            self.faults.append((method, path, fault[0]))
            return fault


class Recorder(FaultProxy):
    """Forwards every request, recording (method, path with query)."""

    def __init__(self, upstream: str):
        super().__init__(upstream, every=2, max_faults=0)
        self.seen: list[tuple[str, str]] = []

    def next_fault(self, method: str, path: str):
        self.seen.append((method, path))  # and no fault: None


class Forbidding(FaultProxy):
    """Answers every request 403, forwarding nothing: ``AccessDenied`` as S3 answers
    credentials that a bucket's policy (or the account's IAM) does not allow, or ``code`` (e.g.
    ``InvalidAccessKeyId``: credentials it does not know)."""

    def __init__(self, upstream: str, *, code: str = "AccessDenied",
                 message: str = "Access Denied"):
        super().__init__(upstream, every=2, max_faults=0)
        self.code, self.message = code, message

    def next_fault(self, method: str, path: str):
        with self._lock:
            self.faults.append((method, path, 403))
        return 403, self.code, self.message


class Throttling(FaultProxy):
    """Answers every request ``503 SlowDown``, forwarding nothing: S3 throttling that outlasts
    the client's own retries."""

    def __init__(self, upstream: str):
        super().__init__(upstream, every=2, max_faults=0)

    def next_fault(self, method: str, path: str):
        with self._lock:
            self.faults.append((method, path, 503))
        return FAULTS[0]


_GCS_MESSAGES = {403: "caller does not have storage.objects.create access",
                 429: "The rate of change requests to the object is too high"}


class GcsAnswering:
    """A GCS JSON API endpoint (``STORAGE_EMULATOR_HOST``) that answers every request with
    ``status`` and a GCS-style JSON error: 403 as a bucket does to an account without access,
    429 as GCS does past a request-rate limit. ``requests`` counts what it answered."""

    def __init__(self, status: int):
        self.status, self.message = status, _GCS_MESSAGES[status]
        self.requests = 0
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _GcsHandler)
        self._server.daemon_threads = True
        self._server.stub = self
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "GcsAnswering":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()


class _GcsHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):  # quiet
        pass

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        stub: GcsAnswering = self.server.stub
        stub.requests += 1
        reason = {403: "forbidden", 429: "rateLimitExceeded"}[stub.status]
        body = json.dumps({"error": {"code": stub.status, "message": stub.message,
                                     "errors": [{"reason": reason, "message": stub.message}]}})
        self.send_response(stub.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _answer


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, and 100-continue handled for us

    def log_message(self, *args):  # quiet
        pass

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = self._body()
        proxy: FaultProxy = self.server.proxy
        fault = proxy.next_fault(self.command, self.path)
        if fault is not None:
            status, code, message = fault
            payload = (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
                       f"<Message>{message}</Message><RequestId>fault-proxy</RequestId></Error>"
                       ).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/xml")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _DROP}
        headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(*proxy.upstream, timeout=120)
        try:
            conn.request(self.command, self.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read()
            self.send_response(response.status, response.reason)
            for name, value in response.getheaders():
                if name.lower() not in _DROP:
                    self.send_header(name, value)
            if self.command == "HEAD":
                length = response.getheader("Content-Length")
                if length is not None:
                    self.send_header("Content-Length", length)
            else:
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)
        finally:
            conn.close()

    do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _handle


class GetCounter(FaultProxy):
    """Forwards every request (never a fault), recording the path of each GET whose path
    holds ``marker``: a test's, or a bench's, count of ranged reads."""

    def __init__(self, upstream: str, *, marker: str):
        super().__init__(upstream, every=2, max_faults=0)
        self.marker = marker
        self.gets: list[str] = []

    def next_fault(self, method: str, path: str):  # never a fault: None
        if method == "GET" and self.marker in path:
            with self._lock:
                self.gets.append(path)
