// protocol.cpp — the judge–runner protocol's codec: each command and reply type to its JSON
// frame and back, and the one table of reply fields the judge checks before reading any.
#include "engine/runner/protocol.h"

#include <algorithm>
#include <type_traits>

namespace kevin::runner_protocol {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

constexpr std::string_view kSetup = "setup", kLoad = "load", kCall = "call",
                           kTimeCall = "time_call", kResume = "resume", kExit = "exit";

Json placements(const std::vector<TensorPlacement>& list) {
  Json out = Json::array();
  for (const auto& t : list)
    out.push_back(
        {{"dtype", t.dtype}, {"shape", t.shape}, {"offset", t.offset}, {"bytes", t.bytes}});
  return out;
}

Result<std::vector<TensorPlacement>> decode_placements(const Json& frame, std::string_view key) {
  KEVIN_ASSIGN_OR_RETURN(Json list, json_get<Json>(frame, key));
  if (!list.is_array()) return invalid_argument("field \"" + std::string(key) + "\": not a list");
  std::vector<TensorPlacement> out;
  for (const Json& t : list) {
    TensorPlacement p;
    KEVIN_ASSIGN_OR_RETURN(p.dtype, json_get<int32_t>(t, "dtype"));
    KEVIN_ASSIGN_OR_RETURN(p.shape, json_get<std::vector<int64_t>>(t, "shape"));
    KEVIN_ASSIGN_OR_RETURN(p.offset, json_get<uint64_t>(t, "offset"));
    KEVIN_ASSIGN_OR_RETURN(p.bytes, json_get<uint64_t>(t, "bytes"));
    out.push_back(std::move(p));
  }
  return out;
}

Json encode_setup(const Setup& s) {
  Json j = {{"backend", s.backend},
            {"sets", s.sets},
            {"set_bytes", s.set_bytes},
            {"output_bytes", s.output_bytes},
            {"scalars", s.scalars},
            {"inputs", placements(s.inputs)},
            {"outputs", placements(s.outputs)},
            {"cpu_seconds", s.cpu_seconds},
            {"output_limit", s.output_limit}};
  if (!s.op_log_library.empty()) {
    j["op_log_library"] = s.op_log_library;
    j["op_log_torch"] = s.op_log_torch;
  }
  return j;
}

Result<Setup> decode_setup(const Json& f) {
  Setup s;
  KEVIN_ASSIGN_OR_RETURN(s.backend, json_get<std::string>(f, "backend"));
  KEVIN_ASSIGN_OR_RETURN(s.sets, json_get<uint64_t>(f, "sets"));
  KEVIN_ASSIGN_OR_RETURN(s.set_bytes, json_get<uint64_t>(f, "set_bytes"));
  KEVIN_ASSIGN_OR_RETURN(s.output_bytes, json_get<uint64_t>(f, "output_bytes"));
  KEVIN_ASSIGN_OR_RETURN(s.scalars, json_get<std::vector<std::vector<double>>>(f, "scalars"));
  KEVIN_ASSIGN_OR_RETURN(s.inputs, decode_placements(f, "inputs"));
  KEVIN_ASSIGN_OR_RETURN(s.outputs, decode_placements(f, "outputs"));
  KEVIN_ASSIGN_OR_RETURN(s.cpu_seconds, json_get<uint64_t>(f, "cpu_seconds"));
  KEVIN_ASSIGN_OR_RETURN(s.output_limit, json_get<uint64_t>(f, "output_limit"));
  KEVIN_ASSIGN_OR_RETURN(s.op_log_library, json_get_or<std::string>(f, "op_log_library", ""));
  KEVIN_ASSIGN_OR_RETURN(s.op_log_torch, json_get_or<std::string>(f, "op_log_torch", ""));
  return s;
}

Json encode_load(const Load& l) {
  Json j = {{"data_symbols", l.data_symbols}};
  if (l.extensions.empty()) return j;
  Json args = Json::array();
  for (const auto& a : l.args) args.push_back({{"name", a.name}, {"role", a.role}});
  j.update({{"extensions", l.extensions},
            {"args", args},
            {"forward_args", l.forward_args},
            {"scalar_kinds", l.scalar_kinds},
            {"init_inputs", l.init_inputs}});
  return j;
}

Result<Load> decode_load(const Json& f) {
  Load l;
  KEVIN_ASSIGN_OR_RETURN(l.data_symbols, json_get<std::vector<uint64_t>>(f, "data_symbols"));
  KEVIN_ASSIGN_OR_RETURN(l.extensions, json_get_or<std::vector<std::string>>(f, "extensions", {}));
  if (l.extensions.empty()) return l;
  KEVIN_ASSIGN_OR_RETURN(Json args, json_get<Json>(f, "args"));
  if (!args.is_array()) return invalid_argument("field \"args\": not a list");
  for (const Json& a : args) {
    KernelBenchArg arg;
    KEVIN_ASSIGN_OR_RETURN(arg.name, json_get<std::string>(a, "name"));
    KEVIN_ASSIGN_OR_RETURN(arg.role, json_get<std::string>(a, "role"));
    l.args.push_back(std::move(arg));
  }
  KEVIN_ASSIGN_OR_RETURN(l.forward_args, json_get<std::vector<std::string>>(f, "forward_args"));
  KEVIN_ASSIGN_OR_RETURN(l.scalar_kinds, json_get<std::vector<std::string>>(f, "scalar_kinds"));
  KEVIN_ASSIGN_OR_RETURN(l.init_inputs, json_get<Json>(f, "init_inputs"));
  return l;
}

Result<TimeCall> decode_time_call(const Json& f) {
  TimeCall t;
  if (f.contains("set")) {
    KEVIN_ASSIGN_OR_RETURN(t.set, json_get<uint64_t>(f, "set"));
  } else {
    KEVIN_ASSIGN_OR_RETURN(t.slot_scalars, json_get<std::vector<double>>(f, "slot_scalars"));
  }
  return t;
}

// Every command but resume and exit carries the poison word of the call after it.
Result<uint32_t> decode_poison(const Json& f) { return json_get<uint32_t>(f, "next_poison"); }

template <class T>
Result<Command> with_poison(Result<T> decoded, const Json& f) {
  if (!decoded.is_ok()) return decoded.status();
  KEVIN_ASSIGN_OR_RETURN(decoded->next_poison, decode_poison(f));
  return Command(std::move(decoded).value());
}

bool list_of(const Json& list, bool (Json::*check)() const noexcept) {
  return list.is_array() &&
         std::all_of(list.begin(), list.end(), [&](const Json& v) { return (v.*check)(); });
}

bool has_type(const Json& value, std::string_view type) {
  if (type == "bool") return value.is_boolean();
  if (type == "integer") return value.is_number_integer();
  if (type == "unsigned") return value.is_number_unsigned();
  if (type == "number") return value.is_number();
  if (type == "string") return value.is_string();
  if (type == "unsigned list") return list_of(value, &Json::is_number_unsigned);
  // "sandbox": {"enforced": [string], "skipped": [string]}, either list optional.
  if (!value.is_object()) return false;
  static constexpr const char* kLayers[] = {"enforced", "skipped"};
  return std::all_of(std::begin(kLayers), std::end(kLayers), [&](const char* key) {
    const auto l = value.find(key);
    return l == value.end() || list_of(*l, &Json::is_string);
  });
}

}  // namespace

