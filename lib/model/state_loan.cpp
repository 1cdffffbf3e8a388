#include "model/state_loan.h"

#include <utility>

#include "common/error.h"

namespace k3 {

namespace {

// Frees a vector's memory (clear() would keep its capacity).
void free_floats(std::vector<float>& v) { std::vector<float>().swap(v); }

}  // namespace

StateLoan::StateLoan(const ModelConfig& config, SpillFile& file, std::span<SequenceState* const> states,
                     std::span<const size_t> counts, std::function<void()> free_chunk)
    : c_(config), file_(file), states_(states), free_chunk_(std::move(free_chunk)) {
  layers_ = static_cast<size_t>(c_.num_hidden_layers);
  width_ = static_cast<size_t>(c_.kv_lora_rank + c_.qk_rope_head_dim);
  slots_.resize(states.size() * layers_);
  where_.assign(layers_, Where::kFileBefore);
  // Everything written first, then freed: a failed write leaves the states
  // whole in memory.
  uint64_t at = 0;
  for (size_t k = 0; k < states.size(); ++k)
    for (int j = 0; j < c_.num_hidden_layers; ++j) {
      Slot& sl = slot(k, j);
      const LayerState& ls = states[k]->layers[static_cast<size_t>(j)];
      sl.before = at;
      if (c_.is_kda_layer(j)) {
        sl.s = ls.kda.S.size(), sl.cq = ls.kda.conv_q.size(), sl.ck = ls.kda.conv_k.size();
        sl.cv = ls.kda.conv_v.size();
        const uint64_t bytes = (sl.s + sl.cq + sl.ck + sl.cv) * sizeof(float);
        write_kda(ls.kda, at);
        sl.after = at + bytes;
        at += 2 * bytes;
      } else {
        sl.rows_before = ls.mla.latent.size() / width_;
        sl.rows_after = sl.rows_before + counts[k];
        file_.write(at, ls.mla.latent.data(), sl.rows_before * width_ * sizeof(float));
        at += sl.rows_after * width_ * sizeof(float);
      }
    }
  for (size_t k = 0; k < states.size(); ++k)
    for (int j = 0; j < c_.num_hidden_layers; ++j) free_layer(k, j);
}

StateLoan::~StateLoan() {
  if (!open_) return;
  try {
    put_back_before();
  } catch (...) {  // the file cannot give the states back: each sequence empty, as a new one
    make_empty();
  }
}

void StateLoan::write_kda(const KdaState& s, uint64_t at) {
  for (const std::vector<float>* v : {&s.S, &s.conv_q, &s.conv_k, &s.conv_v}) {
    file_.write(at, v->data(), v->size() * sizeof(float));
    at += v->size() * sizeof(float);
  }
}

void StateLoan::read_kda(KdaState& s, const Slot& sl, uint64_t at) {
  const std::pair<std::vector<float>*, size_t> parts[] = {
      {&s.S, sl.s}, {&s.conv_q, sl.cq}, {&s.conv_k, sl.ck}, {&s.conv_v, sl.cv}};
  for (const auto& [v, n] : parts) {
    v->resize(n);
    file_.read(at, v->data(), n * sizeof(float));
    at += n * sizeof(float);
  }
}

void StateLoan::free_layer(size_t k, int layer) {
  LayerState& ls = states_[k]->layers[static_cast<size_t>(layer)];
  if (c_.is_kda_layer(layer)) {
    for (std::vector<float>* v : {&ls.kda.S, &ls.kda.conv_q, &ls.kda.conv_k, &ls.kda.conv_v}) free_floats(*v);
  } else {
    free_floats(ls.mla.latent);  // the same MlaCache: its generation stays
  }
}

void StateLoan::read_before(size_t k, int layer) {
  const Slot& sl = slot(k, layer);
  LayerState& ls = states_[k]->layers[static_cast<size_t>(layer)];
  if (c_.is_kda_layer(layer)) {
    read_kda(ls.kda, sl, sl.before);
    return;
  }
  // Room for the chunk's rows at once: appended sub-batch by sub-batch, the
  // vector would grow past them.
  ls.mla.latent.reserve(sl.rows_after * width_);
  ls.mla.latent.resize(sl.rows_before * width_);
  file_.read(sl.before, ls.mla.latent.data(), ls.mla.latent.size() * sizeof(float));
}

void StateLoan::bring(int layer) {
  for (size_t k = 0; k < states_.size(); ++k) read_before(k, layer);
  where_[static_cast<size_t>(layer)] = Where::kMemory;
}

void StateLoan::send(int layer) {
  for (size_t k = 0; k < states_.size(); ++k) {
    const Slot& sl = slot(k, layer);
    const LayerState& ls = states_[k]->layers[static_cast<size_t>(layer)];
    if (c_.is_kda_layer(layer)) {
      write_kda(ls.kda, sl.after);
      continue;
    }
    if (ls.mla.latent.size() != sl.rows_after * width_)
      throw Error(ExitCode::kInternal, "the state loan: layer " + std::to_string(layer) + "'s MLA cache holds " +
                                           std::to_string(ls.mla.latent.size() / width_) + " positions, not " +
                                           std::to_string(sl.rows_after));
    const size_t old = sl.rows_before * width_;
    file_.write(sl.before + old * sizeof(float), ls.mla.latent.data() + old,
                (ls.mla.latent.size() - old) * sizeof(float));
  }
  // Every sequence's change written, then freed: a failed write leaves the
  // layer in memory.
  for (size_t k = 0; k < states_.size(); ++k) free_layer(k, layer);
  where_[static_cast<size_t>(layer)] = Where::kFileAfter;
}

void StateLoan::done_with_chunk() {
  if (chunk_freed_) return;
  chunk_freed_ = true;
  if (free_chunk_) free_chunk_();
}

void StateLoan::give_back() {
  done_with_chunk();
  for (size_t j = 0; j < layers_; ++j) {
    const int layer = static_cast<int>(j);
    for (size_t k = 0; k < states_.size(); ++k) {
      const Slot& sl = slot(k, layer);
      LayerState& ls = states_[k]->layers[j];
      if (where_[j] == Where::kFileBefore) {
        read_before(k, layer);
      } else if (where_[j] == Where::kFileAfter && c_.is_kda_layer(layer)) {
        read_kda(ls.kda, sl, sl.after);
      } else if (where_[j] == Where::kFileAfter) {
        ls.mla.latent.resize(sl.rows_after * width_);
        file_.read(sl.before, ls.mla.latent.data(), ls.mla.latent.size() * sizeof(float));
      }
    }
    where_[j] = Where::kMemory;
  }
  open_ = false;
}

void StateLoan::put_back_before() {
  done_with_chunk();
  for (size_t j = 0; j < layers_; ++j) {
    const int layer = static_cast<int>(j);
    for (size_t k = 0; k < states_.size(); ++k) {
      const Slot& sl = slot(k, layer);
      MlaCache& mla = states_[k]->layers[j].mla;
      // Not yet run, or an MLA cache still at its rows before the chunk: as
      // it was (its generation too).
      if (where_[j] == Where::kFileBefore) {
        read_before(k, layer);
      } else if (c_.is_kda_layer(layer)) {
        read_kda(states_[k]->layers[j].kda, sl, sl.before);
      } else if (where_[j] == Where::kFileAfter || mla.latent.size() != sl.rows_before * width_) {
        // Rows were appended, now cut: a new generation (as mla_truncate).
        if (where_[j] == Where::kFileAfter) {
          read_before(k, layer);
        } else {
          mla.latent.resize(sl.rows_before * width_);
        }
        mla.generation = new_mla_generation();
      }
    }
    where_[j] = Where::kMemory;
  }
  open_ = false;
}

void StateLoan::make_empty() noexcept {
  try {
    for (size_t k = 0; k < states_.size(); ++k) {
      SequenceState& st = *states_[k];
      st.positions = 0;
      st.tokens.clear();
      for (int j = 0; j < c_.num_hidden_layers; ++j) {
        const Slot& sl = slot(k, j);
        LayerState& ls = st.layers[static_cast<size_t>(j)];
        if (c_.is_kda_layer(j)) {
          ls.kda.S.assign(sl.s, 0.0f);
          ls.kda.conv_q.assign(sl.cq, 0.0f);
          ls.kda.conv_k.assign(sl.ck, 0.0f);
          ls.kda.conv_v.assign(sl.cv, 0.0f);
        } else {
          free_floats(ls.mla.latent);
          ls.mla.generation = new_mla_generation();
        }
      }
    }
  } catch (...) {  // no memory even for zeros: the layers stay freed, positions 0
  }
  open_ = false;
}

}  // namespace k3
