// schemasweep.mjs holds every tool's published inputSchema against what the
// real binary accepts: for each field of each tool, dozens of variants of a
// valid call (wrong types, empty, at and beyond each length and bound, long
// characters, NUL, lone surrogates, bidi and invisible marks, enum and pattern
// near-misses, RFC 3339 edge cases, over-full and huge arrays, deep and large
// objects, missing required fields, unknown fields) are judged by a strict
// JSON Schema 2020-12 validator (ajv with ajv-formats) and sent to the server
// through the official TypeScript SDK client (which checks each result
// against the tool's outputSchema). It fails when the schema refuses
// arguments the server takes, when a failure is not the documented envelope
// (isError, code, message, details; ERR_INVALID_INPUT with issues naming the
// field at fault), or on ERR_INTERNAL. The server may refuse what the schema
// allows (blank or control-character text, rules across fields, ids that name
// nothing); those are counted, not failed.
//
// Usage: node schemasweep.mjs --bin BIN --skills DIR --dir WORKDIR
// It prints one JSON summary on stdout and exits 0 only if every check held.
// cmd/logbook/e2e_schemasweep_test.go runs it.
import { parseArgs, isDeepStrictEqual } from 'node:util';
import path from 'node:path';
import { createRequire } from 'node:module';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

const require = createRequire(import.meta.url);
const Ajv2020 = require('ajv/dist/2020').default;
const addFormats = require('ajv-formats').default;

const { values: opts } = parseArgs({ options: { bin: { type: 'string' }, skills: { type: 'string' }, dir: { type: 'string' } } });
for (const k of ['bin', 'skills', 'dir']) {
  if (!opts[k]) {
    console.error(`schemasweep.mjs: --${k} is required`);
    process.exit(2);
  }
}

const summary = { ok: false, calls: 0, cases: 0, schema_allows_server_refuses: 0, failures: [] };
const fail = (what, detail) => summary.failures.push(`${what}: ${JSON.stringify(detail)?.slice(0, 600)}`);

const transport = new StdioClientTransport({
  command: opts.bin,
  args: ['serve', '--db', path.join(opts.dir, 'sweep.db'), '--skills', opts.skills, '--agent', 'sweeper'],
  stderr: 'pipe',
  env: { ...getDefaultEnvironment(), ...(process.env.GORACE ? { GORACE: process.env.GORACE } : {}) },
});
let stderr = '';
transport.stderr?.on('data', (b) => { stderr += b; });
const client = new Client({ name: 'schemasweep', version: '1.0.0' });
await client.connect(transport);
const tools = (await client.listTools()).tools;
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
const validators = Object.fromEntries(tools.map((t) => [t.name, ajv.compile(t.inputSchema)]));

// call sends one tools/call and checks the envelope (CONTRACT.md §1).
async function call(tool, args) {
  summary.calls++;
  const where = `${tool} ${JSON.stringify(args).slice(0, 160)}`;
  let res;
  try {
    res = await client.callTool({ name: tool, arguments: args });
  } catch (e) {
    fail(`${where}: the SDK rejected the result`, String(e?.message ?? e));
    return { ok: false, error: { code: 'SDK_REJECTED' } };
  }
  const sc = res.structuredContent;
  let text;
  try { text = JSON.parse(res.content?.[0]?.text); } catch { text = undefined; }
  if (res.content?.length !== 1 || !isDeepStrictEqual(text, sc)) fail(`${where}: the text item is not the envelope`, res);
  if (!sc || typeof sc.ok !== 'boolean') { fail(`${where}: no envelope`, res); return { ok: false, error: {} }; }
  if (sc.ok === Boolean(res.isError)) fail(`${where}: isError does not match ok`, res);
  if (!sc.ok) {
    const e = sc.error;
    if (Object.keys(sc).sort().join() !== 'error,ok' || Object.keys(e ?? {}).sort().join() !== 'code,details,message' ||
      typeof e.code !== 'string' || typeof e.message !== 'string' || !e.message ||
      typeof e.details !== 'object' || e.details === null || Array.isArray(e.details)) fail(`${where}: error shape`, sc);
    if (e?.code === 'ERR_INTERNAL') fail(`${where}: ERR_INTERNAL`, sc);
    if (e?.code === 'ERR_INVALID_INPUT' && !(Array.isArray(e.details?.issues) && e.details.issues.length > 0 &&
      e.details.issues.every((i) => typeof i.path === 'string' && typeof i.message === 'string' && i.message))) fail(`${where}: issues`, sc);
  }
  return sc;
}
async function ok(tool, args) {
  const r = await call(tool, args);
  if (!r.ok) throw new Error(`setup ${tool} ${JSON.stringify(args)}: ${JSON.stringify(r)}`);
  return r.data;
}

