#!/usr/bin/env bash
# scripts/image.sh - seccheckd's container image, built from Debian's packages
# without a registry: an image tarball that `docker load` (and containerd's
# `ctr images import`) take, tagged seccheckd:VERSION and seccheckd:latest.
#
#   layer 1  the runtime libraries of the packages scripts/setup.sh names,
#            with their dependencies, unpacked by mmdebstrap (variant
#            extract: no shell, no package manager, no maintainer scripts);
#            cached by its inputs
#   layer 2  the built programs (seccheckd, seccheck-dummy), the default
#            rules, a user seccheckd (65532) and its directories
#
# The image runs as seccheckd (65532:65532), entrypoint seccheckd; its labels
# say its version and source commit (org.opencontainers.image.*).
# deploy/kubernetes/seccheckd.yaml names it.
#
# Usage: scripts/image.sh [OUT.tar] [--bin DIR] [--cache DIR]
#   OUT.tar      the image tarball [build/seccheckd-image.tar]
#   --bin DIR    the built programs [build/bin]
#   --cache DIR  where layer 1 is kept between builds [build/image-cache]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=$src/build/seccheckd-image.tar bin=$src/build/bin cache=$src/build/image-cache
while [ $# -gt 0 ]; do
    case $1 in
        --bin) bin=${2:?--bin DIR}; shift 2 ;;
        --cache) cache=${2:?--cache DIR}; shift 2 ;;
        -h | --help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "image.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
        *) out=$1; shift ;;
    esac
done
die() { echo "image.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "needs root (mmdebstrap --mode=root, files owned by 65532)"
command -v mmdebstrap >/dev/null || die "mmdebstrap is not installed: apt-get install -y mmdebstrap (scripts/setup.sh has it)"
for p in seccheckd seccheck-dummy; do
    [ -x "$bin/$p" ] || die "$bin/$p missing: build first (scripts/setup.sh), or --bin DIR"
done

# The runtime package of each library scripts/setup.sh installs for the
# build. A -dev package added there without its runtime package here fails
# the build, so the image never lacks a library the programs link.
declare -A runtime_of=(
    [libuv1-dev]=libuv1 [libprotobuf-c-dev]=libprotobuf-c1 [libsqlite3-dev]=libsqlite3-0 [libssl-dev]=libssl3
    [libpq-dev]=libpq5 [libyaml-dev]=libyaml-0-2 [libre2-dev]=libre2-9 [libcurl4-openssl-dev]=libcurl4
    [libjansson-dev]=libjansson4 [libnats-dev]=libnats3.4 [libzstd-dev]=libzstd1
    [libcmocka-dev]=- [libclang-rt-14-dev]=-   # the tests' only, the fuzzer's
)
packages=(ca-certificates)   # https --alerts-url
for dev in $(sed -n '/^packages=(/,/^)/p' "$src/scripts/setup.sh" | grep -o 'lib[a-z0-9.+-]*-dev'); do
    [ -n "${runtime_of[$dev]:-}" ] || die "scripts/setup.sh names $dev: add its runtime package to runtime_of in $0"
    [ "${runtime_of[$dev]}" = - ] || packages+=("${runtime_of[$dev]}")
done

# A sanitizer build (scripts/test.sh's ASan stage) links its runtime: the image carries it too.
for lib in $(ldd "$bin/seccheckd" "$bin/seccheck-dummy" | grep -oE 'lib(asan|ubsan|tsan)\.so\.[0-9]+' | sort -u); do
    case $lib in
        libasan.so.8) packages+=(libasan8) ;;
        libubsan.so.1) packages+=(libubsan1) ;;
        libtsan.so.2) packages+=(libtsan2) ;;
        *) die "$bin links $lib: add its package to $0" ;;
    esac
done

