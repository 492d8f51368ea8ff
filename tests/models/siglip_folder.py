#!/usr/bin/python3
"""A SigLIP model folder with the structure Xenova/siglip-base-patch16-224 publishes, at tiny sizes with seeded
random weights (no pretrained weights are reachable here):

  onnx/model.onnx         input_ids int64 [text_batch_size, sequence_length], pixel_values float32
                          [image_batch_size, 3, height, width] -> logits_per_image [image_batch_size,
                          text_batch_size], logits_per_text, text_embeds, image_embeds (what transformers.js's
                          zero-shot-image-classification pipeline runs: SiglipModel, one session 'model')
  onnx/text_model.onnx    input_ids -> last_hidden_state, pooler_output (SiglipTextModel)
  onnx/vision_model.onnx  pixel_values -> last_hidden_state, pooler_output (SiglipVisionModel)
  onnx/model_text_batch1.onnx  model.onnx with input_ids' batch fixed at 1 (test only)
  config.json (model_type siglip, text_config, vision_config), preprocessor_config.json (SiglipImageProcessor:
  resize bicubic, rescale 1/255, normalize mean 0.5 std 0.5), spiece.model (SentencePiece unigram trained by
  Debian's spm_train on the seeded corpus below), tokenizer.json (the same model as transformers.js reads it,
  written from spiece.model's pieces and scores by tokenizer_json below), tokenizer_config.json,
  special_tokens_map.json.

    /usr/bin/python3 tests/models/siglip_folder.py    # tests/data/pipelines/siglip_tiny/ (+ expected_*.json)
    /usr/bin/python3 tests/models/siglip_folder.py --siglip2    # tests/data/pipelines/siglip2_tiny/ (below)
    /usr/bin/python3 tests/models/siglip_folder.py --base DIR   # SigLIP-base/16 224's tower sizes into DIR
    options: --node-modules DIR  (transformers.js; default third_party/pipelines/node_modules)
             --no-expected       (skip running transformers.js)

--base DIR writes the same folder with siglip-base-patch16-224's towers (224 px, patch 16, width 768, 12 layers,
12 heads, MLP 3072) for the H200 (bench/h200_campaign.sh pipelines_equal); the tokenizer keeps the tiny
folder's 320-piece vocabulary (spm_train on the seeded corpus: the vocabulary's size does not change the
pipeline's path), no model_text_batch1 variant, and the expected files stay unwritten (the campaign asks
transformers.js itself). --tokenizer-from DIR copies the tokenizer files of a folder made before instead of
running spm_train (which the GPU machine lacks).

--siglip2 writes a SigLIP 2-style folder (onnx-community's siglip2 layout, FixRes: the same towers) whose
tokenizer is Gemma's kind: tokenizer.json only (no spiece.model), a BPE model with byte_fallback and fuse_unk
over pieces that Debian's spm_train learns (--model_type=bpe --byte_fallback: the 256 "<0xXX>" pieces are in
the vocabulary), merges derived from the pieces as Hugging Face's SentencePieceExtractor derives them, the
normalizer Replace ' ' -> '\u2581', no pre-tokenizer, TemplateProcessing "$A <eos>" (SigLIP 2's tokenizer adds
EOS, no BOS) and the decoder Replace '\u2581' -> ' ', ByteFallback, Fuse; ids <pad> 0, <eos> 1, <bos> 2,
<unk> 3, padding with <pad> to 64. config.json says model_type "siglip": transformers.js 4.3.1 knows no
"siglip2" and picks the pipeline's sigmoid scores and max_length padding by that name.

The modules: the vision tower is florence_siglip.SiglipVisionTransformer (Hugging Face's
SiglipVisionTransformer: patch conv, learned positions, pre-LN encoder, post layer norm, attention-pooling
head); the text tower is Hugging Face's SiglipTextTransformer (token + learned position embeddings, the same
encoder layers, final layer norm, pooled output = the LAST position's hidden state, then a linear head; no
attention mask: input_ids are padded to max_length 64 with the pad token, as SigLIP was trained). SiglipModel
normalises both embeddings and computes logits_per_text = text @ image^T * exp(logit_scale) + logit_bias.
logit_scale and logit_bias are drawn so that the sigmoid scores spread over (0, 1) on random weights.
Exported by Debian's torch 1.13 (opset 17, do_constant_folding=False), value names shortened.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import florence_siglip as fs  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_TINY = os.path.join(ROOT, "tests", "data", "pipelines", "siglip_tiny")
SEED = 20261205
OPSET = 17
# SigLIP v1's special ids (google/siglip-base-patch16-224's spiece.model): <pad> 0, </s> 1 (also the padding
# token of the tokenizer), <unk> 2; no BOS.
PAD, EOS, UNK = 0, 1, 2
MAX_LENGTH = 64  # text_config.max_position_embeddings = tokenizer's model_max_length
CFG = dict(image_size=40, patch_size=8, hidden=32, layers=2, heads=2, mlp_dim=64, vocab_size=320, eps=1e-6)
BASE_TOWERS = dict(image_size=224, patch_size=16, hidden=768, layers=12, heads=12, mlp_dim=3072)
# Images of the expected files: (name, seed); all at the processor's size (transformers.js resizes with sharp,
# not as PIL does, so the references skip the resize).
TEXT_ATTENTION_SHARPNESS = 4.0
LOGIT_SCALE, LOGIT_BIAS = 100.0, 36.0
IMAGES = (("image_a.png", 1), ("image_b.png", 2), ("image_c.png", 3))


# ----------------------------------------------------------------------------------------------------------
# Tokenizer: spiece.model by spm_train, tokenizer.json from its pieces.
# ----------------------------------------------------------------------------------------------------------

WORDS = ("a an the this that is are was photo picture image of cat cats dog dogs bird car truck house tree "
         "flower red green blue small large big little old new two three one man woman child people street "
         "city night day sky water river mountain beach boat plane train bus bike horse cow sheep food pizza "
         "cake table chair room window door book phone computer playing running sitting standing on in with "
         "and near under over next to white black yellow brown grey orange purple pink happy sad café naïve "
         "zoë über straße résumé 東京 猫 犬 写真 москва кошка собака").split()


def corpus(rng, lines=3000):
    out = []
    for _ in range(lines):
        n = int(rng.integers(3, 12))
        words = [WORDS[int(i)] for i in rng.integers(0, len(WORDS), n)]
        if rng.random() < 0.3:
            words.insert(0, "this is a photo of")
        if rng.random() < 0.2:
            words.append(str(int(rng.integers(0, 2000))))
        out.append(" ".join(words))
    return "\n".join(out) + "\n"


def train_spiece(folder, rng):
    with tempfile.TemporaryDirectory() as tmp:
        text = os.path.join(tmp, "corpus.txt")
        with open(text, "w", encoding="utf-8") as f:
            f.write(corpus(rng))
        prefix = os.path.join(tmp, "spiece")
        # identity normalization: transformers.js's Precompiled normalizer applies NFKC rather than the model's
        # charsmap, so only a model without one can be mirrored exactly in tokenizer.json (docs/siglip.md).
        # Relative names (cwd=tmp): the model records its trainer's input and prefix, so the file stays
        # byte-identical across runs.
        subprocess.run(["spm_train", "--input=corpus.txt", "--model_prefix=spiece", "--model_type=unigram",
                        f"--vocab_size={CFG['vocab_size']}", "--character_coverage=1.0",
                        "--normalization_rule_name=identity", f"--pad_id={PAD}", f"--eos_id={EOS}",
                        f"--unk_id={UNK}", "--bos_id=-1", "--pad_piece=<pad>", "--eos_piece=</s>",
                        "--unk_piece=<unk>", "--num_threads=1", "--seed_sentencepiece_size=20000",
                        "--random_seed=1", "--minloglevel=2"], check=True, cwd=tmp)
        with open(prefix + ".model", "rb") as f:
            model = f.read()
    with open(os.path.join(folder, "spiece.model"), "wb") as f:
        f.write(model)


def tokenizer_json(spiece_path):
    """tokenizer.json for transformers.js equivalent to Hugging Face's SiglipTokenizer on spiece.model: the
    base tokenizer's lowercasing (do_lower_case), SiglipTokenizer.tokenize's '\u2581' -> ' ',
    canonicalize_text (string.punctuation removed, whitespace runs -> ' ', strip), then SentencePiece (a
    '\u2581' prefix and '\u2581' for spaces: Metaspace; the unigram pieces and scores) and '</s>' appended."""
    import sentencepiece as spm
    sp = spm.SentencePieceProcessor(model_file=spiece_path)
    vocab = []
    for i in range(sp.get_piece_size()):
        score = 0.0 if sp.is_control(i) or sp.is_unknown(i) else float(sp.get_score(i))
        vocab.append([sp.id_to_piece(i), score])
    special = [{"id": i, "content": sp.id_to_piece(i), "single_word": False, "lstrip": True, "rstrip": True,
                "normalized": False, "special": True} for i in (PAD, EOS, UNK)]
    punctuation = r"[!-/:-@\[-`{-~]"  # Python's string.punctuation: the ASCII punctuation ranges
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "Lowercase"},
            {"type": "Replace", "pattern": {"Regex": punctuation}, "content": ""},
            {"type": "Replace", "pattern": {"Regex": r"\s+"}, "content": " "},
            {"type": "Strip", "strip_left": True, "strip_right": True},
        ]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always",
                          "split": False},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 0}}, {"SpecialToken": {"id": "</s>", "type_id": 0}}],
            "special_tokens": {"</s>": {"id": "</s>", "ids": [EOS], "tokens": ["</s>"]}},
        },
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": False},
        "model": {"type": "Unigram", "unk_id": UNK, "vocab": vocab, "byte_fallback": False},
    }


def write_tokenizer(folder):
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_json(os.path.join(folder, "spiece.model")), f, ensure_ascii=False, indent=1)
        f.write("\n")
    special = {"eos_token": "</s>", "pad_token": "</s>", "unk_token": "<unk>"}
    config = dict(special, tokenizer_class="SiglipTokenizer", model_max_length=MAX_LENGTH, do_lower_case=True,
                  clean_up_tokenization_spaces=True, additional_special_tokens=[])
    for name, value in (("tokenizer_config.json", config), ("special_tokens_map.json", special)):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(value, f, indent=2)
            f.write("\n")


# ----------------------------------------------------------------------------------------------------------
# The towers and SiglipModel.
# ----------------------------------------------------------------------------------------------------------

class SiglipTextTransformer(nn.Module):
    def __init__(self, vocab, dim, layers, heads, mlp_dim, max_positions, eps):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.position_embedding = nn.Embedding(max_positions, dim)
        self.layers = nn.ModuleList([fs.SiglipEncoderLayer(dim, heads, mlp_dim, eps) for _ in range(layers)])
        self.final_layer_norm = nn.LayerNorm(dim, eps=eps)
        self.head = nn.Linear(dim, dim)

    def forward(self, input_ids):
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.token_embedding(input_ids) + self.position_embedding(positions)
        for layer in self.layers:
            x = layer(x)
        x = self.final_layer_norm(x)
        return x, self.head(x[:, -1, :])


class SiglipModel(nn.Module):
    def __init__(self, text, vision, logit_scale, logit_bias):
        super().__init__()
        self.text, self.vision = text, vision
        self.logit_scale = nn.Parameter(torch.tensor([logit_scale]))
        self.logit_bias = nn.Parameter(torch.tensor([logit_bias]))

    def forward(self, input_ids, pixel_values):
        image_embeds = self.vision(pixel_values)[1]
        text_embeds = self.text(input_ids)[1]
        image_embeds = image_embeds / image_embeds.norm(p=2, dim=-1, keepdim=True)
        text_embeds = text_embeds / text_embeds.norm(p=2, dim=-1, keepdim=True)
        logits_per_text = torch.matmul(text_embeds, image_embeds.t()) * self.logit_scale.exp() + self.logit_bias
        return logits_per_text.t(), logits_per_text, text_embeds, image_embeds


def build_model():
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED + 1)
    c = CFG
    vision = fs.SiglipVisionTransformer(c["image_size"], c["patch_size"], c["hidden"], c["layers"], c["heads"],
                                        c["mlp_dim"], c["eps"])
    text = SiglipTextTransformer(c["vocab_size"], c["hidden"], c["layers"], c["heads"], c["mlp_dim"],
                                 MAX_LENGTH, c["eps"])
    fs.randomize_norms(vision, gen)
    fs.randomize_norms(text, gen)
    with torch.no_grad():
        # The pooled position is the last one, always padding for short labels: only attention brings the
        # label's tokens there. Sharper text attention (q, k x4) makes the labels' embeddings differ by more
        # than float32 rounding can blur (cosine spread ~5e-3 across labels instead of ~1e-3).
        for layer in text.layers:
            layer.self_attn.q_proj.weight.mul_(TEXT_ATTENTION_SHARPNESS)
            layer.self_attn.k_proj.weight.mul_(TEXT_ATTENTION_SHARPNESS)
    # exp(logit_scale) 100 (SigLIP-base's is ~117) and the bias that centres the random towers' cosines
    # (about -0.35 here): sigmoid scores spread over (0, 1) instead of all near 0.
    return SiglipModel(text, vision, float(np.log(LOGIT_SCALE)), LOGIT_BIAS).eval()


def export(module, inputs, path, input_names, output_names, dynamic_axes):
    fs.export(module, inputs, path, OPSET, input_names, output_names, dynamic_axes)
    fs.shorten_value_names(path)
    print(f"{path}: {os.path.getsize(path)} bytes")


def export_folder(out, model, rng):
    onnx_dir = os.path.join(out, "onnx")
    os.makedirs(onnx_dir, exist_ok=True)
    s = CFG["image_size"]
    pixels = rng.uniform(-1, 1, (2, 3, s, s)).astype(np.float32)
    ids = rng.integers(3, CFG["vocab_size"], (3, MAX_LENGTH)).astype(np.int64)
    text_axes = {0: "text_batch_size", 1: "sequence_length"}
    image_axes = {0: "image_batch_size"}
    export(model, [ids, pixels], os.path.join(onnx_dir, "model.onnx"), ["input_ids", "pixel_values"],
           ["logits_per_image", "logits_per_text", "text_embeds", "image_embeds"],
           {"input_ids": text_axes, "pixel_values": image_axes,
            "logits_per_image": {0: "image_batch_size", 1: "text_batch_size"},
            "logits_per_text": {0: "text_batch_size", 1: "image_batch_size"},
            "text_embeds": {0: "text_batch_size"}, "image_embeds": {0: "image_batch_size"}})
    export(model.text, [ids], os.path.join(onnx_dir, "text_model.onnx"), ["input_ids"],
           ["last_hidden_state", "pooler_output"],
           {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "last_hidden_state": {0: "batch_size", 1: "sequence_length"}, "pooler_output": {0: "batch_size"}})
    export(model.vision, [pixels], os.path.join(onnx_dir, "vision_model.onnx"), ["pixel_values"],
           ["last_hidden_state", "pooler_output"],
           {"pixel_values": {0: "batch_size"}, "last_hidden_state": {0: "batch_size"},
            "pooler_output": {0: "batch_size"}})


def write_text_batch1_variant(out):
    """onnx/model_text_batch1.onnx: model.onnx with input_ids' batch fixed at 1 (test only, not part of the
    published layout), for the pipeline's one-run-per-label path (tests/gpu/test_siglip.cpp)."""
    import onnx
    model = onnx.load(os.path.join(out, "onnx", "model.onnx"))
    dim = next(i for i in model.graph.input if i.name == "input_ids").type.tensor_type.shape.dim[0]
    dim.ClearField("dim_param")
    dim.dim_value = 1
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "onnx", "model_text_batch1.onnx"))


