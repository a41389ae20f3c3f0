#!/bin/bash
# The main job learns (examples/train_gpt.py through dsrun and dsrt), sharness style: each check prints
# "ok N - ..." or "not ok N - ...", and the script exits non-zero if any check failed.
#   gpt_learns.sh DSRUN PYTHON_PACKAGE_DIR [PYTHON]
# Two ranks train a 2-layer GPT for 60 steps with ZeRO stage 2 and save a checkpoint; the held-out validation
# loss must fall well below the untrained one (ln 96 = 4.56: uniform over the vocabulary) and a sample must be
# printed; its csv_monitor files hold one training loss per step and the validation losses, and rank 0 draws
# loss_curve.png from them (with matplotlib; without it the job must say so). A second run resumes from the
# checkpoint (same validation loss) for 10 more steps, continuing the CSV files. Without the
# corpus (Debian's `fortunes`) or a Python with torch and dsrt the script says so and exits 77 (CTest: skipped).
set -u
DSRUN=${1:?usage: gpt_learns.sh DSRUN PYTHON_PACKAGE_DIR [PYTHON]}
PKG=${2:?usage: gpt_learns.sh DSRUN PYTHON_PACKAGE_DIR [PYTHON]}
PYTHON=${3:-/usr/bin/python3}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=/usr/share/games/fortunes
if [ ! -e "$CORPUS/fortunes" ]; then
  echo "# SKIP: no corpus at $CORPUS (apt-get install fortunes, as scripts/install_deps.sh does)"; exit 77
fi
if ! PYTHONPATH=$PKG "$PYTHON" -c 'import torch, dsrt' 2>/dev/null; then
  echo "# SKIP: '$PYTHON' cannot import torch and dsrt (from $PKG)"; exit 77
fi
WORK=$(mktemp -d /tmp/dsrun-gpt-learns.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
n=0
failed=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() {
  n=$((n + 1)); failed=$((failed + 1)); echo "not ok $n - $1"; shift
  for line in "$@"; do echo "#   $line"; done
}
show() { echo "#   --- $1:"; sed 's/^/#   | /' "$1" | tail -"${2:-30}"; }

# train OUT [ARGS...]: 2 ranks of train_gpt.py (killed after 600 s); sets rc.
train() {
  local out=$1
  shift
  OMP_NUM_THREADS=1 PYTHONPATH=$PKG timeout -s KILL 600 "$DSRUN" --num_gpus 2 --python "$PYTHON" \
    "$ROOT/examples/train_gpt.py" --n_layer 2 --print_every 20 --eval_every 30 --eval_windows 128 --sample_len 60 \
    "$@" >"$out" 2>&1
  rc=$?
}
# validation OUT STEP: the validation loss rank 0 printed at STEP (empty if none).
validation() { sed -n "s/^step *$2 | validation loss \([0-9.]*\)$/\1/p" "$1" | tail -1; }

train "$WORK/first" --steps 60 --save_dir "$WORK/ckpt" --monitor_dir "$WORK/runs"
if [ "$rc" = 0 ]; then ok "60 steps through dsrun exit 0"; else
  not_ok "60 steps through dsrun exit 0, got $rc"; show "$WORK/first"
fi
v0=$(validation "$WORK/first" 0) v60=$(validation "$WORK/first" 60)
if [ -n "$v0" ] && [ -n "$v60" ] && awk -v a="$v0" -v b="$v60" 'BEGIN {exit !(a > 4.3 && b < a - 1.0)}'; then
  ok "validation loss falls from $v0 (untrained) to $v60 after 60 steps"
else
  not_ok "validation loss falls by more than 1.0 in 60 steps, got '$v0' -> '$v60'"; show "$WORK/first"
fi
if grep -A1 '^sample:$' "$WORK/first" | tail -1 | grep -q '^Q: What.'; then
  ok "a generated sample follows the prompt"
else
  not_ok "a generated sample follows the prompt"; show "$WORK/first" 8
fi

# rows FILE: the data rows of a csv_monitor file (not its header lines).
rows() { grep -c '^[0-9]' "$1" 2>/dev/null || true; }
# The loss curve, when this Python has matplotlib; otherwise the job's line saying why there is none.
check_curve() {
  local out=$1 what=$2
  if "$PYTHON" -c 'import matplotlib' 2>/dev/null; then
    if grep -q "^loss curve: $WORK/runs/gpt/loss_curve.png$" "$out" &&
       [ "$(head -c 8 "$WORK/runs/gpt/loss_curve.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then
      ok "$what: rank 0 drew runs/gpt/loss_curve.png (a PNG)"
    else
      not_ok "$what: rank 0 draws runs/gpt/loss_curve.png"; show "$out" 8
    fi
  else
    echo "# SKIP: '$PYTHON' cannot import matplotlib: no loss curve to check (apt-get install python3-matplotlib)"
    if grep -q '^loss curve not drawn: matplotlib is not installed' "$out"; then
      ok "$what: without matplotlib the job says the loss curve was not drawn"
    else
      not_ok "$what: without matplotlib the job says the loss curve was not drawn"; show "$out" 8
    fi
  fi
}
t60=$(rows "$WORK/runs/gpt/Train_Samples_train_loss.csv") val3=$(rows "$WORK/runs/gpt/Validation_loss.csv")
if [ "$t60" = 60 ] && [ "$val3" = 3 ]; then
  ok "csv_monitor wrote 60 training losses and 3 validation losses (steps 0, 30, 60)"
else
  not_ok "csv_monitor writes 60 training losses and 3 validation losses, got '$t60' and '$val3'"
  ls -l "$WORK/runs/gpt" 2>&1 | sed 's/^/#   /'
fi
check_curve "$WORK/first" "first run"

train "$WORK/second" --steps 70 --load_dir "$WORK/ckpt" --monitor_dir "$WORK/runs"
r60=$(validation "$WORK/second" 60) v70=$(validation "$WORK/second" 70)
if [ "$rc" = 0 ] && grep -q '^resumed from .* at step 60 ' "$WORK/second" && [ -n "$v70" ] &&
   awk -v a="$v60" -v b="$r60" 'BEGIN {d = a - b; exit !(b != "" && d < 1e-3 && d > -1e-3)}'; then
  ok "resumes from the checkpoint with the same validation loss ($v60 -> $r60) and trains to step 70 ($v70)"
else
  not_ok "resumes from the checkpoint with the same validation loss, got rc $rc, '$v60' -> '$r60', step 70 '$v70'"
  show "$WORK/second"
fi

t70=$(rows "$WORK/runs/gpt/Train_Samples_train_loss.csv")
if [ "$t70" = 70 ]; then ok "the resumed run appended its 10 training losses (70 rows)"; else
  not_ok "the resumed run appends its 10 training losses to the 60, got '$t70' rows"
fi
check_curve "$WORK/second" "resumed run"

echo "1..$n"
[ $failed -eq 0 ]
