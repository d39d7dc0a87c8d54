#!/usr/bin/env bash
# train_sizing.sh — the sizing table of docs/trainer.md: `kevin train --dry-run`'s memory
# estimate (model state per replica: base weights, fp32 gradients, AdamW moments) for the published
# Qwen2.5 shapes, full fine-tuning and LoRA rank 32. The model folders hold only config.json
# (plus empty weight and tokenizer files, which a dry run does not read).
# Usage: bench/train_sizing.sh BUILD_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
kevin="$(cd "$1" && pwd)/bin/kevin"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT
# name vocab hidden intermediate layers heads kv_heads tied
shapes="0.5B 151936 896 4864 24 14 2 true
1.5B 151936 1536 8960 28 12 2 true
7B 152064 3584 18944 28 28 4 false
14B 152064 5120 13824 48 40 8 false
32B 152064 5120 27648 64 40 8 false"
echo "| model | parameters | full fine-tuning | LoRA rank 32 (trainable) |"
echo "|---|---|---|---|"
while read -r name vocab hidden inter layers heads kv tied; do
  dir="$work/$name"; mkdir -p "$dir"; : > "$dir/tokenizer.json"; : > "$dir/model.safetensors"
  printf '{"model_type": "qwen2", "architectures": ["Qwen2ForCausalLM"], "vocab_size": %s, "hidden_size": %s, "intermediate_size": %s, "num_hidden_layers": %s, "num_attention_heads": %s, "num_key_value_heads": %s, "tie_word_embeddings": %s}\n' \
    "$vocab" "$hidden" "$inter" "$layers" "$heads" "$kv" "$tied" > "$dir/config.json"
  row() {  # $1 = lora rank → "TOTAL (TRAINABLE)" from the dry run's memory line
    printf '{"model": "%s", "out": "%s/out", "tasks": "level1", "lora": {"rank": %s}, "engine": {"fake": true}}' "$dir" "$work" "$1" > "$work/c.json"
    local out; out=$("$kevin" --log-level off train --config "$work/c.json" --dry-run)
    echo "$(sed -n 's/^ *model state: .* = \([0-9.]* GiB\)$/\1/p' <<< "$out")" \
      "($(sed -n 's/^memory:.*, \([0-9.]*M\) trainable)$/\1/p' <<< "$out"))"
  }
  row 0 > /dev/null
  params=$("$kevin" --log-level off train --config "$work/c.json" --dry-run | sed -n 's/^model:.*(Qwen2, \([0-9.]*B\) parameters.*/\1/p')
  echo "| Qwen2.5-$name | $params | $(row 0) | $(row 32) |"
done <<< "$shapes"
