"""One measured run: a workload in a namespace of its own under one process, a second upstream KCM with
only the workload's controllers or kcm-rs, with that process's CPU and peak RSS from /proc and its
requests from the API server's audit log."""
import collections
import datetime
import json
import os
import signal
import subprocess
import threading
import time
import urllib.request
from dataclasses import dataclass

import profiles
from api import Watch, api_ok, free_port, ns_path, wait_until
from report import percentile, request_figures

TICKS = os.sysconf("SC_CLK_TCK")
# How often the process's CPU and RSS are sampled for the charts (plots.py).
SAMPLE_PERIOD = 0.5


@dataclass(frozen=True)
class Pauses:
    """The fixed waits around a measured run, in seconds."""
    settle: float  # after /healthz answers: the informers list and sync before the CPU reading starts
    tail: float  # after the workload: the CPU of its last reactions is counted
    audit: float  # after the process stops: the API server writes its audit log in batches


MEASURED = Pauses(settle=2, tail=2, audit=3)
# The `tiny` scale is make test's smoke run: it checks that the runner works and no one reads its
# figures, so its runs, whose work takes a second or two, need not wait as long as a measured one.
SMOKE = Pauses(settle=0.5, tail=0.5, audit=1)


@dataclass(frozen=True)
class Cluster:
    """Where the control plane hack/bench.sh started lives, and which kcm-rs to measure."""
    run_dir: str  # KCM_RS_RUN_DIR: kubeconfigs, logs (the audit log among them)
    kube_bin: str  # KCM_RS_KUBE_BIN: kube-controller-manager and kubectl
    kcm_rs: str  # KCM_RS_BINARY
    profile: str  # KCM_RS_PROFILE, "" when unset
    api_port: int  # API_PORT (cluster.env): whose connections count as the API server's

    @staticmethod
    def from_env():
        return Cluster(run_dir=os.environ["KCM_RS_RUN_DIR"], kube_bin=os.environ["KCM_RS_KUBE_BIN"],
                       kcm_rs=os.environ.get("KCM_RS_BINARY", "target/release/kcm-rs"),
                       profile=os.environ.get("KCM_RS_PROFILE") or "", api_port=int(os.environ.get("API_PORT", "0")))


class Controller:
    """The process under test: a second upstream KCM with only the workload's controllers, or kcm-rs,
    both on the bench user's kubeconfig (the audit log counts that user's requests)."""

    def __init__(self, cluster, impl, controllers, qps, burst, tag, cpu_profiles=False, pauses=MEASURED):
        port = free_port()
        allow = "/healthz,/readyz,/livez,/metrics" + (f",{profiles.ALLOW_PATH}" if cpu_profiles else "")
        kubeconfig = f"{cluster.run_dir}/kubeconfig-bench"
        if impl == "upstream":
            argv = [f"{cluster.kube_bin}/kube-controller-manager", f"--kubeconfig={kubeconfig}", "--leader-elect=false",
                    "--bind-address=127.0.0.1", f"--secure-port={port}",
                    f"--authorization-always-allow-paths={allow}",
                    f"--controllers={controllers}", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}", "--v=1"]
            self.health = f"https://127.0.0.1:{port}/healthz"
        else:
            argv = [cluster.kcm_rs, f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--bind-address=127.0.0.1",
                    f"--secure-port={port}", f"--authorization-always-allow-paths={allow}",
                    f"--controllers={controllers}", f"--kube-api-qps={qps}", f"--kube-api-burst={burst}", "--v=1"]
            self.health = f"https://127.0.0.1:{port}/healthz"
        self.log = open(f"{cluster.run_dir}/logs/bench-{tag}-{impl}.log", "w")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            self.wait_healthy()
        except BaseException:
            # A process that never turned healthy may still be running and reconciling: it must not
            # outlive its run and act on the next one's objects.
            self.stop()
            raise
        time.sleep(pauses.settle)
        self.profiler = profiles.Profiler(port) if cpu_profiles else None
        self.cpu0 = self.cpu()
        self.series = []  # (seconds since cpu0, CPU seconds since cpu0, RSS MiB)
        self._sampling = True
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    def _sample(self):
        t0 = time.monotonic()
        while self._sampling and self.proc.poll() is None:
            try:
                self.series.append((time.monotonic() - t0, self.cpu() - self.cpu0, self.status_mib("VmRSS")))
            except (OSError, IndexError, ValueError):
                return  # the process is gone
            time.sleep(SAMPLE_PERIOD)

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
        self._sampling = False
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def audit_requests(cluster, t0, t1):
    """The bench user's requests received between two wall-clock times, from the audit log, counted
    by verb, resource (with its subresource) and answer code: a Counter, or None without an audit log.
    Each request once: a watch's ResponseStarted line is skipped, its ResponseComplete counted."""
    path = f"{cluster.run_dir}/logs/audit.log"
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


def run_one(cluster, api, workload, impl, size, qps, burst, cpu_profiles=False, pauses=MEASURED):
    """`workload` (a workloads.Workload) at `size` under `impl` ("upstream" or "kcm-rs"): its figures,
    as the keys report.table reads; with `cpu_profiles`, also the process's CPU profile windows
    (`cpu_profile`, see profiles.py)."""
    ns = f"bench-{workload.name}-{impl}-{int(time.time())}"
    api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    watches = []
    # Whatever fails (the controller not starting, a workload timing out), the runner's watches stop
    # and the namespace goes, so that the next run starts on a clean cluster.
    try:
        wait_until("default ServiceAccount", lambda: api_ok(api, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), 60)
        if workload.prepare:
            workload.prepare(api, ns, size)
        ev = {"pods": [], "rs": [], "deploy": [], "jobs": [], "configmaps": []}
        watches = [Watch(api, ns_path(ns, "", "pods"), ev["pods"]),
                   Watch(api, ns_path(ns, "apps/v1", "replicasets"), ev["rs"]),
                   Watch(api, ns_path(ns, "apps/v1", "deployments"), ev["deploy"]),
                   Watch(api, ns_path(ns, "batch/v1", "jobs"), ev["jobs"])]
        if workload.name == "gc":
            watches.append(Watch(api, ns_path(ns, "", "configmaps"), ev["configmaps"]))
        for w in watches:
            w.start()
        wall0 = time.time()
        ctl = Controller(cluster, impl, workload.controllers, qps, burst, workload.name, cpu_profiles, pauses)
        try:
            converge, lat = workload.run(api, ns, size, ev)
            windows = ctl.profiler.stop() if ctl.profiler else None
            time.sleep(pauses.tail)
            cpu = ctl.cpu() - (0 if workload.cpu_from_start else ctl.cpu0)
            result = dict(converge=converge, p50=percentile(lat, 50), p90=percentile(lat, 90),
                          p99=percentile(lat, 99), samples=len(lat),
                          watch_gaps=sum(w.gaps for w in watches),
                          cpu=cpu, rss=ctl.status_mib("VmHWM"), rss_now=ctl.status_mib("VmRSS"),
                          latencies=list(lat), series=list(ctl.series))
            if windows is not None:
                result["cpu_profile"] = windows
        finally:
            ctl.stop()
        time.sleep(pauses.audit)
        result.update(request_figures(audit_requests(cluster, wall0, time.time())))
    finally:
        for w in watches:
            w.stop = True
        api.delete(f"/api/v1/namespaces/{ns}")
        wait_until(f"namespace {ns} gone", lambda: not api_ok(api, f"/api/v1/namespaces/{ns}"), 1800)
    return result
