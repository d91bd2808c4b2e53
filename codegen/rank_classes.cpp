// Alike ranks, simulated once: see rank_classes.h.
#include "codegen/rank_classes.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <map>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "codegen/program_simulation.h"

namespace planner::codegen {
namespace {

// The 64-bit mixer of the colour refinement's hashes (splitmix64's finaliser: every input bit
// moves about half the output bits). runtime_stub/src/random.cpp has the same mixer for its
// counter-based initialisation, but the runtime builds standalone inside every launcher and the
// planner's libraries do not link it. A collision would merge two ranks whose programs differ;
// with 64-bit colours over at most a few thousand ranks its odds are below 1e-12.
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Hash {
  uint64_t h = 0x243f6a8885a308d3ull;
  void add(uint64_t v) { h = splitmix(h ^ splitmix(v)); }
  void add_double(double v) { add(std::bit_cast<uint64_t>(v)); }
  void add_text(std::string_view s) { add(std::hash<std::string_view>{}(s)); }
};

uint64_t group_hash(const std::vector<int>& group) {
  Hash h;
  for (int m : group) h.add(static_cast<uint64_t>(m));
  return h.h;
}

struct GroupHash {
  size_t operator()(const std::vector<int>& g) const { return group_hash(g); }
};

bool is_collective_kind(StepKind k) {
  return k == StepKind::kAllReduce || k == StepKind::kAllGather || k == StepKind::kAllToAll ||
         k == StepKind::kReduceScatter;
}

int64_t bytes_of(const Buffer& b) {
  return analysis::box_elements(b.region) * ir::dtype_size(b.dtype);
}

// What a rank's program is, without naming other ranks: the colour refinement starts here.
class LocalSignatures {
 public:
  // `with_times`: collectives and messages count by their priced time (else by their bytes).
  LocalSignatures(const Programs& p, const importers::Topology& t, bool with_times)
      : p_(p), topology_(t), with_times_(with_times) {}

  Expected<std::vector<uint64_t>> run() {
    std::vector<uint64_t> out(static_cast<size_t>(p_.num_ranks));
    std::vector<int> written_at(p_.buffers.size(), -1);  // step of its own rank that writes it
    for (int r = 0; r < p_.num_ranks; ++r) {
      const std::vector<Step>& steps = p_.ranks[static_cast<size_t>(r)].steps;
      for (size_t i = 0; i < steps.size(); ++i)
        for (int b : steps[i].outputs)
          if (b >= 0) written_at[static_cast<size_t>(b)] = static_cast<int>(i);
      Hash h;
      h.add(static_cast<uint64_t>(topology_.device(r).type));
      h.add(steps.size());
      for (const Step& s : steps) {
        h.add(static_cast<uint64_t>(s.kind));
        auto add_buffers = [&](const std::vector<int>& ids) {
          h.add(ids.size());
          for (int b : ids) {
            if (b < 0) {
              h.add(~0ull);
              continue;
            }
            const Buffer& buf = p_.buffers[static_cast<size_t>(b)];
            h.add(static_cast<uint64_t>(buf.dtype));
            h.add(static_cast<uint64_t>(buf.init));
            h.add(static_cast<uint64_t>(buf.tensor));
            h.add(static_cast<uint64_t>(buf.partial));
            for (const analysis::Range& d : buf.region) h.add(static_cast<uint64_t>(d.size()));
            h.add(static_cast<uint64_t>(written_at[static_cast<size_t>(b)] + 1));
          }
        };
        add_buffers(s.inputs);
        add_buffers(s.outputs);
        if (s.kind == StepKind::kKernel) {
          h.add(static_cast<uint64_t>(s.op));
          h.add_text(s.op_type);
          h.add_text(s.domain);
          h.add(s.fallback);
          h.add_double(s.work);
        } else if (is_collective_kind(s.kind)) {
          h.add(s.group.size());
          h.add(static_cast<uint64_t>(s.axis));
          h.add(static_cast<uint64_t>(s.axis2));
          h.add(static_cast<uint64_t>(s.reducer));
          for (int64_t e : s.extents) h.add(static_cast<uint64_t>(e));
          const int b = s.kind == StepKind::kAllGather ? s.outputs.at(0) : s.inputs.at(0);
          if (with_times_) {
            PLANNER_TRY_ASSIGN(double seconds, collective_seconds(s, bytes_of(buffer(b))));
            h.add_double(seconds);
          } else {
            h.add(static_cast<uint64_t>(bytes_of(buffer(b))));
          }
        } else {
          const int from = s.kind == StepKind::kSend ? r : s.peer;
          const int to = s.kind == StepKind::kSend ? s.peer : r;
          const int b = s.kind == StepKind::kSend ? s.inputs.at(0) : s.outputs.at(0);
          const auto bytes = static_cast<double>(bytes_of(buffer(b)));
          h.add_double(with_times_
                           ? topology_.latency(from, to) + bytes / topology_.bandwidth(from, to)
                           : bytes);
        }
      }
      out[static_cast<size_t>(r)] = h.h;
    }
    return out;
  }

