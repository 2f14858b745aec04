#include "models/architecture.hpp"

#include "common/error.hpp"
#include "common/printable.hpp"
#include "models/architectures/architectures.hpp"

namespace specd {
namespace {

// Every supported architecture; a new one adds its line here.
const Architecture* const kArchitectures[] = {
    &architectures::kLlama,  &architectures::kQwen2,     &architectures::kQwen3,
    &architectures::kPhi3,   &architectures::kQwen35,    &architectures::kQwen3Moe,
    &architectures::kGptOss, &architectures::kQwen35Moe,
};

}  // namespace

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture* a : kArchitectures)
    if (name == a->name) return a;
  return nullptr;
}

std::string supported_architectures() {
  std::string s;
  for (const Architecture* a : kArchitectures) s += (s.empty() ? "" : ", ") + std::string(a->name);
  return s;
}

bool has_mtp_layers(const GgufFile& file) {
  const auto arch = file.get_string_opt("general.architecture");
  const Architecture* a = arch ? find_architecture(*arch) : nullptr;
  if (!a || !a->hybrid) return false;
  const auto n = file.get_u32_opt(*arch + ".nextn_predict_layers");
  return n && *n > 0;
}

const Architecture& architecture_of(const GgufFile& file) {
  const auto name = file.get_string_opt("general.architecture");
  if (!name) throw Error(file.path() + ": no general.architecture: not a model file");
  const Architecture* a = find_architecture(*name);
  if (!a)
    throw Error(file.path() + ": architecture '" + printable(*name, 64) +
                "' is not supported (supported: " + supported_architectures() + ")");
  return *a;
}

}  // namespace specd
