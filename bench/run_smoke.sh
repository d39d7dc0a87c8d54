#!/usr/bin/env bash
# run_smoke.sh — `kevin run` end to end on a real backend without a model server: a scripted
# policy answers every turn of 2 trajectories x 2 turns with the shipped example kernels of
# two tasks, then `kevin report` renders the run. Checks the rollout on the GPU machine.
# Usage: bench/run_smoke.sh BUILD_DIR OUT_DIR [backend]   (backend: cuda (default) | cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(cd "$1" && pwd)"; out="$(mkdir -p "$2" && cd "$2" && pwd)"; backend="${3:-cuda}"
ext=$([ "$backend" = cuda ] && echo cu || echo cpp)
script="$out/script.jsonl"
: > "$script"
for task in 001_square_matmul 051_sum_dim1; do
  for i in 1 2 3 4; do
    python3 - "examples/level1/$task.$ext" "$task" "$ext" >> "$script" <<'PY'
import json, sys
code = open(sys.argv[1]).read()
fence = "cuda" if sys.argv[3] == "cu" else "cpp"
print(json.dumps({"match": sys.argv[2], "response": f"```{fence}\n{code}```\nThe shipped example kernel."}))
PY
  done
done
rm -rf "$out/run"
"$build/bin/kevin" run --tasks level1/001_square_matmul,level1/051_sum_dim1 --trajectories 2 --turns 2 \
  --policy "scripted:$script" --backend "$backend" --out "$out/run"
"$build/bin/kevin" report "$out/run"
