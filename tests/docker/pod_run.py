#!/usr/bin/env python3
"""A DaemonSet's pod spec as `docker run` arguments (tests/docker/daemonset.sh).

Usage: pod_run.py MANIFEST CONTAINER DATA_DIR

Prints, as JSON: {"args": [...docker run arguments before the image...],
"image": ..., "command": [...], "probe": {...} or null, "volumes": [...]}.
DATA_DIR/<volume> holds each configMap or Secret volume's files, written by
this script from the manifest (as kubelet writes them: the key's text, the
volume's defaultMode, the pod's fsGroup as group).

Every field of the pod spec and of the container must be one this script
knows how to run (or knows to be about scheduling only, named in
"not_run"); anything else fails, so the manifest cannot name a mount, a
path or an option the test does not exercise.
"""
import json
import os
import sys

import yaml

SCHEDULING_ONLY = {"priorityClassName", "tolerations", "dnsPolicy", "terminationGracePeriodSeconds", "nodeSelector"}
POD_KNOWN = SCHEDULING_ONLY | {"hostNetwork", "hostPID", "securityContext", "initContainers", "containers", "volumes"}
CONTAINER_KNOWN = {"name", "image", "imagePullPolicy", "command", "args", "env", "securityContext", "resources",
                   "livenessProbe", "volumeMounts"}


def die(msg):
    sys.exit("pod_run.py: " + msg)