// State every base call needs.
const P = 'sweep';
const T = (await ok('task_create', { title: 'base', project: P })).task_id;
await ok('task_create', { title: 'elsewhere', project: 'sweep-2' });
const freshTask = async () => (await ok('task_create', { title: 'fresh', project: P })).task_id;
const S = (await ok('audit_session_start', { task_id: T, auditor_id: 'auditor' })).session_id;
let seed = 0;
const words = (n, s) => Array.from({ length: n }, (_, i) => `w${s}x${i}`).join(' ');
const learning = () => { seed++; return { project: P, pattern: `${words(10, seed)} pattern text`, context: `${words(20, seed)} context text with plenty of words` }; };
const freshLearning = async () => (await ok('learning_record', learning())).learning_id;
await ok('memory_write', { key: 'k1', scope: 'global', content: 'hello' });
await ok('thought_record', { task_id: T, type: 'plan', content: 'p' });

// A valid call of each tool; a write gets fresh state where it consumes it.
const base = {
  task_create: async () => ({ title: 't', project: P }),
  task_update: async () => ({ task_id: await freshTask(), progress: 5 }),
  task_get: async () => ({ task_id: T }),
  task_list: async () => ({}),
  task_next_actions: async () => ({}),
  thought_record: async () => ({ task_id: T, type: 'plan', content: 'c' }),
  thought_record_list: async () => ({ task_id: T }),
  audit_session_start: async () => ({ task_id: T, auditor_id: 'a' }),
  merkle_finalize: async () => ({ session_id: (await ok('audit_session_start', { task_id: T, auditor_id: 'a' })).session_id }),
  merkle_root: async () => ({ session_id: S }),
  audit_verify_chain: async () => ({}),
  skill_list: async () => ({}),
  server_ping: async () => ({}),
  server_health: async () => ({}),
  finding_record: async () => ({ task_id: T, category: 'bug', summary: 's' }),
  learning_record: async () => learning(),
  learning_supersede: async () => ({ learning_id: await freshLearning(), by: await freshLearning() }),
  memory_write: async () => ({ key: 'k1', scope: 'global', content: 'x' }),
  memory_read: async () => ({ key: 'k1', scope: 'global' }),
  memory_history: async () => ({ key: 'k1' }),
  knowledge_search: async () => ({ query: 'hello' }),
};
for (const t of tools) if (!base[t.name]) fail(`tool ${t.name} has no base call in schemasweep.mjs`, t.name);

