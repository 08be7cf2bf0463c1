#!/usr/bin/env bash
# ClickHouse for tests and demos: a current engine (26.x) from the npm package
# @chdb/lib-linux-x64-gnu, served over the native and HTTP protocols by our
# launcher cmd/chserver (no cgo). No clickhouse-server package is installable
# here; Debian's is from 2018.
#
#   scripts/clickhouse.sh install   # npm package into .cache/chdb (idempotent, ~170 MB download)
#   scripts/clickhouse.sh start     # build the launcher, start it in the background, wait until it answers
#   scripts/clickhouse.sh stop      # stop the server started by "start"
#   scripts/clickhouse.sh status    # exit 0 when it answers
#   scripts/clickhouse.sh env       # print the exports that make tests use this server
#   scripts/clickhouse.sh lib       # print the path of libchdb.so
#
# Environment (all optional):
#   CHDB_CACHE_DIR      where the npm package goes      (default <repo>/.cache/chdb)
#   CHSERVER_DIR        launcher binary, data, pid, log (default <repo>/.cache/chserver)
#   CHSERVER_TCP_PORT   native port on 127.0.0.1        (default 19000)
#   CHSERVER_HTTP_PORT  HTTP port on 127.0.0.1          (default 18123)
#
# Tests find the server through CHTEST_CLICKHOUSE_NATIVE and
# CHTEST_CLICKHOUSE_HTTP (see "env"); without them the test helper
# internal/testinfra/chtest starts a private server from the installed library.
set -euo pipefail

readonly CHDB_PACKAGE='@chdb/lib-linux-x64-gnu'
# Pinned: the package's "latest" tag points to an older engine.
readonly CHDB_VERSION='26.7.3-stable.1'

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${CHDB_CACHE_DIR:-$repo/.cache/chdb}"
srvdir="${CHSERVER_DIR:-$repo/.cache/chserver}"
tcp_port="${CHSERVER_TCP_PORT:-19000}"
http_port="${CHSERVER_HTTP_PORT:-18123}"
lib="$cache/node_modules/$CHDB_PACKAGE/libchdb.so"
pidfile="$srvdir/chserver.pid"
logfile="$srvdir/chserver.log"

log() { echo "clickhouse.sh: $*" >&2; }

installed_version() {
	local pj="$cache/node_modules/$CHDB_PACKAGE/package.json"
	[[ -f "$pj" && -f "$lib" ]] || return 1
	sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' "$pj" | head -n1
}

cmd_install() {
	if [[ "$(installed_version || true)" == "$CHDB_VERSION" ]]; then
		log "$CHDB_PACKAGE@$CHDB_VERSION already installed: $lib"
		return 0
	fi
	if ! command -v npm >/dev/null; then
		if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
			log "npm not found: installing it from Debian"
			apt-get update -qq >&2 && apt-get install -y -qq npm >&2
		else
			log "npm not found (apt-get install -y npm)"; return 1
		fi
	fi
	mkdir -p "$cache"
	log "installing $CHDB_PACKAGE@$CHDB_VERSION into $cache"
	npm install --prefix "$cache" --no-audit --no-fund --no-save --loglevel=error \
		"$CHDB_PACKAGE@$CHDB_VERSION" >&2
	[[ "$(installed_version || true)" == "$CHDB_VERSION" ]] || { log "install failed: $lib missing"; return 1; }
	log "installed $lib"
}

answers() {
	curl -fsS --max-time 2 "http://127.0.0.1:$http_port/ping" >/dev/null 2>&1
}

running_pid() {
	[[ -f "$pidfile" ]] || return 1
	local pid
	pid="$(cat "$pidfile")"
	[[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

cmd_start() {
	[[ -f "$lib" ]] || { log "$lib missing: run scripts/clickhouse.sh install"; return 1; }
	if pid="$(running_pid)"; then
		log "already running (pid $pid)"
		answers && return 0
		log "pid $pid does not answer on port $http_port"; return 1
	fi
	mkdir -p "$srvdir/data"
	log "building cmd/chserver"
	(cd "$repo" && CGO_ENABLED=0 go build -o "$srvdir/chserver" ./cmd/chserver)
	# setsid: the server outlives this script and its terminal.
	setsid "$srvdir/chserver" --lib "$lib" --path "$srvdir/data" \
		--tcp-port "$tcp_port" --http-port "$http_port" >"$logfile" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$pidfile"
	for _ in $(seq 1 300); do
		if answers; then
			log "ready: native 127.0.0.1:$tcp_port, http 127.0.0.1:$http_port (pid $pid, data $srvdir/data)"
			return 0
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			log "server exited; its log:"; cat "$logfile" >&2; rm -f "$pidfile"; return 1
		fi
		sleep 0.1
	done
	log "no answer after 30s; its log:"; cat "$logfile" >&2
	cmd_stop
	return 1
}

cmd_stop() {
	local pid
	if ! pid="$(running_pid)"; then
		rm -f "$pidfile"
		log "not running"
		return 0
	fi
	kill -TERM "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; log "stopped (pid $pid)"; return 0; }
		sleep 0.1
	done
	log "pid $pid ignored SIGTERM for 10s: SIGKILL"
	kill -KILL "$pid" 2>/dev/null || true
	rm -f "$pidfile"
}

cmd_status() {
	if pid="$(running_pid)" && answers; then
		echo "running (pid $pid): native 127.0.0.1:$tcp_port, http 127.0.0.1:$http_port"
		return 0
	fi
	echo "not running"
	return 1
}

cmd_env() {
	echo "export CHTEST_CLICKHOUSE_NATIVE=127.0.0.1:$tcp_port"
	echo "export CHTEST_CLICKHOUSE_HTTP=127.0.0.1:$http_port"
	echo "export CHDB_LIB=$lib"
}

case "${1:-}" in
install) cmd_install ;;
start) cmd_start ;;
stop) cmd_stop ;;
status) cmd_status ;;
env) cmd_env ;;
lib) echo "$lib" ;;
*)
	echo "usage: $0 install|start|stop|status|env|lib" >&2
	exit 2
	;;
esac
