#!/usr/bin/env bash
# train_smoke.sh — `kevin train` end to end with a real engine: the tests' tiny model
# (bench/tiny_model) samples 2 trajectories x 2 turns on two level-1 tasks for two steps, every
# answer is compiled and judged by the engine on BACKEND, the trainer updates on DEVICE, then
# the run resumes for a third step and `kevin report` renders it. Checks the loop on the GPU,
# not learning: the model's answers are mostly unclosed code blocks (parse_error) and code the
# engine's gate rejects, so rewards stay 0.
# Usage: bench/train_smoke.sh BUILD_DIR OUT_DIR [backend]   (backend: cuda (default) | cpu)
set -euo pipefail
cd "$(dirname "$0")/.."
build="$(cd "$1" && pwd)"; out="$(mkdir -p "$2" && cd "$2" && pwd)"; backend="${3:-cuda}"
device=$([ "$backend" = cuda ] && echo cuda || echo cpu)
rm -rf "$out/model" "$out/train"
"$build/bench/tiny_model" "$out/model"
write_config() {  # $1 = steps
  cat > "$out/train.json" <<JSON
{"model": "$out/model", "out": "$out/train", "split": "",
 "tasks": ["level1/001_square_matmul", "level1/051_sum_dim1"],
 "steps": $1, "tasks_per_step": 2, "device": "$device",
 "engine": {"backend": "$backend"},
 "rollout": {"trajectories": 2, "turns": 2, "max_tokens": 24, "temperature": 1.0, "parallel": 4},
 "optimizer": {"lr": 0.01}}
JSON
}
write_config 2
"$build/bin/kevin" train --config "$out/train.json"
write_config 3
"$build/bin/kevin" train --config "$out/train.json"
log="$out/train/train_log.jsonl"
steps=$(grep -c '"kind":"train"' "$log" || true)
echo "train_log: $steps training lines (expected 3)"
python3 - "$log" "$out/train/rollouts" <<'PY'
import collections, glob, json, os, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print({k: r.get(k) for k in ("kind", "step", "turns", "reward_mean", "correct_rate", "loss", "grad_norm",
                                 "gen_tokens_per_s", "rollout_s", "update_s")})
verdicts = collections.Counter()
for path in glob.glob(os.path.join(sys.argv[2], "*", "trajectories.jsonl")):
    verdicts.update(json.loads(line).get("verdict") for line in open(path))
print("verdicts of all turns:", dict(verdicts))
PY
"$build/bin/kevin" report "$out/train" | tail -5
[ "$steps" = 3 ]
