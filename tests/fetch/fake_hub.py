#!/usr/bin/env python3
"""A local stand-in for the Hugging Face hub, for k3-fetch-verify's tests.

Serves one repository from a directory on 127.0.0.1 with the hub's API shapes:
  GET /api/models/{repo}/revision/{rev}          -> {"id", "sha", "siblings"}
  GET /api/models/{repo}/tree/{rev}?recursive=.. -> file list with size, git oid and
                                                    lfs {oid: sha256, size}, paged
                                                    with Link: <...>; rel="next"
  GET /{repo}/resolve/{rev}/{path}               -> LFS files: 302 to /cdn/{sha256};
                                                    small files: the content
  GET /cdn/{sha256}                              -> the content (no token needed)
Content is served with Range support (206 + Content-Range, 416). API and
resolve requests need "Authorization: Bearer <token>" when --token is given.

Faults (--faults FILE, a JSON list) are consumed in order of arrival, each
`times` times (-1: always):
  {"path": P, "kind": "status", "status": 500, "retry_after": "0", "where": "resolve"|"cdn"|"api"}
  {"path": P, "kind": "drop", "after": BYTES}        close the connection mid-body
  {"path": P, "kind": "stall", "after": BYTES, "seconds": S}
  {"path": P, "kind": "corrupt", "at": OFFSET}       flip one byte of the content
  {"path": P, "kind": "throttle", "rate": BYTES_PER_S}
  {"path": P, "kind": "ignore-range"}                answer 200 with the whole file
  {"path": P, "kind": "not-http"}                    answer bytes that are no HTTP reply, then close
  {"path": P, "kind": "short-length", "short": N}    a Content-Length N bytes short of the body sent
                                                     (the rest is read as the next reply on the connection)
  {"path": "tree", "kind": "link", "where": "link", "url": U}
                                                     a tree page's Link rel="next" is U
                                                     ("{self}" in U: the page's own URL)
  {"path": "tree", "kind": "duplicate", "where": "duplicate"}
                                                     a tree page lists its last file twice
  {"path": P, "kind": "redirect", "where": "resolve", "url": U}
                                                     resolving P answers 302 to U
GET /_control/reset?faults=FILE&commit=SHA replaces the faults and the commit
(both optional), so one server can serve several test steps.
Every request is logged as one line to --log:
  "<METHOD> <path> range=<Range or -> auth=<ok|bad|none> status=<code>"
"""
import argparse
import hashlib
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Repo:
    def __init__(self, root, lfs_min):
        self.files = {}
        for dirpath, _, names in os.walk(root):
            for n in names:
                full = os.path.join(dirpath, n)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, "rb") as f:
                    data = f.read()
                lfs = rel.endswith(".safetensors") or len(data) >= lfs_min
                git = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
                self.files[rel] = {
                    "data": data,
                    "lfs": lfs,
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "git": git,
                }
        self.by_sha = {v["sha256"]: k for k, v in self.files.items()}

    def tree_entries(self):
        entries, dirs = [], set()
        for path in sorted(self.files):
            parts = path.split("/")
            for i in range(1, len(parts)):
                d = "/".join(parts[:i])
                if d not in dirs:
                    dirs.add(d)
                    entries.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": d})
            f = self.files[path]
            e = {"type": "file", "oid": f["git"], "size": len(f["data"]), "path": path}
            if f["lfs"]:
                e["lfs"] = {"oid": f["sha256"], "size": len(f["data"]), "pointerSize": 134}
            entries.append(e)
        return entries


