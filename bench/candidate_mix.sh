# candidate_mix.sh — sourced by the engine benchmarks: write_candidate_mix BACKEND FILE writes
# the benchmark's fixed candidate mix as `kevin eval --batch` lines (absolute paths): the
# level-1 examples, the good and wrong kernel fixtures and one hostile one.
write_candidate_mix() {
  local backend="$1" mix="$2" root ext f name task
  root="$(pwd)"
  ext=$([ "$backend" = cuda ] && echo cu || echo cpp)
  grep level1 "examples/demo-$backend.jsonl" | \
    sed -e "s#\"\\.\\./tasks/#\"$root/tasks/#" -e "s#\"candidate\": \"level#\"candidate\": \"$root/examples/level#" > "$mix"
  for f in tests/fixtures/kernels/$backend/good_*.$ext tests/fixtures/kernels/$backend/wrong_*.$ext \
           tests/fixtures/kernels/$backend/hostile_malloc_huge.$ext; do
    [ -f "$f" ] || continue
    name=$(basename "$f" ."$ext")
    task=$(python3 -c "import json,sys; print(next(e['task'] for e in json.load(open('tests/fixtures/kernels/manifest.json')) if e['file']=='$backend/$name.$ext'))")
    echo "{\"task\": \"$root/tests/fixtures/tasks/$task.py\", \"candidate\": \"$root/$f\"}" >> "$mix"
  done
}
