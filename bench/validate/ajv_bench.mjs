// ajv 8 (draft 2020-12, ajv-formats) on the same discovery documents as the Rust library
// benchmark, in memory: nanoseconds per document with allErrors (every error, like the
// Rust side's iter_errors) and with ajv's default (stop at the first).
//
//   node ajv_bench.mjs REPO_ROOT SECONDS SCHEMA_PATH...
// SCHEMA_PATHs are the corpus files the generated Rust validators embed (relative to the
// repository root), so both sides resolve $refs against the same set.
import fs from 'node:fs';
import path from 'node:path';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const [root, secondsArg, ...schemaPaths] = process.argv.slice(2);
const seconds = Number(secondsArg ?? 3);
const read = (p) => JSON.parse(fs.readFileSync(p, 'utf8'));

const split = {};
function documents(kind) {
  const out = [];
  for (const sub of ['valid', 'invalid']) {
    const dir = path.join(root, 'tests/vectors', kind, sub);
    const names = fs.readdirSync(dir).filter((n) => n.endsWith('.json') && !n.endsWith('.discovery.json')).sort();
    for (const n of names) out.push(read(path.join(dir, n)));
    split[sub] = out.length;
  }
  return out;
}

function validator(allErrors) {
  const ajv = new Ajv2020({ allErrors, strict: false, validateFormats: true });
  addFormats(ajv);
  for (const p of schemaPaths) {
    const s = read(path.join(root, p));
    if (s.$id) ajv.addSchema(s);
  }
  return ajv.getSchema('https://openwop.dev/spec/v2/capabilities.schema.json');
}

// Five rounds of SECONDS / 5 after a warm-up; the fastest round counts (the machine is
// shared: the slower rounds are the ones something else ran in).
function perDoc(docs, f) {
  let sink = 0;
  for (let k = 0; k < 20; k++) for (const d of docs) sink += f(d) ? 1 : 0;
  const limit = (seconds / 5) * 1e9;
  let best = Infinity;
  let total = 0;
  for (let round = 0; round < 5; round++) {
    const start = process.hrtime.bigint();
    let calls = 0;
    while (Number(process.hrtime.bigint() - start) < limit) {
      for (const d of docs) sink += f(d) ? 1 : 0;
      calls += docs.length;
    }
    best = Math.min(best, Number(process.hrtime.bigint() - start) / calls);
    total += calls;
  }
  return { ns: Math.round(best * 10) / 10, calls: total, sink };
}

const docs = documents('discovery');
const all = validator(true);
const first = validator(false);
const failing = docs.filter((d) => !all(d)).length;
const a = perDoc(docs, (d) => all(d));
const f = perDoc(docs, (d) => first(d));
const av = perDoc(docs.slice(0, split.valid), (d) => all(d));
const ai = perDoc(docs.slice(split.valid), (d) => all(d));
console.log(JSON.stringify({
  ajv_version: JSON.parse(fs.readFileSync(new URL('./node_modules/ajv/package.json', import.meta.url))).version,
  node_version: process.version,
  discovery_documents: docs.length,
  discovery_failing_schema: failing,
  all_errors_ns_per_doc: a.ns,
  all_errors_calls: a.calls,
  first_error_ns_per_doc: f.ns,
  first_error_calls: f.calls,
  valid_documents: split.valid,
  all_errors_valid_ns_per_doc: av.ns,
  all_errors_invalid_ns_per_doc: ai.ns,
}));
