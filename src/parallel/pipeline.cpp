// pipeline.cpp — the stages (pipeline_split, pipeline_part) and the executor
// that walks a schedule's action list. The picture is in pipeline.h.
#include "parallel/pipeline.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <numeric>

#include "comm/trace/trace.h"
#include "core/check.h"
#include "core/device.h"

namespace ss {

std::vector<int> pipeline_split(int L, int stages, const std::vector<int>& given) {
    SS_CHECK(stages >= 1, "the pipeline needs at least one stage (got " << stages << ")");
    if (!given.empty()) {
        SS_CHECK(int(given.size()) == stages, "--pp-split lists " << given.size() << " stages but the pipeline has "
                                                                  << stages << " (--pp x --pp-virtual); give "
                                                                  << stages << " block counts");
        for (int n : given)
            SS_CHECK(n >= 1, "--pp-split: every stage needs at least one block (got " << n << ")");
        const int sum = std::accumulate(given.begin(), given.end(), 0);
        SS_CHECK(sum == L, "--pp-split adds up to " << sum << " blocks but the model has L=" << L
                                                    << "; the counts must sum to " << L);
        return given;
    }
    SS_CHECK(stages <= L, "pipeline of " << stages << " stages (--pp x --pp-virtual) but the model has only L="
                                         << L << " blocks; every stage needs at least one block: choose --pp and "
                                         << "--pp-virtual with --pp x --pp-virtual <= " << L);
    std::vector<int> split(size_t(stages), L / stages);
    for (int s = 0; s < L % stages; ++s) ++split[size_t(s)];
    return split;
}

ModelPart pipeline_part(const std::vector<int>& split, int vs) {
    ModelPart part;
    part.first = std::accumulate(split.begin(), split.begin() + vs, 0);
    part.count = split[size_t(vs)];
    part.embedding = vs == 0;
    part.head = vs == int(split.size()) - 1;
    return part;
}

Group embedding_group(const Group& pp_group) {
    if (pp_group.size() <= 2) return pp_group;
    return Group{"pp", {pp_group.ranks.front(), pp_group.ranks.back()}};
}

std::vector<Group> embedding_groups(const ProcessMesh& mesh) {
    std::vector<Group> out;
    if (mesh.shape().pp <= 2) return out;
    for (const Group& g : mesh.groups(GroupKind::pp)) out.push_back(embedding_group(g));
    return out;
}

void sync_tied_grads(Comm& comm, const Group& emb, ZeroModel& chunk) {
    if (emb.size() <= 1 || !chunk.layout().has_wte()) return;
    // wte is a unit of its own on a stage (model/gpt2.h, Unit), the same size on
    // the first and the last stage, so both hold the same range of it: all of it
    // (DDP, ZeRO-1) or the same shard (ZeRO-2, -3). The sum is linear, so it
    // commutes with the data-parallel average that happens before or after it.
    const GradSpan wte = chunk.wte_grads();
    comm.all_reduce(wte.data, wte.count, wte.dtype, emb, ReduceOp::sum,
                    Label{Payload::grad, -1, Phase::step, -1, chunk.steps_done() + 1});
}

PipelineRank::PipelineRank(Comm& comm, const GPT2Config& cfg, const PipeSpec& spec, std::vector<int> split,
                           Group pp_group, Group embedding_group, int resid_tokens, const MakeChunk& make_chunk)
    : comm_(comm),
      cfg_(cfg),
      spec_(spec),
      split_(std::move(split)),
      pp_(std::move(pp_group)),
      emb_(std::move(embedding_group)),
      stage_(pp_.index_of(comm.rank())),
      resid_T_(resid_tokens),
      schedule_(make_pipe_schedule(spec)) {
    SS_CHECK(pp_.size() == spec.p, "pipeline group of " << pp_.size() << " ranks for a schedule of p=" << spec.p);
    SS_CHECK(int(split_.size()) == spec.p * spec.v, "the split has " << split_.size() << " stages, not p x v = "
                                                                     << spec.p * spec.v);
    for (int c = 0; c < spec.v; ++c) chunks_.push_back(make_chunk(pipeline_part(split_, c * spec.p + stage_)));
}

void PipelineRank::init(uint64_t seed) {
    for (auto& c : chunks_) c->init(seed);
}

void PipelineRank::load(const std::string& path) {
    for (auto& c : chunks_) c->load(path);
}

void PipelineRank::zero_grad() {
    for (auto& c : chunks_) c->zero_grad();
}

void PipelineRank::step() {
    for (auto& c : chunks_) c->step();
}

float PipelineRank::run(const std::vector<std::vector<int>>& tokens, const std::vector<std::vector<int>>& targets,
                        int B, int T, float dloss, int step) {
    const int p = spec_.p, last_vs = p * spec_.v - 1;
    const size_t n = size_t(B) * resid_T_ * cfg_.C;  // one micro-batch's activation at a boundary
    Tracer* tracer = comm_.tracer();
    Ledger& ledger = chunks_.front()->ledger();
    using Key = std::pair<int, int>;  // (micro, chunk)
    std::map<Key, Tensor> inputs, out_grads, in_grads;  // received act, received act_grad, act_grad to send
    std::map<Key, Activations> acts;                    // what each (micro, chunk) saved, until its backward
    std::vector<int> backwards_done(size_t(spec_.v), 0);
    float loss_sum = 0.0f;
    // Both ends of a boundary label it with the first block after it, so the
    // key (payload, micro-batch, layer) matches send to recv (comm/label.h).
    auto boundary = [&](Payload payload, int vs_after, int micro) {
        return Label{payload, first_block(vs_after), payload == Payload::act ? Phase::fwd : Phase::bwd, micro, step};
    };
    // Overlap: a receive is posted kPipeLookahead actions before the schedule needs it,
    // into its buffer (booked in Mem::comm from then), and a send's handle is kept
    // with what it sends while the stage computes, at most kPipeLookahead sends: a later
    // send first waits for the oldest and frees its buffer. (Kept until the end of
    // run(), the buffers grew with the micro-batches: 6 at GA 4, 18 at GA 16 on the
    // first of two stages.) Waiting a send later than the blocking form does (at once)
    // cannot deadlock: by then this rank has issued all that the blocking form had.
    // pipe_comm_buffers_peak (schedule/pipeline_schedule.h) counts these buffers.
    const std::vector<PipeAction>& actions = schedule_.ranks[size_t(stage_)];
    std::map<size_t, CommHandle> posted;  // action index -> its receive, in flight
    std::deque<std::pair<Tensor, CommHandle>> sending;  // what is being sent, and its send (destroyed first)
    auto make_room = [&] {  // before a send's buffer is booked: wait the oldest send, free its buffer
        if (sending.size() == kPipeLookahead) {
            comm_.wait(sending.front().second);
            sending.pop_front();
        }
    };
    auto recv_buffer = [&](const PipeAction& a) -> Tensor& {
        const Key k{a.micro, a.chunk};
        auto& into = a.op == PipeOp::recv_act ? inputs : out_grads;
        return into[k] = Tensor(ledger, Mem::comm, {int64_t(n)}, DType::f32, false);
    };
    auto post_recv = [&](size_t i) {
        const PipeAction& a = actions[i];
        const int vs = a.chunk * p + stage_;
        Tensor& buf = recv_buffer(a);
        posted[i] = a.op == PipeOp::recv_act
                        ? comm_.start_recv(buf.f32(), n, DType::f32, rank_of(vs - 1), boundary(Payload::act, vs, a.micro), "pp")
                        : comm_.start_recv(buf.f32(), n, DType::f32, rank_of(vs + 1),
                                           boundary(Payload::act_grad, vs + 1, a.micro), "pp");
    };
    for (size_t i = 0; i < actions.size(); ++i) {
        const PipeAction& a = actions[i];
        if (overlap_)
            for (size_t j = i; j < std::min(actions.size(), i + kPipeLookahead); ++j)
                if ((actions[j].op == PipeOp::recv_act || actions[j].op == PipeOp::recv_grad) && !posted.count(j))
                    post_recv(j);
        const int vs = a.chunk * p + stage_;
        const Key k{a.micro, a.chunk};
        ZeroModel& chunk = *chunks_[size_t(a.chunk)];
        switch (a.op) {
            case PipeOp::recv_act: {
                if (overlap_) {
                    comm_.wait(posted.at(i));
                    break;
                }
                Tensor& x = recv_buffer(a);
                comm_.recv(x.f32(), n, rank_of(vs - 1), boundary(Payload::act, vs, a.micro), "pp");
                break;
            }
            case PipeOp::forward: {
                ScopedSpan span(tracer, "forward", "fwd",
                                {{"step", step}, {"microbatch", a.micro}, {"stage", vs}});
                auto in = inputs.find(k);
                loss_sum += chunk.forward(tokens[size_t(a.micro)].data(), targets[size_t(a.micro)].data(), B, T,
                                          acts[k], a.micro, in == inputs.end() ? nullptr : in->second.f32());
                if (in != inputs.end()) inputs.erase(in);  // forward copied it into its saved input
                break;
            }
            case PipeOp::send_act: {
                const Label label = boundary(Payload::act, vs + 1, a.micro);
                if (!overlap_) {
                    comm_.send(part_output(acts.at(k)), n, rank_of(vs + 1), label, "pp");
                    break;
                }
                // The output dies with acts at this micro-batch's backward: the send keeps a copy.
                make_room();
                Tensor out(ledger, Mem::comm, {int64_t(n)}, DType::f32, false);
                device_copy(out.f32(), part_output(acts.at(k)), sizeof(float) * n);
                CommHandle h = comm_.start_send(out.f32(), n, DType::f32, rank_of(vs + 1), label, "pp");
                sending.emplace_back(std::move(out), std::move(h));
                break;
            }
            case PipeOp::recv_grad: {
                if (overlap_) {
                    comm_.wait(posted.at(i));
                    break;
                }
                Tensor& dy = recv_buffer(a);
                comm_.recv(dy.f32(), n, rank_of(vs + 1), boundary(Payload::act_grad, vs + 1, a.micro), "pp");
                break;
            }
            case PipeOp::backward: {
                ScopedSpan span(tracer, "backward", "bwd",
                                {{"step", step}, {"microbatch", a.micro}, {"stage", vs}});
                auto dy = out_grads.find(k);
                float* dx = nullptr;
                if (vs > 0) dx = (in_grads[k] = Tensor(ledger, Mem::comm, {int64_t(n)}, DType::f32, false)).f32();
                const bool last = ++backwards_done[size_t(a.chunk)] == spec_.m;
                SS_CHECK(vs == last_vs || dy != out_grads.end(),
                         "pipeline schedule: backward of micro-batch " << a.micro << " on stage " << vs
                                                                       << " before its recv_grad");
                chunk.backward(tokens[size_t(a.micro)].data(), targets[size_t(a.micro)].data(), acts.at(k), dloss,
                               a.micro, last, dy == out_grads.end() ? nullptr : dy->second.f32(), dx);
                acts.erase(k);  // saved activations die after their backward
                if (dy != out_grads.end()) out_grads.erase(dy);
                break;
            }
            case PipeOp::send_grad: {
                const Label label = boundary(Payload::act_grad, vs, a.micro);
                if (!overlap_) {
                    comm_.send(in_grads.at(k).f32(), n, rank_of(vs - 1), label, "pp");
                    in_grads.erase(k);
                    break;
                }
                make_room();
                Tensor g = std::move(in_grads.at(k));
                in_grads.erase(k);
                CommHandle h = comm_.start_send(g.f32(), n, DType::f32, rank_of(vs - 1), label, "pp");
                sending.emplace_back(std::move(g), std::move(h));
                break;
            }
        }
    }
    for (auto& [buf, h] : sending) comm_.wait(h);
    sending.clear();
    SS_CHECK(acts.empty() && inputs.empty() && out_grads.empty() && in_grads.empty(),
             "pipeline schedule left work undone on pp rank " << stage_);
    // The tied embedding: the first stage's wte and the last stage's copy take the summed gradient.
    for (auto& c : chunks_)
        if (c->layout().part.wte_tied_elsewhere()) sync_tied_grads(comm_, emb_, *c);
    return loss_sum;
}

// The whole model from every chunk's part (zero where a part holds nothing):
// summed over my chunks, then over the pp group. Each element comes from
// exactly one (stage, chunk), so the sums are exact.
std::vector<float> PipelineRank::sum_parts(std::vector<float> (ZeroModel::*part)(), Payload payload) {
    std::vector<float> sum;
    for (auto& c : chunks_) {
        std::vector<float> mine = ((*c).*part)();
        if (sum.empty()) sum.assign(mine.size(), 0.0f);
        for (size_t i = 0; i < mine.size(); ++i) sum[i] += mine[i];
    }
    if (pp_.size() > 1)
        comm_.all_reduce(sum.data(), sum.size(), pp_, ReduceOp::sum, Label{payload, -1, Phase::none, -1, -1});
    return sum;
}

NonFinite PipelineRank::find_nonfinite_grad() const {
    for (const auto& c : chunks_)
        if (NonFinite bad = c->find_nonfinite_grad()) return bad;
    return {};
}

bool PipelineRank::checkpoint_writer() const {
    for (const auto& c : chunks_)
        if (c->checkpoint_writer()) return true;
    return false;
}

void PipelineRank::checkpoint_pieces(StFile& out) const {
    for (const auto& c : chunks_)
        if (c->checkpoint_writer()) c->checkpoint_pieces(out);
}

void PipelineRank::load_state(const std::vector<float>& master, const std::vector<float>& m,
                              const std::vector<float>& v, int adam_t, int steps_done,
                              const std::vector<float>& outer_anchor, const std::vector<float>& outer_momentum) {
    for (auto& c : chunks_) c->load_state(master, m, v, adam_t, steps_done, outer_anchor, outer_momentum);
}

std::vector<float> PipelineRank::whole_params() { return sum_parts(&ZeroModel::whole_params, Payload::param); }

std::vector<float> PipelineRank::full_grads() { return sum_parts(&ZeroModel::full_grads, Payload::grad); }

}  // namespace ss
