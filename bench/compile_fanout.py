#!/usr/bin/env python3
# compile_fanout.py — what a command's compilers hold at once (docs/kernelbench.md, "One budget
# per build"): runs the command in a process group of its own and reads its process tree in /proc
# every 50 ms, then prints the most compiler processes (cc1plus, cicc, cudafe++, ptxas) alive at
# once, the largest sum of their RLIMIT_AS, the tree's peak memory (RSS) and each compiler's
# largest address space (VmPeak). The tree is killed once its RSS passes --kill-above-gib, so an
# answer that would take the machine's memory can be measured on a shared one. Usage:
#   python3 bench/compile_fanout.py [--kill-above-gib 9] -- build/bin/kevin eval --task T --candidate A ...
import argparse
import os
import signal
import subprocess
import sys
import threading
import time

COMPILERS = {"cc1plus", "cicc", "cudafe++", "ptxas"}
GIB = 1 << 30


def children_by_parent():
    """{ppid: [pid, ...]} of every process in /proc."""
    kids = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        parent = int(stat[stat.rfind(")") + 2 :].split()[1])
        kids.setdefault(parent, []).append(int(name))
    return kids


def tree(root):
    """`root` and every process under it."""
    kids, found, todo = children_by_parent(), [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += kids.get(pid, [])
    return found


def field(path, key):
    """The first number on `key`'s line of a /proc file, or None."""
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    value = line[len(key) :].split()[0]
                    return None if value == "unlimited" else int(value)
    except OSError:
        pass
    return None


def sample(root, peaks):
    """Adds one look at `root`'s tree to `peaks`; the tree's RSS in bytes."""
    at_once = caps = rss = 0
    for pid in tree(root):
        rss += (field(f"/proc/{pid}/status", "VmRSS:") or 0) * 1024
        try:
            with open(f"/proc/{pid}/comm") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm not in COMPILERS:
            continue
        at_once += 1
        caps += field(f"/proc/{pid}/limits", "Max address space") or 0
        vm = (field(f"/proc/{pid}/status", "VmPeak:") or 0) * 1024
        peaks["vmpeak"][comm] = max(peaks["vmpeak"].get(comm, 0), vm)
    peaks["at_once"] = max(peaks["at_once"], at_once)
    peaks["caps"] = max(peaks["caps"], caps)
    peaks["rss"] = max(peaks["rss"], rss)
    return rss


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--kill-above-gib", type=float, default=9.0)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command")
    start = time.monotonic()
    child = subprocess.Popen(
        command, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    output = []
    reader = threading.Thread(target=lambda: output.append(child.stdout.read()))
    reader.start()
    peaks = {"at_once": 0, "caps": 0, "rss": 0, "vmpeak": {}}
    killed = False
    while child.poll() is None:
        if sample(child.pid, peaks) > args.kill_above_gib * GIB and not killed:
            killed = True
            os.killpg(child.pid, signal.SIGKILL)
        time.sleep(0.05)
    reader.join()
    sys.stdout.write(output[0].decode(errors="replace"))
    vm = ", ".join(f"{k} {v / GIB:.2f} GiB" for k, v in sorted(peaks["vmpeak"].items()))
    print(
        f"compile_fanout: {time.monotonic() - start:.1f} s; at most {peaks['at_once']} compilers "
        f"at once, their RLIMIT_AS summing to {peaks['caps'] / GIB:.1f} GiB; peak RSS "
        f"{peaks['rss'] / GIB:.2f} GiB; VmPeak {vm or 'none'}"
        + (f"; killed past {args.kill_above_gib} GiB" if killed else "")
    )
    return 1 if killed else child.returncode


if __name__ == "__main__":
    sys.exit(main())
