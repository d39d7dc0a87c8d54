// protocol.h — the judge–runner protocol, defined once: the judge's commands and the runner's
// replies as types, with the one codec between them and their JSON frames. The judge
// (judge.cpp, runner_session.cpp), kevin-runner (runner_main.cpp) and the judge's scripted
// fake (fake_runner.cpp) use it; the Python runner (kernelbench_runner.py) speaks the same
// frames and is held to them by runner_protocol_conformance_test.cpp (docs/sandbox.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/json.h"
#include "core/status.h"

namespace kevin::runner_protocol {

// ---- Commands: judge → runner. The judge is trusted; the runner refuses a command it cannot
// decode (decode_command) with a Failure of stage "harness".

// Where one tensor lies inside an input or output set (bytes from the set's start).
struct TensorPlacement {
  int32_t dtype = 0;  // kevin_dtype (engine/abi/kevin_abi.h)
  std::vector<int64_t> shape;
  uint64_t offset = 0, bytes = 0;
};

// Prepares the device before any candidate code: the correctness input sets (read from
// descriptor 5), one timing-set slot, the output staging, then the sandbox's doors. Every
// command carries `next_poison`, the word the outputs are filled with before the next call.
struct Setup {
  std::string backend;  // "cpu" or "cuda"
  uint64_t sets = 0;    // correctness input sets
  uint64_t set_bytes = 0, output_bytes = 0;
  std::vector<std::vector<double>> scalars;  // [set][scalar], one list per correctness set
  std::vector<TensorPlacement> inputs, outputs;
  uint64_t cpu_seconds = 0, output_limit = 0;  // the runner's CPU-time and output caps
  uint32_t next_poison = 0;
  // KernelBench answers (Python runner) only: the operator log and the PyTorch it was built
  // for; empty for kevin's ABI.
  std::string op_log_library, op_log_torch;
};

// One argument of a KernelBench answer's forward, in the reference's order.
struct KernelBenchArg {
  std::string name;
  std::string role;  // "input", "parameter", "buffer" (engine/run/reference.h's arg roles)
};

// Loads the candidate (candidate.so, or answer.py for the Python runner) and seals the sandbox.
struct Load {
  uint32_t next_poison = 0;
  std::vector<uint64_t> data_symbols;  // the object's writable data symbols (offsets)
  // KernelBench answers only (`extensions` non-empty marks one): the extensions built for it,
  // forward's arguments, its scalar kinds and get_init_inputs() as a JSON list.
  std::vector<std::string> extensions;
  std::vector<KernelBenchArg> args;
  std::vector<std::string> forward_args, scalar_kinds;
  Json init_inputs;
};

// One untimed call on correctness set `set`; its outputs go to the staging area.
struct Call {
  uint64_t set = 0;
  uint32_t next_poison = 0;
};

// One timed call (L2 flushed first): on correctness set `set` (a warm-up), or, without `set`,
// on the timing slot the judge has just filled, whose scalars are `slot_scalars`.
struct TimeCall {
  std::optional<uint64_t> set;
  std::vector<double> slot_scalars;
  uint32_t next_poison = 0;
  bool on_slot() const { return !set.has_value(); }
};

// Lets a runner that waits, asleep, after a CPU-measured timed reply go on to its clean-up.
struct Resume {};
// Ends the runner at once (no teardown).
struct Exit {};

using Command = std::variant<Setup, Load, Call, TimeCall, Resume, Exit>;

// The command's name on the wire ("setup", "load", "call", "time_call", "resume", "exit").
std::string_view command_name(const Command& command);
// Whether the runner answers `command` with a reply, then (calls and timed calls that
// succeeded) a Ready frame once it has cleaned up; resume and exit get no reply.
bool is_answered(const Command& command);
bool is_call(const Command& command);

// The frame's JSON: {"cmd": name, ...fields}.
Json encode(const Command& command);
// The runner's reading of a frame. Errors: kInvalidArgument naming the unknown command or
// the missing or mistyped field; nothing is built from a refused frame.
Result<Command> decode_command(const Json& frame);

// ---- Replies: runner → judge. Once the candidate is loaded a reply may be the candidate's:
// the judge checks every field's type before reading any (reply_well_typed) and believes no
// value it need not.

// The command failed ({"ok": false}); the runner exits after sending it.
struct Failure {
  std::string stage;  // "sandbox", "harness", "load", "call", "time", "device", or empty
  std::string error;  // empty when the runner gave none
};
struct SetupReply {
  std::string device;  // the device's name ("cpu" on the CPU)
  uint64_t workspace_bytes = 0;
  std::vector<uint64_t> input_hashes;          // one per correctness set, as uploaded
  std::vector<std::string> enforced, skipped;  // the sandbox's layers
};
struct LoadReply {
  uint64_t static_bytes = 0;  // the candidate's static storage, restored after each call
};
struct CallReply {
  int64_t rc = 0;                      // kevin_forward's return (0: success)
  std::vector<uint64_t> input_hashes;  // the correctness sets after the call
};
struct TimeCallReply {
  int64_t rc = 0;
  std::optional<double> event_ms;  // the device's time of the call (absent: malformed)
};
// The second frame after a call or timed call: the runner has cleaned up (or could not).
struct Ready {
  bool ready = false;
  std::string error;
};

using Reply = std::variant<Failure, SetupReply, LoadReply, CallReply, TimeCallReply>;

// The reply frame's JSON ({"ok": true, ...} or {"ok": false, "stage", "error"}).
Json encode(const Reply& reply);
Json encode(const Ready& ready);

// Whether every reply field the judge reads has the type the protocol gives it, whatever the
// command: a reply that breaks one is out of protocol. Unknown fields are allowed.
bool reply_well_typed(const Json& body);
// The reply to `answered` held in `body` (a JSON object that is reply_well_typed): ok false or
// absent gives a Failure, else the command's reply, a missing field taking its default. Never
// fails for such a body; `answered` must be an answered command (is_answered).
Reply decode_reply(const Command& answered, const Json& body);
// The Ready frame in `body` (reply_well_typed); a missing "ready" reads as false.
Ready decode_ready(const Json& body);

// The reply fields and their types, as the protocol's table lists them (for the conformance
// test and docs/sandbox.md): "bool", "integer", "unsigned", "number", "string",
// "unsigned list", "sandbox".
struct ReplyField {
  std::string_view name, type;
};
const std::vector<ReplyField>& reply_fields();

}  // namespace kevin::runner_protocol
