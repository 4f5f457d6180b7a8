"""The side-by-side workloads, each defined once in WORKLOADS: its sizes per scale, the controllers both
processes run for it, how it runs, its title and what its event -> action latency measures.

A workload's `run(api, ns, size, ev)` applies its objects in namespace `ns`, waits for them to settle
and returns (converge seconds or None, latencies in seconds), the latencies computed from the watch
events the runner recorded in `ev` ({"pods", "rs", "deploy", "jobs", "configmaps"}: lists of (monotonic time, type,
object)). Adding a workload means adding one Workload below."""
import collections
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Callable, Optional

from api import Watch, log, ns_path, wait_until
from shapes import batch_workload, rollout_workload

# The sizes a pass runs at: "full" is the target workload list, "small" fits a 2-core pass at qps
# 20/30 in about 15 minutes, "tiny" is CI's check that the runner starts.
SCALES = ("full", "small", "tiny")


@dataclass(frozen=True)
class Workload:
    name: str  # its --workloads key; also in the namespace and log file names
    controllers: str  # the --controllers both processes run
    sizes: dict  # scale -> the size `run` and `describe` take
    describe: Callable  # size -> the table's title
    latency: str  # what its event -> action figure measures ("–": none)
    run: Callable  # (api, ns, size, ev) -> (converge seconds or None, latencies)
    # Objects made before the runner's watches and the controller start: (api, ns, size).
    prepare: Optional[Callable] = None
    # The process's CPU counted from its start instead of from when it is healthy (+2 s): for a
    # workload whose work is the first list, done before that window opens.
    cpu_from_start: bool = False
    # Whether a pass without --workloads runs it. The garbage collector's needs a control plane whose
    # own kube-controller-manager does not collect too (hack/bench.sh starts one when it is asked for).
    by_default: bool = True


def owner_uid(obj):
    for r in obj["metadata"].get("ownerReferences") or []:
        if r.get("controller"):
            return r["uid"]
    return None


def pod_template(app, extra_labels=None):
    labels = {"app": app, **(extra_labels or {})}
    return {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def terminating(event_type, obj):
    return event_type == "DELETED" or bool(obj["metadata"].get("deletionTimestamp"))


def reaction(events, trigger, answer, key):
    lat, pending = [], {}
    for t, ty, o in events:
        k = key(o)
        if trigger(ty, o):
            pending.setdefault(k, t)
        elif answer(ty, o) and k in pending:
            lat.append(t - pending.pop(k))
    return lat


# --- rs: ReplicaSets created, then one pod of each deleted.

def rs_workload(api, ns, size, ev):
    n, pods = size
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


def all_rs_ready(api, ns, pods, n):
    items = api.get(ns_path(ns, "apps/v1", "replicasets"))["items"]
    return len(items) >= n and all((i.get("status") or {}).get("readyReplicas", 0) == pods
                                   and i["spec"]["replicas"] == pods for i in items)


# --- scale: one ReplicaSet scaled up from 0 and back.

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


# --- deploy: Deployments created, then a rolling image update of all.

def deploy_workload(api, ns, size, ev):
    n, pods = size
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
    return deployments_done(api.get(ns_path(ns, "apps/v1", "deployments"))["items"], pods, n, generation)


def deployments_done(items, pods, n, generation):
    """At least n Deployments, each of `pods` replicas rolled out at `generation`."""
    if len(items) < n:
        return False
    for d in items:
        s = d.get("status") or {}
        if (s.get("observedGeneration") != generation or s.get("updatedReplicas") != pods
                or s.get("availableReplicas") != pods or s.get("replicas") != pods):
            return False
    return True


# --- jobs: Jobs run to completion.

def jobs_workload(api, ns, size, ev):
    n, completions, parallelism = size
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


# --- gc: owners deleted, their dependents collected (the garbage collector alone).

def gc_objects(api, ns, size):
    """`owners` ConfigMaps, each with `per` dependent ConfigMaps that name it as their controller,
    made before the collector starts: its first lists are part of its work."""
    owners, per = size
    path = ns_path(ns, "", "configmaps")

    def family(i):
        owner = api.post(path, {"metadata": {"name": f"owner-{i}"}})
        ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": f"owner-{i}", "uid": owner["metadata"]["uid"],
               "controller": True, "blockOwnerDeletion": True}
        for j in range(per):
            api.post(path, {"metadata": {"name": f"dep-{i}-{j}", "ownerReferences": [ref]}})
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(family, range(owners)))


