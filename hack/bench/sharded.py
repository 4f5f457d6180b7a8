#!/usr/bin/env python3
"""kcm-rs sharing the work (`--shards`), measured per replica over idle pods spread across namespaces,
beside one upstream kube-controller-manager running the same three controllers over the same pods.
hack/bench-sharded.sh brings up the control plane (ShardedListAndWatch on unless told otherwise) and
calls this.

For each replica count R: R kcm-rs processes with `--shards=N` start together; the run waits until
every shard's caches synced on its holder, lets them idle, then reads each replica's peak RSS
(VmHWM), CPU seconds since start, the bytes it received from the API server (sharded_work) and the
idle pods in the shards it holds (from its /debug/shards). With --wave-pods it then runs a wave of
Deployments (one per namespace, created and rolled) and reads the CPU and bytes each replica spent on
it. With the largest R it kills one replica with -9 and times how long until every shard it held has
synced on another replica (from the survivors' logs) and until a ReplicaSet scaled in one of its
namespaces at the moment of the kill has its pod. --upstream-failover times the same probe across a
leader failover of two upstream kube-controller-managers with leader election.
"""
import argparse
import datetime
import os
import json
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor

from api import Api, api_ok, free_port, log, ns_path, wait_until
from measure import TICKS, Cluster
from report import sharded_perf_data
import plots
from sharded_work import (create_probes, deploy_wave, failover_probe, probe_pods, received_bytes, remove_wave,
                          scale_probe)

SYNCED = "shard's caches synced; writes open"
CONTROLLERS = "replicaset-controller,deployment-controller,job-controller"
#: How long the processes idle after syncing before they are read.
IDLE_S = 20


