"""A tiny Hugging Face Hub look-alike on 127.0.0.1 for testing advisor.arch.hub against real HTTP.

It answers the endpoints huggingface_hub 2.x really calls (read in its source):
- GET  /api/models/{repo}[/revision/{rev}]  HfApi.model_info (id, sha, gated, siblings)
- HEAD /{repo}/resolve/{rev}/{file}         file_download.get_hf_file_metadata, for hf_hub_download and
                                            HfApi.file_exists (ETag, X-Repo-Commit, Content-Length;
                                            LFS: 302 + X-Linked-Etag/-Size + Location)
- GET  /{repo}/resolve/{rev}/{file}         file_download.http_get; HfApi.get_safetensors_metadata's
                                            ranged reads of each shard header (parse_safetensors_file_metadata)
- GET  /cdn/{sha256}                        where LFS redirects point; honours Range (206 + Content-Range)
Errors carry the X-Error-Code header that huggingface_hub.utils._http.hf_raise_for_status maps to its
error types (RepoNotFound, GatedRepo, RevisionNotFound, EntryNotFound).

`SilentServer` is the other kind of broken Hub: it accepts TCP connections and never sends a byte.
"""

from __future__ import annotations

import hashlib
import json
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

# Bytes per element of the safetensors dtypes used here (safetensors format spec, Dtype enum).
DTYPE_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F8_E4M3": 1, "U8": 1, "I32": 4}


def safetensors_bytes(
    tensors: dict[str, tuple[str, list[int]]], metadata: dict[str, str] | None = None
) -> bytes:
    """A real safetensors file: u64 little-endian header length, JSON header, zeroed tensor data."""
    header: dict[str, object] = {"__metadata__": metadata or {"format": "pt"}}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = DTYPE_BYTES[dtype]
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)  # the format pads the header to 8-byte alignment with spaces
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