std::string_view command_name(const Command& command) {
  return std::visit(
      Overloaded{[](const Setup&) { return kSetup; }, [](const Load&) { return kLoad; },
                 [](const Call&) { return kCall; }, [](const TimeCall&) { return kTimeCall; },
                 [](const Resume&) { return kResume; }, [](const Exit&) { return kExit; }},
      command);
}

bool is_answered(const Command& command) {
  return !std::holds_alternative<Resume>(command) && !std::holds_alternative<Exit>(command);
}

bool is_call(const Command& command) {
  return std::holds_alternative<Call>(command) || std::holds_alternative<TimeCall>(command);
}

Json encode(const Command& command) {
  Json j = std::visit(
      Overloaded{[](const Setup& s) { return encode_setup(s); },
                 [](const Load& l) { return encode_load(l); },
                 [](const Call& c) {
                   return Json{{"set", c.set}};
                 },
                 [](const TimeCall& t) {
                   return t.set ? Json{{"set", *t.set}} : Json{{"slot_scalars", t.slot_scalars}};
                 },
                 [](const Resume&) { return Json::object(); },
                 [](const Exit&) { return Json::object(); }},
      command);
  j["cmd"] = command_name(command);
  std::visit(Overloaded{[&](const auto& c) -> void {
               if constexpr (requires { c.next_poison; }) j["next_poison"] = c.next_poison;
             }},
             command);
  return j;
}

