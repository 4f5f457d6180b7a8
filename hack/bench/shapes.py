"""Two of clusterloader2's standard shapes as workloads of the runner, with enough objects that a p99
means something (at least 200 samples in a `small` pass): the batch shape's Job lifecycle (created ->
Complete, as its job-lifecycle latency measures it) and a Deployment rollout (template changed -> the
rollout complete, every new pod Ready and available). Registered in workloads.WORKLOADS."""
import time
from concurrent.futures import ThreadPoolExecutor

from api import ns_path, wait_until


def has_condition(obj, type_):
    return any(c.get("type") == type_ and c.get("status") == "True"
               for c in (obj.get("status") or {}).get("conditions") or [])


def lifecycle(events, started, finished):
    """Per object (by UID), the time from the first event where `started(type, obj)` holds to the first
    later one where `finished(type, obj)` does; objects that never finish give no sample."""
    begin, lat = {}, []
    for t, ty, o in events:
        uid = o["metadata"]["uid"]
        if uid not in begin:
            if started(ty, o):
                begin[uid] = t
        elif begin[uid] is not None and finished(ty, o):
            lat.append(t - begin[uid])
            begin[uid] = None
    return lat


def batch_workload(api, ns, size, ev):
    """`size` Jobs of one pod each, created together; each Job's latency is its creation -> Complete."""
    path = ns_path(ns, "batch/v1", "jobs")
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.post(path, {
            "metadata": {"name": f"b-{i}"},
            "spec": {"template": {"spec": {"restartPolicy": "Never",
                                           "containers": [{"name": "c", "image": "busybox"}]}}}}), range(size)))

    def done():
        items = api.get(path)["items"]
        return len(items) == size and all(has_condition(j, "Complete") for j in items)
    wait_until("Jobs complete", done, 1800)
    converge = time.monotonic() - t0
    return converge, lifecycle(ev["jobs"], lambda ty, o: ty == "ADDED",
                               lambda ty, o: has_condition(o, "Complete"))


def rolled_out(obj, generation):
    """The Deployment's rollout of `generation` complete: every replica updated and available, none
    of the old left."""
    s = obj.get("status") or {}
    want = (obj.get("spec") or {}).get("replicas", 1)
    return (s.get("observedGeneration") == generation and s.get("updatedReplicas") == want
            and s.get("availableReplicas") == want and s.get("replicas") == want)


def rollout_workload(api, ns, size, ev):
    """`size` Deployments of one pod, available; then all their templates changed together. Each
    Deployment's latency is its template change -> its rollout complete."""
    path = ns_path(ns, "apps/v1", "deployments")
    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.post(path, {
            "metadata": {"name": f"r-{i}"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": f"r-{i}"}},
                     "template": {"metadata": {"labels": {"app": f"r-{i}"}},
                                  "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}}), range(size)))

    def all_at(generation):
        items = api.get(path)["items"]
        return len(items) == size and all(rolled_out(d, generation) for d in items)
    wait_until("Deployments available", lambda: all_at(1), 1800)
    mark = len(ev["deploy"])
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda i: api.patch(f"{path}/r-{i}", {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "image": "nginx:2"}]}}}}), range(size)))
    wait_until("rollouts complete", lambda: all_at(2), 1800)
    converge = time.monotonic() - t0
    return converge, lifecycle(ev["deploy"][mark:],
                               lambda ty, o: ty == "MODIFIED" and o["metadata"].get("generation") == 2,
                               lambda ty, o: rolled_out(o, 2))