def load(manifest):
    docs = [d for d in yaml.safe_load_all(open(manifest)) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    if len(by_kind.get("DaemonSet", [])) != 1:
        die("expected one DaemonSet in %s" % manifest)
    return by_kind


def cpu(v):
    v = str(v)
    return float(v[:-1]) / 1000 if v.endswith("m") else float(v)


def mem(v):
    v = str(v)
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for u, m in units.items():
        if v.endswith(u):
            return int(float(v[:-2]) * m)
    return int(v)


def write_volume(data_dir, vol, by_kind, fs_group):
    """A configMap or Secret volume's files, as kubelet writes them; its directory."""
    d = os.path.join(data_dir, vol["name"])
    os.makedirs(d, exist_ok=True)
    if "configMap" in vol:
        src = [c for c in by_kind.get("ConfigMap", []) if c["metadata"]["name"] == vol["configMap"]["name"]]
        files, mode = (src[0]["data"] if src else None), vol["configMap"].get("defaultMode", 0o644)
    else:
        src = [s for s in by_kind.get("Secret", []) if s["metadata"]["name"] == vol["secret"]["secretName"]]
        files, mode = (src[0].get("stringData") if src else None), vol["secret"].get("defaultMode", 0o644)
    if not files:
        die("volume %s names a ConfigMap or Secret the manifest does not hold" % vol["name"])
    for key, text in files.items():
        path = os.path.join(d, key)
        if not os.path.exists(path):   # the test may have written its own value (a Secret's URL)
            with open(path, "w") as f:
                f.write(text)
        os.chmod(path, mode)
        os.chown(path, 0, fs_group if fs_group is not None else 0)
    os.chmod(d, 0o755)
    return d


def main():
    manifest, name, data_dir = sys.argv[1:4]
    by_kind = load(manifest)
    pod = by_kind["DaemonSet"][0]["spec"]["template"]["spec"]
    unknown = set(pod) - POD_KNOWN
    if unknown:
        die("the pod spec has %s: tests/docker/pod_run.py does not run it" % sorted(unknown))
    containers = pod.get("initContainers", []) + pod["containers"]
    c = [x for x in containers if x["name"] == name]
    if not c:
        die("no container %s" % name)
    c = c[0]
    unknown = set(c) - CONTAINER_KNOWN
    if unknown:
        die("container %s has %s: tests/docker/pod_run.py does not run it" % (name, sorted(unknown)))
    pod_sc, sc = pod.get("securityContext", {}), c.get("securityContext", {})
    for key in set(pod_sc) - {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "seccompProfile"}:
        die("pod securityContext.%s is not run" % key)
    for key in set(sc) - {"runAsUser", "runAsGroup", "runAsNonRoot", "readOnlyRootFilesystem",
                          "allowPrivilegeEscalation", "capabilities"}:
        die("container %s securityContext.%s is not run" % (name, key))
    user = sc.get("runAsUser", pod_sc.get("runAsUser"))
    group = sc.get("runAsGroup", pod_sc.get("runAsGroup", user))
    non_root = sc.get("runAsNonRoot", pod_sc.get("runAsNonRoot", False))
    if non_root and (user is None or user == 0):
        die("container %s: runAsNonRoot with user %s: kubelet would refuse it" % (name, user))
    args = ["--name", "pod-" + name, "--user", "%d:%d" % (user, group)]
    fs_group = pod_sc.get("fsGroup")
    if fs_group is not None:
        args += ["--group-add", str(fs_group)]
    if pod_sc.get("seccompProfile", {}).get("type") not in (None, "RuntimeDefault"):
        die("seccompProfile other than RuntimeDefault is not run")   # Docker's default profile is RuntimeDefault
    args += ["--network", "host" if pod.get("hostNetwork") else "none"]
    if pod.get("hostPID"):
        args += ["--pid", "host"]
    if sc.get("readOnlyRootFilesystem"):
        args.append("--read-only")
    if sc.get("allowPrivilegeEscalation") is False:
        args += ["--security-opt", "no-new-privileges"]
    caps = sc.get("capabilities", {})
    for cap in caps.get("drop", []):
        args += ["--cap-drop", cap]
    for cap in caps.get("add", []):
        args += ["--cap-add", cap]
    for e in c.get("env", []):
        if set(e) != {"name", "value"}:
            die("env %s: only name/value is run" % e)
        args += ["--env", "%s=%s" % (e["name"], e["value"])]
    res = c.get("resources", {})
    for key in set(res) - {"requests", "limits"}:
        die("resources.%s is not run" % key)
    lim, req = res.get("limits", {}), res.get("requests", {})
    if "cpu" in lim:
        args += ["--cpus", str(cpu(lim["cpu"]))]
    if "memory" in lim:
        args += ["--memory", str(mem(lim["memory"]))]
    if "cpu" in req:
        args += ["--cpu-shares", str(max(2, int(cpu(req["cpu"]) * 1024)))]   # kubelet's shares for a request
    if "memory" in req:
        args += ["--memory-reservation", str(mem(req["memory"]))]
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    used = []
    for m in c.get("volumeMounts", []):
        if set(m) - {"name", "mountPath", "readOnly"}:
            die("volumeMount %s: only name, mountPath, readOnly are run" % m)
        v = volumes.get(m["name"]) or die("volumeMount %s names no volume" % m["name"])
        if "hostPath" in v:
            src = v["hostPath"]["path"]
            kind = v["hostPath"].get("type", "")
            if kind == "DirectoryOrCreate":
                os.makedirs(src, exist_ok=True)
            elif kind == "Directory" and not os.path.isdir(src):
                die("hostPath %s (Directory) does not exist: kubelet would not start the pod" % src)
            elif kind not in ("DirectoryOrCreate", "Directory"):
                die("hostPath type %s is not run" % kind)
        elif "configMap" in v or "secret" in v:
            src = write_volume(data_dir, v, by_kind, fs_group)
        else:
            die("volume %s: only hostPath, configMap and secret are run" % m["name"])
        args += ["--mount", "type=bind,source=%s,target=%s%s" % (src, m["mountPath"], ",readonly" if m.get("readOnly") else "")]
        used.append(m["name"])
    command = c.get("command", []) + c.get("args", [])
    entry = []
    if c.get("command"):
        entry = ["--entrypoint", c["command"][0]]
        command = c["command"][1:] + c.get("args", [])
    probe = c.get("livenessProbe")
    if probe:
        for key in set(probe) - {"httpGet", "initialDelaySeconds", "periodSeconds", "timeoutSeconds",
                                 "failureThreshold"}:
            die("livenessProbe.%s is not run" % key)
    json.dump({"args": args + entry, "image": c["image"], "command": command, "probe": probe, "volumes": used,
               "all_volumes": sorted(volumes), "containers": [x["name"] for x in containers],
               "not_run": sorted(SCHEDULING_ONLY & set(pod))}, sys.stdout)


if __name__ == "__main__":
    main()
