"""What the sharded runner (sharded.py) does to the cluster and reads from outside the processes: the
bytes each process received from the API server, a wave of Deployments across the namespaces, and a
probe ReplicaSet that times how long a failover leaves a namespace without a controller.
Standard library only."""
import re
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor

from api import log, ns_path, wait_until
from workloads import deployments_done

#: Labels the runner's own objects carry, to list them across namespaces.
WAVE_LABEL = "bench-wave"
PROBE = "probe"


def received_bytes(api_port):
    """{pid: bytes} each process received on its open connections to the API server (TCP
    bytes_received from `ss -tinp`): list answers and watch events alike. Connections closed meanwhile
    are not counted; the processes keep one HTTP/2 connection each."""
    out = subprocess.run(["ss", "-tinpH", "dst", f"127.0.0.1:{api_port}"], capture_output=True, text=True,
                         check=True).stdout
    return bytes_by_pid(out)


def bytes_by_pid(out):
    """Sums `ss -tinpH`'s bytes_received by the pid owning each socket."""
    by_pid = {}
    # One record per socket: a line with users:((...pid=N...)) and indented lines with its tcp_info.
    for record in re.split(r"\n(?=\S)", out):
        pid = re.search(r"pid=(\d+)", record)
        got = re.search(r"bytes_received:(\d+)", record)
        if pid and got:
            by_pid[int(pid.group(1))] = by_pid.get(int(pid.group(1)), 0) + int(got.group(1))
    return by_pid


def template(app, image="nginx"):
    return {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": image}]}}


def deploy_wave(api, namespaces, name, pods):
    """A Deployment `name` of `pods` replicas in every namespace, available; then a rolling image update
    of all of them, complete. Returns the seconds both took."""
    t0 = time.monotonic()

    def create(ns):
        api.post(ns_path(ns, "apps/v1", "deployments"), {
            "metadata": {"name": name, "labels": {WAVE_LABEL: name}},
            "spec": {"replicas": pods, "selector": {"matchLabels": {"app": name}}, "template": template(name)}})

    def roll(ns):
        api.patch(f"{ns_path(ns, 'apps/v1', 'deployments')}/{name}",
                  {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}}})

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(create, namespaces))
    wait_until(f"{len(namespaces)} Deployments available", lambda: wave_done(api, name, pods, 1, len(namespaces)), 1800)
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(roll, namespaces))
    wait_until("their rollouts complete", lambda: wave_done(api, name, pods, 2, len(namespaces)), 1800)
    return time.monotonic() - t0


def wave_done(api, name, pods, generation, count):
    items = api.get(f"/apis/apps/v1/deployments?labelSelector={WAVE_LABEL}%3D{name}")["items"]
    return deployments_done(items, pods, count, generation)


def remove_wave(api, namespaces, name):
    """Deletes the wave's Deployments and waits for their pods to be gone (the garbage collector)."""
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(lambda ns: api.delete(f"{ns_path(ns, 'apps/v1', 'deployments')}/{name}"), namespaces))
    wait_until("the wave's pods gone", lambda: not api.get(f"/api/v1/pods?labelSelector=app%3D{name}")["items"], 600)


def create_probes(api, namespaces):
    """A ReplicaSet `probe` of 0 replicas in every namespace."""
    def create(ns):
        api.post(ns_path(ns, "apps/v1", "replicasets"), {
            "metadata": {"name": PROBE},
            "spec": {"replicas": 0, "selector": {"matchLabels": {"app": PROBE}}, "template": template(PROBE)}})
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(create, namespaces))


def probe_pods(api, ns):
    return len(api.get(f"{ns_path(ns, '', 'pods')}?labelSelector=app%3D{PROBE}")["items"])


def scale_probe(api, ns, replicas, timeout=600):
    """Scales namespace ns's probe to `replicas` and returns the seconds until that many probe pods exist,
    polled every 0.2 s."""
    t0 = time.monotonic()
    api.patch(f"{ns_path(ns, 'apps/v1', 'replicasets')}/{PROBE}", {"spec": {"replicas": replicas}})
    deadline = t0 + timeout
    while probe_pods(api, ns) < replicas:
        if time.monotonic() > deadline:
            raise RuntimeError(f"probe in {ns} not at {replicas} pods after {timeout}s")
        time.sleep(0.2)
    return time.monotonic() - t0


def failover_probe(api, ns, kill, replicas):
    """kill() (a kill -9) and, at that moment, the probe of ns scaled to `replicas`: the seconds until
    the pod it asks for exists, which only a controller that took over can create."""
    kill()
    secs = scale_probe(api, ns, replicas)
    log(f"probe in {ns}: {replicas} pods {secs:.1f} s after the kill")
    return secs
