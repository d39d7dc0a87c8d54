#!/usr/bin/env bash
# kernelbench_problems.sh — `kevin tasks check` on a KernelBench checkout's level1-3 problems at full
# (CUDA) size: raw outputs under OUTDIR/levelN.{out,log,rc}, then a per-level summary and a table of
# flagged problems (bench/kernelbench_problems_table.py → OUTDIR/summary.md).
# Usage: bash bench/kernelbench_problems.sh KB_ROOT OUTDIR
#   env: KEVIN, BACKEND=cuda, LEVELS="1 2 3", REDO=1, CHUNK=N (N problems per kevin call, each resumable)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
usage="usage: bash bench/kernelbench_problems.sh KB_ROOT OUTDIR"
kb=${1:?$usage}
out=${2:?$usage}
kevin=${KEVIN:-$here/../build/bin/kevin}
backend=${BACKEND:-cuda}
python=${PYTHON:-python3}

[ -x "$kevin" ] || { echo "error: kevin binary $kevin not found (set KEVIN=...)" >&2; exit 2; }
# A checkout's root holds KernelBench/levelN; a folder of levels works too.
levels_dir=$kb/KernelBench
[ -d "$levels_dir" ] || levels_dir=$kb
[ -d "$levels_dir" ] || { echo "error: no KernelBench problems under $kb" >&2; exit 2; }
mkdir -p "$out"

# check NAME IDS...: one `kevin tasks check` into OUTDIR/NAME.{out,log,rc}; a finished one (its .rc
# written) is kept unless REDO=1, an interrupted one is checked again. Text output (not --json): one
# line per task as it is checked, so a cut-short run keeps what it did.
check() {
  local name=$1; shift
  if [ -f "$out/$name.rc" ] && [ -z "${REDO:-}" ]; then
    echo "$name: kept from an earlier run ($out/$name.out)"
    return
  fi
  rm -f "$out/$name.rc"
  echo "$name: kevin tasks check --backend $backend $* ($(date +%T))"
  "$kevin" tasks check --tasks "$kb" --backend "$backend" "$@" > "$out/$name.out" 2> "$out/$name.log"
  local rc=$?
  echo "$rc" > "$out/$name.rc"
  echo "$name: exit $rc, $(tail -1 "$out/$name.log")"
}

for level in ${LEVELS:-1 2 3}; do
  suite=level$level
  if [ ! -d "$levels_dir/$suite" ]; then
    echo "$suite: not in $levels_dir, skipped"
    continue
  fi
  if [ "${CHUNK:-0}" -le 0 ]; then
    check "$suite" --suite "$suite"
    continue
  fi
  # CHUNK problems per call (ids in natural order, files starting with _ ignored as kevin does).
  mapfile -t ids < <(cd "$levels_dir" && ls "$suite" | grep '\.py$' | grep -v '^_' | sort -V | sed "s|^|$suite/|; s|\.py$||")
  for ((i = 0; i < ${#ids[@]}; i += CHUNK)); do
    check "$suite.part$((i / CHUNK))" "${ids[@]:i:CHUNK}"
  done
done

"$python" "$here/kernelbench_problems_table.py" "$out" "$levels_dir" | tee "$out/summary.md"