def write_configs(out, model, pad_id=EOS, eos_id=EOS):
    c = CFG
    text_config = {"model_type": "siglip_text_model", "vocab_size": c["vocab_size"], "hidden_size": c["hidden"],
                   "intermediate_size": c["mlp_dim"], "num_hidden_layers": c["layers"],
                   "num_attention_heads": c["heads"], "max_position_embeddings": MAX_LENGTH,
                   "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": c["eps"], "pad_token_id": pad_id,
                   "eos_token_id": eos_id, "bos_token_id": None}
    vision_config = {"model_type": "siglip_vision_model", "hidden_size": c["hidden"],
                     "intermediate_size": c["mlp_dim"], "num_hidden_layers": c["layers"],
                     "num_attention_heads": c["heads"], "num_channels": 3, "image_size": c["image_size"],
                     "patch_size": c["patch_size"], "hidden_act": "gelu_pytorch_tanh", "layer_norm_eps": c["eps"]}
    config = {"architectures": ["SiglipModel"], "model_type": "siglip", "initializer_factor": 1.0,
              "torch_dtype": "float32", "text_config": text_config, "vision_config": vision_config}
    preprocessor = {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": [0.5, 0.5, 0.5],
                    "image_processor_type": "SiglipImageProcessor", "image_std": [0.5, 0.5, 0.5],
                    "processor_class": "SiglipProcessor", "resample": 3,
                    "rescale_factor": 0.00392156862745098, "size": {"height": c["image_size"],
                                                                    "width": c["image_size"]}}
    for name, value in (("config.json", config), ("preprocessor_config.json", preprocessor)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(value, f, indent=2)
            f.write("\n")


def run_node(args, node_modules):
    js = os.path.join(ROOT, "tests", "pipelines", "siglip_transformersjs.mjs")
    out = subprocess.run(["node", js, *args], check=True, capture_output=True, text=True,
                         env=dict(os.environ, WGI_NODE_MODULES=node_modules))
    return out.stdout


# Label lists of the expected score files: (file, image, labels, template or None for the default).
CASES = (
    ("expected_scores_a.json", "image_a.png", ["cat", "dog", "a red car", "two birds"], None),
    ("expected_scores_b.json", "image_b.png", ["cat", "dog", "house", "tree", "flower", "Zoë's café", "東京",
                                               "people on the beach"], "This is a photo of {}."),
    ("expected_scores_c.json", "image_c.png", ["night sky", "Mountain river!"], "a picture of {}"),
    ("expected_scores_c_one.json", "image_c.png", ["a small brown horse"], "This is a photo of {}."),
)


def token_strings(rng, count=400):
    """Strings for the tokenizer check (tests/unit/test_siglip_tokenizer.cpp): words of the corpus and
    others, with case changes, ASCII and Unicode punctuation, whitespace runs of every JavaScript kind,
    characters outside the vocabulary (fused into one <unk> per run), the special pieces inside text, the
    SentencePiece marker, Greek sigmas (Final_Sigma), texts past 64 ids (truncation) and the template."""
    fixed = ["", " ", "\t\n", "This is a photo of cat.", "This is a photo of {}.", "a </s>  b<pad>c",
             "<unk>x", "x<unk>", "  </s>  ", "\u2581cat", "cat\u2581dog", "\u2581\u2581", "ΑΣ b", "ΟΔΟΣ.",
             "Σ", "aΣ", "aΣb", "aΣ'", "a'Σ", "İstanbul", "KELVIN \u212a", "ǅemal", "ﬃ", "ẞ straße",
             "\u3000cat\u00a0dog\ufeff", "cat\u2028dog\u0085x", "caf\u00e9 cafe\u0301", "東京の猫",
             "😀 emoji 😀😀", "☃☃ x ☃", "x☃y☃☃z", "!!!", "a-b_c.d", "\"quoted\" (paren) [b] {c}",
             "«guillemets» „quotes“ — dash…", "100% $5 #1 @home", "\x00\x01 ctrl\x7f", "a\x1cb\x1fc",
             " ".join(["cat"] * 70), "word " * 40 + "café " * 20, "This is a photo of " + "ü" * 100]
    pool = list(WORDS) + ["Cat", "DOG", "Photo", "THE", "Ünïcödé", "ÉCOLE", "Москва", "ΚΑΛΗΜΕΡΑ", "ω",
                          "zebra", "quixotic", "jumped", "42", "3.14", "x", "ß", "ǈ", "Ⅻ", "①"]
    punct = list("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") + ["¡", "¿", "、", "。", "—", "…", "«", "»"]
    spaces = [" ", "  ", "\t", "\n", "\r\n", "\u00a0", "\u2003", "\u3000", "\ufeff", "\u200b", "\u2028",
              "\u1680", "\x0b", "\x0c", "\u0085", "\u180e"]
    out = list(fixed)
    while len(out) < count:
        words = [pool[int(i)] for i in rng.integers(0, len(pool), int(rng.integers(1, 9)))]
        text = ""
        for w in words:
            r = rng.random()
            if r < 0.15:
                w = w.upper()
            elif r < 0.25:
                w = w.capitalize()
            if rng.random() < 0.25:
                w += punct[int(rng.integers(0, len(punct)))]
            if rng.random() < 0.05:
                w += ["</s>", "<pad>", "<unk>", "\u2581"][int(rng.integers(0, 4))]
            sep = " " if rng.random() < 0.6 else "".join(spaces[int(i)] for i in
                                                         rng.integers(0, len(spaces), int(rng.integers(1, 4))))
            text += w + sep
        if rng.random() < 0.5:
            text = text.strip(" ")
        if rng.random() < 0.2:
            text = "This is a photo of " + text + "."
        out.append(text)
    return out




def write_images(out):
    from florence2_folder import write_png  # noqa: E402 (the standard-library PNG writer)
    s = CFG["image_size"]
    for name, seed in IMAGES:
        r = np.random.default_rng(SEED + 10 * seed)
        y, x = np.mgrid[0:s, 0:s] / s
        img = np.stack([x, y, 1 - x * y], axis=-1) * r.uniform(60, 200, 3)
        img += r.normal(0, 30, img.shape)
        write_png(os.path.join(out, name), np.clip(np.round(img), 0, 255).astype(np.uint8))


def write_token_ids(out, ids):
    with open(os.path.join(out, "expected_token_ids.json"), "w", encoding="utf-8") as f:
        f.write("{\"strings\": [\n" + ",\n".join(json.dumps(s, ensure_ascii=True) for s in ids["strings"]) +
                "\n],\n\"input_ids\": [\n" + ",\n".join(json.dumps(r) for r in ids["input_ids"]) + "\n]}\n")
    print(f"expected_token_ids.json: {len(ids['strings'])} strings")


def write_expected_scores(out, cases, node_modules):
    for name, image, labels, template in cases:
        args = [out, os.path.join(out, image), json.dumps(labels)] + ([template] if template else [])
        text = run_node(args, node_modules)
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
        print(f"{name}: {json.loads(text)['scores']}")


# ----------------------------------------------------------------------------------------------------------
# SigLIP 2 (--siglip2): a Gemma-style tokenizer.json (BPE, byte_fallback) from spm_train's BPE pieces.
# ----------------------------------------------------------------------------------------------------------

OUT_TINY2 = os.path.join(ROOT, "tests", "data", "pipelines", "siglip2_tiny")
GEMMA_PAD, GEMMA_EOS, GEMMA_BOS, GEMMA_UNK = 0, 1, 2, 3
SIGLIP2_VOCAB = 600  # 4 special pieces, 256 bytes, the rest merges


def train_bpe_pieces(rng):
    """[(piece, score)] of an spm_train BPE model with byte_fallback, in id order (its .vocab file)."""
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "corpus.txt"), "w", encoding="utf-8") as f:
            f.write(corpus(rng))
        subprocess.run(["spm_train", "--input=corpus.txt", "--model_prefix=bpe", "--model_type=bpe",
                        f"--vocab_size={SIGLIP2_VOCAB}", "--character_coverage=0.995", "--byte_fallback=true",
                        "--normalization_rule_name=identity", "--add_dummy_prefix=false",
                        "--remove_extra_whitespaces=false", "--split_digits=true",
                        f"--pad_id={GEMMA_PAD}", f"--eos_id={GEMMA_EOS}", f"--bos_id={GEMMA_BOS}",
                        f"--unk_id={GEMMA_UNK}", "--pad_piece=<pad>", "--eos_piece=<eos>", "--bos_piece=<bos>",
                        "--unk_piece=<unk>", "--num_threads=1", "--random_seed=1", "--minloglevel=2"],
                       check=True, cwd=tmp)
        with open(os.path.join(tmp, "bpe.vocab"), encoding="utf-8") as f:
            return [(line.split("\t")[0], float(line.split("\t")[1])) for line in f.read().splitlines()]


