// Einsum, lowered to the GEMM family (gemm_launch.h) and strided copies (data_movement_internal.h).
//
// Two operands: every letter is a batch letter (in A, B and the output), an M letter (A and output), an N
// letter (B and output), a contracted K letter (A and B), or summed in one operand only. The product is
//   out'[batch, M, N] = sum_K' A'[batch, M, K'] B'[batch, K', N],  K' = K + A-only + B-only summed letters
// where an operand lacking a K' letter is read broadcast along it (stride 0): summing a letter of one operand
// is a contraction with ones. An operand whose dims already end in [M, K] or [K, M] (B: [K, N] or [N, K])
// with batch letters before them, no repeated letter and no letter summed alone is read in place, with its
// own batch strides (size-1 broadcast dims: stride 0); others are copied into that packed layout first (a
// repeated letter, a diagonal, is a view whose stride is the sum of the dims' strides). The output is written
// directly when its letters are [batch, M, N] (or [batch, N, M]: the operands swap), else through a scratch
// buffer and a copy. So `bhid,bhjd->bhij`, `bhij,bhjd->bhid`, `bid,bjd->bij` and `...ij,...jk->...ik` are one
// GEMM (or its split-K pair) with no copy.
// One operand: a copy when no letter is summed (transpose, diagonal), else a GEMM against a vector of ones.
// Three or more operands: a sequence of the two-operand contractions above, each into a scratch tensor that
// keeps the letters the output or a remaining operand still needs (packed [batch, M, N]: written directly).
// The pair contracted next is chosen greedily by cost: the one whose intermediate has the fewest elements,
// ties broken by the fewest multiply-adds (the product of every size the pair names), then by operand order.
// The last pair writes the output. A letter that some operand has at size 0 is summed over nothing (or the
// output is empty): the output is filled with zeros. float32 only (the GEMM family).
#include <algorithm>
#include <array>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ops/data_movement_internal.h"
#include "ops/families.h"
#include "ops/gemm_launch.h"
#include "ops/registry.h"

namespace wgi::ops {

namespace {

using data_movement::StridedCopy;

// Letters a-z, A-Z are ids 0-51; the dims an ellipsis stands for are ids 52, 53, ... (right-aligned: the
// last ellipsis dim of every operand is the same id, as numpy broadcasting aligns them).
constexpr int kEllipsisBase = 52;

struct EinsumTerms {
  std::vector<std::vector<int>> inputs;  // per operand, one id per dim
  std::vector<int> output;
  std::vector<int64_t> size;  // per id (broadcast: the largest of its dims)
};

int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// The subscripts of one term; `ellipsis_dims` ids stand for "..." (the term's own count of them).
std::vector<int> parse_term(const PlanContext& ctx, const std::string& term, int64_t ellipsis_dims,
                            int64_t total_ellipsis, bool& has_ellipsis) {
  std::vector<int> ids;
  has_ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.compare(i, 3, "...") == 0) {
      if (has_ellipsis) ctx.fail("equation term '" + term + "' has more than one ellipsis");
      has_ellipsis = true;
      for (int64_t d = 0; d < ellipsis_dims; ++d) {
        ids.push_back(kEllipsisBase + static_cast<int>(total_ellipsis - ellipsis_dims + d));
      }
      i += 2;
      continue;
    }
    const int id = letter_id(term[i]);
    if (id < 0)
      ctx.fail("equation term '" + term + "' has '" + std::string(1, term[i]) + "'; expected letters");
    ids.push_back(id);
  }
  return ids;
}

size_t explicit_letters(const std::string& term) {
  size_t n = 0;
  for (char c : term) n += letter_id(c) >= 0;
  return n;
}

