// body_budget.h — the server-wide cap on bytes of HTTP request bodies held at once. A request
// reserves its share before the first byte of its body is read and gives it back when the body
// is freed, so concurrent large uploads are refused rather than buffered past the cap.
#pragma once

#include <atomic>
#include <cstddef>

namespace kevin::server {

// The bytes that the request bodies of every connection may hold together. Thread-safe.
class BodyBudget {
 public:
  explicit BodyBudget(size_t capacity) : capacity_(capacity) {}
  BodyBudget(const BodyBudget&) = delete;
  BodyBudget& operator=(const BodyBudget&) = delete;

  size_t capacity() const { return capacity_; }
  // Bytes reserved now, by every BodyReservation together.
  size_t used() const { return used_.load(); }

 private:
  friend class BodyReservation;
  // Takes `bytes` when that much is left; false, taking nothing, otherwise.
  bool take(size_t bytes);
  void give_back(size_t bytes);

  const size_t capacity_;
  std::atomic<size_t> used_{0};
};

// One request's share of a BodyBudget, given back when the reservation is destroyed. Move-only;
// a moved-from reservation holds nothing and may be resized again. One owner at a time: the
// reservation itself is not thread-safe, only the budget it draws on.
class BodyReservation {
 public:
  // `budget` is borrowed and must outlive the reservation, which starts holding nothing.
  explicit BodyReservation(BodyBudget* budget) : budget_(budget) {}
  BodyReservation(BodyReservation&& other) noexcept;
  ~BodyReservation();

  // Holds exactly `bytes` from now on, taking the difference from the budget or giving the
  // surplus back. False when the budget has not that much left; nothing changes then.
  bool resize(size_t bytes);
  size_t bytes() const { return bytes_; }

 private:
  BodyBudget* budget_;
  size_t bytes_ = 0;
};

}  // namespace kevin::server
