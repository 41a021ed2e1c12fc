#!/usr/bin/env bash
# Runs every sample of samples/Makefile on the GPU under compute-sanitizer, once with
# memcheck (out-of-bounds and misaligned accesses) and once with racecheck (shared-memory
# hazards between threads), and fails if either reports anything.
#   tools/sanitize_samples.sh [KERNEL ...]     (default: every kernel of samples/Makefile)
# Needs a GPU, its driver and compute-sanitizer on PATH (the H200 machine has them).
set -uo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
DIR=${SANITIZE_DIR:-out-sanitize}
kernels=("$@")
if [ ${#kernels[@]} -eq 0 ]; then
  read -r -a kernels <<<"$(make -s -C samples -f Makefile -f - print-kernels <<<'print-kernels: ; @echo $(KERNELS)')"
fi
# Build every stage first without the sanitizer: only the launches run under it.
make -s -C samples OUT="$DIR" PYTHON="$PYTHON" >/dev/null || exit 1
failed=()
for tool in memcheck racecheck; do
  for k in "${kernels[@]}"; do
    log="samples/$DIR/$k.$tool.log"
    if MYTRITON_BACKEND=cuda make -s -C samples OUT="$DIR" "run-$k" \
        MYTRITON="compute-sanitizer --tool $tool --error-exitcode 9 --print-limit 20 $PYTHON -m mytriton" \
        >"$log" 2>&1; then
      echo "$tool $k: clean ($(grep -m1 'SUMMARY' "$log" || echo 'no summary'))"
    else
      echo "$tool $k: FAILED"; tail -n 30 "$log"; failed+=("$tool:$k")
    fi
  done
done
echo "sanitized ${#kernels[@]} kernel(s) with memcheck and racecheck: ${#failed[@]} failure(s) ${failed[*]:-}"
[ ${#failed[@]} -eq 0 ]
