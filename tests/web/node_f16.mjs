// Computing in float16 (SessionOptions::precision 'f16', docs/float16.md "Computing in float16") in the
// WebAssembly build on Node.js through dawn.node: constant-weight GEMMs on subgroup matrices
// (linear/gemm_matrix_f16.wgsl), convs on the same kernel, attention on attention/attention_matrix_f16.wgsl.
// Small MatMul / Gemm / Conv / attention models written by python3-onnx from seeded numpy values, with their
// float64 results as the reference:
//  - on an adapter with shader-f16, subgroups and chromium-experimental-subgroup-matrix (the H200 through
//    dawn.node with the toggles allow_unsafe_apis,vulkan_enable_f16_on_nvidia): each case's output within a
//    relative L2 error of 2e-3 of float64 (A and B rounded to f16: unit roundoff 4.9e-4 each, f32 accumulation;
//    seen ~4e-4; a wrong tile, slab or epilogue gives 1e-1 or more), first run and replay, and every GEMM node
//    profiled as the matrix kernel (so a silent f32 fallback fails);
//  - elsewhere (SwiftShader: no CPU adapter here has shader-f16 or subgroup matrices): a session asking for f16
//    is refused with a message naming what the adapter lacks (through the API and web/cli.mjs, which also
//    refuses a bad --precision), and the f16 cases are skipped, saying so.
//   node tests/web/node_f16.mjs [--backend vulkan] [--toggles A,B] [--bench | --bench-only] [--only REGEX]
// --bench: also times the target models' GEMM shapes, 4096^3, ResNet-50's convs and two attentions in f16 and f32 in
// the same process (GPU ms of each node from timestamp queries, the mean over chains of products) and prints a
// table (docs/performance.md).
import {spawnSync} from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as wgi from '../../web/node.mjs';
import {decodeNpy, relativeL2} from './tensors.mjs';

const args = process.argv.slice(2);
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const backend = option('--backend', process.env.WGI_BACKEND || 'swiftshader');
const toggles = option('--toggles', process.env.WGI_DAWN_TOGGLES || '');
// --bench-only: the bench alone (a kernel change's A/B on the GPU machine, where the checks ran already).
const benchOnly = args.includes('--bench-only');
const bench = benchOnly || args.includes('--bench');
// --only REGEX: on an adapter with f16 subgroup matrices, only the checks and bench shapes whose names match
// (e.g. `attention`: one kernel family's A/B in a short device call).
const only = option('--only', '');
const onlyPattern = only ? new RegExp(only) : null;
const selected = (name) => !onlyPattern || onlyPattern.test(name);

