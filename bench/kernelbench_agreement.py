#!/usr/bin/env python3
# kernelbench_agreement.py — verdict agreement between kevin and KernelBench's own evaluator
# (eval_kernel_against_ref) on the KernelBench-format answers in bench/kernelbench_agreement/answers/.
# Usage: python3 bench/kernelbench_agreement.py --kernelbench KB_ROOT --kevin build/bin/kevin --out OUTDIR
#          [--jobs N] [--answers GLOB] [--timeout S] [--kevin-timeout S] [--skip-kernelbench] [--skip-kevin]
import argparse
import copy
import glob
import json
import os
import signal
import subprocess
import sys
import threading
import time
import types
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_ANSWERS = os.path.join(HERE, "kernelbench_agreement", "answers", "*.py")
HEADER_KEYS = ("problem", "expect", "kernelbench", "why")
METADATA_KEYS = (
    "excessive_speedup",
    "compilation_error_name",
    "compilation_error",
    "runtime_error_name",
    "runtime_error",
    "correctness_issue",
    "correctness_trials",
    "max_difference",
    "error_during_performance",
    "hardware",
)


# ---------------------------------------------------------------- answers and their headers


def read_headers(path):
    """The answer's leading `# key: value` lines (problem, expect, kernelbench, why)."""
    headers = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("#"):
                break
            key, sep, value = line[1:].partition(":")
            if sep and key.strip() in HEADER_KEYS:
                headers[key.strip()] = value.strip()
    return headers


def answer_name(path):
    return os.path.splitext(os.path.basename(path))[0]


# ---------------------------------------------------------------- KernelBench side (worker mode)


def install_stubs():
    """KernelBench imports LLM clients and helpers at module level that an evaluation never uses:
    stand in for whichever of them this Python lacks."""

    def module(name, **attrs):
        m = types.ModuleType(name)
        m.__dict__.update(attrs)
        m.__dict__["__kevin_stub__"] = True
        return m

    class Tqdm:
        def __init__(self, iterable=None, *args, **kwargs):
            self.iterable = iterable if iterable is not None else []

        def __iter__(self):
            return iter(self.iterable)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, *args, **kwargs):
            pass

        def close(self):
            pass

        def set_description(self, *args, **kwargs):
            pass

    class OpenAI:
        def __init__(self, *args, **kwargs):
            pass

    def completion(*args, **kwargs):
        raise RuntimeError("litellm is a stub in this harness")

    def no_network(*args, **kwargs):
        raise RuntimeError("requests is a stub in this harness")

    class BaseModel:
        """Enough of pydantic's BaseModel for KernelExecResult: annotated defaults, then kwargs."""

        def __init__(self, **kwargs):
            for klass in reversed(type(self).__mro__):
                for name in klass.__dict__.get("__annotations__", {}):
                    if name in klass.__dict__:
                        setattr(self, name, copy.copy(klass.__dict__[name]))
            for name, value in kwargs.items():
                setattr(self, name, value)

        def model_dump(self):
            return dict(vars(self))

        dict = model_dump

    stubs = {
        "dotenv": lambda: module("dotenv", load_dotenv=lambda *a, **k: False),
        "tqdm": lambda: module("tqdm", tqdm=Tqdm),
        "openai": lambda: module("openai", OpenAI=OpenAI),
        "litellm": lambda: module("litellm", completion=completion),
        "requests": lambda: module("requests", get=no_network, post=no_network),
        "pydantic": lambda: module("pydantic", BaseModel=BaseModel),
    }
    stubbed = []
    for name, build in stubs.items():
        try:
            __import__(name)
        except Exception:
            sys.modules[name] = build()
            stubbed.append(name)
    return stubbed


