#!/usr/bin/python3
"""The tiny BART decoder step with cached cross-attention keys/values (florence_siglip.BartDecoderStep with
cross_kv_inputs) and its greedy-decoding reference, for tests/gpu/test_decoder_loop.cpp.

    /usr/bin/python3 tests/models/decoder_cached_cross_tiny.py

writes tests/data/models/bart_decoder_cached_cross_tiny_opset17/: model.onnx (inputs input_ids, per layer
past_key_i, past_value_i, cross_key_i, cross_value_i; outputs logits, present_key_i, present_value_i) and
greedy_*.npy: the prompt, the per-layer cross keys/values (the layers' own k/v projections of a random encoder
output, as Florence-2 computes them once per image) and PyTorch's float64 greedy loop (ids, last-position
logits per step). A separate file with its own seed, so that florence_siglip.py's models stay byte-identical.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import florence_siglip as fs  # noqa: E402

SEED = 20261207
FOLDER = os.path.join(fs.OUT, "bart_decoder_cached_cross_tiny_opset17")


def cross_kv(bart, enc):
    """Per layer (cross_key, cross_value) [batch, heads, src_len, head_dim] from the layers' k/v projections."""
    out = []
    with torch.no_grad():
        x = torch.from_numpy(enc)
        for layer in bart.layers:
            attn = layer.encoder_attn
            out += [attn._shape(attn.k_proj(x), x.shape[0]).contiguous().numpy(),
                    attn._shape(attn.v_proj(x), x.shape[0]).contiguous().numpy()]
    return out


def greedy(bart, prompt, cross, steps):
    """The float64 greedy loop: (ids [batch, steps + 1], last-position logits [steps + 1, batch, vocab],
    smallest relative top-2 margin)."""
    heads = bart.layers[0].self_attn.heads
    dim = bart.embed_tokens.embedding_dim
    batch = prompt.shape[0]
    with torch.no_grad():
        bart.double()
        ids = torch.from_numpy(prompt)
        past = [torch.zeros(batch, heads, 0, dim // heads, dtype=torch.float64)
                for _ in range(2 * bart.layers_count)]
        cross64 = [torch.from_numpy(c).double() for c in cross]
        tokens, logits, margins = [], [], []
        for _ in range(steps + 1):
            args = []
            for i in range(bart.layers_count):
                args += [past[2 * i], past[2 * i + 1], cross64[2 * i], cross64[2 * i + 1]]
            out = bart(ids, *args)
            last = out[0][:, -1, :]
            top2 = torch.topk(last, 2, dim=-1).values
            margins.append(float((top2[:, 0] - top2[:, 1]).min() / last.abs().max()))
            ids = last.argmax(dim=-1, keepdim=True)
            tokens.append(ids)
            logits.append(last.numpy())
            past = list(out[1:])
        bart.float()
    return torch.cat(tokens, dim=1).numpy(), np.stack(logits), min(margins)


def main():
    rng = np.random.default_rng(SEED)
    gen = torch.Generator().manual_seed(SEED)
    torch.manual_seed(SEED)
    bart = fs.bart_decoder(True, cross_kv_inputs=True).eval()
    fs.randomize_norms(bart, gen)
    case = fs.bart_case(bart, rng, True)
    case.write(fs.OUT, (17,), with_reference=True)

    steps, batch, prompt_len, src_len = 6, 2, 3, 7
    dim = bart.embed_tokens.embedding_dim
    vocab = bart.embed_tokens.num_embeddings
    # As in florence_siglip.greedy_reference: a prompt whose argmaxes lead clearly at every step.
    for _ in range(100):
        prompt = rng.integers(0, vocab, (batch, prompt_len)).astype(np.int64)
        enc = rng.uniform(-1, 1, (batch, src_len, dim)).astype(np.float32)
        cross = cross_kv(bart, enc)
        ids, logits, margin = greedy(bart, prompt, cross, steps)
        if margin > 1e-2:
            break
    else:
        raise RuntimeError("no prompt with a clear greedy argmax found")
    np.save(os.path.join(FOLDER, "greedy_prompt_ids.npy"), prompt)
    for i in range(bart.layers_count):
        np.save(os.path.join(FOLDER, f"greedy_cross_key_{i}.npy"), cross[2 * i])
        np.save(os.path.join(FOLDER, f"greedy_cross_value_{i}.npy"), cross[2 * i + 1])
    np.save(os.path.join(FOLDER, "greedy_expected_ids.npy"), ids)
    np.save(os.path.join(FOLDER, "greedy_expected_logits.npy"), logits)
    print(f"{FOLDER}: greedy ids {ids.tolist()}, min relative top-2 margin {margin:.3g}")


if __name__ == "__main__":
    main()