EinsumTerms parse_equation(const PlanContext& ctx) {
  std::string equation;
  for (char c : ctx.node.attributes.get_string("equation", "")) {
    if (c != ' ') equation += c;
  }
  if (equation.empty()) ctx.fail("attribute 'equation' is missing or empty");
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != ctx.input_count()) {
    ctx.fail("equation '" + equation + "' has " + std::to_string(terms.size()) +
             " input terms but the node has " + std::to_string(ctx.input_count()) + " inputs");
  }
  // Each operand's ellipsis covers the dims its letters leave; the widest sets the shared count.
  std::vector<int64_t> ellipsis_dims(terms.size(), 0);
  int64_t total_ellipsis = 0;
  for (size_t t = 0; t < terms.size(); ++t) {
    const int64_t rank = static_cast<int64_t>(ctx.input(t).shape.size());
    const int64_t letters = static_cast<int64_t>(explicit_letters(terms[t]));
    const bool ellipsis = terms[t].find("...") != std::string::npos;
    if (ellipsis ? letters > rank : letters != rank) {
      ctx.fail("equation term '" + terms[t] + "' names " + std::to_string(letters) + " dims but input " +
               std::to_string(t) + " " + shape_to_string(ctx.input(t).shape) + " has rank " +
               std::to_string(rank));
    }
    ellipsis_dims[t] = ellipsis ? rank - letters : 0;
    total_ellipsis = std::max(total_ellipsis, ellipsis_dims[t]);
  }
  EinsumTerms e;
  e.size.assign(static_cast<size_t>(kEllipsisBase + total_ellipsis), -1);
  std::array<int, kEllipsisBase> uses{};
  for (size_t t = 0; t < terms.size(); ++t) {
    bool has_ellipsis = false;
    e.inputs.push_back(parse_term(ctx, terms[t], ellipsis_dims[t], total_ellipsis, has_ellipsis));
    const Shape& shape = ctx.input(t).shape;
    for (size_t d = 0; d < shape.size(); ++d) {
      const int id = e.inputs[t][d];
      if (id < kEllipsisBase) ++uses[static_cast<size_t>(id)];
      int64_t& size = e.size[static_cast<size_t>(id)];
      // Size-1 dims broadcast (numpy's rule, needed for ellipsis dims); other sizes must agree.
      if (size == -1 || size == 1) {
        size = shape[d];
      } else if (shape[d] != size && shape[d] != 1) {
        ctx.fail("equation '" + equation + "': a subscript has size " + std::to_string(size) +
                 " in one place and " + std::to_string(shape[d]) + " in input " + std::to_string(t) + " " +
                 shape_to_string(shape));
      }
    }
  }
  if (arrow != std::string::npos) {
    bool has_ellipsis = false;
    e.output = parse_term(ctx, equation.substr(arrow + 2), total_ellipsis, total_ellipsis, has_ellipsis);
    std::vector<bool> seen(e.size.size(), false);
    for (int id : e.output) {
      if (e.size[static_cast<size_t>(id)] < 0) {
        ctx.fail("equation '" + equation + "': the output names a subscript that no input has");
      }
      if (seen[static_cast<size_t>(id)])
        ctx.fail("equation '" + equation + "': the output repeats a subscript");
      seen[static_cast<size_t>(id)] = true;
    }
  } else {
    // Implicit output: the ellipsis dims, then the letters used once, in ASCII order (numpy's rule).
    for (int64_t d = 0; d < total_ellipsis; ++d) e.output.push_back(kEllipsisBase + static_cast<int>(d));
    std::vector<int> once;
    for (int id = 0; id < kEllipsisBase; ++id) {
      if (uses[static_cast<size_t>(id)] == 1) once.push_back(id);
    }
    std::sort(once.begin(), once.end(), [](int a, int b) {
      auto ascii = [](int id) { return id < 26 ? 'a' + id : 'A' + (id - 26); };
      return ascii(a) < ascii(b);
    });
    e.output.insert(e.output.end(), once.begin(), once.end());
  }
  return e;
}

bool contains(const std::vector<int>& ids, int id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

std::vector<int> concat(std::initializer_list<const std::vector<int>*> parts) {
  std::vector<int> out;
  for (const auto* p : parts) out.insert(out.end(), p->begin(), p->end());
  return out;
}

// An operand of a contraction: a node input or an intermediate of a chain (packed, every id at its size).
struct Operand {
  std::vector<int> ids;
  Shape shape;
  TensorRef ref;
};

// An operand's element stride per id: the sum over its dims with that id (a repeated id reads a diagonal),
// 0 for dims that broadcast (size 1 below the id's size) and for ids it lacks.
std::vector<int64_t> id_strides(const EinsumTerms& e, const std::vector<int>& ids, const Shape& shape) {
  std::vector<int64_t> strides(e.size.size(), 0);
  const std::vector<int64_t> dims = data_movement::row_major_strides(shape);
  for (size_t d = 0; d < ids.size(); ++d) {
    if (shape[d] == e.size[static_cast<size_t>(ids[d])]) strides[static_cast<size_t>(ids[d])] += dims[d];
  }
  return strides;
}

bool has_repeats(const std::vector<int>& ids) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (std::find(ids.begin() + static_cast<std::ptrdiff_t>(i) + 1, ids.end(), ids[i]) != ids.end())
      return true;
  }
  return false;
}

