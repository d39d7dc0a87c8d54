// jail_test.cpp — kevin-sandbox from the outside: its option round trip, and what a shell or
// a compiled probe program run inside can see and do (files, writes, network, identity,
// limits), that everything it starts dies with it, and how failures are reported.
#include "sys/jail.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>

#include "sys/fd.h"
#include "sys/process.h"
#include "sys/tempdir.h"

namespace kevin::sys {
namespace {
namespace fs = std::filesystem;
using namespace std::chrono_literals;

fs::path sandbox_binary() { return fs::path(KEVIN_BUILD_DIR) / "bin/kevin-sandbox"; }
bool is_root() { return ::geteuid() == 0; }

// A private folder the command may write (given to nobody when we are root).
TempDir work_dir() {
  auto dir = TempDir::create("kevin-jail-test-");
  EXPECT_TRUE(dir.is_ok());
  if (is_root()) {
    EXPECT_TRUE(chown_tree(dir->path(), kNobodyUid, kNobodyGid, false).is_ok());
  }
  return std::move(dir).value();
}

// The toolchain a shell and a dynamically linked program need, and `work` writable.
JailOptions base_options(const fs::path& work) {
  JailOptions o;
  for (const char* p : {"/usr", "/bin", "/lib", "/lib64", "/sbin", "/etc/ld.so.cache"}) {
    if (fs::exists(fs::symlink_status(p))) o.read_only.emplace_back(p);
  }
  o.read_write.push_back(work);
  o.chdir = work;
  o.env = {"PATH=/usr/bin:/bin", "LC_ALL=C"};
  return o;
}

CommandResult run_jailed(JailOptions o, const std::vector<std::string>& command,
                         std::chrono::milliseconds deadline = 30s) {
  o.command = command;
  std::vector<std::string> argv = {sandbox_binary().string()};
  for (auto& a : jail_args(o)) argv.push_back(std::move(a));
  auto r = run_command(argv, Deadline::after(deadline));
  EXPECT_TRUE(r.is_ok()) << r.status().to_string();
  return std::move(r).value();
}

CommandResult shell(const JailOptions& o, const std::string& script,
                    std::chrono::milliseconds deadline = 30s) {
  return run_jailed(o, {"/bin/sh", "-c", script}, deadline);
}

TEST(JailArgs, RoundTrip) {
  JailOptions o;
  o.read_only = {"/usr", "/opt/cuda"};
  o.read_write = {"/tmp/w"};
  o.chdir = "/tmp/w";
  o.devices = {"urandom"};
  o.proc = false;
  o.tmp_bytes = 1234;
  o.uid = 1000;
  o.gid = 1001;
  o.parent_pid = 4242;
  o.limits.cpu_seconds = 7;
  o.limits.address_space_bytes = 1 << 30;
  o.env = {"A=1", "B=x=y"};
  o.command = {"/bin/echo", "--", "--ro"};
  auto back = parse_jail_args(jail_args(o));
  ASSERT_TRUE(back.is_ok()) << back.status().to_string();
  EXPECT_EQ(back->read_only, o.read_only);
  EXPECT_EQ(back->read_write, o.read_write);
  EXPECT_EQ(back->chdir, o.chdir);
  EXPECT_EQ(back->devices, o.devices);
  EXPECT_FALSE(back->proc);
  EXPECT_EQ(back->tmp_bytes, 1234u);
  EXPECT_EQ(back->uid, 1000u);
  EXPECT_EQ(back->gid, 1001u);
  EXPECT_EQ(back->parent_pid, 4242);
  EXPECT_EQ(back->limits.cpu_seconds, 7u);
  EXPECT_EQ(back->limits.address_space_bytes, uint64_t{1} << 30);
  EXPECT_EQ(back->limits.file_size_bytes, o.limits.file_size_bytes);
  EXPECT_EQ(back->env, o.env);
  EXPECT_EQ(back->command, o.command);
}

TEST(JailArgs, RejectsMalformedOptions) {
  struct Case {
    std::vector<std::string> args;
    std::string why;  // the part of the message that names this mistake
  };
  const std::vector<Case> bad = {
      {{"--ro", "usr", "--", "/bin/true"}, "--ro wants an absolute normal path, not 'usr'"},
      {{"--ro", "/usr/../etc", "--", "/bin/true"},
       "--ro wants an absolute normal path, not '/usr/../etc'"},
      {{"--ro", "/usr/", "--", "/bin/true"}, "--ro wants an absolute normal path, not '/usr/'"},
      {{"--bogus", "1", "--", "/bin/true"}, "unknown option --bogus"},
      {{"--cpu", "ten", "--", "/bin/true"}, "--cpu wants a non-negative integer, not 'ten'"},
      {{"--dev", "sda", "--", "/bin/true"}, "--dev: unknown device 'sda'"},
      {{"--env", "NOEQUALS", "--", "/bin/true"}, "--env wants KEY=VALUE, not 'NOEQUALS'"},
      {{"--ro", "/usr"}, "no command given"},
      {{"--ro", "/usr", "--"}, "no command given"},
      {{"--", "true"}, "the command must be an absolute path, not 'true'"},
      {{"--uid", "4294967295", "--", "/bin/true"}, "--uid 4294967295 is not a valid id"},
      {{"--parent-pid", "0", "--", "/bin/true"}, "--parent-pid 0 is not a pid"},
      {{"--tmp-size", "0", "--", "/bin/true"}, "--tmp-size must be positive"},
      {{"--cpu"}, "--cpu wants a value"}};
  for (const auto& c : bad) {
    auto r = parse_jail_args(c.args);
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_NE(r.status().message().find(c.why), std::string::npos) << r.status().to_string();
  }
}

TEST(Jail, MalformedOptionsGiveUsageExit) {
  auto r = run_command({sandbox_binary().string(), "--ro", "relative", "--", "/bin/true"},
                       Deadline::after(10s));
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->exit.exited);
  EXPECT_EQ(r->exit.code, kJailUsageExit);
  EXPECT_EQ(r->output.rfind(kJailMessagePrefix, 0), 0u) << r->output;
}

TEST(Jail, SetupFailureIsOneLineWithItsOwnExitCode) {
  TempDir work = work_dir();
  JailOptions o = base_options(work.path());
  o.read_only.emplace_back("/no/such/toolchain");
  const auto r = shell(o, "echo ran");
  EXPECT_TRUE(r.exit.exited);
  EXPECT_EQ(r.exit.code, kJailSetupFailedExit);
  EXPECT_EQ(r.output.rfind(kJailMessagePrefix, 0), 0u) << r.output;
  EXPECT_NE(r.output.find("/no/such/toolchain"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << "one line: " << r.output;
  // A command that is not there inside is a setup failure too, not the command's error.
  const auto missing = run_jailed(base_options(work.path()), {"/opt/not/here"});
  EXPECT_EQ(missing.exit.code, kJailSetupFailedExit);
  EXPECT_NE(missing.output.find("exec /opt/not/here"), std::string::npos) << missing.output;
}

TEST(Jail, ExitsAtOnceWhenItsCallerIsAlreadyGone) {
  TempDir work = work_dir();
  JailOptions o = base_options(work.path());
  o.parent_pid = 1;  // not our parent: as if the caller had died before we started
  if (::getppid() == 1) GTEST_SKIP() << "the test runner's parent is pid 1";
  const auto r = shell(o, "echo ran");
  EXPECT_EQ(r.output.find("ran"), std::string::npos) << r.output;
  EXPECT_EQ(r.exit.code, kJailSetupFailedExit);
  EXPECT_NE(r.output.find("parent process already gone"), std::string::npos) << r.output;
}

TEST(Jail, ForwardsExitCodesAndSignals) {
  TempDir work = work_dir();
  const auto code = shell(base_options(work.path()), "exit 7");
  EXPECT_TRUE(code.exit.exited);
  EXPECT_EQ(code.exit.code, 7);
  const auto killed = shell(base_options(work.path()), "kill -SEGV $$");
  EXPECT_FALSE(killed.exit.exited);
  EXPECT_EQ(killed.exit.signal, SIGSEGV);
}

TEST(Jail, SeesOnlyWhatWasBound) {
  auto secret_dir = TempDir::create("kevin-jail-secret-");
  ASSERT_TRUE(secret_dir.is_ok());
  ::chmod(secret_dir->path().c_str(), 0755);
  std::ofstream(secret_dir->path() / "expected.bin") << "SECRET-PAYLOAD";
  ::chmod((secret_dir->path() / "expected.bin").c_str(),
          0644);  // readable by anyone who can see it
  TempDir work = work_dir();
  const std::string secret = (secret_dir->path() / "expected.bin").string();
  const auto r = shell(
      base_options(work.path()),
      "cat " + secret +
          "; ls -A /; echo ---; ls -A /etc; echo ---; ls -A /dev; echo ---;"
          "ls /root /home /work 2>&1; echo /proc/[0-9]*; cat /proc/self/environ | tr '\\0' ' '");
  EXPECT_EQ(r.output.find("SECRET-PAYLOAD"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("No such file"), std::string::npos) << r.output;
  // The root holds the binds (as they exist here), the parents of the others, and our mounts.
  std::string expected_root;
  for (const std::string name :
       {"bin", "dev", "etc", "lib", "lib64", "proc", "sbin", "tmp", "usr"}) {
    const bool ours = name == "dev" || name == "etc" || name == "proc" || name == "tmp";
    if (ours || fs::exists(fs::symlink_status("/" + name))) expected_root += name + "\n";
  }
  EXPECT_NE(r.output.find("\n" + expected_root +
                          "---\nld.so.cache\n---\nfd\nnull\nstderr\nstdin\nstdout\n---\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("ls: cannot access '/root'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("ls: cannot access '/home'"), std::string::npos) << r.output;
  // Our own processes only (the init and this shell), and only the environment we gave.
  EXPECT_NE(r.output.find("\n/proc/1 /proc/2\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("PATH=/usr/bin:/bin LC_ALL=C "), std::string::npos) << r.output;
}

TEST(Jail, WritesOnlyInsideTheWorkDirAndItsOwnTmp) {
  TempDir work = work_dir();
  const std::string marker = "kevin-jail-tmp-" + std::to_string(::getpid());
  const auto r = shell(
      base_options(work.path()),
      "touch made_here && echo WORK_OK; touch /usr/x || echo USR_RO; touch /x || echo ROOT_RO;"
      "touch /etc/x || echo ETC_RO; touch /dev/x || echo DEV_RO; touch /tmp/" +
          marker +
          " && echo TMP_OK;"
          "head -c 4096 /dev/null > /dev/null && echo NULL_OK");
  for (const char* expect :
       {"WORK_OK", "USR_RO", "ROOT_RO", "ETC_RO", "DEV_RO", "TMP_OK", "NULL_OK"}) {
    EXPECT_NE(r.output.find(expect), std::string::npos) << expect << "\n" << r.output;
  }
  EXPECT_TRUE(fs::exists(work.path() / "made_here"));
  EXPECT_FALSE(fs::exists(fs::path("/tmp") / marker)) << "the jail's /tmp is private";
}

TEST(Jail, HasNoNetworkButLoopback) {
  TempDir work = work_dir();
  const auto r =
      shell(base_options(work.path()), "tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
  EXPECT_EQ(r.output, "lo\n");
}

TEST(Jail, RunsAsNobodyWithoutPrivileges) {
  TempDir work = work_dir();
  const auto r = shell(base_options(work.path()),
                       "id -u; id -g; grep -E '^(CapEff|CapPrm|NoNewPrivs)' /proc/self/status");
  EXPECT_EQ(r.output.rfind("65534\n65534\n", 0), 0u) << r.output;
  EXPECT_NE(r.output.find("CapPrm:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("CapEff:\t0000000000000000"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("NoNewPrivs:\t1"), std::string::npos) << r.output;
}

TEST(Jail, CpuLimitKills) {
  TempDir work = work_dir();
  JailOptions o = base_options(work.path());
  o.limits.cpu_seconds = 1;
  const auto start = Clock::now();
  const auto r = shell(o, "while :; do :; done", 30s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_FALSE(r.exit.exited);
  EXPECT_TRUE(r.exit.signal == SIGXCPU || r.exit.signal == SIGKILL) << r.exit.describe();
  EXPECT_LT(Clock::now() - start, 10s);
}

TEST(Jail, ChildrenDieWithTheCommand) {
  TempDir work = work_dir();
  // A background child keeps our output pipe open for as long as it lives.
  const auto start = Clock::now();
  const auto r = shell(base_options(work.path()), "sleep 60 & echo started", 40s);
  EXPECT_FALSE(r.timed_out);
  EXPECT_EQ(r.output, "started\n");
  EXPECT_LT(Clock::now() - start, 20s);
}

TEST(Jail, EverythingDiesWhenTheLauncherIsKilled) {
  TempDir work = work_dir();
  JailOptions o = base_options(work.path());
  o.command = {"/bin/sh", "-c", "sleep 60 & sleep 60 & echo started; wait"};
  SpawnOptions s;
  s.argv = {sandbox_binary().string()};
  for (auto& a : jail_args(o)) s.argv.push_back(std::move(a));
  auto out = make_pipe();
  ASSERT_TRUE(out.is_ok());
  s.fds = {{1, out->write.get()}, {2, out->write.get()}};
  auto child = spawn(s);
  ASSERT_TRUE(child.is_ok());
  out->write.reset();
  char buf[16] = {};
  ASSERT_TRUE(read_exact(out->read.get(), buf, 8, Deadline::after(20s)).is_ok());
  EXPECT_EQ(std::string(buf, 8), "started\n");
  ::kill(child->pid(), SIGKILL);  // the launcher alone, not its process group
  std::string rest;
  const auto start = Clock::now();
  EXPECT_TRUE(read_until_eof(out->read.get(), 1024, Deadline::after(20s), &rest).is_ok())
      << "a process in the jail outlived the launcher";
  EXPECT_LT(Clock::now() - start, 10s);
}

// A probe program built outside and run inside: what it can reach with plain system calls.
class JailProbe : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto dir = TempDir::create("kevin-jail-probe-");
    ASSERT_TRUE(dir.is_ok());
    probe_dir_ = new TempDir(std::move(dir).value());
    ::chmod(probe_dir_->path().c_str(), 0755);
    const fs::path src = probe_dir_->path() / "probe.cpp";
    std::ofstream(src) << R"(
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
int main(int argc, char** argv) {
  if (argc < 3) return 2;
  if (!strcmp(argv[1], "read")) {
    const int fd = open(argv[2], O_RDONLY);
    if (fd < 0) { printf("read:denied\n"); return 0; }
    char buf[64] = {};
    printf("read:LEAK:%s\n", read(fd, buf, sizeof buf - 1) > 0 ? buf : "");
  } else if (!strcmp(argv[1], "write")) {
    const int fd = open(argv[2], O_WRONLY | O_CREAT, 0644);
    printf(fd < 0 ? "write:denied\n" : "write:LEAK\n");
  } else if (!strcmp(argv[1], "alloc")) {
    const size_t n = strtoull(argv[2], nullptr, 10);
    char* p = static_cast<char*>(malloc(n));
    if (p == nullptr) { printf("alloc:refused\n"); return 0; }
    memset(p, 1, n);
    printf("alloc:granted\n");
  } else if (!strcmp(argv[1], "connect")) {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(static_cast<unsigned short>(atoi(argv[2])));
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    printf(connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 ? "connect:LEAK\n" : "connect:denied\n");
  }
  return 0;
}
)";
    auto built = run_command(
        {"/usr/bin/g++", "-O1", "-o", (probe_dir_->path() / "probe").string(), src.string()},
        Deadline::after(120s));
    ASSERT_TRUE(built.is_ok() && built->exit.exited && built->exit.code == 0)
        << (built.is_ok() ? built->output : "");
  }
  static void TearDownTestSuite() {
    delete probe_dir_;
    probe_dir_ = nullptr;
  }

  std::string probe(JailOptions o, const std::vector<std::string>& args) {
    o.read_only.push_back(probe_dir_->path());
    std::vector<std::string> command = {(probe_dir_->path() / "probe").string()};
    command.insert(command.end(), args.begin(), args.end());
    return run_jailed(std::move(o), command).output;
  }

  static TempDir* probe_dir_;
};
TempDir* JailProbe::probe_dir_ = nullptr;

TEST_F(JailProbe, CannotReadOrWriteOutsideWhatWasBound) {
  TempDir work = work_dir();
  auto secret_dir = TempDir::create("kevin-jail-secret-");
  ASSERT_TRUE(secret_dir.is_ok());
  ::chmod(secret_dir->path().c_str(), 0755);
  std::ofstream(secret_dir->path() / "expected.bin") << "SECRET-PAYLOAD";
  ::chmod((secret_dir->path() / "expected.bin").c_str(), 0644);
  const JailOptions o = base_options(work.path());
  EXPECT_EQ(probe(o, {"read", (secret_dir->path() / "expected.bin").string()}), "read:denied\n");
  EXPECT_EQ(probe(o, {"read", "/etc/hostname"}), "read:denied\n");
  EXPECT_EQ(probe(o, {"read", "/proc/1/environ"}), "read:denied\n");
  EXPECT_EQ(probe(o, {"write", (secret_dir->path() / "planted").string()}), "write:denied\n");
  EXPECT_EQ(probe(o, {"write", "/usr/planted"}), "write:denied\n");
  EXPECT_EQ(probe(o, {"write", (work.path() / "ok").string()}), "write:LEAK\n")
      << "the work dir is writable";
  EXPECT_FALSE(fs::exists(secret_dir->path() / "planted"));
}

TEST_F(JailProbe, CannotConnectToTheHost) {
  TempDir work = work_dir();
  EXPECT_EQ(probe(base_options(work.path()), {"connect", "22"}), "connect:denied\n");
}

TEST_F(JailProbe, AddressSpaceIsLimited) {
  TempDir work = work_dir();
  JailOptions o = base_options(work.path());
  o.limits.address_space_bytes = uint64_t{256} << 20;
  EXPECT_EQ(probe(o, {"alloc", std::to_string(uint64_t{1} << 30)}), "alloc:refused\n");
  EXPECT_EQ(probe(o, {"alloc", std::to_string(uint64_t{16} << 20)}), "alloc:granted\n");
}

// As a normal user the sandbox builds a user namespace first; the command still runs as
// nobody inside and sees the same minimal root.
TEST(Jail, WorksForAnUnprivilegedCaller) {
  if (!is_root()) GTEST_SKIP() << "already unprivileged: every other test covers this path";
  const fs::path setpriv = "/usr/bin/setpriv";
  if (!fs::exists(setpriv)) GTEST_SKIP() << "no setpriv to become another user";
  TempDir work = work_dir();
  ::chmod(work.path().c_str(), 0700);
  JailOptions o = base_options(work.path());
  o.command = {"/bin/sh", "-c", "id -u; ls -A /; touch made_here && echo WORK_OK"};
  std::vector<std::string> argv = {setpriv.string(), "--reuid=65534", "--regid=65534",
                                   "--clear-groups", sandbox_binary().string()};
  for (auto& a : jail_args(o)) argv.push_back(std::move(a));
  auto r = run_command(argv, Deadline::after(30s));
  ASSERT_TRUE(r.is_ok());
  if (r->exit.code == kJailSetupFailedExit)
    GTEST_SKIP() << "user namespaces unavailable here: " << r->output;
  EXPECT_EQ(r->output.rfind("65534\n", 0), 0u) << r->output;
  EXPECT_EQ(r->output.find("root"), std::string::npos) << r->output;
  EXPECT_NE(r->output.find("WORK_OK"), std::string::npos) << r->output;
}

}  // namespace
}  // namespace kevin::sys
