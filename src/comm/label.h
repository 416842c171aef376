// label.h — what a collective carries and why: the Label every call is tagged with.
//
// Every collective in ShardScope says what its bytes are (a parameter shard, a
// gradient, an activation, ...) and where in the step it happens (layer, phase,
// micro-batch, step). The comm layer does nothing with this except write it to
// the trace and put it in error messages, so that a learner can see "the dp
// all_reduce of layer 3's gradients in backward" rather than "an all_reduce".
#pragma once

#include <string>

#include "core/dtype.h"

namespace ss {

/// What the bytes of a collective are.
enum class Payload {
    param,     ///< model parameters (ZeRO-3 gathers, broadcasts of initial weights)
    grad,      ///< parameter gradients (data-parallel all_reduce, ZeRO reduce_scatter)
    act,       ///< activations in the forward pass (TP/SP, pipeline sends)
    act_grad,  ///< gradients of activations in the backward pass
    optim,     ///< optimizer state (master weights, Adam moments)
    scalar,    ///< a handful of numbers: the loss, a gradient norm, a flag
};

/// Where in the training step a collective happens.
enum class Phase { fwd, bwd, step, none };

/// How a reduction combines the ranks' values.
///  - sum: x_0 + x_1 + ... + x_{n-1}
///  - avg: the sum divided by n (once, on the rank that owns the element)
enum class ReduceOp { sum, avg };

/// The tag of one collective call, written to the trace and to error messages.
/// -1 means "not applicable" for layer, microbatch and step.
struct Label {
    Payload payload = Payload::scalar;  ///< what the bytes are
    int layer = -1;                     ///< transformer block index, or -1
    Phase phase = Phase::none;          ///< forward, backward, optimizer step
    int microbatch = -1;                ///< micro-batch within the step (gradient accumulation, pipeline), or -1
    int step = -1;                      ///< training step, or -1
};

/// "param", "grad", "act", "act_grad", "optim", "scalar".
const char* payload_name(Payload p);
/// "fwd", "bwd", "step", "none".
const char* phase_name(Phase p);
/// "sum", "avg".
const char* reduce_op_name(ReduceOp op);
/// Inverse of payload_name (throws ss::Error listing the accepted names).
Payload parse_payload(const std::string& s);
/// Inverse of phase_name (throws ss::Error listing the accepted names).
Phase parse_phase(const std::string& s);

/// What a recv matches a send on besides the two ranks: the label's payload,
/// micro-batch and layer, packed into 20 bits (micro-batch mod 1024, layer mod
/// 128). Messages from one rank to another with the same key arrive in the
/// order they were sent; different keys may be received in any order. This is
/// what lets a pipeline stage take "the activation of micro-batch 3" and "the
/// gradient of micro-batch 1" from the same neighbour in the order its
/// schedule says, whatever order they were sent in.
int p2p_key(const Label& label);

/// The label as people read it: "grad, step 3, microbatch 1, layer 2, bwd"
/// (fields that are -1 or none are left out).
std::string label_str(const Label& label);

}  // namespace ss