def gemma_tokenizer_json(pieces):
    """Gemma's tokenizer.json shape over `pieces`; merges as Hugging Face's SentencePieceExtractor makes them:
    every pair of pieces whose concatenation is a piece, ranked by that piece's id, then the pair's ids."""
    vocab = {p: i for i, (p, _) in enumerate(pieces)}
    merges = []
    for left in vocab:
        for right in vocab:
            merged = vocab.get(left + right)
            if merged is not None and vocab[left] > GEMMA_UNK and vocab[right] > GEMMA_UNK:
                merges.append((merged, vocab[left], vocab[right], [left, right]))
    merges.sort()
    special = [{"id": i, "content": pieces[i][0], "single_word": False, "lstrip": False, "rstrip": False,
                "normalized": False, "special": True} for i in (GEMMA_PAD, GEMMA_EOS, GEMMA_BOS, GEMMA_UNK)]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": special,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
            "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<eos>", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}, {"SpecialToken": {"id": "<eos>", "type_id": 1}}],
            "special_tokens": {"<eos>": {"id": "<eos>", "ids": [GEMMA_EOS], "tokens": ["<eos>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": [m[3] for m in merges]},
    }


def write_siglip2_tokenizer(folder, rng):
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(gemma_tokenizer_json(train_bpe_pieces(rng)), f, ensure_ascii=False, indent=1)
        f.write("\n")
    special = {"bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>", "unk_token": "<unk>"}
    config = dict(special, tokenizer_class="GemmaTokenizer", model_max_length=MAX_LENGTH, add_bos_token=False,
                  add_eos_token=True, padding_side="right", clean_up_tokenization_spaces=False,
                  additional_special_tokens=[])
    for name, value in (("tokenizer_config.json", config), ("special_tokens_map.json", special)):
        with open(os.path.join(folder, name), "w") as f:
            json.dump(value, f, indent=2)
            f.write("\n")


SIGLIP2_CASES = (
    ("expected_scores_a.json", "image_a.png", ["cat", "dog", "a red car", "two birds"], None),
    ("expected_scores_b.json", "image_b.png", ["Cat", "DOG!", "Zoë's café", "東京の猫", "😀 emoji", "straße"],
     "This is a photo of {}."),
)


def main_siglip2(node_modules, no_expected):
    global CFG
    out = OUT_TINY2
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED + 2)
    write_siglip2_tokenizer(out, rng)
    CFG = dict(CFG, vocab_size=SIGLIP2_VOCAB)
    model = build_model()
    export_folder(out, model, rng)
    write_configs(out, model, pad_id=GEMMA_PAD, eos_id=GEMMA_EOS)
    write_images(out)
    if no_expected:
        return
    with tempfile.TemporaryDirectory() as tmp:
        strings_file = os.path.join(tmp, "strings.json")
        with open(strings_file, "w", encoding="utf-8") as f:
            json.dump(token_strings(np.random.default_rng(SEED + 6)), f, ensure_ascii=False)
        ids = json.loads(run_node(["--ids", out, strings_file], node_modules))
    write_token_ids(out, ids)
    write_expected_scores(out, SIGLIP2_CASES, node_modules)

