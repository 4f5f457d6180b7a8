#!/usr/bin/env python3
"""Upstream kube-controller-manager vs kcm-rs on one local control plane: each workload runs twice,
once with a second upstream KCM running only the controllers under test, once with kcm-rs running them,
with the same client QPS/burst. See benches/README.md ("Side by side with upstream") for what each
figure means; hack/bench.sh brings up the control plane and calls this.

Only the standard library: the runner talks to the API server through `kubectl proxy`.
"""
import argparse
import collections
import datetime
import json
import os
import platform
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor

RUN = os.environ["KCM_RS_RUN_DIR"]
KUBE_BIN = os.environ["KCM_RS_KUBE_BIN"]
KCM_RS = os.environ.get("KCM_RS_BINARY", "target/release/kcm-rs")
TICKS = os.sysconf("SC_CLK_TCK")

# Sizes per scale: "full" is the workload list, "small" fits a 2-core pass at qps 20/30 in
# about 15 minutes, "tiny" is CI's check that the runner starts.
SCALES = {
    "full": dict(rs=(100, 50), scale=3000, deploy=(100, 20), jobs=(200, 10, 5), idle=20000),
    "small": dict(rs=(20, 25), scale=500, deploy=(20, 10), jobs=(40, 10, 5), idle=5000),
    "tiny": dict(rs=(2, 3), scale=10, deploy=(2, 2), jobs=(2, 2, 1), idle=50),
}
CONTROLLERS = {
    "rs": "replicaset-controller",
    "scale": "replicaset-controller",
    "deploy": "deployment-controller,replicaset-controller",
    "jobs": "job-controller",
    "idle": "replicaset-controller",
}


