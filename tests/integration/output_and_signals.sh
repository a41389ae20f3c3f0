#!/usr/bin/env bash
# Output and signals, and Ctrl-C, on the local backend and on real dsrun-agents on
# loopback addresses: a reader of dsrun's output that stalls 20 s; every line of 8 ranks with partial
# lines and early exits, repeated; signal counts per rank (Slurm's test_116_25: USR1 x2, USR2 x3,
# TERM x1); one Ctrl-C = one SIGINT per rank and exit 130; Ctrl-C during connect and launch; the
# earliest failure across hosts named. Sharness style.
# usage: output_and_signals.sh DSRUN DSRUN_AGENT [LINES_PER_RANK] [REPEATS]
set -u
DSRUN=$(readlink -f "${1:?usage: output_and_signals.sh DSRUN DSRUN_AGENT [LINES] [REPEATS]}")
AGENT=$(readlink -f "${2:?usage: output_and_signals.sh DSRUN DSRUN_AGENT [LINES] [REPEATS]}")
LINES=${3:-20000}
REPEATS=${4:-3}
SECTIONS=${OAS_SECTIONS:-B A 1 C S 8}  # to run a part while debugging, e.g. OAS_SECTIONS="1 8"
want() { case " $SECTIONS " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
command -v python3 >/dev/null || { echo "not ok - python3 is needed for the rank programs"; exit 1; }
# shellcheck source=lib.sh
. "$(cd "$(dirname "$0")" && pwd)/lib.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
# dsrun picks its own job id; sleeper.sh ranks write it to DIR/jobid.RANK before they sleep.
sleeper() { mkdir -p "$1"; printf '#!/bin/sh\necho "$DSRUN_JOB_ID" >"%s/jobid.$RANK"\nexec sleep 30\n' "$1" >"$1/sleeper.sh"; chmod +x "$1/sleeper.sh"; echo "$1/sleeper.sh"; }
ranks_of() {  # ranks_of DIR N: processes of the job whose N ranks wrote DIR/jobid.* (0 if none wrote)
  for _ in $(seq 200); do [ "$(ls "$1" | grep -c '^jobid\.')" -ge "$2" ] && break; sleep 0.05; done
  local id; id=$(cat "$1"/jobid.0 2>/dev/null); [ -n "$id" ] && job_procs "$id" || echo 0
}
# Runs its arguments with SIGINT at its default (a script's `cmd &` would start them with it ignored).
sigint_default() { exec env --default-signal "$@"; }  # background only: $! is then dsrun itself

# Never 29500: an agent listening there would hold the default MASTER_PORT of every job in this test.
port=$((29250 + RANDOM % 240))
"$DSRUN" --make_tls "$tmp/tls" >/dev/null || { echo "not ok - dsrun --make_tls failed"; exit 1; }
agent_pids=()
start_agent() {  # start_agent ADDR: with its own node certificate from the launcher's CA (docs/security.md)
  "$DSRUN" --make_node_cert "$tmp/tls" --host "$1" --addr "$1" --out "$tmp/node-$1" >/dev/null ||
    { echo "not ok - dsrun --make_node_cert $1 failed"; exit 1; }
  "$AGENT" --listen "$1:$port" --tls_dir "$tmp/node-$1" --kill_grace_s 2 --heartbeat_timeout_s 3 \
    >"$tmp/agent-$1.log" 2>&1 &
  pids+=($!); agent_pids+=($!)
  for _ in $(seq 100); do grep -q "listening on" "$tmp/agent-$1.log" && return 0; sleep 0.05; done
  echo "not ok - agent on $1:$port did not start:"; cat "$tmp/agent-$1.log"; exit 1
}
start_agent 127.0.0.1
start_agent 127.0.0.2
agents_alive() { for p in "${agent_pids[@]}"; do kill -0 "$p" 2>/dev/null || return 1; done; }
printf '127.0.0.1 slots=4\n127.0.0.2 slots=4\n' >"$tmp/hostfile8"
printf '127.0.0.1 slots=1\n127.0.0.2 slots=1\n' >"$tmp/hostfile2"

dsrun_with() {  # dsrun_with BACKEND HOSTFILE ARGS...: dsrun's argv for that backend
  local backend=$1 hf=$2; shift 2
  if [ "$backend" = agent ]; then
    echo "$DSRUN" --launcher agent --agent_port "$port" --tls_dir "$tmp/tls" -H "$hf" --master_addr 127.0.0.1 "$@"
  else
    echo "$DSRUN" --num_gpus "$(awk '{split($2,a,"="); s+=a[2]} END {print s}' "$hf")" "$@"
  fi
}

if want B; then
# --- B: every line of 8 ranks, with partial lines and early exits, through a reader that lags -------
cat >"$tmp/lines.py" <<'EOS'
import os, sys
rank = int(os.environ["RANK"]); n = int(sys.argv[1])
n = n if rank % 2 == 0 else n // 4          # odd ranks exit early, their output still backed up
out, err = sys.stdout.buffer, sys.stderr.buffer
for i in range(n):
    line = b"r=%d i=%d %s\n" % (rank, i, b"x" * (i % 61))
    if i % 997 == 0:                         # a line written in two pieces
        out.write(line[:5]); out.flush(); out.write(line[5:])
    else:
        out.write(line)
    if i % 5000 == 0:
        err.write(b"r=%d e=%d\n" % (rank, i))
out.write(b"r=%d last-partial" % rank)      # no trailing newline
out.flush()
os._exit(0)
EOS
check_lines() {  # check_lines OUTFILE: every rank's lines exactly once, in order, none malformed
  python3 - "$1" "$LINES" <<'EOS'
import re, sys
path, n = sys.argv[1], int(sys.argv[2])
seen = {r: [] for r in range(8)}; partial = set(); bad = []
for raw in open(path, "rb").read().split(b"\n")[:-1]:
    m = re.fullmatch(rb"r=(\d) i=(\d+) (x*)", raw)
    if m:
        r, i = int(m[1]), int(m[2])
        if len(m[3]) != i % 61: bad.append(raw)
        seen[r].append(i)
    elif re.fullmatch(rb"r=(\d) last-partial", raw):
        partial.add(int(raw[2:3]))
    else:
        bad.append(raw)
lost = 0
for r in range(8):
    want = list(range(n if r % 2 == 0 else n // 4))
    if seen[r] != want:
        lost += abs(len(want) - len(seen[r])) or 1
        print(f"# rank {r}: {len(seen[r])} lines, expected {len(want)}", file=sys.stderr)
if bad: print(f"# {len(bad)} malformed lines, e.g. {bad[:2]}", file=sys.stderr)
if partial != set(range(8)): print(f"# partial last lines from {sorted(partial)}", file=sys.stderr)
sys.exit(0 if lost == 0 and not bad and partial == set(range(8)) else 1)
EOS
}
for backend in local agent; do
  for rep in $(seq 1 "$REPEATS"); do
    # The reader starts 2.5 s late: ranks exit while their output is backed up behind it (the agent's
    # drain deadline is 2 s).
    # shellcheck disable=SC2046
    DSRUN_JOB_ID=oas-b-$backend-$rep $(dsrun_with $backend "$tmp/hostfile8" --no_local_rank "$tmp/lines.py" "$LINES") \
      2>"$tmp/b.err" | { sleep 2.5; cat; } >"$tmp/b.out"
    rc=${PIPESTATUS[0]}
    check "$backend #$rep: 8 ranks x $LINES lines with partial lines and early exits: exit 0" test "$rc" = 0
    check "$backend #$rep: every line arrives exactly once, whole, in order (last partial lines too)" \
      check_lines "$tmp/b.out"
  done
done

fi
if want A; then
# --- A: a reader that stalls 20 s, then resumes: the job completes, nothing lost, agents alive ------
# shellcheck disable=SC2046
printf '#!/bin/sh\nexec seq 1 300000\n' >"$tmp/seq.sh"; chmod +x "$tmp/seq.sh"
# shellcheck disable=SC2046
DSRUN_JOB_ID=oas-a $(dsrun_with agent "$tmp/hostfile2" --no_python --no_local_rank "$tmp/seq.sh") \
  2>"$tmp/a.err" | { sleep 20; cat; } >"$tmp/a.out"
rc=${PIPESTATUS[0]}
check "agent: a reader stalled 20 s (agents' heartbeat timeout 3 s): the job exits 0" test "$rc" = 0
check "agent: all 600000 lines arrive after the stall" test "$(wc -l <"$tmp/a.out")" = 600000
check "agent: both agents are still alive" agents_alive
grep -q "no heartbeat" "$tmp"/agent-*.log && not_ok "agent: no agent declared the launcher lost" \
  || ok "agent: no agent declared the launcher lost"

fi
if want 1; then
# --- 1: signal counts per rank --------------------------------------------------------------------
cat >"$tmp/sig.py" <<'EOS'
import os, signal, sys, time
d, rank = sys.argv[1], os.environ["RANK"]
names = {signal.SIGUSR1: "USR1", signal.SIGUSR2: "USR2", signal.SIGTERM: "TERM", signal.SIGINT: "INT",
         signal.SIGHUP: "HUP"}
counts = {n: 0 for n in names.values()}
def on(s, _): counts[names[s]] += 1
for s in names: signal.signal(s, on)
open(f"{d}/ready.{rank}", "w").close()
while not (counts["TERM"] or counts["INT"] or counts["HUP"]): time.sleep(0.01)
time.sleep(0.5)   # anything sent after the stop signal would be counted too
with open(f"{d}/sig.{rank}", "w") as f: f.write(" ".join(f"{k}={v}" for k, v in sorted(counts.items())))
EOS
wait_ready() {  # wait_ready DIR N
  for _ in $(seq 400); do [ "$(ls "$1" | grep -c '^ready\.')" -ge "$2" ] && return 0; sleep 0.05; done
  return 1
}
all_counts() {  # all_counts DIR N EXPECTED: every rank reports EXPECTED
  local r; for r in $(seq 0 $(($2 - 1))); do
    [ "$(cat "$1/sig.$r" 2>/dev/null)" = "$3" ] || { echo "# rank $r: '$(cat "$1/sig.$r" 2>/dev/null)'"; return 1; }
  done
}
for backend in local agent; do
  d=$tmp/sig-$backend; mkdir -p "$d"
  # shellcheck disable=SC2046
  sigint_default DSRUN_JOB_ID=oas-s-$backend $(dsrun_with $backend "$tmp/hostfile2" --no_local_rank "$tmp/sig.py" "$d") \
    >"$tmp/s.out" 2>"$tmp/s.err" &
  dpid=$!
  wait_ready "$d" 2
  for s in USR1 USR2 USR1 USR2 USR2 TERM; do kill -s "$s" "$dpid"; sleep 0.3; done
  wait "$dpid"; rc=$?
  check "$backend: USR1 x2, USR2 x3, TERM x1 arrive as such at every rank" \
    all_counts "$d" 2 "HUP=0 INT=0 TERM=1 USR1=2 USR2=3"
  check "$backend: dsrun survives SIGUSR1/SIGUSR2 and exits 128+15 after SIGTERM (ranks exited 0)" test "$rc" = 143

  d=$tmp/int-$backend; mkdir -p "$d"
  # shellcheck disable=SC2046
  sigint_default DSRUN_JOB_ID=oas-i-$backend $(dsrun_with $backend "$tmp/hostfile2" --no_local_rank "$tmp/sig.py" "$d") \
    >"$tmp/i.out" 2>"$tmp/i.err" &
  dpid=$!
  wait_ready "$d" 2
  kill -INT "$dpid"
  wait "$dpid"; rc=$?
  check "$backend: one Ctrl-C = exactly one SIGINT per rank, no SIGTERM" all_counts "$d" 2 "HUP=0 INT=1 TERM=0 USR1=0 USR2=0"
  check "$backend: exit 130 after Ctrl-C although the ranks exited 0" test "$rc" = 130
done

fi
if want C; then
# --- C (Ctrl-C half): a Ctrl-C during connect and during launch ends dsrun with 130 --------------------
python3 -c '
import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.3", int(sys.argv[1]))); s.listen(8)
conns = []
while True: conns.append(s.accept())   # accepts and never says a word: dsrun waits in the TLS handshake
' "$port" &
pids+=($!)
for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.3/$port") 2>/dev/null && break; sleep 0.05; done
printf '127.0.0.1 slots=1\n127.0.0.3 slots=1\n' >"$tmp/hostfile-mute"  # one host alone would run locally
# shellcheck disable=SC2046
sigint_default DSRUN_JOB_ID=oas-c1 $(dsrun_with agent "$tmp/hostfile-mute" --no_python /bin/true) \
  >"$tmp/c.out" 2>"$tmp/c.err" &
dpid=$!
sleep 1
kill -INT "$dpid"
wait "$dpid"; rc=$?
check "agent: Ctrl-C while an agent does not answer the handshake exits 130 (not the 10 s connect timeout)" \
  test "$rc" = 130
check "agent: ... saying nothing was started" grep -q "while connecting to the agents; nothing was started" "$tmp/c.err"
check "agent: ... and claiming no forwarding" test "$(grep -c "forwarded it" "$tmp/c.err")" = 0
for delay in 0.05 0.15 0.3 0.6; do
  # shellcheck disable=SC2046
  sl=$(sleeper "$tmp/c2-$delay")
  sigint_default $(dsrun_with agent "$tmp/hostfile8" --no_python --no_local_rank "$sl") >"$tmp/c.out" 2>"$tmp/c.err" &
  dpid=$!
  sleep "$delay"
  kill -INT "$dpid"
  wait "$dpid"; rc=$?
  check "agent: Ctrl-C ${delay}s into the launch exits 130" test "$rc" = 130
  sleep 0.3
  id=$(cat "$tmp/c2-$delay"/jobid.* 2>/dev/null | head -1)
  check "agent: ... and leaves no process of the job" test "$( [ -n "$id" ] && job_procs "$id" || echo 0)" = 0
done

fi
if want S; then
# --- C (silent host, loopback): an agent SIGSTOPped mid-job is silent (no reset, no heartbeat) -------
# The netns cluster test (agent_silent_host.sh) drops packets for real; this one runs anywhere.
agent2=${agent_pids[1]}
# shellcheck disable=SC2046
sl=$(sleeper "$tmp/st")
sigint_default $(dsrun_with agent "$tmp/hostfile2" --no_python --no_local_rank "$sl") >"$tmp/st.out" 2>"$tmp/st.err" &
dpid=$!
ranks_of "$tmp/st" 2 >/dev/null
kill -STOP "$agent2"
for _ in $(seq 300); do kill -0 "$dpid" 2>/dev/null || break; sleep 0.1; done  # guard against a hang only
kill -0 "$dpid" 2>/dev/null && { not_ok "agent: dsrun ends when an agent goes silent"; kill -9 "$dpid"; }
wait "$dpid"; rc=$?
kill -CONT "$agent2"
check "agent: a silent agent (SIGSTOP) ends the job with exit 1" test "$rc" = 1
check "agent: ... naming the silent host and the heartbeat budget (5 missed 500 ms agent beats)" \
  grep -qE "dsrun: agent 127\.0\.0\.2:$port: host 127\.0\.0\.2 silent for [0-9]+ ms \(heartbeat budget 2500 ms; network down or host hung\); lost rank 1" "$tmp/st.err"
# Two Ctrl-C while an agent is silent: dsrun ends at once with 130 (the heartbeat verdict would be 1).
sl=$(sleeper "$tmp/st2")
sigint_default $(dsrun_with agent "$tmp/hostfile2" --no_python --no_local_rank "$sl") >"$tmp/st2.out" 2>"$tmp/st2.err" &
dpid=$!
ranks_of "$tmp/st2" 2 >/dev/null
kill -STOP "$agent2"
kill -INT "$dpid"; sleep 0.3; kill -INT "$dpid"
wait "$dpid"; rc=$?
kill -CONT "$agent2"
check "agent: two Ctrl-C while an agent is silent end dsrun with 130" test "$rc" = 130
sleep 0.5
check "agent: ... and nothing of those jobs is left once the agent runs again" \
  test "$(( $(ranks_of "$tmp/st" 2) + $(ranks_of "$tmp/st2" 2) ))" = 0
fi
if want 8; then
# --- 8: the earliest failure across hosts is named, not the first reported ------------------------------
# Rank 1 (127.0.0.2) fails first (0.3 s), but a process outside its group holds its output pipe, which
# delays the agent's report by its 2 s drain deadline; rank 0 (127.0.0.1) fails at 1.5 s and is
# reported at once, so its report arrives first.
cat >"$tmp/cause.sh" <<'EOS'
#!/bin/sh
if [ "$RANK" = 1 ]; then setsid sleep 4 & sleep 0.3; exit 3; fi
sleep 1.5; echo "rank 0: connection closed by peer" >&2; exit 1
EOS
chmod +x "$tmp/cause.sh"
# shellcheck disable=SC2046
DSRUN_JOB_ID=oas-8 $(dsrun_with agent "$tmp/hostfile2" --no_python --no_local_rank "$tmp/cause.sh") \
  >"$tmp/8.out" 2>"$tmp/8.err"
rc=$?
check "agent: the exit code is the earliest failure's (3), not the first reported (1)" test "$rc" = 3
check "agent: the summary names rank 1 and counts rank 0 as a consequence" \
  grep -qE "dsrun: rank 1 \(127\.0\.0\.2 pid [0-9]+\) exited with code 3; terminated [0-9]+ other ranks?; 1 later failure counted as its consequence: rank 0 \(127\.0\.0\.1 pid [0-9]+\) exited with code 1" "$tmp/8.err"

fi

if [ "$failures" -ne 0 ]; then
  echo "# $failures check(s) failed; last dsrun stderr files:"; tail -n 5 "$tmp"/*.err
  echo "# agent logs:"; tail -n 20 "$tmp"/agent-*.log
  exit 1
fi
echo "# all output and signal checks passed"
