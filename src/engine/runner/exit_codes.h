// exit_codes.h — exit statuses by which a runner tells the judge why it ended when a reply
// cannot (the process is ended from inside a hook). Shared by the runners and the judge.
#pragma once

namespace kevin::runner {

// The Python runner's audit hook saw a KernelBench answer reach into the interpreter (its
// frames, hooks, ctypes or the process): the judge rejects it as `introspection`.
inline constexpr int kIntrospectionExit = 120;

}  // namespace kevin::runner