def main(argv):
    node_modules = argv[argv.index("--node-modules") + 1] if "--node-modules" in argv else \
        os.path.join(ROOT, "third_party", "pipelines", "node_modules")
    if "--siglip2" in argv:
        return main_siglip2(node_modules, "--no-expected" in argv)
    global CFG, LOGIT_BIAS
    base = "--base" in argv
    if base:
        # The base towers' random cosines centre near 0 (the tiny ones' near -0.35): no bias, so that the
        # sigmoid scores spread instead of all rounding to 1.
        CFG, LOGIT_BIAS = dict(CFG, **BASE_TOWERS), 0.0
    out = argv[argv.index("--base") + 1] if base else OUT_TINY
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(SEED)
    if "--tokenizer-from" in argv:  # a machine without spm_train (the GPU machine): the tokenizer made here
        import shutil
        source = argv[argv.index("--tokenizer-from") + 1]
        for name in ("spiece.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            shutil.copy(os.path.join(source, name), out)
    else:
        train_spiece(out, rng)
        write_tokenizer(out)
    model = build_model()
    export_folder(out, model, rng)
    if not base:
        write_text_batch1_variant(out)
    write_configs(out, model)
    write_images(out)
    if "--no-expected" in argv or base:
        return
    with tempfile.TemporaryDirectory() as tmp:
        strings_file = os.path.join(tmp, "strings.json")
        with open(strings_file, "w", encoding="utf-8") as f:
            json.dump(token_strings(np.random.default_rng(SEED + 5)), f, ensure_ascii=False)
        ids = json.loads(run_node(["--ids", out, strings_file], node_modules))
    write_token_ids(out, ids)
    write_expected_scores(out, CASES, node_modules)


if __name__ == "__main__":
    main(sys.argv[1:])