// name, A's shape, N, and the epilogue: bias (b), Relu (r), Gelu (g: Erf form), residual (res), Gemm with
// transB (t). Edge tiles in M, N and K, a batch folded into M, each epilogue path (direct stores with the bias
// in the accumulators; the bounce with gemm_epilogue), and a GEMV-sized M (no matrix kernel: checked against
// float64 only). `split`: K is split over a grid of fewer than 132 tiles (gemm_matrix_f16_split, then
// gemm_split_reduce applies the epilogue); the others run whole. `cast`: K is not a multiple of 8, so A is
// cast to f16 by a launch of its own (gemm_a_to_f16); the others are read as f32 by the product.
// `residualAcc`: a residual (and bias) taken into the accumulators of interior tiles, which store directly
// (gemm_matrix_f16_res, no bounce), edge tiles bouncing through the epilogue. `tall`: a grid of at least four
// waves of 128x128 tiles (528) takes the 256x128 tile (`_tall`: 512 invocations, K slabs of 32).
const CASES = [
  {name: 'matmul_bias_577x768x768', a: [577, 768], n: 768, ops: 'b', split: true},
  {name: 'matmul_100x200x72', a: [100, 72], n: 200, ops: ''},
  {name: 'matmul_bias_256x384x512', a: [256, 512], n: 384, ops: 'b', split: true},
  {name: 'matmul_bias_residual_gelu_150x300x1000', a: [150, 1000], n: 300, ops: 'bresg', split: true},
  {name: 'matmul_bias_relu_300x261x136', a: [300, 136], n: 261, ops: 'br'},
  {name: 'matmul_bias_gelu_batch2_2x150x130x96', a: [2, 150, 96], n: 130, ops: 'bg'},
  {name: 'matmul_bias_residual_200x256x200', a: [200, 200], n: 256, ops: 'bres', residualAcc: true},
  {name: 'matmul_residual_300x400x256', a: [300, 256], n: 400, ops: 'res', residualAcc: true},
  {name: 'matmul_bias_residual_1100x2100x96', a: [1100, 96], n: 2100, ops: 'bres', residualAcc: true},
  {name: 'gemm_transb_bias_129x100x70', a: [129, 70], n: 100, ops: 'bt', cast: true},
  {name: 'matmul_bias_gelu_330x300x1001', a: [330, 1001], n: 300, ops: 'bg', split: true, cast: true},
  // Many tiles (9 x 17), whole and partial: the direct stores and the bounce at a larger size.
  {name: 'matmul_bias_1100x2100x96', a: [1100, 96], n: 2100, ops: 'b'},
  {name: 'matmul_bias_relu_1100x2100x96', a: [1100, 96], n: 2100, ops: 'br'},
  {name: 'matmul_gemv_4x300x200', a: [4, 200], n: 300, ops: 'b', gemv: true},
  // Outputs smaller than one 16x16 f32 matrix (1 KB): no direct stores (Dawn would refuse the binding).
  {name: 'matmul_bias_12x16x40', a: [12, 40], n: 16, ops: 'b'},
  {name: 'matmul_residual_14x16x32', a: [14, 32], n: 16, ops: 'res'},
  // The tall tile: edge tiles in M (3000 = 11 x 256 + 184), N and K (72 = 2 slabs of 32 + 8), each epilogue.
  {name: 'matmul_bias_tall_3000x2900x72', a: [3000, 72], n: 2900, ops: 'b', tall: true},
  {name: 'matmul_bias_residual_tall_2900x3000x200', a: [2900, 200], n: 3000, ops: 'bres', residualAcc: true,
   tall: true},
  {name: 'matmul_bias_gelu_tall_batch2_2x1500x2900x70', a: [2, 1500, 70], n: 2900, ops: 'bg', cast: true,
   tall: true},
];
// Attention as exporters write it (MatMul(Q, K^T) -> Mul(scale) -> [Add(mask)] -> Softmax -> MatMul(., V),
// fused into wgi's Attention node) on the f16 matrix kernel: q [b, h, tq, d], k [b, h, tk, d] (`kt`: given as
// K^T [b, h, d, tk], read transposed), v [b, h, tk, dv], an additive mask [tq, tk] (`mask`: -1e4 on about a
// quarter of the keys, broadcast over batch and heads). Q and K are uniform in [-2, 2], so the scores spread
// over several units and the softmax's running max moves between key chunks. DaViT's windows (144 = 9 x 16
// queries, heads of 32), SigLIP's heads (197 queries: a partial 16-row block, 7 chunks of 32 keys), cross
// attention with head sizes not a multiple of 16 and Dv != D, K given transposed, one 16-row block. The
// bound is 4e-3 relative L2 against float64: Q, K, V and P are each rounded to f16 (unit roundoff 4.9e-4),
// the scores and the output accumulate in f32; a wrong block, chunk or rescale gives 1e-1 or more.
const ATTENTION_CASES = [
  {name: 'attention_davit_window_2x3x144x32', attn: {b: 2, h: 3, tq: 144, tk: 144, d: 32, dv: 32}},
  {name: 'attention_siglip_1x4x197x64', attn: {b: 1, h: 4, tq: 197, tk: 197, d: 64, dv: 64}},
  {name: 'attention_cross_mask_2x2x37x100_d24_dv40', attn: {b: 2, h: 2, tq: 37, tk: 100, d: 24, dv: 40, mask: true}},
  {name: 'attention_kt_1x2x70x48', attn: {b: 1, h: 2, tq: 70, tk: 70, d: 48, dv: 48, kt: true}},
  {name: 'attention_one_block_3x1x16x33_d8', attn: {b: 3, h: 1, tq: 16, tk: 33, d: 8, dv: 16}},
];
// Convs on the matrix kernel (ops/conv/matrix_f16.cpp: A gathered from the input as float16 NHWC where the
// channels are a multiple of 8, else from the float32 NCHW input; the output written NCHW through the bounce)
// `x` NCHW, `w` [OC, C, KH, KW], strides, pads (top, left, bottom, right), dilations; ops as above (b bias, r
// Relu, res a residual Add before the Relu). Each has at least a wave (132) of 128x128 output tiles and K (C x
// KH x KW) of at least 512, as the planner asks (ops/conv/choose.cpp); planes not a multiple of 16, K not a
// multiple of the 64-deep slab, output channels past a 128-wide tile, stride 2, dilation 2, rectangular
// kernels and uneven pads, a batch of images, 12 and 60 channels (the NCHW gather).
const CONV_CASES = [
  {name: 'conv_3x3_bias_relu_2x64x97x89_to_24', x: [2, 64, 97, 89], w: [24, 64, 3, 3], strides: [1, 1],
   pads: [1, 1, 1, 1], dilations: [1, 1], ops: 'br'},
  {name: 'conv_1x1_bias_1x512x92x92_to_130', x: [1, 512, 92, 92], w: [130, 512, 1, 1], strides: [1, 1],
   pads: [0, 0, 0, 0], dilations: [1, 1], ops: 'b'},
  {name: 'conv_7x7_s2_stem_2x12x368x368_to_32', x: [2, 12, 368, 368], w: [32, 12, 7, 7], strides: [2, 2],
   pads: [3, 3, 3, 3], dilations: [1, 1], ops: 'br', tall: true},  // 2 x 184^2 pixels: 529 tiles of 128
  {name: 'conv_3x3_bias_2x64x200x200_to_40', x: [2, 64, 200, 200], w: [40, 64, 3, 3], strides: [1, 1],
   pads: [1, 1, 1, 1], dilations: [1, 1], ops: 'b', tall: true},  // K 576, 625 tiles of 128
  {name: 'conv_3x3_dilated_1x64x130x130_to_48', x: [1, 64, 130, 130], w: [48, 64, 3, 3], strides: [1, 1],
   pads: [2, 2, 2, 2], dilations: [2, 2], ops: 'b'},
  {name: 'conv_3x3_residual_relu_1x64x130x130_to_32', x: [1, 64, 130, 130], w: [32, 64, 3, 3], strides: [1, 1],
   pads: [1, 1, 1, 1], dilations: [1, 1], ops: 'bresr'},
  {name: 'conv_3x5_s1x2_uneven_1x40x131x260_to_40', x: [1, 40, 131, 260], w: [40, 40, 3, 5], strides: [1, 2],
   pads: [1, 2, 0, 1], dilations: [1, 1], ops: ''},
  {name: 'conv_3x3_bias_1x60x130x130_to_24', x: [1, 60, 130, 130], w: [24, 60, 3, 3], strides: [1, 1],
   pads: [1, 1, 1, 1], dilations: [1, 1], ops: 'b'},
];
// The small test models in f16 against their float64 references (expected_*.npy, PyTorch in float64): the
// error every output shows is printed (the accuracy of f16 GEMMs through a whole model); the bound, 2e-2, is
// far above the ~1e-3 that f16 operands give and far below a wrong layer's error (order 1).
// An fp16 file (weights float16, used as they are) against its float32 model's reference too.
// A decoder step (6 rows: every product on the GEMV) checks the GEMVs' float16 weights through a model.
// The name --only matches for the Florence-2 pipeline check (every session in f16).
const PIPELINE_CHECK = 'florence2_tiny';
const MODELS = ['siglip_vision_tiny_opset17', 'florence2_vision_tiny_opset17', 'tiny_transformer_opset17',
                'bart_decoder_tiny_opset17', 'bart_decoder_cached_cross_tiny_opset17',
                'siglip_vision_tiny_opset17/model_fp16.onnx'];

