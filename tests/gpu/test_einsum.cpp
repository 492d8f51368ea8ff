// Einsum on the GPU against the float64 definition (support/reference_einsum.h): the attention equations
// (checked to run as GEMM launches only, no copies), batched and broadcast products, transposed operands and
// outputs, sums, diagonals, traces, implicit outputs, and the errors. Seeded inputs in [-1, 1); unaligned
// sizes and batch > 1 throughout.
#include <gtest/gtest.h>

#include "runtime/node_runner.h"
#include "support/reference_data_movement.h"
#include "support/reference_einsum.h"
#include "support/tensor_check.h"
#include "support/test_device.h"

namespace wgi {
namespace {

using runtime::NodeInput;
using test::NodeInputs;

ops::NodeInfo einsum_node(const std::string& equation) {
  ops::NodeInfo node = test::make_node("Einsum", 12);
  node.attributes.set("equation", equation);
  return node;
}

struct EinsumCase {
  std::string equation;
  std::vector<Shape> shapes;
  bool gemm_only = false;  // the direct path: every launch a GEMM one (no copies)
};

void expect_einsum(const EinsumCase& c, uint64_t seed) {
  SCOPED_TRACE(c.equation);
  std::vector<Tensor> inputs;
  NodeInputs node_inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    inputs.push_back(test::random_tensor(c.shapes[i], seed + i));
    node_inputs.push_back(NodeInput{inputs.back()});
  }
  const ops::NodeInfo node = einsum_node(c.equation);
  const test::EinsumReference ref = test::einsum_reference(c.equation, inputs);
  if (c.gemm_only) {
    const ops::OpPlan plan = runtime::plan_node(test::device().capabilities(), node, node_inputs);
    ASSERT_FALSE(plan.launches.empty());
    for (const auto& launch : plan.launches) {
      EXPECT_TRUE(launch.program.label.rfind("gemm", 0) == 0 || launch.program.label.rfind("gemv", 0) == 0)
          << "launch " << launch.program.label << " is not part of the direct GEMM path";
    }
  }
  auto out = runtime::run_node(test::device(), node, node_inputs);
  ASSERT_EQ(out.size(), 1u);
  // fp32 sums of `terms` products of values in [-1, 1]: rounding grows like sqrt(terms) (fp32_tolerance).
  EXPECT_TRUE(test::all_close(out[0], ref.shape, ref.values, test::fp32_tolerance(ref.terms)));
}

TEST(Einsum, AttentionEquationsRunAsOneGemm) {
  for (const EinsumCase& c : {
           EinsumCase{"bhid,bhjd->bhij", {{2, 3, 17, 12}, {2, 3, 21, 12}}, true},
           EinsumCase{"bhij,bhjd->bhid", {{2, 3, 17, 21}, {2, 3, 21, 12}}, true},
           EinsumCase{"bid,bjd->bij", {{3, 33, 7}, {3, 5, 7}}, true},
           EinsumCase{"...ij,...jk->...ik", {{2, 3, 9, 13}, {2, 3, 13, 6}}, true},
           EinsumCase{"...ij,...jk->...ik", {{4, 9, 13}, {1, 13, 6}}, true},  // broadcast batch
           EinsumCase{"ij,jk->ik", {{31, 17}, {17, 5}}, true},
           EinsumCase{"ij,kj->ik", {{31, 17}, {5, 17}}, true},
           EinsumCase{"ji,jk->ik", {{17, 31}, {17, 5}}, true},
           EinsumCase{"bhid,bhjd->bhji", {{2, 2, 9, 8}, {2, 2, 11, 8}}, true},  // swapped operands
           EinsumCase{"i,i", {{37}, {37}}, true},
           EinsumCase{"i,j->ij", {{5}, {7}}, true},
       }) {
    expect_einsum(c, 31);
  }
}

TEST(Einsum, GeneralEquationsThroughCopies) {
  for (const EinsumCase& c : {
           EinsumCase{"bhid,bjhd->bhij", {{2, 3, 9, 8}, {2, 11, 3, 8}}},  // K read with heads inside
           EinsumCase{"bij,bjk->kbi", {{2, 5, 7}, {2, 7, 3}}},            // output permuted
           EinsumCase{"ijk,jil->kl", {{3, 4, 5}, {4, 3, 6}}},             // two contracted letters
           EinsumCase{"ij,kl->ijkl", {{2, 3}, {4, 5}}},                   // outer product
           EinsumCase{"ijk,k->ij", {{3, 4, 5}, {5}}},
           EinsumCase{"abc,cd->", {{2, 3, 4}, {4, 5}}},        // everything summed
           EinsumCase{"ab,cd->ad", {{3, 4}, {5, 6}}},          // a letter summed in each operand alone
           EinsumCase{"bii,bij->bj", {{2, 4, 4}, {2, 4, 3}}},  // a diagonal inside a product
           EinsumCase{"ij,jk", {{6, 7}, {7, 3}}},              // implicit output: ik
           EinsumCase{"ba,ca", {{4, 5}, {3, 5}}},              // implicit output: bc
           EinsumCase{"...ij,jk->...ik", {{2, 2, 3, 4}, {4, 5}}},
           EinsumCase{"b...i,b...i->b...", {{2, 3, 5, 7}, {2, 3, 5, 7}}},
           // Five batch letters in opposite orders: no folding into 4 GEMM batch dims, so both are packed.
           EinsumCase{"abcdeij,edcbajk->abcdeik", {{2, 3, 2, 2, 3, 5, 4}, {3, 2, 2, 3, 2, 4, 3}}},
       }) {
    expect_einsum(c, 47);
  }
}

TEST(Einsum, OneOperandTransposesDiagonalsSums) {
  for (const EinsumCase& c : {
           EinsumCase{"ij->ji", {{13, 9}}},
           EinsumCase{"ij->i", {{13, 9}}, true},
           EinsumCase{"ij->j", {{13, 9}}},
           EinsumCase{"ii->i", {{7, 7}}},
           EinsumCase{"ii", {{7, 7}}},  // trace
           EinsumCase{"...ii->...i", {{3, 2, 5, 5}}},
           EinsumCase{"bijk->bkj", {{2, 3, 4, 5}}},
           EinsumCase{"ij", {{4, 6}}},  // implicit: identity
           EinsumCase{"ji", {{4, 6}}},  // implicit: transpose to ij order
           EinsumCase{"ijk->", {{3, 4, 5}}},
       }) {
    expect_einsum(c, 59);
  }
}

TEST(Einsum, ChainsContractPairwise) {
  for (const EinsumCase& c : {
           EinsumCase{"ij,jk,kl->il", {{7, 9}, {9, 5}, {5, 6}}},
           EinsumCase{"bij,bjk,bkl->bil", {{3, 5, 7}, {3, 7, 4}, {3, 4, 6}}},
           EinsumCase{"i,i,i->", {{37}, {37}, {37}}},
           EinsumCase{"abc,cd,de->abe", {{2, 3, 5}, {5, 4}, {4, 7}}},
           EinsumCase{"ab,bc,cd,de->ae", {{3, 4}, {4, 5}, {5, 6}, {6, 2}}},
           EinsumCase{"ij,jk,kl", {{5, 3}, {3, 4}, {4, 6}}},  // implicit output: il
           EinsumCase{"...ij,...jk,...kl->...il", {{2, 1, 3, 4}, {1, 3, 4, 5}, {2, 3, 5, 2}}},  // broadcast
           EinsumCase{"ii,ij,jk->k", {{4, 4}, {4, 5}, {5, 3}}},           // a diagonal in the chain
           EinsumCase{"ab,bc,cd->da", {{3, 4}, {4, 5}, {5, 6}}},          // output transposed
           EinsumCase{"abx,bc,cdy->ad", {{3, 4, 2}, {4, 5}, {5, 6, 3}}},  // letters summed alone
           EinsumCase{"bi,bj,bk->bijk", {{2, 3}, {2, 4}, {2, 5}}},        // outer products per batch
       }) {
    expect_einsum(c, 71);
  }
}

TEST(Einsum, ChainContractsTheSmallestIntermediateFirst) {
  // (jk, k) -> j has 30 elements, (ij, jk) -> ik 2000: the vector product comes first, so no scratch holds
  // the [40, 50] matrix.
  const EinsumCase c{"ij,jk,k->i", {{40, 30}, {30, 50}, {50}}};
  NodeInputs node_inputs;
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < c.shapes.size(); ++i) inputs.push_back(test::random_tensor(c.shapes[i], 80 + i));
  for (const Tensor& t : inputs) node_inputs.push_back(NodeInput{t});
  const ops::OpPlan plan =
      runtime::plan_node(test::device().capabilities(), einsum_node(c.equation), node_inputs);
  ASSERT_FALSE(plan.scratch_bytes.empty());
  for (uint64_t bytes : plan.scratch_bytes) EXPECT_LT(bytes, uint64_t{40 * 50 * 4});
  expect_einsum(c, 80);
}

