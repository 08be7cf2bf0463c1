#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run calls this). On a fresh Debian
# machine it installs what the tests need, starts the servers, runs every
# test (with the race detector, but for the end-to-end package, which drives
# the shipped binary), fuzzes the parsers briefly, and stops the
# servers again, whatever happens.
#
#   Kafka-protocol broker: franz-go's kfake, in-process or as our own
#                          cmd/kafkabroker (the tests start it themselves)
#   Kafka consumer:        Debian's kcat (librdkafka), read-back in the tests
#   ClickHouse:            a 26.x engine from the npm package @chdb/lib-linux-x64-gnu,
#                          served by our cmd/chserver: each test binary that
#                          needs one starts its own (CHDB_LIB), so that one
#                          package's load never takes another's server down
#
# Options: FUZZTIME (default 6s per target), GOTESTFLAGS (extra go test flags).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }
sudo_if_needed() { if [[ "$(id -u)" == 0 ]]; then "$@"; else sudo "$@"; fi; }

step "tools"
if ! command -v kcat >/dev/null; then
	sudo_if_needed apt-get update -qq
	sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq kcat
fi
kcat -V | head -n1
go version

step "ClickHouse server (npm @chdb/lib-linux-x64-gnu, cmd/chserver)"
scripts/clickhouse.sh install
# Only the library: internal/testinfra/chtest starts one server per test
# binary from it, on free ports, and stops it when the binary ends.
CHDB_LIB="$(pwd)/.cache/chdb/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so"
export CHDB_LIB
unset CHTEST_CLICKHOUSE_NATIVE CHTEST_CLICKHOUSE_HTTP
ls -l "$CHDB_LIB"

step "gofmt and go vet"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>/dev/null || true)
if [[ -n "$unformatted" ]]; then
	echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
go vet ./...

step "tests: every package with the race detector; internal/e2e beside them"
# internal/e2e drives the collector binary as it ships (built without the
# race detector) against the simulator; under -race only its harness and
# in-process simulator would be watched, which their own packages already
# test with -race, and the package took 981 s instead of 461 s. So it runs
# without -race, in the background beside the race-instrumented packages,
# and its output is printed when both are done.
# -parallel 4: most end-to-end scenarios wait on a daemon for minutes
# (late data, rechecks, kills), not on the CPU.
e2e_log=$(mktemp)
e2e_pid=""
# In a session of its own, so that a failure here stops its test binary and
# the collectors it started too.
cleanup_e2e() { if [[ -n "$e2e_pid" ]]; then kill -- "-$e2e_pid" 2>/dev/null || true; fi; rm -f "$e2e_log"; }
trap cleanup_e2e EXIT
# shellcheck disable=SC2086
setsid go test -count=1 -timeout 40m -parallel 4 ${GOTESTFLAGS:-} ./internal/e2e/ >"$e2e_log" 2>&1 &
e2e_pid=$!
race_rc=0
race_pkgs=$(go list ./...)
race_pkgs=$(grep -v '/internal/e2e$' <<<"$race_pkgs")
# shellcheck disable=SC2086
go test -race -count=1 -timeout 40m -parallel 4 ${GOTESTFLAGS:-} $race_pkgs || race_rc=$?
e2e_rc=0
wait "$e2e_pid" || e2e_rc=$?
e2e_pid=""
echo "--- internal/e2e (without -race):"
cat "$e2e_log"
if (( race_rc != 0 || e2e_rc != 0 )); then
	echo "tests failed (race-instrumented packages: exit $race_rc, internal/e2e: exit $e2e_rc)"
	exit 1
fi

# --- Helm chart and kustomize base (a module of its own: deploy/helm/test) ---
step "Helm chart and kustomize base, rendered by their engines (deploy/helm/test)"
(cd deploy/helm/test && go vet ./... && go test -count=1 ./...)
# --- end of the Helm/kustomize step ---

# A count of executions, not a duration: with a duration the engine's own
# deadline sometimes ends a run on a loaded machine while its workers
# still gather the baseline ("context deadline exceeded"), a failure of
# the engine, not of the target.
step "fuzz targets (${FUZZTIME:-10000x} each; their seed corpora already ran as tests)"
# Every Fuzz function of every package, found rather than listed, so that a
# new target is never left out of CI.
for file in $(git grep -l '^func Fuzz' -- '*_test.go'); do
	pkg="./$(dirname "$file")"
	for f in $(grep -ho '^func Fuzz[A-Za-z0-9_]*' "$file" | sed 's/func //'); do
		go test -run '^$' -fuzz "^$f\$" -fuzztime "${FUZZTIME:-10000x}" "$pkg"
	done
done

step "all tests passed"
