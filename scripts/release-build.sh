#!/usr/bin/env bash
# The release build: static, reproducible binaries with the version, commit and
# date stamped into main.version, main.commit and main.date. The Dockerfile
# runs this very script, so a local release build and the image's binary come
# from the same command (internal/deploytest checks it).
#
#   scripts/release-build.sh [OUTDIR [COMMAND...]]
#
#   OUTDIR    where the binaries go (default: bin)
#   COMMAND   directories under cmd/ to build (default: collector)
#
# Environment (all optional):
#   VERSION   default: git describe --tags --always --dirty, else "dev"
#   COMMIT    default: git rev-parse HEAD, else "unknown"
#   DATE      default: the commit's time (UTC, RFC 3339), else now; a fixed
#             date keeps the build reproducible
#   GOOS, GOARCH   cross-compile (the Dockerfile sets them from TARGETPLATFORM)
#
# Example:
#   scripts/release-build.sh bin && bin/collector version
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-bin}"
shift || true
commands=("$@")
[[ ${#commands[@]} -gt 0 ]] || commands=(collector)

git_() { git -C "$repo" "$@" 2>/dev/null; }
version="${VERSION:-$(git_ describe --tags --always --dirty || echo dev)}"
commit="${COMMIT:-$(git_ rev-parse HEAD || echo unknown)}"
date="${DATE:-$(TZ=UTC git_ log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ || date -u +%Y-%m-%dT%H:%M:%SZ)}"
for v in "$version" "$commit" "$date"; do
	# -X takes one word: a space or quote would break the stamp.
	[[ "$v" =~ ^[A-Za-z0-9._:+/-]+$ ]] || { echo "release-build.sh: invalid stamp value '$v'" >&2; exit 2; }
done

mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$repo"
for c in "${commands[@]}"; do
	[[ -d "cmd/$c" ]] || { echo "release-build.sh: no such command cmd/$c" >&2; exit 2; }
	CGO_ENABLED=0 go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date" \
		-o "$out/$c" "./cmd/$c"
	echo "release-build.sh: $out/$c ($version, $commit, $date)" >&2
done
