#!/usr/bin/python3
"""A Florence-2 model folder with the structure onnx-community publishes (onnx-community/Florence-2-base-ft):
the five sessions transformers.js and wgi's pipeline load, with the published input/output names, dtypes and
dynamic axes, plus config.json, generation_config.json, preprocessor_config.json and the tokenizer files. The
weights are seeded random (no pretrained weights are reachable here); the modules are the project's own
(florence_siglip.py: DaViT + image projection, BART attention and decoder layers) with the BART encoder, the
shared token embedding and the cross-attention key/value outputs added here.

    /usr/bin/python3 tests/models/florence2_folder.py               # tests/data/pipelines/florence2_tiny/
    /usr/bin/python3 tests/models/florence2_folder.py --base DIR    # Florence-2-base's sizes into DIR
    options: --tokenizer-script PATH  (default tests/pipelines/make_tokenizer.mjs)
             --node-modules DIR       (transformers.js; default third_party/pipelines/node_modules)
             --tokenizer-dir DIR      (make_tokenizer.mjs's files made before: no node needed with --base
                                       --no-expected)
             --no-expected            (skip running transformers.js for expected_<task>.json)

onnx/ (all float32, opset 17, exported by Debian's torch 1.13 with do_constant_folding=False as the project's
other test models are; value names shortened by florence_siglip.shorten_value_names):
  embed_tokens.onnx           input_ids int64 [batch_size, sequence_length] -> inputs_embeds
  vision_encoder.onnx         pixel_values [batch_size, 3, height, width] -> image_features [batch_size, N, d]
  encoder_model.onnx          inputs_embeds, attention_mask int64 -> last_hidden_state
  decoder_model.onnx          encoder_attention_mask, encoder_hidden_states, inputs_embeds ->
                              logits, present.<i>.decoder.key/value, present.<i>.encoder.key/value
  decoder_with_past_model.onnx  encoder_attention_mask, inputs_embeds [batch_size, 1, d],
                              past_key_values.<i>.decoder.key/value, past_key_values.<i>.encoder.key/value ->
                              logits, present.<i>.decoder.key/value
  decoder_model_merged.onnx   the two above under an If on use_cache_branch (bool [1]), made by
                              tests/models/merged_decoder.py's merge after the with-past model gets optimum's
                              constant (empty) present.<i>.encoder.* outputs; its outputs are the no-past ones.
Dynamic axes are optimum's names (batch_size, encoder_sequence_length, decoder_sequence_length,
past_decoder_sequence_length, "past_decoder_sequence_length + 1", encoder_sequence_length_out); heads and head
size are static, as transformers.js's empty-cache construction needs (it resolves batch_size and sets every
other symbolic dim to 0).

Tiny sizes: a 64x64 image (DaViT strides 4 and 2 give 16x16 and 8x8 grids, both whole windows of 4 as 768
gives at base), 65 image tokens, d_model 4 (the 51285 x d vocabulary tables in four files set the folder's
size), 2 heads, 2 + 2 layers. The base folder (--base) has no bias search and no PyTorch check of its answers.

The LM head's bias (final_logits_bias: a buffer BART never trains, zero in the checkpoints) is drawn here, for
the tiny folder, to make random weights produce outputs that exercise the pipeline: a few tokens of each kind get a large bias (a set of GPT-2
text tokens, a set of <loc_N> tokens, EOS), the rest small noise, so greedy decoding alternates text and
<loc_N> runs and stops early with a clear argmax margin at every step. The bias is chosen by a seeded search
that runs the same greedy loop as transformers.js (forced BOS, no_repeat_ngram_size 3) in PyTorch float64 on
the committed image and the three tasks' prompts; see choose_logits_bias.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib

import numpy as np
import onnx
import torch
import torch.nn as nn
from onnx import helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import florence_siglip as fs  # noqa: E402

ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT_TINY = os.path.join(ROOT, "tests", "data", "pipelines", "florence2_tiny")
SEED = 20261203
OPSET = 17
TASKS = ("<CAPTION>", "<OD>", "<OCR_WITH_REGION>")
# Smallest top-2 gap of the greedy logits, relative to their largest magnitude, that the bias search accepts:
# float32 evaluation (transformers.js, wgi) differs from float64 by ~1e-6 relative, so no argmax can flip.
MIN_MARGIN = 5e-4
# PyTorch's default init of the cross-attention projections times this: with default-init weights the
# encoder output sways the decoder so little that the three prompts give the same greedy answer.
CROSS_ATTENTION_SPREAD = 6.0
POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding

# Token ids of BART's special tokens (the tokenizer's layout, make_tokenizer.mjs).
BOS, PAD, EOS = 0, 1, 2

CONFIGS = {
    # d_model 4: the vocabulary tables (51285 x d, in four files) dominate the folder's size.
    "tiny": dict(d_model=4, encoder_layers=2, decoder_layers=2, heads=2, ffn_dim=16, max_position_embeddings=128,
                 image_size=64, davit=dict(embed_dims=(16, 32), depths=(1, 1), num_heads=(2, 4),
                                           num_groups=(2, 4), window_size=4, patch_size=(7, 3),
                                           patch_stride=(4, 2), patch_padding=(3, 1),
                                           patch_prenorm=(False, True), mlp_ratio=2.0),
                 num_pos=12, max_new_tokens=40),
    # Florence-2-base (config.json of microsoft/Florence-2-base-ft).
    "base": dict(d_model=768, encoder_layers=6, decoder_layers=6, heads=12, ffn_dim=3072,
                 max_position_embeddings=1024, image_size=768,
                 davit=dict(embed_dims=(128, 256, 512, 1024), depths=(1, 1, 9, 1), num_heads=(4, 8, 16, 32),
                            num_groups=(4, 8, 16, 32), window_size=12, patch_size=(7, 3, 3, 3),
                            patch_stride=(4, 2, 2, 2), patch_padding=(3, 1, 1, 1),
                            patch_prenorm=(False, True, True, True), mlp_ratio=4.0),
                 num_pos=50, max_new_tokens=40),
}


# ----------------------------------------------------------------------------------------------------------
# The language model: BART encoder-decoder as Florence2LanguageForConditionalGeneration, fed inputs_embeds.
# ----------------------------------------------------------------------------------------------------------

def additive_padding_mask(mask, dtype):
    """[batch, src] int64 mask (1 keep, 0 pad) -> [batch, 1, 1, src] additive mask, as BART's _expand_mask."""
    return (1.0 - mask[:, None, None, :].to(dtype)) * torch.finfo(dtype).min