class State:
    def __init__(self, args):
        self.args = args
        self.repo = Repo(args.repo_dir, args.lfs_min)
        self.lock = threading.Lock()
        self.load_faults(args.faults)
        self.log = open(args.log, "a", buffering=1) if args.log else None

    def load_faults(self, path):
        faults = []
        if path:
            with open(path) as f:
                faults = json.load(f)
        with self.lock:
            self.faults = faults

    def take_fault(self, path, where):
        with self.lock:
            for f in self.faults:
                if f.get("path") != path:
                    continue
                kind = f.get("kind")
                fwhere = f.get("where", "resolve" if kind == "status" else "content")
                if fwhere != where:
                    continue
                times = f.get("times", 1)
                if times == 0:
                    continue
                if times > 0:
                    f["times"] = times - 1
                return f
        return None

    def write_log(self, line):
        if self.log:
            with self.lock:
                self.log.write(line + "\n")


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "fake-hub/1"

    def log_message(self, fmt, *args):  # quiet: the request log is ours
        pass

    def handle(self):
        try:
            super().handle()
        except (ConnectionResetError, BrokenPipeError):
            pass  # the client went away (killed, interrupted): expected in these tests

    @property
    def st(self):
        return self.server.state

    def auth(self):
        h = self.headers.get("Authorization")
        if h is None:
            return "none"
        return "ok" if self.st.args.token and h == "Bearer " + self.st.args.token else "bad"

    def log_req(self, status):
        rng = self.headers.get("Range") or "-"
        self.st.write_log("%s %s range=%s auth=%s status=%d" % (self.command, self.path, rng, self.auth(), status))

    def send_json(self, status, obj, extra=None):
        body = json.dumps(obj).encode()
        self.log_req(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def send_status_fault(self, f):
        extra = {}
        if "retry_after" in f:
            extra["Retry-After"] = str(f["retry_after"])
        self.send_json(f.get("status", 500), {"error": "injected fault"}, extra)

    def need_auth(self):
        a = self.auth()
        if self.st.args.token and a != "ok":
            self.send_json(401, {"error": "Invalid credentials in Authorization header"})
            return False
        if not self.st.args.token and a == "bad":
            self.send_json(401, {"error": "Invalid credentials in Authorization header"})
            return False
        return True

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        url = urllib.parse.urlsplit(self.path)
        path = urllib.parse.unquote(url.path)
        query = urllib.parse.parse_qs(url.query)
        repo = self.st.args.repo
        if path == "/_control/reset":
            # Lets a test reuse one server: new faults (or none) and commit.
            self.st.load_faults(query.get("faults", [""])[0])
            self.st.args.commit = query.get("commit", [DEFAULT_COMMIT])[0]
            return self.send_json(200, {"ok": True})
        api = "/api/models/" + repo + "/"
        if path.startswith(api):
            if not self.need_auth():
                return
            f = self.st.take_fault("api", "api")
            if f and f.get("kind") == "status":
                return self.send_status_fault(f)
            rest = path[len(api):]
            kind, _, rev = rest.partition("/")
            if rev not in ("main", self.st.args.commit):
                return self.send_json(404, {"error": "Revision Not Found"})
            if kind == "revision":
                return self.send_json(200, {
                    "id": repo, "sha": self.st.args.commit,
                    "siblings": [{"rfilename": p} for p in sorted(self.st.repo.files)]})
            if kind == "tree":
                entries = self.st.repo.tree_entries()
                if query.get("recursive", [""])[0] not in ("true", "True", "1"):
                    entries = [e for e in entries if "/" not in e["path"]]
                start = int(query.get("cursor", ["0"])[0])
                size = self.st.args.page_size
                page = entries[start:start + size]
                extra = {}
                if start + size < len(entries):
                    nxt = "http://%s:%d%s?recursive=true&cursor=%d" % (
                        self.server.server_address[0], self.server.server_address[1], url.path, start + size)
                    extra["Link"] = '<%s>; rel="next"' % nxt
                df = self.st.take_fault("tree", "duplicate")
                if df:
                    files = [e for e in page if e["type"] == "file"]
                    page = page + files[-1:]
                lf = self.st.take_fault("tree", "link")
                if lf:
                    me = "http://%s:%d%s?%s" % (self.server.server_address[0], self.server.server_address[1],
                                                url.path, url.query)
                    extra["Link"] = '<%s>; rel="next"' % lf["url"].replace("{self}", me)
                return self.send_json(200, page, extra)
            return self.send_json(404, {"error": "not found"})
        prefix = "/" + repo + "/resolve/"
        if path.startswith(prefix):
            if not self.need_auth():
                return
            rev, _, fpath = path[len(prefix):].partition("/")
            if rev not in ("main", self.st.args.commit) or fpath not in self.st.repo.files:
                return self.send_json(404, {"error": "Entry not found"})
            f = self.st.take_fault(fpath, "resolve")
            if f and f.get("kind") == "status":
                return self.send_status_fault(f)
            if f and f.get("kind") == "redirect":
                self.log_req(302)
                self.send_response(302)
                self.send_header("Location", f["url"])
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            info = self.st.repo.files[fpath]
            if info["lfs"]:
                loc = "http://%s:%d/cdn/%s" % (self.server.server_address[0], self.server.server_address[1],
                                               info["sha256"])
                self.log_req(302)
                self.send_response(302)
                self.send_header("Location", loc)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            return self.serve_content(fpath)
        if path.startswith("/cdn/"):
            sha = path[len("/cdn/"):]
            fpath = self.st.repo.by_sha.get(sha)
            if fpath is None:
                return self.send_json(404, {"error": "no such object"})
            f = self.st.take_fault(fpath, "cdn")
            if f and f.get("kind") == "status":
                return self.send_status_fault(f)
            return self.serve_content(fpath)
        return self.send_json(404, {"error": "not found"})

    def serve_content(self, fpath):
        data = self.st.repo.files[fpath]["data"]
        fault = self.st.take_fault(fpath, "content")
        kind = fault.get("kind") if fault else None
        if kind == "corrupt":
            at = fault.get("at", len(data) // 2)
            data = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
        start, end = 0, len(data) - 1
        status = 200
        rng = self.headers.get("Range")
        if rng and kind != "ignore-range":
            spec = rng.strip().removeprefix("bytes=")
            a, _, b = spec.partition("-")
            start = int(a)
            if b:
                end = min(int(b), len(data) - 1)
            if start >= len(data):
                self.log_req(416)
                self.send_response(416)
                self.send_header("Content-Range", "bytes */%d" % len(data))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            status = 206
        body = data[start:end + 1]
        if kind == "not-http":
            self.log_req(0)
            self.close_connection = True
            try:
                self.wfile.write(b"SSH-2.0-OpenSSH_9.2 not a web server\r\n")
                self.wfile.flush()
            except OSError:
                pass
            return
        self.log_req(status)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        declared = len(body) - min(fault.get("short", 100), len(body)) if kind == "short-length" else len(body)
        self.send_header("Content-Length", str(declared))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", '"%s"' % self.st.repo.files[fpath]["sha256"])
        if status == 206:
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, len(data)))
        self.end_headers()
        if self.command == "HEAD":
            return
        try:
            if kind in ("drop", "stall"):
                cut = min(fault.get("after", len(body) // 2), len(body))
                self.wfile.write(body[:cut])
                self.wfile.flush()
                if kind == "stall":
                    time.sleep(fault.get("seconds", 30))
                self.close_connection = True
                self.connection.shutdown(socket.SHUT_RDWR)
                return
            if kind == "throttle":
                rate = fault.get("rate", 100000)
                chunk = max(1, rate // 20)
                for i in range(0, len(body), chunk):
                    self.wfile.write(body[i:i + chunk])
                    self.wfile.flush()
                    time.sleep(0.05)
                return
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True


DEFAULT_COMMIT = "3f2a9c1e0b7d4a65e8f1c2b3a4d5e6f708192a3b"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repo-dir", required=True)
    ap.add_argument("--repo", default="moonshotai/Kimi-K3")
    ap.add_argument("--commit", default=DEFAULT_COMMIT)
    ap.add_argument("--token", default="")
    ap.add_argument("--faults")
    ap.add_argument("--log")
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--page-size", type=int, default=4)
    ap.add_argument("--lfs-min", type=int, default=10000)
    args = ap.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    tmp = args.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, args.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
