#!/usr/bin/env python3
# make_hf_fixture.py — writes tests/fixtures/tokenizer/expected_hf.json: Hugging Face
# `tokenizers`' ids for every string of corpus.json under qwen3/tokenizer.json (also with special
# tokens encoded as text, and decoded with special tokens skipped), plus the corpus chats rendered
# by the Qwen3 chat template through `transformers` when that is importable. For the GPU machine,
# which has both packages; tokenizer_test.cpp compares against the file when it exists.
# Usage: python3 dev/tokenizer/make_hf_fixture.py [--out PATH]
import argparse
import json
import pathlib
import sys

FIXTURES = pathlib.Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "tokenizer"


def encode_all(tokenizer, strings):
    return [tokenizer.encode(s, add_special_tokens=False).ids for s in strings]


def render_chats(tokenizer, chats):
    """The chats as the Qwen3 template renders them, with their ids; None without transformers."""
    try:
        from transformers import PreTrainedTokenizerFast
    except ImportError:
        return None
    config = json.loads((FIXTURES / "qwen3" / "tokenizer_config.json").read_text(encoding="utf-8"))
    fast = PreTrainedTokenizerFast(
        tokenizer_file=str(FIXTURES / "qwen3" / "tokenizer.json"),
        chat_template=config["chat_template"],
    )
    rendered = []
    for chat in chats:
        text = fast.apply_chat_template(
            chat["messages"], tokenize=False, add_generation_prompt=chat["add_generation_prompt"]
        )
        rendered.append({"text": text, "ids": tokenizer.encode(text, add_special_tokens=False).ids})
    return rendered


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=pathlib.Path, default=FIXTURES / "expected_hf.json")
    args = parser.parse_args()
    try:
        import tokenizers
    except ImportError:
        print(
            "make_hf_fixture: the tokenizers package is not installed; nothing written",
            file=sys.stderr,
        )
        return 2
    tokenizer = tokenizers.Tokenizer.from_file(str(FIXTURES / "qwen3" / "tokenizer.json"))
    corpus = json.loads((FIXTURES / "corpus.json").read_text(encoding="utf-8"))
    strings = corpus["strings"]

    ids = encode_all(tokenizer, strings)
    fields = {
        "generator": f"tokenizers {tokenizers.__version__}",
        "ids": ids,
        "decoded_skip_special": [tokenizer.decode(row, skip_special_tokens=True) for row in ids],
    }
    if hasattr(tokenizer, "encode_special_tokens"):  # tokenizers >= 0.15
        tokenizer.encode_special_tokens = True
        fields["ids_special_as_text"] = encode_all(tokenizer, strings)
        tokenizer.encode_special_tokens = False
    chats = render_chats(tokenizer, corpus["chats"])
    if chats is not None:
        fields["chats"] = chats

    # One line per string keeps diffs of the fixture readable.
    parts = []
    for key, value in fields.items():
        if isinstance(value, list):
            rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in value)
            parts.append(f"{json.dumps(key)}: [\n{rows}\n]")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(value)}")
    args.out.write_text("{" + ",\n".join(parts) + "}\n", encoding="utf-8")
    print(f"make_hf_fixture: {len(ids)} strings, {len(chats or [])} chats -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