def git_blob_sha1(data: bytes) -> str:
    """The ETag the Hub gives regular (non-LFS) files: git's blob object id."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


@dataclass
class FakeRepo:
    """One model repo at one commit."""

    files: dict[str, bytes]
    sha: str
    gated: bool = False
    allowed_tokens: frozenset[str] = frozenset()
    drop: bool = False  # every request about this repo: close the socket without answering
    fail_get: frozenset[str] = frozenset()  # HEAD fine, GET answers 500
    short_get: frozenset[str] = frozenset()  # HEAD announces the full size, GET sends half of it


@dataclass
class HubServer:
    """ThreadingHTTPServer on 127.0.0.1:<free port> serving `repos`; records every request line."""

    repos: dict[str, FakeRepo]
    requests: list[tuple[str, str, str]] = field(default_factory=list)  # (method, path, Range header)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _httpd: ThreadingHTTPServer | None = None
    _stopped: bool = False

    def start(self) -> HubServer:
        server = self

        class Handler(_Handler):
            hub = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # A short poll interval makes shutdown() return in ~50 ms instead of the default 0.5 s.
        threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def stop(self) -> None:
        """Shut the server and close its port (connections to it are then refused); a second call does nothing."""
        if self._httpd is not None and not self._stopped:
            self._stopped = True
            self._httpd.shutdown()
            self._httpd.server_close()

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def record(self, method: str, path: str, byte_range: str) -> None:
        with self._lock:
            self.requests.append((method, path, byte_range))

    def blob(self, digest: str) -> bytes | None:
        for repo in self.repos.values():
            for data in repo.files.values():
                if hashlib.sha256(data).hexdigest() == digest:
                    return data
        return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    hub: HubServer

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence stderr
        pass

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def _route(self, head: bool) -> None:
        path = urlsplit(self.path).path
        self.hub.record(self.command, path, self.headers.get("range", ""))
        parts = [unquote(p) for p in path.strip("/").split("/")]
        if parts[:2] == ["api", "models"] and len(parts) >= 4:
            self._model_info(f"{parts[2]}/{parts[3]}", parts[5] if len(parts) == 6 else None)
        elif len(parts) >= 5 and parts[2] == "resolve":
            self._resolve(f"{parts[0]}/{parts[1]}", parts[3], "/".join(parts[4:]), head)
        elif len(parts) == 2 and parts[0] == "cdn" and (data := self.hub.blob(parts[1])) is not None:
            self._send_bytes(data, head, {})
        else:
            self._error(404, "EntryNotFound", "not an endpoint of this test hub")

    def _repo(self, repo_id: str, revision: str | None, check_gate: bool) -> FakeRepo | None:
        """The repo, or None after answering with the Hub's error (or dropping the connection)."""
        repo = self.hub.repos.get(repo_id)
        if repo is not None and repo.drop:
            self.close_connection = True  # handler returns without a byte: the client sees a dropped socket
            return None
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
            return None
        token = self.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if check_gate and repo.gated and token not in repo.allowed_tokens:
            # The Hub answers 401 when no token is sent and 403 when the token has no access.
            self._error(403 if token else 401, "GatedRepo", f"Access to model {repo_id} is restricted.")
            return None
        if revision not in (None, "main", repo.sha):
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return repo

    def _model_info(self, repo_id: str, revision: str | None) -> None:
        repo = self._repo(repo_id, revision, check_gate=False)  # gated repos' metadata is public
        if repo is None:
            return
        doc = {
            "id": repo_id,
            "sha": repo.sha,
            "private": False,
            "gated": "manual" if repo.gated else False,
            "siblings": [{"rfilename": name} for name in sorted(repo.files)],
        }
        self._send_bytes(json.dumps(doc).encode(), False, {"Content-Type": "application/json"})

    def _resolve(self, repo_id: str, revision: str, filename: str, head: bool) -> None:
        repo = self._repo(repo_id, revision, check_gate=True)
        if repo is None:
            return
        data = repo.files.get(filename)
        commit = {"X-Repo-Commit": repo.sha}
        if data is None:
            self._error(404, "EntryNotFound", f"{filename} does not exist", commit)
        elif filename.endswith(".safetensors"):  # LFS file: the Hub redirects to its storage
            digest = hashlib.sha256(data).hexdigest()
            extra = {
                "X-Linked-Etag": f'"{digest}"',
                "X-Linked-Size": str(len(data)),
                "Location": f"/cdn/{digest}",
            }
            self._send(302, b"", head, {**commit, **extra})
        elif not head and filename in repo.fail_get:
            self._error(500, "", "Internal Error", commit)
        elif not head and filename in repo.short_get:
            self._send(200, data[: len(data) // 2], head, commit)
        else:
            self._send_bytes(data, head, {**commit, "ETag": f'"{git_blob_sha1(data)}"'})

    def _send_bytes(self, data: bytes, head: bool, headers: dict[str, str]) -> None:
        """200 with the whole body, or 206 with the slice a `Range: bytes=a-b` header asks for."""
        spec = self.headers.get("range", "")
        if not spec.startswith("bytes="):
            self._send(200, data, head, headers)
            return
        first, _, last = spec.removeprefix("bytes=").partition("-")
        start, end = int(first), min(int(last) if last else len(data) - 1, len(data) - 1)
        rng = {"Content-Range": f"bytes {start}-{end}/{len(data)}"}
        self._send(206, data[start : end + 1], head, {**headers, **rng})

    def _error(self, status: int, code: str, message: str, extra: dict[str, str] | None = None) -> None:
        headers = {"X-Error-Message": message, **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        body = json.dumps({"error": message}).encode()
        self._send(status, body, self.command == "HEAD", {**headers, "Content-Type": "application/json"})

    def _send(self, status: int, body: bytes, head: bool, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)


class SilentServer:
    """127.0.0.1:<free port> that accepts connections, reads nothing and never answers (a Hub that hangs).

    Bounded: its thread stops at stop() or after `lifetime_s`, whichever comes first, and closes every socket.
    """

    def __init__(self, lifetime_s: float = 60.0):
        self.lifetime_s = lifetime_s
        self.accepted = 0
        self._stop = threading.Event()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.05)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def start(self) -> SilentServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        held: list[socket.socket] = []
        deadline = time.monotonic() + self.lifetime_s
        try:
            while not self._stop.is_set() and time.monotonic() < deadline:
                try:
                    conn, _ = self._sock.accept()
                except TimeoutError:
                    continue
                held.append(conn)  # kept open, never read or written: the client waits for its timeout
                self.accepted += 1
        finally:
            for conn in held:
                conn.close()
            self._sock.close()
