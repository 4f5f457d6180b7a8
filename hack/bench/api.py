"""The runner's side of the API server: JSON requests through `kubectl proxy` (plain HTTP on loopback,
the admin user), with retries, and watches that record every event with the time it arrived.
Standard library only; nothing here reads the environment."""
import json
import socket
import sys
import threading
import time
import urllib.error
import urllib.request


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_until(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def ns_path(ns, group, kind):
    return f"/api/v1/namespaces/{ns}/{kind}" if group == "" else f"/apis/{group}/namespaces/{ns}/{kind}"


class Api:
    """JSON over `kubectl proxy` (plain HTTP on loopback, the admin user)."""

    def __init__(self, port):
        self.base = f"http://127.0.0.1:{port}"

    def req(self, method, path, body=None, ctype="application/json"):
        data = json.dumps(body).encode() if body is not None else None
        r = urllib.request.Request(self.base + path, data=data, method=method, headers={"Content-Type": ctype})
        for attempt in range(20):
            try:
                with urllib.request.urlopen(r, timeout=60) as resp:
                    return json.loads(resp.read() or b"{}")
            except urllib.error.HTTPError as e:
                if e.code in (404, 409) and method == "DELETE":
                    return None
                if e.code in (429, 500, 503, 504) or (e.code == 409 and method != "POST"):
                    time.sleep(0.2 * (attempt + 1))
                    continue
                raise RuntimeError(f"{method} {path}: {e.code} {e.read()[:300]!r}") from None
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.2 * (attempt + 1))
        raise RuntimeError(f"{method} {path}: gave up")

    def get(self, path):
        return self.req("GET", path)

    def post(self, path, body):
        return self.req("POST", path, body)

    def patch(self, path, body):
        return self.req("PATCH", path, body, "application/merge-patch+json")

    def delete(self, path):
        return self.req("DELETE", path, {"propagationPolicy": "Background"})


def api_ok(api, path):
    try:
        api.get(path)
        return True
    except RuntimeError:
        return False


class Watch(threading.Thread):
    """Records every event of one resource in one namespace with the time this process received it;
    re-watches from the last resourceVersion when the server closes the stream. During bursts the API
    server closes this (Python, slow) watcher ("Forcing ... watcher close due to unresponsiveness"),
    and its resourceVersion may have left the watch cache by the time it comes back: the server then
    answers with an expired-RV ERROR event. Watching again from the same RV would fail forever and
    lose every later event, so the watcher takes a fresh RV from a list and counts the gap: the events
    in it are lost, and the latency samples with them."""

    def __init__(self, api, path, events):
        super().__init__(daemon=True)
        self.api, self.path, self.events = api, path, events
        self.rv = api.get(path)["metadata"]["resourceVersion"]
        self.stop = False
        self.gaps = 0

    def run(self):
        while not self.stop:
            url = f"{self.api.base}{self.path}?watch=1&allowWatchBookmarks=true&resourceVersion={self.rv}"
            try:
                with urllib.request.urlopen(url, timeout=3600) as resp:
                    for line in resp:
                        if self.stop:
                            return
                        ev = json.loads(line)
                        obj = ev["object"]
                        if ev["type"] == "ERROR":
                            if obj.get("code") == 410:
                                self.relist()
                            time.sleep(0.2)
                            break
                        self.rv = obj["metadata"].get("resourceVersion", self.rv)
                        if ev["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self.events.append((time.monotonic(), ev["type"], obj))
            except urllib.error.HTTPError as e:
                if e.code == 410:
                    self.relist()
                time.sleep(0.2)
            except Exception:  # a closed watch: go again from the last resourceVersion
                time.sleep(0.2)

    def relist(self):
        self.gaps += 1
        self.rv = self.api.get(self.path)["metadata"]["resourceVersion"]