// Chains of `chain` pairs of MatMuls (K -> N, then N -> K; `mlp`: each pair a transformer MLP block, with
// the bias + Gelu and bias + residual epilogues), timed by each node's timestamps: this Dawn gives
// them in 65.5 us steps, so the bench takes each run's mean over its nodes (the steps' phase varies), and the
// median of eleven runs (the wall time of a run is mostly the transfers of A and the output).
const BENCH = [
  {name: 'bench_197x3072x768', a: [197, 768], n: 3072, ops: '', chain: 8},
  {name: 'bench_1576x3072x768', a: [1576, 768], n: 3072, ops: '', chain: 8},
  {name: 'bench_2304x1024x1024', a: [2304, 1024], n: 1024, ops: '', chain: 8},
  {name: 'bench_4096x4096x4096', a: [4096, 4096], n: 4096, ops: '', chain: 4},
  // DaViT-base's MLP blocks in stages 1 and 2 (768^2 image, batch 1: 192^2 and 96^2 tokens of 128 and 256
  // channels): K = 128 and 256 products whose bias + Gelu and bias + residual epilogues go through the bounce.
  {name: 'bench_davit_s1_mlp_36864x512x128', a: [36864, 128], n: 512, ops: '', chain: 2, mlp: true},
  {name: 'bench_davit_s2_mlp_9216x1024x256', a: [9216, 256], n: 1024, ops: '', chain: 2, mlp: true},
  // Stage 3's at batch 8 (8 x 48^2 tokens of 512 channels): K = 512 and 2048.
  {name: 'bench_davit_s3_b8_mlp_18432x2048x512', a: [18432, 512], n: 2048, ops: '', chain: 2, mlp: true},
  // A decoder step's MLP products (one row): the GEMV, bound by its weights' bytes (f16: half of f32's),
  // 16 products of 9.4 MB in f32, more than the L2 holds.
  {name: 'bench_gemv_1x3072x768', a: [1, 768], n: 3072, ops: '', chain: 8},
];
// Issue 21's conv: 3x3, 256 -> 256 channels, 8 images of 56x56, a chain of 4.
// Attention at the vision models' shapes: DaViT-base's stage-1 windows at batch 4 (4 x 256 windows x 4 heads
// of 32 over 144 tokens) and SigLIP-B's heads at batch 8 (8 x 12 heads of 64 over 197 tokens), and at batch
// 64 (a node of ~0.5 ms, less exposed to the timestamps' resolution); FLOPs count QK^T and PV.
const ATTENTION_BENCH = [
  {name: 'bench_attention_davit_4096x144x32', attn: {b: 1024, h: 4, tq: 144, tk: 144, d: 32, dv: 32}},
  {name: 'bench_attention_siglip_96x197x64', attn: {b: 8, h: 12, tq: 197, tk: 197, d: 64, dv: 64}},
  {name: 'bench_attention_siglip_768x197x64', attn: {b: 64, h: 12, tq: 197, tk: 197, d: 64, dv: 64}},
];
// ResNet-50's group-1 convs at batch 8 whose grids take the matrix kernel, by their K (input channels x
// taps): where the tensor cores' gain outweighs the NHWC copy and the bounced stores (ops/conv/choose.cpp).
const CONV_BENCH = [
  {name: 'bench_conv3x3_8x256x56x56', x: [8, 256, 56, 56], w: [256, 256, 3, 3], strides: [1, 1], pads: [1, 1, 1, 1],
   dilations: [1, 1], chain: 4},
  {name: 'bench_conv1x1_8x64x56x56', x: [8, 64, 56, 56], w: [64, 64, 1, 1], strides: [1, 1], pads: [0, 0, 0, 0],
   dilations: [1, 1], chain: 4},
  {name: 'bench_conv1x1_8x256x56x56', x: [8, 256, 56, 56], w: [256, 256, 1, 1], strides: [1, 1], pads: [0, 0, 0, 0],
   dilations: [1, 1], chain: 4},
  {name: 'bench_conv3x3_8x64x56x56', x: [8, 64, 56, 56], w: [64, 64, 3, 3], strides: [1, 1], pads: [1, 1, 1, 1],
   dilations: [1, 1], chain: 4},
  {name: 'bench_conv1x1_8x512x28x28', x: [8, 512, 28, 28], w: [512, 512, 1, 1], strides: [1, 1], pads: [0, 0, 0, 0],
   dilations: [1, 1], chain: 4},
];

