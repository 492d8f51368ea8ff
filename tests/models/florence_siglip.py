#!/usr/bin/python3
"""The target architectures as test models: Florence-2's vision tower (DaViT + its image projection), the
SigLIP vision encoder and Florence-2's BART decoder step with a KV cache.

Tiny configs (CI, committed under tests/data/models/<name>_tiny_opset13|17) run in seconds on the CPU
adapters (MLP ratio 2 instead of 4 to keep them small). The base configs (`--large`) are benchmark models
written into build/models-large/ (git-ignored, never committed) with seeded inputs and float64 references.
Every model is exported by Debian's torch 1.13 (opsets 13 and 17; the base ones at 17, or 13 with --opset13)
with dynamic batch (and sequence) axes and do_constant_folding=False, so that wgi has to fold the shape
subgraphs itself; intermediate value names are then shortened (see shorten_value_names). References: the same
module in float64 (module.double()) on the float32 inputs.

    /usr/bin/python3 tests/models/generate_models.py            # every committed test model, these included
    /usr/bin/python3 tests/models/florence_siglip.py            # only the ones of this file
    /usr/bin/python3 tests/models/florence_siglip.py --large    # base configs -> build/models-large/
    python3 tests/models/fill_weights.py build/models-large     # rebuild their weight files (anywhere)
    python3 tests/models/check_with_wgi.py --backend vulkan build/models-large/*_opset17

Base models keep their large weights in model.onnx.data, generated from a recorded recipe (weights.json), so
a folder without its data file is a few MB and fill_weights.py completes it on any machine with numpy.

The modules follow the public reference implementations (Florence-2's modeling_florence2.py for DaViT and the
BART decoder, Hugging Face's SiglipVisionTransformer) without depending on them; parameter names match where
that costs nothing. Weights are random (PyTorch's default init, LayerNorm affine parameters perturbed so that
they are exercised): the tests check numerics, not semantics.

The BART decoder is one ONNX file for both the prompt step and the cached steps: it is exported at
past_len > 0 and new_tokens > 1 (so the causal-mask subgraph is traced, and it reduces to an all-zero mask
for one new token) with past_len and new_tokens as symbolic dims. The prompt step feeds past key/values with
past_len = 0 (empty tensors). The greedy-decoding files (greedy_*.npy, next to the opset-17 decoder) hold the
reference of tests/gpu/test_decoder_loop.cpp. Cross-attention keys/values are computed from the
encoder_hidden_states input in every step (one self-contained step model); the benchmark set adds
bart_decoder_cached_cross_base, whose inputs are the per-layer cross keys/values instead (what Florence-2's
generation does after the first step; computing them costs ~8 GFLOP per step at src_len 590).
"""
import math
import inspect
import os
import sys
from collections import OrderedDict

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "data", "models")
OUT_LARGE = os.path.join(HERE, "..", "..", "build", "models-large")

# Seed of this file's models, independent of generate_models.py's stream so its models stay byte-identical.
SEED = 20261201




# ----------------------------------------------------------------------------------------------------------
# DaViT (Ding et al. 2022) as Florence-2's vision tower, and Florence-2's image projection.
# ----------------------------------------------------------------------------------------------------------

class MySequential(nn.Sequential):
    """Sequential over modules taking and returning (x, size)."""

    def forward(self, *inputs):
        for module in self._modules.values():
            inputs = module(*inputs) if isinstance(inputs, tuple) else module(inputs)
        return inputs


class PreNorm(nn.Module):
    def __init__(self, norm, fn):
        super().__init__()
        self.norm = norm
        self.fn = fn

    def forward(self, x, size):
        shortcut = x
        x, size = self.fn(self.norm(x) if self.norm is not None else x, size)
        return shortcut + x, size


class Mlp(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.net = nn.Sequential(OrderedDict([("fc1", nn.Linear(dim, hidden)), ("act", nn.GELU()),
                                              ("fc2", nn.Linear(hidden, dim))]))

    def forward(self, x, size):
        return self.net(x), size


class DepthWiseConv2d(nn.Module):
    """ConvPosEnc: a 3x3 depthwise conv over the token grid (used as a residual through PreNorm)."""

    def __init__(self, dim, kernel_size=3, padding=1, stride=1):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, kernel_size, stride=stride, padding=padding, groups=dim)

    def forward(self, x, size):
        b, n, c = x.shape
        h, w = size
        x = self.dw(x.transpose(1, 2).view(b, c, h, w))
        size = (x.size(-2), x.size(-1))
        return x.flatten(2).transpose(1, 2), size


