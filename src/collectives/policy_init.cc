#include "collectives/policy_init.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "core/agree.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"

namespace coccl {
namespace {

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const std::string& l : lines) s += l + "\n";
  return s;
}

std::vector<std::string> splitLines(const std::string& s) {
  std::vector<std::string> out;
  size_t a = 0;
  while (a < s.size()) {
    size_t b = s.find('\n', a);
    if (b == std::string::npos) b = s.size();
    out.push_back(s.substr(a, b - a));
    a = b + 1;
  }
  return out;
}

// Every rank's members' world ranks, by rank.
std::vector<int> gatherWorldRanks(CommContext& ctx) {
  const int p = ctx.nranks();
  std::vector<int32_t> all(static_cast<size_t>(p), 0);
  const int w = ctx.config().worldRank;
  all[static_cast<size_t>(ctx.rank())] = w >= 0 ? w : ctx.rank();
  ctx.bootstrap().allGather(all.data(), sizeof(int32_t));
  return std::vector<int>(all.begin(), all.end());
}

// Fails every rank unless every rank's text equals rank 0's; the message names the first line
// that differs.
void agreeOnText(CommContext& ctx, const std::string& text) {
  const int p = ctx.nranks(), me = ctx.rank();
  struct Sig {
    uint64_t hash, length;
  };
  std::vector<Sig> sigs(static_cast<size_t>(p));
  sigs[static_cast<size_t>(me)] = Sig{fnv1a64(text), text.size()};
  ctx.bootstrap().allGather(sigs.data(), sizeof(Sig));
  int bad = -1;
  for (int r = 1; r < p && bad < 0; ++r)
    if (sigs[static_cast<size_t>(r)].hash != sigs[0].hash ||
        sigs[static_cast<size_t>(r)].length != sigs[0].length)
      bad = r;
  if (bad < 0) return;
  // Every rank takes this path (the signatures are the same everywhere): exchange the texts.
  constexpr size_t kCap = 16384;
  size_t len = 0;
  for (const Sig& s : sigs) len = std::max<size_t>(len, static_cast<size_t>(s.length));
  len = std::min(len, kCap) + 1;
  std::vector<char> all(len * static_cast<size_t>(p), '\0');
  std::memcpy(all.data() + len * static_cast<size_t>(me), text.data(), std::min(text.size(), len - 1));
  ctx.bootstrap().allGather(all.data(), len);
  const auto a = splitLines(std::string(all.data()));
  const auto b = splitLines(std::string(all.data() + len * static_cast<size_t>(bad)));
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  auto at = [](const std::vector<std::string>& v, size_t k) {
    return k < v.size() ? "\"" + v[k] + "\"" : std::string("no such rule");
  };
  COCCL_THROW(cocclInvalidArgument,
              "codec policy: the ranks resolved different policies (every rank must read the "
              "same policy file, COCCL_CODEC* values and communicator name): rule %zu is %s on "
              "rank 0 and %s on rank %d",
              i + 1, at(a, i).c_str(), at(b, i).c_str(), bad);
}

std::string rankList(const std::vector<int>& w) {
  std::string s;
  for (size_t i = 0; i < w.size(); ++i) {
    if (i == 16) return s + ",... (" + std::to_string(w.size()) + ")";
    s += (i ? "," : "") + std::to_string(w[i]);
  }
  return s;
}

}  // namespace

CodecPolicy resolvePolicy(CommContext& ctx) {
  const CommConfig& cfg = ctx.config();
  CommFacts facts;
  facts.name = cfg.name;
  facts.nranks = ctx.nranks();
  facts.worldRanks = gatherWorldRanks(ctx);
  std::unique_ptr<CodecPolicy> policy;
  std::string failure;
  try {
    PolicyFile file;
    if (!cfg.policy.file.empty()) file = loadPolicyFile(cfg.policy.file);
    policy = std::make_unique<CodecPolicy>(cfg.policy, cfg.policy.file.empty() ? nullptr : &file,
                                           facts);
  } catch (const std::exception& e) {  // Error, and bad_alloc: no rank may leave alone
    failure = e.what();
  }
  const std::string why = agree(ctx.bootstrap(), failure);
  if (!why.empty()) COCCL_THROW(cocclInvalidArgument, "codec policy: %s", why.c_str());
  const std::vector<std::string> lines = policy->describe();
  agreeOnText(ctx, joined(lines));
  if (ctx.rank() == 0) {
    COCCL_INFO(kLogInit, "comm %s: codec policy of %d ranks (world ranks %s)%s%s, first match:",
               cfg.name.empty() ? "(unnamed)" : cfg.name.c_str(), ctx.nranks(),
               rankList(facts.worldRanks).c_str(), cfg.policy.file.empty() ? "" : " from ",
               cfg.policy.file.c_str());
    for (size_t i = 0; i < lines.size(); ++i)
      COCCL_INFO(kLogInit, "comm %s: policy %zu. %s", cfg.name.empty() ? "(unnamed)" : cfg.name.c_str(),
                 i + 1, lines[i].c_str());
  }
  return std::move(*policy);
}

}  // namespace coccl