int64_t product(const EinsumTerms& e, const std::vector<int>& ids) {
  int64_t p = 1;
  for (int id : ids) p *= e.size[static_cast<size_t>(id)];
  return p;
}

// Whether `ids` ends with `first` then `second` and has only `leading` ids before them.
bool ends_with(const std::vector<int>& ids, const std::vector<int>& first, const std::vector<int>& second,
               const std::vector<int>& leading) {
  const std::vector<int> tail = concat({&first, &second});
  if (ids.size() < tail.size() ||
      !std::equal(tail.begin(), tail.end(), ids.end() - static_cast<std::ptrdiff_t>(tail.size()))) {
    return false;
  }
  return std::all_of(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(tail.size()),
                     [&](int id) { return contains(leading, id); });
}

// A copy of operand `src` (ids with `strides`) into a packed scratch laid out as `order`.
TensorRef copy_packed(const PlanContext& ctx, OpPlan& plan, const EinsumTerms& e, TensorRef src,
                      const std::vector<int64_t>& strides, const std::vector<int>& order) {
  StridedCopy copy;
  for (int id : order) {
    copy.shape.push_back(e.size[static_cast<size_t>(id)]);
    copy.src_strides.push_back(strides[static_cast<size_t>(id)]);
  }
  copy.dst_strides = data_movement::row_major_strides(copy.shape);
  copy.src = src;
  copy.dst = plan.add_scratch(static_cast<uint64_t>(element_count(copy.shape)) * 4);
  const TensorRef packed = copy.dst;
  data_movement::add_copy_launches(ctx, plan, std::move(copy));
  return packed;
}

uint32_t u32_of(const PlanContext& ctx, int64_t v, const char* what) {
  if (v < 0 || v > std::numeric_limits<int32_t>::max()) {
    ctx.fail(std::string(what) + " (" + std::to_string(v) +
             ") is beyond the 32-bit indexing of wgi's GEMM kernels");
  }
  return static_cast<uint32_t>(v);
}

// An operand of the product: where it is read and how.
struct GemmOperand {
  TensorRef ref;
  bool transposed = false;             // A as [K, M] / B as [N, K]
  std::vector<int64_t> batch_strides;  // per batch id, in elements
};

// Operand `index` as the product's A (`rows` = M ids) or B (`rows` = N ids), read in place when its dims are
// [batch ids in any order..., rows, cols] or [..., cols, rows] with nothing to broadcast or sum alone, else
// packed into [batch, rows, K'] (A) / [batch, K', rows] (B).
GemmOperand gemm_operand(const PlanContext& ctx, OpPlan& plan, const EinsumTerms& e, const Operand& src,
                         bool is_a, const std::vector<int>& batch, const std::vector<int>& rows,
                         const std::vector<int>& k_all, bool force_copy) {
  const std::vector<int>& ids = src.ids;
  const Shape& shape = src.shape;
  const std::vector<int64_t> strides = id_strides(e, ids, shape);
  GemmOperand op;
  // In place: every K' id present (none to broadcast along), no diagonal, and only batch dims broadcast.
  bool in_place_possible = !force_copy && !has_repeats(ids);
  for (int id : k_all) in_place_possible = in_place_possible && contains(ids, id);
  for (size_t d = 0; d < ids.size(); ++d) {
    in_place_possible =
        in_place_possible && (contains(batch, ids[d]) || shape[d] == e.size[static_cast<size_t>(ids[d])]);
  }
  const std::vector<int>& first = is_a ? rows : k_all;
  const std::vector<int>& second = is_a ? k_all : rows;
  if (in_place_possible && (ends_with(ids, first, second, batch) || ends_with(ids, second, first, batch))) {
    op.ref = src.ref;
    op.transposed = !ends_with(ids, first, second, batch);
    for (int id : batch) op.batch_strides.push_back(strides[static_cast<size_t>(id)]);
    return op;
  }
  const std::vector<int> order = is_a ? concat({&batch, &rows, &k_all}) : concat({&batch, &k_all, &rows});
  op.ref = copy_packed(ctx, plan, e, src.ref, strides, order);
  const std::vector<int64_t> packed = data_movement::row_major_strides([&] {
    Shape s;
    for (int id : order) s.push_back(e.size[static_cast<size_t>(id)]);
    return s;
  }());
  for (size_t b = 0; b < batch.size(); ++b) op.batch_strides.push_back(packed[b]);
  return op;
}

