// Copies of GGUF files with their metadata edited, for tests of what a loader refuses or
// reads: the tensors are copied as they are.
#pragma once

#include <functional>
#include <string>

#include "gguf/gguf_reader.hpp"
#include "writers/gguf_writer.hpp"

namespace specd::test {

// Writes `to`: the metadata of `from` (its alignment kept), then `edit` (which may set,
// replace or, through GgufWriter::erase, drop keys; it sees the source), and its tensors.
void rewrite_gguf(const std::string& from, const std::string& to,
                  const std::function<void(const GgufFile&, GgufWriter&)>& edit);

}  // namespace specd::test
