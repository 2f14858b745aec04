#include "models/heads/target_binding.hpp"

#include "common/error.hpp"
#include "models/heads/sha256.hpp"

namespace specd {

TargetIdentity target_identity(const GgufFile& target) {
  const GgufTensor& embd = target.require_tensor("token_embd.weight");
  TargetIdentity id;
  id.name = target.get_string_opt("general.name").value_or("");
  id.digest = sha256_hex(embd.data, embd.n_bytes);
  return id;
}

void check_target_binding(const GgufFile& head, const GgufFile& target) {
  const auto want_name = head.get_string_opt("specd.target.name");
  const auto want_digest = head.get_string_opt("specd.target.digest");
  if (!want_name && !want_digest)
    throw UsageError(head.path() +
                     ": the head records no target (no specd.target.name or specd.target.digest)");
  const TargetIdentity have = target_identity(target);
  const bool ok = want_digest ? *want_digest == have.digest : *want_name == have.name;
  if (ok) return;
  throw UsageError(head.path() + " is bound to target '" + want_name.value_or("?") + "' (digest " +
                   want_digest.value_or("none") + "), but the run's target " + target.path() +
                   " is '" + have.name + "' (digest " + have.digest + ")");
}

}  // namespace specd