// Batch ids folded to at most 4 GEMM batch dims: size-1 ids dropped, neighbours that step through A, B and
// the (packed) output as one dim merged. nullopt: more than 4 remain.
struct GemmBatch {
  std::array<uint32_t, 4> dims = {1, 1, 1, 1};
  std::array<uint32_t, 4> a = {0, 0, 0, 0}, b = {0, 0, 0, 0};
};
std::optional<GemmBatch> fold_batch(const PlanContext& ctx, const EinsumTerms& e,
                                    const std::vector<int>& batch, const GemmOperand& a,
                                    const GemmOperand& b) {
  std::vector<int64_t> sizes, as, bs, outs;
  int64_t out_stride = 1;
  std::vector<int64_t> out_strides(batch.size());
  for (size_t i = batch.size(); i-- > 0;) {
    out_strides[i] = out_stride;
    out_stride *= e.size[static_cast<size_t>(batch[i])];
  }
  for (size_t i = 0; i < batch.size(); ++i) {
    const int64_t n = e.size[static_cast<size_t>(batch[i])];
    if (n == 1) continue;
    if (!sizes.empty() && as.back() == a.batch_strides[i] * n && bs.back() == b.batch_strides[i] * n &&
        outs.back() == out_strides[i] * n) {
      sizes.back() *= n;
      as.back() = a.batch_strides[i];
      bs.back() = b.batch_strides[i];
      outs.back() = out_strides[i];
      continue;
    }
    sizes.push_back(n);
    as.push_back(a.batch_strides[i]);
    bs.push_back(b.batch_strides[i]);
    outs.push_back(out_strides[i]);
  }
  if (sizes.size() > 4) return std::nullopt;
  GemmBatch g;
  const size_t pad = 4 - sizes.size();
  for (size_t i = 0; i < sizes.size(); ++i) {
    g.dims[pad + i] = u32_of(ctx, sizes[i], "a batch dim");
    g.a[pad + i] = u32_of(ctx, as[i], "a batch stride");
    g.b[pad + i] = u32_of(ctx, bs[i], "a batch stride");
  }
  return g;
}