Result<Command> decode_command(const Json& frame) {
  KEVIN_ASSIGN_OR_RETURN(std::string name, json_get<std::string>(frame, "cmd"));
  if (name == kSetup) return with_poison(decode_setup(frame), frame);
  if (name == kLoad) return with_poison(decode_load(frame), frame);
  if (name == kCall) {
    Call c;
    KEVIN_ASSIGN_OR_RETURN(c.set, json_get<uint64_t>(frame, "set"));
    return with_poison(Result<Call>(c), frame);
  }
  if (name == kTimeCall) return with_poison(decode_time_call(frame), frame);
  if (name == kResume) return Command(Resume{});
  if (name == kExit) return Command(Exit{});
  return invalid_argument("unknown command '" + name + "'");
}

Json encode(const Reply& reply) {
  return std::visit(
      Overloaded{[](const Failure& f) {
                   return Json{{"ok", false}, {"stage", f.stage}, {"error", f.error}};
                 },
                 [](const SetupReply& s) {
                   return Json{{"ok", true},
                               {"device", s.device},
                               {"workspace_bytes", s.workspace_bytes},
                               {"input_hashes", s.input_hashes},
                               {"sandbox", {{"enforced", s.enforced}, {"skipped", s.skipped}}}};
                 },
                 [](const LoadReply& l) {
                   return Json{{"ok", true}, {"static_bytes", l.static_bytes}};
                 },
                 [](const CallReply& c) {
                   return Json{{"ok", true}, {"rc", c.rc}, {"input_hashes", c.input_hashes}};
                 },
                 [](const TimeCallReply& t) {
                   Json j = {{"ok", true}, {"rc", t.rc}};
                   if (t.event_ms) j["event_ms"] = *t.event_ms;
                   return j;
                 }},
      reply);
}

Json encode(const Ready& ready) {
  if (ready.ready) return Json{{"ready", true}};
  return Json{{"ready", false}, {"error", ready.error}};
}

const std::vector<ReplyField>& reply_fields() {
  static const std::vector<ReplyField> fields = {{"ok", "bool"},
                                                 {"ready", "bool"},
                                                 {"rc", "integer"},
                                                 {"event_ms", "number"},
                                                 {"error", "string"},
                                                 {"stage", "string"},
                                                 {"device", "string"},
                                                 {"static_bytes", "unsigned"},
                                                 {"workspace_bytes", "unsigned"},
                                                 {"input_hashes", "unsigned list"},
                                                 {"sandbox", "sandbox"}};
  return fields;
}

bool reply_well_typed(const Json& body) {
  if (!body.is_object()) return false;
  return std::all_of(reply_fields().begin(), reply_fields().end(), [&](const ReplyField& f) {
    const auto it = body.find(f.name);
    return it == body.end() || has_type(*it, f.type);
  });
}

Reply decode_reply(const Command& answered, const Json& body) {
  if (!body.value("ok", false)) return Failure{body.value("stage", ""), body.value("error", "")};
  const auto hashes = [&] { return body.value("input_hashes", std::vector<uint64_t>{}); };
  return std::visit(
      Overloaded{
          [&](const Setup&) -> Reply {
            const Json sandbox = body.value("sandbox", Json::object());
            return SetupReply{body.value("device", ""), body.value("workspace_bytes", uint64_t{0}),
                              hashes(), sandbox.value("enforced", std::vector<std::string>{}),
                              sandbox.value("skipped", std::vector<std::string>{})};
          },
          [&](const Load&) -> Reply { return LoadReply{body.value("static_bytes", uint64_t{0})}; },
          [&](const Call&) -> Reply {
            return CallReply{body.value("rc", int64_t{0}), hashes()};
          },
          [&](const TimeCall&) -> Reply {
            const auto event = body.find("event_ms");
            return TimeCallReply{
                body.value("rc", int64_t{0}),
                event == body.end() ? std::nullopt : std::optional(event->get<double>())};
          },
          [&](const auto&) -> Reply {
            return Failure{"harness", "no reply is owed"};
          }},
      answered);
}

Ready decode_ready(const Json& body) {
  return Ready{body.value("ready", false), body.value("error", "")};
}

}  // namespace kevin::runner_protocol
