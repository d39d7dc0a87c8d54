#!/usr/bin/env bash
# sandbox_probe.sh — builds and runs dev/gpu/sandbox_probe.cu on the GPU machine (needs
# libseccomp from .deps, see scripts/make-gpu-deps). Prints what the runner's sandbox can rely
# on there. Usage: bash dev/gpu/sandbox_probe.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
work=$(mktemp -d /tmp/kevin-probe-XXXXXX)
deps="$PWD/.deps/usr"
uname -a; id
nvcc -O2 -std=c++17 -arch=sm_90a -cudart shared -Xcompiler -fPIC -shared dev/gpu/sandbox_probe_kernel.cu -o "$work/kernel.so" || exit 1
nvcc -O2 -std=c++17 -arch=sm_90a -cudart shared -Xlinker --export-dynamic -I"$deps/include" dev/gpu/sandbox_probe.cu \
     "$deps/lib/x86_64-linux-gnu/libseccomp.a" -ldl -o "$work/probe" || exit 1
cat > /tmp/kevin-probe-nvml.py <<'PY'
import ctypes
n = ctypes.CDLL("libnvidia-ml.so.1"); print("nvmlInit", n.nvmlInit_v2())
h = ctypes.c_void_p(); n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
class P(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("used", ctypes.c_ulonglong), ("gi", ctypes.c_uint), ("ci", ctypes.c_uint)]
for fn in ("nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetComputeRunningProcesses_v2"):
    cnt = ctypes.c_uint(16); arr = (P * 16)()
    rc = getattr(n, fn)(h, ctypes.byref(cnt), arr)
    print(fn, "rc", rc, "count", cnt.value, [(arr[i].pid, arr[i].used >> 20) for i in range(min(cnt.value, 16))])
class M(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
m = M(); n.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m)); print("memory used MiB", m.used >> 20, "free MiB", m.free >> 20)
bus = ctypes.create_string_buffer(64)
class PCI(ctypes.Structure):
    _fields_ = [("busIdLegacy", ctypes.c_char * 16), ("domain", ctypes.c_uint), ("bus", ctypes.c_uint), ("device", ctypes.c_uint),
                ("pciDeviceId", ctypes.c_uint), ("pciSubSystemId", ctypes.c_uint), ("busId", ctypes.c_char * 32)]
pci = PCI(); print("pci rc", n.nvmlDeviceGetPciInfo_v3(h, ctypes.byref(pci)), pci.busId)
PY
nvcc -O2 -std=c++17 -arch=sm_90a -cudart shared -DPROBE_NO_INTERPOSER -I"$deps/include" dev/gpu/sandbox_probe.cu \
     "$deps/lib/x86_64-linux-gnu/libseccomp.a" -ldl -o "$work/probe-plain" 2>/dev/null || exit 1
# Each line: binary namespaces options.
while read -r bin ns opts; do
  echo "#### $bin $ns $opts"
  "$work/$bin" "$work/kernel.so" "$ns" "$opts" 2>&1 | grep -v -E "^  cuda.*-> cudaErrorOperatingSystem$|nvml|pci rc|memory used"
done <<CASES
${PROBE_CASES:-probe none quick}
CASES