def log(msg):
    print(f"[bench] {msg}", file=sys.stderr, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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


def owner_uid(obj):
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("controller"):
            return r["uid"]
    return None


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


class Controller:
    """The process under test: a second upstream KCM with only the workload's controllers, or kcm-rs,
    both on the bench user's kubeconfig (the audit log counts that user's requests)."""

    def __init__(self, impl, controllers, qps, burst, tag):
        port = free_port()
        kubeconfig = f"{RUN}/kubeconfig-bench"
        if impl == "upstream":
            argv = [f"{KUBE_BIN}/kube-controller-manager", f"--kubeconfig={kubeconfig}", "--leader-elect=false",
                    "--bind-address=127.0.0.1", f"--secure-port={port}",
                    "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                    f"--controllers={controllers}", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}", "--v=1"]
            self.health = f"https://127.0.0.1:{port}/healthz"
        else:
            argv = [KCM_RS, f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1",
                    f"--secure-port={port}", "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
                    f"--controllers={controllers}", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}", "--v=1"]
            self.health = f"https://127.0.0.1:{port}/healthz"
        self.log = open(f"{RUN}/logs/bench-{tag}-{impl}.log", "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_healthy()
        except BaseException:
            # A process that never turned healthy may still be running and reconciling: it must not
            # outlive its run and act on the next one's objects.
            self.stop()
            raise
        time.sleep(2)  # informers list and sync after /healthz answers
        self.cpu0 = self.cpu()

    def wait_healthy(self):
        import ssl
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"controller exited with {self.proc.returncode}; see {self.log.name}")
            try:
                with urllib.request.urlopen(self.health, timeout=2, context=ctx) as r:
                    if r.status == 200:
                        return
            except Exception:
                pass
            time.sleep(0.3)
        raise RuntimeError(f"controller not healthy; see {self.log.name}")

    def cpu(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS  # utime + stime

    def status_mib(self, field):
        """A memory line of /proc/PID/status (VmHWM: peak RSS, VmRSS: now) in MiB."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
        return None

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def audit_requests(t0, t1):
    """The bench user's requests received between two wall-clock times, from the audit log, counted
    by verb, resource (with its subresource) and answer code: a Counter, or None without an audit log.
    Each request once: a watch's ResponseStarted line is skipped, its ResponseComplete counted."""
    path = f"{RUN}/logs/audit.log"
    if not os.path.exists(path):
        return None
    counts = collections.Counter()
    with open(path) as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if ev.get("user", {}).get("username") != "bench" or ev.get("stage") == "ResponseStarted":
                continue
            ts = datetime.datetime.fromisoformat(ev["requestReceivedTimestamp"].replace("Z", "+00:00")).timestamp()
            if t0 <= ts <= t1:
                ref = ev.get("objectRef", {})
                resource = ref.get("resource") or ev.get("requestURI", "?").split("?")[0]
                if ref.get("subresource"):
                    resource += "/" + ref["subresource"]
                counts[(ev.get("verb", "?"), resource, ev.get("responseStatus", {}).get("code"))] += 1
    return counts


def request_figures(counts):
    """The table's request rows from audit_requests' breakdown. Event writes queue behind the
    controller's own requests at its token bucket and many are still queued when a busy run ends: how
    many made it into the window says when the process was stopped, not what it would send, so they
    are counted apart. Conflicts (409) are writes sent with a resourceVersion the object had already
    left behind, each one retried: kcm-rs plans one write per object per sync where upstream's later
    writes in a sync reuse a stale version (crates/deployment's docs)."""
    if counts is None:
        return dict(requests=None, event_writes=None, conflicts=None, by_kind=None)
    return dict(requests=sum(counts.values()),
                event_writes=sum(n for (verb, res, _), n in counts.items()
                                 if res == "events" and verb in ("create", "patch")),
                conflicts=sum(n for (_, _, code), n in counts.items() if code == 409),
                by_kind={f"{verb} {res} {code}": n for (verb, res, code), n in counts.items()})


def wait_until(what, check, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.5)
    raise RuntimeError(f"timed out after {timeout}s waiting for {what}")


def pod_template(app, extra_labels=None):
    labels = {"app": app, **(extra_labels or {})}
    return {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def ns_path(ns, group, kind):
    return f"/api/v1/namespaces/{ns}/{kind}" if group == "" else f"/apis/{group}/namespaces/{ns}/{kind}"


# --- workloads: each applies its objects, waits for them to settle, and returns (converge seconds,
# latencies in seconds) from the watch events it recorded.

def rs_workload(api, ns, n, pods, ev):
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.post(ns_path(ns, "apps/v1", "replicasets"), {
            "metadata": {"name": f"rs-{i}"},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": f"rs-{i}"}},
                     "template": pod_template(f"rs-{i}")}}), range(n)))
    wait_until("ReplicaSets ready", lambda: all_rs_ready(api, ns, pods, n), 1800)
    converge = time.monotonic() - t0
    # Reaction: delete one pod of each ReplicaSet; the controller answers with a replacement.
    mark = len(ev["pods"])
    pods_now = api.get(ns_path(ns, "", "pods"))["items"]
    victims = {}
    for p in pods_now:
        victims.setdefault(owner_uid(p), p["metadata"]["name"])
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda name: api.delete(f"{ns_path(ns, '', 'pods')}/{name}"), victims.values()))
    # Right after the deletions every ReplicaSet still reports all its pods ready, so readiness alone
    # would end the wait before any replacement exists (and the latency would be computed from events
    # that do not have the answers yet, which gave 0 samples at qps 20): first the victims must be gone
    # and every ReplicaSet must have its full count of pods that are not terminating.
    wait_until("replacements created", lambda: replaced(api, ns, victims, pods), 600)
    wait_until("replacements ready", lambda: all_rs_ready(api, ns, pods, n), 600)
    # A deleted pod first shows up as MODIFIED with a deletionTimestamp (graceful deletion), and both
    # controllers replace it from that moment, as they count a terminating pod as gone: the trigger is
    # the first event that carries it, not the DELETED that follows (which came after the replacement and
    # left this bench with 0-2 samples of 20).
    return converge, reaction(ev["pods"][mark:], trigger=terminating,
                              answer=lambda t, o: t == "ADDED", key=owner_uid)


def replaced(api, ns, victims, pods):
    items = api.get(ns_path(ns, "", "pods"))["items"]
    left = {p["metadata"]["name"] for p in items} & set(victims.values())
    live = collections.Counter(owner_uid(p) for p in items if not p["metadata"].get("deletionTimestamp"))
    return not left and all(live.get(owner, 0) == pods for owner in victims)


def terminating(event_type, obj):
    return event_type == "DELETED" or bool(obj["metadata"].get("deletionTimestamp"))


def all_rs_ready(api, ns, pods, n):
    items = api.get(ns_path(ns, "apps/v1", "replicasets"))["items"]
    return len(items) >= n and all((i.get("status") or {}).get("readyReplicas", 0) == pods
                                   and i["spec"]["replicas"] == pods for i in items)


