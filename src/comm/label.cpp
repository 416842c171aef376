#include "comm/label.h"

#include <sstream>

#include "core/check.h"

namespace ss {

const char* payload_name(Payload p) {
    switch (p) {
        case Payload::param: return "param";
        case Payload::grad: return "grad";
        case Payload::act: return "act";
        case Payload::act_grad: return "act_grad";
        case Payload::optim: return "optim";
        case Payload::scalar: return "scalar";
    }
    return "?";
}

const char* phase_name(Phase p) {
    switch (p) {
        case Phase::fwd: return "fwd";
        case Phase::bwd: return "bwd";
        case Phase::step: return "step";
        case Phase::none: return "none";
    }
    return "?";
}

const char* reduce_op_name(ReduceOp op) { return op == ReduceOp::sum ? "sum" : "avg"; }

Payload parse_payload(const std::string& s) {
    for (Payload p : {Payload::param, Payload::grad, Payload::act, Payload::act_grad,
                      Payload::optim, Payload::scalar})
        if (s == payload_name(p)) return p;
    SS_FAIL("unknown payload \"" << s << "\"; expected one of param, grad, act, act_grad, optim, scalar");
}

Phase parse_phase(const std::string& s) {
    for (Phase p : {Phase::fwd, Phase::bwd, Phase::step, Phase::none})
        if (s == phase_name(p)) return p;
    SS_FAIL("unknown phase \"" << s << "\"; expected one of fwd, bwd, step, none");
}

int p2p_key(const Label& label) {
    return (int(label.payload) & 0x7) | (((label.microbatch + 1) & 0x3ff) << 3) | (((label.layer + 1) & 0x7f) << 13);
}

std::string label_str(const Label& label) {
    std::ostringstream os;
    os << payload_name(label.payload);
    if (label.step >= 0) os << ", step " << label.step;
    if (label.microbatch >= 0) os << ", microbatch " << label.microbatch;
    if (label.layer >= 0) os << ", layer " << label.layer;
    if (label.phase != Phase::none) os << ", " << phase_name(label.phase);
    return os.str();
}

}  // namespace ss
