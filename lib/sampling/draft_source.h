// Where speculative drafts come from: ids the model is likely to produce
// next, verified by the generation session in one weight pass together with
// the current id (exact: a draft is kept only when it equals the id the model
// itself chooses at that position, so output never depends on the drafts).
//
// A wrong draft is not free: verifying R rows reads the union of their
// routed experts, so a source proposes only on evidence and sizes the draft
// by how reliable that evidence has been.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace k3 {

class DraftSource {
 public:
  virtual ~DraftSource() = default;
  // Up to `max` ids expected after `context` (the whole sequence so far:
  // prompt, generated ids, the current id last). Empty: no draft this pass.
  virtual std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) = 0;
  // After each verification: of `proposed` drafts the first `accepted` were kept.
  virtual void verified(size_t proposed, size_t accepted) { (void)proposed, (void)accepted; }
  // Every generated id, in order (drafted or not).
  virtual void generated(int32_t id) { (void)id; }
};

// Prompt lookup: the latest ids (an n-gram of at least `min_match` ids, the
// longest found up to 8) matched against an earlier place in the context,
// and the ids that followed there proposed. No match, no draft. The draft is
// 1 + (match length - required length) + (fully accepted drafts in a row)
// ids long, at most `max`; a draft rejected at its first id raises the
// required match length by one (up to 8), a fully accepted one lowers it
// (down to `min_match`), so text where matches mislead soon stops drafting.
class NgramDrafts : public DraftSource {
 public:
  explicit NgramDrafts(size_t min_match = 3) : min_match_(min_match), required_(min_match) {}
  std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) override;
  void verified(size_t proposed, size_t accepted) override;

  static constexpr size_t kMaxMatch = 8;

 private:
  size_t min_match_, required_;
  size_t streak_ = 0;
};

// Predicted output (k3-forward --predict): the ids the user expects, e.g. a
// document regenerated with small edits. Proposes the prediction from the
// aligned place on; after a mismatch it re-aligns (a substituted id, an id
// missing from either side, or the latest ids found again nearby) and
// proposes one id until a match confirms the alignment, then full drafts.
// After two generated ids in a row that the prediction did not expect it
// stops proposing until one matches again (a prediction that is all wrong
// costs at most two rejected draft rows).
class PredictedDrafts : public DraftSource {
 public:
  explicit PredictedDrafts(std::vector<int32_t> prediction) : prediction_(std::move(prediction)) {}
  std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) override;
  void generated(int32_t id) override;

  size_t aligned_at() const { return next_; }

 private:
  std::vector<int32_t> prediction_;
  std::vector<int32_t> output_;  // generated ids so far
  size_t next_ = 0;              // index of the prediction's id expected next
  size_t run_ = 0;               // ids matched since the last mismatch
  size_t misses_ = 0;            // mismatches in a row
};

// Prediction first; where it has nothing to say, prompt lookup.
class ChainedDrafts : public DraftSource {
 public:
  ChainedDrafts(DraftSource* first, DraftSource* second) : first_(first), second_(second) {}
  std::vector<int32_t> propose(std::span<const int32_t> context, size_t max) override;
  void verified(size_t proposed, size_t accepted) override;
  void generated(int32_t id) override;

 private:
  DraftSource *first_, *second_;
  DraftSource* last_ = nullptr;  // which one proposed the draft being verified
};

}  // namespace k3