// Writes each case's model.onnx, input_a.npy (and input_r.npy) and, unless `noReference`, expected.npy.
const WRITER = String.raw`
import json, os, sys
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
root, cases = sys.argv[1], json.loads(sys.argv[2])
def conv_reference(x, w, strides, pads, dilations):
    (n, _, h, wd), (oc, _, kh, kw) = x.shape, w.shape
    (sh, sw), (dh, dw) = strides, dilations
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])))
    oh = (h + pads[0] + pads[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pads[1] + pads[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, oc, oh, ow))
    for i in range(kh):
        for j in range(kw):
            patch = xp[:, :, i * dh:i * dh + sh * (oh - 1) + 1:sh, j * dw:j * dw + sw * (ow - 1) + 1:sw]
            out += np.einsum("nchw,oc->nohw", patch, w[:, :, i, j].astype(np.float64))
    return out
for i, c in enumerate(cases):
    d = os.path.join(root, c["name"]); os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(20261204 + i)
    if c.get("attn"):
        t = c["attn"]
        b, h, tq, tk, dh, dv = t["b"], t["h"], t["tq"], t["tk"], t["d"], t["dv"]
        q = rng.uniform(-2, 2, (b, h, tq, dh)).astype(np.float32)
        k = rng.uniform(-2, 2, (b, h, tk, dh)).astype(np.float32)
        v = rng.uniform(-1, 1, (b, h, tk, dv)).astype(np.float32)
        scale = np.float32(dh ** -0.5)
        reference = not c.get("noReference")
        if reference:
            scores = np.einsum("bhqd,bhkd->bhqk", q.astype(np.float64), k.astype(np.float64)) * float(scale)
        f = lambda n, s: helper.make_tensor_value_info(n, TensorProto.FLOAT, list(s))
        inputs, feeds = [f("q", q.shape)], {"q": q}
        if t.get("kt"):
            kt = np.ascontiguousarray(k.transpose(0, 1, 3, 2))
            inputs.append(f("kt", kt.shape)); feeds["kt"] = kt
            nodes = [helper.make_node("MatMul", ["q", "kt"], ["s"])]
        else:
            inputs.append(f("k", k.shape)); feeds["k"] = k
            nodes = [helper.make_node("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                     helper.make_node("MatMul", ["q", "kt"], ["s"])]
        inputs.append(f("v", v.shape)); feeds["v"] = v
        nodes.append(helper.make_node("Mul", ["s", "scale"], ["scaled"])); x = "scaled"
        if t.get("mask"):
            mask = np.where(rng.uniform(0, 1, (tq, tk)) < 0.25, -1e4, 0).astype(np.float32)
            inputs.append(f("mask", mask.shape)); feeds["mask"] = mask
            nodes.append(helper.make_node("Add", [x, "mask"], ["masked"])); x = "masked"
            if reference:
                scores = scores + mask.astype(np.float64)
        nodes += [helper.make_node("Softmax", [x], ["p"], axis=-1), helper.make_node("MatMul", ["p", "v"], ["y"])]
        graph = helper.make_graph(nodes, c["name"], inputs, [f("y", (b, h, tq, dv))],
                                  [numpy_helper.from_array(np.array(scale, np.float32), "scale")])
        onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]),
                  os.path.join(d, "model.onnx"))
        for name, value in feeds.items():
            np.save(os.path.join(d, f"input_{name}.npy"), value)
        if reference:
            p = np.exp(scores - scores.max(-1, keepdims=True)); p /= p.sum(-1, keepdims=True)
            ref = np.einsum("bhqk,bhkv->bhqv", p, v.astype(np.float64))
            np.save(os.path.join(d, "expected.npy"), ref.astype(np.float32))
        continue
    if c.get("w") and c.get("chain"):
        x = rng.uniform(-1, 1, c["x"]).astype(np.float32)
        inits, nodes, prev = [], [], "a"
        for p in range(c["chain"]):
            w = (rng.uniform(-1, 1, c["w"]) / np.sqrt(np.prod(c["w"][1:]))).astype(np.float32)
            inits.append(numpy_helper.from_array(w, f"w{p}"))
            nodes.append(helper.make_node("Conv", [prev, f"w{p}"], [f"c{p}"], strides=c["strides"], pads=c["pads"],
                                          dilations=c["dilations"]))
            prev = f"c{p}"
        nodes.append(helper.make_node("Identity", [prev], ["y"]))
        graph = helper.make_graph(nodes, c["name"], [helper.make_tensor_value_info("a", TensorProto.FLOAT, c["x"])],
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
        onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]),
                  os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input_a.npy"), x)
        continue
    if c.get("w"):
        x = rng.uniform(-1, 1, c["x"]).astype(np.float32)
        fan_in = int(np.prod(c["w"][1:]))
        w = (rng.uniform(-1, 1, c["w"]) / np.sqrt(fan_in)).astype(np.float32)
        bias = rng.uniform(-0.5, 0.5, (c["w"][0],)).astype(np.float32)
        ops = c["ops"]
        ref = conv_reference(x, w, c["strides"], c["pads"], c["dilations"])
        inits = [numpy_helper.from_array(w, "w")]
        conv_inputs = ["a", "w"]
        if "b" in ops:
            inits.append(numpy_helper.from_array(bias, "bias")); conv_inputs.append("bias")
            ref = ref + bias.astype(np.float64)[None, :, None, None]
        nodes = [helper.make_node("Conv", conv_inputs, ["conv"], strides=c["strides"], pads=c["pads"],
                                  dilations=c["dilations"])]
        inputs = [helper.make_tensor_value_info("a", TensorProto.FLOAT, c["x"])]
        y = "conv"
        if "res" in ops:
            r = rng.uniform(-1, 1, ref.shape).astype(np.float32)
            np.save(os.path.join(d, "input_r.npy"), r)
            inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, list(ref.shape)))
            nodes.append(helper.make_node("Add", [y, "r"], ["summed"])); y = "summed"; ref = ref + r
        if "r" in ops.replace("res", ""):
            nodes.append(helper.make_node("Relu", [y], ["relu"])); y = "relu"; ref = np.maximum(ref, 0)
        nodes.append(helper.make_node("Identity", [y], ["y"]))
        graph = helper.make_graph(nodes, c["name"], inputs,
                                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(ref.shape))], inits)
        onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]),
                  os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input_a.npy"), x)
        np.save(os.path.join(d, "expected.npy"), ref.astype(np.float32))
        continue
    a_shape, n, ops = c["a"], c["n"], c["ops"]
    k = a_shape[-1]
    a = rng.uniform(-1, 1, a_shape).astype(np.float32)
    w = (rng.uniform(-1, 1, (k, n)) / np.sqrt(k)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, (n,)).astype(np.float32)
    out_shape = list(a_shape[:-1]) + [n]
    inits, nodes, inputs = [], [], [helper.make_tensor_value_info("a", TensorProto.FLOAT, a_shape)]
    y = "product"
    if c.get("chain"):
        x = "a"
        if c.get("mlp"):
            inits += [numpy_helper.from_array(np.array(v, np.float32), name)
                      for v, name in ((2 ** 0.5, "sqrt2"), (1.0, "one"), (0.5, "half"))]
        for p in range(c["chain"]):
            block_input = x
            for j, (rows, cols) in enumerate([(k, n), (n, k)]):
                name = f"w{p}_{j}"
                inits.append(numpy_helper.from_array((rng.uniform(-1, 1, (rows, cols)) / np.sqrt(rows)).astype(np.float32), name))
                nodes.append(helper.make_node("MatMul", [x, name], [name + "_out"])); x = name + "_out"
                if not c.get("mlp"):
                    continue
                # A transformer MLP block: bias and Gelu (Erf form) after the first product, bias and the
                # block's input added after the second.
                inits.append(numpy_helper.from_array(rng.uniform(-0.5, 0.5, (cols,)).astype(np.float32), name + "_b"))
                nodes.append(helper.make_node("Add", [x, name + "_b"], [name + "_biased"])); x = name + "_biased"
                if j == 0:
                    nodes += [helper.make_node("Div", [x, "sqrt2"], [name + "_g0"]),
                              helper.make_node("Erf", [name + "_g0"], [name + "_g1"]),
                              helper.make_node("Add", [name + "_g1", "one"], [name + "_g2"]),
                              helper.make_node("Mul", [x, name + "_g2"], [name + "_g3"]),
                              helper.make_node("Mul", [name + "_g3", "half"], [name + "_gelu"])]
                    x = name + "_gelu"
                else:
                    nodes.append(helper.make_node("Add", [x, block_input], [name + "_res"])); x = name + "_res"
        out_shape = list(a_shape)
        nodes.append(helper.make_node("Identity", [x], ["y"]))
        graph = helper.make_graph(nodes, c["name"], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)], inits)
        onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]), os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "input_a.npy"), a)
        continue
    if "t" in ops:
        inits += [numpy_helper.from_array(np.ascontiguousarray(w.T), "w"), numpy_helper.from_array(bias, "bias")]
        nodes.append(helper.make_node("Gemm", ["a", "w", "bias"], [y], transB=1))
    else:
        inits.append(numpy_helper.from_array(w, "w"))
        nodes.append(helper.make_node("MatMul", ["a", "w"], [y]))
        if "b" in ops:
            inits.append(numpy_helper.from_array(bias, "bias"))
            nodes.append(helper.make_node("Add", [y, "bias"], ["biased"])); y = "biased"
    ref = a.astype(np.float64) @ w.astype(np.float64) + (bias.astype(np.float64) if "b" in ops else 0)
    if "res" in ops:
        r = rng.uniform(-1, 1, out_shape).astype(np.float32)
        np.save(os.path.join(d, "input_r.npy"), r)
        inputs.append(helper.make_tensor_value_info("r", TensorProto.FLOAT, out_shape))
        nodes.append(helper.make_node("Add", [y, "r"], ["summed"])); y = "summed"; ref = ref + r
    if "r" in ops.replace("res", ""):
        nodes.append(helper.make_node("Relu", [y], ["relu"])); y = "relu"; ref = np.maximum(ref, 0)
    if "g" in ops:
        inits += [numpy_helper.from_array(np.array(2 ** 0.5, np.float32), "sqrt2"),
                  numpy_helper.from_array(np.array(1, np.float32), "one"),
                  numpy_helper.from_array(np.array(0.5, np.float32), "half")]
        nodes += [helper.make_node("Div", [y, "sqrt2"], ["g0"]), helper.make_node("Erf", ["g0"], ["g1"]),
                  helper.make_node("Add", ["g1", "one"], ["g2"]), helper.make_node("Mul", [y, "g2"], ["g3"]),
                  helper.make_node("Mul", ["g3", "half"], ["gelu"])]
        y = "gelu"
        from math import erf
        ref = ref * 0.5 * (1 + np.vectorize(erf)(ref / 2 ** 0.5))
    nodes.append(helper.make_node("Identity", [y], ["y"]))
    graph = helper.make_graph(nodes, c["name"], inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
                              inits)
    onnx.save(helper.make_model(graph, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]),
              os.path.join(d, "model.onnx"))
    np.save(os.path.join(d, "input_a.npy"), a)
    if not c.get("noReference"):
        np.save(os.path.join(d, "expected.npy"), ref.astype(np.float32))
`;