def scale_workload(api, ns, size, ev):
    path = ns_path(ns, "apps/v1", "replicasets")
    api.post(path, {"metadata": {"name": "big"}, "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "big"}},
                                                         "template": pod_template("big")}})
    time.sleep(1)
    mark_rs, mark_pods = len(ev["rs"]), len(ev["pods"])
    t0 = time.monotonic()
    api.patch(f"{path}/big", {"spec": {"replicas": size}})
    wait_until("scaled up", lambda: (api.get(f"{path}/big").get("status") or {}).get("readyReplicas", 0) == size, 1800)
    up = time.monotonic() - t0
    t1 = time.monotonic()
    api.patch(f"{path}/big", {"spec": {"replicas": 0}})
    wait_until("scaled down", lambda: len(api.get(ns_path(ns, "", "pods"))["items"]) == 0, 1800)
    down = time.monotonic() - t1
    log(f"  scaled up in {up:.1f}s, down in {down:.1f}s")
    scale_events = ev["rs"][mark_rs:]
    pod_events = ev["pods"][mark_pods:]
    lat = []
    triggers = []
    last = 0
    for t, ty, o in scale_events:
        r = o["spec"]["replicas"]
        if ty == "MODIFIED" and r != last:
            triggers.append((t, r > last))
            last = r
    for t, up_ in triggers:
        answers = [pt for pt, pty, po in pod_events if pt >= t and
                   ((up_ and pty == "ADDED") or (not up_ and terminating(pty, po)))]
        if answers:
            lat.append(min(answers) - t)
    return up + down, lat


