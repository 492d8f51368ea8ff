#!/usr/bin/python3
"""Hugging Face's beam search (`GenerationMixin._beam_search`, transformers >= 4.50, the vectorized rewrite of
PR #35802 that replaced BeamSearchScorer) for the tiny Florence-2 folder, in float64, written from the
algorithm (docs/beam_search.md) without transformers, which this machine does not have.

    /usr/bin/python3 tests/models/beam_search_reference.py           # checks, then expected_beams_<case>.json
    /usr/bin/python3 tests/models/beam_search_reference.py --check   # checks only, writes nothing

The model: florence2_folder.py's torch modules (built by its build_modules, for their structure), every
parameter and buffer then loaded back from the committed ONNX initializers (the float32 values that
transformers.js and wgi run; the bias search's float64 state is not reproducible without re-running the search
and its node calls). Each initializer is checked to be the same in every file that holds it, and every
parameter and buffer of the modules to be loaded. Then modules, image features and encoder run in float64.

Checks before anything is written (any failure raises):
  1. num_beams 1 with the folder's settings (early_stopping True) gives expected_<task>.json's generated_ids
     (transformers.js's greedy answer) for the three tasks: the model, prompt and processors are wired right;
  2. num_beams 1 equals plain_greedy (an independent argmax loop) on every case's settings, even with
     early_stopping False / "never" where the beam search keeps its second candidate running;
  3. the decoder's full-sequence recompute agrees with its KV-cached steps (florence2_folder.greedy is cached);
  4. (recorded, not required) scorer_beam_search, the BeamSearchScorer form of transformers < 4.50, gives the
     same ids and score as beam_search for each case (scorer_form_agrees in the JSON).
Each written case records whether its answer differs from greedy; at least one must (the test can fail).
"""
import json
import math
import os
import sys
import zlib

import numpy as np
import onnx
import torch
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import florence2_folder as ff  # noqa: E402

FOLDER = ff.OUT_TINY
DEAD_BEAM = -1.0e9  # HF's score for the not-yet-opened beams and its "cannot be chosen" offset
ONNX_FILES = ("vision_encoder", "embed_tokens", "encoder_model", "decoder_model", "decoder_with_past_model")


# ----------------------------------------------------------------------------------------------------------
# The model in float64.
# ----------------------------------------------------------------------------------------------------------

def load_initializers():
    """name -> float64 tensor from the committed ONNX files; a name in several files must agree bit for bit."""
    values = {}
    for name in ONNX_FILES:
        model = onnx.load(os.path.join(FOLDER, "onnx", f"{name}.onnx"))
        for init in model.graph.initializer:
            array = numpy_helper.to_array(init)
            if init.name in values and not np.array_equal(values[init.name], array):
                raise RuntimeError(f"initializer {init.name} differs between the ONNX files ({name}.onnx)")
            values[init.name] = array
    return values


def load_model():
    """(vision, lang) in float64 with the folder's weights."""
    with open(os.path.join(FOLDER, "config.json")) as f:
        vocab_size = json.load(f)["vocab_size"]
    vision, lang = ff.build_modules(ff.CONFIGS["tiny"], vocab_size)
    values = load_initializers()
    used = set()
    for prefix, module in (("", vision), ("lang.", lang)):
        state = module.state_dict()
        for key, tensor in state.items():
            name = prefix + key
            if name not in values:
                raise RuntimeError(f"{key} of {type(module).__name__} is in no ONNX initializer")
            if tuple(values[name].shape) != tuple(tensor.shape):
                raise RuntimeError(f"{name}: ONNX shape {values[name].shape}, module {tuple(tensor.shape)}")
            state[key] = torch.from_numpy(values[name].copy())
            used.add(name)
        module.load_state_dict(state)
    unused = sorted(set(values) - used)
    if unused:
        raise RuntimeError(f"ONNX initializers not in the modules: {unused[:5]}")
    return vision.double().eval(), lang.double().eval()


