"""CPU profiles of the measured process, taken as KCM's users take them: from its own
`/debug/pprof/profile` (`--profiling`, on by default in both), in back-to-back windows for as long as
the workload runs, then merged, read and drawn with the tools people use on them: `go tool pprof`
(merge, top, traces) and inferno's flame graphs (`inferno-flamegraph`, installed by hack/bench.sh
when `--cpu-profiles` asks for them).

The sampler adds its own cost (100 samples a second in both processes), so a profiled pass's CPU
figures are the profiled processes', not a clean measurement: run the tables' pass without it."""
import os
import re
import ssl
import subprocess
import threading
import urllib.request

# Seconds per profile request: short enough that the last window, cut off when the workload ends, loses
# little; Go's handler takes any whole number.
WINDOW_SECONDS = 5
# Lines of `go tool pprof -top` kept in the pass file, per process.
TOP_LINES = 12
# What the controllers must let through unauthenticated for the runner to fetch profiles (KCM's
# path-prefix syntax, as for /healthz).
ALLOW_PATH = "/debug/pprof/*"


class Profiler:
    """Fetches CPU profiles from a controller's secure port in consecutive windows until stopped."""

    def __init__(self, port):
        self.url = f"https://127.0.0.1:{port}/debug/pprof/profile?seconds={WINDOW_SECONDS}"
        self.profiles = []  # the windows' pprof protobufs, in order
        self.errors = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        while not self._stop.is_set():
            try:
                with urllib.request.urlopen(self.url, timeout=WINDOW_SECONDS + 30, context=ctx) as r:
                    self.profiles.append(r.read())
            except Exception as e:  # the process went away mid-window, or refused: keep what we have
                self.errors.append(str(e))
                return

    def stop(self):
        """Ends after the window in flight (at most WINDOW_SECONDS): call while the process still runs."""
        self._stop.set()
        self._thread.join(WINDOW_SECONDS + 35)
        return self.profiles


_VALUE = re.compile(r"^\s*([0-9.]+)(ns|us|µs|ms|s|min|h)?\s+(\S.*)$")
_UNIT_MS = {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "min": 6e4, "h": 3.6e6, None: 1.0}


def folded(traces):
    """`go tool pprof -traces` output as folded stacks ("root;caller;leaf value", value in ms), the
    input of flame graph tools. Each trace block starts with its value and leaf frame; the lines below
    it are the callers, innermost first. Equal stacks are summed."""
    stacks = {}

    def flush(value, frames):
        if value is not None and frames:
            key = ";".join(reversed(frames))
            stacks[key] = stacks.get(key, 0) + value

    value, frames = None, []
    for line in traces.splitlines():
        if line.startswith("-----------+"):
            flush(value, frames)
            value, frames = None, []
            continue
        if value is None:
            m = _VALUE.match(line)
            if m:
                value = float(m.group(1)) * _UNIT_MS[m.group(2)]
                frames = [_frame(m.group(3))]
            continue
        if line.strip():
            frames.append(_frame(line))
    flush(value, frames)
    return [f"{k} {round(v)}" for k, v in sorted(stacks.items()) if round(v) > 0]


def _frame(text):
    """A frame's name without pprof's "(inline)" mark; ';' would split a folded stack, so it goes."""
    return text.strip().removesuffix("(inline)").strip().replace(";", ":")


def _pprof(args, **kw):
    return subprocess.run(["go", "tool", "pprof", *args], capture_output=True, check=True,
                          env={**os.environ, "GOTOOLCHAIN": "local"}, **kw)


def paths(stem, workload, impl):
    base = f"{stem}-{workload}-{impl}"
    return {"profile": f"{base}.pb.gz", "flame": f"{base}-flame.svg"}


def write(stem, workload, impl, windows):
    """Merges one process's windows into `<stem>-<workload>-<impl>.pb.gz`, draws its flame graph
    beside it, and returns the `go tool pprof -top` lines for the pass file (None without windows)."""
    if not windows:
        return None
    out = paths(stem, workload, impl)
    tmp = [f"{out['profile']}.{i}.tmp" for i in range(len(windows))]
    try:
        for path, data in zip(tmp, windows):
            with open(path, "wb") as f:
                f.write(data)
        merged = _pprof(["-proto", *tmp]).stdout
    finally:
        for path in tmp:
            os.remove(path)
    with open(out["profile"], "wb") as f:
        f.write(merged)
    top = _pprof(["-top", f"-nodecount={TOP_LINES}", out["profile"]], text=True).stdout
    traces = _pprof(["-traces", out["profile"]], text=True).stdout
    svg = subprocess.run(["inferno-flamegraph", "--title", f"{workload}: {impl}, CPU", "--countname", "ms"],
                         input="\n".join(folded(traces)) + "\n", capture_output=True, text=True, check=True).stdout
    with open(out["flame"], "w") as f:
        f.write(svg)
    return top