class ConvEmbed(nn.Module):
    """Patch embedding / downsampling conv with a LayerNorm before (pre_norm) or after it."""

    def __init__(self, patch_size, in_chans, embed_dim, stride, padding, pre_norm):
        super().__init__()
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=stride, padding=padding)
        self.norm = nn.LayerNorm(in_chans if pre_norm else embed_dim)
        self.pre_norm = pre_norm

    def forward(self, x, size):
        h, w = size
        if x.dim() == 3:
            if self.pre_norm:
                x = self.norm(x)
            x = x.transpose(1, 2).reshape(x.shape[0], -1, h, w)  # b (h w) c -> b c h w
        x = self.proj(x)
        _, _, h, w = x.shape
        x = x.flatten(2).transpose(1, 2)  # b c h w -> b (h w) c
        if not self.pre_norm:
            x = self.norm(x)
        return x, (h, w)


class ChannelAttention(nn.Module):
    """Attention over channels: per group, softmax(q^T k / sqrt(N)) applied to v^T."""

    def __init__(self, dim, groups):
        super().__init__()
        self.groups = groups
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, size):
        b, n, c = x.shape
        qkv = self.qkv(x).reshape(b, n, 3, self.groups, c // self.groups).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        q = q * (float(n) ** -0.5)
        attention = (q.transpose(-1, -2) @ k).softmax(dim=-1)
        x = (attention @ v.transpose(-1, -2)).transpose(-1, -2)
        x = x.transpose(1, 2).reshape(b, n, c)
        return self.proj(x), size


def window_partition(x, window_size: int):
    b, h, w, c = x.shape
    x = x.view(b, h // window_size, window_size, w // window_size, window_size, c)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, window_size, window_size, c)


def window_reverse(windows, batch_size: int, window_size: int, h: int, w: int):
    x = windows.view(batch_size, h // window_size, w // window_size, window_size, window_size, -1)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(batch_size, h, w, -1)


class WindowAttention(nn.Module):
    """Multi-head self-attention inside non-overlapping windows; the grid is zero-padded to whole windows."""

    def __init__(self, dim, num_heads, window_size):
        super().__init__()
        self.window_size = window_size
        self.num_heads = num_heads
        self.scale = (dim // num_heads) ** -0.5
        self.qkv = nn.Linear(dim, dim * 3)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, size):
        h, w = size
        b, _, c = x.shape
        ws = self.window_size
        x = x.view(b, h, w, c)
        pad_r = (ws - w % ws) % ws
        pad_b = (ws - h % ws) % ws
        x = F.pad(x, (0, 0, 0, pad_r, 0, pad_b))
        _, hp, wp, _ = x.shape
        x = window_partition(x, ws).view(-1, ws * ws, c)
        bw, n, _ = x.shape
        qkv = self.qkv(x).reshape(bw, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q * self.scale) @ k.transpose(-2, -1)).softmax(dim=-1)
        x = self.proj((attn @ v).transpose(1, 2).reshape(bw, n, c))
        x = window_reverse(x.view(-1, ws, ws, c), b, ws, hp, wp)
        if pad_r > 0 or pad_b > 0:
            x = x[:, :h, :w, :].contiguous()
        return x.view(b, h * w, c), size


class SpatialBlock(nn.Module):
    def __init__(self, dim, num_heads, window_size, mlp_ratio=4.0):
        super().__init__()
        self.conv1 = PreNorm(None, DepthWiseConv2d(dim))
        self.window_attn = PreNorm(nn.LayerNorm(dim), WindowAttention(dim, num_heads, window_size))
        self.conv2 = PreNorm(None, DepthWiseConv2d(dim))
        self.ffn = PreNorm(nn.LayerNorm(dim), Mlp(dim, int(dim * mlp_ratio)))

    def forward(self, x, size):
        x, size = self.conv1(x, size)
        x, size = self.window_attn(x, size)
        x, size = self.conv2(x, size)
        return self.ffn(x, size)


class ChannelBlock(nn.Module):
    def __init__(self, dim, groups, mlp_ratio=4.0):
        super().__init__()
        self.conv1 = PreNorm(None, DepthWiseConv2d(dim))
        self.channel_attn = PreNorm(nn.LayerNorm(dim), ChannelAttention(dim, groups))
        self.conv2 = PreNorm(None, DepthWiseConv2d(dim))
        self.ffn = PreNorm(nn.LayerNorm(dim), Mlp(dim, int(dim * mlp_ratio)))

    def forward(self, x, size):
        x, size = self.conv1(x, size)
        x, size = self.channel_attn(x, size)
        x, size = self.conv2(x, size)
        return self.ffn(x, size)


class DaViT(nn.Module):
    def __init__(self, embed_dims, depths, num_heads, num_groups, window_size, patch_size, patch_stride,
                 patch_padding, patch_prenorm, mlp_ratio=4.0, in_chans=3):
        super().__init__()
        self.embed_dims = embed_dims
        convs, blocks = [], []
        for i, dim in enumerate(embed_dims):
            convs.append(ConvEmbed(patch_size[i], in_chans if i == 0 else embed_dims[i - 1], dim,
                                   patch_stride[i], patch_padding[i], patch_prenorm[i]))
            blocks.append(MySequential(*[
                MySequential(OrderedDict([
                    ("spatial_block", SpatialBlock(dim, num_heads[i], window_size, mlp_ratio)),
                    ("channel_block", ChannelBlock(dim, num_groups[i], mlp_ratio))]))
                for _ in range(depths[i])]))
        self.convs = nn.ModuleList(convs)
        self.blocks = nn.ModuleList(blocks)

    def forward_features_unpool(self, x):
        size = (x.size(2), x.size(3))
        for conv, block in zip(self.convs, self.blocks):
            x, size = conv(x, size)
            x, size = block(x, size)
        return x


class LearnedAbsolutePositionEmbedding2D(nn.Module):
    def __init__(self, embedding_dim, num_pos):
        super().__init__()
        self.row_embeddings = nn.Embedding(num_pos, embedding_dim // 2)
        self.column_embeddings = nn.Embedding(num_pos, embedding_dim - (embedding_dim // 2))

    def forward(self, x):  # x: [b, h, w, c] -> [b, h, w, c]
        height, width = x.shape[-3:-1]
        x_emb = self.column_embeddings(torch.arange(width, device=x.device))
        y_emb = self.row_embeddings(torch.arange(height, device=x.device))
        pos = torch.cat([x_emb.unsqueeze(0).repeat(height, 1, 1), y_emb.unsqueeze(1).repeat(1, width, 1)], dim=-1)
        pos = pos.permute(2, 0, 1).unsqueeze(0).repeat(x.shape[0], 1, 1, 1)
        return pos.permute(0, 2, 3, 1)


class PositionalEmbeddingCosine1D(nn.Module):
    def __init__(self, embed_dim, max_seq_len):
        super().__init__()
        denominator = torch.exp(-math.log(10000) * torch.arange(0, embed_dim, 2) / embed_dim)
        frequencies = torch.arange(0, max_seq_len).reshape(max_seq_len, 1) * denominator
        table = torch.zeros((max_seq_len, embed_dim))
        table[:, 0::2] = torch.sin(frequencies)
        table[:, 1::2] = torch.cos(frequencies)
        self.register_buffer("pos_idx_to_embed", table)

    def forward(self, seq_embeds):  # [b, t, c] -> [1, t, c]
        pos = self.pos_idx_to_embed[0:seq_embeds.size(-2), :]
        return pos.view((1, pos.size(0), pos.size(1)))


class Florence2VisionEncoder(nn.Module):
    """pixel_values -> image_features as Florence2ForConditionalGeneration._encode_image (one frame): DaViT's
    unpooled tokens + learned 2-D positions + temporal embedding, [spatial mean; tokens], projection, LayerNorm."""

    def __init__(self, davit, projection_dim, num_pos, max_temporal=100):
        super().__init__()
        self.vision_tower = davit
        dim = davit.embed_dims[-1]
        self.image_pos_embed = LearnedAbsolutePositionEmbedding2D(dim, num_pos)
        self.visual_temporal_embed = PositionalEmbeddingCosine1D(dim, max_temporal)
        self.image_projection = nn.Parameter(torch.randn(dim, projection_dim) * dim ** -0.5)
        self.image_proj_norm = nn.LayerNorm(projection_dim)

    def forward(self, pixel_values):
        batch_size, t = pixel_values.shape[0], 1
        x = self.vision_tower.forward_features_unpool(pixel_values)
        x = x.view(batch_size * t, -1, x.shape[-1])
        num_tokens = x.shape[-2]
        h, w = int(num_tokens ** 0.5), int(num_tokens ** 0.5)
        x = x.view(batch_size * t, h, w, x.shape[-1])
        x = x + self.image_pos_embed(x)
        x = x.view(batch_size, t * h * w, x.shape[-1])
        temporal = self.visual_temporal_embed(x.view(batch_size, t, -1, x.shape[-1])[:, :, 0])
        x = x.view(batch_size, t, -1, x.shape[-1]) + temporal.view(1, t, 1, x.shape[-1])
        spatial_avg_pool = x.view(batch_size, t, -1, x.shape[-1]).mean(dim=2)
        temporal_avg_pool = x.view(batch_size, t, -1, x.shape[-1]).mean(dim=1)
        x = torch.cat([spatial_avg_pool, temporal_avg_pool], dim=1)
        x = x @ self.image_projection
        return self.image_proj_norm(x)


def florence2_vision(tiny):
    if tiny:
        davit = DaViT(embed_dims=(16, 32), depths=(1, 1), num_heads=(2, 4), num_groups=(2, 4), window_size=4,
                      patch_size=(7, 3), patch_stride=(4, 2), patch_padding=(3, 1), patch_prenorm=(False, True),
                      mlp_ratio=2.0)
        return Florence2VisionEncoder(davit, projection_dim=24, num_pos=8)
    # Florence-2-base: DaViT-base, 768x768 input -> 24x24 tokens of 1024 channels -> 577 x 768.
    davit = DaViT(embed_dims=(128, 256, 512, 1024), depths=(1, 1, 9, 1), num_heads=(4, 8, 16, 32),
                  num_groups=(4, 8, 16, 32), window_size=12, patch_size=(7, 3, 3, 3), patch_stride=(4, 2, 2, 2),
                  patch_padding=(3, 1, 1, 1), patch_prenorm=(False, True, True, True))
    return Florence2VisionEncoder(davit, projection_dim=768, num_pos=50)


# ----------------------------------------------------------------------------------------------------------
# SigLIP vision encoder (Zhai et al. 2023; Hugging Face SiglipVisionTransformer).
# ----------------------------------------------------------------------------------------------------------

class SiglipMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU(approximate="tanh")
        self.fc2 = nn.Linear(hidden, dim)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class SiglipAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scale = self.head_dim ** -0.5
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):
        b, t, c = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        attn = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * self.scale, dim=-1)
        y = torch.matmul(attn, v).transpose(1, 2).contiguous().reshape(b, t, c)
        return self.out_proj(y)


class SiglipEncoderLayer(nn.Module):
    def __init__(self, dim, heads, mlp_dim, eps):
        super().__init__()
        self.layer_norm1 = nn.LayerNorm(dim, eps=eps)
        self.self_attn = SiglipAttention(dim, heads)
        self.layer_norm2 = nn.LayerNorm(dim, eps=eps)
        self.mlp = SiglipMLP(dim, mlp_dim)

    def forward(self, x):
        x = x + self.self_attn(self.layer_norm1(x))
        return x + self.mlp(self.layer_norm2(x))


class SiglipMultiheadAttentionPoolingHead(nn.Module):
    def __init__(self, dim, heads, mlp_dim, eps):
        super().__init__()
        self.probe = nn.Parameter(torch.randn(1, 1, dim))
        self.attention = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.layernorm = nn.LayerNorm(dim, eps=eps)
        self.mlp = SiglipMLP(dim, mlp_dim)

    def forward(self, x):
        probe = self.probe.repeat(x.shape[0], 1, 1)
        x = self.attention(probe, x, x)[0]
        x = x + self.mlp(self.layernorm(x))
        return x[:, 0]


class SiglipVisionTransformer(nn.Module):
    def __init__(self, image_size, patch_size, dim, layers, heads, mlp_dim, eps=1e-6):
        super().__init__()
        self.patch_embedding = nn.Conv2d(3, dim, kernel_size=patch_size, stride=patch_size)  # "valid"
        num_patches = (image_size // patch_size) ** 2
        self.position_embedding = nn.Embedding(num_patches, dim)
        self.register_buffer("position_ids", torch.arange(num_patches).expand((1, -1)), persistent=False)
        self.layers = nn.ModuleList([SiglipEncoderLayer(dim, heads, mlp_dim, eps) for _ in range(layers)])
        self.post_layernorm = nn.LayerNorm(dim, eps=eps)
        self.head = SiglipMultiheadAttentionPoolingHead(dim, heads, mlp_dim, eps)

    def forward(self, pixel_values):
        x = self.patch_embedding(pixel_values).flatten(2).transpose(1, 2)
        x = x + self.position_embedding(self.position_ids)
        for layer in self.layers:
            x = layer(x)
        x = self.post_layernorm(x)
        return x, self.head(x)


def siglip_vision(tiny):
    if tiny:
        return SiglipVisionTransformer(image_size=32, patch_size=8, dim=32, layers=2, heads=2, mlp_dim=64)
    return SiglipVisionTransformer(image_size=224, patch_size=16, dim=768, layers=12, heads=12, mlp_dim=3072)


# ----------------------------------------------------------------------------------------------------------
# BART decoder step as Florence-2's language model uses it (post-LN, learned positions with offset 2).
# ----------------------------------------------------------------------------------------------------------

class BartAttention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = dim // heads
        self.scaling = self.head_dim ** -0.5
        self.k_proj, self.v_proj, self.q_proj, self.out_proj = (nn.Linear(dim, dim) for _ in range(4))

    def _shape(self, x, b):
        return x.view(b, -1, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, kv_source, past=None, mask=None, kv=None):
        """Returns the attention output and the (key, value) it used: projected from `kv_source` with `past`
        prepended, or `kv` as given (cached cross-attention)."""
        b, t, c = x.shape
        q = self._shape(self.q_proj(x) * self.scaling, b)
        if kv is not None:
            k, v = kv
        else:
            k = self._shape(self.k_proj(kv_source), b)
            v = self._shape(self.v_proj(kv_source), b)
        if past is not None:
            k = torch.cat([past[0], k], dim=2)
            v = torch.cat([past[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(2, 3))
        if mask is not None:
            scores = scores + mask
        y = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, t, c)
        return self.out_proj(y), (k, v)


class BartDecoderLayer(nn.Module):
    def __init__(self, dim, heads, ffn_dim):
        super().__init__()
        self.self_attn = BartAttention(dim, heads)
        self.self_attn_layer_norm = nn.LayerNorm(dim)
        self.encoder_attn = BartAttention(dim, heads)
        self.encoder_attn_layer_norm = nn.LayerNorm(dim)
        self.activation_fn = nn.GELU()
        self.fc1 = nn.Linear(dim, ffn_dim)
        self.fc2 = nn.Linear(ffn_dim, dim)
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, x, encoder_hidden_states, past, mask, cross_kv=None):
        h, present = self.self_attn(x, x, past, mask)
        x = self.self_attn_layer_norm(x + h)
        h, _ = self.encoder_attn(x, encoder_hidden_states, kv=cross_kv)
        x = self.encoder_attn_layer_norm(x + h)
        h = self.fc2(self.activation_fn(self.fc1(x)))
        return self.final_layer_norm(x + h), present


class BartDecoderStep(nn.Module):
    """(input_ids, encoder_hidden_states, past k/v per layer) -> (logits, present k/v per layer).

    With cross_kv_inputs, the cross-attention keys/values of every layer are inputs instead (computed once per
    image, as Florence-2's generation caches them) and encoder_hidden_states is not: (input_ids, per layer past
    self k, v, cross k, v) -> (logits, present self k/v per layer)."""

    POSITION_OFFSET = 2  # BartLearnedPositionalEmbedding

    def __init__(self, vocab, dim, layers, heads, ffn_dim, max_positions, scale_embedding, cross_kv_inputs=False):
        super().__init__()
        self.layers_count = layers
        self.cross_kv_inputs = cross_kv_inputs
        self.embed_tokens = nn.Embedding(vocab, dim)
        self.embed_scale = math.sqrt(dim) if scale_embedding else 1.0
        self.embed_positions = nn.Embedding(max_positions + self.POSITION_OFFSET, dim)
        self.layernorm_embedding = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([BartDecoderLayer(dim, heads, ffn_dim) for _ in range(layers)])
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        self.lm_head.weight = self.embed_tokens.weight  # tied, as in BART / Florence-2
        self.register_buffer("final_logits_bias", torch.zeros((1, vocab)))

    def forward(self, input_ids, *rest):
        encoder_hidden_states, past_flat = (None, rest) if self.cross_kv_inputs else (rest[0], rest[1:])
        per_layer = 4 if self.cross_kv_inputs else 2
        b, t = input_ids.shape
        past_len = past_flat[0].shape[2]
        x = self.embed_tokens(input_ids) * self.embed_scale
        positions = torch.arange(past_len, past_len + t, dtype=torch.long, device=input_ids.device).expand(b, -1)
        x = self.layernorm_embedding(x + self.embed_positions(positions + self.POSITION_OFFSET))
        # Causal mask over [past; new]: new token i (absolute position past_len + i) sees keys j <= past_len + i.
        # Built unconditionally (HF skips it for one token) so one export serves the prompt and the cached steps.
        row = torch.arange(t, device=x.device).unsqueeze(1) + past_len
        col = torch.arange(past_len + t, device=x.device).unsqueeze(0)
        mask = torch.zeros(t, past_len + t, dtype=x.dtype, device=x.device).masked_fill(col > row, torch.finfo(x.dtype).min)
        mask = mask[None, None, :, :]
        presents = []
        for i, layer in enumerate(self.layers):
            p = past_flat[per_layer * i:per_layer * (i + 1)]
            x, present = layer(x, encoder_hidden_states, (p[0], p[1]), mask, (p[2], p[3]) if len(p) == 4 else None)
            presents += list(present)
        logits = self.lm_head(x) + self.final_logits_bias
        return (logits, *presents)

    def io_names(self):
        kinds = ("key", "value", "cross_key", "cross_value") if self.cross_kv_inputs else ("key", "value")
        past = [f"past_{kv}_{i}" if not kv.startswith("cross") else f"{kv}_{i}"
                for i in range(self.layers_count) for kv in kinds]
        present = [f"present_{kv}_{i}" for i in range(self.layers_count) for kv in ("key", "value")]
        return past, present


def bart_decoder(tiny, cross_kv_inputs=False):
    if tiny:
        return BartDecoderStep(vocab=64, dim=32, layers=2, heads=2, ffn_dim=64, max_positions=64,
                               scale_embedding=True, cross_kv_inputs=cross_kv_inputs)
    # Florence-2-base's language model: d_model 768, 6 decoder layers, 12 heads, ffn 3072, vocab 51289,
    # no embedding scale (its config sets scale_embedding false).
    return BartDecoderStep(vocab=51289, dim=768, layers=6, heads=12, ffn_dim=3072, max_positions=1024,
                           scale_embedding=False, cross_kv_inputs=cross_kv_inputs)


# ----------------------------------------------------------------------------------------------------------
# Export and references.
# ----------------------------------------------------------------------------------------------------------

def randomize_norms(module, gen):
    """LayerNorm's default (1, 0) affine parameters would hide errors in their use; draw them instead."""
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.LayerNorm):
                m.weight.copy_(torch.rand(m.weight.shape, generator=gen) + 0.5)
                m.bias.copy_(torch.rand(m.bias.shape, generator=gen) - 0.5)
        if isinstance(module, BartDecoderStep):
            module.final_logits_bias.copy_(torch.rand(module.final_logits_bias.shape, generator=gen) - 0.5)


def reference(module, inputs):
    """Runs `module` in float64 on the float32 `inputs` (int inputs as they are); returns float64 numpy
    arrays and leaves the module in float32."""
    with torch.no_grad():
        module.double()
        args = [torch.from_numpy(a).double() if a.dtype == np.float32 else torch.from_numpy(a) for a in inputs]
        out = module(*args)
        module.float()
    out = out if isinstance(out, tuple) else (out,)
    return [o.numpy() for o in out]


def export(module, inputs, path, opset, input_names, output_names, dynamic_axes):
    import warnings
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # TracerWarnings for shape values that are meant to be constants
        # torch >= 2.5 defaults to the dynamo exporter (which rejects these dynamic_axes); the TorchScript
        # exporter is the one Debian's torch 1.13 has, so both make the same graphs.
        legacy = {"dynamo": False} if "dynamo" in inspect.signature(torch.onnx.export).parameters else {}
        torch.onnx.export(module, tuple(torch.from_numpy(a) for a in inputs), path, opset_version=opset,
                          input_names=input_names, output_names=output_names, dynamic_axes=dynamic_axes,
                          do_constant_folding=False, **legacy)


def shorten_value_names(path):
    """Renames the intermediate values of an exported model to t<N>. torch names every value after its node's
    scope ("/blocks.0/blocks.0.0/channel_block/conv2/fn/Transpose_1_output_0"), which makes up most of a tiny
    model's bytes; the node names (what wgi's errors cite), graph inputs / outputs and initializers keep
    theirs. Keeps the committed models within the repository's size budget."""
    import onnx
    model = onnx.load(path)
    g = model.graph
    keep = {v.name for v in g.input} | {v.name for v in g.output} | {t.name for t in g.initializer}
    renamed = {}
    for node in g.node:
        for i, name in enumerate(node.input):
            node.input[i] = renamed.get(name, name)
        for i, name in enumerate(node.output):
            if name and name not in keep:
                renamed[name] = f"t{len(renamed)}"
                node.output[i] = renamed[name]
    for v in g.value_info:
        v.name = renamed.get(v.name, v.name)
    onnx.checker.check_model(model)
    onnx.save(model, path)


def save_folder(folder, inputs, expected):
    for k, v in inputs.items():
        np.save(os.path.join(folder, f"input_{k}.npy"), v)
    for k, v in expected.items():
        np.save(os.path.join(folder, f"expected_{k}.npy"), v)


class ModelCase:
    """One model with its example inputs, names and dynamic axes."""

    def __init__(self, name, module, inputs, input_names, output_names, dynamic_axes):
        self.name, self.module, self.inputs = name, module, inputs
        self.input_names, self.output_names, self.dynamic_axes = input_names, output_names, dynamic_axes

    def write(self, out_dir, opsets, with_reference=True):
        expected = reference(self.module, self.inputs) if with_reference else []
        for opset in opsets:
            folder = os.path.join(out_dir, f"{self.name}_opset{opset}")
            export(self.module, self.inputs, os.path.join(folder, "model.onnx"), opset, self.input_names,
                   self.output_names, self.dynamic_axes)
            shorten_value_names(os.path.join(folder, "model.onnx"))
            save_folder(folder, dict(zip(self.input_names, self.inputs)), dict(zip(self.output_names, expected)))
            print(f"{folder}: {os.path.getsize(os.path.join(folder, 'model.onnx'))} bytes")


def build_cases(rng, tiny, cached_bart=False):
    gen = torch.Generator().manual_seed(SEED)
    cases = []

    torch.manual_seed(SEED)
    florence = florence2_vision(tiny).eval()
    randomize_norms(florence, gen)
    size = 36 if tiny else 768  # 36: 9x9 and 5x5 grids, so window attention pads and crops
    x = rng.uniform(-1, 1, (2 if tiny else 1, 3, size, size)).astype(np.float32)
    cases.append(ModelCase("florence2_vision" + ("_tiny" if tiny else "_base"), florence, [x], ["pixel_values"],
                           ["image_features"], {"pixel_values": {0: "batch"}, "image_features": {0: "batch"}}))

    torch.manual_seed(SEED + 1)
    siglip = siglip_vision(tiny).eval()
    randomize_norms(siglip, gen)
    size = 32 if tiny else 224
    x = rng.uniform(-1, 1, (2 if tiny else 1, 3, size, size)).astype(np.float32)
    cases.append(ModelCase("siglip_vision" + ("_tiny" if tiny else "_base"), siglip, [x], ["pixel_values"],
                           ["last_hidden_state", "pooler_output"],
                           {"pixel_values": {0: "batch"}, "last_hidden_state": {0: "batch"},
                            "pooler_output": {0: "batch"}}))

    torch.manual_seed(SEED + 2)
    bart = bart_decoder(tiny).eval()
    randomize_norms(bart, gen)
    cases.append(bart_case(bart, rng, tiny))

    if cached_bart:  # appended last: the other cases' random streams stay as they are
        torch.manual_seed(SEED + 3)
        bart = bart_decoder(tiny, cross_kv_inputs=True).eval()
        randomize_norms(bart, gen)
        cases.append(bart_case(bart, rng, tiny))
    return cases


def bart_inputs(bart, rng, batch, new_tokens, past_len, src_len):
    dim = bart.embed_tokens.embedding_dim
    heads = bart.layers[0].self_attn.heads
    ids = rng.integers(0, bart.embed_tokens.num_embeddings, (batch, new_tokens)).astype(np.int64)
    if bart.cross_kv_inputs:
        return [ids] + [rng.uniform(-1, 1, (batch, heads, length, dim // heads)).astype(np.float32)
                        for _ in range(bart.layers_count) for length in (past_len, past_len, src_len, src_len)]
    enc = rng.uniform(-1, 1, (batch, src_len, dim)).astype(np.float32)
    past = [rng.uniform(-1, 1, (batch, heads, past_len, dim // heads)).astype(np.float32)
            for _ in range(2 * bart.layers_count)]
    return [ids, enc] + past


def bart_case(bart, rng, tiny):
    past_names, present_names = bart.io_names()
    # Exported (and checked) at past_len > 0 and new_tokens > 1; every sequence dim is symbolic.
    inputs = bart_inputs(bart, rng, batch=2, new_tokens=3, past_len=4, src_len=5) if tiny else \
        bart_inputs(bart, rng, batch=1, new_tokens=2, past_len=8, src_len=590)
    dynamic = {"input_ids": {0: "batch", 1: "new_tokens"}, "encoder_hidden_states": {0: "batch", 1: "src_len"},
               "logits": {0: "batch", 1: "new_tokens"}}
    dynamic.update({n: {0: "batch", 2: "src_len" if n.startswith("cross") else "past_len"} for n in past_names})
    dynamic.update({n: {0: "batch", 2: "total_len"} for n in present_names})
    name = "bart_decoder" + ("_cached_cross" if bart.cross_kv_inputs else "") + ("_tiny" if tiny else "_base")
    input_names = ["input_ids"] + ([] if bart.cross_kv_inputs else ["encoder_hidden_states"]) + past_names
    return ModelCase(name, bart, inputs, input_names, ["logits"] + present_names, dynamic)


def greedy_reference(bart, rng, folder, steps=5, batch=2, prompt_len=4, src_len=6):
    """PyTorch's greedy loop in float64: the prompt step (past_len 0), then `steps` steps feeding back the
    argmax token and the present k/v. Writes greedy_*.npy for tests/gpu/test_decoder_loop.cpp."""
    heads = bart.layers[0].self_attn.heads
    dim = bart.embed_tokens.embedding_dim
    vocab = bart.embed_tokens.num_embeddings
    # Draw prompts until every argmax leads its runner-up clearly: float32 rounding on the GPU must not be able
    # to flip a token. (With tied random embeddings the loop settles on one token per row, a fixed point of the
    # residual stream; the per-step logits, checked to 1e-4, are what show that the cache is used right.)
    for _ in range(100):
        prompt = rng.integers(0, vocab, (batch, prompt_len)).astype(np.int64)
        enc = rng.uniform(-1, 1, (batch, src_len, dim)).astype(np.float32)
        with torch.no_grad():
            bart.double()
            ids = torch.from_numpy(prompt)
            past = [torch.zeros(batch, heads, 0, dim // heads, dtype=torch.float64)
                    for _ in range(2 * bart.layers_count)]
            tokens, logits_per_step, margins = [], [], []
            for _ in range(steps + 1):
                out = bart(ids, torch.from_numpy(enc).double(), *past)
                last = out[0][:, -1, :]
                top2 = torch.topk(last, 2, dim=-1).values
                margins.append(float((top2[:, 0] - top2[:, 1]).min() / last.abs().max()))
                ids = last.argmax(dim=-1, keepdim=True)
                tokens.append(ids)
                logits_per_step.append(last.numpy())
                past = list(out[1:])
            bart.float()
        if min(margins) > 1e-2:
            break
    else:
        raise RuntimeError("no prompt with a clear greedy argmax found")
    np.save(os.path.join(folder, "greedy_prompt_ids.npy"), prompt)
    np.save(os.path.join(folder, "greedy_encoder_hidden_states.npy"), enc)
    np.save(os.path.join(folder, "greedy_expected_ids.npy"), torch.cat(tokens, dim=1).numpy())
    np.save(os.path.join(folder, "greedy_expected_logits.npy"), np.stack(logits_per_step))
    print(f"{folder}: greedy ids {torch.cat(tokens, dim=1).tolist()}, min relative top-2 margin {min(margins):.3g}")


def write_tiny(opsets=(13, 17)):
    rng = np.random.default_rng(SEED)
    cases = build_cases(rng, tiny=True)
    for case in cases:
        case.write(OUT, opsets)
    bart = cases[-1].module
    greedy_reference(bart, rng, os.path.join(OUT, "bart_decoder_tiny_opset17"))


def generate_large_parameters(module, seed, min_elements=4096):
    """Replaces every parameter of at least `min_elements` with fill_weights' reproducible values, scaled to
    the spread PyTorch's init gave it; returns the recipe entries keyed by the float32 bytes' digest."""
    import hashlib
    import zlib
    from fill_weights import tensor_values
    recipe = {}
    with torch.no_grad():
        for name, param in module.named_parameters():
            if param.numel() < min_elements:
                continue
            scale = float(np.float32(param.float().std().item() * math.sqrt(3.0)))
            tensor_seed = (seed << 32) ^ zlib.crc32(name.encode())
            values = tensor_values(tensor_seed, param.numel(), scale)
            param.copy_(torch.from_numpy(values).view(param.shape))
            recipe[hashlib.sha1(values.tobytes()).hexdigest()] = {"name": name, "seed": tensor_seed,
                                                                 "count": param.numel(), "scale": scale}
    return recipe


def externalize_weights(folder, recipe):
    """Moves the generated initializers of folder/model.onnx into model.onnx.data (64-byte aligned offsets)
    and writes weights.json, from which fill_weights.py rebuilds that file."""
    import hashlib
    import json
    import onnx
    path = os.path.join(folder, "model.onnx")
    model = onnx.load(path)
    entries, digest, offset = [], hashlib.sha256(), 0
    with open(os.path.join(folder, "model.onnx.data"), "wb") as data:
        for init in model.graph.initializer:
            r = recipe.get(hashlib.sha1(init.raw_data).hexdigest()) if init.raw_data else None
            if r is None:
                continue
            pad = (-offset) % 64
            data.write(b"\0" * pad)
            digest.update(b"\0" * pad)
            offset += pad
            data.write(init.raw_data)
            digest.update(init.raw_data)
            entries.append(dict(r, initializer=init.name, offset=offset))
            del init.external_data[:]
            for k, v in (("location", "model.onnx.data"), ("offset", str(offset)), ("length", str(len(init.raw_data)))):
                init.external_data.add(key=k, value=v)
            init.data_location = onnx.TensorProto.EXTERNAL
            offset += len(init.raw_data)
            init.ClearField("raw_data")
    # Parameters the traced graph does not use (the cached-cross decoder's cross k/v projections) are absent.
    if not entries:
        raise RuntimeError(f"{path}: no generated parameter found among the initializers")
    onnx.save(model, path)
    with open(os.path.join(folder, "weights.json"), "w") as f:
        json.dump({"file": "model.onnx.data", "bytes": offset, "sha256": digest.hexdigest(), "tensors": entries},
                  f, indent=1)
    print(f"{folder}: model.onnx {os.path.getsize(path)} bytes + model.onnx.data {offset} bytes "
          f"({len(entries)} generated tensors)")


def write_large(opset=17, with_reference=True, only=None):
    """Base configs for benchmarks: build/models-large/<name>_opset<N>/ with model.onnx (graph and small
    tensors), weights.json + model.onnx.data (large weights, rebuilt anywhere by fill_weights.py), inputs and
    float64 references."""
    import fill_weights
    rng = np.random.default_rng(SEED)
    for index, case in enumerate(build_cases(rng, tiny=False, cached_bart=True)):
        if only and only not in case.name:
            continue
        recipe = generate_large_parameters(case.module, SEED + index)
        case.write(OUT_LARGE, (opset,), with_reference)
        folder = os.path.join(OUT_LARGE, f"{case.name}_opset{opset}")
        externalize_weights(folder, recipe)
        fill_weights.fill_folder(folder, check_only=True)  # the recipe reproduces the data file
        del case.module


def main(argv):
    if "--large" in argv:
        opset = 13 if "--opset13" in argv else 17
        only = argv[argv.index("--only") + 1] if "--only" in argv else None
        write_large(opset, with_reference="--no-reference" not in argv, only=only)
    else:
        write_tiny()


if __name__ == "__main__":
    main(sys.argv[1:])
