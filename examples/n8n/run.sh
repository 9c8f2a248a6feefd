#!/usr/bin/env bash
# Starts n8n on loopback with a throwaway user folder, imports and
# publishes workflow.json (the DayOne per-event decision), and waits until
# its webhook answers. With a command, runs it while n8n is up, then stops
# n8n and exits with the command's status; without one, keeps n8n in the
# foreground until Ctrl-C.
#
#   mkdir -p /tmp/n8n && cd /tmp/n8n && npm install n8n@2.8.4    # once
#   examples/n8n/run.sh                                           # n8n only
#   examples/n8n/run.sh go run ./examples/n8n/bench -target n8n -url http://127.0.0.1:5678/webhook -clients 32
#
# N8N_DIR is where n8n is installed (/tmp/n8n), N8N_PORT its port (5678;
# its task broker takes the next one). N8N_USER_FOLDER, if set, is used
# and kept; otherwise a new temporary one is made and removed on exit.
# n8n runs as installed: regular mode, SQLite, JS task runner; only
# telemetry and update checks are off, so nothing leaves the machine.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
n8n_dir=${N8N_DIR:-/tmp/n8n}
bin=$n8n_dir/node_modules/.bin/n8n
port=${N8N_PORT:-5678}
id=DayOneDecision01 # workflow.json's id

if [[ ! -x $bin ]]; then
	echo "run.sh: no n8n at $bin; install it with: mkdir -p $n8n_dir && cd $n8n_dir && npm install n8n@2.8.4" >&2
	exit 1
fi
if ! command -v curl >/dev/null; then
	echo "run.sh: curl is needed to see when n8n answers" >&2
	exit 1
fi

made_folder=
if [[ -z ${N8N_USER_FOLDER:-} ]]; then
	N8N_USER_FOLDER=$(mktemp -d "${TMPDIR:-/tmp}/n8n-user.XXXXXX")
	made_folder=$N8N_USER_FOLDER
fi
export N8N_USER_FOLDER
export N8N_PORT=$port N8N_LISTEN_ADDRESS=127.0.0.1 N8N_RUNNERS_BROKER_PORT=$((port + 1))
export N8N_DIAGNOSTICS_ENABLED=false N8N_VERSION_NOTIFICATIONS_ENABLED=false N8N_TEMPLATES_ENABLED=false
export N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS=true
log=$N8N_USER_FOLDER/n8n.log

pid=
cleanup() {
	if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	fi
	if [[ -n $made_folder ]]; then
		rm -rf "$made_folder"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

version=$("$bin" --version)
echo "n8n $version, user folder $N8N_USER_FOLDER, log $log" >&2
# Publishing is n8n 2's activation; 1.x has update:workflow --active=true.
"$bin" import:workflow --input="$here/workflow.json" >>"$log" 2>&1
if ! "$bin" publish:workflow --id="$id" >>"$log" 2>&1; then
	"$bin" update:workflow --id="$id" --active=true >>"$log" 2>&1
fi

"$bin" start >>"$log" 2>&1 &
pid=$!

# The workflow, not just n8n, must answer: an unknown session gets the
# workflow's own session_not_found.
url=http://127.0.0.1:$port/webhook
probe='{"session_id":"run-sh-probe","event_type":"speech_end","ts_sec":0}'
for ((i = 0; ; i++)); do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "run.sh: n8n exited; see $log" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	if curl -s -m 5 -X POST -H 'Content-Type: application/json' -d "$probe" "$url/sim/session/event" 2>/dev/null | grep -q session_not_found; then
		break
	fi
	if ((i >= 300)); then
		echo "run.sh: the workflow's webhook did not answer within 150 s; see $log" >&2
		exit 1
	fi
	sleep 0.5
done
echo "n8n $version ready: bench -target n8n -url $url" >&2

if (($# > 0)); then
	status=0
	"$@" || status=$?
	exit "$status"
fi
wait "$pid"
