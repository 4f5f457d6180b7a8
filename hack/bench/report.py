"""Figures into markdown: percentiles, the request rows from the audit log's counts, one table per
workload and QPS pair, and the text that `--append` adds to a file or `--out` writes to a new one.
Pure functions; nothing here talks to a cluster."""
import json
import os


def percentile(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


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


def fmt(v, unit=""):
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.3f}{unit}" if v < 1 else f"{v:.1f}{unit}"
    return f"{v}{unit}"


def ratio(a, b):
    return f"{b / a:.2f}" if a and b is not None else "–"


def table(title, latency, qps, burst, up, rs, level=4):
    """One workload at one QPS pair: `up` and `rs` are the two runs' figures (run_one's dicts),
    `title` the workload's description, `latency` what its event -> action figure measures."""
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
    out = [f"{'#' * level} {title} (qps {qps}, burst {burst})", "",
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


def appended(heading, runs):
    """What `--append` adds to a markdown file: the pass as a level-3 heading, then each run's table.
    `runs` holds table()'s positional arguments, one tuple per workload and QPS pair."""
    return f"\n### {heading}\n\n" + "".join(table(*run) + "\n" for run in runs)


def results_file(heading, command, runs):
    """What `--out` writes, a file of its own as in benches/results/: the pass as its title, the
    command that ran it, then each run's table one level down."""
    return f"# {heading}\n\n`{command}`\n\n" + "\n".join(table(*run, level=2) for run in runs)


def perf_data(runs):
    """clusterloader2's `PerfData` (version v1) for the pass's event -> action latencies, the format
    its measurements and perfdash read: one data item per workload, QPS pair and controller, the
    percentiles in milliseconds under clusterloader2's keys (Perc50, Perc90, Perc99), labelled with
    what was measured. `runs` holds table()'s positional arguments."""
    items = []
    for title, latency, qps, burst, up, rs in runs:
        for controller, figures in (("upstream", up), ("kcm-rs", rs)):
            data = {key: round(figures[p] * 1000, 3) for key, p in
                    (("Perc50", "p50"), ("Perc90", "p90"), ("Perc99", "p99")) if figures.get(p) is not None}
            if not data:
                continue
            items.append({"data": data, "unit": "ms", "labels": {
                "Metric": "EventToAction", "Workload": title, "Latency": latency, "QPS": f"{qps}/{burst}",
                "Controller": controller, "Samples": str(figures["samples"])}})
    return json.dumps({"version": "v1", "dataItems": items}, indent=1) + "\n"


def sharded_perf_data(upstream, points, waves=()):
    """`PerfData` (v1) for a sharded pass: per replica count, the mean per-replica peak RSS, CPU and
    MiB received over the idle reading and when all shards had synced, with upstream's one process
    as the reference. `upstream` is (rss MiB, cpu s, MiB received); `points` holds (replicas,
    synced after s, rows) with sharded_run's rows of (rss, cpu, pods, shards, MiB received);
    `waves` holds (replicas, wave took s, rows) with wave_run's rows of (cpu, MiB received, rss)."""
    def item(data, unit, controller, replicas, metric):
        return {"data": data, "unit": unit, "labels": {"Metric": metric, "Controller": controller,
                                                       "Replicas": str(replicas)}}
    up_rss, up_cpu, up_mib = upstream
    items = [item({"Perc50": round(up_rss, 1)}, "MiB", "upstream", 1, "PeakRSS"),
             item({"Perc50": round(up_cpu, 2)}, "s", "upstream", 1, "CPU"),
             item({"Perc50": round(up_mib, 1)}, "MiB", "upstream", 1, "Received")]
    def per_replica(replicas, rows, columns):
        """Per (row index, unit, metric, digits): the mean replica's figure as Perc50, the busiest's
        as Perc99."""
        return [item({"Perc50": round(sum(r[i] for r in rows) / len(rows), digits),
                      "Perc99": round(max(r[i] for r in rows), digits)}, unit, "kcm-rs", replicas, metric)
                for i, unit, metric, digits in columns]
    for replicas, synced_after, rows in points:
        items += per_replica(replicas, rows, ((0, "MiB", "PeakRSSPerReplica", 1), (1, "s", "CPUPerReplica", 2),
                                              (4, "MiB", "ReceivedPerReplica", 1)))
        items.append(item({"Perc50": round(synced_after * 1000, 1)}, "ms", "kcm-rs", replicas, "AllShardsSynced"))
    for replicas, secs, rows in waves:
        items += per_replica(replicas, rows, ((0, "s", "WaveCPUPerReplica", 2), (1, "MiB", "WaveReceivedPerReplica", 1),
                                              (2, "MiB", "WavePeakRSSPerReplica", 1)))
        items.append(item({"Perc50": round(secs * 1000, 1)}, "ms", "kcm-rs", replicas, "WaveDuration"))
    return json.dumps({"version": "v1", "dataItems": items}, indent=1) + "\n"


def unused_path(path):
    """`path`, or, when a file is there already (a second pass the same day), the first of
    `<stem>-2<ext>`, `<stem>-3<ext>`, ... that is free: a pass never overwrites another."""
    stem, ext = os.path.splitext(path)
    n = 1
    while os.path.exists(path):
        n += 1
        path = f"{stem}-{n}{ext}"
    return path
