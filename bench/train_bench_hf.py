#!/usr/bin/env python3
# train_bench_hf.py — the baseline for bench/train_bench.cpp: the same random Qwen2 shape,
# batch and precision in HF transformers + PyTorch (training step under bf16 autocast with
# fp32 AdamW; sampling with `generate` in bf16, full-vocabulary sampling, no early stop).
# Prints one JSON object. Usage:
#   python3 bench/train_bench_hf.py [--quick] [--generate-only] [--profile TRACE.json]
import json
import sys
import time

import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

H200_PEAK_BF16 = 989.4e12


def config():
    return Qwen2Config(
        vocab_size=151936,
        hidden_size=896,
        intermediate_size=4864,
        num_hidden_layers=24,
        num_attention_heads=14,
        num_key_value_heads=2,
        rope_theta=1e6,
        tie_word_embeddings=True,
        attn_implementation="sdpa",
    )


def flops_per_token(c, seq, params):
    return 6.0 * params + 12.0 * c.num_hidden_layers * c.hidden_size * seq


def profile(step, path):
    from torch.profiler import ProfilerActivity

    with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        step()
        torch.cuda.synchronize()
    prof.export_chrome_trace(path)


def train(c, batch, seq, steps, trace=None):
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(c).cuda().float().train()
    params = sum(p.numel() for p in model.parameters())
    adam = torch.optim.AdamW(model.parameters(), lr=1e-5, weight_decay=0.0)
    ids = torch.randint(0, c.vocab_size, (batch, seq + 1), device="cuda")

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            adam.zero_grad()
            logits = model(input_ids=ids[:, :seq]).logits
            logp = torch.log_softmax(logits.float(), -1).gather(-1, ids[:, 1:, None])[..., 0]
            (-logp.mean()).backward()
        adam.step()

    for _ in range(3):
        step()
    if trace:
        profile(step, trace)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    torch.cuda.synchronize()
    tokens_per_s = batch * seq * steps / (time.perf_counter() - start)
    return {
        "batch": batch,
        "seq": seq,
        "steps": steps,
        "tokens_per_s": tokens_per_s,
        "mfu": tokens_per_s * flops_per_token(c, seq, params) / H200_PEAK_BF16,
    }


def sample(c, batch, prompt_len, new_tokens):
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(c).cuda().to(torch.bfloat16).eval()
    prompts = torch.tensor(
        [[(i * 7919 + r * 104729) % c.vocab_size for i in range(prompt_len)] for r in range(batch)],
        device="cuda",
    )
    kwargs = dict(
        attention_mask=torch.ones_like(prompts),
        do_sample=True,
        temperature=1.0,
        top_p=1.0,
        top_k=0,
        pad_token_id=0,
        eos_token_id=None,
    )
    model.generate(prompts, max_new_tokens=16, min_new_tokens=16, **kwargs)  # warm-up
    rates = []  # several runs, the median reported, as bench/train_bench.cpp does
    for _ in range(3):
        torch.cuda.synchronize()
        start = time.perf_counter()
        out = model.generate(
            prompts, max_new_tokens=new_tokens, min_new_tokens=new_tokens, **kwargs
        )
        torch.cuda.synchronize()
        produced = (out.shape[1] - prompt_len) * batch
        rates.append(produced / (time.perf_counter() - start))
    return {
        "batch": batch,
        "prompt_len": prompt_len,
        "new_tokens": new_tokens,
        "tokens": produced,
        "runs_tokens_per_s": rates,
        "tokens_per_s": sorted(rates)[len(rates) // 2],
    }


def main():
    import transformers

    quick = "--quick" in sys.argv
    c = config()
    result = {
        "model": "random Qwen2, Qwen2.5-0.5B shape",
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    trace = sys.argv[sys.argv.index("--profile") + 1] if "--profile" in sys.argv else None
    if "--generate-only" not in sys.argv:  # bench/generation.sh compares sampling alone
        result["train"] = train(
            c, 2 if quick else 8, 256 if quick else 2048, 2 if quick else 10, trace
        )
    result["generate"] = sample(c, 4 if quick else 32, 128, 32 if quick else 256)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
