// sandbox_probe.cu — a one-off probe for the GPU machine, to learn what the runner's sandbox
// can rely on there: namespaces around a CUDA process, chroot after CUDA init, which system
// calls CUDA makes after init (seccomp in audit mode: forbidden calls are recorded and
// answered ENOSYS), __cudaRegisterVar interposition, device-heap limits, NVML's view of a
// process in a PID namespace and pipe round-trip latency. Not part of the product.
// Build and run: dev/gpu/sandbox_probe.sh
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
std::atomic<unsigned> g_seen[512];
int g_ready_fd = -1, g_go_fd = -1;  // the workload says when it holds its context, then waits
bool g_chroot = true;               // "nochroot" in the options turns these off
bool g_filter = true;

void on_sigsys(int, siginfo_t* info, void* context) {
  const int nr = info->si_syscall;
  if (nr >= 0 && nr < 512) g_seen[nr].fetch_add(1);
  static_cast<ucontext_t*>(context)->uc_mcontext.gregs[REG_RAX] = -ENOSYS;
}

void print_seen(const char* label) {
  std::printf("%s:", label);
  for (int i = 0; i < 512; ++i) {
    if (g_seen[i].load() != 0) std::printf(" %d(x%u)", i, g_seen[i].load());
    g_seen[i] = 0;
  }
  std::printf("\n");
  std::fflush(stdout);
}

// Audit filter: the runtime allowlist under test; anything else traps (recorded, ENOSYS).
bool install_audit_filter() {
  struct sigaction sa {};
  sa.sa_sigaction = on_sigsys;
  sa.sa_flags = SA_SIGINFO;
  sigaction(SIGSYS, &sa, nullptr);
  scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
  const int allowed[] = {SCMP_SYS(read),
                         SCMP_SYS(write),
                         SCMP_SYS(close),
                         SCMP_SYS(fstat),
                         SCMP_SYS(newfstatat),
                         SCMP_SYS(lseek),
                         SCMP_SYS(pread64),
                         SCMP_SYS(mmap),
                         SCMP_SYS(munmap),
                         SCMP_SYS(brk),
                         SCMP_SYS(ioctl),
                         SCMP_SYS(futex),
                         SCMP_SYS(poll),
                         SCMP_SYS(ppoll),
                         SCMP_SYS(sched_yield),
                         SCMP_SYS(nanosleep),
                         SCMP_SYS(clock_nanosleep),
                         SCMP_SYS(clock_gettime),
                         SCMP_SYS(gettimeofday),
                         SCMP_SYS(getpid),
                         SCMP_SYS(gettid),
                         SCMP_SYS(rt_sigreturn),
                         SCMP_SYS(rt_sigprocmask),
                         SCMP_SYS(exit),
                         SCMP_SYS(exit_group),
                         SCMP_SYS(restart_syscall)};
  for (int nr : allowed) seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
  seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1);
  const int rc = seccomp_load(ctx);
  seccomp_release(ctx);
  std::printf("seccomp audit filter (TSYNC): %s\n", rc == 0 ? "loaded" : std::strerror(-rc));
  return rc == 0;
}

using RegisterVar = void (*)(void**, char*, char*, const char*, int, size_t, int, int);
RegisterVar g_real_register_var = nullptr;
struct Var {
  char* host;
  std::string name;
  size_t size;
  int constant;
};
std::vector<Var> g_vars;

}  // namespace

// Interposes the CUDA runtime's registration of __device__/__constant__ variables.
#ifndef PROBE_NO_INTERPOSER
extern "C" __attribute__((visibility("default"))) void __cudaRegisterVar(void** handle, char* host,
                                                                         char* device_address,
                                                                         const char* name, int ext,
                                                                         size_t size, int constant,
                                                                         int global) {
  g_vars.push_back({host, name, size, constant});
  g_real_register_var(handle, host, device_address, name, ext, size, constant, global);
}
#endif