version=$("$bin/seccheckd" --version | awk '{ print $2; exit }')
[ -n "$version" ] || die "cannot tell $bin/seccheckd's version"
commit=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
[ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] || commit+="-dirty"
work=$(mktemp -d /tmp/seccheckd-image-XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"

# ---- layer 1: Debian's packages (cached by its inputs) ----
key=$( { printf '%s\n' "${packages[@]}"; mmdebstrap --version; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources 2>/dev/null
         sed -n '/^# ---- layer 1/,/^# ---- layer 2/p' "$0"; } | sha256sum | cut -c1-16)
base=$cache/seccheckd-base-$key.tar
if [ ! -s "$base" ]; then
    echo "image.sh: layer 1: mmdebstrap bookworm, variant extract: ${packages[*]}" >&2
    # extract runs no maintainer scripts: the library cache and the CA bundle
    # are made here, as ldconfig and update-ca-certificates would.
    mmdebstrap --quiet --mode=root --variant=extract --include="$(IFS=,; echo "${packages[*]}")" \
        --customize-hook='printf "/usr/local/lib\n/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu\n" >"$1/etc/ld.so.conf"' \
        --customize-hook='ldconfig -r "$1"' \
        --customize-hook='mkdir -p "$1/etc/ssl/certs" && cat "$1"/usr/share/ca-certificates/mozilla/*.crt >"$1/etc/ssl/certs/ca-certificates.crt"' \
        --customize-hook='rm -rf "$1"/var/cache/apt "$1"/var/lib/apt/lists "$1"/usr/share/doc "$1"/usr/share/man' \
        bookworm "${base%.tar}.part.tar" || { rm -rf "${base%.tar}.part.tar"; die "mmdebstrap failed (network? see above)"; }
    mv "${base%.tar}.part.tar" "$base"
    find "$cache" -name 'seccheckd-base-*.tar' ! -name "${base##*/}" -delete
fi

# ---- layer 2: the programs, the rules, the user ----
stage=$work/stage
install -d -m 755 "$stage/usr/local/bin" "$stage/usr/share/seccheckd/rules" "$stage/etc"
install -m 755 "$bin/seccheckd" "$bin/seccheck-dummy" "$stage/usr/local/bin/"
install -m 644 "$src/configs/rules/gvisor_rules.yaml" "$stage/usr/share/seccheckd/rules/"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nseccheckd:x:65532:65532:seccheckd:/var/lib/seccheckd:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$stage/etc/passwd"
printf 'root:x:0:\nseccheckd:x:65532:\nnogroup:x:65534:\n' >"$stage/etc/group"
install -d -m 750 -o 65532 -g 65532 "$stage/var/lib/seccheckd" "$stage/run/seccheckd"
install -d -m 1777 "$stage/tmp"
tar --create --file "$work/app.tar" --numeric-owner --sort=name --mtime=@0 -C "$stage" .

# ---- the image tarball (docker save's format: manifest.json, a config, the layers) ----
python3 - "$out" "$version" "$commit" "$base" "$work/app.tar" <<'PY'
import hashlib, io, json, os, sys, tarfile

out, version, commit, *layers = sys.argv[1:]

def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()

diff_ids = [digest(p) for p in layers]
labels = {
    "org.opencontainers.image.title": "seccheckd",
    "org.opencontainers.image.description": "gVisor seccheck collector and detector",
    "org.opencontainers.image.version": version,
    "org.opencontainers.image.revision": commit,
    "org.opencontainers.image.base.name": "debian:bookworm (mmdebstrap, variant extract)",
}
config = {
    "architecture": "amd64", "os": "linux",
    "config": {"User": "65532:65532", "Entrypoint": ["/usr/local/bin/seccheckd"], "WorkingDir": "/var/lib/seccheckd",
               "Env": ["PATH=/usr/local/bin:/usr/bin:/bin"], "Labels": labels},
    "rootfs": {"type": "layers", "diff_ids": ["sha256:" + d for d in diff_ids]},
    "history": [{"created_by": "scripts/image.sh: Debian bookworm runtime libraries (mmdebstrap)"},
                {"created_by": "scripts/image.sh: seccheckd %s (%s)" % (version, commit)}],
}
config_bytes = json.dumps(config, sort_keys=True).encode()
config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
manifest = [{"Config": config_name, "RepoTags": ["seccheckd:" + version, "seccheckd:latest"],
             "Layers": [d + "/layer.tar" for d in diff_ids]}]

def add_bytes(t, name, data):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    t.addfile(info, io.BytesIO(data))

tmp = out + ".part"
with tarfile.open(tmp, "w", format=tarfile.PAX_FORMAT) as t:
    add_bytes(t, config_name, config_bytes)
    for d, path in zip(diff_ids, layers):
        t.add(path, arcname=d + "/layer.tar", recursive=False)
    add_bytes(t, "manifest.json", json.dumps(manifest).encode())
os.replace(tmp, out)
PY
echo "image.sh: wrote $out: seccheckd:$version and seccheckd:latest ($commit); docker load -i $out" >&2