 private:
  const Buffer& buffer(int id) const { return p_.buffers[static_cast<size_t>(id)]; }

  Expected<double> collective_seconds(const Step& s, int64_t bytes) {
    auto key = std::make_tuple(s.kind, s.group, bytes);
    auto it = priced_.find(key);
    if (it != priced_.end()) return it->second;
    PLANNER_TRY_ASSIGN(
        analysis::CollectiveCost cost,
        price_collective(p_, topology_, s.kind, s.group, static_cast<double>(bytes)));
    priced_.emplace(std::move(key), cost.time);
    return cost.time;
  }

  using Key = std::tuple<StepKind, std::vector<int>, int64_t>;
  struct KeyHash {
    size_t operator()(const Key& k) const {
      Hash h;
      h.add(static_cast<uint64_t>(std::get<0>(k)));
      h.add(static_cast<uint64_t>(std::get<2>(k)));
      h.add(group_hash(std::get<1>(k)));
      return h.h;
    }
  };

  const Programs& p_;
  const importers::Topology& topology_;
  bool with_times_;
  // Hashed: a data-parallel step has thousands of collectives over every rank, and an ordered
  // map compared their member lists element by element at every level.
  std::unordered_map<Key, double, KeyHash> priced_;
};

// Renumbers colours densely in order of first appearance; returns the number of colours.
int densify(std::vector<uint64_t>& colours) {
  std::unordered_map<uint64_t, uint64_t> id;
  for (uint64_t& c : colours) c = id.emplace(c, id.size()).first->second;
  return static_cast<int>(id.size());
}

// Who each rank meets, step by step: a message partner (>= 0), or a collective's group
// (-1 - its index in `groups`), interned once for every round of refinement.
struct Meetings {
  std::vector<std::vector<int>> of;  // per rank
  std::vector<std::vector<int>> groups;

