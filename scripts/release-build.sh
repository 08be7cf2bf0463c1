#!/usr/bin/env bash
# The release build: static, reproducible binaries with the version, commit and
# date stamped into main.version, main.commit and main.date. The Dockerfile
# runs this very script, so a local release build and the image's binary come
# from the same command (internal/deploytest checks it).
#
#   scripts/release-build.sh [OUTDIR [COMMAND...]]
#   scripts/release-build.sh --archive OUTDIR
#
#   OUTDIR    where the binaries go (default: bin)
#   COMMAND   directories under cmd/ to build (default: collector)
#   --archive the release archive of the collector for GOOS/GOARCH:
#             OUTDIR/collector_VERSION_GOOS_GOARCH.tar.gz, holding the binary,
#             LICENSE, README.md and configs/collector.yaml in a directory of
#             the same name, and OUTDIR/SHA256SUMS (sha256sum format) over
#             every collector_*.tar.gz in OUTDIR, rewritten each time. Run it
#             once per platform into one OUTDIR. The archive is reproducible:
#             fixed order, owner and times (DATE).
#
# Environment (all optional):
#   VERSION   default: the file VERSION (e.g. 0.1.0) when HEAD is its tag
#             v0.1.0 and the tree is clean, else VERSION-dev (0.1.0-dev)
#   COMMIT    default: git rev-parse HEAD, else "unknown"
#   DATE      default: the commit's time (UTC, RFC 3339), else now; a fixed
#             date keeps the build reproducible
#   GOOS, GOARCH   cross-compile (the Dockerfile sets them from TARGETPLATFORM)
#
# Examples:
#   scripts/release-build.sh bin && bin/collector version
#   for p in linux/amd64 linux/arm64; do
#     GOOS=${p%/*} GOARCH=${p#*/} scripts/release-build.sh --archive dist
#   done        # scripts/release.sh does this for every platform
#   (cd dist && sha256sum -c SHA256SUMS)
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
archive=false
if [[ "${1:-}" == "--archive" ]]; then
	archive=true
	shift
	[[ $# -eq 1 && -n "$1" ]] || { echo "usage: release-build.sh --archive OUTDIR" >&2; exit 2; }
fi
out="${1:-bin}"
shift || true
commands=("$@")
[[ ${#commands[@]} -gt 0 ]] || commands=(collector)

git_() { git -C "$repo" "$@" 2>/dev/null; }
# The one place the version is written: VERSION (version.go embeds it too).
file_version="$(tr -d '[:space:]' < "$repo/VERSION")"
default_version="$file_version-dev"
if [[ "$(git_ describe --tags --exact-match --dirty || true)" == "v$file_version" ]]; then
	default_version="$file_version"
fi
version="${VERSION:-$default_version}"
commit="${COMMIT:-$(git_ rev-parse HEAD || echo unknown)}"
date="${DATE:-$(TZ=UTC git_ log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ || date -u +%Y-%m-%dT%H:%M:%SZ)}"
for v in "$version" "$commit" "$date"; do
	# -X takes one word: a space or quote would break the stamp.
	[[ "$v" =~ ^[A-Za-z0-9._:+/-]+$ ]] || { echo "release-build.sh: invalid stamp value '$v'" >&2; exit 2; }
done

mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$repo"

build() { # build COMMAND DEST
	CGO_ENABLED=0 go build -trimpath -buildvcs=false \
		-ldflags "-s -w -X main.version=$version -X main.commit=$commit -X main.date=$date" \
		-o "$2" "./cmd/$1"
}

if $archive; then
	goos="${GOOS:-$(go env GOOS)}"
	goarch="${GOARCH:-$(go env GOARCH)}"
	[[ "$version" != */* ]] || { echo "release-build.sh: version '$version' cannot name a file" >&2; exit 2; }
	name="collector_${version}_${goos}_${goarch}"
	exe=collector
	[[ "$goos" != windows ]] || exe=collector.exe
	stage="$(mktemp -d)"
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage/$name/configs"
	chmod 0755 "$stage/$name" "$stage/$name/configs"
	GOOS="$goos" GOARCH="$goarch" build collector "$stage/$name/$exe"
	cp LICENSE README.md "$stage/$name/"
	cp configs/collector.yaml "$stage/$name/configs/"
	chmod 0755 "$stage/$name/$exe"
	chmod 0644 "$stage/$name/LICENSE" "$stage/$name/README.md" "$stage/$name/configs/collector.yaml"
	# Reproducible: sorted names, numeric root owner, every time set to DATE,
	# no name or time in the gzip header.
	tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
		--mtime="$date" --format=gnu -cf - "$name" | gzip -9n > "$out/$name.tar.gz.tmp"
	mv "$out/$name.tar.gz.tmp" "$out/$name.tar.gz"
	(cd "$out" && shopt -s nullglob && files=(collector_*.tar.gz) && sha256sum "${files[@]}" > SHA256SUMS)
	echo "release-build.sh: $out/$name.tar.gz ($version, $commit, $date), $out/SHA256SUMS" >&2
	exit 0
fi

for c in "${commands[@]}"; do
	[[ -d "cmd/$c" ]] || { echo "release-build.sh: no such command cmd/$c" >&2; exit 2; }
	build "$c" "$out/$c"
	echo "release-build.sh: $out/$c ($version, $commit, $date)" >&2
done
