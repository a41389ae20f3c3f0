#!/usr/bin/env bash
# Launch overhead: dsrun vs torchrun starting ranks that do nothing (/bin/true), 2 and 16 ranks.
#
# Usage: bench/launch_overhead.sh [--runs N] [--dsrun PATH] [--no-tuned]
#   --runs N     timed runs per command (default 20), after one untimed warm-up run each
#   --dsrun PATH the dsrun binary (default: $DSRUN, else build/launcher/dsrun)
#   --no-tuned   skip the torchrun --monitor_interval 0.1 variant
#
# Every command runs once per round, rounds interleave all commands (rotating which goes first), so slow
# drifts of the machine's load hit every command alike. Prints a markdown table of medians on stdout;
# progress goes to stderr. A command that fails stops the benchmark with its stderr.
#
# torchrun is /usr/bin/python3 -m torch.distributed.run from Debian's python3-torch (1.13). On
# Python 3.11 its default "--redirects 0 --tee 0" crashes before starting any worker
# ("AttributeError: 'NoneType' object has no attribute 'get'" in multiprocessing/api.py to_map):
# Std.from_str("0") iterates the IntFlag Std to map "0" to Std.NONE, and since Python 3.11 iterating a
# Flag yields only its single-bit members, so NONE (0) and ALL (3) are never found and it returns None.
# No command-line value avoids it without changing what torchrun does (a mapping like "9:1" only fits
# rank counts below 10), so the benchmark runs torchrun's own main() through `python3 -c` with
# Std.from_str fixed to Std(int(value)) for the single-digit form, which is the value it should return.
set -euo pipefail

runs=20
tuned=1
dsrun_bin=${DSRUN:-}
while [ $# -gt 0 ]; do
  case $1 in
    --runs) runs=${2:?--runs needs a number}; shift 2 ;;
    --dsrun) dsrun_bin=${2:?--dsrun needs a path}; shift 2 ;;
    --no-tuned) tuned=0; shift ;;
    -h | --help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "launch_overhead.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
case $runs in '' | *[!0-9]* | 0*) echo "launch_overhead.sh: --runs must be a positive integer, got '$runs'" >&2; exit 2 ;; esac

repo=$(cd "$(dirname "$0")/.." && pwd)
dsrun_bin=${dsrun_bin:-$repo/build/launcher/dsrun}
if [ ! -x "$dsrun_bin" ]; then
  echo "launch_overhead.sh: dsrun binary '$dsrun_bin' not found or not executable" >&2
  echo "  hint: build it (scripts/build.sh) or pass --dsrun PATH / set DSRUN" >&2
  exit 1
fi
python=/usr/bin/python3
if ! "$python" -c 'import torch.distributed.run' 2>/dev/null; then
  echo "launch_overhead.sh: $python cannot import torch.distributed.run" >&2
  echo "  hint: install Debian's python3-torch (scripts/install_deps.sh)" >&2
  exit 1
fi

# torchrun with the Python 3.11 redirects fix described above; arguments follow as torchrun's own.
torchrun_main='
from torch.distributed.elastic.multiprocessing import api
_from_str = api.Std.from_str.__func__
def _fixed_from_str(cls, vm):
    return cls(int(vm)) if vm in ("0", "1", "2", "3") else _from_str(cls, vm)
api.Std.from_str = classmethod(_fixed_from_str)
from torch.distributed.run import main
main()
'
# A port of our own, so a test using the default 29500 at the same time cannot collide with torchrun's store.
port=${BENCH_MASTER_PORT:-29777}

names=()
cmds=()
add() { names+=("$1"); cmds+=("$2"); }
add "floor" "/bin/true"  # what the harness itself costs: one fork/exec/wait
for n in 2 16; do
  add "dsrun $n" "$(printf '%q ' "$dsrun_bin") --num_gpus $n --master_port $port --no_python /bin/true"
  add "torchrun $n" "$python -c \"\$torchrun_main\" --nproc_per_node $n --master_port $port --no_python /bin/true"
  if [ $tuned -eq 1 ]; then
    add "torchrun-tuned $n" \
      "$python -c \"\$torchrun_main\" --nproc_per_node $n --master_port $port --monitor_interval 0.1 --no_python /bin/true"
  fi
done
ncmd=${#cmds[@]}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_once INDEX: runs command INDEX, appends its wall time in ms to $tmp/INDEX.
# EPOCHREALTIME (bash >= 5) reads the clock without forking, unlike $(date +%s%N).
run_once() {
  local i=$1 start end
  start=${EPOCHREALTIME/./}
  if ! eval "${cmds[$i]}" >"$tmp/out" 2>"$tmp/err"; then
    echo "launch_overhead.sh: '${names[$i]}' failed: ${cmds[$i]}" >&2
    tail -n 20 "$tmp/err" >&2
    exit 1
  fi
  end=${EPOCHREALTIME/./}
  echo $((end - start)) >>"$tmp/$i.us"
}

echo "warming up ($ncmd commands)..." >&2
for ((i = 0; i < ncmd; i++)); do
  run_once "$i"
  rm -f "$tmp/$i.us"
done
for ((r = 0; r < runs; r++)); do
  echo "round $((r + 1))/$runs" >&2
  for ((k = 0; k < ncmd; k++)); do
    run_once $(((r + k) % ncmd))
  done
done

# median_us INDEX: median of the recorded wall times, in microseconds.
median_us() {
  sort -n "$tmp/$1.us" | awk '{v[NR] = $1} END {m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%d", m}'
}
ms() { awk -v us="$1" 'BEGIN {printf "%.1f", us / 1000}'; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.2f%%", 100 * a / b}'; }
index_of() {
  local i
  for ((i = 0; i < ncmd; i++)); do [ "${names[$i]}" = "$1" ] && echo $i && return; done
}

torch_version=$("$python" -c 'import torch; print(torch.__version__)')
echo "| ranks | dsrun median | torchrun median | dsrun / torchrun |$([ $tuned -eq 1 ] && echo ' torchrun --monitor_interval 0.1 median | dsrun / tuned torchrun |')"
echo "|---:|---:|---:|---:|$([ $tuned -eq 1 ] && echo '---:|---:|')"
for n in 2 16; do
  d=$(median_us "$(index_of "dsrun $n")")
  t=$(median_us "$(index_of "torchrun $n")")
  line="| $n | $(ms "$d") ms | $(ms "$t") ms | $(pct "$d" "$t") |"
  if [ $tuned -eq 1 ]; then
    tt=$(median_us "$(index_of "torchrun-tuned $n")")
    line="$line $(ms "$tt") ms | $(pct "$d" "$tt") |"
  fi
  echo "$line"
done
echo
echo "Harness floor (\`/bin/true\` alone): $(ms "$(median_us "$(index_of floor)")") ms." \
  "Medians of $runs interleaved runs of \`--no_python /bin/true\` per command, same machine, same run" \
  "($(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; torch $torch_version," \
  "$("$python" --version 2>&1)). torchrun = \`python3 -m torch.distributed.run --nproc_per_node N\`" \
  "with its defaults (monitor_interval 5 s) and the Python 3.11 redirects fix described in bench/launch_overhead.sh."