class BartEncoderLayer(nn.Module):
    def __init__(self, dim, heads, ffn_dim):
        super().__init__()
        self.self_attn = fs.BartAttention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.activation_fn = nn.GELU()
        self.fc1 = nn.Linear(dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x, mask):
        h, _ = self.self_attn(x, x, mask=mask)
        x = self.self_attn_layer_norm(x + h)
        h = self.fc2(self.activation_fn(self.fc1(x)))
        return self.final_layer_norm(x + h)


class BartEncoder(nn.Module):
    def __init__(self, dim, layers, heads, ffn_dim, max_positions):
        super().__init__()
        self.embed_positions = nn.Embedding(max_positions + POSITION_OFFSET, dim)
        self.layernorm_embedding = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([BartEncoderLayer(dim, heads, ffn_dim) for _ in range(layers)])

    def forward(self, inputs_embeds, attention_mask):
        b, t, _ = inputs_embeds.shape
        positions = torch.arange(t, dtype=torch.long, device=inputs_embeds.device).expand(b, -1)
        x = self.layernorm_embedding(inputs_embeds + self.embed_positions(positions + POSITION_OFFSET))
        mask = additive_padding_mask(attention_mask, x.dtype)
        for layer in self.layers:
            x = layer(x, mask)
        return x


class Florence2DecoderLayer(fs.BartDecoderLayer):
    """florence_siglip's BART decoder layer (same parameters) with the encoder attention mask applied and the
    cross-attention keys/values returned (present.<i>.encoder.*), or taken as given (the cached steps)."""

    def forward(self, x, self_mask, past, encoder_hidden_states, cross_kv, cross_mask):
        h, self_kv = self.self_attn(x, x, past, self_mask)
        x = self.self_attn_layer_norm(x + h)
        h, cross = self.encoder_attn(x, encoder_hidden_states, mask=cross_mask, kv=cross_kv)
        x = self.encoder_attn_layer_norm(x + h)
        h = self.fc2(self.activation_fn(self.fc1(x)))
        return self.final_layer_norm(x + h), self_kv, cross