def read_png(path):
    """The folder's image.png as florence2_folder.write_png writes it (8-bit RGB, one IDAT, filter 0 rows)."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(data):
        (length,) = np.frombuffer(data[pos:pos + 4], ">u4")
        kind = data[pos + 4:pos + 8]
        chunks.setdefault(kind, b"")
        chunks[kind] += data[pos + 8:pos + 8 + int(length)]
        pos += 12 + int(length)
    width, height = np.frombuffer(chunks[b"IHDR"][:8], ">u4")
    if chunks[b"IHDR"][8:10] != b"\x08\x02":
        raise RuntimeError(f"{path}: not 8-bit RGB")
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(int(height), 1 + 3 * int(width))
    if rows[:, 0].any():
        raise RuntimeError(f"{path}: filtered rows (only filter 0 is read here)")
    return rows[:, 1:].reshape(int(height), int(width), 3)


class Decoder:
    """One prompt's encoder output; logits of the last position for a batch of decoder sequences."""

    def __init__(self, vision, lang, pixel_values, prompt_ids):
        self.lang = lang
        with torch.no_grad():
            image = vision(torch.from_numpy(pixel_values).double())
            embeds = torch.cat([image, lang.shared(torch.tensor([prompt_ids]))], dim=1)
            self.mask = torch.ones(embeds.shape[:2], dtype=torch.long)
            self.memory = lang.encoder(embeds, self.mask)

    def last_logits(self, sequences):
        """sequences: equal-length lists -> [len(sequences), vocab] float64. The whole sequence is decoded
        again each step (no cache to reorder between beams: a beam's cache is its prefix)."""
        with torch.no_grad():
            ids = torch.tensor(sequences)
            n = ids.shape[0]
            h, _ = self.lang.decoder(self.lang.shared(ids), self.mask.expand(n, -1),
                                     self.memory.expand(n, -1, -1))
            return self.lang.lm_head(h[:, -1])

    def cached_greedy(self, max_new_tokens):
        """florence2_folder's greedy loop (KV-cached steps)."""
        with torch.no_grad():
            return ff.greedy(self.lang, self.memory, self.mask, max_new_tokens)[0]


# ----------------------------------------------------------------------------------------------------------
# Logits processors (on log-probabilities, in HF's order: NoRepeatNGram, ForcedBOS, ForcedEOS).
# ----------------------------------------------------------------------------------------------------------

def banned_ngram_tokens(seq, n):
    """Tokens that would complete an n-gram already in seq (the decoder start token counts)."""
    if n <= 0 or len(seq) + 1 < n:
        return []
    prefix = seq[len(seq) + 1 - n:]
    return [seq[j + n - 1] for j in range(len(seq) + 1 - n) if seq[j:j + n - 1] == prefix]


def process(log_probs, sequences, s):
    """log_probs [beams, vocab] (modified in place) for running sequences all of length cur_len."""
    cur_len = len(sequences[0])
    for row, seq in enumerate(sequences):
        for token in banned_ngram_tokens(seq, s["no_repeat_ngram_size"]):
            log_probs[row, token] = -math.inf
    forced = None
    if s["forced_bos_token_id"] is not None and cur_len == 1:
        forced = s["forced_bos_token_id"]
    elif s["forced_eos_token_id"] is not None and cur_len == s["max_length"] - 1:
        forced = s["forced_eos_token_id"]
    if forced is not None:
        log_probs[:, :] = -math.inf
        log_probs[:, forced] = 0.0
    return log_probs


# ----------------------------------------------------------------------------------------------------------
# Decoding.
# ----------------------------------------------------------------------------------------------------------

def settings(**overrides):
    """generation_config.json's settings plus HF's defaults (length_penalty 1.0), max_length = the decoder
    prompt (the start token) + max_new_tokens."""
    with open(os.path.join(FOLDER, "generation_config.json")) as f:
        gen = json.load(f)
    s = dict(num_beams=gen["num_beams"], length_penalty=1.0, early_stopping=gen["early_stopping"],
             no_repeat_ngram_size=gen["no_repeat_ngram_size"], max_new_tokens=40,
             decoder_start_token_id=gen["decoder_start_token_id"], forced_bos_token_id=gen["forced_bos_token_id"],
             forced_eos_token_id=gen["forced_eos_token_id"], eos_token_id=gen["eos_token_id"],
             pad_token_id=gen["pad_token_id"], num_return_sequences=1)
    s.update(overrides)
    if s["early_stopping"] not in (True, False, "never"):
        raise ValueError(f"early_stopping must be True, False or 'never', not {s['early_stopping']!r}")
    s["max_length"] = 1 + s["max_new_tokens"]
    return s


