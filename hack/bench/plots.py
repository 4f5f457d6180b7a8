"""The pass as charts, SVG beside its tables: the event -> action latency of both controllers as
CDFs on one chart per workload and QPS pair, the same latencies' rolling p50 and p99 over the run,
and each process's CPU seconds and RSS over the run; for a sharded pass, the cost per replica
against the replica count. People who benchmark controllers read
distributions, not medians in a table.

matplotlib draws them (Agg, no display). The arithmetic (cdf, rolling) is plain Python, tested
without it."""
import os

# Colours and labels fixed per controller, so every chart of every pass reads the same way.
STYLE = {"upstream": dict(color="#1f77b4", label="upstream KCM"),
         "kcm-rs": dict(color="#d62728", label="kcm-rs")}
# Samples per rolling window: a p99 over fewer than 20 samples is its maximum.
WINDOW = 20


def cdf(xs):
    """The empirical CDF of `xs`: the sorted values and, for each, the share of samples at or below it."""
    xs = sorted(xs)
    n = len(xs)
    return xs, [(i + 1) / n for i in range(n)]


def rolling(xs, p, window=WINDOW):
    """The p-th percentile of each run of `window` consecutive samples (nearest rank, as the tables'
    percentile), one value per window end; fewer samples than a window give one value over all."""
    from report import percentile
    if not xs:
        return []
    if len(xs) <= window:
        return [percentile(xs, p)]
    return [percentile(xs[i - window:i], p) for i in range(window, len(xs) + 1)]


def paths(stem):
    """Where write() puts a pass's charts, beside its tables (`<stem>.md`)."""
    return {"latency": f"{stem}-latency.svg", "process": f"{stem}-process.svg"}


def _pyplot():
    """matplotlib's pyplot without a display, writing SVG text as text: glyphs drawn as paths made a
    pass's two charts 1.3 MB."""
    import matplotlib
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt
    return plt


def _legend(ax, size):
    """A legend where something was drawn (a workload without latencies, idle, has no curve)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=size)


def _title(title, qps, burst):
    return f"{title}\n(qps {qps}, burst {burst})"


def write(stem, runs):
    """Draws the pass's two charts; `runs` holds report.table()'s positional arguments, each run's
    figures carrying `latencies` (seconds, in the order measured) and `series` ((t, cpu s, rss MiB)
    samples). Returns the paths written."""
    plt = _pyplot()
    out = paths(stem)
    n = max(len(runs), 1)

    fig, axes = plt.subplots(2, n, figsize=(4.2 * n, 7), squeeze=False)
    for col, (title, latency, qps, burst, up, rs) in enumerate(runs):
        top, bottom = axes[0][col], axes[1][col]
        for impl, figures in (("upstream", up), ("kcm-rs", rs)):
            lat = [x * 1000 for x in figures.get("latencies") or []]
            if not lat:
                continue
            xs, ys = cdf(lat)
            top.step(xs, ys, where="post", **STYLE[impl])
            for p, dash in ((50, "-"), (99, ":")):
                r = rolling(lat, p)
                bottom.plot(range(len(r)), r, linestyle=dash, color=STYLE[impl]["color"],
                            label=f"{STYLE[impl]['label']} p{p}")
        top.set_title(_title(title, qps, burst), fontsize=9)
        top.set_xlabel(f"event -> action (ms) [{latency}]", fontsize=8)
        top.set_ylabel("share of samples")
        top.set_xscale("symlog", linthresh=1)
        top.grid(alpha=0.3)
        _legend(top, 8)
        bottom.set_xlabel(f"window of {WINDOW} samples, in order", fontsize=8)
        bottom.set_ylabel("ms")
        bottom.grid(alpha=0.3)
        _legend(bottom, 7)
    fig.tight_layout()
    fig.savefig(out["latency"], format="svg")
    plt.close(fig)

    fig, axes = plt.subplots(2, n, figsize=(4.2 * n, 6), squeeze=False, sharex="col")
    for col, (title, _latency, qps, burst, up, rs) in enumerate(runs):
        cpu_ax, rss_ax = axes[0][col], axes[1][col]
        for impl, figures in (("upstream", up), ("kcm-rs", rs)):
            series = figures.get("series") or []
            if not series:
                continue
            t = [s[0] for s in series]
            cpu_ax.plot(t, [s[1] for s in series], **STYLE[impl])
            rss_ax.plot(t, [s[2] for s in series], **STYLE[impl])
        cpu_ax.set_title(_title(title, qps, burst), fontsize=9)
        cpu_ax.set_ylabel("CPU user+sys (s)")
        rss_ax.set_ylabel("RSS (MiB)")
        rss_ax.set_xlabel("seconds into the run")
        for ax in (cpu_ax, rss_ax):
            ax.grid(alpha=0.3)
            _legend(ax, 8)
    fig.tight_layout()
    fig.savefig(out["process"], format="svg")
    plt.close(fig)
    return [out["latency"], out["process"]]


def write_sharded(stem, upstream, points, waves=()):
    """A sharded pass's chart, `<stem>-replicas.svg`: per-replica peak RSS, CPU and MiB received
    (mean, and the most loaded replica) against the replica count, upstream's one process as a
    line; with `waves`, a second row with the same per replica over the Deployments wave (upstream
    ran no wave: no line). Arguments as report.sharded_perf_data's. Returns the path written."""
    plt = _pyplot()
    path = f"{stem}-replicas.svg"
    rows = 2 if waves else 1
    fig, axes = plt.subplots(rows, 3, figsize=(12, 3.6 * rows), squeeze=False)
    idle = ((0, "peak RSS (MiB)"), (1, "CPU user+sys (s)"), (4, "received (MiB)"))
    _per_replica(axes[0], points, idle, upstream, "idle")
    if waves:
        _per_replica(axes[1], waves, ((2, "peak RSS (MiB)"), (0, "CPU user+sys (s)"), (1, "received (MiB)")),
                     (None, None, None), "Deployments wave")
    fig.tight_layout()
    fig.savefig(path, format="svg")
    plt.close(fig)
    return path


def _per_replica(axes, points, columns, references, title):
    """One row of the sharded chart: for each (column index, label), the mean and busiest replica's
    figure per replica count of `points` ((replicas, seconds, rows)), a reference line where given."""
    counts = [p[0] for p in points]
    for ax, (i, name), reference in zip(axes, columns, references):
        mean = [sum(r[i] for r in rows) / len(rows) for _, _, rows in points]
        top = [max(r[i] for r in rows) for _, _, rows in points]
        ax.plot(counts, mean, marker="o", color=STYLE["kcm-rs"]["color"], label="kcm-rs, mean per replica")
        ax.plot(counts, top, marker="^", linestyle=":", color=STYLE["kcm-rs"]["color"],
                label="kcm-rs, busiest replica")
        if reference is not None:
            ax.axhline(reference, color=STYLE["upstream"]["color"], label="upstream KCM (one process)")
        ax.set_xticks(counts)
        ax.set_xlabel("kcm-rs replicas")
        ax.set_ylabel(name)
        ax.set_title(title, fontsize=9)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        _legend(ax, 7)


def stem_of(markdown_path):
    """A pass's file without its `.md`: the charts' common stem."""
    return os.path.splitext(markdown_path)[0]
