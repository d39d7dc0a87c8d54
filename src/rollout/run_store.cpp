// run_store.cpp — the SQLite run store: WAL journal, one transaction per turn.
#include "rollout/run_store.h"

#include <sqlite3.h>

namespace kevin::rollout {

namespace {

// Finalizes a prepared statement however the caller leaves.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) {
    rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  bool ok() const { return rc_ == SQLITE_OK; }
  sqlite3_stmt* get() const { return stmt_; }
  void bind(int index, const std::string& text) {
    sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  }
  void bind(int index, int value) { sqlite3_bind_int(stmt_, index, value); }
  std::string text(int column) const {
    const auto* p = sqlite3_column_text(stmt_, column);
    return p == nullptr ? std::string()
                        : std::string(reinterpret_cast<const char*>(p),
                                      static_cast<size_t>(sqlite3_column_bytes(stmt_, column)));
  }

 private:
  sqlite3_stmt* stmt_ = nullptr;
  int rc_ = SQLITE_ERROR;
};

Status sqlite_error(sqlite3* db, const std::string& what) {
  return unavailable("run store: " + what + ": " +
                     (db != nullptr ? sqlite3_errmsg(db) : "out of memory"));
}

}  // namespace

Result<RunStore> RunStore::open(const std::filesystem::path& file) {
  RunStore store;
  const int rc =
      sqlite3_open_v2(file.c_str(), &store.db_,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) return sqlite_error(store.db_, "cannot open " + file.string());
  sqlite3_busy_timeout(store.db_, 10000);
  // SQLite reads the file only now: a damaged one is named, so it can be found.
  if (Status ready = store.prepare(); !ready.is_ok()) return ready.with_context(file.string());
  return store;
}

Status RunStore::prepare() const {
  KEVIN_RETURN_IF_ERROR(exec("PRAGMA journal_mode=WAL"));
  KEVIN_RETURN_IF_ERROR(exec("PRAGMA synchronous=NORMAL"));
  KEVIN_RETURN_IF_ERROR(
      exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"));
  return exec(
      "CREATE TABLE IF NOT EXISTS turns (allocation TEXT NOT NULL, task TEXT NOT NULL, "
      "trajectory INTEGER NOT NULL, turn INTEGER NOT NULL, record TEXT NOT NULL, PRIMARY KEY "
      "(allocation, task, trajectory, turn))");
}

RunStore::RunStore(RunStore&& o) noexcept : db_(o.db_), mu_(std::move(o.mu_)) { o.db_ = nullptr; }

RunStore& RunStore::operator=(RunStore&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    mu_ = std::move(o.mu_);
    o.db_ = nullptr;
  }
  return *this;
}

RunStore::~RunStore() { sqlite3_close(db_); }

Status RunStore::exec(const char* sql) const {
  char* message = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &message) != SQLITE_OK) {
    const std::string why = message != nullptr ? message : "unknown error";
    sqlite3_free(message);
    return unavailable(std::string("run store: ") + why);
  }
  return Status::ok();
}

Status RunStore::put_meta(const std::string& key, const Json& value) {
  MutexLock lock(*mu_);
  Statement s(db(), "INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)");
  if (!s.ok()) return sqlite_error(db(), "prepare");
  s.bind(1, key);
  s.bind(2, dump_json(value));
  if (sqlite3_step(s.get()) != SQLITE_DONE) return sqlite_error(db(), "write " + key);
  return Status::ok();
}

Result<std::optional<Json>> RunStore::meta(const std::string& key) const {
  MutexLock lock(*mu_);
  Statement s(db(), "SELECT value FROM meta WHERE key = ?1");
  if (!s.ok()) return sqlite_error(db(), "prepare");
  s.bind(1, key);
  const int rc = sqlite3_step(s.get());
  if (rc == SQLITE_DONE) return std::optional<Json>();
  if (rc != SQLITE_ROW) return sqlite_error(db(), "read " + key);
  KEVIN_ASSIGN_OR_RETURN(Json value, parse_json(s.text(0)));
  return std::optional<Json>(std::move(value));
}

Status RunStore::put_turn(const TurnKey& key, const Json& record) {
  MutexLock lock(*mu_);
  Statement s(db(),
              "INSERT OR REPLACE INTO turns (allocation, task, trajectory, turn, record) VALUES "
              "(?1, ?2, ?3, ?4, ?5)");
  if (!s.ok()) return sqlite_error(db(), "prepare");
  s.bind(1, key.allocation);
  s.bind(2, key.task);
  s.bind(3, key.trajectory);
  s.bind(4, key.turn);
  s.bind(5, dump_json(record));
  if (sqlite3_step(s.get()) != SQLITE_DONE) return sqlite_error(db(), "write turn");
  return Status::ok();
}

Result<std::vector<std::pair<TurnKey, Json>>> RunStore::turns() const {
  MutexLock lock(*mu_);
  Statement s(db(),
              "SELECT allocation, task, trajectory, turn, record FROM turns ORDER BY allocation, "
              "task, trajectory, turn");
  if (!s.ok()) return sqlite_error(db(), "prepare");
  std::vector<std::pair<TurnKey, Json>> out;
  int rc;
  while ((rc = sqlite3_step(s.get())) == SQLITE_ROW) {
    TurnKey key{s.text(0), s.text(1), sqlite3_column_int(s.get(), 2),
                sqlite3_column_int(s.get(), 3)};
    KEVIN_ASSIGN_OR_RETURN(Json record, parse_json(s.text(4)));
    out.emplace_back(std::move(key), std::move(record));
  }
  if (rc != SQLITE_DONE) return sqlite_error(db(), "read turns");
  return out;
}

Result<size_t> RunStore::turn_count() const {
  MutexLock lock(*mu_);
  Statement s(db(), "SELECT COUNT(*) FROM turns");
  if (!s.ok() || sqlite3_step(s.get()) != SQLITE_ROW) return sqlite_error(db(), "count turns");
  return static_cast<size_t>(sqlite3_column_int64(s.get(), 0));
}

}  // namespace kevin::rollout