def ranked(values, k):
    """Indices of the k largest values, ties by lower index (torch.topk does not promise an order for ties;
    here ties only happen between candidates whose order cannot change the answer, see docs/beam_search.md)."""
    order = sorted(range(len(values)), key=lambda i: (-values[i], i))
    return order[:k]


# Plausible mistakes of an implementation; main() checks that the written cases catch each of them.
MISTAKES = {
    "top_k_only": "keep num_beams candidates per step instead of 2*num_beams",
    "length_without_eos": "length-penalize a finished hypothesis by its length without the EOS token",
    "length_with_start": "length-penalize by the sequence length including the decoder start token",
    "eos_of_any_rank": "let an EOS candidate ranked >= num_beams finish",
    "no_length_penalty": "rank finished hypotheses by their summed log-probability (length_penalty ignored)",
}


def beam_search(decoder, s, mistake=None):
    """HF's _beam_search for one prompt. Returns dict(ids, score, steps, history). mistake: a MISTAKES key,
    to run a wrong variant on purpose."""
    k, eos, lp = s["num_beams"], s["eos_token_id"], s["length_penalty"]
    keep = k if mistake == "top_k_only" else 2 * k  # max(2, 1 + number of EOS ids) * num_beams, one EOS id
    prompt_len = 1
    running = [[s["decoder_start_token_id"]] for _ in range(k)]
    running_scores = [0.0] + [DEAD_BEAM] * (k - 1)
    # The finished set: k slots of (score, sequence, finished); empty slots score DEAD_BEAM.
    finished = [(DEAD_BEAM, None, False) for _ in range(k)]
    improvable = True  # HF's is_early_stop_heuristic_unsatisfied (sticky once False)
    cur_len = prompt_len
    history = []
    while True:
        log_probs = torch.log_softmax(decoder.last_logits(running), dim=-1)
        log_probs = process(log_probs, running, s)
        vocab = log_probs.shape[1]
        accumulated = (log_probs + torch.tensor(running_scores, dtype=torch.float64)[:, None]).reshape(-1)
        # Ties (only between -inf or dead-beam candidates at the forced steps) by lower flat index.
        top_values, top_index = (t[:keep] for t in torch.sort(accumulated, descending=True, stable=True))
        cand = []
        for rank, (value, index) in enumerate(zip(top_values.tolist(), top_index.tolist())):
            beam, token = divmod(index, vocab)
            cand.append(dict(rank=rank, beam=beam, token=token, score=value, seq=running[beam] + [token],
                             hits=token == eos or cur_len + 1 >= s["max_length"]))
        # The next running beams: the best k candidates that did not stop (stopped ones get -1e9).
        masked = [c["score"] + (DEAD_BEAM if c["hits"] else 0.0) for c in cand]
        chosen = ranked(masked, k)
        # The finished set: merged with this step's stopped candidates of rank < k, length-penalized by the
        # generated length including the new token; blocked when full under early_stopping True, or when the
        # heuristic said no improvement is possible.
        all_done = all(f[2] for f in finished)
        offered = []
        for c in cand:
            new_finished = c["hits"] and (c["rank"] < k or mistake == "eos_of_any_rank")
            length = cur_len + 1 - prompt_len  # the generated tokens, the new one (EOS) included
            if mistake == "length_without_eos":
                length = max(1, length - 1)
            elif mistake == "length_with_start":
                length += prompt_len
            score = c["score"] / float(length) ** (0.0 if mistake == "no_length_penalty" else lp)
            if all_done and s["early_stopping"] is True:
                score += DEAD_BEAM
            if not improvable:
                score += DEAD_BEAM
            if not new_finished:
                score += DEAD_BEAM
            offered.append((score, c["seq"], new_finished))
        merged = finished + offered
        finished = [merged[i] for i in ranked([m[0] for m in merged], k)]
        running = [cand[i]["seq"] for i in chosen]
        running_scores = [masked[i] for i in chosen]
        cur_len += 1
        # Early-stop heuristic: can the best running beam still beat the worst finished one?
        if s["early_stopping"] == "never" and lp > 0.0:
            best_length = s["max_length"] - prompt_len
        else:
            best_length = cur_len - prompt_len
        best_possible = running_scores[0] / float(best_length) ** lp
        all_done = all(f[2] for f in finished)
        worst_finished = min(f[0] for f in finished) if all_done else DEAD_BEAM
        improvable = improvable and best_possible > worst_finished
        history.append(dict(
            cur_len=cur_len,
            candidates=[[c["beam"], c["token"], c["score"], c["hits"]] for c in cand if math.isfinite(c["score"])],
            running=[[cand[i]["beam"], cand[i]["token"], masked[i]] for i in chosen],
            finished=[[f[0], f[1]] for f in finished if f[2]]))
        if not improvable or (all_done and s["early_stopping"] is True) or all(c["hits"] for c in cand):
            break
    best = finished[0]
    if not best[2]:
        raise RuntimeError("beam search ended without a finished sequence")
    return dict(ids=best[1], score=best[0], steps=cur_len - prompt_len, history=history)


