#!/usr/bin/env bash
# docker.bench_smoke: bench/docker_redis.sh (gVisor's Redis pass through
# Docker) still runs every pass and prints its table: one short run each
# (-n 300). The full benchmark is bench/'s only (bench/README.md).
# Usage: bench_smoke.sh SECCHECKD_BIN_DIR SOURCE_DIR CACHE_DIR
set -euo pipefail
bin=${1:?usage: bench_smoke.sh BIN_DIR SOURCE_DIR CACHE_DIR}
src=${2:?usage: bench_smoke.sh BIN_DIR SOURCE_DIR CACHE_DIR}
cache=${3:?usage: bench_smoke.sh BIN_DIR SOURCE_DIR CACHE_DIR}
out=$(mktemp -d /tmp/seccheckd-docker-benchsmoke-XXXXXX)
trap 'rm -rf "$out"' EXIT
if ! bash "$src/bench/docker_redis.sh" --runs 1 --requests 300 --clients 10 --timeout 120 --cache "$cache" --bin "$bin" \
    --out "$out/results" >"$out/log" 2>&1; then
    cat "$out/log"
    echo "FAIL: bench/docker_redis.sh failed"
    exit 1
fi
python3 - "$out/results/runs.jsonl" <<'PY' || { cat "$out/log"; exit 1; }
import json, sys
runs = {r["pass"]: r for r in map(json.loads, open(sys.argv[1]))}
bad = []
for p in ["baseline", "null", "sqlite", "discard", "python"]:
    r = runs.get(p)
    if not r or r.get("error") or not r.get("set") or not r.get("get"):
        bad.append("%s: %s" % (p, r and r.get("error") or "no SET/GET figure"))
    elif p in ("sqlite", "discard", "python") and not r.get("received"):
        bad.append("%s: the receiver counted no event" % p)
    else:
        print("ok   - %s: SET %s/s, GET %s/s%s" % (p, r["set"], r["get"],
              ", %s events received, %s dropped" % (r["received"], r.get("sandbox_dropped")) if r.get("received") else ""))
for b in bad:
    print("FAIL - " + b)
sys.exit(1 if bad else 0)
PY
grep -q "SET vs baseline" "$out/results/summary.md" || { echo "FAIL: no table in summary.md"; exit 1; }
echo "docker.bench_smoke: every pass ran and the table printed"
