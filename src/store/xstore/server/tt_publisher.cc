#include "store/xstore/server/tt_publisher.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>

namespace drtmx::store::xstore {

Result<std::unique_ptr<TtPublisher>> TtPublisher::create(XTree* tree, uint8_t* region_base,
                                                         size_t region_bytes,
                                                         const TtPublisherOptions& options) {
  if (tree == nullptr || region_base == nullptr) {
    return invalid_argument("TtPublisher: tree and region_base must not be null");
  }
  DRTMX_RETURN_IF_ERROR(options.cache.validate());
  if (options.cache.fanout != tree->area().fanout) {
    return invalid_argument("TtPublisher: cache fanout " + std::to_string(options.cache.fanout) +
                            " differs from the tree's " + std::to_string(tree->area().fanout) +
                            ": set TtPublisherOptions::cache.fanout from the LeafArea");
  }
  const TtImageArea& a = options.image;
  if (a.offset % 8 != 0 || reinterpret_cast<uintptr_t>(region_base) % 8 != 0) {
    return invalid_argument("TtPublisher: the image area offset " + std::to_string(a.offset) +
                            " must be 8-byte aligned");
  }
  if (a.capacity < 2 * XCache::kChunkBytes || a.offset > region_bytes ||
      region_bytes - a.offset < a.capacity) {
    return invalid_argument("TtPublisher: image area [" + std::to_string(a.offset) + ", +" +
                            std::to_string(a.capacity) + ") does not fit region " +
                            std::to_string(a.region) + " of " + std::to_string(region_bytes) +
                            " bytes (or is under 128 bytes)");
  }
  const LeafArea& la = tree->area();
  if (la.region == a.region && a.offset < la.leaf_offset + la.bytes() &&
      la.leaf_offset < a.offset + a.capacity) {
    return invalid_argument("TtPublisher: image area [" + std::to_string(a.offset) + ", +" +
                            std::to_string(a.capacity) + ") overlaps the tree's leaf area");
  }
  if (options.train_attempts == 0) {
    return invalid_argument("TtPublisher: train_attempts must be > 0");
  }
  uint8_t* image = region_base + a.offset;
  // Generations must never repeat over one area, also across publishers
  // (an owner restarted over the same memory): start after whatever the
  // area's header holds and no lower than the wall clock in ns (the header
  // reads 0 if a previous publisher stopped in the middle of a rewrite).
  const uint64_t old = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(image)).load();
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::system_clock::now().time_since_epoch());
  const uint64_t first = std::max<uint64_t>({old + 1, static_cast<uint64_t>(now.count()), 1});
  return std::unique_ptr<TtPublisher>(new TtPublisher(tree, image, options, first));
}

TtPublisher::TtPublisher(XTree* tree, uint8_t* image, const TtPublisherOptions& options,
                         uint64_t first_gen)
    : tree_(tree), image_(image), opt_(options), next_generation_(first_gen) {}

std::shared_ptr<const TtPublisher::Published> TtPublisher::current() const {
  std::lock_guard<std::mutex> g(mu_);
  return current_;
}

uint64_t TtPublisher::generation() const {
  auto p = current();
  return p ? p->generation : 0;
}

TtPublisherStats TtPublisher::stats() const {
  std::lock_guard<std::mutex> g(mu_);
  return stats_;
}

Status TtPublisher::publish() {
  std::lock_guard<std::mutex> g(publish_mu_);
  const auto t0 = std::chrono::steady_clock::now();
  auto next = std::make_shared<Published>(opt_.cache);
  Status st = Status::ok();
  for (uint32_t a = 0; a < opt_.train_attempts; ++a) {
    // Splits after this seq may or may not be in the run: republished later.
    next->split_seq = tree_->split_seq();
    const std::vector<LeafRun> run = tree_->export_all();
    st = next->cache.train(run, opt_.sub_models);
    if (st.is_ok() || st.code() == Code::kResourceExhausted) break;
  }
  if (st.is_ok()) {
    next->generation = next_generation_;
    next->image_bytes = next->cache.sealed_image_bytes();
    st = next->cache.write_sealed_image(image_, opt_.image.capacity, next->generation);
    if (!st.is_ok() && st.code() != Code::kResourceExhausted) st = st.with_context("TtPublisher");
  } else if (st.code() != Code::kResourceExhausted) {
    st = unavailable("TtPublisher: no well-formed training run in " +
                     std::to_string(opt_.train_attempts) + " attempts: " + st.message());
  }
  std::lock_guard<std::mutex> g2(mu_);
  if (!st.is_ok()) {
    ++stats_.failures;
    return st;
  }
  ++next_generation_;
  next->cache.set_split_seq(next->split_seq);
  XModelsReply head;
  std::vector<uint8_t> bytes;
  next->cache.encode_models(0, UINT32_MAX, &head, bytes);
  ++stats_.publishes;
  stats_.generation = next->generation;
  stats_.split_seq = next->split_seq;
  stats_.sub_models = next->cache.sub_models();
  stats_.image_bytes = next->image_bytes;
  stats_.models_bytes = sizeof(XModelsReply) + bytes.size();
  stats_.last_publish_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  current_ = std::move(next);
  return Status::ok();
}

Status TtPublisher::republish_if_stale(bool* published) {
  if (published != nullptr) *published = false;
  auto p = current();
  if (p && tree_->split_seq() < p->split_seq + opt_.min_splits) return Status::ok();
  DRTMX_RETURN_IF_ERROR(publish());
  if (published != nullptr) *published = true;
  return Status::ok();
}

Status TtPublisher::models_reply(const XFetchModelsReq& req, std::vector<uint8_t>& out) const {
  out.clear();
  auto p = current();
  if (!p) {
    return unavailable("xstore FETCH_MODELS: tree " + std::to_string(req.h.tree) +
                       " has not been published yet (TtPublisher::publish)");
  }
  XModelsReply head;
  head.generation = p->generation;
  if (req.known_generation == p->generation) {
    head.unchanged = 1;
    wire_put(out, head);
    return Status::ok();
  }
  if (req.first_sub >= p->cache.sub_models()) {
    return invalid_argument("xstore FETCH_MODELS from sub-model " + std::to_string(req.first_sub) +
                            " of " + std::to_string(p->cache.sub_models()));
  }
  head.region = opt_.image.region;
  head.image_offset = opt_.image.offset;
  head.image_bytes = p->image_bytes;
  head.split_seq = p->split_seq;
  out.resize(sizeof head);
  p->cache.encode_models(req.first_sub, std::clamp<uint32_t>(req.max_subs, 1, kMaxModelSubs), &head,
                         out);
  std::memcpy(out.data(), &head, sizeof head);
  return Status::ok();
}

}  // namespace drtmx::store::xstore