// Contracts one or two operands into `out`, laid out as `out_ids` (every id at its size in `e`).
void contract(const PlanContext& ctx, OpPlan& plan, const EinsumTerms& e, const std::vector<Operand>& ops,
              const std::vector<int>& out_ids, TensorRef out) {
  Shape out_shape;
  for (int id : out_ids) out_shape.push_back(e.size[static_cast<size_t>(id)]);
  // Swap the operands when the output is [batch, N, M]: the product is then written in place.
  std::vector<size_t> operand = {0, 1};
  const size_t n_ops = ops.size();
  auto classify = [&](std::vector<int>& batch, std::vector<int>& m, std::vector<int>& n, std::vector<int>& k,
                      std::vector<int>& sum_a, std::vector<int>& sum_b) {
    const std::vector<int>& a = ops[operand[0]].ids;
    static const std::vector<int> kNone;
    const std::vector<int>& b = n_ops == 2 ? ops[operand[1]].ids : kNone;
    for (int id : out_ids) {
      const bool in_a = contains(a, id), in_b = contains(b, id);
      (in_a && in_b ? batch : in_a ? m : n).push_back(id);
    }
    for (int id : a) {
      if (contains(out_ids, id) || contains(k, id) || contains(sum_a, id)) continue;
      (contains(b, id) ? k : sum_a).push_back(id);
    }
    for (int id : b) {
      if (!contains(out_ids, id) && !contains(a, id) && !contains(sum_b, id)) sum_b.push_back(id);
    }
  };
  std::vector<int> batch, m, n, k, sum_a, sum_b;
  classify(batch, m, n, k, sum_a, sum_b);
  if (n_ops == 2 && !n.empty() && !m.empty() && out_ids == concat({&batch, &n, &m})) {
    std::swap(operand[0], operand[1]);
    batch.clear(), m.clear(), n.clear(), k.clear(), sum_a.clear(), sum_b.clear();
    classify(batch, m, n, k, sum_a, sum_b);
  }
  const std::vector<int> k_all = concat({&k, &sum_a, &sum_b});

  if (n_ops == 1 && k_all.empty()) {
    // Nothing summed: the output is a view of the input (a permutation, a diagonal).
    StridedCopy copy;
    const std::vector<int64_t> strides = id_strides(e, ops[0].ids, ops[0].shape);
    copy.shape = out_shape;
    for (int id : out_ids) copy.src_strides.push_back(strides[static_cast<size_t>(id)]);
    copy.dst_strides = data_movement::row_major_strides(out_shape);
    copy.src = ops[0].ref;
    copy.dst = out;
    data_movement::add_copy_launches(ctx, plan, std::move(copy));
    return;
  }

  GemmLaunchSpec spec;
  spec.m = u32_of(ctx, product(e, m), "M");
  spec.n = u32_of(ctx, product(e, n), "N");
  spec.k = u32_of(ctx, product(e, k_all), "K");
  GemmOperand a, b;
  std::optional<GemmBatch> folded;
  for (bool force_copy : {false, true}) {
    OpPlan attempt = plan;
    a = gemm_operand(ctx, attempt, e, ops[operand[0]], true, batch, m, k_all, force_copy);
    if (n_ops == 2) {
      b = gemm_operand(ctx, attempt, e, ops[operand[1]], false, batch, n, k_all, force_copy);
    } else {
      // Summing one operand: B is a column of ones, [K', 1].
      Tensor ones(DType::Float32, {static_cast<int64_t>(spec.k)});
      std::fill(ones.data<float>().begin(), ones.data<float>().end(), 1.0f);
      attempt.constants.push_back(std::move(ones));
      b.ref = TensorRef::constant(static_cast<uint32_t>(attempt.constants.size() - 1));
      b.batch_strides.assign(batch.size(), 0);
    }
    folded = fold_batch(ctx, e, batch, a, b);
    if (folded || force_copy) {
      plan = std::move(attempt);
      break;
    }
  }
  if (!folded) ctx.fail("internal error: packed einsum operands did not fold into 4 batch dims");
  spec.batch = u32_of(ctx, product(e, batch), "the batch");
  spec.batch_dims = folded->dims;
  spec.a_batch_strides = folded->a;
  spec.b_batch_strides = folded->b;
  spec.a_km = a.transposed;
  spec.b_nk = b.transposed;
  spec.a = a.ref;
  spec.b = b.ref;
  const std::vector<int> product_order = concat({&batch, &m, &n});
  const bool direct_output = product_order == out_ids;
  const int64_t out_count = element_count(out_shape);
  spec.out = direct_output ? out : plan.add_scratch(static_cast<uint64_t>(out_count) * 4);
  append_gemm_launches(ctx, spec, plan);
  if (!direct_output) {
    // The product [batch, M, N] copied into the output's order.
    StridedCopy copy;
    std::vector<int64_t> out_strides(e.size.size(), 0);
    const std::vector<int64_t> dims = data_movement::row_major_strides(out_shape);
    for (size_t d = 0; d < out_ids.size(); ++d) out_strides[static_cast<size_t>(out_ids[d])] = dims[d];
    for (int id : product_order) {
      copy.shape.push_back(e.size[static_cast<size_t>(id)]);
      copy.dst_strides.push_back(out_strides[static_cast<size_t>(id)]);
    }
    copy.src_strides = data_movement::row_major_strides(copy.shape);
    copy.src = spec.out;
    copy.dst = out;
    data_movement::add_copy_launches(ctx, plan, std::move(copy));
  }
}

// The letters contracting operands `i` and `j` of `ops` keeps (those the output or another operand still
// names), ordered as the product writes them: in both, then in `i` only, then in `j` only.
std::vector<int> kept_ids(const EinsumTerms& e, const std::vector<Operand>& ops, size_t i, size_t j) {
  auto needed = [&](int id) {
    if (contains(e.output, id)) return true;
    for (size_t o = 0; o < ops.size(); ++o) {
      if (o != i && o != j && contains(ops[o].ids, id)) return true;
    }
    return false;
  };
  std::vector<int> both, only_i, only_j;
  for (int id : ops[i].ids) {
    if (!needed(id) || contains(both, id) || contains(only_i, id)) continue;
    (contains(ops[j].ids, id) ? both : only_i).push_back(id);
  }
  for (int id : ops[j].ids) {
    if (needed(id) && !contains(ops[i].ids, id) && !contains(only_j, id)) only_j.push_back(id);
  }
  return concat({&both, &only_i, &only_j});
}

