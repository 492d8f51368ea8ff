// transformers.js (the independent reference of src/pipelines/) on the cases of a JSON file, offline: the
// tokenizer and the Florence-2 processor load from a local folder (make_tokenizer.mjs writes one).
// Usage: node reference.mjs CASES.json OUT.json
//   CASES: {"folder": DIR, "encode": [text...], "decode": [[id...]...], "prompts": [[task, text]...],
//           "post": [{"text", "task", "width", "height"}...]}
//   OUT:   {"encode": [{"ids", "ids_plain", "decoded", "decoded_skip"}...],
//           "decode": [{"text", "skip", "raw"}...], "prompts": [prompt...],
//           "post": [{"result"} or {"error"}...]}
// ids: with <s> ... </s>; ids_plain: add_special_tokens false; decoded(_skip): decode(ids) without / with
// skip_special_tokens; raw: clean_up_tokenization_spaces false.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = process.env.WGI_PIPELINES_DIR
  ? path.join(process.env.WGI_PIPELINES_DIR, 'node_modules')
  : path.join(here, '..', '..', 'third_party', 'pipelines', 'node_modules');
const { env, AutoTokenizer, AutoProcessor } =
  await import(path.join(modules, '@huggingface', 'transformers', 'dist', 'transformers.node.mjs'));

const [casesFile, outFile] = process.argv.slice(2);
if (!casesFile || !outFile) {
  console.error('usage: node reference.mjs CASES.json OUT.json');
  process.exit(2);
}
const cases = JSON.parse(fs.readFileSync(casesFile, 'utf8'));
const folder = path.resolve(cases.folder);

env.allowRemoteModels = false;
env.allowLocalModels = true;
env.useFSCache = false;
env.localModelPath = path.dirname(folder) + path.sep;
const modelId = path.basename(folder);
const tokenizer = await AutoTokenizer.from_pretrained(modelId);
const processor = await AutoProcessor.from_pretrained(modelId);

// transformers.js throws on an empty list; wgi gives "" (docs/pipelines.md).
const decode = (ids, options = {}) => ids.length === 0 ? '' : tokenizer.decode(ids, options);
const decodeAll = (ids) => ({
  text: decode(ids),
  skip: decode(ids, { skip_special_tokens: true }),
  raw: decode(ids, { clean_up_tokenization_spaces: false }),
});

const out = {
  encode: (cases.encode ?? []).map((text) => {
    const ids = tokenizer.encode(text);
    return {
      ids,
      ids_plain: tokenizer.encode(text, { add_special_tokens: false }),
      decoded: decode(ids),
      decoded_skip: decode(ids, { skip_special_tokens: true }),
    };
  }),
  decode: (cases.decode ?? []).map(decodeAll),
  prompts: (cases.prompts ?? []).map(([task, text]) => processor.construct_prompts(task + text)[0]),
  post: (cases.post ?? []).map(({ text, task, width, height }) => {
    try {
      // transformers.js's image_size is [width, height] (RawImage.size), whatever its docstring says.
      return { result: processor.post_process_generation(text, task, [width, height])[task] };
    } catch (e) {
      return { error: String(e.message ?? e) };
    }
  }),
};
fs.writeFileSync(outFile, JSON.stringify(out));
