#!/usr/bin/env bash
# make demo: what an agent does through logbook, then what an auditor does.
# Starts `logbook serve` on the default ledger (.logbook/ledger.db, or
# $LOGBOOK_DB), drives a short agent session over its stdio one JSON-RPC line
# at a time, then checks the ledger offline with the auditor's CLI.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=bin/logbook
db=${LOGBOOK_DB:-.logbook/ledger.db}
mkdir -p "$(dirname "$db")" .logbook

coproc SRV { exec "$bin" serve --db "$db" --agent demo-agent --skills fixtures/skills 2>>.logbook/serve.log; }
# bash unsets SRV and SRV_PID as soon as the coprocess exits: keep copies.
srv_pid=$SRV_PID srv_in=${SRV[1]} srv_out=${SRV[0]}
id=0
out=""
# call TOOL ARGS: one tools/call; prints the tool and its result envelope and
# keeps the envelope in $out.
call() {
  id=$((id + 1))
  printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$id" "$1" "$2" >&"$srv_in"
  local line
  IFS= read -r line <&"$srv_out"
  out=${line#*\"structuredContent\":}
  out=${out%\}\}}
  printf '%-20s %s\n' "$1" "$out"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$out"; }

printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' >&"$srv_in"
IFS= read -r _ <&"$srv_out"
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"$srv_in"

echo "== an agent plans and does a task (logbook serve, MCP over stdio) =="
call task_create '{"title":"Add retry to the uploader","project":"demo","priority":"high","labels":["net"]}'
task=$(field task_id)
call audit_session_start "{\"task_id\":\"$task\",\"auditor_id\":\"alice\",\"reason\":\"demo\"}"
session=$(field session_id)
call task_update "{\"task_id\":\"$task\",\"status\":\"todo\"}"
call task_update "{\"task_id\":\"$task\",\"status\":\"in_progress\",\"progress\":40}"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}"
call task_update "{\"task_id\":\"$task\",\"status\":\"review\"}"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}"
call thought_record "{\"task_id\":\"$task\",\"type\":\"decision\",\"content\":\"Exponential back-off, 5 tries: the API rate-limits bursts.\",\"session_id\":\"$session\"}"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}"
call thought_record_list "{\"task_id\":\"$task\",\"verify_chain\":true}"
call merkle_finalize "{\"session_id\":\"$session\"}"
call audit_verify_chain "{\"session_id\":\"$session\"}"
call task_next_actions '{"project":"demo"}'
exec {srv_in}>&-
wait "$srv_pid" || true

echo
echo "== an auditor checks the ledger offline (logbook verify, replay, prove) =="
"$bin" verify --db "$db"
"$bin" replay --db "$db" --task "$task" | cut -c1-160
size=$("$bin" root --db "$db" --json | sed -n 's/.*"size":\([0-9]*\).*/\1/p')
root=$("$bin" root --db "$db" --json | sed -n 's/.*"root":"\([0-9a-f]*\)".*/\1/p')
"$bin" prove inclusion --db "$db" --seq 1 --size "$size" --out .logbook/proof.json
"$bin" check-proof .logbook/proof.json --root "$root" --size "$size"
echo "ledger: $db (serve log: .logbook/serve.log)"