// Contracts `ops` pairwise, the cheapest pair first (see the file comment), until two are left.
void contract_chain(const PlanContext& ctx, OpPlan& plan, const EinsumTerms& e, std::vector<Operand>& ops) {
  while (ops.size() > 2) {
    size_t best_i = 0, best_j = 1;
    int64_t best_size = std::numeric_limits<int64_t>::max(), best_work = best_size;
    for (size_t i = 0; i < ops.size(); ++i) {
      for (size_t j = i + 1; j < ops.size(); ++j) {
        const int64_t size = product(e, kept_ids(e, ops, i, j));
        std::vector<int> named = concat({&ops[i].ids, &ops[j].ids});
        std::sort(named.begin(), named.end());
        named.erase(std::unique(named.begin(), named.end()), named.end());
        const int64_t work = product(e, named);
        if (size < best_size || (size == best_size && work < best_work)) {
          best_size = size, best_work = work, best_i = i, best_j = j;
        }
      }
    }
    Operand made;
    made.ids = kept_ids(e, ops, best_i, best_j);
    for (int id : made.ids) made.shape.push_back(e.size[static_cast<size_t>(id)]);
    require_addressable(ctx, "an intermediate of the contraction chain", made.shape,
                        std::numeric_limits<int32_t>::max());
    made.ref = plan.add_scratch(static_cast<uint64_t>(std::max<int64_t>(1, element_count(made.shape))) * 4);
    contract(ctx, plan, e, {ops[best_i], ops[best_j]}, made.ids, made.ref);
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(best_j));
    ops.erase(ops.begin() + static_cast<std::ptrdiff_t>(best_i));
    ops.push_back(std::move(made));
  }
}

OpPlan plan_einsum(const PlanContext& ctx) {
  for (size_t i = 0; i < ctx.input_count(); ++i) {
    if (ctx.input(i).dtype != DType::Float32) {
      ctx.fail("input " + std::to_string(i) + " has type " + std::string(dtype_name(ctx.input(i).dtype)) +
               "; wgi runs Einsum on float32 only");
    }
    require_addressable(ctx, "input " + std::to_string(i), ctx.input(i).shape,
                        std::numeric_limits<int32_t>::max());
  }
  if (ctx.input_count() == 0) ctx.fail("has no operands; Einsum needs at least one");
  EinsumTerms e = parse_equation(ctx);
  Shape out_shape;
  for (int id : e.output) out_shape.push_back(e.size[static_cast<size_t>(id)]);
  require_addressable(ctx, "the output", out_shape, std::numeric_limits<int32_t>::max());
  OpPlan plan;
  plan.outputs.push_back({DType::Float32, out_shape});
  const int64_t out_count = element_count(out_shape);
  if (out_count == 0) return plan;
  if (ctx.input_count() == 1 && e.inputs[0] == e.output) {
    plan.alias_output_to_input = 0;
    return plan;
  }
  // A letter of size 0 not in the (non-empty) output is summed over nothing.
  if (std::find(e.size.begin(), e.size.end(), 0) != e.size.end()) {
    data_movement::add_fill_launch(ctx, plan, TensorRef::output(0), out_count, 0u);
    return plan;
  }
  std::vector<Operand> ops;
  for (size_t i = 0; i < ctx.input_count(); ++i)
    ops.push_back({e.inputs[i], ctx.input(i).shape, TensorRef::input(static_cast<uint32_t>(i))});
  contract_chain(ctx, plan, e, ops);
  contract(ctx, plan, e, ops, e.output, TensorRef::output(0));
  return plan;
}

}  // namespace

void register_einsum_ops(OpRegistry& registry) {
  OpHandler einsum;
  einsum.plan = plan_einsum;
  registry.add("", "Einsum", 12, kLatestOpset, std::move(einsum));
}

}  // namespace wgi::ops
