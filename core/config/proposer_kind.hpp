// [proposer] kind = "auto": the proposer a draft file calls for, read from the file as
// llama.cpp's server detects its draft type: an EAGLE-3 head (eagle3), a DFlash drafter
// (dflash), MTP layers (a qwen35 file's nextn layers, a separate MTP file, a specd-mtp head),
// specd's own EAGLE and Medusa heads, or a model of a supported architecture (a draft model).
// Without [proposer] model, the target file's own MTP layers when it has them.
#pragma once

#include <string>

#include "config/config.hpp"

namespace specd {

// The proposer kind the file at `model` drafts with (the target at `target` when `model` is
// empty: "mtp" if it carries MTP layers). Throws UsageError naming `where` and the file when
// the file is unreadable or of nothing that drafts, or when there is no file and the target
// has no MTP layers.
std::string detect_proposer_kind(const std::string& model, const std::string& target,
                                 const std::string& where);

// Replaces kind "auto" in `config` by the detected kind (and a left-out model by the target
// when that is what drafts). Other kinds are left as they are.
void resolve_auto_proposer(Config& config);

}  // namespace specd