class BartDecoder(nn.Module):
    def __init__(self, dim, layers, heads, ffn_dim, max_positions):
        super().__init__()
        self.embed_positions = nn.Embedding(max_positions + POSITION_OFFSET, dim)
        self.layernorm_embedding = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([Florence2DecoderLayer(dim, heads, ffn_dim) for _ in range(layers)])

    def forward(self, inputs_embeds, encoder_attention_mask, encoder_hidden_states=None, past=None):
        """past: None (first step: cross keys/values from encoder_hidden_states) or per layer
        (self key, self value, cross key, cross value). Returns (hidden, per layer self k, v, cross k, v)."""
        b, t, _ = inputs_embeds.shape
        past_len = 0 if past is None else past[0].shape[2]
        positions = torch.arange(past_len, past_len + t, dtype=torch.long, device=inputs_embeds.device)
        x = self.layernorm_embedding(inputs_embeds + self.embed_positions(positions.expand(b, -1) + POSITION_OFFSET))
        # Causal mask over [past; new]: new token i (position past_len + i) sees keys j <= past_len + i.
        row = torch.arange(t, device=x.device).unsqueeze(1) + past_len
        col = torch.arange(past_len + t, device=x.device).unsqueeze(0)
        self_mask = torch.zeros(t, past_len + t, dtype=x.dtype).masked_fill(col > row, torch.finfo(x.dtype).min)
        self_mask = self_mask[None, None, :, :]
        cross_mask = additive_padding_mask(encoder_attention_mask, x.dtype)
        caches = []
        for i, layer in enumerate(self.layers):
            p = None if past is None else past[4 * i:4 * i + 4]
            x, self_kv, cross = layer(x, self_mask, None if p is None else (p[0], p[1]), encoder_hidden_states,
                                      None if p is None else (p[2], p[3]), cross_mask)
            caches += [self_kv[0], self_kv[1], cross[0], cross[1]]
        return x, caches


class Florence2Language(nn.Module):
    def __init__(self, vocab, dim, encoder_layers, decoder_layers, heads, ffn_dim, max_positions):
        super().__init__()
        self.shared = nn.Embedding(vocab, dim, padding_idx=PAD)
        self.encoder = BartEncoder(dim, encoder_layers, heads, ffn_dim, max_positions)
        self.decoder = BartDecoder(dim, decoder_layers, heads, ffn_dim, max_positions)
        self.register_buffer("final_logits_bias", torch.zeros((1, vocab)))

    def lm_head(self, x):  # tied to the shared embedding, as in BART / Florence-2
        return torch.matmul(x, self.shared.weight.t()) + self.final_logits_bias


class EmbedTokens(nn.Module):
    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, input_ids):
        # No embed_scale: Florence-2 sets scale_embedding false, and BART scales only ids it embeds itself.
        return self.lang.shared(input_ids)


class EncoderModel(nn.Module):
    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, inputs_embeds, attention_mask):
        return self.lang.encoder(inputs_embeds, attention_mask)


class DecoderModel(nn.Module):
    """The first step: (encoder_attention_mask, encoder_hidden_states, inputs_embeds) -> logits and every
    layer's self and cross keys/values."""

    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, encoder_attention_mask, encoder_hidden_states, inputs_embeds):
        x, caches = self.lang.decoder(inputs_embeds, encoder_attention_mask, encoder_hidden_states)
        return (self.lang.lm_head(x), *caches)


class DecoderWithPastModel(nn.Module):
    """The cached steps: (encoder_attention_mask, inputs_embeds, past per layer) -> logits and every layer's
    self keys/values (the cross ones do not change; optimum drops them from this model)."""

    def __init__(self, lang):
        super().__init__()
        self.lang = lang

    def forward(self, encoder_attention_mask, inputs_embeds, *past):
        x, caches = self.lang.decoder(inputs_embeds, encoder_attention_mask, None, list(past))
        selfs = [c for i, c in enumerate(caches) if i % 4 < 2]
        return (self.lang.lm_head(x), *selfs)


def past_names(layers, prefix):
    return [f"{prefix}.{i}.{side}.{kv}" for i in range(layers) for side in ("decoder", "encoder")
            for kv in ("key", "value")]


# ----------------------------------------------------------------------------------------------------------
# Building the modules, choosing the logits bias.
# ----------------------------------------------------------------------------------------------------------

def build_modules(cfg, vocab):
    torch.manual_seed(SEED)
    gen = torch.Generator().manual_seed(SEED)
    davit = fs.DaViT(**cfg["davit"])
    vision = fs.Florence2VisionEncoder(davit, projection_dim=cfg["d_model"], num_pos=cfg["num_pos"]).eval()
    lang = Florence2Language(vocab, cfg["d_model"], cfg["encoder_layers"], cfg["decoder_layers"], cfg["heads"],
                             cfg["ffn_dim"], cfg["max_position_embeddings"]).eval()
    fs.randomize_norms(vision, gen)
    fs.randomize_norms(lang, gen)
    with torch.no_grad():
        for layer in lang.decoder.layers:
            attn = layer.encoder_attn
            for proj in (attn.q_proj, attn.k_proj, attn.v_proj, attn.out_proj):
                proj.weight.mul_(CROSS_ATTENTION_SPREAD)
    return vision, lang


