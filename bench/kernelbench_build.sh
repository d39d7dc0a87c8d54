#!/usr/bin/env bash
# kernelbench_build.sh — how long building a KernelBench answer's extension takes: kevin's
# compile driver (cold: not in its cache; then cached) against PyTorch's own load_inline (cold,
# into an empty TORCH_EXTENSIONS_DIR; then its cached load), on the same answers, one at a time.
# kevin's cache is made once first with another answer, and the time that takes printed apart:
# it makes the toolchain's extras (the precompiled torch header, the lite header's bridge),
# once per PyTorch. Prints one line per answer and the medians; the figures go to
# docs/benchmarks.md.
# Usage (GPU machine, after building): bash bench/kernelbench_build.sh [ANSWER.py ...]
#   default answers: the honest CUDA fixtures of tests/fixtures/kernelbench; answers with a
#   `# problem: levelN/FILE.py` header are judged on that problem of $KB_ROOT's KernelBench.
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${KEVIN_PYTHON:-python3}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
answers=("$@"); [ ${#answers[@]} -gt 0 ] || answers=(tests/fixtures/kernelbench/good_*_cuda.py)
seconds() { awk "BEGIN{printf \"%.2f\", $2 - $1}"; }
# load_inline's time: importing the answer runs its load_inline (the build on a cold folder).
load_inline_s() {  # ANSWER FOLDER
  TORCH_EXTENSIONS_DIR="$2" "$PY" - "$1" <<'PY'
import runpy, sys, time
t0 = time.perf_counter()
runpy.run_path(sys.argv[1])
print("%.2f" % (time.perf_counter() - t0))
PY
}
kevin_compile_s() {  # TASK ANSWER CACHE
  build/bin/kevin eval --task "$1" --candidate "$2" --json --cache-dir "$3" 2>/dev/null |
    "$PY" -c 'import json,sys; r=json.load(sys.stdin); print("%.2f %s %s" % (r["compile_ms"] / 1000, r["verdict"], r.get("cache_hit")))'
}
cache="$work/cache"
start=$(date +%s.%N)
kevin_compile_s tasks/level1/026_relu.py tests/fixtures/kernelbench/good_relu.py "$cache" >/dev/null
echo "kevin's first build in a new cache, with the toolchain's extras: $(seconds "$start" "$(date +%s.%N)") s"
printf '%-28s %12s %12s %12s %12s\n' answer "kevin cold" "kevin cached" "load_inline" "li cached"
rows=()
for answer in "${answers[@]}"; do
  # kevin's fixtures name a shipped task; answers for KernelBench's problems name one of $KB_ROOT.
  if grep -q '^# task:' "$answer"; then task="tasks/$(grep -m1 '^# task:' "$answer" | awk '{print $3}').py"
  else task="${KB_ROOT:-.deps/kernelbench}/KernelBench/$(grep -m1 '^# problem:' "$answer" | awk '{print $3}')"; fi
  ext="$work/ext-$(basename "$answer")"
  read -r cold verdict _ <<< "$(kevin_compile_s "$task" "$answer" "$cache")"
  read -r cached _ hit <<< "$(kevin_compile_s "$task" "$answer" "$cache")"
  li_cold=$(load_inline_s "$answer" "$ext" | tail -1)
  li_cached=$(load_inline_s "$answer" "$ext" | tail -1)
  printf '%-28s %11ss %11ss %11ss %11ss  (%s, cache hit %s)\n' "$(basename "$answer")" "$cold" "$cached" "$li_cold" "$li_cached" "$verdict" "$hit"
  rows+=("$cold $cached $li_cold $li_cached")
done
printf '%s\n' "${rows[@]}" | "$PY" -c '
import statistics, sys
cols = list(zip(*[map(float, l.split()) for l in sys.stdin if l.strip()]))
names = ["kevin cold", "kevin cached", "load_inline cold", "load_inline cached"]
print("median: " + ", ".join("%s %.2f s" % (n, statistics.median(c)) for n, c in zip(names, cols)))'
