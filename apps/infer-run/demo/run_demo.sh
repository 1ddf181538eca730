#!/usr/bin/env bash
# Runs infer-run on the bundled digits demo (8 held-out 8x8 images from scikit-learn's digits)
# and prints the predicted digits next to the true labels.
# Usage: apps/infer-run/demo/run_demo.sh [BUILD_DIR]   (default: build/default)
set -euo pipefail

demo=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${1:-$demo/../../../build/default}
infer_run=$build/bin/infer-run
if [[ ! -x $infer_run ]]; then
  echo "run_demo.sh: no infer-run at $infer_run; build first (cmake --preset default &&" \
    "cmake --build --preset default) or pass the build directory" >&2
  exit 1
fi

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$infer_run" --model "$demo/digits.onnx" --input "image=$demo/samples.npy" --output "$out" \
  --device cpu --plugin "$build/plugins"
/usr/bin/python3 - "$out" "$demo/samples_labels.txt" <<'PY'
import sys
import numpy as np
digits = np.load(f"{sys.argv[1]}/digit.npy")
probabilities = np.load(f"{sys.argv[1]}/probabilities.npy")
labels = open(sys.argv[2]).read().split()
print("predicted digits:", " ".join(str(d) for d in digits))
print("true labels:     ", " ".join(labels))
print("confidence:      ", " ".join(f"{p:.2f}" for p in probabilities.max(axis=1)))
print(f"{sum(str(d) == l for d, l in zip(digits, labels))}/{len(labels)} correct")
PY
