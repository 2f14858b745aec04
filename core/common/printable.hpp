// Text from a file or a request, made safe to put in a message: control bytes (NUL included,
// which would cut a C string short) escaped as \xNN, and long text cut.
//
// Thread rule: a pure function.
#pragma once

#include <string>
#include <string_view>

namespace specd {

// At most `max` bytes of `text`, control bytes as \xNN, "..." when cut.
std::string printable(std::string_view text, size_t max = 40);

}  // namespace specd