let passed = 0, failed = 0, skipped = 0;
function report(ok, name, detail = '') {
  if (ok) ++passed; else ++failed;
  console.log(`${ok ? 'PASS' : 'FAIL'} ${name}${detail ? ': ' + detail : ''}`);
}
const read = (file) => new Uint8Array(fs.readFileSync(file));
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'wgi-f16-'));
const write = (cases) => {
  // Debian's python3-onnx here; on the lent GPU machine its own python3 has onnx and numpy.
  const python = process.env.WGI_PYTHON || '/usr/bin/python3';
  const r = spawnSync(python, ['-c', WRITER, dir, JSON.stringify(cases)], {encoding: 'utf8'});
  if (r.status !== 0) throw new Error('python3-onnx could not write the models: ' + r.stderr);
};
// Every input_<name>.npy of the case as the feed <name>.
const feedsOf = (name) => {
  const feeds = {};
  for (const f of fs.readdirSync(path.join(dir, name))) {
    if (f.startsWith('input_')) feeds[f.slice(6, -4)] = decodeNpy(read(path.join(dir, name, f)));
  }
  return feeds;
};

await wgi.setup({backend, toggles: toggles ? toggles.split(',') : []});
const adapter = await wgi.adapterInfo();
const has = (f) => adapter.features.includes(f);
const f16Matrices = has('shader-f16') && has('chromium-experimental-subgroup-matrix') &&
                    adapter.subgroupMatrixConfigs.includes('f16->f32 16x16x16');
