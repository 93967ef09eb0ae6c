#!/usr/bin/env bash
# Issue 40's GPU measurements in one run (≤ 7 minutes on an H200), every section fail-soft:
#   A  packing: ours vs ours_packed K = 1, 4, 8 on pairs and tagging, random mBERT-shaped
#      encoder; ours' evaluation in fp32, bf16 and bf16 with token-budget batches (eval_variants)
#   B  side order: hf_best, ours, hf_best in one process (both orders of the two sides)
#   then each paper's own sections, xlt/papers/<paper>/benchmarks/gpu_section.sh, sourced in
#      name order with PY, DEVICE, OUTDIR, STAMP, PAPER_DIR (its folder) and `section` set here
#      (today one: C, an interpolation grid pair)
# JSON goes to $OUT (when set) and to benchmarks/gpu/ (the latter is what `make bill` reads once
# copied back into the repository). No network needed: random weights, synthetic data.
#
#   bash benchmarks/gpu/run_all.sh                 # on the GPU machine
#   bash benchmarks/gpu/run_all.sh --device cpu    # CPU smoke run: tiny sizes, seconds per section
set -u
cd "$(dirname "$0")/../.."
DEVICE=auto
[ "${1:-}" = "--device" ] && DEVICE="${2:-auto}"
DEST="benchmarks/gpu"
OUTDIR="${OUT:-$DEST}"
mkdir -p "$OUTDIR" "$DEST"
STAMP=$(date -u +%Y%m%d-%H%M)
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

# The first python with torch (and CUDA unless --device cpu): the repository's .venv, then the machine's.
PY=""
for cand in .venv/bin/python python3 python; do
  command -v "$cand" >/dev/null 2>&1 || [ -x "$cand" ] || continue
  if [ "$DEVICE" = cpu ]; then want="True"; else want="torch.cuda.is_available()"; fi
  if "$cand" -c "import torch, transformers; assert $want" >/dev/null 2>&1; then PY="$cand"; break; fi
done
if [ -z "$PY" ]; then
  echo "no python with torch + transformers${DEVICE:+ (device $DEVICE)}; tried .venv/bin/python python3 python" >&2
  for cand in python3 python; do command -v $cand >/dev/null && $cand -c 'import torch; print(torch.__version__, torch.cuda.is_available())'; done
  exit 2
fi
"$PY" -c 'import sys, torch, transformers; print(sys.executable, sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "", "transformers", transformers.__version__)'
if [ "$DEVICE" = auto ] && ! "$PY" -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then DEVICE=cpu; fi

if [ "$DEVICE" = cpu ]; then  # smoke sizes: checks that every section runs
  SIZE=(--shapes small --steps 4 --warmup-steps 1 --batch-size 4 --dev-examples 16 --threads 1 --device cpu)
  T_A=240; T_B=180; BUDGET_A=3; BUDGET_B=2
else
  SIZE=(--shapes mbert --steps 120 --warmup-steps 30 --batch-size 32 --dev-examples 500 --device cuda)
  T_A=210; T_B=130; BUDGET_A=2.9; BUDGET_B=1.6
fi

status=0
section() {  # name, timeout, command...: runs it, logs it, never stops the script
  local name=$1 limit=$2; shift 2
  echo "=== $name ($(date -u +%T), limit ${limit}s): $*"
  timeout -k 10 "$limit" "$@" 2>&1 | tee "$OUTDIR/$name.log" | grep -v '^\[' | tail -40
  local rc=${PIPESTATUS[0]}
  echo "=== $name: exit $rc"
  [ "$rc" = 0 ] || status=1
  return 0
}

section A_packing "$T_A" "$PY" benchmarks/gpu_throughput.py "${SIZE[@]}" --workloads pair tagging \
  --sides ours ours_packed --pack 1 4 8 --budget-minutes "$BUDGET_A" --json "$OUTDIR/pack_$STAMP.json"
section B_side_order "$T_B" "$PY" benchmarks/gpu_throughput.py "${SIZE[@]}" --workloads pair \
  --sides hf_best ours hf_best --budget-minutes "$BUDGET_B" --json "$OUTDIR/order_$STAMP.json"
for part in xlt/papers/*/benchmarks/gpu_section.sh; do
  [ -f "$part" ] || continue
  PAPER_DIR=$(dirname "$(dirname "$part")")
  . "$part"
done

if [ "$OUTDIR" != "$DEST" ]; then cp "$OUTDIR"/*_"$STAMP".json "$DEST"/ 2>/dev/null; fi
ls -l "$OUTDIR"
exit $status
