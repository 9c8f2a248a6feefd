#!/usr/bin/env bash
# Runs a cluster on this machine and drives it: a NATS JetStream cluster
# (examples/cluster/nats), NODES `baton serve --nats` nodes on it, and the
# load generator spread over every node. Arguments go to the load
# generator; the run's report is its output.
#
#   examples/cluster/run.sh -arrival poisson -arrival-rate 200 -sessions 10000 -events model -duration 110s
#   REPLICAS=3 examples/cluster/run.sh -sessions 300 -duration 30s
#
# NODES (3) baton nodes listen on 127.0.0.1:BASE_PORT (18281) and up.
# REPLICAS (1) is both the JetStream servers started and the copies kept
# of each session log (--nats-replicas): 1 or 3. STREAMS (1) is
# --nats-streams, the streams the logs are spread over. NATS_PORT (14222) is the
# first server's client port. KEEP, when set, is a folder the nodes' and
# the NATS servers' logs are copied to at the end. Set ulimit -n high
# enough for the sessions (each node holds one descriptor per connection).
set -euo pipefail
nodes=${NODES:-3}
replicas=${REPLICAS:-1}
streams=${STREAMS:-1}
base=${BASE_PORT:-18281}
natsport=${NATS_PORT:-14222}
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/baton-cluster.XXXXXX")
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
	if [[ -n ${KEEP:-} ]]; then
		mkdir -p "$KEEP" && cp "$tmp"/*.out "$tmp"/*.err "$KEEP"/ 2>/dev/null || true
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

(cd "$root" && go build -o "$tmp/baton" ./cmd/baton && go build -o "$tmp/loadgen" ./examples/loadgen && go build -o "$tmp/nats" ./examples/cluster/nats)
"$tmp/nats" -servers "$replicas" -port "$natsport" -dir "$tmp/js" >"$tmp/nats.out" 2>"$tmp/nats.err" &
pids+=($!)
for _ in $(seq 100); do [[ -s $tmp/nats.out ]] && break; sleep 0.1; done
natsurls=$(head -1 "$tmp/nats.out")
[[ -n $natsurls ]] || { cat "$tmp/nats.err" >&2; exit 1; }

# One at a time: the first creates the stream and buckets, which a
# JetStream cluster that has just formed may take a while to place.
urls=()
for i in $(seq "$nodes"); do
	port=$((base + i - 1))
	"$tmp/baton" serve --dev --data "$tmp/d$i" --addr "127.0.0.1:$port" --rate 1000 --burst 1000 \
		--nats "$natsurls" --nats-replicas "$replicas" --nats-streams "$streams" --node "n$i" >"$tmp/node$i.out" 2>"$tmp/node$i.err" &
	pids+=($!)
	urls+=("ws://127.0.0.1:$port/ws")
	for _ in $(seq 900); do curl -sf "http://127.0.0.1:$port/readyz" >/dev/null && break; sleep 0.1; done
	curl -sf "http://127.0.0.1:$port/readyz" >/dev/null || { echo "node $i did not get ready:" >&2; tail "$tmp/node$i.err" >&2; exit 1; }
done
echo "# NATS $natsurls (R$replicas, $streams stream(s)); nodes ${urls[*]}"
"$tmp/loadgen" -url "$(IFS=,; echo "${urls[*]}")" "$@"
