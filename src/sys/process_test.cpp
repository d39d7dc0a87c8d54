// process_test.cpp — spawning, exit decoding, deadlines and output capping.
#include "sys/process.h"

#include <gtest/gtest.h>

#include "sys/fd.h"

#include <fcntl.h>
#include <unistd.h>

namespace kevin::sys {
namespace {
using namespace std::chrono_literals;

TEST(Process, RunCommandCapturesOutputAndExitCode) {
  auto r = run_command({"/bin/sh", "-c", "echo hello; echo err >&2; exit 3"}, Deadline::after(10s));
  ASSERT_TRUE(r.is_ok()) << r.status().to_string();
  EXPECT_TRUE(r->exit.exited);
  EXPECT_EQ(r->exit.code, 3);
  EXPECT_NE(r->output.find("hello"), std::string::npos);
  EXPECT_NE(r->output.find("err"), std::string::npos);
  EXPECT_FALSE(r->timed_out);
}

TEST(Process, DeadlineKillsHangingChild) {
  auto r = run_command({"/bin/sh", "-c", "sleep 30"}, Deadline::after(200ms));
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(r->wall_ms, 5000);
  EXPECT_FALSE(r->exit.exited);
  EXPECT_EQ(r->exit.signal, SIGKILL);
}

TEST(Process, OutputFloodIsCappedNotBuffered) {
  auto r = run_command({"/bin/sh", "-c", "head -c 5000000 /dev/zero | tr '\\0' x"},
                       Deadline::after(20s), 1000);
  ASSERT_TRUE(r.is_ok());
  EXPECT_EQ(r->output.size(), 1000u);
  EXPECT_TRUE(r->exit.exited);
}

TEST(Process, SignalDeathIsDescribed) {
  auto r = run_command({"/bin/sh", "-c", "kill -SEGV $$"}, Deadline::after(10s));
  ASSERT_TRUE(r.is_ok());
  EXPECT_FALSE(r->exit.exited);
  EXPECT_EQ(r->exit.signal, SIGSEGV);
  EXPECT_NE(r->exit.describe().find("signal 11"), std::string::npos);
}

TEST(Process, MissingProgramIsNotFound) {
  SpawnOptions o;
  o.argv = {"/nonexistent/program"};
  auto child = spawn(o);
  EXPECT_EQ(child.status().code(), StatusCode::kNotFound);
  EXPECT_NE(child.status().message().find("cannot execute /nonexistent/program"), std::string::npos)
      << child.status().to_string();
}

TEST(Process, ChildKilledOnDestruction) {
  pid_t pid = -1;
  {
    SpawnOptions o;
    o.argv = {"/bin/sleep", "30"};
    auto child = spawn(o);
    ASSERT_TRUE(child.is_ok());
    pid = child->pid();
  }
  EXPECT_NE(::kill(pid, 0), 0) << "child must be gone after Child is destroyed";
}

TEST(Process, CpuTimeCountsTheDescendantsTheChildWaitedFor) {
  // The spinning is a grandchild's: only the inner shell's parent reaps it.
  const std::string spin = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
  auto r =
      run_command({"/bin/sh", "-c", "/bin/sh -c '" + spin + "'; sleep 0.2"}, Deadline::after(60s));
  ASSERT_TRUE(r.is_ok());
  EXPECT_TRUE(r->exit.exited);
  EXPECT_GT(r->exit.cpu_time, 50ms);
  const std::chrono::duration<double, std::milli> wall(r->wall_ms);
  EXPECT_LT(r->exit.cpu_time, wall) << "one process at a time";
  auto idle = run_command({"/bin/sh", "-c", "sleep 0.3"}, Deadline::after(10s));
  ASSERT_TRUE(idle.is_ok());
  EXPECT_LT(idle->exit.cpu_time, r->exit.cpu_time);
}

TEST(Process, FindsProgramsOnPath) {
  EXPECT_TRUE(find_program("sh").has_value());
  EXPECT_FALSE(find_program("definitely-not-a-program-kevin").has_value());
}

}  // namespace
}  // namespace kevin::sys

namespace kevin::sys {
namespace {

// Regression: mapping parent fd A to child fd B where B is another mapping's source must not
// clobber that source (child fd 6 once received the file meant for fd 5).
TEST(Process, CrossingDescriptorMappingsKeepTheirSources) {
  auto a = make_pipe();
  auto b = make_pipe();
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  // Put the two read ends on 50 and 51 (free numbers), then ask for them crossed in the child.
  ASSERT_EQ(::dup3(a->read.get(), 50, O_CLOEXEC), 50);
  ASSERT_EQ(::dup3(b->read.get(), 51, O_CLOEXEC), 51);
  ASSERT_EQ(::write(a->write.get(), "A", 1), 1);
  ASSERT_EQ(::write(b->write.get(), "B", 1), 1);
  SpawnOptions o;
  o.argv = {"/bin/sh", "-c", "head -c1 /dev/fd/50; head -c1 /dev/fd/51"};
  o.env = current_environment();
  auto out = make_pipe();
  ASSERT_TRUE(out.is_ok());
  o.fds = {{1, out->write.get()}, {50, 51}, {51, 50}};
  auto child = spawn(o);
  ASSERT_TRUE(child.is_ok());
  out->write.reset();
  std::string got;
  ASSERT_TRUE(
      read_until_eof(out->read.get(), 16, Deadline::after(std::chrono::seconds(10)), &got).is_ok());
  EXPECT_EQ(got, "BA");
  ::close(50);
  ::close(51);
}

}  // namespace
}  // namespace kevin::sys
