// run_info.cpp — read otherData defensively (see run_info.h).
#include "viz/model/run_info.h"

#include <sstream>

#include "comm/trace/trace_overlap.h"

namespace ss::viz {

namespace {

using nlohmann::json;

// j[key] if it is an object, else an empty object.
const json& sub(const json& j, const char* key) {
    static const json empty = json::object();
    if (!j.is_object()) return empty;
    auto it = j.find(key);
    return it != j.end() && it->is_object() ? *it : empty;
}

template <class T>
bool get(const json& j, const char* key, T& out) {
    auto it = j.find(key);
    if (it == j.end()) return false;
    try {
        out = it->get<T>();
        return true;
    } catch (const std::exception&) {
        return false;
    }
}

void read_prediction(const json& p, Prediction& out) {
    if (p.empty()) return;
    if (get(p, "unavailable", out.unavailable)) return;  // train said why there is none
    out.present = true;
    const json& mem = sub(p, "memory");
    for (int c = 0; c < kMemCategories; ++c) get(mem, mem_name(Mem(c)), out.mem[size_t(c)]);
    get(mem, "total", out.mem_total);
    auto comm = p.find("comm");
    if (comm != p.end() && comm->is_array()) {
        for (const json& call : *comm) {
            std::string payload;
            uint64_t bytes = 0, calls = 0;
            if (!get(call, "payload", payload) || !get(call, "bytes", bytes)) continue;
            get(call, "calls", calls);
            int every = 1;
            get(call, "every", every);
            try {
                const size_t k = size_t(parse_payload(payload));
                if (every > 1) {  // local SGD's sync (every H steps): counted on its own steps only
                    out.sync_bytes[k] += bytes;
                    out.sync_every = every;
                    continue;
                }
                out.comm_bytes[k] += bytes;
                out.comm_calls[k] += calls;
            } catch (const std::exception&) {  // a payload this viewer does not know: left out
            }
        }
    }
    // The predicted step time is read with the measured one (comm/trace/trace_prediction.h).
    get(sub(p, "layout"), "text", out.layout);
    get(sub(p, "cluster"), "hw", out.hardware);
}

}  // namespace

std::string RunInfo::title() const {
    std::ostringstream s;
    if (zero == 0)
        s << "DDP";
    else if (zero > 0)
        s << "ZeRO-" << zero;
    else
        s << "run";
    s << " \xC2\xB7 " << world << (world == 1 ? " rank" : " ranks");
    std::ostringstream axes;
    auto add = [&](const char* name, int d) {
        if (d > 1) axes << (axes.str().empty() ? "" : " x ") << name << " " << d;
    };
    add("pp", shape.pp);
    add("dp_rep", shape.dp_rep);
    add("dp_shard", shape.dp_shard);
    add("sp", shape.sp);
    add("tp", shape.tp);
    if (!axes.str().empty()) s << " (" << axes.str() << ")";
    if (model != "?") s << " \xC2\xB7 model " << model;
    if (!dtype.empty()) s << " \xC2\xB7 " << dtype;
    return s.str();
}

RunInfo read_run_info(const Trace& trace) {
    RunInfo r;
    r.world = std::max(trace.world(), 1);
    r.shape.dp_shard = r.world;
    const json& od = trace.other_data;

    const json& mesh = sub(od, "mesh");
    MeshShape s;
    if (get(mesh, "pp", s.pp) && get(mesh, "dp_rep", s.dp_rep) && get(mesh, "dp_shard", s.dp_shard) &&
        get(mesh, "sp", s.sp) && get(mesh, "tp", s.tp) && s.pp >= 1 && s.dp_rep >= 1 && s.dp_shard >= 1 &&
        s.sp >= 1 && s.tp >= 1 && s.product() == r.world) {
        r.shape = s;
        r.has_mesh = true;
    } else {
        r.missing.push_back(mesh.empty() ? "mesh" : "mesh (does not match the trace's ranks)");
    }

    const json& cfg = sub(od, "config");
    if (cfg.empty()) r.missing.push_back("config");
    get(cfg, "model", r.model);
    get(cfg, "L", r.L);
    get(cfg, "C", r.C);
    get(cfg, "H", r.H);
    get(cfg, "V", r.V);
    get(cfg, "T", r.T);
    get(cfg, "dtype", r.dtype);
    get(od, "num_params", r.num_params);

    const json& ranks = sub(od, "ranks");
    get(ranks, "zero", r.zero);
    get(ranks, "backend", r.backend);

    const json& gbs = sub(od, "gbs");
    if (gbs.empty()) r.missing.push_back("gbs");
    get(gbs, "mbs", r.mbs);
    get(gbs, "ga", r.ga);
    get(gbs, "dp", r.dp);
    get(gbs, "gbs", r.gbs);
    get(gbs, "line", r.gbs_line);

    const json& mem = sub(od, "memory");
    auto per_rank = mem.find("peak_bytes_per_rank");
    if (per_rank != mem.end() && per_rank->is_array()) {
        for (const json& pr : *per_rank) {
            std::array<uint64_t, kMemCategories> a{};
            for (int c = 0; c < kMemCategories; ++c) get(pr, mem_name(Mem(c)), a[size_t(c)]);
            r.ledger_peak.push_back(a);
        }
    } else {
        r.missing.push_back("memory.peak_bytes_per_rank");
    }
    read_prediction(sub(od, "prediction"), r.predicted);
    if (!r.predicted.present) r.missing.push_back("prediction");
    r.emulated_links = emulated_links_note(od);  // optional: absent means real links, not "missing"
    return r;
}

}  // namespace ss::viz
