#include "config/proposer_kind.hpp"

#include "common/error.hpp"
#include "gguf/gguf_reader.hpp"
#include "models/architecture.hpp"

namespace specd {

std::string detect_proposer_kind(const std::string& model, const std::string& target,
                                 const std::string& where) {
  const std::string file = model.empty() ? target : model;
  if (file.empty())
    throw UsageError(where +
                     ": kind = \"auto\" needs a file to read: [proposer] model or a "
                     "[target] model with MTP layers");
  GgufFile f = [&] {
    try {
      return GgufFile::open(file);
    } catch (const Error& e) {
      throw UsageError(where + ": kind = \"auto\" cannot read " + file + ": " + e.what());
    }
  }();
  if (has_mtp_layers(f)) {
    // The target's own MTP layers, or a separate MTP file (no trunk: llama.cpp's --mtp-only).
    if (model.empty() || model == target || !f.tensor("blk.0.attn_norm.weight")) return "mtp";
  } else if (model.empty()) {
    throw UsageError(where +
                     ": kind = \"auto\" without [proposer] model drafts with the "
                     "target's MTP layers, and " +
                     target + " has none (give a draft file, or a kind such as \"ngram\")");
  }
  const std::string arch = f.get_string_opt("general.architecture").value_or("");
  if (arch == "eagle3" || arch == "specd-eagle") return "eagle";
  if (arch == "dflash") return "dflash";
  if (arch == "specd-mtp") return "mtp";
  if (arch == "specd-medusa") return "medusa";
  if (find_architecture(arch)) return "draft-model";
  throw UsageError(where + ": kind = \"auto\": " + file + " (architecture '" + arch +
                   "') is no draft file specd knows: a draft model (" + supported_architectures() +
                   "), an EAGLE, EAGLE-3, DFlash, Medusa or MTP head, or MTP layers");
}

void resolve_auto_proposer(Config& config) {
  if (config.proposer.kind != "auto") return;
  config.proposer.kind_auto = true;
  config.proposer.kind = detect_proposer_kind(config.proposer.model, config.target.model,
                                              config.where("proposer.kind"));
  if (config.proposer.model.empty() && config.proposer.kind == "mtp")
    config.proposer.model = config.target.model;
}

}  // namespace specd