  explicit Meetings(const Programs& p) : of(static_cast<size_t>(p.num_ranks)) {
    std::unordered_map<std::vector<int>, int, GroupHash> id;
    for (int r = 0; r < p.num_ranks; ++r)
      for (const Step& s : p.ranks[static_cast<size_t>(r)].steps) {
        if (s.kind == StepKind::kSend || s.kind == StepKind::kRecv) {
          of[static_cast<size_t>(r)].push_back(s.peer);
        } else if (is_collective_kind(s.kind)) {
          auto [it, added] = id.emplace(s.group, static_cast<int>(groups.size()));
          if (added) groups.push_back(s.group);
          of[static_cast<size_t>(r)].push_back(-1 - it->second);
        }
      }
  }
};

// One round of refinement: a rank's colour with its partners' colours, step by step (a
// collective's members as a multiset).
std::vector<uint64_t> refine(const Meetings& meet, const std::vector<uint64_t>& colour) {
  std::vector<uint64_t> group_colour(meet.groups.size());
  std::vector<uint64_t> members;
  for (size_t g = 0; g < meet.groups.size(); ++g) {
    members.clear();
    for (int m : meet.groups[g]) members.push_back(colour[static_cast<size_t>(m)]);
    std::sort(members.begin(), members.end());
    Hash h;
    for (uint64_t c : members) h.add(c);
    group_colour[g] = h.h;
  }
  std::vector<uint64_t> out(colour.size());
  for (size_t r = 0; r < colour.size(); ++r) {
    Hash h;
    h.add(colour[r]);
    for (int x : meet.of[r])
      h.add(x >= 0 ? colour[static_cast<size_t>(x)] : group_colour[static_cast<size_t>(-1 - x)]);
    out[r] = h.h;
  }
  return out;
}

// Whether one rank per class simulates the step exactly (rank_classes.h).
bool exact(const Programs& p, const RankClasses& c) {
  for (int rep : c.representative)
    for (const Step& s : p.ranks[static_cast<size_t>(rep)].steps) {
      if (s.kind == StepKind::kSend || s.kind == StepKind::kRecv) {
        if (c.representative_of(s.peer) != s.peer) return false;
      } else if (is_collective_kind(s.kind)) {
        // The join waits for the representatives among the members: each member's must be one.
        for (int m : s.group)
          if (std::find(s.group.begin(), s.group.end(), c.representative_of(m)) == s.group.end())
            return false;
      }
    }
  return true;
}

}  // namespace

Expected<std::vector<int>> alike_ranks(const Programs& programs,
                                       const importers::Topology& topology, bool with_times) {
  const int n = programs.num_ranks;
  PLANNER_TRY_ASSIGN(std::vector<uint64_t> colour,
                     LocalSignatures(programs, topology, with_times).run());
  int classes = densify(colour);
  // Refining only ever splits classes: stop when a round splits none.
  const Meetings meet(programs);
  for (int round = 0; round < n; ++round) {
    std::vector<uint64_t> next = refine(meet, colour);
    const int more = densify(next);
    colour = std::move(next);
    if (more == classes) break;
    classes = more;
  }
  return std::vector<int>(colour.begin(), colour.end());
}

Expected<std::shared_ptr<const RankClasses>> rank_classes(const Programs& programs,
                                                          const importers::Topology& topology) {
  const int n = programs.num_ranks;
  if (n < 2 || programs.symmetry) return std::shared_ptr<const RankClasses>();
  PLANNER_TRY_ASSIGN(std::vector<int> colour, alike_ranks(programs, topology));
  const int classes = colour.empty() ? 0 : *std::max_element(colour.begin(), colour.end()) + 1;
  if (classes == n) return std::shared_ptr<const RankClasses>();
  auto out = std::make_shared<RankClasses>();
  out->class_of.resize(static_cast<size_t>(n));
  out->representative.assign(static_cast<size_t>(classes), -1);
  out->size.assign(static_cast<size_t>(classes), 0);
  for (int r = 0; r < n; ++r) {
    const auto k = static_cast<int>(colour[static_cast<size_t>(r)]);
    out->class_of[static_cast<size_t>(r)] = k;
    if (out->representative[static_cast<size_t>(k)] < 0)
      out->representative[static_cast<size_t>(k)] = r;
    ++out->size[static_cast<size_t>(k)];
  }
  if (!exact(programs, *out)) return std::shared_ptr<const RankClasses>();
  PLANNER_TRY_ASSIGN(out->sibling_class_of, alike_ranks(programs, topology, false));
  return std::shared_ptr<const RankClasses>(std::move(out));
}

void keep_representatives(Programs& programs, std::shared_ptr<const RankClasses> classes) {
  if (!classes) return;
  programs.symmetry = std::move(classes);
  for (RankProgram& r : programs.ranks)
    if (!programs.has_steps(r.rank)) std::vector<Step>().swap(r.steps);
  // The other ranks' buffers go too (on a large cluster they are most of the program); the
  // kept ones are renumbered.
  std::vector<int> renamed(programs.buffers.size(), -1);
  std::vector<Buffer> kept;
  for (Buffer& b : programs.buffers) {
    if (!programs.has_steps(b.rank)) continue;
    renamed[static_cast<size_t>(b.id)] = static_cast<int>(kept.size());
    b.id = static_cast<int>(kept.size());
    kept.push_back(std::move(b));
  }
  programs.buffers = std::move(kept);
  auto rename = [&](int& b) {
    if (b >= 0) b = renamed[static_cast<size_t>(b)];
  };
  for (RankProgram& r : programs.ranks)
    for (Step& s : r.steps) {
      for (int& b : s.inputs) rename(b);
      for (int& b : s.outputs) rename(b);
    }
  std::erase_if(programs.outputs, [&](int b) { return renamed[static_cast<size_t>(b)] < 0; });
  for (int& b : programs.outputs) rename(b);
  std::erase_if(programs.carries, [&](const std::pair<int, int>& c) {
    return renamed[static_cast<size_t>(c.first)] < 0 || renamed[static_cast<size_t>(c.second)] < 0;
  });
  for (auto& [updated, resident] : programs.carries) {
    rename(updated);
    rename(resident);
  }
}

}  // namespace planner::codegen
