#!/usr/bin/env python3
"""deploy/: the Kubernetes manifests and the container file name what exists.

  - every manifest parses (YAML), the Deployment's, Service's and InferencePool's selectors
    and ports agree with each other and with the ConfigMap's serve.toml;
  - serve.toml passes `specd check-config` (its model paths pointed at the shipped models);
  - `specd serve` with that configuration (loopback, free ports) answers the probes' paths:
    the liveness path 200, the readiness path 200 once loaded;
  - the grace period covers preStop, drain_timeout_s and the last answers;
  - the container file's make targets exist.

Usage: manifests_test.py SPECD  (exit 77 = skipped: no python3-yaml, or no shipped models)
"""

import os
import re
import subprocess
import sys
import tempfile
import tomllib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench",
                                "serve"))
import specd_server as ss  # noqa: E402
from specd_server import check, verdict, free_port  # noqa: E402

try:
    import yaml
except ImportError as e:
    print("skipped: %s (apt-get install python3-yaml)" % e)
    sys.exit(77)


def port_of(endpoint):
    return int(endpoint.rsplit(":", 1)[1])


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    specd = sys.argv[1]
    models = os.path.join(ss.ROOT, "models")
    if not os.path.exists(os.path.join(models, "target.gguf")):
        print("skipped: no shipped models")
        return 77
    with open(os.path.join(ss.ROOT, "deploy", "kubernetes", "specd.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    by_kind = {d["kind"]: d for d in docs}
    for kind in ("ConfigMap", "Deployment", "Service", "NetworkPolicy", "InferencePool",
                 "InferenceObjective"):
        check(kind in by_kind, "no %s in deploy/kubernetes/specd.yaml" % kind)
    toml_text = by_kind["ConfigMap"]["data"]["serve.toml"]
    config = tomllib.loads(toml_text)
    server = config["server"]
    deployment = by_kind["Deployment"]
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(deployment["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the Deployment's selector does not match its pods")
    check(by_kind["Service"]["spec"]["selector"].items() <= labels.items(),
          "the Service's selector does not match the pods")
    pool = by_kind["InferencePool"]
    check(pool["spec"]["selector"]["matchLabels"].items() <= labels.items(),
          "the InferencePool's selector does not match the pods")
    check(by_kind["InferenceObjective"]["spec"]["poolRef"]["name"] == pool["metadata"]["name"],
          "the InferenceObjective names another pool")
    container = pod["spec"]["containers"][0]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(ports.get("http") == server["port"], "the http port is not [server] port")
    check(ports.get("kv-events") == port_of(server["kv_events_endpoint"]),
          "the kv-events port is not kv_events_endpoint's")
    check(ports.get("kv-replay") == port_of(server["kv_events_replay_endpoint"]),
          "the kv-replay port is not kv_events_replay_endpoint's")
    check([p["number"] for p in pool["spec"]["targetPorts"]] == [server["port"]],
          "the InferencePool's target port is not [server] port")
    for p in by_kind["Service"]["spec"]["ports"]:
        check(p["targetPort"] in ports, "the Service targets an unnamed port %r" % p["targetPort"])
    policy = by_kind["NetworkPolicy"]["spec"]
    check(policy["podSelector"]["matchLabels"].items() <= labels.items(),
          "the NetworkPolicy does not select the pods")
    guarded = {p["port"] for rule in policy["ingress"] if "from" in rule for p in rule["ports"]}
    check(guarded == {ports["kv-events"], ports["kv-replay"]},
          "the NetworkPolicy does not guard the KV events' ports")
    pre_stop = int(container["lifecycle"]["preStop"]["exec"]["command"][-1])
    check(pod["spec"]["terminationGracePeriodSeconds"] > pre_stop + server["drain_timeout_s"] + 5,
          "the grace period does not cover preStop + drain_timeout_s + 5 s")

    work = tempfile.mkdtemp(prefix="specd-deploy-")
    path = os.path.join(work, "serve.toml")
    with open(path, "w") as f:
        f.write(toml_text)
    sets = ["target.model=" + os.path.join(models, "target.gguf"),
            "proposer.model=" + os.path.join(models, "draft.gguf")]
    r = subprocess.run([specd, "check-config", path] + [a for s in sets for a in ("--set", s)],
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0, "specd check-config: %s%s" % (r.stdout, r.stderr))

    # Served as the pod would be, on loopback and free ports: the probes answer.
    local = toml_text.replace('host = "0.0.0.0"', 'host = "127.0.0.1"')
    local = re.sub(r"^port = \d+", "port = 0", local, flags=re.M)
    local = local.replace("tcp://0.0.0.0:5557", "tcp://127.0.0.1:%d" % free_port())
    local = local.replace("tcp://0.0.0.0:5558", "tcp://127.0.0.1:%d" % free_port())
    local = local.replace("/models/", models + "/").replace("threads = 4", "threads = 1")
    with open(path, "w") as f:
        f.write(local)
    with ss.Server(specd, path) as served:
        for probe in ("livenessProbe", "readinessProbe"):
            route = container[probe]["httpGet"]["path"]
            status, body = ss.request(served.port, "GET", route)
            check(status == 200, "%s %s: %s %s" % (probe, route, status, body))
        check(served.stop() == 0, "the server did not drain and exit 0")

    with open(os.path.join(ss.ROOT, "deploy", "Containerfile")) as f:
        containerfile = f.read()
    with open(os.path.join(ss.ROOT, "Makefile")) as f:
        targets = set(re.findall(r"^([\w-]+):", f.read(), flags=re.M))
    used = re.findall(r"^\s*make ([\w-]+)", containerfile, flags=re.M)
    check(len(used) >= 2, "the Containerfile's make targets were not found")
    for target in used:
        check(target in targets, "the Containerfile runs `make %s`, which is no target" % target)
    return verdict("manifests_test")


if __name__ == "__main__":
    sys.exit(main())