class Process:
    """One controller process on the bench user's kubeconfig, its endpoints on a free port."""

    def __init__(self, cluster, argv, tag):
        self.port = free_port()
        self.log_path = f"{cluster.run_dir}/logs/sharded-{tag}.log"
        self.log = open(self.log_path, "w")
        argv = argv + [f"--kubeconfig={cluster.run_dir}/kubeconfig-bench", "--bind-address=127.0.0.1",
                       f"--secure-port={self.port}",
                       "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/shards",
                       f"--controllers={CONTROLLERS}", "--kube-api-qps=100", "--kube-api-burst=200"]
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT)
        self.started = time.monotonic()

    def text(self):
        with open(self.log_path) as f:
            return f.read()

    def cpu(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / TICKS

    def peak_mib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    def held_shards(self):
        """The indexes of the shards /debug/shards says this replica holds."""
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        with urllib.request.urlopen(f"https://127.0.0.1:{self.port}/debug/shards", timeout=5, context=ctx) as r:
            status = json.loads(r.read())
        return {int(h["shard"].split("-")[0]) for h in status["held"]}

    def stop(self, sig=signal.SIGTERM):
        self.proc.send_signal(sig)
        try:
            self.proc.wait(45)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def idle_pods(api, namespaces, per_ns):
    """Bare pods in each namespace; returns when all of them run (the scheduler and KWOK done with them)."""
    def make(args):
        ns, i = args
        api.post(ns_path(ns, "", "pods"), {"metadata": {"name": f"idle-{i}", "labels": {"app": "idle"}},
                                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
    for ns in namespaces:
        api.post("/api/v1/namespaces", {"metadata": {"name": ns}})
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(make, [(ns, i) for ns in namespaces for i in range(per_ns)]))
    wait_until("every pod running", lambda: not api.get("/api/v1/pods?fieldSelector=status.phase%21%3DRunning&limit=1")
               ["items"], 1800)


def fnv1a64(text):
    """The API server's shard hash (Go's hash/fnv New64a)."""
    h = 0xCBF29CE484222325
    for b in text.encode():
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


def shard_of(ns, shards):
    """The shard of namespace `ns` among `shards`: the i with floor(i*2^64/N) <= hash < floor((i+1)*2^64/N)."""
    h, i = fnv1a64(ns), (fnv1a64(ns) * shards) >> 64
    while i + 1 < shards and h >= ((i + 1) << 64) // shards:
        i += 1
    while h < (i << 64) // shards:
        i -= 1
    return i


def synced_shards(procs):
    return sum(p.text().count(SYNCED) for p in procs)


MIB = 1024 * 1024


def sharded_run(cluster, replicas, shards, pods_by_shard):
    argv = [cluster.kcm_rs, "--leader-elect=true", f"--shards={shards}", "--v=1"]
    t0 = time.monotonic()
    procs = [Process(cluster, argv, f"r{replicas}-{i}") for i in range(replicas)]
    wait_until(f"{shards} shards synced over {replicas} replicas", lambda: synced_shards(procs) >= shards, 900)
    synced_after = time.monotonic() - t0
    time.sleep(IDLE_S)
    rows = []
    got = received_bytes(cluster.api_port)
    for p in procs:
        mine = p.held_shards()
        rows.append((p.peak_mib(), p.cpu(), sum(pods_by_shard.get(i, 0) for i in mine), len(mine),
                     got.get(p.proc.pid, 0) / MIB))
    return procs, synced_after, rows


def wave_run(cluster, api, procs, namespaces, name, pods):
    """The wave over running replicas: its seconds, and per replica (CPU s, MiB received) during it and
    peak RSS after."""
    before = received_bytes(cluster.api_port)
    cpu = [p.cpu() for p in procs]
    secs = deploy_wave(api, namespaces, name, pods)
    after = received_bytes(cluster.api_port)
    rows = [(p.cpu() - c, (after.get(p.proc.pid, 0) - before.get(p.proc.pid, 0)) / MIB, p.peak_mib())
            for p, c in zip(procs, cpu)]
    remove_wave(api, namespaces, name)
    return secs, rows


def held(p):
    text = p.text()
    return text.count("holding shard") - text.count("released shard")


def failover(api, procs, namespaces, shards):
    """kill -9 of the first replica: (shards it held, seconds until all of them synced elsewhere, seconds
    until the probe in one of its namespaces, scaled at the kill, had its pod)."""
    victim, others = procs[0], procs[1:]
    lost, mine = held(victim), victim.held_shards()
    ns = next(n for n in namespaces if shard_of(n, shards) in mine)
    before, want = synced_shards(others), probe_pods(api, ns) + 1

    def synced():
        t0 = time.monotonic()
        wait_until("the killed replica's shards synced elsewhere", lambda: synced_shards(others) >= before + lost, 900)
        return time.monotonic() - t0

    with ThreadPoolExecutor(2) as ex:
        probe = ex.submit(failover_probe, api, ns, lambda: victim.stop(signal.SIGKILL), want)
        synced_after = ex.submit(synced)
        return lost, synced_after.result(), probe.result()


def upstream_argv(cluster, leader_elect):
    return [f"{cluster.kube_bin}/kube-controller-manager", f"--leader-elect={str(leader_elect).lower()}"]


def upstream_run(cluster):
    p = Process(cluster, upstream_argv(cluster, False), "upstream")
    time.sleep(15 + IDLE_S)  # KCM's informers sync within seconds; it has no per-shard log line
    row = (p.peak_mib(), p.cpu(), received_bytes(cluster.api_port).get(p.proc.pid, 0) / MIB)
    p.stop()
    return row


def upstream_failover(cluster, api, ns):
    """Two upstream KCMs with leader election: once the leader answers the probe in ns, kill -9 it and
    time the probe across the failover."""
    procs = [Process(cluster, upstream_argv(cluster, True), f"upstream-le-{i}") for i in range(2)]
    started = scale_probe(api, ns, probe_pods(api, ns) + 1, timeout=900)
    log(f"upstream leader answered the probe {started:.1f} s after start")
    leader = next(p for p in procs if "successfully acquired lease" in p.text().lower())
    secs = failover_probe(api, ns, lambda: leader.stop(signal.SIGKILL), probe_pods(api, ns) + 1)
    for p in procs:
        if p is not leader:
            p.stop()
    return started, secs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pods", type=int, default=20000)
    ap.add_argument("--namespaces", type=int, default=40)
    ap.add_argument("--shards", type=int, default=12)
    ap.add_argument("--replicas", default="1,2,4")
    ap.add_argument("--wave-pods", type=int, default=0, metavar="N",
                    help="after the idle reading, a Deployment of N pods per namespace, created and rolled")
    ap.add_argument("--upstream-failover", action="store_true",
                    help="also time a leader failover of two upstream KCMs over the same pods")
    ap.add_argument("--out", metavar="FILE")
    args = ap.parse_args()
    cluster = Cluster.from_env()
    port = free_port()
    proxy = subprocess.Popen([f"{cluster.kube_bin}/kubectl", f"--kubeconfig={cluster.run_dir}/kubeconfig", "proxy",
                              f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = Api(port)
    lines = []
    upstream, points, wave_points = None, [], []  # the charts' and PerfData's figures
    try:
        wait_until("kubectl proxy", lambda: api_ok(api, "/api/v1/namespaces/default"), 30)
        # The number first: FNV-1a's top bits barely move with a name's last characters, so
        # idle-0 ... idle-39 would all land in two of twelve shards (docs/scale-out.md, section 5).
        namespaces = [f"{i}-idle" for i in range(args.namespaces)]
        log(f"creating {args.pods} idle pods in {args.namespaces} namespaces")
        idle_pods(api, namespaces, args.pods // args.namespaces)
        create_probes(api, namespaces)
        gate = os.environ.get("KCM_RS_SHARDED_LIST_WATCH") == "1"
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        lines += [f"# Sharded kcm-rs over idle pods ({datetime.date.today()})", "",
                  f"kcm-rs {commit} (profile {cluster.profile or 'release'}); {args.pods} idle pods in "
                  f"{args.namespaces} namespaces; `--shards={args.shards}`; ShardedListAndWatch "
                  f"{'on' if gate else 'off'}; {os.cpu_count()} cores; each process read {IDLE_S} s after "
                  "its shards synced. Command: `hack/bench-sharded.sh " + " ".join(sys.argv[1:]) + "`", ""]
        up_rss, up_cpu, up_mib = upstream = upstream_run(cluster)
        log(f"upstream: {up_rss:.0f} MiB, {up_cpu:.1f} s CPU, {up_mib:.0f} MiB received")
        per_ns = args.pods // args.namespaces
        pods_by_shard = {}
        for ns in namespaces:
            shard = shard_of(ns, args.shards)
            pods_by_shard[shard] = pods_by_shard.get(shard, 0) + per_ns
        lines += [f"Pods per shard: {dict(sorted(pods_by_shard.items()))}.", "",
                  "| replicas | all shards synced after | per replica: shards, idle pods in them, peak RSS MiB, CPU s, "
                  "MiB received |",
                  "| --- | --- | --- |",
                  f"| upstream KCM (1, unsharded) | | peak RSS {up_rss:.0f} MiB, CPU {up_cpu:.1f} s, "
                  f"{up_mib:.1f} MiB received |"]
        counts = [int(r) for r in args.replicas.split(",")]
        waves, failovers = [], []
        for r in counts:
            procs, synced_after, rows = sharded_run(cluster, r, args.shards, pods_by_shard)
            points.append((r, synced_after, rows))
            cells = "; ".join(f"{n}, {pods}, {rss:.0f}, {cpu:.1f}, {mib:.1f}" for rss, cpu, pods, n, mib in rows)
            lines.append(f"| {r} | {synced_after:.1f} s | {cells} |")
            log(lines[-1])
            if args.wave_pods:
                secs, rows = wave_run(cluster, api, procs, namespaces, f"wave-{r}", args.wave_pods)
                wave_points.append((r, secs, rows))
                cells = "; ".join(f"{cpu:.1f}, {mib:.1f}, {rss:.0f}" for cpu, mib, rss in rows)
                waves.append(f"| {r} | {secs:.1f} s | {cells} |")
                log(waves[-1])
            if r == counts[-1] and r > 1:
                lost, synced, probe = failover(api, procs, namespaces, args.shards)
                failovers.append(f"kcm-rs, {r} replicas: kill -9 of one holding {lost} shards; all of them synced "
                                 f"on other replicas {synced:.1f} s later, the probe's pod {probe:.1f} s after the "
                                 "kill (lease duration 15 s).")
                log(failovers[-1])
                procs = procs[1:]
            for p in procs:
                p.stop()
            time.sleep(5)
        if waves:
            lines += ["", f"A wave of Deployments over them: one of {args.wave_pods} pods in each namespace, created "
                      "until available, then a rolling image update of all until complete.", "",
                      "| replicas | wave took | per replica: CPU s during it, MiB received during it, peak RSS MiB |",
                      "| --- | --- | --- |", *waves]
        if args.upstream_failover:
            started, secs = upstream_failover(cluster, api, namespaces[0])
            failovers.append(f"upstream, two KCMs with leader election: the first leader answered the probe "
                             f"{started:.1f} s after start; after kill -9 of it, the probe's pod {secs:.1f} s "
                             "after the kill (lease duration 15 s).")
            log(failovers[-1])
        if failovers:
            lines += ["", "Failover (a ReplicaSet in a namespace of the killed process scaled up by one at the "
                      "moment of the kill; the figure is when its pod exists):", "",
                      *[f"- {f}" for f in failovers]]
    finally:
        # What was measured, also when a later step failed: a pass at 100,000 pods takes half an hour.
        proxy.terminate()
        text = "\n".join(lines) + "\n"
        print(text)
        if args.out:
            os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
            with open(args.out, "w") as f:
                f.write(text)
            if upstream and points:
                stem = plots.stem_of(args.out)
                with open(f"{stem}.perfdata.json", "w") as f:
                    f.write(sharded_perf_data(upstream, points, wave_points))
                chart = plots.write_sharded(stem, upstream, points, wave_points)
                log(f"PerfData to {stem}.perfdata.json, chart to {chart}")


if __name__ == "__main__":
    sys.exit(main())
