#!/usr/bin/env python3
# make_parity_fixture.py — writes tests/fixtures/parity/: a random tiny Qwen2 built and saved by
# HF transformers (model/), its fp32 logits for a left-padded batch of prompts, and one GRPO
# step on a fixed batch computed by a plain PyTorch reference of kevin's loss (docs/trainer.md, "GRPO loss":
# token-level clipped surrogate, clip 0.2/0.28, constant normalisation). parity_test.cpp
# compares kevin's model and grpo_update against these. Needs torch + transformers (the GPU
# machine has both). Usage: python3 dev/train/make_parity_fixture.py [--out DIR]
import argparse
import json
import pathlib

import torch
from safetensors.torch import save_file
from transformers import Qwen2Config, Qwen2ForCausalLM

FIXTURE = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "parity"
PROMPTS = [[5, 17, 250, 3, 99, 42, 7, 301, 11, 64], [400, 2, 77], [1, 2, 3, 4, 5, 6]]
CLIP_LOW, CLIP_HIGH, MAX_TOKENS = 0.2, 0.28, 8


def tiny_model():
    config = Qwen2Config(
        vocab_size=512,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        rope_theta=10000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=False,
        torch_dtype="float32",
        attn_implementation="eager",
    )
    torch.manual_seed(1234)
    model = Qwen2ForCausalLM(config).float().eval()
    with torch.no_grad():  # non-zero biases and norms so that every weight is exercised
        for name, param in model.named_parameters():
            if name.endswith("bias") or "norm" in name:
                param.add_(torch.randn_like(param) * 0.1)
    return model


def padded_batch(prompts):
    width = max(len(p) for p in prompts)
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for row, prompt in enumerate(prompts):
        ids[row, width - len(prompt) :] = torch.tensor(prompt)
        mask[row, width - len(prompt) :] = 1
    return ids, mask


def batch_logits(model, ids, mask):
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.no_grad():
        return model(input_ids=ids, attention_mask=mask, position_ids=positions).logits


def completion_logprobs(model, prompt, completion):
    """log p(completion token | prefix) for one unpadded sequence, differentiable."""
    ids = torch.tensor([prompt + completion])
    logits = model(input_ids=ids).logits[0, len(prompt) - 1 : -1]
    return torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(completion)[:, None])[:, 0]


def grpo_step(model):
    generator = torch.Generator().manual_seed(99)
    samples = []
    for i, (prompt, advantage) in enumerate(zip(PROMPTS + [[8, 9]], [1.0, -0.5, 0.75, -1.25])):
        length = [5, 8, 3, 6][i]
        completion = torch.randint(0, 512, (length,), generator=generator).tolist()
        with torch.no_grad():
            current = completion_logprobs(model, prompt, completion)
        old = current + (torch.rand(length, generator=generator) - 0.5) * 0.8  # some ratios clip
        samples.append(
            {
                "prompt": prompt,
                "completion": completion,
                "advantage": advantage,
                "old_logprobs": [float(x) for x in old.float()],
            }
        )
    model.zero_grad()
    total = torch.zeros(())
    for s in samples:
        logp = completion_logprobs(model, s["prompt"], s["completion"])
        ratio = torch.exp(logp - torch.tensor(s["old_logprobs"]))
        a = s["advantage"]
        surrogate = torch.minimum(ratio * a, ratio.clamp(1 - CLIP_LOW, 1 + CLIP_HIGH) * a)
        total = total - surrogate.sum()
    loss = total / (len(samples) * MAX_TOKENS)
    loss.backward()
    grad_norms = {n: float(p.grad.norm()) for n, p in model.named_parameters()}
    grad_norm = float(torch.sqrt(sum(p.grad.norm() ** 2 for p in model.parameters())))
    return {
        "samples": samples,
        "max_tokens": MAX_TOKENS,
        "clip_low": CLIP_LOW,
        "clip_high": CLIP_HIGH,
        "loss": float(loss),
        "grad_norm": grad_norm,
        "param_grad_norms": grad_norms,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=pathlib.Path, default=FIXTURE)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    model = tiny_model()
    (args.out / "model").mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out / "model", safe_serialization=True)
    ids, mask = padded_batch(PROMPTS)
    save_file(
        {
            "input_ids": ids,
            "attention_mask": mask,
            "logits": batch_logits(model, ids, mask).contiguous(),
        },
        str(args.out / "logits.safetensors"),
    )
    import transformers

    step = grpo_step(model)
    step["transformers"] = transformers.__version__
    step["torch"] = torch.__version__
    (args.out / "grpo_step.json").write_text(json.dumps(step, indent=1) + "\n")
    print(
        f"make_parity_fixture: {args.out} (loss {step['loss']:.6g}, grad norm {step['grad_norm']:.6g})"
    )


if __name__ == "__main__":
    main()
