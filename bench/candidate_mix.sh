# candidate_mix.sh — sourced by the engine benchmarks: write_candidate_mix BACKEND FILE writes
# the benchmark's fixed candidate mix as `kevin eval --batch` lines (absolute paths): the
# level-1 examples, the good and wrong kernel fixtures and one hostile one.
# salt_candidate_mix MIX REPEAT DIR OUT writes REPEAT copies of MIX whose candidates are copied
# into DIR with a unique first line each, so every copy is a build of its own (a cold stream
# longer than one mix, where the slowest candidate no longer bounds the whole pass).
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

salt_candidate_mix() {
  local mix="$1" repeat="$2" dir="$3" out="$4"
  mkdir -p "$dir"
  python3 - "$mix" "$repeat" "$dir" "$out" <<'PY'
import json, os, sys
mix, repeat, folder, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
pairs = [json.loads(line) for line in open(mix) if line.strip()]
with open(out, "w") as f:
    for r in range(repeat):
        for i, p in enumerate(pairs):
            name = os.path.join(folder, f"{r}-{i}-{os.path.basename(p['candidate'])}")
            with open(name, "w") as c:
                c.write(f"// copy {r} of candidate {i}\n" + open(p["candidate"]).read())
            f.write(json.dumps({"task": p["task"], "candidate": name}) + "\n")
PY
}
