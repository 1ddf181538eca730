// The tensors infer-run feeds to the model: read from --input files or generated from --seed.
#pragma once

#include <loom/loom.h>

#include <loom_apps/host_tensor.hpp>
#include <string>
#include <vector>

#include "cli_options.hpp"

namespace loom::infer_run {

struct InputFeed {
  std::string name;
  std::string source;  // the file, or "random"
  loom::apps::HostTensor tensor;
};

// One feed per model input, in model order. Throws AppError (usage) naming the input when a
// file is unreadable, its dtype or shape contradicts the model, a name is unknown, or a
// generated input still has a dynamic dimension.
std::vector<InputFeed> prepare_inputs(const Options& options,
                                      const std::vector<loom_io_info_t>& model_inputs);

// Fills `tensor` (dtype and dims set, storage sized) with reproducible values from `rng_seed`.
void fill_random(loom::apps::HostTensor& tensor, uint64_t rng_seed);

}  // namespace loom::infer_run
