#!/usr/bin/env bash
# Every row of the speed issue's tables (attention forms, matmul forms in four precisions, the tile
# configs, the grouped matmul, first calls) against Triton in the same run, on the GPU at hand.
#
#   bash benchmarks/sweep.sh PART OUT_DIR
#
# PART is one of the parts below; each ends well inside the 10 minutes one device call may take,
# so a session runs the whole sweep as seven calls on one warm machine:
#
#   attention   16 rows: descriptors, block_ptr (8 warps at D128), trans, tutorial; D64, D128; causal or not
#   attention-bf16  the same 16 rows in bf16
#   configs     item 3's tiles at 4096^3 (TF32 and f16 128x256x32 on 8 warps, f16 and exact f32 64x64x32),
#               then the f16 forms
#   tf32-bf16   the TF32 and bf16 forms
#   ieee        the exact-f32 forms
#   rest        the grouped matmul (3 first calls a row), then benchmarks/first_call.py
#   recheck     the form rows whose one first call was above Triton's, again with 3 first calls each
#               (benchmarks/recheck_first_calls.py over the forms_*.json the parts before wrote to
#               OUT_DIR: the same OUT_DIR, on the same machine)
#
# Each row's table goes to OUT_DIR/PART.txt, and its JSON to OUT_DIR/<row>.json where the script writes
# one, all of them in OUT_DIR/PART.json too. The GPU's name and the commit come first.
# `python benchmarks/sweep_check.py OUT_DIR` then prints the tables and what misses the issue's targets.
set -u
part=${1:?which part: attention, attention-bf16, configs, tf32-bf16, ieee, rest or recheck}
out=${2:?where the results go}
case $part in
  attention|attention-bf16|configs|tf32-bf16|ieee|rest|recheck) ;;
  *) echo "unknown part '$part': attention, attention-bf16, configs, tf32-bf16, ieee, rest or recheck" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.." || exit 1
mkdir -p "$out"
log="$out/$part.txt"
{
  nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  git log --oneline -1 2>/dev/null
  date -u +%FT%TZ
} > "$log"

written=()  # the JSON files this part's rows wrote
row() {  # row NAME SECONDS COMMAND...: one benchmark, its output appended under a heading
  local name=$1 seconds=$2 arg previous=
  shift 2
  echo "== $name" >> "$log"
  for arg in "$@"; do
    [ "$previous" = --json ] && written+=("$arg")
    previous=$arg
  done
  timeout "$seconds" "$@" 2>&1 | grep -v "UserWarning\|compiled = self" >> "$log"
}

case $part in
  attention|attention-bf16)
    dtype=f16
    [ $part = attention-bf16 ] && dtype=bf16
    for form in descriptors block_ptr trans tutorial; do
      for dim in 64 128; do
        warps=4
        [ $form = block_ptr ] && [ $dim = 128 ] && warps=8
        for causal in "" --causal; do
          row "attention $dtype $form D$dim $causal" 35 python3 benchmarks/attention.py --form $form \
            --dtype $dtype --head-dim $dim --num-warps $warps --ctx 4096 --repeat 10 $causal \
            --json "$out/att_${dtype}_${form}_$dim$causal.json"
        done
      done
    done ;;
  configs)
    row "tf32 128x256x32 w8" 45 python3 benchmarks/matmul.py --sizes 4096 --configs 128x256x32 --num-warps 8 \
      --dtype f32 --precision tf32 --repeat 10 --rounds 3 --json "$out/cfg_tf32_128x256x32.json"
    row "f16 128x256x32 w8" 45 python3 benchmarks/matmul.py --sizes 4096 --configs 128x256x32 --num-warps 8 \
      --dtype f16 --repeat 10 --rounds 3 --json "$out/cfg_f16_128x256x32.json"
    row "f16 64x64x32" 45 python3 benchmarks/matmul.py --sizes 4096 --configs 64x64x32 --dtype f16 --repeat 10 \
      --rounds 3 --json "$out/cfg_f16_64x64x32.json"
    row "ieee 64x64x32" 60 python3 benchmarks/matmul.py --sizes 4096 --configs 64x64x32 --dtype f32 \
      --precision ieee --repeat 10 --rounds 3 --json "$out/cfg_ieee_64x64x32.json"
    row "forms f16" 200 python3 benchmarks/matmul_forms.py --dtype f16 --first-calls 1 --repeat 10 \
      --json "$out/forms_f16.json" ;;
  tf32-bf16)
    row "forms tf32" 200 python3 benchmarks/matmul_forms.py --dtype f32 --precision tf32 --first-calls 1 \
      --repeat 10 --json "$out/forms_tf32.json"
    row "forms bf16" 200 python3 benchmarks/matmul_forms.py --dtype bf16 --first-calls 1 --repeat 10 \
      --json "$out/forms_bf16.json" ;;
  ieee)
    row "forms ieee" 450 python3 benchmarks/matmul_forms.py --dtype f32 --precision ieee --first-calls 1 \
      --repeat 5 --json "$out/forms_ieee.json" ;;
  rest)
    row "grouped" 200 python3 benchmarks/grouped_matmul.py --repeat 10 --first-calls 3 --json "$out/grouped.json"
    row "first calls" 300 python3 benchmarks/first_call.py --rounds 5 --json "$out/first_call.json" ;;
  recheck)
    set -- "$out"/forms_*.json
    if [ -e "$1" ]; then
      row "first calls again" 560 python3 benchmarks/recheck_first_calls.py "$@" --first-calls 3 --out "$out" \
        --json "$out/recheck_first_calls.json"
    else
      echo "no forms_*.json in $out: run configs, tf32-bf16 and ieee there first" >> "$log"
    fi ;;
esac
# All of the part's JSON in one file too (OUT_DIR/PART.json, by file name): the GPU machine returns
# eight files a call, and the attention part writes sixteen.
python3 - "$out/$part.json" "${written[@]}" <<'MERGE'
import json, sys
from pathlib import Path
merged = {}
for name in sys.argv[2:]:
    try:
        merged[Path(name).name] = json.loads(Path(name).read_text())
    except (OSError, ValueError):
        pass  # a row that wrote nothing (cut short): its table says so
Path(sys.argv[1]).write_text(json.dumps(merged, indent=1) + "\n")
MERGE
date -u +%FT%TZ >> "$log"