def plain(value, limit=1200):
    """A JSON-safe, bounded copy of a metadata value (exceptions become their text; a long text keeps
    its start and its end, where a compiler's message is)."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [plain(v, limit) for v in value[:20]]
    text = str(value)
    return text if len(text) <= limit else text[: limit // 4] + " ... " + text[-(limit * 3 // 4) :]


def worker(kb_root, problem, answer, build_dir, result_path):
    """Runs eval_kernel_against_ref on one answer in this process and writes its result as JSON."""
    stubbed = install_stubs()
    sys.path.insert(0, os.path.join(kb_root, "src"))
    from kernelbench.eval import eval_kernel_against_ref  # noqa: E402  (after the stubs)

    with open(problem, encoding="utf-8") as f:
        ref_src = f.read()
    with open(answer, encoding="utf-8") as f:
        answer_src = f.read()
    os.makedirs(build_dir, exist_ok=True)
    started = time.time()
    result = eval_kernel_against_ref(
        ref_src,
        answer_src,
        num_correct_trials=5,
        num_perf_trials=20,
        measure_performance=True,
        build_dir=build_dir,
        device=0,
    )
    out = {"stubbed": stubbed, "seconds": round(time.time() - started, 1)}
    if result is None:
        out["none"] = True
    else:
        metadata = getattr(result, "metadata", {}) or {}
        out.update(
            {
                "compiled": bool(result.compiled),
                "correctness": bool(result.correctness),
                "runtime": result.runtime,
                "ref_runtime": result.ref_runtime,
                "metadata": {k: plain(metadata[k]) for k in METADATA_KEYS if k in metadata},
                "metadata_keys": sorted(metadata),
            }
        )
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(out, f)
    return 0


def tail(path, lines=15):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def run_kernelbench_one(args, answer, problem, out_dir):
    """One answer in a child process of this script (worker mode), killed with its group on timeout."""
    name = answer_name(answer)
    kb_dir = os.path.join(out_dir, "kernelbench")
    result_path = os.path.join(kb_dir, name + ".json")
    log_path = os.path.join(kb_dir, name + ".log")
    build_dir = os.path.join(out_dir, "kb_build", name)
    if os.path.exists(result_path):
        os.remove(result_path)
    cmd = [
        args.python,
        os.path.abspath(__file__),
        "--worker",
        args.kernelbench,
        problem,
        answer,
        build_dir,
        result_path,
    ]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    started = time.time()
    with open(log_path, "w", encoding="utf-8") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        try:
            rc = proc.wait(timeout=args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc = None
    row = {"seconds": round(time.time() - started, 1), "log": log_path}
    if rc is None:
        row.update(status="timeout", tail=tail(log_path))
    elif os.path.exists(result_path):
        with open(result_path, encoding="utf-8") as f:
            row.update(json.load(f))
        row["status"] = "none" if row.get("none") else "done"
    else:
        row.update(status="crashed", rc=rc, tail=tail(log_path))
    with open(result_path, "w", encoding="utf-8") as f:
        json.dump(row, f)
    return row


def kernelbench_class(kb):
    """correct / incorrect / compile_fail, or what went wrong with the run itself."""
    if not kb:
        return "missing"
    if kb.get("status") != "done":
        return kb.get("status", "missing")
    if not kb.get("compiled"):
        return "compile_fail"
    return "correct" if kb.get("correctness") else "incorrect"


def kernelbench_cell(kb):
    cls = kernelbench_class(kb)
    md = (kb or {}).get("metadata", {})
    notes = []
    if cls == "correct":
        if isinstance(kb.get("runtime"), (int, float)) and kb["runtime"] > 0:
            notes.append("%.3g ms vs ref %.3g ms" % (kb["runtime"], kb.get("ref_runtime", -1)))
        if md.get("excessive_speedup"):
            notes.append("excessive_speedup")
    elif cls == "incorrect":
        notes.append(str(md.get("correctness_issue") or md.get("runtime_error_name") or ""))
        if md.get("correctness_trials"):
            notes.append(str(md["correctness_trials"]))
    elif cls == "compile_fail":
        notes.append(str(md.get("compilation_error_name", "")))
    elif cls in ("timeout", "crashed"):
        last = [l for l in (kb.get("tail") or "").splitlines() if l.strip()]
        notes.append(last[-1][:120] if last else "")
    notes = [n for n in notes if n]
    return cls + (" (" + "; ".join(notes) + ")" if notes else "")


# ---------------------------------------------------------------- kevin side


def run_kevin(args, answers, problems, out_dir):
    """Every answer in one `kevin eval --batch`; returns {answer path: result line}."""
    pairs_path = os.path.join(out_dir, "pairs.jsonl")
    results_path = os.path.join(out_dir, "kevin_results.jsonl")
    with open(pairs_path, "w", encoding="utf-8") as f:
        for answer in answers:
            f.write(json.dumps({"task": problems[answer], "candidate": answer}) + "\n")
    cmd = [
        args.kevin,
        "eval",
        "--batch",
        pairs_path,
        "--jobs",
        str(args.jobs),
        "--format",
        "kernelbench",
        "--backend",
        "cuda",
        "--python",
        args.python,
    ]
    print("$ " + " ".join(cmd), flush=True)
    by_index = {}
    with open(os.path.join(out_dir, "kevin.log"), "w", encoding="utf-8") as log, open(
        results_path, "w", encoding="utf-8"
    ) as raw:
        proc = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True
        )
        timer = threading.Timer(args.kevin_timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
        timer.start()
        try:
            for line in proc.stdout:
                raw.write(line)
                raw.flush()
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                by_index[j.get("index")] = j
                name = answer_name(answers[j["index"]]) if isinstance(j.get("index"), int) else "?"
                print(
                    "[kevin %d/%d] %s: %s" % (len(by_index), len(answers), name, kevin_cell(j)),
                    flush=True,
                )
            rc = proc.wait()
        finally:
            timer.cancel()
    if rc != 0:
        print("kevin exited %d (see %s)" % (rc, os.path.join(out_dir, "kevin.log")), flush=True)
    return {
        answers[i]: j for i, j in by_index.items() if isinstance(i, int) and 0 <= i < len(answers)
    }


def load_kevin_results(out_dir, answers):
    """kevin_results.jsonl of an earlier run, matched to answers by candidate path."""
    path = os.path.join(out_dir, "kevin_results.jsonl")
    found = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    j = json.loads(line)
                except ValueError:
                    continue
                found[os.path.abspath(j.get("candidate", ""))] = j
    return {a: found[a] for a in answers if a in found}


def kevin_class(kv):
    """correct / compile_error / not_correct, or missing / error when the pair was not judged."""
    if not kv:
        return "missing"
    if "error" in kv and "verdict" not in kv:
        return "error"
    verdict = kv.get("verdict")
    return verdict if verdict in ("correct", "compile_error") else "not_correct"


def kevin_cell(kv):
    if not kv:
        return "missing"
    if "verdict" not in kv:
        return "error (%s)" % str(kv.get("error", ""))[:120]
    text = kv["verdict"]
    if kv.get("reason"):
        text += " (%s)" % kv["reason"]
    elif kv["verdict"] == "correct" and kv.get("speedup"):
        text += " (%.2fx)" % kv["speedup"]
    return text


# ---------------------------------------------------------------- comparison and report

AGREES = {("correct", "correct"), ("incorrect", "not_correct"), ("compile_fail", "compile_error")}


def kevin_matches_header(kv, expect):
    """kevin's verdict against `# expect: VERDICT [REASON]` (the reason, when given, must appear)."""
    if not kv or "verdict" not in kv or not expect:
        return False
    verdict, _, reason = expect.partition(" ")
    return kv["verdict"] == verdict and (not reason or reason.strip() in (kv.get("reason") or ""))


