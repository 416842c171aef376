// vocab_parallel.h — the embedding and the cross-entropy when tensor
// parallelism splits the vocabulary over t ranks (Megatron-LM, Shoeybi et al.
// 2019, section 3: "parallelize the input embedding weight matrix along the
// vocabulary dimension" and fuse the output GEMM with the cross-entropy so
// that the logits are never gathered).
//
// Rank r holds rows [v_begin, v_begin + v_count) of wte, so it can embed only
// the tokens in that range and score only those words. The pieces here are
// the per-rank math; the strategy adds the partial results over the ranks
// (parallel/tensor_parallel.h):
//
//   embedding:  out_r = wte_r[token] if token in my range else 0;  out = sum_r out_r
//   loss:       m = max_r row_max(logits_r)               (all ranks agree on the shift)
//               s = sum_r sum_v exp(logits_r - m)          z = sum_r target_logit_r
//               loss = log s + m - z                       (= -log softmax[target])
//   backward:   dlogits_r = (exp(logits_r - m)/s - [v == target]) * dloss
//
// With a padded vocabulary (model/config.h, padded_vocab) rank r's rows past
// V are padding: row_max and exp_shifted look at its first `words` columns
// only (words = clamp(V - v_begin, 0, v_count); 0 on a rank holding nothing
// but padding, whose row_max is then -inf and loses the max over ranks), so
// padding columns have probability 0 and get no gradient.
#pragma once

namespace ss::cpu {

/// out[N,C] = wte_local[token - v_begin] for tokens in [v_begin, v_begin + v_count), 0 otherwise (overwrites).
void vocab_embedding_forward(float* out, const int* tokens, const float* wte_local, int v_begin, int v_count, int N,
                             int C);
/// dwte_local[token - v_begin] += dout for the tokens in my range.
void vocab_embedding_backward(float* dwte_local, const float* dout, const int* tokens, int v_begin, int v_count,
                              int N, int C);
/// out[b,t,:] += wpe[t,:] for B sequences of T positions.
void add_positions(float* out, const float* wpe, int B, int T, int C);
/// dwpe[t,:] += sum over b of dout[b,t,:].
void add_positions_backward(float* dwpe, const float* dout, int B, int T, int C);

/// m[n] = max over the first @p words columns of logits[n, :] (N rows of V; -inf if words = 0).
void row_max(float* m, const float* logits, int N, int V, int words);
/// e[n,v] = exp(logits[n,v] - m[n]) for v < @p words, 0 for the padding columns after them;
/// sums[n] = sum over v of e[n,v].
void exp_shifted(float* e, float* sums, const float* logits, const float* m, int N, int V, int words);
/// z[n] = logits[n, target_n - v_begin] when the target is in my V columns, else 0.
void target_logit(float* z, const float* logits, const int* targets, int v_begin, int N, int V);
/// With the GLOBAL m, s and z: probs = e / s (in place) and losses[n] = log s + m - z; returns their mean.
float vocab_ce_finish(float* losses, float* probs, const float* s, const float* z, const float* m, int N, int V);
/// dlogits[n,v] += (probs[n,v] - [v + v_begin == target_n]) * dloss; with @p overwrite, = 0 + that
/// (the same bits as adding into zeros: a fresh buffer needs no zero-fill).
void vocab_ce_backward(float* dlogits, const float* probs, const int* targets, int v_begin, float dloss, int N, int V,
                       bool overwrite = false);

}  // namespace ss::cpu