namespace {

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t e_ = (x);                                                         \
    if (e_ != cudaSuccess) std::printf("  %s -> %s\n", #x, cudaGetErrorName(e_)); \
  } while (0)

int cuda_workload(const char* kernel_so) {
  std::printf("workload pid %d (ppid %d), uid %d\n", getpid(), getppid(), getuid());
  CHECK(cudaSetDevice(0));
  cudaStream_t stream;
  CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  const long n = 1 << 20;
  float *a = nullptr, *out = nullptr, *scratch = nullptr;
  int* flag = nullptr;
  CHECK(cudaMalloc(&a, n * 4));
  CHECK(cudaMalloc(&out, n * 4));
  CHECK(cudaMalloc(&scratch, 1 << 20));
  CHECK(cudaMalloc(&flag, 4));
  std::vector<float> host(n, 1.0f);
  CHECK(cudaHostRegister(host.data(), n * 4, cudaHostRegisterDefault));
  CHECK(cudaMemcpy(a, host.data(), n * 4, cudaMemcpyHostToDevice));
  size_t heap = 0;
  const cudaError_t heap_rc = cudaDeviceSetLimit(cudaLimitMallocHeapSize, 0);
  cudaDeviceGetLimit(&heap, cudaLimitMallocHeapSize);
  std::printf("set malloc heap 0: %s, now %zu bytes\n", cudaGetErrorName(heap_rc), heap);
  cudaGetLastError();
  char tasks[64];
  int threads = 0;
  for (int i = 0; i < 4096; ++i) {
    std::snprintf(tasks, sizeof tasks, "/proc/self/task/%d", i);
    struct stat st;
    if (stat(tasks, &st) == 0) ++threads;
  }
  std::printf("threads after CUDA init (tids < 4096): %d\n", threads);
  char sync_byte;
  (void)write(g_ready_fd, "c", 1);
  (void)read(g_go_fd, &sync_byte, 1);

  // An empty root holding only the kernel object, as the runner's scratch directory would.
  const char* root = "/tmp/kevin-probe-root";
  mkdir(root, 0755);
  const std::string copy = std::string("cp ") + kernel_so + " " + root + "/kernel.so";
  if (system(copy.c_str()) != 0) std::printf("copy failed\n");
  const int chroot_rc = g_chroot ? chroot(root) : -1;
  std::printf("chroot: %s\n", chroot_rc == 0 ? "ok" : "skipped");
  if (chroot_rc == 0) (void)chdir("/");
  const int uid_rc = setresuid(65534, 65534, 65534);
  std::printf("setresuid nobody: %s\n", uid_rc == 0 ? "ok" : std::strerror(errno));
  prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  // dlopen needs openat and mprotect (RELRO); the audit filter goes on after it.
  void* so = dlopen(chroot_rc == 0 ? "/kernel.so" : "/tmp/kevin-probe-root/kernel.so",
                    RTLD_NOW | RTLD_LOCAL);
  std::printf("dlopen after chroot: %s\n", so != nullptr ? "ok" : dlerror());
  if (so == nullptr) return 1;
  if (g_filter && !install_audit_filter()) return 1;
  using Entry = int (*)(void*, const float*, float*, long, int*);
  auto entry = reinterpret_cast<Entry>(dlsym(so, "probe_entry"));
  std::printf("registered vars: %zu\n", g_vars.size());
  std::vector<void*> device_vars;
  for (const auto& v : g_vars) {
    void* d = nullptr;
    const cudaError_t rc = cudaGetSymbolAddress(&d, v.host);
    std::printf("  %s size %zu constant %d -> %s %p\n", v.name.c_str(), v.size, v.constant,
                cudaGetErrorName(rc), d);
    device_vars.push_back(d);
  }
  print_seen("syscalls outside the allowlist during symbol lookup (module load)");
  std::vector<double> event_ms, wall_ms;
  for (int it = 0; it < 50; ++it) {
    for (size_t i = 0; i < device_vars.size(); ++i) {
      if (device_vars[i] != nullptr)
        CHECK(cudaMemcpyAsync(device_vars[i], scratch, g_vars[i].size, cudaMemcpyDeviceToDevice,
                              stream));
    }
    CHECK(cudaMemsetAsync(out, 0xff, n * 4, stream));
    CHECK(cudaStreamSynchronize(stream));
    const auto t0 = Clock::now();
    cudaEventRecord(e0, stream);
    const int rc = entry(stream, a, out, n, flag);
    cudaEventRecord(e1, stream);
    CHECK(cudaMemcpyAsync(host.data(), out, n * 4, cudaMemcpyDeviceToHost, stream));
    CHECK(cudaDeviceSynchronize());
    wall_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    event_ms.push_back(ms);
    if (rc != 0 && it == 0) std::printf("entry returned %d\n", rc);
  }
  int got_memory = -1;
  CHECK(cudaMemcpy(&got_memory, flag, 4, cudaMemcpyDeviceToHost));
  std::printf("device malloc with heap limit 0 returned memory: %d; out[0] = %g\n", got_memory,
              host[0]);
  std::sort(event_ms.begin(), event_ms.end());
  std::sort(wall_ms.begin(), wall_ms.end());
  std::printf("launch+sync: event p50 %.4f ms, host wall p50 %.4f ms\n", event_ms[25], wall_ms[25]);
  print_seen("syscalls outside the allowlist during 50 calls");
  const int forbidden = static_cast<int>(syscall(SYS_getppid));
  std::printf("getppid under the filter -> %d (errno %d)\n", forbidden, errno);
  print_seen("explicit getppid");
  return 0;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

// Round trips of one byte over two pipes, with blocking reads or with spinning reads.
void pipe_latency(bool spin) {
  int down[2], up[2];
  if (pipe(down) != 0 || pipe(up) != 0) return;
  if (spin) {
    fcntl(down[0], F_SETFL, O_NONBLOCK);
    fcntl(up[0], F_SETFL, O_NONBLOCK);
  }
  const pid_t child = fork();
  char c = 0;
  if (child == 0) {
    for (int i = 0; i < 3000; ++i) {
      while (read(down[0], &c, 1) != 1) {
      }
      (void)write(up[1], &c, 1);
    }
    _exit(0);
  }
  std::vector<double> us;
  for (int i = 0; i < 3000; ++i) {
    const auto t0 = Clock::now();
    (void)write(down[1], &c, 1);
    while (read(up[0], &c, 1) != 1) {
    }
    us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
  }
  waitpid(child, nullptr, 0);
  std::printf("pipe round trip (%s): p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
              spin ? "spinning" : "blocking", percentile(us, 0.5), percentile(us, 0.9),
              percentile(us, 0.99), percentile(us, 1.0));
  for (int fd : {down[0], down[1], up[0], up[1]}) close(fd);
}

}  // namespace

// "net,ipc,mnt,pid" → the unshare flags.
int namespace_flags(const std::string& list) {
  int flags = 0;
  if (list.find("mnt") != std::string::npos) flags |= CLONE_NEWNS;
  if (list.find("net") != std::string::npos) flags |= CLONE_NEWNET;
  if (list.find("ipc") != std::string::npos) flags |= CLONE_NEWIPC;
  if (list.find("pid") != std::string::npos) flags |= CLONE_NEWPID;
  return flags;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: sandbox_probe KERNEL_SO NAMESPACES(net,ipc,mnt,pid,procfs|none) "
                 "[quick[,nochroot,nofilter]]\n");
    return 2;
  }
  const std::string options = argc > 3 ? argv[3] : "";
  g_chroot = options.find("nochroot") == std::string::npos;
  g_filter = options.find("nofilter") == std::string::npos;
  setvbuf(stdout, nullptr, _IOLBF, 0);
  g_real_register_var = reinterpret_cast<RegisterVar>(dlsym(RTLD_NEXT, "__cudaRegisterVar"));
  std::printf("real __cudaRegisterVar: %p\n", reinterpret_cast<void*>(g_real_register_var));
  if (argc < 4) {
    pipe_latency(false);
    pipe_latency(true);
  }
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) return 1;
  const int ns_rc = unshare(namespace_flags(argv[2]));
  std::printf("== namespaces %s: unshare %s\n", argv[2], ns_rc == 0 ? "ok" : std::strerror(errno));
  const pid_t c1 = fork();
  if (c1 == 0) {
    // PID 1 of the new namespace: keeps a child (the workload) and reports how it ended.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (std::string(argv[2]).find("procfs") != std::string::npos) {
      const int a = mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr);
      const int b = mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr);
      std::printf("private mounts %d, fresh /proc %d (%s)\n", a, b,
                  b == 0 ? "ok" : std::strerror(errno));
    }
    const pid_t c2 = fork();
    if (c2 == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      g_ready_fd = ready[1];
      g_go_fd = go[0];
      _exit(cuda_workload(argv[1]));
    }
    int status = 0;
    waitpid(c2, &status, 0);
    std::printf("ns init (pid %d): workload ended: %s %d\n", getpid(),
                WIFEXITED(status) ? "exit" : "signal",
                WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
    _exit(0);
  }
  char b;
  (void)read(ready[0], &b, 1);  // the workload holds its CUDA context now
  std::printf("outer pid %d started ns init as %d; nvidia-smi compute apps:\n", getpid(), c1);
  (void)system(
      "nvidia-smi --query-compute-apps=pid,used_memory --format=csv,noheader 2>&1 | head -5");
  (void)system("python3 /tmp/kevin-probe-nvml.py 2>&1 | head -8");
  (void)write(go[1], "g", 1);
  int status = 0;
  waitpid(c1, &status, 0);
  std::printf("probe done\n");
  return 0;
}
