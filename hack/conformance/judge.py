#!/usr/bin/env python3
"""Helpers of hack/conformance.sh: reads the spec list, builds ginkgo's focus and skip expressions, and
turns ginkgo's JSON reports into the markdown table. Standard library only.

  judge.py select --specs FILE --tests FILE [--describes "A B"] [--focus REGEX] --out DIR
      FILE --tests: the output of `e2e.test --list-tests`. Writes DIR/focus.re, DIR/skip.re and
      DIR/skipped.tsv (describe, text, reason); prints warnings for unlisted specs; exits 2 on a list
      line that matches no spec.
  judge.py report --specs FILE --skipped FILE --implemented "A B" [--reference JSON] [--kcm-rs JSON]
      Prints the markdown report; exit status 1 if there is a regression (in --kcm-rs alone: a failure).
"""

import argparse
import json
import re
import sys

SIG = "[sig-apps]"
PASS = "passed"


def parse_list(path):
    """[(verdict, describe, text, reason)] in file order."""
    entries = []
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|")]
            verdict = parts[0]
            if verdict not in ("run", "skip") or len(parts) < 3 or (verdict == "skip" and len(parts) < 4):
                sys.exit(f"{path}:{n}: expected 'run | Describe | spec' or 'skip | Describe | spec | why', got: {line}")
            reason = "|".join(parts[3:]).strip() if len(parts) > 3 else ""
            entries.append((verdict, parts[1], parts[2], reason))
    return entries


def strip_tags(name):
    """The full name without its trailing [tags]."""
    return re.sub(r"(\s+\[[^\]]*\])+$", "", name).strip()


def go_quote(s):
    """Escapes RE2's metacharacters (Python's re.escape also escapes spaces, which RE2 rejects)."""
    return re.sub(r"([\\.+*?()|\[\]{}^$])", r"\\\1", s)


def spec_regex(describe, text):
    return go_quote(f"{SIG} {describe} {text}") + r"( \[[^]]*\])*$"


def listed_tests(path, describes):
    """Full names of the suite's specs under the given Describes (from --list-tests)."""
    names = []
    with open(path, encoding="utf-8") as f:
        for raw in f:
            # "k8s.io/kubernetes@v1.36.3/test/e2e/apps/job.go:79: [sig-apps] Job should ..."
            i = raw.find(SIG + " ")
            if i < 0:
                continue
            name = raw[i:].strip()
            rest = name[len(SIG) + 1:]
            if any(rest.startswith(d + " ") for d in describes):
                names.append(name)
    return names


def cmd_select(a):
    describes = a.describes.split()
    entries = parse_list(a.specs)
    tests = listed_tests(a.tests, describes)
    bare = {strip_tags(t): t for t in tests}
    listed = set()
    bad = False
    for verdict, d, text, _ in entries:
        key = f"{SIG} {d} {text}"
        if key not in bare and d in describes:
            print(f"[conformance] ERROR: {a.specs}: no spec named '{key}' in this e2e binary", file=sys.stderr)
            bad = True
        listed.add(key)
    if bad:
        sys.exit(2)
    for key, full in sorted(bare.items()):
        if key not in listed:
            print(f"[conformance] WARNING: spec not in {a.specs}, not run: {full}", file=sys.stderr)
    run = [spec_regex(d, t) for v, d, t, _ in entries if v == "run" and d in describes]
    skip = [spec_regex(d, t) for v, d, t, _ in entries if v == "skip"]
    focus = a.focus if a.focus else "|".join(run)
    if not focus:
        sys.exit("[conformance] nothing to run")
    with open(f"{a.out}/focus.re", "w", encoding="utf-8") as f:
        f.write(focus)
    with open(f"{a.out}/skip.re", "w", encoding="utf-8") as f:
        f.write("|".join(skip))
    with open(f"{a.out}/skipped.tsv", "w", encoding="utf-8") as f:
        for v, d, t, why in entries:
            if v == "skip" and d in describes:
                f.write(f"{d}\t{t}\t{why}\n")


def load_report(path):
    """{bare full name: (state, seconds, message, conformance)} for the specs that ran."""
    out = {}
    if not path:
        return None
    try:
        with open(path, encoding="utf-8") as f:
            suites = json.load(f)
    except (OSError, ValueError) as e:
        print(f"[conformance] cannot read {path}: {e}", file=sys.stderr)
        return {}
    for suite in suites:
        for r in suite.get("SpecReports") or []:
            if r.get("LeafNodeType") != "It":
                continue
            state = r.get("State", "")
            if state in ("skipped", "pending"):
                continue
            name = " ".join((r.get("ContainerHierarchyTexts") or []) + [r.get("LeafNodeText", "")])
            msg = ((r.get("Failure") or {}).get("Message") or "").strip()
            labels = r.get("LeafNodeLabels") or []
            conf = "Conformance" in labels or "[Conformance]" in name
            out[strip_tags(name)] = (state, (r.get("RunTime") or 0) / 1e9, msg, conf)
    return out


def cell(res):
    if res is None:
        return "—"
    return "pass" if res[0] == PASS else f"**{res[0].upper()}**"


def dur(res):
    return "—" if res is None else f"{res[1]:.0f}s"


def short(msg, n=600):
    msg = " ".join(msg.split())
    return msg if len(msg) <= n else msg[: n - 1] + "…"