class Vocabulary:
    """What the bias search needs from tokenizer.json: the ids of <loc_N> and of plain text tokens."""

    def __init__(self, tokenizer):
        self.size = 1 + max([*tokenizer["model"]["vocab"].values(), *(t["id"] for t in tokenizer["added_tokens"])])
        added = {t["content"]: t["id"] for t in tokenizer["added_tokens"]}
        self.loc = np.array([added[f"<loc_{i}>"] for i in range(1000)])
        special = set(added.values())
        # Word tokens with a leading space (GPT-2's byte-level U+0120) and letters only: readable captions.
        self.text = np.array(sorted(i for t, i in tokenizer["model"]["vocab"].items()
                                    if i not in special and t.startswith("\u0120") and t[1:].isalpha()
                                    and t[1:].isascii() and len(t) > 3))


def greedy(lang, memory, enc_mask, max_new_tokens, ngram=3):
    """transformers.js's greedy loop for one prompt in float64: decoder start </s>, forced BOS at the first
    step, no repeated 3-gram, forced EOS at max_length - 1, stop at EOS. Returns ids (start included) and the
    smallest top-2 logit margin of an unforced step relative to the largest logit magnitude."""
    ids = [EOS]
    past = None
    margin = math.inf
    max_length = 1 + max_new_tokens
    while True:
        x = lang.shared(torch.tensor([[ids[-1]]]))
        if past is None:
            h, caches = lang.decoder(x, enc_mask, memory)
        else:
            h, caches = lang.decoder(x, enc_mask, None, past)
        past = caches
        logits = lang.lm_head(h)[0, -1].clone()
        forced = len(ids) == 1 or len(ids) == max_length - 1
        if len(ids) == 1:
            token = BOS
        elif len(ids) == max_length - 1:
            token = EOS
        else:
            if len(ids) + 1 >= ngram:
                prefix = ids[len(ids) + 1 - ngram:]
                for j in range(len(ids) + 1 - ngram):
                    if ids[j:j + ngram - 1] == prefix:
                        logits[ids[j + ngram - 1]] = -math.inf
            top = torch.topk(logits, 2).values
            token = int(torch.argmax(logits))
            margin = min(margin, float((top[0] - top[1]) / logits[torch.isfinite(logits)].abs().max()))
        ids.append(token)
        if token == EOS and not forced or len(ids) >= max_length:
            return ids, margin


def choose_logits_bias(lang, vision, vocab, pixel_values, prompts, cfg, attempts=1000):
    """Draws final_logits_bias until greedy decoding of every prompt gives: EOS before max_new_tokens (not
    forced), a relative top-2 margin >= MIN_MARGIN at every step; <CAPTION> at least two text tokens; <OD> a run of
    >= 4 <loc_N>; <OCR_WITH_REGION> a run of >= 8 <loc_N> after a text token; and three different answers.
    Returns {task: (ids, margin)}."""
    rng = np.random.default_rng(SEED)
    loc_set = set(vocab.loc.tolist())
    with torch.no_grad():
        lang.double()
        vision.double()
        image = vision(torch.from_numpy(pixel_values).double())
        memories = []
        for ids in prompts.values():
            text = lang.shared(torch.tensor([ids]))
            embeds = torch.cat([image, text], dim=1)
            mask = torch.ones(embeds.shape[:2], dtype=torch.long)
            memories.append((lang.encoder(embeds, mask), mask))

        def longest_loc_run(seq, after_text=False):
            best = run = 0
            seen_text = False
            for t in seq:
                if t in loc_set:
                    run += 1
                    if not after_text or seen_text:
                        best = max(best, run)
                else:
                    run = 0
                    seen_text = seen_text or t not in (BOS, EOS)
            return best

        for attempt in range(attempts):
            # The favoured tokens' bias must exceed the spread of h . e over the whole vocabulary (random
            # embeddings), so that the argmax is one of a few dozen tokens with clear gaps between them.
            bias = rng.uniform(-0.5, 0.5, vocab.size)
            text = rng.choice(vocab.text, 16, replace=False)
            loc = rng.choice(vocab.loc, 32, replace=False)
            strength = rng.uniform(12.0, 20.0)
            bias[text] += strength + rng.uniform(-1.0, 1.0, text.size)
            bias[loc] += strength + rng.uniform(-1.0, 2.0) + rng.uniform(-1.0, 1.0, loc.size)
            bias[EOS] += strength + rng.uniform(1.0, 4.0)
            bias = bias.astype(np.float32).astype(np.float64)  # the exported (float32) values
            lang.final_logits_bias.copy_(torch.from_numpy(bias)[None])
            results = {}
            for task, (memory, mask) in zip(prompts, memories):
                ids, margin = greedy(lang, memory, mask, cfg["max_new_tokens"])
                ok = margin >= MIN_MARGIN and ids[-1] == EOS and len(ids) <= cfg["max_new_tokens"]
                if task == "<CAPTION>":
                    ok = ok and sum(t not in loc_set and t > EOS for t in ids) >= 2
                elif task == "<OD>":
                    ok = ok and longest_loc_run(ids) >= 4
                else:
                    ok = ok and longest_loc_run(ids, after_text=True) >= 8
                if not ok:
                    break
                results[task] = (ids, margin)
            else:
                if len({tuple(r[0]) for r in results.values()}) < len(results):
                    continue  # the prompts must make a difference
                print(f"logits bias: attempt {attempt}, margins "
                      f"{', '.join(f'{r[1]:.3g}' for r in results.values())}")
                lang.float()
                vision.float()
                return results
        raise RuntimeError(f"no logits bias in {attempts} attempts gives the wanted greedy outputs")