def scorer_beam_search(decoder, s):
    """The same search as the BeamSearchScorer / BeamHypotheses pair of transformers < 4.50 ran it, in its last
    form (process() takes cur_len = input_ids length + 1): finished hypotheses kept in a list with a worst
    score, EOS hypotheses stored without their EOS (finalize appends it), is_done judged on the best of all
    2*num_beams candidates. Returns dict(ids, score, steps); used to show both HF versions agree here."""
    k, eos, lp = s["num_beams"], s["eos_token_id"], s["length_penalty"]
    prompt_len = 1
    running = [[s["decoder_start_token_id"]] for _ in range(k)]
    scores = [0.0] + [DEAD_BEAM] * (k - 1)
    hyps, worst = [], 1e9

    def add(seq, score, generated_len):
        nonlocal worst
        score = score / float(generated_len) ** lp
        if len(hyps) < k or score > worst:
            hyps.append((score, seq))
            if len(hyps) > k:
                order = sorted(range(len(hyps)), key=lambda i: hyps[i][0])
                worst = hyps[order[1]][0]  # the second worst becomes the worst
                del hyps[order[0]]
            else:
                worst = min(score, worst)

    def is_done(best_sum, cur_len):
        if len(hyps) < k:
            return False
        if s["early_stopping"] is True:
            return True
        length = s["max_length"] if s["early_stopping"] == "never" and lp > 0.0 else cur_len
        return worst >= best_sum / float(length - prompt_len) ** lp

    done = False
    while True:
        cur_len = len(running[0]) + 1  # the length the new scores are computed on
        log_probs = process(torch.log_softmax(decoder.last_logits(running), dim=-1), running, s)
        vocab = log_probs.shape[1]
        accumulated = (log_probs + torch.tensor(scores, dtype=torch.float64)[:, None]).reshape(-1)
        top_values, top_index = (t[:2 * k] for t in torch.sort(accumulated, descending=True, stable=True))
        next_beams = []
        for rank, (value, index) in enumerate(zip(top_values.tolist(), top_index.tolist())):
            beam, token = divmod(index, vocab)
            if token == eos:
                if rank < k:
                    add(running[beam], value, cur_len - prompt_len)
            else:
                next_beams.append((value, running[beam] + [token]))
            if len(next_beams) == k:
                break
        done = done or is_done(max(top_values.tolist()), cur_len)
        running = [b[1] for b in next_beams]
        scores = [b[0] for b in next_beams]
        if done or len(running[0]) >= s["max_length"]:
            break
    if not done:  # finalize: the open beams join the hypotheses
        for score, seq in zip(scores, running):
            add(seq, score, len(seq) - prompt_len)
    score, seq = max(hyps, key=lambda h: h[0])
    ids = seq + [eos] if len(seq) < s["max_length"] else seq
    return dict(ids=ids, score=score, steps=len(running[0]) - prompt_len)