console.log(`adapter: ${adapter.vendor} ${adapter.device} ${adapter.description}; f16 subgroup matrices: ` +
            (f16Matrices ? 'yes' : 'no'));
// Without f16 only the first case's model is used (the refusals below): its float64 references are not made.
if (benchOnly && !f16Matrices) {
  console.log('node_f16 --bench-only: the adapter has no f16 subgroup matrices: nothing to time');
  process.exit(1);
}
if (only && ![...CASES, ...CONV_CASES, ...ATTENTION_CASES, ...BENCH, ...CONV_BENCH, ...ATTENTION_BENCH]
                   .some((c) => selected(c.name)) && !MODELS.some(selected) && !selected(PIPELINE_CHECK)) {
  console.log(`node_f16: --only ${only} matches no check and no bench shape`);
  process.exit(2);
}
if (!benchOnly) write(f16Matrices ? [...CASES, ...CONV_CASES, ...ATTENTION_CASES] : CASES.slice(0, 1));

if (!f16Matrices) {
  try {
    const s = await wgi.Session.create(read(path.join(dir, CASES[0].name, 'model.onnx')), {precision: 'f16'});
    await s.free();
    report(false, 'precision f16 refused without subgroup matrices', 'the session was created');
  } catch (e) {
    const m = String(e.message || e);
    report(/precision f16 needs/.test(m) && /shader-f16/.test(m) && /subgroup-matrix/.test(m),
           'precision f16 refused without subgroup matrices', m.slice(0, 300));
  }
  // The CLI: a bad value is a usage error (exit 2), f16 on this adapter wgi's refusal (exit 1).
  const cli = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../web/cli.mjs');
  const model = path.join(dir, CASES[0].name, 'model.onnx');
  const cliEnv = {...process.env, WGI_BACKEND: backend, WGI_DAWN_TOGGLES: toggles};
  for (const [precision, code, pattern] of [['f8', 2, /--precision f8: expected f32 or f16/],
                                            ['f16', 1, /precision f16 needs .*lacks/]]) {
    const r = spawnSync(process.execPath, [cli, 'run', model, '--random-inputs', '1', '--precision', precision,
                                           '--output-dir', path.join(dir, 'out')],
                        {env: cliEnv, encoding: 'utf8', timeout: 120000});
    report(r.status === code && pattern.test(r.stderr), `cli run --precision ${precision}`,
           `exit ${r.status}: ${(r.stderr || '').trim().slice(0, 200)}`);
  }
  for (const c of CASES) {
    ++skipped;
    console.log(`SKIP f16/${c.name}: needs shader-f16 and chromium-experimental-subgroup-matrix (f16 -> f32 ` +
                '16x16x16), which no CPU adapter here has; runs on the H200 through dawn.node ' +
                '(bash bench/node_campaign.sh f16)');
  }
  for (const c of [...CONV_CASES, ...ATTENTION_CASES]) {
    ++skipped;
    console.log(`SKIP f16/${c.name}: needs shader-f16 and subgroup matrices (as above)`);
  }
  for (const name of MODELS) {
    ++skipped;
    console.log(`SKIP f16/model/${name}: needs shader-f16 and subgroup matrices (as above)`);
  }
  ++skipped;
  console.log('SKIP f16/florence2_tiny <OD> (every session in f16): needs shader-f16 and subgroup matrices ' +
              '(tests/web/pipeline_tests.mjs checks the refusal here)');
} else {
  if (!benchOnly) {
    // Runs case `c` in f16 (first run and replay) against its float64 reference; the kernels of the profiled
    // nodes whose op matches `ops` must exist and pass `kernelProblem` ('' when right).
    const checkCase = async (c, ops, kernelProblem, bound = 2e-3) => {
      const t0 = Date.now();
      try {
        const session = await wgi.Session.create(read(path.join(dir, c.name, 'model.onnx')),
                                                 {precision: 'f16', profiling: true});
        const want = decodeNpy(read(path.join(dir, c.name, 'expected.npy')));
        const feeds = feedsOf(c.name);
        let problem = '', detail = '';
        for (const pass of ['first run', 'replay']) {
          const got = await session.run(feeds);
          const error = relativeL2(got.y, want);
          detail += `${pass} ${error.toExponential(2)} `;
          if (!(error <= bound)) problem ||= `${pass}: relative L2 error ${error} > ${bound} against float64`;
        }
        const kernels = session.stats().profile.filter((p) => ops.test(p.op)).flatMap((p) => p.kernel.split('+'));
        if (!kernels.length) problem ||= `no ${ops} node in the profile (nothing checked)`;
        problem ||= kernelProblem(kernels);
        await session.free();
        report(!problem, `f16/${c.name}`, problem || `${detail}[${kernels.join(', ')}] ${Date.now() - t0} ms`);
      } catch (e) {
        report(false, `f16/${c.name}`, String(e && e.stack || e));
      }
    };
    // The tall tile where the adapter allows its workgroup (ops/gemm_matrix_f16.h: 512 invocations, 45568
    // bytes of workgroup memory); the 128-row tile elsewhere.
    const l = adapter.limits;
    const tallAllowed = l.maxComputeInvocationsPerWorkgroup >= 512 && l.maxComputeWorkgroupSizeX >= 512 &&
                        l.maxComputeWorkgroupStorageSize >= 45568;
    const tallProblem = (c, kernels) => {
      const want = Boolean(c.tall) && tallAllowed;
      const tall = kernels.some((k) => k.startsWith('gemm_matrix_f16') && k.endsWith('_tall'));
      return tall === want ? '' : `expected ${want ? 'the' : 'no'} tall tile`;
    };
    for (const c of CASES.filter((c) => selected(c.name))) {
      await checkCase(c, /MatMul|Gemm/, (kernels) => {
        // The matrix path's launches (the cast of A, the product, with a K split the reduction), and nothing
        // else on those nodes.
        const matrix = kernels.some((k) => k.startsWith('gemm_matrix_f16')) &&
                       kernels.every((k) => k.startsWith('gemm_matrix_f16') || k === 'gemm_a_to_f16' ||
                                            k.startsWith('gemm_split_reduce'));
        const split = kernels.some((k) => k.startsWith('gemm_matrix_f16_split'));
        const cast = kernels.includes('gemm_a_to_f16');
        // M <= 8: the GEMV, reading the float32 weight converted to float16 at planning (B_F16, "_bf16").
        if (c.gemv) {
          if (matrix) return 'M <= 8 ran on the matrix kernel, not the GEMV';
          return kernels.some((k) => k.startsWith('gemv') && k.includes('_bf16'))
            ? '' : `GEMM kernels ${kernels.join(', ')}: no GEMV reading its weight as float16`;
        }
        if (!matrix) return `GEMM kernels ${kernels.join(', ')}: not the matrix kernel`;
        if (split !== Boolean(c.split)) return `expected ${c.split ? 'a' : 'no'} K split`;
        if (cast !== Boolean(c.cast)) return `expected ${c.cast ? 'a' : 'no'} cast of A`;
        const residualAcc = kernels.some((k) => k.startsWith('gemm_matrix_f16_res'));
        if (residualAcc !== Boolean(c.residualAcc)) {
          return `expected ${c.residualAcc ? '' : 'no '}residual in the accumulators`;
        }
        return tallProblem(c, kernels);
      });
    }
    for (const c of CONV_CASES.filter((c) => selected(c.name))) {
      // Input channels a multiple of 8: the input written as float16 NHWC first, then the product gathering
      // 16-byte chunks of it (`_nhwc`); otherwise the product alone, gathering from the float32 NCHW input.
      const nhwc = c.x[1] % 8 === 0;
      const want = nhwc ? ['conv_nchw_to_nhwc_f16', 'gemm_matrix_f16_conv_nhwc'] : ['gemm_matrix_f16_conv'];
      const right = (k, i) => k.startsWith(want[i]) && (nhwc || !k.includes('_nhwc'));
      await checkCase(c, /Conv/, (kernels) => kernels.length === want.length && kernels.every(right)
          ? tallProblem(c, kernels) : `Conv kernels ${kernels.join(', ')}: not ${want.join(', ')}`);
    }
    for (const c of ATTENTION_CASES.filter((c) => selected(c.name))) {
      await checkCase(c, /Attention/, (kernels) => kernels.every((k) => k.startsWith('attention_matrix_f16'))
          ? '' : `Attention kernels ${kernels.join(', ')}: not the matrix kernel`, 4e-3);
    }
    const models = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../data/models');
    for (const name of MODELS.filter(selected)) {
      const t0 = Date.now();
      const [modelDir, modelFile = 'model.onnx'] = name.split('/');
      try {
        const files = fs.readdirSync(path.join(models, modelDir));
        const feeds = {}, wants = {};
        for (const f of files) {
          if (f.startsWith('input_')) feeds[f.slice(6, -4)] = decodeNpy(read(path.join(models, modelDir, f)));
          if (f.startsWith('expected_')) wants[f.slice(9, -4)] = decodeNpy(read(path.join(models, modelDir, f)));
        }
        const session = await wgi.Session.create(read(path.join(models, modelDir, modelFile)),
                                                 {precision: 'f16', profiling: true});
        const got = await session.run(feeds);
        const kernels = session.stats().profile.flatMap((p) => p.kernel.split('+'));
        const matrix = kernels.filter((k) => k.startsWith('gemm_matrix_f16')).length;
        const attentions = kernels.filter((k) => k.startsWith('attention_matrix_f16')).length;
        const halfGemvs = kernels.filter((k) => k.startsWith('gemv') && k.includes('_bf16')).length;
        await session.free();
        let problem = matrix || halfGemvs ? '' : 'no GEMM ran on the matrix kernel or on a float16-weight GEMV';
        let detail = `${matrix} matrix GEMMs, ${halfGemvs} float16-weight GEMVs, ${attentions} matrix attentions;`;
        if (!Object.keys(wants).length) problem ||= 'no expected_*.npy: nothing compared';
        for (const [output, want] of Object.entries(wants)) {
          const error = got[output] ? relativeL2(got[output], want) : Infinity;
          detail += ` ${output} ${error.toExponential(2)}`;
          if (!(error <= 2e-2)) problem ||= `${output}: relative L2 error ${error} > 2e-2 against float64`;
        }
        report(!problem, `f16/model/${name}`, problem || `${detail} (${Date.now() - t0} ms)`);
      } catch (e) {
        report(false, `f16/model/${name}`, String(e && e.stack || e));
      }
    }
    // Florence-2's pipeline with every session in f16 (web/wgi.mjs Florence2, options.precision): the tiny
    // folder's <OD> (greedy, as expected_od.json, transformers.js on onnxruntime) gives the reference's ids.
    if (selected(PIPELINE_CHECK)) {
      const t0 = Date.now();
      const folder = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../data/pipelines/florence2_tiny');
      try {
        const files = {};
        for (const name of ['config.json', 'generation_config.json', 'preprocessor_config.json', 'tokenizer.json',
                            'tokenizer_config.json', 'onnx/embed_tokens.onnx', 'onnx/vision_encoder.onnx',
                            'onnx/encoder_model.onnx', 'onnx/decoder_model_merged.onnx']) {
          files[name] = read(path.join(folder, name));
        }
        const want = JSON.parse(fs.readFileSync(path.join(folder, 'expected_od.json'), 'utf8'));
        const {Florence2} = await import('../../web/wgi.mjs');
        const model = await Florence2.create(files, {precision: 'f16'});
        const r = await model.generate(read(path.join(folder, 'image.png')),
                                       {task: '<OD>', maxNewTokens: want.max_new_tokens, numBeams: 1});
        await model.free();
        const same = JSON.stringify(r.generated_ids) === JSON.stringify(want.generated_ids);
        report(same, 'f16/florence2_tiny <OD> (every session in f16)',
               same ? `${r.generated_ids.length} ids as the reference (${Date.now() - t0} ms)`
                    : `ids ${JSON.stringify(r.generated_ids)} != ${JSON.stringify(want.generated_ids)}`);
      } catch (e) {
        report(false, 'f16/florence2_tiny <OD> (every session in f16)', String(e && e.stack || e));
      }
    }
  }
  if (bench) {
    write([...BENCH, ...ATTENTION_BENCH].map((c) => ({...c, noReference: true})).concat(CONV_BENCH));
    console.log('| M x N x K | f32 kernel | f16 kernel | f32 ms per node | f16 ms per node | ' +
                'f32 / f16 | f16 TFLOP/s (GEMV: weight GB/s) |');
    console.log('|---|---|---|---|---|---|---|');
    for (const c of [...BENCH, ...CONV_BENCH, ...ATTENTION_BENCH].filter((c) => selected(c.name))) {
      const per = {}, kernel = {};
      for (const precision of ['f32', 'f16']) {
        const session = await wgi.Session.create(read(path.join(dir, c.name, 'model.onnx')), {precision, profiling: true});
        const feeds = feedsOf(c.name);
        // At least 3 runs and half a second of them: the GPU's clocks fall within a second of idling and
        // take a few hundred ms of load to come back (docs/performance.md, "The f16 GEMM taken apart").
        const warmEnd = performance.now() + 500;
        for (let i = 0; i < 3 || performance.now() < warmEnd; ++i) await session.run(feeds);
        // Each run's mean GPU time per node, then the median run: a run slowed by the clocks or by another
        // process moves a mean over runs, not the median.
        const perRun = [];
        for (let i = 0; i < 11; ++i) {
          await session.run(feeds);
          const nodes = session.stats().profile.filter((p) => /MatMul|Conv|Attention/.test(p.op));
          kernel[precision] = nodes[0]?.kernel ?? '';
          if (nodes.length) perRun.push(nodes.reduce((sum, p) => sum + p.gpu_ms, 0) / nodes.length);
        }
        perRun.sort((a, b) => a - b);
        per[precision] = perRun.length ? perRun[perRun.length >> 1] : NaN;
        await session.free();
      }
      // A conv's product: M = output pixels, N = output channels, K = C * KH * KW (same-size outputs here).
      // Attention: heads x Tq x Tk x D, its two products' FLOPs.
      let shape, flops;
      if (c.attn) {
        const t = c.attn;
        shape = `attention ${t.b * t.h} x ${t.tq} x ${t.tk} x ${t.d}`;
        flops = 2 * t.b * t.h * t.tq * t.tk * (t.d + t.dv);
      } else {
        const [m, n, k] = c.w ? [c.x[0] * c.x[2] * c.x[3], c.w[0], c.w[1] * c.w[2] * c.w[3]] : [c.a[0], c.n, c.a[1]];
        shape = `${c.w ? 'conv ' : ''}${m} x ${n} x ${k}`;
        flops = 2 * m * n * k;
      }
      const gemv = !c.attn && !c.w && c.a[0] <= 8;
      const rate = gemv ? `${(c.n * c.a[1] * 2 / per.f16 / 1e6).toFixed(0)} GB/s`
                        : (flops / per.f16 / 1e9).toFixed(1);
      console.log(`| ${shape} | ${kernel.f32} | ${kernel.f16} | ${per.f32.toFixed(4)} | ${per.f16.toFixed(4)} | ` +
                  `${(per.f32 / per.f16).toFixed(2)} | ${rate} |`);
    }
  }
}
fs.rmSync(dir, {recursive: true, force: true});
console.log(`node_f16: ${passed} passed, ${failed} failed, ${skipped} skipped`);
wgi.shutdown();
process.exit(failed ? 1 : 0);
