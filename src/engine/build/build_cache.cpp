// build_cache.cpp — the compile driver's cache of builds: keys, entries published whole and
// leased while used, a build made once in a staging folder, and eviction to the size cap.
#include "engine/build/compiler.h"

#include <sys/stat.h>

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/file.h"
#include "core/json.h"
#include "core/log.h"
#include "core/mutex.h"
#include "core/sha256.h"
#include "engine/abi/kevin_abi.h"
#include "engine/build/compiler_internal.h"
#include "sys/cache_dir.h"
#include "sys/tempdir.h"

namespace kevin::engine {
namespace fs = std::filesystem;

namespace {

Result<BuildResult> load_entry(const fs::path& dir, const std::string& key) {
  KEVIN_ASSIGN_OR_RETURN(std::string text, read_file(dir / "build.json"));
  KEVIN_ASSIGN_OR_RETURN(Json meta, parse_json(text));
  BuildResult r;
  r.key = key;
  KEVIN_ASSIGN_OR_RETURN(r.ok, json_get<bool>(meta, "ok"));
  KEVIN_ASSIGN_OR_RETURN(r.log, json_get<std::string>(meta, "log"));
  KEVIN_ASSIGN_OR_RETURN(r.compile_ms, json_get<double>(meta, "compile_ms"));
  KEVIN_ASSIGN_OR_RETURN(r.device_global_bytes, json_get<uint64_t>(meta, "device_global_bytes"));
  KEVIN_ASSIGN_OR_RETURN(r.timed_out, json_get<bool>(meta, "timed_out"));
  KEVIN_ASSIGN_OR_RETURN(Json rejection, json_get_or<Json>(meta, "rejection", Json()));
  if (!rejection.is_null()) {
    Rejection rej;
    KEVIN_ASSIGN_OR_RETURN(rej.rule, json_get<std::string>(rejection, "rule"));
    KEVIN_ASSIGN_OR_RETURN(rej.detail, json_get<std::string>(rejection, "detail"));
    r.rejection = std::move(rej);
  }
  if (r.ok) {
    r.object = dir / kObjectName;
    if (!regular_file(r.object)) return not_found("cache entry lacks its object");
  }
  return r;
}
Json entry_json(const BuildResult& r, const std::string& compiler) {
  Json rejection;  // null
  if (r.rejection) rejection = {{"rule", r.rejection->rule}, {"detail", r.rejection->detail}};
  return {{"ok", r.ok},
          {"log", r.log},
          {"compile_ms", r.compile_ms},
          {"device_global_bytes", r.device_global_bytes},
          {"timed_out", r.timed_out},
          {"rejection", rejection},
          {"compiler", compiler}};
}
// Everything in `work` except the object of an ok build: sources, preprocessed units and
// intermediates do not go into the cache.
void keep_only_object(const fs::path& work, bool keep_object) {
  std::error_code ec;
  std::vector<fs::path> doomed;
  for (const auto& e : fs::directory_iterator(work, ec)) {
    if (!(keep_object && e.path().filename() == kObjectName)) doomed.push_back(e.path());
  }
  for (const auto& p : doomed) fs::remove_all(p, ec);
}

}  // namespace

bool regular_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(p, ec));
}
std::string CompileDriver::cache_key(const std::vector<std::string_view>& sources) const {
  Sha256 h;
  h.update_field(kCacheFormat);
  for (const auto source : sources) h.update_field(source);
  h.update_field(std::to_string(KEVIN_ABI_VERSION)).update_field(compiler_version_);
  for (const auto& list : {flags(), host_flags(), link_flags(), libraries()}) {
    for (const auto& f : list) h.update_field(f);
  }
  h.update_field(config_.backend == Backend::kCuda ? config_.cuda_arch : "host");
  // How an extension is built (two units, each in its forms, with these extras) is part of
  // what it is.
  if (config_.torch) {
    h.update_field("torch " + config_.torch->torch_version + ", two units in forms, extras " +
                   extras_digest_);
  }
  return h.hex_digest();
}
Result<sys::TempDir> CompileDriver::staging_folder(const std::string& prefix) const {
  std::error_code ec;
  const fs::path staging_root = config_.cache_dir / "staging";
  fs::create_directories(staging_root, ec);
  // Work folders are lent to nobody during a compile; no other process of nobody's (a
  // candidate runner) needs to reach them. The sandbox binds them directly.
  ::chmod(staging_root.c_str(), 0700);
  return sys::TempDir::create(prefix, staging_root);
}
Result<BuildResult> CompileDriver::build_fresh(const std::string& key, const fs::path& entry,
                                               const Pipeline& pipeline) const {
  const auto start = std::chrono::steady_clock::now();
  std::error_code ec;
  KEVIN_ASSIGN_OR_RETURN(sys::TempDir work, staging_folder("build-"));

  BuildResult result;
  result.key = key;
  std::string log;
  KEVIN_RETURN_IF_ERROR(pipeline(work.path(), &result, &log));
  result.log = truncate_compiler_log(log, work.path().string(), config_.max_log_bytes);
  result.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();

  keep_only_object(work.path(), result.ok);
  KEVIN_RETURN_IF_ERROR(write_file_atomic(work.path() / "build.json",
                                          dump_json(entry_json(result, compiler_version_), 1)));
  ::chmod(work.path().c_str(), 0755);  // runners read objects under another uid
  if (result.ok) ::chmod((work.path() / kObjectName).c_str(), 0755);
  const fs::path staged = work.release();
  auto lease = sys::publish_entry(staged, entry);
  if (!lease.is_ok()) {
    fs::remove_all(staged, ec);
    return lease.status();
  }
  KEVIN_ASSIGN_OR_RETURN(BuildResult stored, load_entry(entry, key));
  stored.compile_ms = result.compile_ms;
  if (stored.ok) stored.lease = std::move(lease).value();
  account_store(sys::entry_bytes(entry));
  return stored;
}
Result<BuildResult> CompileDriver::cached_or_built(const std::string& key,
                                                   const Pipeline& pipeline) const {
  const auto start = std::chrono::steady_clock::now();
  const fs::path entry = config_.cache_dir / "builds" / key.substr(0, 2) / key;
  if (fs::exists(entry / "build.json")) {
    // Leased before it is read, so it cannot be evicted between the read and the use.
    auto lease = sys::lease_entry(entry);
    auto hit = lease.is_ok() ? load_entry(entry, key) : Result<BuildResult>(lease.status());
    if (hit.is_ok()) {
      sys::touch_entry(entry);
      if (hit->ok) hit->lease = std::move(lease).value();
      hit->cache_hit = true;
      hit->compile_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
      return hit;
    }
  }
  return build_fresh(key, entry, pipeline);
}
void CompileDriver::account_store(uint64_t bytes) const {
  bool scan = false;
  {
    MutexLock lock(accounting_->mu);
    accounting_->bytes += bytes;
    ++accounting_->stores_since_scan;
    scan = !accounting_->scanned || accounting_->bytes > config_.max_cache_bytes ||
           accounting_->stores_since_scan >= kRescanEvery;
  }
  if (!scan) return;
  if (Status s = enforce_cache_cap(config_.max_cache_bytes); !s.is_ok()) {
    KEVIN_LOG(warn) << "build cache eviction failed: " << s.to_string();
  }
}
Status CompileDriver::enforce_cache_cap(uint64_t max_bytes) const {
  KEVIN_ASSIGN_OR_RETURN(sys::EvictionStats stats,
                         sys::evict_to_cap(config_.cache_dir / "builds", max_bytes));
  if (stats.skipped) return Status::ok();  // another process is evicting right now
  MutexLock lock(accounting_->mu);
  accounting_->scanned = true;
  accounting_->bytes = stats.bytes_after;
  accounting_->stores_since_scan = 0;
  if (stats.evicted > 0) {
    KEVIN_LOG(debug) << "build cache: evicted " << stats.evicted << " entries, "
                     << stats.bytes_after << " bytes left (" << stats.in_use << " in use)";
  }
  return Status::ok();
}

}  // namespace kevin::engine
