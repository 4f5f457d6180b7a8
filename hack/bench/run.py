#!/usr/bin/env python3
"""Upstream kube-controller-manager vs kcm-rs on one local control plane: each workload runs twice,
once with a second upstream KCM running only the controllers under test, once with kcm-rs running them,
with the same client QPS/burst. See benches/README.md ("Side by side with upstream") for what each
figure means; hack/bench.sh brings up the control plane and calls this.

The standard library and, for the charts, matplotlib: the runner talks to the API server through
`kubectl proxy`. The parts:
api.py (requests and watches), workloads.py (the workloads, each defined once), measure.py (one
measured run), report.py (the tables), plots.py (the SVG charts, drawn by matplotlib).
"""
import argparse
import datetime
import os
import platform
import subprocess
import sys
import time

from api import Api, api_ok, free_port, log, wait_until
from measure import MEASURED, SMOKE, Cluster, run_one
import plots
import profiles
from report import appended, perf_data, results_file, table, unused_path
from workloads import SCALES, WORKLOADS


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", choices=SCALES, default="small")
    ap.add_argument("--qps", default="20/30,100/200", help="comma-separated qps/burst pairs")
    ap.add_argument("--workloads", default=",".join(n for n, w in WORKLOADS.items() if w.by_default),
                    help=f"comma-separated, of: {', '.join(WORKLOADS)} (gc only when named)")
    ap.add_argument("--cpu-profiles", action="store_true",
                    help="profile both processes through /debug/pprof while each workload runs; with --out, "
                         "write the merged profiles, their top functions and flame graphs beside the tables")
    ap.add_argument("--append", metavar="FILE", help="append the tables to this markdown file")
    ap.add_argument("--out", metavar="FILE",
                    help="write the tables to this new markdown file (benches/results/<date>-<topic>.md); "
                         "when it exists, the first free <name>-2.md, <name>-3.md, ... beside it")
    args = ap.parse_args(argv)
    unknown = [w for w in args.workloads.split(",") if w not in WORKLOADS]
    if unknown:
        ap.error(f"unknown workloads: {', '.join(unknown)} (known: {', '.join(WORKLOADS)})")
    return args


def main():
    args = parse_args()
    cluster = Cluster.from_env()
    port = free_port()
    proxy = subprocess.Popen([f"{cluster.kube_bin}/kubectl", f"--kubeconfig={cluster.run_dir}/kubeconfig", "proxy",
                              f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    api = Api(port)
    wait_until("kubectl proxy", lambda: api_ok(api, "/api/v1/namespaces/default"), 30)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    versions = f"kcm-rs {commit} ({f'profile {cluster.profile}' if cluster.profile else cluster.kcm_rs})"
    kube_version = subprocess.run([f"{cluster.kube_bin}/kube-controller-manager", "--version"], capture_output=True,
                                  text=True).stdout.strip()
    cpu = next((line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name")), "?")
    heading = (f"{datetime.date.today()}, scale `{args.scale}`: {kube_version} vs {versions}; "
               f"{os.cpu_count()} cores ({cpu}), {platform.system()} {platform.release()}")
    runs = []  # table()'s arguments, one tuple per workload and QPS pair
    profiled = []  # (workload and QPS tag, impl, profile windows)
    try:
        for pair in args.qps.split(","):
            qps, burst = pair.split("/")
            for name in args.workloads.split(","):
                workload = WORKLOADS[name]
                size = workload.sizes[args.scale]
                results = {}
                for impl in ("upstream", "kcm-rs"):
                    log(f"{name} ({workload.describe(size)}), qps {qps}/{burst}: {impl}")
                    t = time.monotonic()
                    results[impl] = run_one(cluster, api, workload, impl, size, qps, burst, args.cpu_profiles,
                                            SMOKE if args.scale == "tiny" else MEASURED)
                    if args.cpu_profiles:
                        profiled.append((f"{name}-qps{qps}", impl, results[impl].pop("cpu_profile", [])))
                    figures = {k: v for k, v in results[impl].items() if k not in ("by_kind", "latencies", "series")}
                    log(f"  {impl}: {figures} in {time.monotonic() - t:.0f}s")
                run = (workload.describe(size), workload.latency, qps, burst, results["upstream"], results["kcm-rs"])
                runs.append(run)
                print(table(*run), flush=True)
    finally:
        proxy.terminate()
    if args.append:
        with open(args.append, "a") as f:
            f.write(appended(heading, runs))
    if args.out:
        path = unused_path(args.out)
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        command = f"hack/bench.sh --scale {args.scale} --qps {args.qps} --workloads {args.workloads}"
        command += " --cpu-profiles" if args.cpu_profiles else ""
        with open(path, "w") as f:
            f.write(results_file(heading, command, runs))
            if profiled:
                f.write(profiles_section(plots.stem_of(path), profiled))
        perf = os.path.splitext(path)[0] + ".perfdata.json"
        with open(perf, "w") as f:
            f.write(perf_data(runs))
        charts = plots.write(plots.stem_of(path), runs)
        log(f"tables written to {path}, clusterloader2 PerfData to {perf}, charts to {', '.join(charts)}")


def profiles_section(stem, profiled):
    """The pass file's CPU profiles: per workload and process, the merged profile, its flame graph and
    `go tool pprof -top` (profiles.py writes the files beside the tables)."""
    out = ["", "## CPU profiles (`--cpu-profiles`: both processes sampled at 100 Hz while the workload ran)", ""]
    for tag, impl, windows in profiled:
        top = profiles.write(stem, tag, impl, windows)
        files = profiles.paths(stem, tag, impl)
        if top is None:
            out += [f"### {tag}: {impl}", "", "No profile: the process answered no window.", ""]
            continue
        flame, proto = (os.path.basename(files[k]) for k in ("flame", "profile"))
        out += [f"### {tag}: {impl} ({len(windows)} windows of {profiles.WINDOW_SECONDS} s, [{proto}]({proto}))", "",
                f"![flame graph]({flame})", "", "```", top.rstrip(), "```", ""]
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(main())