# ----------------------------------------------------------------------------------------------------------
# Export.
# ----------------------------------------------------------------------------------------------------------

def export(module, inputs, path, input_names, output_names, dynamic_axes):
    fs.export(module, inputs, path, OPSET, input_names, output_names, dynamic_axes)
    declare_static_output_dims(path, module, inputs, dynamic_axes)
    fs.shorten_value_names(path)
    print(f"{path}: {os.path.getsize(path)} bytes")


def declare_static_output_dims(path, module, inputs, dynamic_axes):
    """torch names the output dims it cannot infer after their node ("Transposepresent.0.decoder.key_dim_1");
    the published files declare heads, head size, vocabulary and the one-token step as numbers. Sets every
    output dim that is not a dynamic axis to its size in the traced run."""
    with torch.no_grad():
        outputs = module(*(torch.from_numpy(a) for a in inputs))
    outputs = outputs if isinstance(outputs, tuple) else (outputs,)
    model = onnx.load(path)
    for value, out in zip(model.graph.output, outputs):
        dynamic = dynamic_axes.get(value.name, {})
        for axis, dim in enumerate(value.type.tensor_type.shape.dim):
            if axis not in dynamic:
                dim.Clear()
                dim.dim_value = out.shape[axis]
    onnx.save(model, path)


def add_constant_outputs(with_past, no_past):
    """optimum's _unify_onnx_outputs (strict=False): the with-past model gets the no-past model's outputs in
    its order, the ones it lacks (present.<i>.encoder.*) as empty constants of shape [0, <static dims>, 1 for
    each dynamic one], and every output takes the no-past model's type (the If's outputs are those)."""
    have = {o.name for o in with_past.graph.output}
    for o in no_past.graph.output:
        if o.name in have:
            continue
        dims = [d.dim_value if d.HasField("dim_value") else 1 for d in o.type.tensor_type.shape.dim]
        dims[0] = 0
        value = helper.make_tensor("const_tensor", o.type.tensor_type.elem_type, dims, [])
        with_past.graph.node.append(helper.make_node("Constant", [], [o.name], name=f"Constant_{o.name}",
                                                     value=value))
    del with_past.graph.output[:]
    with_past.graph.output.extend(no_past.graph.output)


