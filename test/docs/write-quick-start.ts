// `node --import ./test/support/register-ts.mjs test/docs/write-quick-start.ts <folder> <doc> <section>`, run by
// `npm run test:consumers` (test/consumers/run.mjs): writes the quick start under the heading `<section>` of `<doc>`
// into `<folder>` as a reader does (its tsconfig.json and source files, and a package.json of its module type), and
// prints what running it needs as JSON: `{ type, entry, method, path, answer }`.
import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { quickStart, request, writeQuickStart } from './quick-start.js';

const [folder, doc, section] = process.argv.slice(2);
if (!folder || !doc || !section) {
  console.error('usage: write-quick-start.ts <folder> <doc> <section>');
  process.exit(2);
}
const dir = resolve(folder);
const q = quickStart(doc, section);
writeQuickStart(q, dir);
writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'likes-demo', private: true, type: q.type })}\n`);
console.log(JSON.stringify({ type: q.type, ...request(q), answer: q.answer }));
