// body_budget.cpp — one atomic counter, raised by compare-and-swap so that concurrent
// reservations can never together pass the capacity.
#include "server/body_budget.h"

#include <utility>

namespace kevin::server {

bool BodyBudget::take(size_t bytes) {
  size_t used = used_.load();
  do {
    if (bytes > capacity_ - used) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes));
  return true;
}

void BodyBudget::give_back(size_t bytes) { used_.fetch_sub(bytes); }

BodyReservation::BodyReservation(BodyReservation&& other) noexcept
    : budget_(other.budget_), bytes_(std::exchange(other.bytes_, 0)) {}

BodyReservation::~BodyReservation() {
  if (bytes_ > 0) budget_->give_back(bytes_);
}

bool BodyReservation::resize(size_t bytes) {
  if (bytes > bytes_ && !budget_->take(bytes - bytes_)) return false;
  if (bytes < bytes_) budget_->give_back(bytes_ - bytes);
  bytes_ = bytes;
  return true;
}

}  // namespace kevin::server
