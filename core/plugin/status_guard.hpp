// Host objects served through an ABI vtable (the built-in verifiers) convert exceptions into
// statuses as a plugin's entries would: UsageError (the caller's mistake) becomes
// INVALID_ARGUMENT, bad_alloc OUT_OF_MEMORY, anything else INTERNAL. Never throws.
#pragma once

#include <exception>
#include <new>

#include "common/error.hpp"
#include "plugin/host_services.hpp"

namespace specd {

template <class Body>
specd_status* status_guard(Body&& body) noexcept {
  try {
    body();
    return nullptr;
  } catch (const UsageError& e) {
    return host_table()->status_create(nullptr, SPECD_STATUS_INVALID_ARGUMENT, e.what());
  } catch (const std::bad_alloc&) {
    return host_table()->status_create(nullptr, SPECD_STATUS_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return host_table()->status_create(nullptr, SPECD_STATUS_INTERNAL, e.what());
  }
}

}  // namespace specd