def export_folder(out, cfg, vision, lang, pixel_values):
    onnx_dir = os.path.join(out, "onnx")
    os.makedirs(onnx_dir, exist_ok=True)
    d, layers, heads = cfg["d_model"], cfg["decoder_layers"], cfg["heads"]
    rng = np.random.default_rng(SEED + 1)
    batch, src, tgt, past_len = 2, 7, 3, 5  # export-time example sizes (all dynamic but the one-token step)
    ids = rng.integers(0, lang.shared.num_embeddings, (batch, tgt)).astype(np.int64)
    export(EmbedTokens(lang), [ids], os.path.join(onnx_dir, "embed_tokens.onnx"), ["input_ids"], ["inputs_embeds"],
           {"input_ids": {0: "batch_size", 1: "sequence_length"},
            "inputs_embeds": {0: "batch_size", 1: "sequence_length"}})
    export(vision, [np.repeat(pixel_values, 2, axis=0)], os.path.join(onnx_dir, "vision_encoder.onnx"),
           ["pixel_values"], ["image_features"],
           {"pixel_values": {0: "batch_size", 2: "height", 3: "width"},
            "image_features": {0: "batch_size", 1: "image_sequence_length"}})
    embeds = rng.uniform(-1, 1, (batch, src, d)).astype(np.float32)
    mask = np.ones((batch, src), np.int64)
    mask[1, -2:] = 0  # padding in the second row: the masks are used
    export(EncoderModel(lang), [embeds, mask], os.path.join(onnx_dir, "encoder_model.onnx"),
           ["inputs_embeds", "attention_mask"], ["last_hidden_state"],
           {"inputs_embeds": {0: "batch_size", 1: "encoder_sequence_length"},
            "attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
            "last_hidden_state": {0: "batch_size", 1: "encoder_sequence_length"}})

    present = past_names(layers, "present")
    past = past_names(layers, "past_key_values")
    hidden = rng.uniform(-1, 1, (batch, src, d)).astype(np.float32)
    dec_embeds = rng.uniform(-1, 1, (batch, tgt, d)).astype(np.float32)
    no_past_path = os.path.join(onnx_dir, "decoder_model.onnx")
    axes = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
            "encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"},
            "inputs_embeds": {0: "batch_size", 1: "decoder_sequence_length"},
            "logits": {0: "batch_size", 1: "decoder_sequence_length"}}
    axes.update({n: {0: "batch_size", 2: "encoder_sequence_length" if ".encoder." in n else "decoder_sequence_length"}
                 for n in present})
    export(DecoderModel(lang), [mask, hidden, dec_embeds], no_past_path,
           ["encoder_attention_mask", "encoder_hidden_states", "inputs_embeds"], ["logits"] + present, axes)

    with_past_path = os.path.join(onnx_dir, "decoder_with_past_model.onnx")
    head_dim = d // heads
    past_values = [rng.uniform(-1, 1, (batch, heads, src if ".encoder." in n else past_len, head_dim))
                   .astype(np.float32) for n in past]
    one = rng.uniform(-1, 1, (batch, 1, d)).astype(np.float32)
    self_present = [n for n in present if ".decoder." in n]
    axes = {"encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"},
            "inputs_embeds": {0: "batch_size"}, "logits": {0: "batch_size"}}
    axes.update({n: {0: "batch_size", 2: "encoder_sequence_length_out" if ".encoder." in n
                     else "past_decoder_sequence_length"} for n in past})
    axes.update({n: {0: "batch_size", 2: "past_decoder_sequence_length + 1"} for n in self_present})
    export(DecoderWithPastModel(lang), [mask, one] + past_values, with_past_path,
           ["encoder_attention_mask", "inputs_embeds"] + past, ["logits"] + self_present, axes)

    import merged_decoder  # tests/models/merged_decoder.py: optimum's merge_decoders
    no_past, with_past = onnx.load(no_past_path), onnx.load(with_past_path)
    add_constant_outputs(with_past, no_past)
    merged = merged_decoder.merge(no_past, with_past)
    merged_path = os.path.join(onnx_dir, "decoder_model_merged.onnx")
    onnx.save(merged, merged_path)
    print(f"{merged_path}: {os.path.getsize(merged_path)} bytes")


