// Counts heap allocations made by the current thread while a guard is alive,
// so tests can assert that a steady-state path allocates nothing.
#pragma once

#include <cstddef>

namespace memcg::testing {

class AllocationCounter {
 public:
  AllocationCounter();
  ~AllocationCounter();
  size_t count() const;
};

}  // namespace memcg::testing