def gc_workload(api, ns, size, ev):
    owners, per = size
    path = ns_path(ns, "", "configmaps")
    # The collector's first lists end while the runner waits for it to be healthy; a dependent deleted
    # before it has its graph would not be in this measurement. A few seconds more, as both processes
    # get them.
    time.sleep(5)
    mark = len(ev["configmaps"])
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.delete(f"{path}/owner-{i}"), range(owners)))

    def left():
        return sum(1 for c in api.get(path)["items"] if c["metadata"]["name"].startswith("dep-"))
    wait_until("dependents collected", lambda: left() == 0, 1800)
    converge = time.monotonic() - t0
    # Reaction: an owner's DELETED event -> the last of its dependents' DELETED events.
    gone_owner, last_dependent = {}, {}
    for t, ty, o in ev["configmaps"][mark:]:
        if ty != "DELETED":
            continue
        name = o["metadata"]["name"]
        if name.startswith("owner-"):
            gone_owner[name] = t
        elif name.startswith("dep-"):
            owner = "owner-" + name.split("-")[1]
            last_dependent[owner] = max(t, last_dependent.get(owner, t))
    lat = [last_dependent[o] - t for o, t in gone_owner.items() if o in last_dependent]
    return converge, lat


# --- idle: a still cache of bare pods; memory and the first list's CPU only.

# How long the idle pods must go unchanged before the idle workload starts its controller.
QUIET_S = 5


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


def idle_workload(api, ns, size, ev):
    time.sleep(10)
    return None, []


WORKLOADS = {w.name: w for w in (
    Workload(
        name="rs",
        controllers="replicaset-controller",
        sizes={"full": (100, 50), "small": (20, 25), "tiny": (2, 3)},
        describe=lambda size: f"{size[0]} ReplicaSets x {size[1]} pods, then one pod of each deleted",
        latency="pod deleted -> replacement created",
        run=rs_workload,
    ),
    Workload(
        name="scale",
        controllers="replicaset-controller",
        sizes={"full": 3000, "small": 500, "tiny": 10},
        describe=lambda size: f"1 ReplicaSet scaled 0 -> {size} -> 0",
        latency="spec.replicas changed -> first pod created/deleted",
        run=scale_workload,
    ),
    Workload(
        name="deploy",
        controllers="deployment-controller,replicaset-controller",
        sizes={"full": (100, 20), "small": (20, 10), "tiny": (2, 2)},
        describe=lambda size: f"{size[0]} Deployments x {size[1]} pods, then a rolling image update of all",
        latency="template changed -> new ReplicaSet created",
        run=deploy_workload,
    ),
    Workload(
        name="jobs",
        controllers="job-controller",
        sizes={"full": (200, 10, 5), "small": (40, 10, 5), "tiny": (2, 2, 1)},
        describe=lambda size: f"{size[0]} Jobs x {size[1]} completions, parallelism {size[2]}",
        latency="pod Succeeded -> Job's next write",
        run=jobs_workload,
    ),
    Workload(
        name="batch",
        controllers="job-controller",
        sizes={"full": 1000, "small": 200, "tiny": 3},
        describe=lambda size: f"batch (clusterloader2's shape): {size} Jobs of one pod",
        latency="Job created -> Complete",
        run=batch_workload,
    ),
    Workload(
        name="rollout",
        controllers="deployment-controller,replicaset-controller",
        sizes={"full": 500, "small": 200, "tiny": 3},
        describe=lambda size: f"rollout: {size} Deployments of one pod, then all templates changed",
        latency="template changed -> rollout complete",
        run=rollout_workload,
    ),
    Workload(
        name="gc",
        controllers="garbage-collector-controller",
        sizes={"full": (500, 20), "small": (100, 20), "tiny": (3, 2)},
        describe=lambda size: f"gc: {size[0]} owners x {size[1]} dependents, then the owners deleted",
        latency="owner deleted -> its last dependent deleted",
        run=gc_workload,
        prepare=gc_objects,
        cpu_from_start=True,
        by_default=False,
    ),
    Workload(
        name="idle",
        controllers="replicaset-controller",
        sizes={"full": 20000, "small": 5000, "tiny": 50},
        describe=lambda size: f"idle: {size} cached pods (memory only)",
        latency="–",
        run=idle_workload,
        prepare=idle_pods,
        cpu_from_start=True,
    ),
)}