def plain_greedy(decoder, s):
    """Argmax of the processed log-probabilities until EOS or max_length: HF's _sample without sampling."""
    seq = [s["decoder_start_token_id"]]
    while len(seq) < s["max_length"]:
        log_probs = process(torch.log_softmax(decoder.last_logits([seq]), dim=-1), [seq], s)
        seq.append(int(torch.argmax(log_probs[0])))
        if seq[-1] == s["eos_token_id"]:
            break
    return seq


def selection_margins(history, k):
    """Smallest gaps at the decisions a float32 implementation could flip: between the k-th and (k+1)-th
    running candidate (of those not stopped; absolute, in nats) and between consecutive finished scores
    (relative to the larger magnitude, since length_penalty scales them by 1 / length^lp)."""
    run_gap, fin_gap = math.inf, math.inf
    for step in history:
        alive = sorted((c[2] for c in step["candidates"] if not c[3] and math.isfinite(c[2])), reverse=True)
        if len(alive) > k and alive[k - 1] > DEAD_BEAM / 2:
            run_gap = min(run_gap, alive[k - 1] - alive[k])
        scores = sorted(f[0] for f in step["finished"])
        fin_gap = min([fin_gap] + [(b - a) / max(abs(a), abs(b)) for a, b in zip(scores, scores[1:])])
    return run_gap, fin_gap


# ----------------------------------------------------------------------------------------------------------

TASK_FILES = {"<CAPTION>": "caption", "<OD>": "od", "<OCR_WITH_REGION>": "ocr_with_region"}
# The cases written: the folder's own settings (num_beams 3, early_stopping True, length_penalty 1) for each
# task, then other beam counts, length penalties and stopping modes.
CASES = [
    ("caption", "<CAPTION>", {}),
    ("od", "<OD>", {}),
    ("ocr_with_region", "<OCR_WITH_REGION>", {}),
    ("caption_beams4_lp05_nostop", "<CAPTION>", dict(num_beams=4, length_penalty=0.5, early_stopping=False)),
    # length_penalty 2: EOS candidates rank inside the top num_beams while others run on, so this case tells
    # every MISTAKES variant from the reference.
    ("caption_lp2", "<CAPTION>", dict(length_penalty=2.0)),
    # "never" with length_penalty > 0 bounds by max_length: the answer runs to max_length (forced EOS).
    ("od_never_lp2", "<OD>", dict(length_penalty=2.0, early_stopping="never")),
]


def expected(task):
    with open(os.path.join(FOLDER, f"expected_{TASK_FILES[task]}.json")) as f:
        return json.load(f)