def deploy_workload(api, ns, n, pods, ev):
    path = ns_path(ns, "apps/v1", "deployments")
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.post(path, {
            "metadata": {"name": f"d-{i}"},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": f"d-{i}"}},
                     "template": pod_template(f"d-{i}")}}), range(n)))
    wait_until("Deployments available", lambda: all_deploy_done(api, ns, pods, n, 1), 1800)
    created = time.monotonic() - t0
    mark_d, mark_rs = len(ev["deploy"]), len(ev["rs"])
    t1 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.patch(f"{path}/d-{i}", {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx:2"}]}}}}), range(n)))
    wait_until("rollout complete", lambda: all_deploy_done(api, ns, pods, n, 2), 1800)
    rolled = time.monotonic() - t1
    triggers = {}
    for t, ty, o in ev["deploy"][mark_d:]:
        if ty == "MODIFIED" and o["metadata"].get("generation") == 2:
            triggers.setdefault(o["metadata"]["uid"], t)
    answers = {}
    for t, ty, o in ev["rs"][mark_rs:]:
        if ty == "ADDED":
            answers.setdefault(owner_uid(o), t)
    lat = [answers[u] - t for u, t in triggers.items() if u in answers]
    return created + rolled, lat


def all_deploy_done(api, ns, pods, n, generation):
    items = api.get(ns_path(ns, "apps/v1", "deployments"))["items"]
    if len(items) < n:
        return False
    for d in items:
        s = d.get("status") or {}
        if (s.get("observedGeneration") != generation or s.get("updatedReplicas") != pods
                or s.get("availableReplicas") != pods or s.get("replicas") != pods):
            return False
    return True


def jobs_workload(api, ns, n, completions, parallelism, ev):
    path = ns_path(ns, "batch/v1", "jobs")
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.post(path, {
            "metadata": {"name": f"j-{i}"},
            "spec": {"completions": completions, "parallelism": parallelism,
                     "template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}), range(n)))

    def done():
        items = api.get(path)["items"]
        return len(items) == n and all((j.get("status") or {}).get("succeeded", 0) == completions
                                       and (j.get("status") or {}).get("completionTime") for j in items)
    wait_until("Jobs complete", done, 1800)
    converge = time.monotonic() - t0
    # Reaction: a pod of a Job reported Succeeded -> the Job controller's next write for that Job (a
    # new pod or a status update).
    succeeded = {}
    for t, ty, o in ev["pods"]:
        if ty == "MODIFIED" and (o.get("status") or {}).get("phase") == "Succeeded":
            succeeded.setdefault(o["metadata"]["uid"], (t, owner_uid(o)))
    writes = {}
    for t, ty, o in ev["pods"]:
        if ty == "ADDED":
            writes.setdefault(owner_uid(o), []).append(t)
    for t, ty, o in ev["jobs"]:
        if ty == "MODIFIED":
            writes.setdefault(o["metadata"]["uid"], []).append(t)
    lat = []
    for t, job in succeeded.values():
        later = [w for w in writes.get(job, []) if w >= t]
        if later:
            lat.append(min(later) - t)
    return converge, lat


def reaction(events, trigger, answer, key):
    lat, pending = [], {}
    for t, ty, o in events:
        k = key(o)
        if trigger(ty, o):
            pending.setdefault(k, t)
        elif answer(ty, o) and k in pending:
            lat.append(t - pending.pop(k))
    return lat


def idle_pods(api, ns, count):
    """Bare pods nobody owns (they match no selector): the cache every controller holds anyway. Returns
    once no pod has changed for QUIET_S seconds (every pod the nodes have room for Running, the rest
    marked unschedulable once by the scheduler), so that the process measured over them lists a still
    cache instead of receiving the scheduler's and KWOK's updates of pods created a moment ago."""
    changes = []
    watch = Watch(api, ns_path(ns, "", "pods"), changes)
    watch.start()

    def make(i):
        api.post(ns_path(ns, "", "pods"), {"metadata": {"name": f"idle-{i}", "labels": {"app": "idle"}},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    try:
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(make, range(count)))
        wait_until("idle pods still", lambda: changes and time.monotonic() - changes[-1][0] > QUIET_S, 900)
    finally:
        watch.stop = True


# How long the idle pods must go unchanged before the idle workload starts its controller.
QUIET_S = 5


def run_one(api, workload, impl, size, qps, burst):
    ns = f"bench-{workload}-{impl}-{int(time.time())}"
    api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    watches = []
    # Whatever fails (the controller not starting, a workload timing out), the runner's watches stop
    # and the namespace goes, so that the next run starts on a clean cluster.
    try:
        wait_until("default ServiceAccount", lambda: api_ok(api, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60)
        if workload == "idle":
            idle_pods(api, ns, size)
        ev = {"pods": [], "rs": [], "deploy": [], "jobs": []}
        watches = [Watch(api, ns_path(ns, "", "pods"), ev["pods"]),
                   Watch(api, ns_path(ns, "apps/v1", "replicasets"), ev["rs"]),
                   Watch(api, ns_path(ns, "apps/v1", "deployments"), ev["deploy"]),
                   Watch(api, ns_path(ns, "batch/v1", "jobs"), ev["jobs"])]
        for w in watches:
            w.start()
        wall0 = time.time()
        ctl = Controller(impl, CONTROLLERS[workload], qps, burst, workload)
        try:
            if workload == "rs":
                converge, lat = rs_workload(api, ns, *size, ev)
            elif workload == "scale":
                converge, lat = scale_workload(api, ns, size, ev)
            elif workload == "deploy":
                converge, lat = deploy_workload(api, ns, *size, ev)
            elif workload == "jobs":
                converge, lat = jobs_workload(api, ns, *size, ev)
            else:
                time.sleep(10)
                converge, lat = None, []
            time.sleep(2)
            # An idle cache's work is its first list, done before the window the other workloads measure
            # opens: for it, the CPU is counted from the process's start.
            cpu = ctl.cpu() - (0 if workload == "idle" else ctl.cpu0)
            result = dict(converge=converge, p50=percentile(lat, 50), p99=percentile(lat, 99), samples=len(lat),
                          watch_gaps=sum(w.gaps for w in watches),
                          cpu=cpu, rss=ctl.status_mib("VmHWM"), rss_now=ctl.status_mib("VmRSS"))
        finally:
            ctl.stop()
        time.sleep(3)  # the audit log is written in batches
        result.update(request_figures(audit_requests(wall0, time.time())))
    finally:
        for w in watches:
            w.stop = True
        api.delete(f"/api/v1/namespaces/{ns}")
        wait_until(f"namespace {ns} gone", lambda: not api_ok(api, f"/api/v1/namespaces/{ns}"), 1800)
    return result


def api_ok(api, path):
    try:
        api.get(path)
        return True
    except RuntimeError:
        return False


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}{unit}" if v < 1 else f"{v:.1f}{unit}"
    return f"{v}{unit}"


def ratio(a, b):
    return f"{b / a:.2f}" if a and b is not None else "–"


def describe(workload, size):
    return {
        "rs": lambda: f"{size[0]} ReplicaSets x {size[1]} pods, then one pod of each deleted",
        "scale": lambda: f"1 ReplicaSet scaled 0 -> {size} -> 0",
        "deploy": lambda: f"{size[0]} Deployments x {size[1]} pods, then a rolling image update of all",
        "jobs": lambda: f"{size[0]} Jobs x {size[1]} completions, parallelism {size[2]}",
        "idle": lambda: f"idle: {size} cached pods (memory only)",
    }[workload]()


def table(workload, size, qps, burst, up, rs):
    latency = {"rs": "pod deleted -> replacement created", "scale": "spec.replicas changed -> first pod created/deleted",
               "deploy": "template changed -> new ReplicaSet created", "jobs": "pod Succeeded -> Job's next write",
               "idle": "–"}[workload]
    rows = [
        ("converge (s)", up["converge"], rs["converge"]),
        (f"event -> action p50 (s) [{latency}]", up["p50"], rs["p50"]),
        ("event -> action p99 (s)", up["p99"], rs["p99"]),
        ("CPU user+sys (s)", up["cpu"], rs["cpu"]),
        ("peak RSS (MiB)", up["rss"], rs["rss"]),
        ("API requests", up["requests"], rs["requests"]),
        ("of which event writes (still queued at the end of a busy run)", up["event_writes"], rs["event_writes"]),
        ("of which conflicts (409, written from a stale resourceVersion)", up["conflicts"], rs["conflicts"]),
    ]
    out = [f"#### {describe(workload, size)} (qps {qps}, burst {burst})", "",
           "| | upstream KCM | kcm-rs | kcm-rs / upstream |", "| --- | --- | --- | --- |"]
    for name, a, b in rows:
        out.append(f"| {name} | {fmt(a)} | {fmt(b)} | {ratio(a, b)} |")
    out.append(f"| latency samples | {up['samples']} | {rs['samples']} | |")
    out.append(f"| the runner's watch gaps (events lost, samples with them) | {up['watch_gaps']} | {rs['watch_gaps']} | |")
    out += requests_by_kind(up["by_kind"], rs["by_kind"])
    return "\n".join(out) + "\n"


def requests_by_kind(up, rs):
    """Every request of both runs by verb, resource and answer, folded under the table: where the
    totals differ, this says which requests make the difference."""
    if up is None or rs is None:
        return []
    out = ["", "<details><summary>API requests by verb, resource and answer code</summary>", "",
           "| request | upstream KCM | kcm-rs |", "| --- | --- | --- |"]
    for kind in sorted(set(up) | set(rs)):
        out.append(f"| {kind} | {up.get(kind, 0)} | {rs.get(kind, 0)} |")
    return out + ["", "</details>"]


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", choices=SCALES, default="small")
    ap.add_argument("--qps", default="20/30,100/200", help="comma-separated qps/burst pairs")
    ap.add_argument("--workloads", default="rs,scale,deploy,jobs,idle")
    ap.add_argument("--append", help="append the tables to this markdown file")
    args = ap.parse_args()
    port = free_port()
    proxy = subprocess.Popen([f"{KUBE_BIN}/kubectl", f"--kubeconfig={RUN}/kubeconfig", "proxy", f"--port={port}"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = Api(port)
    wait_until("kubectl proxy", lambda: api_ok(api, "/api/v1/namespaces/default"), 30)
    sizes = SCALES[args.scale]
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    profile = os.environ.get("KCM_RS_PROFILE")
    versions = f"kcm-rs {commit} ({f'profile {profile}' if profile else KCM_RS})"
    kube_version = subprocess.run([f"{KUBE_BIN}/kube-controller-manager", "--version"], capture_output=True,
                                  text=True).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    header = (f"\n### {datetime.date.today()}, scale `{args.scale}`: {kube_version} vs {versions}; "
              f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}\n\n")
    out = [header]
    try:
        for pair in args.qps.split(","):
            qps, burst = pair.split("/")
            for workload in args.workloads.split(","):
                size = sizes[workload]
                results = {}
                for impl in ("upstream", "kcm-rs"):
                    log(f"{workload} ({describe(workload, size)}), qps {qps}/{burst}: {impl}")
                    t = time.monotonic()
                    results[impl] = run_one(api, workload, impl, size, qps, burst)
                    figures = {k: v for k, v in results[impl].items() if k != "by_kind"}
                    log(f"  {impl}: {figures} in {time.monotonic() - t:.0f}s")
                text = table(workload, size, qps, burst, results["upstream"], results["kcm-rs"])
                print(text, flush=True)
                out.append(text + "\n")
    finally:
        proxy.terminate()
    if args.append:
        with open(args.append, "a") as f:
            f.write("".join(out))


if __name__ == "__main__":
    main()
