// Sequence and optional ops as host steps: SequenceEmpty/Construct/Insert/At/Erase/Length,
// ConcatFromSequence, SplitToSequence, SequenceMap, Optional, OptionalHasElement,
// OptionalGetElement, and Identity of a sequence or optional. Their values (HostValue with a
// container kind) live in the core on the host; devices never see them. The session runs these
// nodes like control-flow steps (session_control_flow.cpp decides which nodes are steps).
#pragma once

#include <vector>

#include "control_flow.hpp"
#include "graph_view.hpp"
#include "ir/graph.hpp"

namespace loom::core {

// True for the ops run_sequence_op implements (Identity excepted: it is a sequence op only when
// it passes a container, which the caller knows from the value kinds).
bool is_sequence_op(const Node& node);

// Runs `node` with its explicit inputs (omitted ones not present) and returns its outputs in
// order. `bodies` runs SequenceMap's body and may be null for the other ops. Errors are one
// line naming the node ("SequenceAt node 'at': position 3 is out of range ...").
std::vector<HostValue> run_sequence_op(const Node& node, const std::vector<HostValue>& inputs,
                                       BodyRunner* bodies);

// Type inference of a sequence/optional node from its inputs' facts (kind, element dtype and
// element shape; null: unknown or omitted), for nodes the schemas cannot describe. Returns
// false when `node` is not a sequence op (Identity of a container counts as one); fills `outputs`
// (one per node output) otherwise. Never throws: what cannot be told stays unknown.
bool infer_sequence_node(const Node& node, const std::vector<const ValueFacts*>& inputs,
                         std::vector<ValueFacts>& outputs);

}  // namespace loom::core