def main(argv):
    vision, lang = load_model()
    with open(os.path.join(FOLDER, "preprocessor_config.json")) as f:
        preprocessor = json.load(f)
    rgb = read_png(os.path.join(FOLDER, "image.png"))
    if not np.array_equal(rgb, ff.test_image(rgb.shape[0])):
        raise RuntimeError("image.png is not florence2_folder.test_image")
    pixel_values = ff.pixel_values_of(rgb, preprocessor)
    decoders = {task: Decoder(vision, lang, pixel_values, expected(task)["input_ids"]) for task in TASK_FILES}

    for task, decoder in decoders.items():  # checks 1 and 3
        want = expected(task)["generated_ids"]
        s = settings(num_beams=1, max_new_tokens=expected(task)["max_new_tokens"])
        got = beam_search(decoder, s)["ids"]
        if got != want:
            raise RuntimeError(f"{task}: num_beams 1 gives {got}, transformers.js {want}")
        if decoder.cached_greedy(s["max_new_tokens"]) != want:
            raise RuntimeError(f"{task}: the KV-cached greedy loop disagrees with transformers.js")
        print(f"{task}: num_beams 1 = transformers.js's greedy ids ({len(want)} ids)")

    results = []
    for name, task, overrides in CASES:
        decoder = decoders[task]
        s = settings(**overrides)
        for stop in (True, False):  # check 2 (not "never": see plain_greedy)
            s1 = settings(**dict(overrides, num_beams=1, early_stopping=stop))
            if beam_search(decoder, s1)["ids"] != plain_greedy(decoder, s1):
                raise RuntimeError(f"{name}: num_beams 1 (early_stopping {stop}) differs from plain greedy")
        greedy_ids = plain_greedy(decoder, s)
        result = beam_search(decoder, s)
        scorer = scorer_beam_search(decoder, s)
        scorer_agrees = scorer["ids"] == result["ids"] and math.isclose(scorer["score"], result["score"],
                                                                         rel_tol=1e-12)
        run_gap, fin_gap = selection_margins(result["history"], s["num_beams"])
        differs = result["ids"] != greedy_ids
        print(f"{name}: {len(result['ids'])} ids, score {result['score']:.6f}, steps {result['steps']}, "
              f"{'differs from' if differs else 'same as'} greedy; margins: running {run_gap:.3g}, "
              f"finished {fin_gap:.3g} (relative); BeamSearchScorer form {'agrees' if scorer_agrees else 'DIFFERS: ' + str(scorer)}")
        results.append((name, task, s, result, greedy_ids, differs, run_gap, fin_gap, scorer, scorer_agrees))
    if not any(r[5] for r in results):
        raise RuntimeError("every beam answer equals greedy: the beam cases would test nothing")
    for mistake, what in MISTAKES.items():  # the cases must tell each mistake from the reference
        caught = [name for name, task, s, result, *_ in results
                  if (lambda wrong: wrong["ids"] != result["ids"] or not math.isclose(
                      wrong["score"], result["score"], rel_tol=1e-3))(beam_search(decoders[task], s, mistake))]
        print(f"mistake '{what}': caught by {', '.join(caught) or 'NO CASE'}")
        if not caught:
            raise RuntimeError(f"no case catches the mistake '{what}'")
    if "--check" in argv:
        return

    for name, task, s, result, greedy_ids, differs, run_gap, fin_gap, scorer, scorer_agrees in results:
        out = {
            "task": task,
            "image": "image.png",
            "input_ids": expected(task)["input_ids"],
            "reference": "tests/models/beam_search_reference.py: Hugging Face _beam_search (transformers >= 4.50) "
                         "in float64 on the folder's weights; see docs/beam_search.md",
            "generation": {key: s[key] for key in (
                "num_beams", "length_penalty", "early_stopping", "no_repeat_ngram_size", "max_new_tokens",
                "max_length", "decoder_start_token_id", "forced_bos_token_id", "forced_eos_token_id",
                "eos_token_id", "pad_token_id", "num_return_sequences")},
            "generated_ids": result["ids"],
            "sequence_score": result["score"],
            "decode_steps": result["steps"],
            "greedy_ids": greedy_ids,
            "differs_from_greedy": differs,
            "scorer_form_agrees": scorer_agrees,
            "scorer_form": None if scorer_agrees else {"generated_ids": scorer["ids"], "sequence_score": scorer["score"]},
            "min_running_margin": run_gap,
            "min_finished_margin_relative": fin_gap if math.isfinite(fin_gap) else None,
            "history_fields": {
                "cur_len": "sequence length after the step (decoder start token included)",
                "candidates": "the top 2*num_beams of running score + processed log-prob: [parent beam, token, "
                              "accumulated log-prob, stopped (EOS or max_length)], best first, ties by lower "
                              "flat index; those at -inf (forced steps) left out",
                "running": "the beams kept for the next step: [parent beam, token, running score]",
                "finished": "the finished set after the step, best first: [length-penalized score, ids]",
            },
            "history": result["history"],
        }
        path = os.path.join(FOLDER, f"expected_beams_{name}.json")
        with open(path, "w") as f:
            json.dump(out, f, indent=1, allow_nan=False)  # strict JSON for C++ parsers
            f.write("\n")
        print(f"{path}: {os.path.getsize(path)} bytes")


if __name__ == "__main__":
    main(sys.argv[1:])
