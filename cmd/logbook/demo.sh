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
# call TOOL ARGS [NOTE]: one tools/call; prints the tool, NOTE and what it
# answered in a few words (the ids it returned, or the error code and
# message), and keeps the result envelope in $out.
call() {
  id=$((id + 1))
  printf '{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$id" "$1" "$2" >&"$srv_in"
  local line said
  IFS= read -r line <&"$srv_out"
  out=${line#*\"structuredContent\":}
  out=${out%\}\}}
  if [[ $out == '{"ok":true'* ]]; then
    said="ok"
    for f in task_id session_id thought_id status merkle_root chain_valid merkle_valid; do
      local v
      v=$(field "$f")
      [[ -n $v ]] && said+="  $f=$(cut -c1-16 <<<"$v")"
    done
  else
    said="$(field code): $(field message)"
  fi
  printf '  %-20s %-28s → %s\n' "$1" "${3:-}" "$said"
}
# field NAME: the first value of "NAME" in $out (a string, a number or a boolean).
field() { sed -n "s/^[^{]*{.*\"$1\":\"\{0,1\}\([^\",}]*\).*/\1/p" <<<"$out"; }

printf '%s\n' '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}' >&"$srv_in"
IFS= read -r _ <&"$srv_out"
printf '%s\n' '{"jsonrpc":"2.0","method":"notifications/initialized"}' >&"$srv_in"

echo "== an agent plans and does a task (logbook serve, MCP over stdio; each answer in short) =="
call task_create '{"title":"Add retry to the uploader","project":"demo","priority":"high","labels":["net"]}' "a task"
task=$(field task_id)
call audit_session_start "{\"task_id\":\"$task\",\"auditor_id\":\"alice\",\"reason\":\"demo\"}" "alice audits it"
session=$(field session_id)
call task_update "{\"task_id\":\"$task\",\"status\":\"todo\"}" "backlog to todo"
call task_update "{\"task_id\":\"$task\",\"status\":\"in_progress\",\"progress\":40}" "todo to in_progress"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}" "skip review (refused)"
call task_update "{\"task_id\":\"$task\",\"status\":\"review\"}" "in_progress to review"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}" "done, no thought (refused)"
call thought_record "{\"task_id\":\"$task\",\"type\":\"decision\",\"content\":\"Exponential back-off, 5 tries: the API rate-limits bursts.\",\"session_id\":\"$session\"}" "why: a decision"
call task_update "{\"task_id\":\"$task\",\"status\":\"done\"}" "review to done"
call merkle_finalize "{\"session_id\":\"$session\"}" "freeze the session's root"
call audit_verify_chain "{\"session_id\":\"$session\"}" "recheck it"
exec {srv_in}>&-
wait "$srv_pid" || true

echo
echo "== an auditor looks at the ledger offline =="
echo "\$ logbook show $task"
"$bin" show "$task" --db "$db"
echo
echo "\$ logbook show $session"
"$bin" show "$session" --db "$db"
echo
echo "== and checks it =="
echo "\$ logbook verify"
"$bin" verify --db "$db"
# Prove the session's first leaf is in the ledger it was sealed against,
# with the size and root the session recorded (logbook show --json).
sj=$("$bin" show "$session" --db "$db" --json)
seq=$(sed -n 's/.*"leaf_list":\[{"seq":\([0-9]*\).*/\1/p' <<<"$sj")
size=$(sed -n 's/.*"ledger_size":\([0-9]*\).*/\1/p' <<<"$sj")
root=$(sed -n 's/.*"ledger_root":"\([0-9a-f]*\)".*/\1/p' <<<"$sj")
echo "\$ logbook prove inclusion --seq $seq --size $size --out .logbook/proof.json"
rm -f .logbook/proof.json # an earlier run's: --out never replaces a file
"$bin" prove inclusion --db "$db" --seq "$seq" --size "$size" --out .logbook/proof.json
echo "\$ logbook check-proof .logbook/proof.json --root ${root:0:12}… --size $size"
"$bin" check-proof .logbook/proof.json --root "$root" --size "$size"
echo
echo "ledger: $db (serve log: .logbook/serve.log; logbook tasks, sessions and replay show the rest)"