TEST(Einsum, ErrorsNameTheProblem) {
  auto error = [](const std::string& equation, const std::vector<Tensor>& inputs) {
    NodeInputs in;
    for (const Tensor& t : inputs) in.push_back(NodeInput{t});
    return test::node_error(einsum_node(equation), in);
  };
  const Tensor a = test::random_tensor({3, 4}, 1), b = test::random_tensor({5, 6}, 2);
  EXPECT_NE(error("ij,jk->ik", {a, b}).find("size 4 in one place and 5"), std::string::npos);
  EXPECT_NE(error("ijk,jk->ik", {a, b}).find("names 3 dims"), std::string::npos);
  EXPECT_NE(error("ij,jk->iz", {a, test::random_tensor({4, 6}, 3)}).find("no input has"), std::string::npos);
  EXPECT_NE(error("ij->ii", {a}).find("repeats"), std::string::npos);
  EXPECT_NE(error("->", {}).find("no operands"), std::string::npos);
  EXPECT_NE(error("ij,jk,kl->il", {a, test::random_tensor({5, 5}, 3), b}).find("size 4 in one place and 5"),
            std::string::npos);
  EXPECT_NE(error("ij->ij", {test::ints({1, 2})}).find("float32 only"), std::string::npos);
}

}  // namespace
}  // namespace wgi
