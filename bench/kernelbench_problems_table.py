#!/usr/bin/env python3
# kernelbench_problems_table.py — summarises the `kevin tasks check` outputs that
# bench/kernelbench_problems.sh saved (OUTDIR/levelN.out or levelN.partK.out): per level the problems, how many loaded,
# how many were flagged degenerate and by which flag, the errors; then a markdown table of the flagged ones.
# Usage: python3 bench/kernelbench_problems_table.py OUTDIR [LEVELS_DIR]   (LEVELS_DIR holds levelN/*.py)
import glob
import os
import re
import sys

# The flags kevin's reference worker raises (src/tasks/reference_worker.py), by their name before ':'.
FLAGS = [
    ("constant", "constant"),
    ("zero", "zeros"),
    ("identity", "identity"),
    ("low_precision", "bf16"),
    ("seed_independent", "seed"),
    ("ignores_input", "argument without effect"),
    ("ignores_parameter", "parameter without effect"),
    ("nonfinite", "NaN/Inf"),
]


def parse(path):
    """{task id: {"flags": [text...], "error": text or None}} from `kevin tasks check`'s text output:
    `ok    ID`, `FLAG  ID: text` (one line per flag), `ERROR ID: message` (which may run on)."""
    tasks, last = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = re.match(r"(ok|FLAG|ERROR) +(\S+?)(?:: (.*))?$", line)
            if m and (m.group(1) == "ok" or m.group(3) is not None):
                kind, tid, text = m.groups()
                row = tasks.setdefault(tid, {"flags": [], "error": None})
                if kind == "FLAG":
                    row["flags"].append(text)
                elif kind == "ERROR":
                    row["error"] = text
                last = tid if kind == "ERROR" else None
            elif last is not None and line.strip():
                tasks[last]["error"] += " " + line.strip()
    return tasks


def flag_name(text):
    return text.split(":", 1)[0].strip()


def md(text, limit=300):
    text = str(text).replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= limit else text[:limit] + "..."


def main(argv):
    if len(argv) < 2:
        print("usage: kernelbench_problems_table.py OUTDIR [LEVELS_DIR]", file=sys.stderr)
        return 2
    out_dir = argv[1]
    levels_dir = argv[2] if len(argv) > 2 else None
    # levelN.out, or levelN.part0.out, levelN.part1.out... when the script checked in chunks
    outputs = {}
    for path in glob.glob(os.path.join(out_dir, "level*.out")):
        outputs.setdefault(os.path.basename(path).split(".")[0], []).append(path)
    if not outputs:
        print("no level*.out under %s" % out_dir, file=sys.stderr)
        return 2

    head = (
        ["level", "problems", "checked", "loaded", "flagged"]
        + [label for _, label in FLAGS]
        + ["errors", "exit"]
    )
    lines = [
        "# kevin tasks check on KernelBench",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    flagged_rows, error_rows = [], []
    for suite in sorted(outputs, key=natural):
        tasks, rcs = {}, []
        for path in sorted(outputs[suite], key=natural):
            tasks.update(parse(path))
            rc_path = path[:-4] + ".rc"
            rcs.append(open(rc_path).read().strip() if os.path.exists(rc_path) else "unfinished")
        rc = "unfinished" if "unfinished" in rcs else max(rcs, key=int)
        files = None
        if levels_dir and os.path.isdir(os.path.join(levels_dir, suite)):
            files = [
                f
                for f in glob.glob(os.path.join(levels_dir, suite, "*.py"))
                if not os.path.basename(f).startswith("_")
            ]
        loaded = [t for t, r in tasks.items() if r["error"] is None]
        flagged = [t for t in loaded if tasks[t]["flags"]]
        counts = [
            sum(any(flag_name(f) == name for f in tasks[t]["flags"]) for t in flagged)
            for name, _ in FLAGS
        ]
        errors = [t for t, r in tasks.items() if r["error"] is not None]
        lines.append(
            "| "
            + " | ".join(
                str(c)
                for c in [
                    suite,
                    len(files) if files is not None else "?",
                    len(tasks),
                    len(loaded),
                    len(flagged),
                ]
                + counts
                + [len(errors), rc]
            )
            + " |"
        )
        flagged_rows += [(t, tasks[t]["flags"]) for t in sorted(flagged, key=natural)]
        error_rows += [(t, tasks[t]["error"]) for t in sorted(errors, key=natural)]

    lines += [
        "",
        "Flags: constant / zeros / identity: a constant (the mean), all-zero or input-copy output passes "
        "atol=rtol=1e-2; bf16: computing in bfloat16 passes the fp32 tolerance 1e-4; seed: another seed gives "
        "the same output; argument / parameter without effect: replacing a forward argument or perturbing a "
        "parameter leaves the output unchanged; NaN/Inf in the reference output.",
        "",
    ]
    lines += [
        "## Flagged problems (%d)" % len(flagged_rows),
        "",
        "| problem | flags |",
        "|---|---|",
    ]
    lines += ["| %s | %s |" % (md(t), md("; ".join(fl), 600)) for t, fl in flagged_rows]
    if error_rows:
        lines += [
            "",
            "## Problems that did not load or check (%d)" % len(error_rows),
            "",
            "| problem | error |",
            "|---|---|",
        ]
        lines += ["| %s | %s |" % (md(t), md(e)) for t, e in error_rows]
    print("\n".join(lines))
    return 0


def natural(task_id):
    """level1/9_X before level1/10_Y."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", task_id)]


if __name__ == "__main__":
    sys.exit(main(sys.argv))
