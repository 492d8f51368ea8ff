// Issue 19's variants in the browser: the tiny weight-only quantized (tests/models/variants_weight_only.py,
// tests/data/models/variants/) and float16 (tests/models/variants_fp16.py, tests/data/models/*/model_fp16.onnx)
// files, each against onnxruntime-node 1.30 CPU on the same file. tests/web/ort_references.mjs computes those
// references in Node before the page opens; tests/web/pipeline_tests.mjs compares in the page. Shared by both.
//
// Tolerances (relative L2 per output) are the native tests' and their reasons:
//  - q4 / q4_zp vs onnxruntime 1e-5 (tests/gpu/test_matmul_nbits.cpp): both dequantise the same codes exactly
//    and accumulate in f32 in different orders (seen ~1e-7); a wrong code, block, scale or zero point in any
//    layer gives 1e-2 or more;
//  - q4f16 2e-3: float16 activations rounded on both sides in different places (seen ~5e-4);
//  - fp16 files vs onnxruntime and vs the float32 model's float64 reference (expected_*.npy), the bounds of
//    tests/gpu/test_float16.cpp: about 4x what onnxruntime itself shows against float64.
// Each model's inputs are input_<name>.npy next to it. Not every file, for CI's time: the other recipes (q8, nf4,
// fp4, q2_zp, acc4) and the resnet / Florence-2 vision fp16 files run natively only.
export const VARIANT_CASES = [
  {name: 'tiny_transformer_opset17_q4', dir: 'tests/data/models/variants/tiny_transformer_opset17_q4',
   model: 'model.onnx', vsOrt: 1e-5},
  {name: 'tiny_transformer_opset17_q4f16', dir: 'tests/data/models/variants/tiny_transformer_opset17_q4f16',
   model: 'model.onnx', vsOrt: 2e-3},
  {name: 'bart_decoder_tiny_opset17_q4', dir: 'tests/data/models/variants/bart_decoder_tiny_opset17_q4',
   model: 'model.onnx', vsOrt: 1e-5},
  {name: 'siglip_vision_tiny_opset17_q4_zp', dir: 'tests/data/models/variants/siglip_vision_tiny_opset17_q4_zp',
   model: 'model.onnx', vsOrt: 1e-5},
  {name: 'florence2_vision_tiny_opset17_q4', dir: 'tests/data/models/variants/florence2_vision_tiny_opset17_q4',
   model: 'model.onnx', vsOrt: 1e-5},
  {name: 'small_cnn_opset17_fp16', dir: 'tests/data/models/small_cnn_opset17', model: 'model_fp16.onnx',
   vsOrt: 1e-3, vsFloat64: 1e-3},
  {name: 'tiny_transformer_opset17_fp16', dir: 'tests/data/models/tiny_transformer_opset17',
   model: 'model_fp16.onnx', vsOrt: 2e-3, vsFloat64: 2e-3},
  {name: 'siglip_vision_tiny_opset17_fp16', dir: 'tests/data/models/siglip_vision_tiny_opset17',
   model: 'model_fp16.onnx', vsOrt: 3e-3, vsFloat64: 3e-3},
];

// Where run.mjs writes the references (under build/web/, served with the repository).
export const ORT_REFERENCE_FILE = 'build/web/ort_reference.json';