def compare(answer, headers, kb, kv):
    kb_cls, kv_cls = kernelbench_class(kb), kevin_class(kv)
    judged = kb_cls in ("correct", "incorrect", "compile_fail") and kv_cls in (
        "correct",
        "not_correct",
        "compile_error",
    )
    agree = (kb_cls, kv_cls) in AGREES if judged else None
    kb_ok = kb_cls == headers.get("kernelbench")
    kv_ok = kevin_matches_header(kv, headers.get("expect"))
    return {
        "answer": os.path.basename(answer),
        "problem": headers.get("problem"),
        "expect_kevin": headers.get("expect"),
        "expect_kernelbench": headers.get("kernelbench"),
        "why": headers.get("why"),
        "kernelbench": kb,
        "kevin": kv,
        "kernelbench_class": kb_cls,
        "kevin_class": kv_cls,
        "agree": agree,
        "kernelbench_as_expected": kb_ok,
        "kevin_as_expected": kv_ok,
        "explained": agree is False and kb_ok and kv_ok,
    }


def md_cell(text):
    return str(text).replace("|", "\\|").replace("\n", " ")


def render(rows):
    """The markdown table and its summary line."""
    lines = [
        "| answer | problem | KernelBench | kevin (verdict, reason) | agree? | why they differ |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        agree = {True: "yes", False: "no", None: "n/a"}[r["agree"]]
        notes = []
        if r["agree"] is False:
            notes.append(r["why"] or "")
        if not r["kernelbench_as_expected"]:
            notes.append("UNEXPECTED KernelBench: header says %s" % r["expect_kernelbench"])
        if not r["kevin_as_expected"]:
            notes.append("UNEXPECTED kevin: header says %s" % r["expect_kevin"])
        lines.append(
            "| %s |"
            % " | ".join(
                md_cell(c)
                for c in (
                    r["answer"],
                    r["problem"],
                    kernelbench_cell(r["kernelbench"]),
                    kevin_cell(r["kevin"]),
                    agree,
                    "; ".join(n for n in notes if n),
                )
            )
        )
    judged = [r for r in rows if r["agree"] is not None]
    disagree = [r for r in judged if not r["agree"]]
    explained = [r for r in disagree if r["explained"]]
    off_header = [r for r in rows if not (r["kernelbench_as_expected"] and r["kevin_as_expected"])]
    summary = (
        "%d answers, %d judged by both: %d agree, %d disagree (%d explained by the answers' headers, "
        "%d NOT matching the expectation headers); %d results differ from their headers "
        "(KernelBench %d, kevin %d); %d without a verdict from one side."
        % (
            len(rows),
            len(judged),
            len(judged) - len(disagree),
            len(disagree),
            len(explained),
            len(disagree) - len(explained),
            len(off_header),
            sum(not r["kernelbench_as_expected"] for r in rows),
            sum(not r["kevin_as_expected"] for r in rows),
            len(rows) - len(judged),
        )
    )
    return "\n".join(lines), summary


def write_report(rows, out_dir):
    table, summary = render(rows)
    with open(os.path.join(out_dir, "agreement.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    with open(os.path.join(out_dir, "agreement.md"), "w", encoding="utf-8") as f:
        f.write(
            "# kevin vs KernelBench's eval_kernel_against_ref\n\n" + table + "\n\n" + summary + "\n"
        )
    print(table + "\n\n" + summary, flush=True)


# ---------------------------------------------------------------- main


def main(argv):
    if len(argv) > 1 and argv[1] == "--worker":
        return worker(*argv[2:7])
    p = argparse.ArgumentParser(
        description="verdict agreement between kevin and KernelBench's eval"
    )
    p.add_argument(
        "--kernelbench",
        required=True,
        help="KernelBench checkout (holds KernelBench/level1 and src/kernelbench)",
    )
    p.add_argument("--kevin", default="build/bin/kevin", help="kevin binary")
    p.add_argument("--out", required=True, help="output folder")
    p.add_argument(
        "--jobs", type=int, default=6, help="KernelBench evaluations at once; also kevin's --jobs"
    )
    p.add_argument("--answers", default=DEFAULT_ANSWERS, help="glob of answer files")
    p.add_argument(
        "--timeout", type=float, default=900, help="seconds for one KernelBench evaluation"
    )
    p.add_argument(
        "--kevin-timeout",
        type=float,
        default=0,
        help="seconds for the kevin batch (default 1800 + 120 per answer)",
    )
    p.add_argument(
        "--python",
        default=sys.executable,
        help="Python with PyTorch for KernelBench and kevin's --python",
    )
    p.add_argument(
        "--skip-kernelbench",
        action="store_true",
        help="reuse OUTDIR/kernelbench/*.json from an earlier run",
    )
    p.add_argument(
        "--skip-kevin",
        action="store_true",
        help="reuse OUTDIR/kevin_results.jsonl from an earlier run",
    )
    args = p.parse_args(argv[1:])

    args.kernelbench = os.path.abspath(args.kernelbench)
    if not (
        os.path.isdir(os.path.join(args.kernelbench, "KernelBench", "level1"))
        and os.path.isfile(os.path.join(args.kernelbench, "src", "kernelbench", "eval.py"))
    ):
        print(
            "error: %s is not a KernelBench checkout (no KernelBench/level1 or src/kernelbench/eval.py)"
            % args.kernelbench,
            file=sys.stderr,
        )
        return 2
    if not args.skip_kevin and not (os.path.isfile(args.kevin) and os.access(args.kevin, os.X_OK)):
        print("error: kevin binary %s not found or not executable" % args.kevin, file=sys.stderr)
        return 2
    args.kevin = os.path.abspath(args.kevin)
    answers = sorted(os.path.abspath(a) for a in glob.glob(args.answers))
    if not answers:
        print("error: no answers match %s" % args.answers, file=sys.stderr)
        return 2
    out_dir = os.path.abspath(args.out)
    if "'" in out_dir or "\\" in out_dir:
        print(
            "error: OUTDIR must not contain quotes or backslashes (KernelBench pastes it into Python source)",
            file=sys.stderr,
        )
        return 2
    os.makedirs(os.path.join(out_dir, "kernelbench"), exist_ok=True)
    if not args.kevin_timeout:
        args.kevin_timeout = 1800 + 120 * len(answers)

    headers, problems = {}, {}
    for a in answers:
        headers[a] = read_headers(a)
        problems[a] = os.path.join(args.kernelbench, "KernelBench", headers[a].get("problem", "?"))
        missing = [k for k in HEADER_KEYS if k not in headers[a]]
        if missing or not os.path.isfile(problems[a]):
            print(
                "error: %s: %s"
                % (
                    a,
                    "missing headers " + ", ".join(missing)
                    if missing
                    else "no problem " + problems[a],
                ),
                file=sys.stderr,
            )
            return 2

    kb_results = {}
    if args.skip_kernelbench:
        for a in answers:
            path = os.path.join(out_dir, "kernelbench", answer_name(a) + ".json")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    kb_results[a] = json.load(f)
    else:
        print(
            "KernelBench: %d answers, %d at a time, %g s each at most"
            % (len(answers), args.jobs, args.timeout),
            flush=True,
        )
        done = [0]
        lock = threading.Lock()

        def one(a):
            row = run_kernelbench_one(args, a, problems[a], out_dir)
            with lock:
                done[0] += 1
                print(
                    "[kernelbench %d/%d] %s: %s (%.0f s)"
                    % (
                        done[0],
                        len(answers),
                        answer_name(a),
                        kernelbench_cell(row),
                        row["seconds"],
                    ),
                    flush=True,
                )
            return a, row

        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            kb_results = dict(pool.map(one, answers))

    if args.skip_kevin:
        kv_results = load_kevin_results(out_dir, answers)
    else:
        kv_results = run_kevin(args, answers, problems, out_dir)

    rows = [compare(a, headers[a], kb_results.get(a), kv_results.get(a)) for a in answers]
    write_report(rows, out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