def cmd_report(a):
    ref = load_report(a.reference)
    kcm = load_report(a.kcm_rs)
    implemented = set(a.implemented.split())
    entries = parse_list(a.specs)
    order = {f"{SIG} {d} {t}": i for i, (_, d, t, _) in enumerate(entries)}
    names = sorted(set(ref or {}) | set(kcm or {}), key=lambda k: (order.get(k, 1 << 20), k))

    def describe(name):
        return name[len(SIG) + 1:].split(" ", 1)[0]

    def is_regression(n):
        k = (kcm or {}).get(n)
        if k is None or k[0] == PASS:
            return False
        if ref is None:
            return True  # kcm-rs alone: every failure counts
        r = ref.get(n)
        return r is not None and r[0] == PASS

    regressions = [n for n in names if is_regression(n)]
    other_fail = [n for n in names if n not in regressions and any(
        x is not None and n in x and x[n][0] != PASS for x in (ref, kcm))]
    rest = [n for n in names if n not in regressions and n not in other_fail]

    lines = []
    p = lines.append
    p(f"# kcm-rs conformance: upstream sig-apps e2e specs ({a.version})")
    p("")
    modes = []
    if ref is not None:
        modes.append("**upstream**: kube-controller-manager runs every controller (reference mode)")
    if kcm is not None:
        modes.append(f"**kcm-rs**: kcm-rs runs {', '.join(a.controllers.split()) or 'nothing'}; upstream "
                     "kube-controller-manager runs every other controller (replace mode)")
    for m in modes:
        p(f"- {m}")
    p("- † the spec's own controller is not implemented by kcm-rs yet: in the kcm-rs column it ran under "
      "upstream's controller (next to kcm-rs's)")
    p("")

    def counts(rep):
        if rep is None:
            return "not run"
        passed = sum(1 for v in rep.values() if v[0] == PASS)
        return f"{passed} passed, {len(rep) - passed} failed of {len(rep)}"

    if ref is not None:
        p(f"upstream: {counts(ref)}  ")
    if kcm is not None:
        p(f"kcm-rs: {counts(kcm)}  ")
    p(f"regressions (pass under upstream, fail under kcm-rs{'' if ref is not None else '; kcm-rs alone: any failure'}): "
      f"**{len(regressions)}**")
    p("")
    if regressions:
        p("## Regressions")
        p("")
        for n in regressions:
            p(f"- `{n}`: {short(kcm[n][2]) or '(no message)'}")
        p("")
    p("## Specs")
    p("")
    p("| spec | upstream | kcm-rs | durations (upstream / kcm-rs) |")
    p("| --- | --- | --- | --- |")
    for n in regressions + other_fail + rest:
        r = None if ref is None else ref.get(n)
        k = None if kcm is None else kcm.get(n)
        conf = any(x is not None and x[3] for x in (r, k))
        dagger = "" if describe(n) in implemented else " †"
        label = n + (" [Conformance]" if conf else "")
        kc = cell(k) + (dagger if k is not None else "")
        p(f"| {label} | {cell(r)} | {kc} | {dur(r)} / {dur(k)} |")
    p("")
    failed_other = [n for n in other_fail if ref is not None and n in ref and ref[n][0] != PASS]
    if failed_other:
        p("## Failures under upstream")
        p("")
        for n in failed_other:
            p(f"- `{n}`: {short(ref[n][2]) or '(no message)'}")
        p("")
    try:
        with open(a.skipped, encoding="utf-8") as f:
            skipped = [l.rstrip("\n").split("\t") for l in f if l.strip()]
    except OSError:
        skipped = []
    if skipped:
        p("## Not run (hack/conformance/specs.txt)")
        p("")
        p("| spec | why |")
        p("| --- | --- |")
        for d, t, why in skipped:
            p(f"| {SIG} {d} {t} | {why} |")
        p("")
    print("\n".join(lines))
    # One cargo-style line per mode, so that .ci/run's closing count includes these specs.
    for label, rep in (("upstream", ref), ("kcm-rs", kcm)):
        if rep is not None:
            passed = sum(1 for v in rep.values() if v[0] == PASS)
            failed = len(rep) - passed
            verdict = "ok" if failed == 0 else "FAILED"
            print(f"test result: {verdict}. {passed} passed; {failed} failed; upstream sig-apps e2e specs under {label}",
                  file=sys.stderr)
    return 1 if regressions else 0


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("select")
    s.add_argument("--specs", required=True)
    s.add_argument("--tests", required=True)
    s.add_argument("--describes", default="Deployment ReplicaSet ReplicationController Job TTLAfterFinished CronJob")
    s.add_argument("--focus", default="")
    s.add_argument("--out", required=True)
    r = sub.add_parser("report")
    r.add_argument("--specs", required=True)
    r.add_argument("--skipped", default="")
    r.add_argument("--implemented", default="", help="the Describes of the controllers kcm-rs implements")
    r.add_argument("--controllers", default="", help="those controllers' names, for the header")
    r.add_argument("--reference")
    r.add_argument("--kcm-rs", dest="kcm_rs")
    r.add_argument("--version", default="")
    a = ap.parse_args()
    if a.cmd == "select":
        cmd_select(a)
        return 0
    return cmd_report(a)


if __name__ == "__main__":
    sys.exit(main())