// variants are the values tried for a field of schema s.
function variants(s) {
  const v = [1, 1.5, -1, 0, true, null, 'x', '', [], {}];
  if (s.type === 'string') {
    const max = s.maxLength, min = s.minLength;
    if (max) v.push('a'.repeat(max), 'a'.repeat(max + 1), '😀'.repeat(max), '😀'.repeat(max + 1), 'e\u0301'.repeat(Math.floor(max / 2)));
    if (min) v.push('a'.repeat(min - 1), 'b'.repeat(min));
    v.push('\u0000', 'a\u0000b', '\uD800', 'a\uDC00', '\u200F', '\u202Eabc', '\uFEFF', '\u00A0', '\u3000', ' ', '\t', 'x\n', 'A', '١');
    if (s.enum) { for (const e of s.enum) v.push(e, e.toUpperCase(), `${e} `, `${e}\u0000`); v.push('unknown'); }
    if (s.pattern) v.push('ab', 'a-b', '-ab', 'ab\n', 'AB', 'a'.repeat(64), 'a'.repeat(65), 'a'.repeat(128), 'a'.repeat(129), 'abc1234', 'ABCDEF1', 'abcdefg', '0'.repeat(64), '0'.repeat(65), 'ａｂ', 'ab.c', 'ab_c');
    if (s.format === 'date-time') {
      v.push('2026-01-01T00:00:00Z', '2026-01-01t00:00:00z', '2026-01-01 00:00:00Z', '2026-01-01T00:00:00+01:00', '2026-01-01T00:00:00.123456789Z',
        '2016-12-31T23:59:60Z', '2016-12-31T15:59:60-08:00', '2016-12-31T23:58:60Z', '2026-02-30T00:00:00Z', '2026-01-01T00:00:00', '2026-01-01',
        '2026-01-01T24:00:00Z', '2026-01-01T00:00:00+24:00', '2026-01-01T00:00:00+23:60', '2026-01-01T00:00:00-00:00', '2026-01-01T00:00:00.Z',
        '2026-01-01T00:00:00,5Z', '+2026-01-01T00:00:00Z');
    }
    v.push('T-0001', 'T-1', 't-0001', 'A-0001', 'Θ-0001', 'L-0001', ' T-0001', 'T-00001');
  }
  if (s.type === 'integer' || s.type === 'number') {
    v.push(2 ** 53, 1e300, -0, 0.5, 1e-7, 100, 101, 500, 501, 1000, 1000.5, 2 ** 31, 2 ** 63, 5e-324);
    if (s.minimum !== undefined) v.push(s.minimum, s.minimum - 1, s.minimum - 0.5);
    if (s.maximum !== undefined) v.push(s.maximum, s.maximum + 1, s.maximum + 0.5);
  }
  if (s.type === 'array') {
    const it = s.items ?? {};
    const item = (i) => (it.enum ? it.enum[i % it.enum.length] : `l${i}`);
    v.push([item(0)], [item(0), item(0)], [1], [null], [''], [[item(0)]], ['a'.repeat(65)], ['a'.repeat(1025)], ['\u0000'], ['\uD800']);
    if (s.maxItems) v.push(Array.from({ length: s.maxItems }, (_, i) => item(i)), Array.from({ length: s.maxItems + 1 }, (_, i) => item(i)));
    v.push(Array.from({ length: 60000 }, (_, i) => item(i)));
    if (it.enum) v.push(['UNKNOWN'], [it.enum[0].toUpperCase()]);
  }
  if (s.type === 'object') {
    const nest = (n) => { let o = {}; for (let i = 0; i < n; i++) o = { a: o }; return o; };
    v.push({ a: 1 }, { a: { b: [1, 2, { c: null }] } }, nest(60), nest(200), { '\u0000': 1 }, { a: '\uD800' },
      { a: 'x'.repeat(16 * 1024) }, { a: 'x'.repeat(16 * 1024 - 8) }, { a: 1e308 }, { '': '' });
  }
  return v;
}

for (const t of tools) {
  const validate = validators[t.name];
  const cases = [];
  for (const [p, s] of Object.entries(t.inputSchema.properties ?? {})) for (const val of variants(s)) cases.push({ set: { [p]: val } });
  for (const r of t.inputSchema.required ?? []) cases.push({ del: r });
  cases.push({ set: { bogus: 1 } }, { set: { '': 1 } }, { raw: {} });
  for (const c of cases) {
    summary.cases++;
    const args = { ...(c.raw ?? await base[t.name]()), ...(c.set ?? {}) };
    if (c.del) delete args[c.del];
    const schemaOK = validate(args);
    const r = await call(t.name, args);
    const invalid = !r.ok && r.error?.code === 'ERR_INVALID_INPUT';
    const what = `${t.name} ${JSON.stringify(c.set ?? c).slice(0, 160)}`;
    if (!schemaOK && !invalid) {
      fail(`${what}: the schema refuses it (${validate.errors?.map((e) => `${e.instancePath} ${e.message}`).slice(0, 2).join('; ')}), the server does not`, r);
    }
    if (schemaOK && invalid) summary.schema_allows_server_refuses++;
    if (invalid && !schemaOK && c.set) {
      const k = Object.keys(c.set)[0];
      if (!r.error.details.issues.some((i) => i.path === k || i.path.startsWith(`${k}[`) || i.path.startsWith(`${k}.`))) fail(`${what}: no issue names ${k}`, r.error);
    }
  }
}
await client.close();
if (/panic|DATA RACE/.test(stderr)) fail('server stderr', stderr.slice(0, 2000));
summary.ok = summary.failures.length === 0;
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
