"""k3-serve's HTTP surface over raw sockets (tests/serve/k3_serve_http_test.sh).

Usage: python3 http_guard_checks.py PORT SECTION...
The server was started with --slots 1 --queue 1 --max-body-mb 0.01
--read-timeout 2 --allowed-hosts box.lan --cors-origin https://app.example.
Prints one "FAIL name: ..." line per failed check and "passes N" last.
"""

import json
import socket
import sys
import threading
import time

PORT = int(sys.argv[1])
HOST = f"127.0.0.1:{PORT}"
passes = 0


def check(name, expected, actual):
    global passes
    if expected == actual:
        passes += 1
    else:
        print(f"FAIL {name}: expected {expected!r} got {actual!r}")


def holds(name, cond, detail=""):
    check(name + (f" ({detail})" if detail else ""), True, bool(cond))


def connect(timeout=10):
    s = socket.create_connection(("127.0.0.1", PORT), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Reader:
    """Reads HTTP/1.1 responses (Content-Length or chunked) from one socket."""

    def __init__(self, sock):
        self.sock, self.buf = sock, b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line.decode("latin-1")

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def response(self):
        """(status, headers with lower-case names, body)."""
        status = int(self.line().split(" ")[1])
        headers = {}
        while True:
            line = self.line()
            if not line:
                break
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
        if status == 100:
            return self.response()
        body = b""
        if headers.get("transfer-encoding") == "chunked":
            while True:
                size = int(self.line().split(";")[0], 16)
                if size == 0:
                    self.line()
                    break
                body += self.exact(size)
                self.exact(2)
        else:
            body = self.exact(int(headers.get("content-length", "0")))
        return status, headers, body

    def closed_within(self, seconds):
        """True when the server closes the connection within `seconds` (reading what it still sends)."""
        self.sock.settimeout(seconds)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except (socket.timeout, ConnectionResetError):
            return False


def request(method, path, body=b"", headers=None, host=HOST):
    h = {"Host": host} if host is not None else {}
    if body and "Content-Type" not in (headers or {}):
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    if body and "Transfer-Encoding" not in h:
        h["Content-Length"] = str(len(body))
    head = f"{method} {path} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in h.items() if v is not None)
    return head.encode() + b"\r\n" + body


def exchange(raw, timeout=30):
    s = connect(timeout)
    try:
        s.sendall(raw)
        return Reader(s).response()
    finally:
        s.close()


def error_code(body):
    try:
        return json.loads(body)["error"]["code"]
    except Exception:
        return f"not an error body: {body[:200]!r}"


TOKENIZE = json.dumps({"prompt": "Hello there"}).encode()


def hosts():
    for host in [HOST, f"localhost:{PORT}", "box.lan", f"[::1]:{PORT}", f"LocalHost:{PORT}"]:
        check(f"Host {host}", 200, exchange(request("GET", "/health", host=host))[0])
    for host in [f"evil.example:{PORT}", "evil.example", f"127.0.0.1.nip.io:{PORT}", "10.1.2.3", "box.lan.evil"]:
        status, _, body = exchange(request("GET", "/v1/models", host=host))
        check(f"Host {host} refused", (403, "host_not_allowed"), (status, error_code(body)))
        check(f"Host {host} refused on the page", 403, exchange(request("GET", "/", host=host))[0])
        check(f"Host {host} refused on POST", 403, exchange(request("POST", "/tokenize", TOKENIZE, host=host))[0])
    check("no Host", 400, exchange(request("GET", "/health", host=None))[0])


def origins():
    ok = exchange(request("POST", "/tokenize", TOKENIZE, {"Origin": f"http://{HOST}"}))
    check("same origin", 200, ok[0])
    holds("same origin: no CORS header needed", "access-control-allow-origin" not in ok[1])
    for origin in ["https://evil.example", "null", f"http://127.0.0.1:{PORT + 1}", f"https://{HOST}",
                   "https://app.example.evil"]:
        status, headers, body = exchange(request("POST", "/tokenize", TOKENIZE, {"Origin": origin}))
        check(f"Origin {origin} refused", (403, "origin_not_allowed"), (status, error_code(body)))
        holds(f"Origin {origin}: no CORS header", "access-control-allow-origin" not in headers)
        check(f"Origin {origin} refused on GET", 403, exchange(request("GET", "/v1/models", b"", {"Origin": origin}))[0])
        pre = exchange(request("OPTIONS", "/v1/chat/completions", b"",
                               {"Origin": origin, "Access-Control-Request-Method": "POST",
                                "Access-Control-Request-Headers": "content-type"}))
        check(f"preflight from {origin} refused", 403, pre[0])
        holds(f"preflight from {origin}: no CORS header", "access-control-allow-origin" not in pre[1])
    status, headers, _ = exchange(request("POST", "/tokenize", TOKENIZE, {"Origin": "https://app.example"}))
    check("--cors-origin served", 200, status)
    check("--cors-origin echoed", "https://app.example", headers.get("access-control-allow-origin"))
    status, headers, _ = exchange(request("OPTIONS", "/v1/chat/completions", b"",
                                          {"Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                                           "Access-Control-Request-Headers": "authorization, content-type"}))
    check("preflight answered", 204, status)
    check("preflight origin", "https://app.example", headers.get("access-control-allow-origin"))
    holds("preflight methods", "POST" in headers.get("access-control-allow-methods", ""))
    holds("preflight headers", "Content-Type" in headers.get("access-control-allow-headers", "") and
          "Authorization" in headers.get("access-control-allow-headers", ""))


def content_types():
    for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
               "text/plain; application/json", None]:
        status, _, body = exchange(request("POST", "/tokenize", TOKENIZE, {"Content-Type": ct}))
        check(f"Content-Type {ct} refused", (415, "unsupported_media_type"), (status, error_code(body)))
    check("application/json with a charset", 200,
          exchange(request("POST", "/tokenize", TOKENIZE, {"Content-Type": "Application/JSON; charset=utf-8"}))[0])


def chunked(body, size):
    out = b""
    for i in range(0, len(body), size):
        part = body[i:i + size]
        out += f"{len(part):x}\r\n".encode() + part + b"\r\n"
    return out + b"0\r\n\r\n"


def body_limits():
    big = json.dumps({"prompt": "a" * 50000}).encode()
    status, _, body = exchange(request("POST", "/tokenize", chunked(big, 1000), {"Transfer-Encoding": "chunked"}))
    check("chunked body over the limit", (413, True), (status, b"over the limit of 10000 bytes" in body))
    # One chunk announced over the limit: refused before its data is sent.
    s = connect()
    s.sendall(request("POST", "/tokenize", b"", {"Transfer-Encoding": "chunked"}) + b"4e20\r\n")
    check("a chunk size over the limit is refused before its data", 413, Reader(s).response()[0])
    s.close()
    s = connect()
    s.sendall(request("POST", "/tokenize", b"", {"Content-Length": "20000"}))
    r = Reader(s)
    check("Content-Length over the limit refused before the body", 413, r.response()[0])
    holds("and the connection closes", r.closed_within(5))
    s.close()
    direct = exchange(request("POST", "/tokenize", TOKENIZE))
    status, _, body = exchange(request("POST", "/tokenize", chunked(TOKENIZE, 3), {"Transfer-Encoding": "chunked"}))
    check("chunked body under the limit", (200, direct[2]), (status, body))
    check("gzip body refused", 415,
          exchange(request("POST", "/tokenize", TOKENIZE, {"Content-Encoding": "gzip"}))[0])
    check("both framings refused", 400,
          exchange(request("POST", "/tokenize", chunked(TOKENIZE, 5),
                           {"Transfer-Encoding": "chunked", "Content-Length": str(len(TOKENIZE))}))[0])


def header_limits():
    many = {f"X-Many-{i}": "y" for i in range(200)}
    check("200 header lines", 431, exchange(request("GET", "/health", b"", many))[0])
    # A huge header line: refused while it arrives (no end of head needed).
    s = connect()
    s.sendall(f"GET /health HTTP/1.1\r\nHost: {HOST}\r\nX-Big: ".encode() + b"a" * 200000)
    check("a 200 kB header line", 431, Reader(s).response()[0])
    s.close()
    check("after them /health", 200, exchange(request("GET", "/health"))[0])


def pipelining():
    s = connect()
    s.sendall(request("GET", "/health") + request("POST", "/tokenize", TOKENIZE) + request("GET", "/v1/models"))
    r = Reader(s)
    answers = [r.response() for _ in range(3)]
    check("pipelined: three answers in order", [200, 200, 200], [a[0] for a in answers])
    holds("pipelined: first /health", b'"ok"' in answers[0][2])
    holds("pipelined: second /tokenize", b'"tokens"' in answers[1][2])
    holds("pipelined: third /v1/models", b'"data"' in answers[2][2])
    s.close()
    # After a "Connection: close" request: answered, then closed at once.
    s = connect()
    s.sendall(request("GET", "/health", b"", {"Connection": "close"}) + request("GET", "/v1/models"))
    r = Reader(s)
    check("close: first answered", 200, r.response()[0])
    t0 = time.time()
    holds("close: then the connection closes at once", r.closed_within(3), f"{time.time() - t0:.1f} s")
    s.close()


def slow_clients():
    stop = threading.Event()
    socks = []

    def dribble(s):
        try:
            s.sendall(f"GET /health HTTP/1.1\r\nHost: {HOST}\r\n".encode())
            while not stop.is_set():
                s.sendall(b"X-Slow: y\r\n")
                time.sleep(0.3)
        except OSError:
            pass

    # More slow connections than a peer may hold (--slots 1 --queue 1: 10).
    for _ in range(14):
        s = connect()
        socks.append(s)
        threading.Thread(target=dribble, args=(s,), daemon=True).start()
    time.sleep(0.5)
    t0 = time.time()
    status = exchange(request("GET", "/health"), timeout=5)[0]
    took = time.time() - t0
    check("/health beside 14 slow clients", 200, status)
    holds("/health answered at once", took < 1.5, f"{took:.2f} s")
    check("/tokenize beside them", 200, exchange(request("POST", "/tokenize", TOKENIZE), timeout=5)[0])
    stop.set()
    for s in socks:
        s.close()
    # A head that never ends: 408 once its deadline passes (--read-timeout 2).
    s = connect()
    stop.clear()
    threading.Thread(target=dribble, args=(s,), daemon=True).start()
    t0 = time.time()
    try:
        status = Reader(s).response()[0]
    except (EOFError, OSError) as e:
        status = repr(e)
    took = time.time() - t0
    check("slow head: 408", 408, status)
    holds("slow head: within its deadline", took < 5, f"{took:.1f} s")
    stop.set()
    s.close()
    # A body that stops halfway.
    s = connect()
    s.sendall(request("POST", "/tokenize", b"", {"Content-Length": "100"}) + b'{"prompt": ')
    t0 = time.time()
    check("slow body: 408", 408, Reader(s).response()[0])
    holds("slow body: within its deadline", time.time() - t0 < 5)
    s.close()


def metric(name):
    body = exchange(request("GET", "/metrics"))[2].decode()
    for line in body.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def wait_for(name, value, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if metric(name) == value:
            return True
        time.sleep(0.05)
    return False


def disconnect():
    long = json.dumps({"prompt": "Hello", "max_tokens": 4000}).encode()
    s = connect()
    s.sendall(request("POST", "/v1/completions", long))
    holds("non-streamed request holds the slot", wait_for("k3_slots_busy", 1, 30))
    s.close()
    t0 = time.time()
    freed = wait_for("k3_slots_busy", 0, 3)
    holds("client gone: its slot frees", freed, f"{time.time() - t0:.2f} s")


def tokenize():
    # Bodies whose text holds "messages" (quotes included) that are not chats.
    for body in [{"prompt": "messages"}, {"prompt": ["messages"]}, {"prompt": "x", "stop": ["messages"]}]:
        status, _, reply = exchange(request("POST", "/tokenize", json.dumps(body).encode()))
        check(f"/tokenize of {json.dumps(body)}", 200, status)
        holds(f"... tokenized as a prompt: {json.dumps(body)}", status == 200 and 0 < json.loads(reply)["count"] <= 2,
              reply[:200])
    status, _, body = exchange(request("POST", "/tokenize", json.dumps(
        {"messages": [{"role": "user", "content": "Hi"}]}).encode()))
    check("/tokenize of a chat", 200, status)
    holds("... rendered as a chat", json.loads(body)["count"] > 3)


def nul_in_errors():
    status, _, body = exchange(request("POST", "/v1/completions", b'{"model": "a\\u0000b", "prompt": "x"}'))
    check("model with a NUL", 404, status)
    message = json.loads(body)["error"]["message"]
    holds("the message keeps what follows the NUL", 'a\x00b" is not served here' in message, repr(message))
    status, _, body = exchange(request("POST", "/v1/chat/completions",
                                       b'{"messages": [{"role": "us\\u0000er", "content": "x"}]}'))
    check("role with a NUL", 400, status)
    holds("its message keeps what follows the NUL", "us\x00er" in json.loads(body)["error"]["message"],
          json.loads(body)["error"]["message"])


for section in sys.argv[2:]:
    globals()[section]()
print(f"passes {passes}")
