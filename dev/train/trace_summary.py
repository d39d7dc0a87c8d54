#!/usr/bin/env python3
# trace_summary.py — ranks the GPU kernels of a Chrome trace (bench/train_bench --profile, or
# torch.profiler's export_chrome_trace) by total time, grouped by a short name, with the
# share of all kernel time. Usage: trace_summary.py TRACE.json [TOP]
import collections
import json
import re
import sys


def short(name):
    name = name.replace("(anonymous namespace)", "anon")
    name = re.sub(r"<.*", "", name)  # template arguments
    name = re.sub(r"\(.*", "", name)  # parameter lists
    return name.split("::")[-1][:90]


def main():
    events = json.load(open(sys.argv[1]))
    events = events["traceEvents"] if isinstance(events, dict) else events
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    total = collections.Counter()
    count = collections.Counter()
    for e in events:
        if e.get("cat") == "kernel" and "dur" in e:
            total[short(e["name"])] += e["dur"]
            count[short(e["name"])] += 1
    all_us = sum(total.values())
    kernels = [e for e in events if e.get("cat") == "kernel" and "dur" in e]
    span_us = (
        max(e["ts"] + e["dur"] for e in kernels) - min(e["ts"] for e in kernels) if kernels else 0
    )
    # Busy share well under 100%: the GPU waits on the host (launch overhead, syncs).
    print(
        f"kernel time {all_us / 1e3:.1f} ms in {sum(count.values())} launches over a span of "
        f"{span_us / 1e3:.1f} ms (GPU busy {100 * all_us / max(span_us, 1):.0f}%)"
    )
    for name, us in total.most_common(top):
        print(f"{us / 1e3:9.2f} ms {100 * us / all_us:5.1f}% {count[name]:6d}x  {name}")


if __name__ == "__main__":
    main()
