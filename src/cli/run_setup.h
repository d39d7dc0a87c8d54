// run_setup.h — what `kevin run` and `kevin train` resolve the same way: task selections
// (suites, ids, files, folders, a split) and the evaluation engine's settings; `kevin eval`
// shares the device flags.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/status.h"
#include "env/engine_evaluator.h"
#include "policy/policy.h"
#include "tasks/suite.h"

namespace CLI {
class App;
}

namespace kevin::cli {

// Splits comma-separated entries ("a,b", "c" → a, b, c); empty items are dropped.
std::vector<std::string> split_list(const std::vector<std::string>& values);

// Tasks named by `specs`: task folders (a suite or a folder of suites), suite names of the
// tasks folder (`tasks_dir`, see paths.h), or task ids / file stems / .py paths; with a
// non-empty `split` ("train" / "holdout") only the tasks of that split. Duplicates are kept
// once. kNotFound when nothing is selected or a name matches no task.
Result<std::vector<tasks::TaskInfo>> select_tasks(const std::vector<std::string>& specs,
                                                  const std::string& tasks_dir,
                                                  const std::string& split);

// The task file `given` names, for commands that take one task (eval): a .py file as given, or
// a task of the tasks folder (paths.h) by id ("level1/028_gelu"), stem or path ending
// ("tasks/level1/028_gelu.py" from any folder). kNotFound naming the folder searched and the
// nearest id; kInvalidArgument when ambiguous.
Result<std::filesystem::path> task_file(const std::string& given);

// The CUDA devices a --devices value names: "all" (every visible GPU: an empty list) or
// comma-separated ordinals ("0,2"). Anything else is kInvalidArgument.
Result<std::vector<int>> parse_devices(const std::string& text);
// Registers --devices LIST (default "all") and its one-GPU spelling --device N on `command`,
// both writing `devices` (a string for parse_devices); giving both is a usage error.
void add_device_options(CLI::App* command, std::string* devices);

// Seconds a queued job waits for a live worker that takes its stream before it fails (the
// default of --queue-worker-wait and of the engine setting "queue_worker_wait_s").
inline constexpr double kQueueWorkerWaitS = 60;

// The engine settings with every default filled in ("backend": "auto" becomes cuda when a
// device is visible, else cpu; "cache_dir" the default cache). Unknown keys are
// kInvalidArgument. "devices" is "all", an ordinal, or a list of ordinals ("device", one
// ordinal, is its older spelling). {"fake": true} is kept as it is: a FakeEvaluator (dry runs,
// tests). "queue" (a redis:// URL) puts the engine on remote workers; then "backend" "auto" is
// decided by "queue_model" when given (cpu for "cpu", else cuda), else by the live workers
// (queue::choose_backend; Redis is asked, and the choice logged): its errors are the URL's
// (kInvalidArgument) and Redis's (kUnavailable). "queue_worker_wait_s" must be positive.
Result<Json> resolve_engine_json(const Json& given);

// The local engine's options for resolved settings (resolve_engine_json's output, without a
// queue); `cancel` as EngineOptions::cancel. Errors: kInvalidArgument naming a mistyped or
// out-of-range setting.
Result<env::EngineOptions> engine_options(const Json& resolved,
                                          const std::atomic<bool>* cancel = nullptr);

// The evaluator the settings describe (resolved ones). `cancel` (optional, borrowed) stops the
// local engine's reference preparation once it reads true (env::EngineOptions::cancel).
// Errors as EngineEvaluator::create.
Result<std::unique_ptr<env::Evaluator>> make_evaluator(const Json& engine,
                                                       const std::atomic<bool>* cancel = nullptr);

// For a new run against an OpenAI-compatible server at `url`: the model to ask for. The server
// must answer GET /models and list `model`; an empty `model` becomes the server's only one.
// Errors: kUnavailable (unreachable, or failing), kInvalidArgument (`model` not served, or none
// given and several served; both name the served ones). A server without a model list (404)
// is taken at its word when `model` is given.
Result<std::string> check_served_model(const std::string& url, const std::string& model,
                                       const std::string& api_key_env);

// The judging settings of resolved engine settings as queue::judging_key text (sent with
// queued jobs, compared by workers); "" for the fake engine. Errors: a mistyped setting.
Result<std::string> judging_of(const Json& engine);

// One call's inputs and outputs past which a task without reduced CPU sizes needs --full-size
// on the CPU backend (a KernelBench file at its GPU sizes: minutes per call, gigabytes).
inline constexpr uint64_t kCpuFullSizeBytes = uint64_t{256} << 20;
// Past this, a task running at full size on the CPU is worth a word before it starts (its
// reference preparation alone writes gigabytes), though it is not refused.
inline constexpr uint64_t kCpuNoticeBytes = uint64_t{64} << 20;

// What the CPU backend says before running a task whose one call moves `call_bytes` (inputs,
// parameters, outputs): nothing when it has reduced CPU sizes or is small; a notice past
// kCpuNoticeBytes; past kCpuFullSizeBytes a refusal unless `full_size` (then a warning). The
// text names the file, the call's size and what reference preparation writes for `seeds`.
struct CpuSizeVerdict {
  enum class Kind { kQuiet, kNotice, kWarning, kRefusal } kind = Kind::kQuiet;
  std::string text;
};
CpuSizeVerdict cpu_size_verdict(const std::string& file_name, uint64_t call_bytes,
                                bool reduced_for_cpu, int seeds, bool full_size);

// On the CPU backend, cpu_size_verdict for the task's measured call: a refusal is
// kInvalidArgument, a warning or notice is logged. Other engines and tasks that do not load
// (their error is reported when they are prepared) pass.
Status check_cpu_call_size(env::Evaluator* evaluator, const std::filesystem::path& task, int seeds,
                           bool full_size);

// A policy named on the command line as a JSON spec: "scripted:FILE" → {"kind": "scripted",
// "file"}, "local:MODEL_DIR" → {"kind": "local", "dir", "cuda" (from `backend`: cuda, cpu or
// auto = cuda when a GPU is seen), "open_think"}; paths made absolute. kInvalidArgument for
// another form, kNotFound for a path that does not exist.
Result<Json> policy_spec_json(const std::string& spec, const std::string& backend, bool open_think);

// The policy a spec describes: policy_spec_json's kinds (a local spec may add "max_batch") or
// {"kind": "openai", "url", "model", "api_key_env", "timeout_s", "max_concurrency"}. Loading
// errors are the policy's; kFailedPrecondition where this build lacks libtorch or libcurl.
Result<std::unique_ptr<policy::Policy>> make_policy(const Json& spec);

// --host, --port and --token-file of a command that serves (kevin serve, kevin generate --serve);
// the defaults are the fields' values.
void add_listen_options(CLI::App* command, std::string* host, int* port, std::string* token_file);

// The bearer token in `file` (surrounding whitespace dropped); "" when `file` is "". Errors:
// the file's, or kInvalidArgument for an empty file.
Result<std::string> read_token_file(const std::string& file);

}  // namespace kevin::cli
