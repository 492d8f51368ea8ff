// wgi_selftest: runs real kernels end to end on the adapter wgi picks and checks them against float64 CPU
// references. The README's demo runs it; it is also a quick "does my GPU work with wgi" check.
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>

#include "gpu/device.h"
#include "runtime/node_runner.h"
#include "support/reference_conv.h"
#include "support/reference_linear.h"
#include "support/tensor_check.h"
#include "wgi/printable.h"

namespace {

using wgi::Tensor;
using wgi::runtime::NodeInput;

struct Check {
  const char* name;
  double flops;
  bool ok;
};

// Runs a prepared node once to warm up, then times `repeats` runs in one submission.
template <class Reference>
Check run_case(wgi::gpu::Device& device, const char* name, const wgi::ops::NodeInfo& node,
               const std::vector<std::optional<NodeInput>>& inputs, double flops, const Reference& reference,
               int64_t terms) {
  wgi::runtime::PreparedNode prepared(device, node, inputs);
  std::vector<Tensor> out = prepared.run();
  const int repeats = 5;
  auto start = std::chrono::steady_clock::now();
  wgi::gpu::CommandBatch batch(device);
  for (int i = 0; i < repeats; ++i) prepared.encode(batch);
  batch.submit();
  device.wait_idle();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
  auto result =
      wgi::test::all_close(out[0], reference.shape, reference.values, wgi::test::fp32_tolerance(terms));
  std::printf("%-44s %9.3f ms %9.2f GFLOP/s   %s (%s)\n", name, seconds * 1e3, flops / seconds * 1e-9,
              result ? "ok" : "WRONG", result.message());
  return {name, flops, static_cast<bool>(result)};
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::cout << "usage: wgi_selftest\n"
                   "Runs a Gemm and a Conv on the adapter wgi picks and checks them against float64 CPU "
                   "references.\nThe adapter comes from WGI_BACKEND and WGI_ADAPTER (see wgi info --help).\n";
      return 0;
    }
    std::cerr << "wgi_selftest: unknown argument '" << wgi::printable(arg)
              << "' (it takes none but --help; choose the adapter with WGI_BACKEND / WGI_ADAPTER)\n";
    return 2;
  }
  try {
    auto device = wgi::gpu::Device::create();
    std::cout << "adapter: " << device->adapter_info().device << " ("
              << wgi::gpu::to_string(device->backend()) << ")\n";
    bool all_ok = true;

    // The seeds' linear: out = x W^T + b with W prepacked, through the vec4 GEMM kernel (K % 4 == 0).
    const int64_t M = 128, N = 256, K = 192;
    Tensor x = wgi::test::random_tensor({M, K}, 1), w = wgi::test::random_tensor({N, K}, 2),
           b = wgi::test::random_tensor({N}, 3);
    wgi::ops::NodeInfo gemm{"linear", "Gemm", "", 13, {}, {}, {}};
    gemm.attributes.set("transB", int64_t{1});
    all_ok &= run_case(*device, "linear 128x256x192 (Gemm, transB, bias)", gemm,
                       {NodeInput{x}, NodeInput{w, true}, NodeInput{b, true}}, 2.0 * M * N * K,
                       wgi::test::gemm_reference(x, w, &b, false, true, 1, 1), K)
                  .ok;

    // A conv 3x3 with padding and bias, through the vec4-over-input-channels kernel.
    Tensor cx = wgi::test::random_tensor({2, 16, 24, 24}, 4),
           cw = wgi::test::random_tensor({32, 16, 3, 3}, 5), cb = wgi::test::random_tensor({32}, 6);
    wgi::ops::NodeInfo conv{"conv", "Conv", "", 13, {}, {}, {}};
    conv.attributes.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    wgi::test::ConvReferenceParams params;
    params.pads = {1, 1, 1, 1};
    all_ok &=
        run_case(*device, "conv 3x3 2x16x24x24 -> 32 (pad 1, bias)", conv,
                 {NodeInput{cx}, NodeInput{cw, true}, NodeInput{cb, true}}, 2.0 * 2 * 32 * 24 * 24 * 16 * 9,
                 wgi::test::conv_reference(cx, cw, &cb, params), 16 * 9)
            .ok;
    std::cout << (all_ok ? "selftest: all results match the float64 reference\n" : "selftest: FAILED\n");
    return all_ok ? 0 : 1;
  } catch (const wgi::Error& e) {
    std::cerr << "wgi_selftest: error: " << wgi::printable_message(e.what()) << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "wgi_selftest: internal error: " << wgi::printable_message(e.what()) << "\n";
    return 1;
  }
}