def published_interfaces(cfg, vocab_size):
    """{file: (inputs, outputs)} as (name, dtype, dims) in the published files' terms (the base model's listing
    with D, H, L, V in place of 768, 12, 6, 51289)."""
    d, heads, layers = cfg["d_model"], cfg["heads"], cfg["decoder_layers"]
    kv = lambda seq: ["batch_size", heads, seq, d // heads]  # noqa: E731
    f32, i64 = onnx.TensorProto.FLOAT, onnx.TensorProto.INT64
    enc_mask = ("encoder_attention_mask", i64, ["batch_size", "encoder_sequence_length"])
    past = [(n, f32, kv("past_decoder_sequence_length" if ".decoder." in n else "encoder_sequence_length_out"))
            for n in past_names(layers, "past_key_values")]
    present = [(n, f32, kv("decoder_sequence_length" if ".decoder." in n else "encoder_sequence_length"))
               for n in past_names(layers, "present")]
    decoder_in = [enc_mask, ("encoder_hidden_states", f32, ["batch_size", "encoder_sequence_length", d]),
                  ("inputs_embeds", f32, ["batch_size", "decoder_sequence_length", d])]
    decoder_out = [("logits", f32, ["batch_size", "decoder_sequence_length", vocab_size])] + present
    return {
        "embed_tokens": ([("input_ids", i64, ["batch_size", "sequence_length"])],
                         [("inputs_embeds", f32, ["batch_size", "sequence_length", d])]),
        "vision_encoder": ([("pixel_values", f32, ["batch_size", 3, "height", "width"])],
                           [("image_features", f32, ["batch_size", "image_sequence_length", d])]),
        "encoder_model": ([("inputs_embeds", f32, ["batch_size", "encoder_sequence_length", d]),
                           ("attention_mask", i64, ["batch_size", "encoder_sequence_length"])],
                          [("last_hidden_state", f32, ["batch_size", "encoder_sequence_length", d])]),
        "decoder_model": (decoder_in, decoder_out),
        "decoder_with_past_model": (
            [enc_mask, ("inputs_embeds", f32, ["batch_size", 1, d])] + past,
            [("logits", f32, ["batch_size", 1, vocab_size])] +
            [(n, f32, kv("past_decoder_sequence_length + 1")) for n, _, _ in present if ".decoder." in n]),
        "decoder_model_merged": (decoder_in + past + [("use_cache_branch", onnx.TensorProto.BOOL, [1])],
                                 decoder_out),
    }


def check_interfaces(onnx_dir, expected):
    """Every session's graph inputs (initializers aside) and outputs, in order, against `expected`."""
    def described(values, skip=()):
        return [(v.name, v.type.tensor_type.elem_type,
                 [x.dim_param if x.HasField("dim_param") else x.dim_value for x in v.type.tensor_type.shape.dim])
                for v in values if v.name not in skip]

    for name, (inputs, outputs) in expected.items():
        graph = onnx.load(os.path.join(onnx_dir, f"{name}.onnx")).graph
        found = (described(graph.input, {t.name for t in graph.initializer}), described(graph.output))
        for kind, want, got in zip(("inputs", "outputs"), (inputs, outputs), found):
            if [tuple(x) for x in got] != [tuple(x) for x in want]:
                raise RuntimeError(f"{name}.onnx {kind}:\n  found    {got}\n  expected {want}")
    print(f"{onnx_dir}: the {len(expected)} sessions have the published inputs and outputs")


# ----------------------------------------------------------------------------------------------------------
# The folder's JSON files and the test image.
# ----------------------------------------------------------------------------------------------------------

def write_configs(out, cfg, vocab_size, tokenizer_dir):
    d = cfg["d_model"]
    davit = cfg["davit"]
    num_tokens = (cfg["image_size"] // int(np.prod(davit["patch_stride"]))) ** 2 + 1
    text_config = {
        "model_type": "florence2_language", "vocab_size": vocab_size, "d_model": d,
        "encoder_layers": cfg["encoder_layers"], "decoder_layers": cfg["decoder_layers"],
        "encoder_attention_heads": cfg["heads"], "decoder_attention_heads": cfg["heads"],
        "encoder_ffn_dim": cfg["ffn_dim"], "decoder_ffn_dim": cfg["ffn_dim"], "activation_function": "gelu",
        "max_position_embeddings": cfg["max_position_embeddings"], "scale_embedding": False,
        "add_bias_logits": False, "add_final_layer_norm": False, "normalize_before": False,
        "bos_token_id": BOS, "pad_token_id": PAD, "eos_token_id": EOS, "decoder_start_token_id": EOS,
        "forced_eos_token_id": EOS, "is_encoder_decoder": True, "no_repeat_ngram_size": 3, "num_beams": 3,
        "early_stopping": True, "use_cache": True,
    }
    vision_config = {
        "model_type": "davit", "dim_embed": list(davit["embed_dims"]), "depths": list(davit["depths"]),
        "num_heads": list(davit["num_heads"]), "num_groups": list(davit["num_groups"]),
        "window_size": davit["window_size"], "patch_size": list(davit["patch_size"]),
        "patch_stride": list(davit["patch_stride"]), "patch_padding": list(davit["patch_padding"]),
        "patch_prenorm": list(davit["patch_prenorm"]), "mlp_ratio": davit["mlp_ratio"], "projection_dim": d,
        "image_feature_source": ["spatial_avg_pool", "temporal_avg_pool"],
        "image_pos_embed": {"type": "learned_abs_2d", "max_pos_embeddings": cfg["num_pos"]},
        "visual_temporal_embedding": {"type": "COSINE", "max_temporal_embeddings": 100},
    }
    config = {
        "architectures": ["Florence2ForConditionalGeneration"], "model_type": "florence2",
        "is_encoder_decoder": True, "vocab_size": vocab_size, "projection_dim": d, "bos_token_id": BOS,
        "pad_token_id": PAD, "eos_token_id": EOS, "decoder_start_token_id": EOS, "torch_dtype": "float32",
        "text_config": text_config, "vision_config": vision_config,
    }
    generation = {"bos_token_id": BOS, "decoder_start_token_id": EOS, "eos_token_id": EOS,
                  "forced_bos_token_id": BOS, "forced_eos_token_id": EOS, "pad_token_id": PAD,
                  "no_repeat_ngram_size": 3, "num_beams": 3, "early_stopping": True}
    with open(os.path.join(tokenizer_dir, "preprocessor_config.json")) as f:
        preprocessor = json.load(f)
    size = {"height": cfg["image_size"], "width": cfg["image_size"]}
    preprocessor.update(size=size, crop_size=size, image_seq_length=num_tokens)
    for name, value in (("config.json", config), ("generation_config.json", generation),
                        ("preprocessor_config.json", preprocessor)):
        with open(os.path.join(out, name), "w") as f:
            json.dump(value, f, indent=2)
            f.write("\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(tokenizer_dir, name), os.path.join(out, name))


def write_png(path, rgb):
    """8-bit RGB PNG (no filter, one IDAT) with the standard library: numpy uint8 [height, width, 3]."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))


def test_image(size):
    """Seeded smooth colour blobs on a gradient with noise: varied but compressible."""
    rng = np.random.default_rng(SEED + 2)
    y, x = np.mgrid[0:size, 0:size] / size
    img = np.stack([x, y, 1 - x * y], axis=-1) * 120
    for _ in range(6):
        cy, cx, r = rng.uniform(0, 1, 3) * [1, 1, 0.3] + [0, 0, 0.05]
        img += np.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * r * r))[..., None] * rng.uniform(-120, 120, 3)
    img += rng.normal(0, 8, img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def pixel_values_of(rgb, preprocessor):
    """CLIPImageProcessor on an image already at its size: rescale by 1/255, normalize (float32 as
    transformers.js computes it), HWC -> 1CHW."""
    x = rgb.astype(np.float32) * np.float32(preprocessor["rescale_factor"])
    x = (x - np.array(preprocessor["image_mean"], np.float32)) / np.array(preprocessor["image_std"], np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None]).astype(np.float32)


# ----------------------------------------------------------------------------------------------------------

def run_node(script, args, node_modules):
    out = subprocess.run(["node", script, *args], check=True, capture_output=True, text=True,
                         env=dict(os.environ, WGI_NODE_MODULES=node_modules))
    return out.stdout


def main(argv):
    base_dir = argv[argv.index("--base") + 1] if "--base" in argv else None
    cfg = CONFIGS["base" if base_dir else "tiny"]
    out = os.path.abspath(base_dir or OUT_TINY)
    tokenizer_script = argv[argv.index("--tokenizer-script") + 1] if "--tokenizer-script" in argv else \
        os.path.join(ROOT, "tests", "pipelines", "make_tokenizer.mjs")
    node_modules = argv[argv.index("--node-modules") + 1] if "--node-modules" in argv else \
        os.path.join(ROOT, "third_party", "pipelines", "node_modules")
    js = os.path.join(ROOT, "tests", "pipelines", "florence2_transformersjs.mjs")
    os.makedirs(out, exist_ok=True)

    with tempfile.TemporaryDirectory() as made:
        # --tokenizer-dir: the files make_tokenizer.mjs wrote elsewhere (a machine without node).
        tokenizer_dir = argv[argv.index("--tokenizer-dir") + 1] if "--tokenizer-dir" in argv else made
        if tokenizer_dir == made:
            subprocess.run(["node", tokenizer_script, tokenizer_dir], check=True,
                           env=dict(os.environ, WGI_PIPELINES_DIR=os.path.dirname(node_modules)))
        with open(os.path.join(tokenizer_dir, "tokenizer.json")) as f:
            vocab = Vocabulary(json.load(f))
        write_configs(out, cfg, vocab.size, tokenizer_dir)
    with open(os.path.join(out, "preprocessor_config.json")) as f:
        preprocessor = json.load(f)

    rgb = test_image(cfg["image_size"])
    image_path = os.path.join(out, "image.png")
    write_png(image_path, rgb)
    pixel_values = pixel_values_of(rgb, preprocessor)

    vision, lang = build_modules(cfg, vocab.size)
    if base_dir:  # random weights of a full-size model: no bias search (a greedy loop of 40 steps per try)
        results = None
    else:
        # The prompts' ids as transformers.js's processor makes them (the bias search decodes from them).
        prompts = json.loads(run_node(js, ["--prompt-ids", out, *TASKS], node_modules))
        results = choose_logits_bias(lang, vision, vocab, pixel_values, prompts, cfg)
    export_folder(out, cfg, vision, lang, pixel_values)
    check_interfaces(os.path.join(out, "onnx"), published_interfaces(cfg, vocab.size))
    if "--no-expected" in argv:
        return
    print(run_node(js, ["--compare-decoders", out], node_modules).splitlines()[-1])  # raises unless bitwise equal
    for task in TASKS:
        name = task.strip("<>").lower()
        text = run_node(js, [out, image_path, task, str(cfg["max_new_tokens"])], node_modules)
        answer = json.loads(text)
        if results is not None and answer["generated_ids"] != results[task][0]:
            raise RuntimeError(f"{task}: transformers.js generated {answer['generated_ids']}, PyTorch float64 "
                               f"{results[task][0]}")
        with open(os.path.join(out, f"expected_{name}.json"), "w") as f:
            f.write(text)
        print(f"{task}: {answer['generated_text']!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
