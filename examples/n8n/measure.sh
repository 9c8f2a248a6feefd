#!/usr/bin/env bash
# One measurement, one command: starts SYSTEM fresh (baton serve with an
# empty data folder, or n8n through run.sh), drives it with CLIENTS
# concurrent clients for DURATION after a warm-up, prints the driver's
# JSON result on stdout, and stops it. Run from anywhere in the repository.
#
#   examples/n8n/measure.sh baton 32
#   examples/n8n/measure.sh n8n 32
#   DURATION=30s PROFILE=/tmp/baton-32.pprof examples/n8n/measure.sh baton 32
#
# DURATION (30s) and WARMUP (3s) go to the driver. PROFILE, for baton,
# saves a 15 s CPU profile taken while the clock runs (go tool pprof -top
# FILE; DURATION must then be 20s or more) and, in FILE.metrics, the
# server's /metrics after the run (fsync count and time, among others).
# BATON is a baton binary to use instead of building ./cmd/baton,
# BATON_PORT (8080) its port, BATON_FLAGS more flags for baton serve
# (--no-sync, say, to see what durability costs). N8N_DIR and N8N_PORT
# are run.sh's.
#
# baton runs with --dev (no token) and durable logging as it ships
# (--sync all: every input fsynced before it is applied and answered).
# --rate and --burst lift the per-session limit of 20 events a second,
# an abuse guard for public clients, since each client here sends its
# session's events back to back.
set -euo pipefail

usage() {
	echo "usage: $0 baton|n8n CLIENTS" >&2
	exit 2
}
(($# == 2)) || usage
system=$1
clients=$2
duration=${DURATION:-30s}
warmup=${WARMUP:-3s}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-measure.XXXXXX")
pid=
cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root" && go build -o "$tmp/bench" ./examples/n8n/bench)
drive=("$tmp/bench" -clients "$clients" -duration "$duration" -warmup "$warmup" -json)

case $system in
baton)
	baton=${BATON:-}
	built="built from $(git -C "$root" describe --always --dirty 2>/dev/null || echo "an unknown commit")"
	if [[ -z $baton ]]; then
		(cd "$root" && go build -o "$tmp/baton" ./cmd/baton)
		baton=$tmp/baton
	else
		built="binary $baton"
	fi
	echo "baton ($built) ${BATON_FLAGS:-}, $clients clients, $duration" >&2
	port=${BATON_PORT:-8080}
	url=http://127.0.0.1:$port
	# shellcheck disable=SC2086 # BATON_FLAGS is a list of flags
	"$baton" serve --dev --data "$tmp/data" --addr "127.0.0.1:$port" --rate 1000000 --burst 1000000 ${BATON_FLAGS:-} >"$tmp/baton.log" 2>&1 &
	pid=$!
	for ((i = 0; ; i++)); do
		if curl -sf -m 2 "$url/readyz" >/dev/null 2>&1; then
			break
		fi
		if ! kill -0 "$pid" 2>/dev/null || ((i >= 100)); then
			echo "measure.sh: baton did not become ready:" >&2
			cat "$tmp/baton.log" >&2
			exit 1
		fi
		sleep 0.2
	done
	prof=
	if [[ -n ${PROFILE:-} ]]; then
		# From two seconds into the measured window, for 15 s of it.
		lead=5
		if [[ $warmup =~ ^([0-9]+)s$ ]]; then
			lead=$((BASH_REMATCH[1] + 2))
		fi
		(
			sleep "$lead"
			curl -sf -o "$PROFILE" "$url/debug/pprof/profile?seconds=15" || echo "measure.sh: no profile" >&2
		) &
		prof=$!
	fi
	status=0
	"${drive[@]}" -target baton -url "$url" || status=$?
	if [[ -n $prof ]]; then
		wait "$prof" || true
		curl -sf -o "$PROFILE.metrics" "$url/metrics" || echo "measure.sh: no metrics" >&2
	fi
	exit "$status"
	;;
n8n)
	echo "n8n, $clients clients, $duration" >&2
	"$here/run.sh" "${drive[@]}" -target n8n -url "http://127.0.0.1:${N8N_PORT:-5678}/webhook"
	;;
*)
	usage
	;;
esac
