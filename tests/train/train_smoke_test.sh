#!/usr/bin/env bash
# Runs `make -f Makefile.models models-smoke` from the source tree; exit 77 (skipped) when
# /usr/bin/python3 cannot import torch.
set -euo pipefail
cd "$1"
if ! /usr/bin/python3 -c "import torch, numpy, regex" 2>/dev/null; then
  echo "train_smoke_test: skipped: /usr/bin/python3 lacks torch, numpy or regex"
  exit 77
fi
make -f Makefile.models models-smoke
