// run_store.h — the durable record of a `kevin run`: an SQLite database (RUN_DIR/run.db)
// holding the run's configuration and one JSON record per finished turn. A turn is written
// in its own transaction the moment it is judged, so a killed run loses at most the turns
// in flight, and `kevin run --resume` redoes nothing that was stored. Thread-safe.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/json.h"
#include "core/mutex.h"
#include "core/status.h"

struct sqlite3;

namespace kevin::rollout {

// Where a turn sits in a run.
struct TurnKey {
  std::string allocation;  // "16x8", or "beam"
  std::string task;        // task id
  int trajectory = 0;
  int turn = 0;
  bool operator<(const TurnKey& o) const {
    return std::tie(allocation, task, trajectory, turn) <
           std::tie(o.allocation, o.task, o.trajectory, o.turn);
  }
};

class RunStore {
 public:
  // Opens (creating if needed) the database at `file`. Errors: kUnavailable when SQLite
  // cannot open or initialise it (not a database, no permission).
  static Result<RunStore> open(const std::filesystem::path& file);
  RunStore(RunStore&&) noexcept;
  RunStore& operator=(RunStore&&) noexcept;
  ~RunStore();

  // A named JSON value (the run's config, its state); put replaces.
  Status put_meta(const std::string& key, const Json& value);
  Result<std::optional<Json>> meta(const std::string& key) const;

  // Stores a finished turn (replacing any earlier record of the same key).
  Status put_turn(const TurnKey& key, const Json& record);
  // Every stored turn, ordered by key.
  Result<std::vector<std::pair<TurnKey, Json>>> turns() const;
  Result<size_t> turn_count() const;

 private:
  RunStore() = default;
  // Runs `sql` while opening, before the store is shared.
  Status exec(const char* sql) const;
  // The journal mode and the tables, while opening.
  Status prepare() const;
  // The connection, used by one thread at a time: only with the mutex held.
  sqlite3* db() const REQUIRES(*mu_) { return db_; }

  sqlite3* db_ = nullptr;
  // Behind a pointer so the store can move.
  std::unique_ptr<Mutex> mu_ = std::make_unique<Mutex>();
};

}  // namespace kevin::rollout
