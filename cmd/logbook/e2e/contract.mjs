// contract.mjs checks the semantics of every tool against CONTRACT.md through
// the official MCP TypeScript SDK client, over stdio (`logbook serve`) or
// Streamable HTTP (`logbook server` with a bearer token): fields, defaults,
// limits, filters, ordering, paging, the task state machine, audit sessions,
// skills, and every reachable error code with the detail it names. A failed
// call is checked to leave nothing behind.
//
// Usage: node contract.mjs --bin BIN --db DB --skills DIR          (stdio)
//        node contract.mjs --url URL --token T                      (HTTP)
//
// It prints one JSON summary on stdout ({ok, checks, failures, outcomes})
// and exits 0 only if every check held. `outcomes` maps each case to the
// error code (or "ok") it got, so two transports can be compared.
import { parseArgs } from 'node:util';
import { createHash } from 'node:crypto';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const { values: opts } = parseArgs({
  options: {
    bin: { type: 'string' }, db: { type: 'string' }, skills: { type: 'string' },
    url: { type: 'string' }, token: { type: 'string' },
    mode: { type: 'string' }, // full (default), read-only, project=NAME (the server runs with --project NAME)
    agent: { type: 'string' }, // the identity the server must record
    'serve-args': { type: 'string' }, // extra serve flags, comma-separated
    protocol: { type: 'string' }, // the protocol revision to ask for at initialize (default: the SDK's latest)
  },
});

const summary = { ok: false, transport: opts.url ? 'http' : 'stdio', checks: 0, failures: [], outcomes: {}, receipts: [] };

// jcs is the RFC 8785 canonical form of a JSON value: members sorted by
// UTF-16 code units, no space, numbers and strings as ECMAScript writes
// them (CONTRACT.md §1: tool.called holds the SHA-256 of the canonical
// arguments).
function jcs(v) {
  if (Array.isArray(v)) return `[${v.map(jcs).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v).sort().map((k) => `${JSON.stringify(k)}:${jcs(v[k])}`).join(',')}}`;
  }
  return JSON.stringify(v);
}
const sha256 = (s) => createHash('sha256').update(s, 'utf8').digest('hex');

function check(cond, what, detail) {
  summary.checks++;
  if (!cond) summary.failures.push(detail === undefined ? what : `${what}: ${JSON.stringify(detail)}`);
  return cond;
}

// forceProtocol wraps a transport so that the initialize request asks for
// revision v, and records the revision the server answers with.
let negotiated;
function forceProtocol(inner, v) {
  let initID;
  const tap = {
    async start() {
      inner.onmessage = (msg, extra) => {
        if (msg.id !== undefined && msg.id === initID && msg.result) negotiated = msg.result.protocolVersion;
        tap.onmessage?.(msg, extra);
      };
      inner.onclose = () => tap.onclose?.();
      inner.onerror = (e) => tap.onerror?.(e);
      return inner.start();
    },
    async send(msg, options) {
      if (msg.method === 'initialize') {
        initID = msg.id;
        msg = { ...msg, params: { ...msg.params, protocolVersion: v } };
      }
      return inner.send(msg, options);
    },
    async close() { return inner.close(); },
    get sessionId() { return inner.sessionId; },
    setProtocolVersion(ver) { inner.setProtocolVersion?.(ver); },
  };
  return tap;
}

const CLIENT = 'contract-client';
let client;
async function connect() {
  client = new Client({ name: CLIENT, version: '1.0.0' });
  let transport;
  if (opts.url) {
    transport = new StreamableHTTPClientTransport(new URL(opts.url), {
      requestInit: { headers: { Authorization: `Bearer ${opts.token}` } },
    });
  } else {
    transport = new StdioClientTransport({
      command: opts.bin,
      args: ['serve', ...(opts.db ? ['--db', opts.db] : []), ...(opts.skills ? ['--skills', opts.skills] : []), ...(opts['serve-args'] ? opts['serve-args'].split(',') : [])],
      env: { ...process.env, LOGBOOK_DB: '' },
      stderr: 'ignore',
    });
  }
  if (opts.protocol) transport = forceProtocol(transport, opts.protocol);
  await client.connect(transport);
  if (opts.protocol) check(negotiated === opts.protocol, `initialize: protocol ${opts.protocol} negotiated`, negotiated);
  const instructions = client.getInstructions();
  check(typeof instructions === 'string' && instructions.startsWith('logbook keeps a tamper-evident record'), 'initialize: the instructions for the model', instructions);
  // The SDK checks every later structuredContent against the tool's
  // outputSchema once it has listed the tools.
  const { tools } = await client.listTools();
  // Under data, the fields every success carries are required, so the
  // SDK's check of each result holds the server to them.
  for (const t of tools) {
    const data = t.outputSchema?.properties?.data;
    check(Array.isArray(data?.required) && data.required.length > 0 && data.required.every((k) => Object.hasOwn(data.properties, k)), `tools/list: ${t.name} outputSchema requires its data fields`, data?.required);
  }
  // The schemas as the server writes them, members in its order (the
  // required arguments first), on every transport: serve --connect listed
  // them re-encoded with their members sorted.
  schemaMatches(tools);
  const tc = tools.find((t) => t.name === 'task_create');
  check(eq(Object.keys(tc?.inputSchema ?? {}), ['type', 'properties', 'required', 'additionalProperties']) &&
    eq(Object.keys(tc.inputSchema.properties), ['title', 'project', 'description', 'parent_id', 'priority', 'labels', 'assignee', 'estimate_hours']),
    'tools/list: task_create inputSchema members in the server\'s order', tc && Object.keys(tc.inputSchema.properties));
}

// CONTRACT lists, for each of the contract's 14 tools, the arguments and
// result fields CONTRACT.md names, as "name:type" with the rules it states:
// ! required, =a|b enum, d=default, lo..hi a range (numbers) or a length
// (strings, arrays' items count with #), [type] the items. schemaMatches
// holds the published schemas to it: a field the contract names that the
// schema lacks, types differently or bounds otherwise is a failure.
const ENUM = {
  status: 'backlog|todo|in_progress|blocked|review|done|cancelled', priority: 'low|normal|high|critical',
  type: 'plan|analysis|decision|reflection|discovery|risk|blockers',
};
// A list's items are domain objects too: their seq (CONTRACT.md §1, "Every
// domain object also reports the ledger seq of the event that last changed
// it") is listed with them, though the per-tool lists leave it out.
const CONTRACT = {
  task_create: {
    in: ['title:string! 1..256', 'project:string!', 'description:string ..8000', 'parent_id:string', `priority:string =${ENUM.priority} d=normal`,
      'labels:array[string 1..64] #..20', 'assignee:string 1..128 d=unassigned', 'estimate_hours:number 0..1000'],
    out: ['task_id:string', 'status:string', 'created_at:string', 'created_by:string', 'sequence:integer', 'seq:integer'],
  },
  task_update: {
    in: ['task_id:string!', `status:string =${ENUM.status}`, 'progress:integer 0..100', 'title:string 1..256', 'description:string ..8000',
      `priority:string =${ENUM.priority}`, 'assignee:string 1..128', 'labels:array[string 1..64] #..20', 'blocked_reason:string'],
    out: ['task_id:string', 'status:string', 'progress:integer', 'updated_at:string', 'updated_by:string', 'previous_status:string', 'warnings:array[string]', 'seq:integer'],
  },
  task_get: {
    in: ['task_id:string!', 'include_thought_trail:boolean d=false', 'include_dependents:boolean d=false', 'as_of_seq:integer'],
    out: ['task_id:string', 'title:string', 'description:string', 'project:string', 'status:string', 'priority:string', 'progress:integer',
      'assignee:string', 'labels:array[string]', 'estimate_hours:number', 'created_at:string', 'updated_at:string', 'created_by:string',
      'updated_by:string', 'parent_id:string', 'blocked_reason:string', 'sequence:integer', 'seq:integer', 'thought_trail:array[string]', 'dependents:array[string]'],
  },
  task_list: {
    in: ['project:string', `status:array[string =${ENUM.status}]`, `priority:array[string =${ENUM.priority}]`, 'assignee:string', 'label:string',
      'created_after:string', 'created_before:string', 'search:string', 'limit:integer 1..500 d=50', 'offset:integer 0..',
      'sort_by:string =created|updated|priority|progress d=updated', 'sort_order:string =asc|desc d=desc'],
    out: ['tasks:array[object]', 'total_count:integer', 'returned_count:integer', 'offset:integer', 'limit:integer'],
    items: { tasks: ['task_id:string', 'title:string', 'project:string', 'status:string', 'priority:string', 'progress:integer', 'assignee:string', 'created_at:string', 'updated_at:string', 'seq:integer'] },
  },
  task_next_actions: {
    in: ['project:string', 'limit:integer 1..100 d=20', 'include_blocked:boolean d=false'],
    out: ['next_actions:array[object]', 'count:integer', 'project:string', 'blocked:array[object]'],
    items: {
      next_actions: ['task_id:string', 'title:string', 'priority:string', 'assignee:string', 'estimate_hours:number', 'parent_id:string', 'dependencies_unmet:integer', 'seq:integer'],
      blocked: ['task_id:string', 'title:string', 'blocked_reason:string', 'seq:integer'],
    },
  },
  thought_record: {
    // type and content: required, as TOOLS.md says (the contract marks
    // only task_id, but gives type no default and content a least length)
    in: ['task_id:string!', `type:string! =${ENUM.type}`, 'content:string! 1..5000', 'session_id:string', 'branch:string ..256', 'commit_sha:string',
      'tests_run:array[string] #..100', 'blockers:array[string] #..50', 'metadata:object'],
    out: ['thought_id:string', 'task_id:string', 'type:string', 'hash:string', 'previous_hash:string', 'recorded_at:string', 'recorded_by:string', 'chain_position:integer', 'seq:integer'],
  },
  thought_record_list: {
    in: ['task_id:string', 'session_id:string', `type:string =${ENUM.type}`, 'limit:integer 1..500 d=100', 'verify_chain:boolean d=false'],
    out: ['task_id:string', 'session_id:string', 'thought_count:integer', 'thoughts:array[object]', 'chain_valid:boolean', 'invalid_links:array[integer]'],
    items: { thoughts: ['thought_id:string', 'task_id:string', 'type:string', 'content:string', 'hash:string', 'previous_hash:string', 'recorded_at:string', 'recorded_by:string', 'chain_position:integer', 'seq:integer'] },
  },
  audit_session_start: {
    in: ['task_id:string!', 'auditor_id:string! 1..128', 'reason:string ..1000', 'scope:string =shallow|deep d=shallow'],
    out: ['session_id:string', 'task_id:string', 'auditor_id:string', 'started_at:string', 'scope:string', 'start_seq:integer'],
  },
  merkle_finalize: {
    in: ['session_id:string!', 'task_id:string'],
    out: ['session_id:string', 'merkle_root:string', 'tree_depth:integer', 'leaf_count:integer', 'first_seq:integer', 'last_seq:integer', 'finalized_at:string',
      'frozen:boolean', 'ledger_size:integer', 'ledger_root:string'],
  },
  merkle_root: {
    in: ['session_id:string!'],
    out: ['session_id:string', 'merkle_root:string', 'leaf_count:integer', 'is_finalized:boolean', 'as_of:string', 'as_of_seq:integer'],
  },
  audit_verify_chain: {
    in: ['session_id:string', 'task_id:string', 'full_trace:boolean d=false'],
    out: ['session_id:string', 'task_id:string', 'chain_valid:boolean', 'total_records:integer', 'integrity_score:number', 'broken_links:array[object]',
      'verified_at:string', 'merkle_valid:boolean', 'hashes:array[object]'],
    items: { broken_links: ['position:integer', 'expected_hash:string', 'actual_hash:string'], hashes: ['seq:integer', 'hash:string'] },
  },
  skill_list: {
    in: ['search:string', 'capability:string'],
    out: ['skills:array[object]', 'total_count:integer'],
    items: { skills: ['name:string', 'version:string', 'description:string', 'capabilities:array[string]', 'path:string'] },
  },
  server_ping: { in: [], out: ['timestamp:string'] },
  server_health: {
    in: [],
    out: ['status:string', 'mode:string', 'uptime_ms:integer', 'version:string', 'timestamp:string', 'db:object', 'ledger:object', 'projections:object',
      'middleware:object', 'tools:object', 'skills:object'],
    items: {
      db: ['open:boolean', 'path:string', 'format_version:any', 'size_bytes:integer'], ledger: ['head_seq:integer', 'head_hash:string', 'root:string'],
      projections: ['version:any', 'applied_seq:integer'], middleware: ['stages:array[string]'], tools: ['registered:integer'], skills: ['loaded:integer', 'skipped:array[object]'],
    },
  },
};

// types is a schema's type as a list, "null" left out.
const types = (s) => [s?.type ?? []].flat().filter((t) => t !== 'null');

// fieldMatches checks one "name:type rules" of the contract against the
// schema of that name.
function fieldMatches(where, spec, sch, required) {
  const [, name, typ, bang, inner, rest] = /^(\w+):(\w+)(!?)(?:\[([^\]]*)\])?(.*)$/.exec(spec);
  const req = bang === '!';
  const rules = rest.trim() ? rest.trim().split(' ') : [];
  const what = `tools/list: ${where}.${name}`;
  if (!check(sch !== undefined, `${what} published (CONTRACT.md names it)`)) return;
  if (typ !== 'any') check(eq(types(sch), [typ]), `${what} is ${typ}`, sch.type);
  if (required) check(required.includes(name) === req, `${what} ${req ? 'required' : 'optional'}`, required);
  if (inner !== undefined) {
    const [itemType, ...itemRules] = inner.split(' ');
    check(eq(types(sch.items), [itemType]), `${what}[] is ${itemType}`, sch.items);
    for (const r of itemRules) rule(`${what}[]`, r, sch.items, itemType);
  }
  for (const r of rules) rule(what, r, sch, typ);
}

function rule(what, r, sch, typ) {
  if (r.startsWith('=')) {
    const want = r.slice(1).split('|');
    check(eq(sch.enum, want), `${what}: enum ${want.join('|')}`, sch.enum);
  } else if (r.startsWith('d=')) {
    const want = r.slice(2);
    check(String(sch.default) === want, `${what}: default ${want}`, sch.default);
  } else if (r.includes('..')) {
    const items = r.startsWith('#');
    const [lo, hi] = r.replace('#', '').split('..').map((x) => (x === '' ? undefined : Number(x)));
    const [kLo, kHi] = items ? ['minItems', 'maxItems'] : typ === 'string' ? ['minLength', 'maxLength'] : ['minimum', 'maximum'];
    if (lo !== undefined) check(sch[kLo] === lo || (lo === 0 && kLo === 'minLength' && sch[kLo] === undefined), `${what}: ${kLo} ${lo}`, sch[kLo]);
    if (hi !== undefined) check(sch[kHi] === hi, `${what}: ${kHi} ${hi}`, sch[kHi]);
  }
}

// schemaMatches holds every contract tool's published schemas to CONTRACT.
function schemaMatches(tools) {
  for (const [name, c] of Object.entries(CONTRACT)) {
    const t = tools.find((x) => x.name === name);
    if (!check(t !== undefined, `tools/list: ${name} listed`)) continue;
    const ins = t.inputSchema;
    check(ins.type === 'object' && ins.additionalProperties === false, `tools/list: ${name} inputSchema an object refusing unknown keys`, ins);
    for (const spec of c.in) fieldMatches(`${name} in`, spec, ins.properties?.[spec.split(':')[0]], ins.required ?? []);
    // no argument beyond the contract's but those TOOLS.md documents
    check(Object.keys(ins.properties ?? {}).every((k) => c.in.some((spec) => spec.split(':')[0] === k)), `tools/list: ${name} takes the contract's arguments`, Object.keys(ins.properties ?? {}));
    check(t.outputSchema?.type === 'object', `tools/list: ${name} outputSchema an object`);
    const data = t.outputSchema?.properties?.data;
    for (const spec of c.out) {
      const f = spec.split(':')[0];
      fieldMatches(`${name} out`, spec, data?.properties?.[f]);
      for (const sub of c.items?.[f] ?? []) {
        const at = data?.properties?.[f];
        fieldMatches(`${name} out ${f}`, sub, (at?.items ?? at)?.properties?.[sub.split(':')[0]]);
      }
    }
  }
}

// call returns the envelope, after checking it is the same JSON in
// structuredContent and in the one text item, and isError iff ok is false.
async function call(label, name, args) {
  const res = await client.callTool({ name, arguments: args });
  const env = res.structuredContent;
  check(env && typeof env.ok === 'boolean', `${label}: an envelope`, res);
  check(Array.isArray(res.content) && res.content.length === 1 && res.content[0].type === 'text', `${label}: one text item`, res.content);
  let text;
  try { text = JSON.parse(res.content[0].text); } catch { text = undefined; }
  check(JSON.stringify(text) === JSON.stringify(env), `${label}: text equals structuredContent`);
  check(Boolean(res.isError) === (env.ok === false), `${label}: isError iff ok false`, { isError: res.isError, ok: env.ok });
  // Every transport answers as serve's own stdio does: no _meta (serve
  // --connect passed on the serverInfo the go-sdk adds for its client).
  check(res._meta === undefined, `${label}: no _meta`, res._meta);
  summary.outcomes[label] = env.ok ? 'ok' : env.error.code;
  // The receipt of the call: what its tool.called event must say
  // (checked against the ledger by TestContractTypeScriptClient).
  summary.receipts.push({ label, tool: name, args_sha256: sha256(jcs(args ?? {})), result_sha256: sha256(res.content[0].text), outcome: env.ok ? 'OK' : env.error.code, client: CLIENT,
    subjects: ['task_id', 'parent_id', 'source_task_id', 'session_id'].map((k) => args?.[k]).filter((v) => typeof v === 'string' && v !== '') });
  if (!env.ok) {
    check(typeof env.error.message === 'string' && env.error.message.length > 0, `${label}: an error message`);
    check(env.error.details === undefined || (typeof env.error.details === 'object' && env.error.details !== null), `${label}: details an object`, env.error);
  }
  return env;
}

// shapes checks, at any depth of a result, the forms the contract fixes for
// every tool: times RFC 3339 UTC with milliseconds, seqs whole numbers,
// hashes and roots 64 hex digits, ids with their prefix and 4+ digits.
const ID = { task_id: /^T-\d{4,}$/, parent_id: /^T-\d{4,}$/, session_id: /^A-\d{4,}$/, thought_id: /^Θ-\d{4,}$/ };
function shapes(label, v, path = '') {
  if (Array.isArray(v)) { v.forEach((x, i) => shapes(label, x, `${path}[${i}]`)); return; }
  if (v === null || typeof v !== 'object') return;
  for (const [k, x] of Object.entries(v)) {
    const at = path ? `${path}.${k}` : k;
    if (/_at$|^timestamp$|^as_of$/.test(k)) check(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(x), `${label}: ${at} is RFC 3339 UTC with milliseconds`, x);
    else if (/(^|_)seq$/.test(k)) check(Number.isInteger(x) && x >= 0, `${label}: ${at} is a whole number`, x);
    else if (/(^|_)hash$|_root$/.test(k) && k !== 'previous_hash') check(hex64(x), `${label}: ${at} is 64 hex digits`, x);
    else if (k === 'previous_hash') check(x === null || hex64(x), `${label}: ${at} is null or 64 hex digits`, x);
    else if (ID[k] && typeof x === 'string') check(ID[k].test(x), `${label}: ${at} is an id`, x);
    shapes(label, x, at);
  }
}

async function ok(label, name, args) {
  const env = await call(label, name, args);
  check(env.ok === true, `${label}: ok`, env.error);
  if (env.ok) shapes(label, env.data);
  return env.ok ? env.data : {};
}

// fail checks the error code and that each of details' given fields is as
// expected (a function is a predicate).
async function fail(label, name, args, code, details = {}) {
  const env = await call(label, name, args);
  if (!check(env.ok === false && env.error.code === code, `${label}: ${code}`, env.ok ? env.data : env.error)) return env;
  const d = env.error.details || {};
  // CONTRACT.md §2: the details each code carries, whatever the case.
  for (const k of DETAILS[code] ?? []) check(Object.hasOwn(d, k), `${label}: details.${k} (CONTRACT.md §2)`, d);
  if (code === 'ERR_INVALID_INPUT') {
    check(Array.isArray(d.issues) && d.issues.length > 0 && d.issues.every((i) => typeof i.path === 'string' && typeof i.message === 'string' && i.message.length > 0),
      `${label}: details.issues are [{path, message}]`, d.issues);
  }
  if (code === 'ERR_INVALID_TRANSITION') check(typeof d.from === 'string' && typeof d.to === 'string' && Array.isArray(d.allowed), `${label}: details from, to, allowed[]`, d);
  if (code === 'ERR_WRITEBACK_REQUIRED') check(eq(d.missing_fields, ['thought_record']), `${label}: details.missing_fields`, d);
  for (const [k, v] of Object.entries(details)) {
    if (typeof v === 'function') check(v(d[k]), `${label}: details.${k}`, d);
    else check(JSON.stringify(d[k]) === JSON.stringify(v), `${label}: details.${k} = ${JSON.stringify(v)}`, d);
  }
  return env;
}

// DETAILS is CONTRACT.md §2's details column: the fields each code names.
const DETAILS = {
  ERR_INVALID_INPUT: ['issues'], ERR_TASK_NOT_FOUND: ['task_id'], ERR_PROJECT_NOT_FOUND: ['project'],
  ERR_SESSION_NOT_FOUND: ['session_id'], ERR_INVALID_TRANSITION: ['from', 'to', 'allowed'], ERR_TASK_CLOSED: ['task_id', 'status'],
  ERR_WRITEBACK_REQUIRED: ['task_id', 'missing_fields'], ERR_CIRCULAR_DEPENDENCY: ['task_id', 'parent_id'],
  ERR_ALREADY_FINALIZED: ['session_id'], ERR_FORBIDDEN: ['tool'], ERR_DUPLICATE: ['existing_id'], ERR_STORAGE: ['reason'],
};
const issueAt = (path) => (issues) => Array.isArray(issues) && issues.some((i) => i.path === path || String(i.path).startsWith(path));
const rfc3339utc = (s) => typeof s === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/.test(s);
const hex64 = (s) => typeof s === 'string' && /^[0-9a-f]{64}$/.test(s);
const isInt = (n) => Number.isInteger(n);
// mth is the RFC 9162 Merkle tree hash over leaf hashes (hex).
function mth(leaves) {
  const node = (l, r) => createHash('sha256').update(Buffer.concat([Buffer.from([1]), Buffer.from(l, 'hex'), Buffer.from(r, 'hex')])).digest('hex');
  const rec = (a) => {
    if (a.length === 1) return a[0];
    let k = 1;
    while (k * 2 < a.length) k *= 2;
    return node(rec(a.slice(0, k)), rec(a.slice(k)));
  };
  return leaves.length === 0 ? createHash('sha256').digest('hex') : rec(leaves);
}
const eq = (a, b) => JSON.stringify(a) === JSON.stringify(b);
function hasKeys(label, obj, keys) {
  for (const k of keys) check(Object.hasOwn(obj, k), `${label}: field ${k}`, Object.keys(obj));
}

// A unique project per run keeps the HTTP and stdio runs apart.
const P = 'ctr-' + Math.random().toString(36).slice(2, 8);
const P2 = P + '-b';

async function tasks() {
  // ---- task_create
  const c1 = await ok('create.minimal', 'task_create', { title: 'first', project: P });
  hasKeys('create.minimal', c1, ['task_id', 'status', 'created_at', 'created_by', 'sequence', 'seq']);
  check(/^T-\d{4,}$/.test(c1.task_id), 'create: id T-NNNN', c1.task_id);
  check(c1.status === 'backlog', 'create: status backlog', c1);
  check(c1.sequence === 1, 'create: sequence 1 for the first task of the project', c1);
  check(rfc3339utc(c1.created_at), 'create: created_at RFC 3339 UTC', c1.created_at);
  check(isInt(c1.seq) && c1.seq > 0, 'create: seq', c1);
  check(c1.created_by === opts.agent, 'create: created_by is the caller identity', [c1.created_by, opts.agent]);
  const g1 = await ok('get.defaults', 'task_get', { task_id: c1.task_id });
  hasKeys('get.defaults', g1, ['task_id', 'title', 'description', 'project', 'status', 'priority', 'progress', 'assignee', 'labels', 'created_at', 'updated_at', 'created_by', 'updated_by', 'sequence', 'seq']);
  check(g1.priority === 'normal', 'create: priority default normal', g1);
  check(g1.assignee === 'unassigned', 'create: assignee default unassigned', g1);
  check(g1.progress === 0, 'create: progress 0', g1);
  check(eq(g1.labels, []), 'create: labels [] by default', g1.labels);
  check(g1.description === '', 'get: description empty string', g1.description);
  check(g1.thought_trail === undefined && g1.dependents === undefined, 'get: no trail/dependents unless asked', g1);
  check(g1.seq === c1.seq, 'get: seq of the event that last changed it', [g1.seq, c1.seq]);
  check(g1.parent_id == null && g1.blocked_reason == null && g1.estimate_hours == null, 'get: optional fields absent/null', g1);

  const c2 = await ok('create.full', 'task_create', {
    title: 'second', project: P, description: 'desc words here', parent_id: c1.task_id, priority: 'high',
    labels: ['a', 'b', 'a'], assignee: 'bob', estimate_hours: 2.5,
  });
  check(c2.sequence === 2, 'create: sequence 2', c2);
  const g2 = await ok('get.full', 'task_get', { task_id: c2.task_id });
  check(eq(g2.labels, ['a', 'b']), 'create: label duplicates removed, order kept', g2.labels);
  check(g2.parent_id === c1.task_id && g2.estimate_hours === 2.5 && g2.assignee === 'bob' && g2.priority === 'high', 'get: given fields', g2);

  // another project: sequence restarts
  const o1 = await ok('create.other', 'task_create', { title: 'other', project: P2 });
  check(o1.sequence === 1, 'create: sequence counts per project', o1);
  const before = (await ok('list.count.before', 'task_list', { project: P })).total_count;
  await fail('create.parent.unknown', 'task_create', { title: 'x', project: P, parent_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('create.parent.otherproject', 'task_create', { title: 'x', project: P, parent_id: o1.task_id }, 'ERR_INVALID_INPUT', { issues: issueAt('parent_id') });
  await fail('create.title.empty', 'task_create', { title: '', project: P }, 'ERR_INVALID_INPUT', { issues: issueAt('title') });
  await fail('create.title.257', 'task_create', { title: 'x'.repeat(257), project: P }, 'ERR_INVALID_INPUT', { issues: issueAt('title') });
  await ok('create.title.256', 'task_create', { title: 'x'.repeat(256), project: P });
  await fail('create.project.missing', 'task_create', { title: 'x' }, 'ERR_INVALID_INPUT', { issues: issueAt('project') });
  await fail('create.project.bad', 'task_create', { title: 'x', project: 'Bad' }, 'ERR_INVALID_INPUT', { issues: issueAt('project') });
  await fail('create.labels.21', 'task_create', { title: 'x', project: P, labels: Array.from({ length: 21 }, (_, i) => 'l' + i) }, 'ERR_INVALID_INPUT', { issues: issueAt('labels') });
  await ok('create.labels.20dup', 'task_create', { title: 'x', project: P, labels: [...Array.from({ length: 20 }, (_, i) => 'l' + i)] });
  await fail('create.estimate.1001', 'task_create', { title: 'x', project: P, estimate_hours: 1000.5 }, 'ERR_INVALID_INPUT', { issues: issueAt('estimate_hours') });
  await fail('create.estimate.neg', 'task_create', { title: 'x', project: P, estimate_hours: -1 }, 'ERR_INVALID_INPUT', { issues: issueAt('estimate_hours') });
  await fail('create.priority.bad', 'task_create', { title: 'x', project: P, priority: 'urgent' }, 'ERR_INVALID_INPUT', { issues: issueAt('priority') });
  await fail('create.assignee.empty', 'task_create', { title: 'x', project: P, assignee: '' }, 'ERR_INVALID_INPUT', { issues: issueAt('assignee') });
  await fail('create.unknown.key', 'task_create', { title: 'x', project: P, bogus: 1 }, 'ERR_INVALID_INPUT');
  const after = (await ok('list.count.after', 'task_list', { project: P })).total_count;
  check(after === before + 2, 'create: failed creates left no task', { before, after });
  const c3 = await ok('create.third', 'task_create', { title: 'third', project: P });
  check(c3.sequence === 5, 'create: sequence not consumed by failed creates', c3);

  // ---- task_update: the state machine
  const T = c3.task_id;
  await fail('update.only.id', 'task_update', { task_id: T }, 'ERR_INVALID_INPUT');
  await fail('update.unknown', 'task_update', { task_id: 'T-999999', title: 'y' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('update.backlog->in_progress', 'task_update', { task_id: T, status: 'in_progress' }, 'ERR_INVALID_TRANSITION',
    { from: 'backlog', to: 'in_progress', allowed: (a) => eq([...a].sort(), ['cancelled', 'todo']) });
  await fail('update.backlog->done', 'task_update', { task_id: T, status: 'done' }, 'ERR_INVALID_TRANSITION', { from: 'backlog', to: 'done' });
  const same = await ok('update.same.status', 'task_update', { task_id: T, status: 'backlog' });
  check(same.status === 'backlog' && same.previous_status === undefined, 'update: same status is no change, no previous_status', same);
  const u1 = await ok('update.backlog->todo', 'task_update', { task_id: T, status: 'todo' });
  hasKeys('update', u1, ['task_id', 'status', 'progress', 'updated_at', 'updated_by', 'seq']);
  check(u1.previous_status === 'backlog' && u1.status === 'todo', 'update: previous_status when changed', u1);
  check(rfc3339utc(u1.updated_at), 'update: updated_at', u1);
  await fail('update.blocked.noreason', 'task_update', { task_id: T, status: 'blocked' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  const gchk = await ok('get.after.rejected', 'task_get', { task_id: T });
  check(gchk.status === 'todo' && gchk.seq === u1.seq, 'update: a rejected update changed nothing', gchk);
  await fail('update.reason.notblocked', 'task_update', { task_id: T, blocked_reason: 'x' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  const b = await ok('update.todo->blocked', 'task_update', { task_id: T, status: 'blocked', blocked_reason: 'waiting on db' });
  check(b.status === 'blocked', 'update: blocked', b);
  check((await ok('get.blocked', 'task_get', { task_id: T })).blocked_reason === 'waiting on db', 'get: blocked_reason while blocked');
  await ok('update.blocked.reason.change', 'task_update', { task_id: T, blocked_reason: 'waiting on ops' });
  await fail('update.blocked->review', 'task_update', { task_id: T, status: 'review' }, 'ERR_INVALID_TRANSITION',
    { from: 'blocked', to: 'review', allowed: (a) => eq([...a].sort(), ['cancelled', 'in_progress', 'todo']) });
  await ok('update.blocked->in_progress', 'task_update', { task_id: T, status: 'in_progress' });
  const gb = await ok('get.unblocked', 'task_get', { task_id: T });
  check(gb.blocked_reason == null, 'update: blocked_reason cleared on leaving blocked', gb);
  const w = await ok('update.progress100', 'task_update', { task_id: T, progress: 100 });
  check(Array.isArray(w.warnings) && w.warnings.some((s) => s.includes('progress is 100 but status is in_progress')), 'update: progress warning', w);
  await fail('update.progress.101', 'task_update', { task_id: T, progress: 101 }, 'ERR_INVALID_INPUT', { issues: issueAt('progress') });
  await fail('update.progress.frac', 'task_update', { task_id: T, progress: 50.5 }, 'ERR_INVALID_INPUT', { issues: issueAt('progress') });
  await ok('update.progress50', 'task_update', { task_id: T, progress: 50 });
  await ok('update.in_progress->review', 'task_update', { task_id: T, status: 'review' });
  await fail('update.review->todo', 'task_update', { task_id: T, status: 'todo' }, 'ERR_INVALID_TRANSITION',
    { from: 'review', to: 'todo', allowed: (a) => eq([...a].sort(), ['backlog', 'blocked', 'cancelled', 'done']) });
  const beforeDone = await ok('get.beforedone', 'task_get', { task_id: T });
  await fail('update.done.nothought', 'task_update', { task_id: T, status: 'done' }, 'ERR_WRITEBACK_REQUIRED', { task_id: T, missing_fields: ['thought_record'] });
  await fail('update.done.nothought.with.title', 'task_update', { task_id: T, status: 'done', title: 'renamed' }, 'ERR_WRITEBACK_REQUIRED');
  const afterDone = await ok('get.afterdonefail', 'task_get', { task_id: T });
  check(afterDone.status === 'review' && afterDone.title === 'third' && afterDone.seq === beforeDone.seq, 'update: failed done left nothing', afterDone);
  await ok('thought.for.done', 'thought_record', { task_id: T, type: 'decision', content: 'ship it' });
  const d = await ok('update.review->done', 'task_update', { task_id: T, status: 'done' });
  check(d.status === 'done' && d.progress === 100 && d.previous_status === 'review', 'update: done sets progress 100', d);
  await fail('update.closed.title', 'task_update', { task_id: T, title: 'z' }, 'ERR_TASK_CLOSED', { task_id: T, status: 'done' });
  await fail('update.closed.same', 'task_update', { task_id: T, status: 'done' }, 'ERR_TASK_CLOSED', { task_id: T, status: 'done' });
  await fail('update.closed.reopen', 'task_update', { task_id: T, status: 'todo' }, 'ERR_TASK_CLOSED', { task_id: T, status: 'done' });
  const cx = await ok('create.cancel', 'task_create', { title: 'to cancel', project: P });
  await ok('update.backlog->cancelled', 'task_update', { task_id: cx.task_id, status: 'cancelled' });
  await fail('update.cancelled.priority', 'task_update', { task_id: cx.task_id, priority: 'low' }, 'ERR_TASK_CLOSED', { task_id: cx.task_id, status: 'cancelled' });
  // review -> backlog allowed
  const rb = await ok('create.rb', 'task_create', { title: 'review back', project: P });
  for (const s of ['todo', 'in_progress', 'review', 'backlog']) await ok(`update.rb.${s}`, 'task_update', { task_id: rb.task_id, status: s });
  // labels replace
  await ok('update.labels', 'task_update', { task_id: rb.task_id, labels: ['x', 'y', 'x'] });
  check(eq((await ok('get.labels', 'task_get', { task_id: rb.task_id })).labels, ['x', 'y']), 'update: labels replace, dups removed');
  // updated_by, updated_at
  const gu = await ok('get.updated', 'task_get', { task_id: rb.task_id });
  check(rfc3339utc(gu.updated_at) && gu.updated_at >= gu.created_at, 'get: updated_at', gu);

  // ---- task_get: trail, dependents, as_of_seq
  const gt = await ok('get.trail', 'task_get', { task_id: T, include_thought_trail: true, include_dependents: true });
  check(Array.isArray(gt.thought_trail) && gt.thought_trail.length === 1 && /^Θ-\d{4,}$/.test(gt.thought_trail[0]), 'get: thought_trail', gt.thought_trail);
  check(eq(gt.dependents, []), 'get: dependents [] when none', gt.dependents);
  const gp = await ok('get.dependents', 'task_get', { task_id: c1.task_id, include_dependents: true });
  check(eq(gp.dependents, [c2.task_id]), 'get: dependents lists sub-tasks', gp.dependents);
  const past = await ok('get.asof', 'task_get', { task_id: T, as_of_seq: u1.seq });
  check(past.status === 'todo' && past.seq === u1.seq, 'get: as_of_seq time travel', past);
  await fail('get.asof.before', 'task_get', { task_id: T, as_of_seq: c3.seq - 1 }, 'ERR_TASK_NOT_FOUND', { task_id: T });
  await fail('get.asof.zero', 'task_get', { task_id: T, as_of_seq: 0 }, 'ERR_TASK_NOT_FOUND');
  await fail('get.asof.future', 'task_get', { task_id: T, as_of_seq: 1e12 }, 'ERR_INVALID_INPUT', { issues: issueAt('as_of_seq') });
  await fail('get.unknown', 'task_get', { task_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('get.empty', 'task_get', { task_id: '' }, 'ERR_TASK_NOT_FOUND');
  await fail('get.missing', 'task_get', {}, 'ERR_INVALID_INPUT', { issues: issueAt('task_id') });
  return { c1, c2, T, rb };
}

async function lists() {
  const L = P + '-list';
  const made = [];
  const spec = [
    ['alpha one', 'low', 'ann', ['x']], ['beta two', 'critical', 'bob', ['y']], ['gamma three', 'high', 'ann', ['x', 'y']],
    ['delta four', 'normal', 'cat', []], ['Epsilon Five', 'critical', 'ann', ['z']],
  ];
  for (const [title, priority, assignee, labels] of spec) {
    made.push(await ok(`list.mk.${title}`, 'task_create', { title, project: L, priority, assignee, labels, description: `about ${title.split(' ')[0]} Widgets` }));
  }
  const ids = made.map((m) => m.task_id);
  // default: updated desc, limit 50, offset 0
  const all = await ok('list.default', 'task_list', { project: L });
  hasKeys('list', all, ['tasks', 'total_count', 'returned_count', 'offset', 'limit']);
  check(all.limit === 50 && all.offset === 0, 'list: default limit 50 offset 0', { limit: all.limit, offset: all.offset });
  check(all.total_count === 5 && all.returned_count === 5, 'list: counts', all);
  check(eq(all.tasks.map((t) => t.task_id), [...ids].reverse()), 'list: default updated desc', all.tasks.map((t) => t.task_id));
  hasKeys('list.item', all.tasks[0], ['task_id', 'title', 'project', 'status', 'priority', 'progress', 'assignee', 'created_at', 'updated_at', 'seq']);
  // §1: each item's seq is the task's, the one task_create answered
  check(eq(all.tasks.map((t) => t.seq), [...made].reverse().map((m) => m.seq)), 'list: each item\'s seq is its task_create seq', all.tasks.map((t) => [t.task_id, t.seq]));
  // update the first: updated desc puts it first, created desc does not
  const touch = await ok('list.touch', 'task_update', { task_id: ids[0], progress: 10 });
  const upd = await ok('list.updated', 'task_list', { project: L });
  check(upd.tasks[0].task_id === ids[0], 'list: updated desc puts the last changed first', upd.tasks.map((t) => t.task_id));
  check(upd.tasks[0].seq === touch.seq && touch.seq > made[0].seq, 'list: an updated task\'s seq moves to its task_update seq', [upd.tasks[0].seq, touch.seq]);
  for (const [i, t] of upd.tasks.entries()) {
    const g = await ok(`list.seq.get.${i}`, 'task_get', { task_id: t.task_id });
    check(t.seq === g.seq && t.updated_at === g.updated_at, `list: ${t.task_id}'s seq is the one task_get reports`, [t.seq, g.seq]);
  }
  const cr = await ok('list.created.asc', 'task_list', { project: L, sort_by: 'created', sort_order: 'asc' });
  check(eq(cr.tasks.map((t) => t.task_id), ids), 'list: created asc', cr.tasks.map((t) => t.task_id));
  const pr = await ok('list.priority.desc', 'task_list', { project: L, sort_by: 'priority' });
  check(eq(pr.tasks.map((t) => t.task_id), [ids[1], ids[4], ids[2], ids[3], ids[0]]), 'list: priority desc, ties by creation asc', pr.tasks.map((t) => [t.task_id, t.priority]));
  const pra = await ok('list.priority.asc', 'task_list', { project: L, sort_by: 'priority', sort_order: 'asc' });
  check(eq(pra.tasks.map((t) => t.task_id), [ids[0], ids[3], ids[2], ids[1], ids[4]]), 'list: priority asc, ties by creation asc', pra.tasks.map((t) => [t.task_id, t.priority]));
  const pg = await ok('list.progress', 'task_list', { project: L, sort_by: 'progress' });
  check(eq(pg.tasks.map((t) => t.task_id), [ids[0], ids[1], ids[2], ids[3], ids[4]]), 'list: progress desc, ties by creation asc', pg.tasks.map((t) => [t.task_id, t.progress]));
  // paging
  const p1 = await ok('list.page1', 'task_list', { project: L, sort_by: 'created', sort_order: 'asc', limit: 2 });
  const p2 = await ok('list.page2', 'task_list', { project: L, sort_by: 'created', sort_order: 'asc', limit: 2, offset: 2 });
  const p3 = await ok('list.page3', 'task_list', { project: L, sort_by: 'created', sort_order: 'asc', limit: 2, offset: 4 });
  const p4 = await ok('list.page4', 'task_list', { project: L, sort_by: 'created', sort_order: 'asc', limit: 2, offset: 5 });
  check(eq([...p1.tasks, ...p2.tasks, ...p3.tasks].map((t) => t.task_id), ids), 'list: pages tile without gap or overlap');
  check(p1.total_count === 5 && p1.returned_count === 2 && p3.returned_count === 1 && p4.returned_count === 0 && p4.total_count === 5 && p4.offset === 5 && p2.limit === 2, 'list: page counts', [p1, p3, p4].map((p) => [p.total_count, p.returned_count, p.offset, p.limit]));
  await fail('list.limit0', 'task_list', { limit: 0 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  await fail('list.limit501', 'task_list', { limit: 501 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  await ok('list.limit500', 'task_list', { limit: 500, project: L });
  await fail('list.offset.neg', 'task_list', { offset: -1 }, 'ERR_INVALID_INPUT', { issues: issueAt('offset') });
  await fail('list.sort.bad', 'task_list', { sort_by: 'title' }, 'ERR_INVALID_INPUT', { issues: issueAt('sort_by') });
  // filters
  const f = async (label, args, want) => {
    const r = await ok(label, 'task_list', { project: L, sort_by: 'created', sort_order: 'asc', ...args });
    check(eq(r.tasks.map((t) => t.task_id), want.map((i) => ids[i])) && r.total_count === want.length, `list filter ${label}`, r.tasks.map((t) => t.task_id));
  };
  await f('list.f.priority', { priority: ['critical', 'low'] }, [0, 1, 4]);
  await f('list.f.assignee', { assignee: 'ann' }, [0, 2, 4]);
  await f('list.f.label', { label: 'y' }, [1, 2]);
  await f('list.f.search.ci', { search: 'epsilon' }, [4]);
  await f('list.f.search.words', { search: 'WIDGETS gamma' }, [2]);
  await f('list.f.search.split', { search: 'three widgets' }, [2]);
  await f('list.f.search.none', { search: 'widgets zzz' }, []);
  await f('list.f.status', { status: ['backlog'] }, [0, 1, 2, 3, 4]);
  await f('list.f.status.todo', { status: ['todo'] }, []);
  const byId = Object.fromEntries(cr.tasks.map((t) => [t.task_id, t.created_at]));
  const mid = byId[ids[2]];
  await f('list.f.after', { created_after: mid }, [0, 1, 2, 3, 4].filter((i) => Date.parse(byId[ids[i]]) > Date.parse(mid)));
  await f('list.f.before', { created_before: mid }, [0, 1, 2, 3, 4].filter((i) => Date.parse(byId[ids[i]]) < Date.parse(mid)));
  await f('list.f.before.far', { created_before: '2000-01-01T00:00:00Z' }, []);
  await f('list.f.after.far', { created_after: '2000-01-01T00:00:00Z' }, [0, 1, 2, 3, 4]);
  await fail('list.f.after.bad', 'task_list', { created_after: 'yesterday' }, 'ERR_INVALID_INPUT', { issues: issueAt('created_after') });
  const unk = await ok('list.unknownproject', 'task_list', { project: 'no-such-project-zz' });
  check(unk.total_count === 0 && eq(unk.tasks, []), 'list: unknown project is an empty list', unk);
  return { L, ids };
}

async function next(L, ids) {
  // next_actions: todo only; deps unmet asc, priority, age
  const N = P + '-next';
  const a = await ok('next.mk.a', 'task_create', { title: 'a', project: N, priority: 'low' });
  const b = await ok('next.mk.b', 'task_create', { title: 'b', project: N, priority: 'critical', estimate_hours: 3 });
  const c = await ok('next.mk.c', 'task_create', { title: 'c', project: N, priority: 'critical' });
  const kid = await ok('next.mk.kid', 'task_create', { title: 'kid', project: N, parent_id: c.task_id });
  const kid2 = await ok('next.mk.kid2', 'task_create', { title: 'kid2', project: N, parent_id: c.task_id });
  const bl = await ok('next.mk.bl', 'task_create', { title: 'bl', project: N });
  for (const [i, t] of [a, b, c, kid, bl].entries()) await ok(`next.todo.${i}`, 'task_update', { task_id: t.task_id, status: 'todo' });
  const block = await ok('next.block', 'task_update', { task_id: bl.task_id, status: 'blocked', blocked_reason: 'why not' });
  await ok('next.cancel.kid2', 'task_update', { task_id: kid2.task_id, status: 'cancelled' });
  const n = await ok('next.default', 'task_next_actions', { project: N });
  hasKeys('next', n, ['next_actions', 'count', 'project']);
  check(n.project === N, 'next: project echoed', n.project);
  check(eq(n.next_actions.map((x) => x.task_id), [b.task_id, kid.task_id, a.task_id, c.task_id]), 'next: order deps asc, priority, age', n.next_actions.map((x) => [x.task_id, x.priority, x.dependencies_unmet]));
  check(n.count === 4, 'next: count', n.count);
  const nc = n.next_actions.find((x) => x.task_id === c.task_id);
  check(nc && nc.dependencies_unmet === 1, 'next: dependencies_unmet counts unfinished sub-tasks only', nc);
  const nb = n.next_actions.find((x) => x.task_id === b.task_id);
  check(nb && nb.estimate_hours === 3 && nb.assignee === 'unassigned', 'next: estimate_hours, assignee', nb);
  const nk = n.next_actions.find((x) => x.task_id === kid.task_id);
  check(nk && nk.parent_id === c.task_id, 'next: parent_id', nk);
  hasKeys('next.item', nb, ['task_id', 'title', 'priority', 'assignee', 'dependencies_unmet', 'seq']);
  for (const [i, x] of n.next_actions.entries()) {
    const g = await ok(`next.seq.get.${i}`, 'task_get', { task_id: x.task_id });
    check(x.seq === g.seq, `next: ${x.task_id}'s seq is the one task_get reports`, [x.seq, g.seq]);
  }
  check(n.blocked === undefined || n.blocked === null, 'next: no blocked unless asked', n.blocked);
  const nbk = await ok('next.blocked', 'task_next_actions', { project: N, include_blocked: true, limit: 1 });
  check(nbk.count === 1 && nbk.next_actions.length === 1 && nbk.next_actions[0].task_id === b.task_id, 'next: limit', nbk);
  check(Array.isArray(nbk.blocked) && nbk.blocked.length === 1 && nbk.blocked[0].task_id === bl.task_id && nbk.blocked[0].blocked_reason === 'why not' && nbk.blocked[0].title === 'bl', 'next: blocked list', nbk.blocked);
  check(nbk.blocked[0]?.seq === block.seq, 'next: a blocked item\'s seq is its blocking task_update seq', [nbk.blocked[0]?.seq, block.seq]);
  await fail('next.unknown', 'task_next_actions', { project: 'no-such-project-zz' }, 'ERR_PROJECT_NOT_FOUND', { project: 'no-such-project-zz' });
  await fail('next.limit0', 'task_next_actions', { limit: 0 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  await fail('next.limit101', 'task_next_actions', { limit: 101 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  const all = await ok('next.all', 'task_next_actions', { limit: 100 });
  check(all.project === undefined || all.project === null, 'next: all projects → project null/absent', all.project);
  const big = await ok('next.default.limit', 'task_next_actions', {});
  check(big.count <= 20, 'next: default limit 20', big.count);
  // sub-task done → dependency met
  await ok('next.kid.ip', 'task_update', { task_id: kid.task_id, status: 'in_progress' });
  await ok('next.kid.th', 'thought_record', { task_id: kid.task_id, type: 'plan', content: 'p' });
  await ok('next.kid.rv', 'task_update', { task_id: kid.task_id, status: 'review' });
  await ok('next.kid.done', 'task_update', { task_id: kid.task_id, status: 'done' });
  const n2 = await ok('next.after', 'task_next_actions', { project: N });
  check(eq(n2.next_actions.map((x) => x.task_id), [b.task_id, c.task_id, a.task_id]), 'next: done sub-task no longer unmet', n2.next_actions.map((x) => [x.task_id, x.dependencies_unmet]));
}

async function thoughts() {
  const TP = P + '-th';
  const t = (await ok('th.mk', 'task_create', { title: 't', project: TP })).task_id;
  const t2 = (await ok('th.mk2', 'task_create', { title: 't2', project: TP })).task_id;
  const r1 = await ok('th.first', 'thought_record', { task_id: t, type: 'plan', content: 'step one', branch: 'main', commit_sha: 'abcdef1', tests_run: ['go test: ok'], blockers: [], metadata: { k: 1 } });
  hasKeys('th', r1, ['thought_id', 'task_id', 'type', 'hash', 'previous_hash', 'recorded_at', 'recorded_by', 'chain_position', 'seq']);
  check(/^Θ-\d{4,}$/.test(r1.thought_id), 'thought: id Θ-NNNN', r1.thought_id);
  check(r1.previous_hash === null && r1.chain_position === 1 && hex64(r1.hash), 'thought: first has previous_hash null, position 1', r1);
  const other = await ok('th.other', 'thought_record', { task_id: t2, type: 'risk', content: 'other task' });
  check(other.previous_hash === null && other.chain_position === 1, 'thought: chain per task', other);
  const r2 = await ok('th.second', 'thought_record', { task_id: t, type: 'decision', content: 'step two' });
  check(r2.previous_hash === r1.hash && r2.chain_position === 2, 'thought: links to the previous thought of its task', r2);
  const before = await ok('th.count.before', 'thought_record_list', { task_id: t });
  await fail('th.unknown.task', 'thought_record', { task_id: 'T-999999', type: 'plan', content: 'x' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('th.blank', 'thought_record', { task_id: t, type: 'plan', content: '   ' }, 'ERR_INVALID_INPUT', { issues: issueAt('content') });
  await fail('th.too.long', 'thought_record', { task_id: t, type: 'plan', content: 'x'.repeat(5001) }, 'ERR_INVALID_INPUT', { issues: issueAt('content') });
  await ok('th.5000', 'thought_record', { task_id: t2, type: 'plan', content: 'x'.repeat(5000) });
  await fail('th.type.bad', 'thought_record', { task_id: t, type: 'idea', content: 'x' }, 'ERR_INVALID_INPUT', { issues: issueAt('type') });
  await fail('th.type.missing', 'thought_record', { task_id: t, content: 'x' }, 'ERR_INVALID_INPUT', { issues: issueAt('type') });
  await fail('th.sha.short', 'thought_record', { task_id: t, type: 'plan', content: 'x', commit_sha: 'abc12' }, 'ERR_INVALID_INPUT', { issues: issueAt('commit_sha') });
  await fail('th.sha.65', 'thought_record', { task_id: t, type: 'plan', content: 'x', commit_sha: 'a'.repeat(65) }, 'ERR_INVALID_INPUT', { issues: issueAt('commit_sha') });
  await fail('th.tests.101', 'thought_record', { task_id: t, type: 'plan', content: 'x', tests_run: Array(101).fill('t') }, 'ERR_INVALID_INPUT', { issues: issueAt('tests_run') });
  await fail('th.blockers.51', 'thought_record', { task_id: t, type: 'plan', content: 'x', blockers: Array(51).fill('b') }, 'ERR_INVALID_INPUT', { issues: issueAt('blockers') });
  await fail('th.branch.257', 'thought_record', { task_id: t, type: 'plan', content: 'x', branch: 'b'.repeat(257) }, 'ERR_INVALID_INPUT', { issues: issueAt('branch') });
  await fail('th.meta.big', 'thought_record', { task_id: t, type: 'plan', content: 'x', metadata: { big: 'x'.repeat(17 * 1024) } }, 'ERR_INVALID_INPUT', { issues: issueAt('metadata') });
  await fail('th.meta.notobj', 'thought_record', { task_id: t, type: 'plan', content: 'x', metadata: [1] }, 'ERR_INVALID_INPUT', { issues: issueAt('metadata') });
  await fail('th.session.unknown', 'thought_record', { task_id: t, type: 'plan', content: 'x', session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  const after = await ok('th.count.after', 'thought_record_list', { task_id: t });
  check(after.thought_count === before.thought_count, 'thought: failed records left nothing', [before.thought_count, after.thought_count]);
  const r3 = await ok('th.third', 'thought_record', { task_id: t, type: 'plan', content: 'step three' });
  check(r3.chain_position === 3 && r3.previous_hash === r2.hash, 'thought: chain unbroken by failures', r3);
  // closed task takes thoughts
  await ok('th.cancel', 'task_update', { task_id: t2, status: 'cancelled' });
  await ok('th.closed', 'thought_record', { task_id: t2, type: 'reflection', content: 'after the fact' });

  // list
  const l = await ok('thl.task', 'thought_record_list', { task_id: t });
  hasKeys('thl', l, ['thought_count', 'thoughts']);
  check(l.task_id === t, 'thl: task_id echoed', l.task_id);
  check(l.thought_count === 3 && eq(l.thoughts.map((x) => x.thought_id), [r1.thought_id, r2.thought_id, r3.thought_id]), 'thl: ledger order', l.thoughts.map((x) => x.thought_id));
  hasKeys('thl.item', l.thoughts[0], ['thought_id', 'task_id', 'type', 'content', 'hash', 'previous_hash', 'recorded_at', 'recorded_by', 'chain_position', 'seq']);
  check(eq(l.thoughts.map((x) => x.seq), [r1.seq, r2.seq, r3.seq]), 'thl: each item\'s seq is its thought_record seq', l.thoughts.map((x) => x.seq));
  check(l.thoughts[1].hash === r2.hash && l.thoughts[0].content === 'step one', 'thl: same hash as at record', l.thoughts[1]);
  check(l.chain_valid === undefined || l.chain_valid === null, 'thl: no chain_valid unless asked', l);
  const lim = await ok('thl.limit', 'thought_record_list', { task_id: t, limit: 2 });
  check(lim.thought_count === 3 && lim.thoughts.length === 2 && lim.thoughts[0].thought_id === r1.thought_id, 'thl: count before limit, first limit', lim);
  const ty = await ok('thl.type', 'thought_record_list', { task_id: t, type: 'decision' });
  check(ty.thought_count === 1 && ty.thoughts[0].thought_id === r2.thought_id, 'thl: type filter', ty);
  const v = await ok('thl.verify', 'thought_record_list', { task_id: t, verify_chain: true });
  check(v.chain_valid === true && eq(v.invalid_links, []), 'thl: verify_chain on a good chain', v);
  const vt = await ok('thl.verify.type', 'thought_record_list', { task_id: t, type: 'plan', verify_chain: true });
  check(vt.chain_valid === true, 'thl: verify_chain with a type filter holds', vt);
  const alll = await ok('thl.all', 'thought_record_list', { verify_chain: true, limit: 500 });
  check(alll.chain_valid === true && eq(alll.invalid_links, []), 'thl: verify_chain across tasks', { c: alll.chain_valid, l: alll.invalid_links });
  const def = await ok('thl.default.limit', 'thought_record_list', {});
  check(def.thoughts.length === Math.min(100, def.thought_count), 'thl: default limit 100', [def.thoughts.length, def.thought_count]);
  await fail('thl.unknown.task', 'thought_record_list', { task_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('thl.unknown.session', 'thought_record_list', { session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  await fail('thl.limit0', 'thought_record_list', { limit: 0 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  await fail('thl.limit501', 'thought_record_list', { limit: 501 }, 'ERR_INVALID_INPUT', { issues: issueAt('limit') });
  return { t, r1, r2, r3 };
}

async function sessions() {
  const SP = P + '-s';
  const root = (await ok('s.mk.root', 'task_create', { title: 'root', project: SP })).task_id;
  const kid = (await ok('s.mk.kid', 'task_create', { title: 'kid', project: SP, parent_id: root })).task_id;
  const grand = (await ok('s.mk.grand', 'task_create', { title: 'grand', project: SP, parent_id: kid })).task_id;
  const outsider = (await ok('s.mk.out', 'task_create', { title: 'out', project: SP })).task_id;
  await fail('s.start.unknown', 'audit_session_start', { task_id: 'T-999999', auditor_id: 'aud' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('s.start.noauditor', 'audit_session_start', { task_id: root }, 'ERR_INVALID_INPUT', { issues: issueAt('auditor_id') });
  await fail('s.start.auditor.129', 'audit_session_start', { task_id: root, auditor_id: 'a'.repeat(129) }, 'ERR_INVALID_INPUT', { issues: issueAt('auditor_id') });
  await fail('s.start.scope.bad', 'audit_session_start', { task_id: root, auditor_id: 'a', scope: 'wide' }, 'ERR_INVALID_INPUT', { issues: issueAt('scope') });
  await fail('s.start.reason.1001', 'audit_session_start', { task_id: root, auditor_id: 'a', reason: 'r'.repeat(1001) }, 'ERR_INVALID_INPUT', { issues: issueAt('reason') });
  const s = await ok('s.start', 'audit_session_start', { task_id: root, auditor_id: 'aud-1', reason: 'release' });
  hasKeys('s.start', s, ['session_id', 'task_id', 'auditor_id', 'started_at', 'scope', 'start_seq']);
  check(/^A-\d{4,}$/.test(s.session_id) && s.scope === 'shallow' && s.task_id === root && s.auditor_id === 'aud-1' && rfc3339utc(s.started_at), 'session: fields, scope default shallow', s);
  const r0 = await ok('s.root0', 'merkle_root', { session_id: s.session_id });
  hasKeys('s.root', r0, ['session_id', 'merkle_root', 'leaf_count', 'is_finalized', 'as_of', 'as_of_seq']);
  check(r0.leaf_count >= 1 && r0.is_finalized === false && hex64(r0.merkle_root), 'session: start event is the first leaf', r0);
  const deep = await ok('s.start.deep', 'audit_session_start', { task_id: root, auditor_id: 'aud-2', scope: 'deep' });
  check(deep.scope === 'deep', 'session: deep', deep);
  // events concerning root, kid, grand, outsider
  await ok('s.up.root', 'task_update', { task_id: root, progress: 5 });
  await ok('s.up.kid', 'task_update', { task_id: kid, progress: 5 });
  await ok('s.up.grand', 'task_update', { task_id: grand, progress: 5 });
  await ok('s.up.out', 'task_update', { task_id: outsider, progress: 5 });
  const th = await ok('s.th.out', 'thought_record', { task_id: outsider, type: 'plan', content: 'in session', session_id: s.session_id });
  const sh = await ok('s.root.shallow', 'merkle_root', { session_id: s.session_id });
  // shallow: start, task_update root (domain event + tool.called), s.root0 merkle_root? (tool.called naming session? not a task), thought with session_id (+ its tool.called names outsider not root)
  check(sh.leaf_count > r0.leaf_count, 'session: leaves grow while open', [r0.leaf_count, sh.leaf_count]);
  const dp = await ok('s.root.deep', 'merkle_root', { session_id: deep.session_id });
  check(dp.leaf_count > sh.leaf_count - 1, 'session: deep has at least the descendants', [sh.leaf_count, dp.leaf_count]);
  const tl = await ok('s.thl.session', 'thought_record_list', { session_id: s.session_id });
  check(tl.session_id === s.session_id && tl.thought_count === 1 && tl.thoughts[0].thought_id === th.thought_id, 'thl: by session', tl);
  // merkle_finalize with a task out of scope
  await fail('s.fin.outofscope', 'merkle_finalize', { session_id: s.session_id, task_id: kid }, 'ERR_INVALID_INPUT', { issues: issueAt('task_id') });
  await fail('s.fin.task.unknown', 'merkle_finalize', { session_id: s.session_id, task_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  const stillOpen = await ok('s.root.stillopen', 'merkle_root', { session_id: s.session_id });
  check(stillOpen.is_finalized === false, 'finalize: a failed finalize left the session open', stillOpen);
  await fail('s.fin.unknown', 'merkle_finalize', { session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  await fail('s.fin.empty', 'merkle_finalize', { session_id: '' }, 'ERR_SESSION_NOT_FOUND');
  await fail('s.root.unknown', 'merkle_root', { session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  const pre = await ok('s.root.prefin', 'merkle_root', { session_id: s.session_id });
  const f = await ok('s.fin', 'merkle_finalize', { session_id: s.session_id });
  hasKeys('s.fin', f, ['session_id', 'merkle_root', 'tree_depth', 'leaf_count', 'first_seq', 'last_seq', 'finalized_at', 'frozen', 'ledger_size', 'ledger_root']);
  check(f.frozen === true && hex64(f.merkle_root) && hex64(f.ledger_root) && rfc3339utc(f.finalized_at), 'finalize: fields', f);
  check(f.first_seq === s.start_seq, 'finalize: first_seq is start_seq', [f.first_seq, s.start_seq]);
  check(f.tree_depth === (f.leaf_count <= 1 ? 0 : Math.ceil(Math.log2(f.leaf_count))), 'finalize: tree_depth', f);
  check(f.leaf_count >= pre.leaf_count, 'finalize: leaves include those before', [pre.leaf_count, f.leaf_count]);
  const h = await ok('s.health.afterfin', 'server_health', {});
  check(f.ledger_size <= h.ledger.head_seq && f.last_seq < f.ledger_size, 'finalize: ledger_size right after the finalize event', [f.ledger_size, f.last_seq, h.ledger.head_seq]);
  await fail('s.fin.twice', 'merkle_finalize', { session_id: s.session_id }, 'ERR_ALREADY_FINALIZED', { session_id: s.session_id });
  await fail('s.th.finalized', 'thought_record', { task_id: outsider, type: 'plan', content: 'late', session_id: s.session_id }, 'ERR_ALREADY_FINALIZED', { session_id: s.session_id });
  await ok('s.up.root.after', 'task_update', { task_id: root, progress: 6 });
  const rf = await ok('s.root.final', 'merkle_root', { session_id: s.session_id });
  check(rf.is_finalized === true && rf.merkle_root === f.merkle_root && rf.leaf_count === f.leaf_count, 'merkle_root: frozen after finalize', [rf, f]);
  check(rf.as_of_seq === f.ledger_size || rf.as_of_seq > 0, 'merkle_root: as_of_seq of a finalized session', rf);
  // deep: finalize with a task in scope
  await fail('s.fin.deep.out', 'merkle_finalize', { session_id: deep.session_id, task_id: outsider }, 'ERR_INVALID_INPUT', { issues: issueAt('task_id') });
  const fd = await ok('s.fin.deep.grand', 'merkle_finalize', { session_id: deep.session_id, task_id: grand });
  check(fd.leaf_count >= 2, 'finalize with task_id: start event and the task leaves', fd);
  // finalize for a task outside the scope that has a leaf in the session
  // (a thought recorded on it with the session's id): its leaves, as
  // audit_verify_chain selects them; one with none is still refused.
  const s5 = await ok('s.start5', 'audit_session_start', { task_id: kid, auditor_id: 'aud-5' });
  const th5 = await ok('s.th5.out', 'thought_record', { task_id: outsider, type: 'risk', content: 'seen from the kid', session_id: s5.session_id });
  await fail('s.fin5.noleaf', 'merkle_finalize', { session_id: s5.session_id, task_id: root }, 'ERR_INVALID_INPUT', { issues: issueAt('task_id') });
  const f5 = await ok('s.fin5.thoughttask', 'merkle_finalize', { session_id: s5.session_id, task_id: outsider });
  check(f5.leaf_count === 2 && f5.first_seq === s5.start_seq && f5.last_seq === th5.seq, 'finalize: an out-of-scope task with a thought in the session seals the start and that thought', [f5, s5.start_seq, th5.seq]);
  const v5 = await ok('v.fin5', 'audit_verify_chain', { session_id: s5.session_id, task_id: outsider, full_trace: true });
  check(v5.merkle_valid === true && mth(v5.hashes.map((x) => x.hash)) === f5.merkle_root, 'verify: the out-of-scope finalize root holds', v5);
  // audit_verify_chain
  const vw = await ok('v.whole', 'audit_verify_chain', {});
  hasKeys('v', vw, ['chain_valid', 'total_records', 'integrity_score', 'broken_links', 'verified_at']);
  check(vw.chain_valid === true && vw.integrity_score === 100 && eq(vw.broken_links, []) && rfc3339utc(vw.verified_at), 'verify: whole ledger', vw);
  check(vw.hashes === undefined || vw.hashes === null, 'verify: no hashes unless full_trace', vw.hashes);
  const vs = await ok('v.session', 'audit_verify_chain', { session_id: s.session_id, full_trace: true });
  check(vs.session_id === s.session_id && vs.chain_valid === true && vs.merkle_valid === true, 'verify: finalized session merkle_valid', vs);
  check(Array.isArray(vs.hashes) && vs.hashes.length === vs.total_records && vs.hashes.every((x) => isInt(x.seq) && hex64(x.hash)), 'verify: full_trace hashes', vs.hashes && vs.hashes.length);
  check(vs.total_records === f.leaf_count, 'verify: session records = leaves', [vs.total_records, f.leaf_count]);
  const vt = await ok('v.task', 'audit_verify_chain', { task_id: root });
  check(vt.task_id === root && vt.chain_valid === true, 'verify: task', vt);
  const vo = await ok('v.open', 'audit_verify_chain', { session_id: deep.session_id });
  check(vo.chain_valid === true, 'verify: session', vo);
  await fail('v.unknown.task', 'audit_verify_chain', { task_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  await fail('v.unknown.session', 'audit_verify_chain', { session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  // an open session verified: merkle_valid absent or null
  const s3 = await ok('s.start3', 'audit_session_start', { task_id: outsider, auditor_id: 'aud-3' });
  const vo3 = await ok('v.open3', 'audit_verify_chain', { session_id: s3.session_id });
  check(vo3.merkle_valid === undefined || vo3.merkle_valid === null, 'verify: merkle_valid only for a finalized session', vo3.merkle_valid);
  const r3 = await ok('s.root3', 'merkle_root', { session_id: s3.session_id });
  const hh = await ok('s.health3', 'server_health', {});
  check(r3.as_of_seq <= hh.ledger.head_seq, 'merkle_root: as_of_seq open', [r3.as_of_seq, hh.ledger.head_seq]);

  // Independent RFC 9162 checks: the event hash is its leaf hash; the
  // session root is the tree over its leaves' hashes; ledger_root is the tree
  // over the first ledger_size events.
  const whole = await ok('v.whole.trace', 'audit_verify_chain', { full_trace: true });
  const hashOf = new Map(whole.hashes.map((x) => [x.seq, x.hash]));
  check(whole.hashes.length === whole.total_records && whole.hashes.every((x, i) => x.seq === i + 1), 'verify: full_trace of the whole ledger is seq 1..n', whole.hashes.length);
  check(hashOf.get(th.seq) === th.hash, 'thought: hash is its event hash in the ledger', [th.seq, th.hash, hashOf.get(th.seq)]);
  const leaves = vs.hashes.map((x) => x.hash);
  check(mth(leaves) === f.merkle_root, 'finalize: merkle_root is RFC 9162 over the leaves verify lists', [mth(leaves), f.merkle_root]);
  check(vs.hashes[0].seq === s.start_seq, 'session: start event first leaf', vs.hashes[0]);
  check(vs.hashes.some((x) => x.seq === th.seq), 'session: thought recorded with session_id is a leaf', th.seq);
  check(vs.hashes.every((x) => x.seq < f.ledger_size), 'session: leaves before finalization', f.ledger_size);
  check(!vs.hashes.some((x) => x.seq === deep.start_seq), 'session: another session start is not a leaf', deep.start_seq);
  const ledgerLeaves = whole.hashes.filter((x) => x.seq <= f.ledger_size).map((x) => x.hash);
  check(mth(ledgerLeaves) === f.ledger_root, 'finalize: ledger_root is RFC 9162 over the first ledger_size events', [mth(ledgerLeaves), f.ledger_root]);
  check(rf.as_of_seq === f.ledger_size, 'merkle_root: as_of_seq of a finalized session is the finalize event seq', [rf.as_of_seq, f.ledger_size]);
  const vd = await ok('v.deep.trace', 'audit_verify_chain', { session_id: deep.session_id, task_id: grand, full_trace: true });
  check(mth(vd.hashes.map((x) => x.hash)) === fd.merkle_root && vd.merkle_valid === true, 'finalize task_id: root over start + that task leaves', vd);
  // open session root: over leaves so far, as_of_seq = head before the call
  const r4 = await ok('s.root3b', 'merkle_root', { session_id: s3.session_id });
  const v3 = await ok('v.open3.trace', 'audit_verify_chain', { session_id: s3.session_id, full_trace: true });
  check(mth(v3.hashes.filter((x) => x.seq <= r4.as_of_seq).map((x) => x.hash)) === r4.merkle_root, 'merkle_root open: RFC 9162 over the leaves so far', [r4, v3.hashes]);
  const hh2 = await ok('s.health3b', 'server_health', {});
  check(r4.as_of_seq === hh2.ledger.head_seq - 2 || r4.as_of_seq === hh2.ledger.head_seq - 3, 'merkle_root open: as_of_seq is the head before its own record', [r4.as_of_seq, hh2.ledger.head_seq]);
  // task seq is its event's
  const gr = await ok('s.get.root', 'task_get', { task_id: root });
  check(hashOf.has(gr.seq), 'task: seq is a ledger seq', gr.seq);
  // verify by session and task
  const vst = await ok('v.session.task', 'audit_verify_chain', { session_id: deep.session_id, task_id: grand });
  check(vst.chain_valid === true && vst.session_id === deep.session_id && vst.task_id === grand, 'verify: session and task', vst);
  await fail('v.session.task.out', 'audit_verify_chain', { session_id: deep.session_id, task_id: outsider }, 'ERR_INVALID_INPUT', { issues: issueAt('task_id') });
  return { s, f };
}

async function skills() {
  const all = await ok('sk.all', 'skill_list', {});
  hasKeys('sk', all, ['skills', 'total_count']);
  const names = all.skills.map((s) => s.name);
  check(eq(names, ['code-review', 'release-notes', 'test-runner']), 'skills: the valid ones, by name', names);
  check(all.total_count === all.skills.length, 'skills: total_count', all.total_count);
  const rn = all.skills.find((s) => s.name === 'release-notes');
  check(rn && rn.version === '0.0.0', 'skills: version default 0.0.0', rn);
  const tr = all.skills.find((s) => s.name === 'test-runner');
  check(tr && tr.version === '2.0' && eq(tr.capabilities, ['test', 'go']) && tr.path === 'test-runner/SKILL.md', 'skills: fields', tr);
  hasKeys('sk.item', all.skills[0], ['name', 'version', 'description', 'capabilities', 'path']);
  const s1 = await ok('sk.search', 'skill_list', { search: 'RELEASE' });
  check(eq(s1.skills.map((s) => s.name), ['release-notes']) && s1.total_count === 1, 'skills: search case-insensitive', s1);
  const s2 = await ok('sk.search.desc', 'skill_list', { search: 'race detector' });
  check(eq(s2.skills.map((s) => s.name), ['test-runner']), 'skills: search description', s2);
  const s3 = await ok('sk.cap', 'skill_list', { capability: 'git' });
  check(eq(s3.skills.map((s) => s.name), ['code-review', 'release-notes']), 'skills: capability exact', s3);
  const s4 = await ok('sk.cap.case', 'skill_list', { capability: 'GIT' });
  check(s4.total_count === 0, 'skills: capability is exact (case)', s4);
  const s5 = await ok('sk.both', 'skill_list', { capability: 'git', search: 'diff' });
  check(eq(s5.skills.map((s) => s.name), ['code-review']), 'skills: both filters', s5);
  const s6 = await ok('sk.empty', 'skill_list', { search: '', capability: '' });
  check(s6.total_count === 3, 'skills: empty filters filter nothing', s6);
  const h = await ok('health', 'server_health', {});
  hasKeys('health', h, ['status', 'mode', 'uptime_ms', 'version', 'timestamp', 'db', 'ledger', 'projections', 'middleware', 'tools', 'skills']);
  check(h.status === 'degraded' && h.mode === 'FULL', 'health: degraded with skipped skills, FULL', [h.status, h.mode]);
  hasKeys('health.db', h.db, ['open', 'path', 'format_version', 'size_bytes']);
  hasKeys('health.ledger', h.ledger, ['head_seq', 'head_hash', 'root']);
  hasKeys('health.proj', h.projections, ['version', 'applied_seq']);
  check(Array.isArray(h.middleware.stages) && h.middleware.stages.length > 0, 'health: middleware stages', h.middleware);
  check(isInt(h.tools.registered) && h.tools.registered >= 14, 'health: tools registered', h.tools);
  check(h.skills.loaded === 3 && h.skills.skipped.length === 2 && h.skills.skipped.every((s) => typeof s.path === 'string' && typeof s.reason === 'string'), 'health: skills loaded/skipped', h.skills);
  check(rfc3339utc(h.timestamp) && isInt(h.uptime_ms) && hex64(h.ledger.head_hash) && hex64(h.ledger.root), 'health: types', h);
  check(h.projections.applied_seq === h.ledger.head_seq || h.projections.applied_seq === h.ledger.head_seq + 0, 'health: projections caught up', [h.projections.applied_seq, h.ledger.head_seq]);
  const listed = await client.listTools();
  check(listed.tools.length === h.tools.registered, 'health: registered = tools/list', [listed.tools.length, h.tools.registered]);
  const p = await ok('ping', 'server_ping', {});
  check(rfc3339utc(p.timestamp), 'ping: timestamp', p);
  await fail('ping.extra', 'server_ping', { x: 1 }, 'ERR_INVALID_INPUT');
}

async function knowledge() {
  const KP = P + '-k';
  const t = (await ok('k.mk', 'task_create', { title: 'k', project: KP })).task_id;
  const f = await ok('k.finding', 'finding_record', { task_id: t, category: 'bug', summary: 'rounding error in totals', files: ['a/b.go', 'a/b.go'] });
  check(/^F-\d{4,}$/.test(f.finding_id) && f.project === KP && eq(f.files, ['a/b.go']), 'finding: fields, dup files removed', f);
  await fail('k.finding.abs', 'finding_record', { task_id: t, category: 'bug', summary: 's', files: ['/etc/passwd'] }, 'ERR_INVALID_INPUT', { issues: issueAt('files[0]') });
  await fail('k.finding.unknown', 'finding_record', { task_id: 'T-999999', category: 'bug', summary: 's' }, 'ERR_TASK_NOT_FOUND', { task_id: 'T-999999' });
  const pattern = 'Always round invoice totals with banker rounding at the very last step';
  const context = 'We found in the billing service that rounding each line item before summing produced totals that differed from the ledger by a cent in many cases';
  const l1 = await ok('k.learning', 'learning_record', { pattern, context, project: KP, source_task_id: t, tags: ['x', 'x'] });
  check(/^L-\d{4,}$/.test(l1.learning_id) && eq(l1.tags, ['x']), 'learning: fields', l1);
  await fail('k.learning.dup', 'learning_record', { pattern, context: context + ' again', project: KP }, 'ERR_DUPLICATE', { existing_id: l1.learning_id });
  await fail('k.learning.noproject', 'learning_record', { pattern: pattern + ' x', context, project: 'no-such-project-zz' }, 'ERR_PROJECT_NOT_FOUND', { project: 'no-such-project-zz' });
  await fail('k.learning.short', 'learning_record', { pattern: 'too short', context, project: KP }, 'ERR_INVALID_INPUT', { issues: issueAt('pattern') });
  const m1 = await ok('k.mem1', 'memory_write', { key: 'build', scope: 'project', project: KP, content: 'make build' });
  const m2 = await ok('k.mem2', 'memory_write', { key: 'build', scope: 'project', project: KP, content: 'make all' });
  check(m1.version === 1 && m2.version === 2, 'memory: versions from 1', [m1.version, m2.version]);
  const rd = await ok('k.read', 'memory_read', { key: 'build', scope: 'project', project: KP });
  check(rd.found === true && rd.memory.content === 'make all', 'memory: latest', rd);
  const rd1 = await ok('k.read.asof', 'memory_read', { key: 'build', scope: 'project', project: KP, as_of_seq: m1.seq });
  check(rd1.memory && rd1.memory.content === 'make build', 'memory: as_of_seq', rd1);
  await fail('k.hist.noproject', 'memory_history', { key: 'build', project: 'no-such-project-zz' }, 'ERR_PROJECT_NOT_FOUND', { project: 'no-such-project-zz' });
  const rn = await ok('k.read.none', 'memory_read', { key: 'never', scope: 'global' });
  check(rn.found === false && rn.memory === null, 'memory: never written', rn);
  const ks = await ok('k.search', 'knowledge_search', { query: 'rounding', project: KP });
  check(ks.count >= 2 && ks.hits.every((x) => hex64(x.hash) && isInt(x.seq)), 'knowledge: hits', ks);
  // a project searched must have a task; cross_project beside a project asks for one project and for all
  await fail('k.search.noproject', 'knowledge_search', { query: 'rounding', project: 'no-such-project-zz' }, 'ERR_PROJECT_NOT_FOUND', { project: 'no-such-project-zz' });
  await fail('k.search.cross.project', 'knowledge_search', { query: 'rounding', project: KP, cross_project: true }, 'ERR_INVALID_INPUT', { issues: issueAt('cross_project') });
  const kx = await ok('k.search.cross', 'knowledge_search', { query: 'rounding', cross_project: true });
  check(kx.project === undefined && kx.count >= ks.count, 'knowledge: cross_project searches every project', kx);
}


async function edges() {
  const EP = P + '-e';
  const t = (await ok('e.mk', 'task_create', { title: 'e', project: EP })).task_id;
  const g0 = await ok('e.get0', 'task_get', { task_id: t });
  // a request to the current state changes nothing
  const same = await ok('e.same', 'task_update', { task_id: t, status: 'backlog' });
  check(same.seq === g0.seq, 'update: a no-op status request appends no task event', [same.seq, g0.seq]);
  const same2 = await ok('e.same.title', 'task_update', { task_id: t, title: 'e' });
  check(same2.seq === g0.seq, 'update: a no-op title request appends no task event', [same2.seq, g0.seq]);
  const gs = await ok('e.get.same', 'task_get', { task_id: t });
  check(gs.seq === g0.seq && gs.updated_at === g0.updated_at, 'update: no-op leaves updated_at', gs);
  const wb = await ok('e.warn.backlog', 'task_update', { task_id: t, progress: 100 });
  check(Array.isArray(wb.warnings) && wb.warnings.length === 1 && wb.warnings[0].includes('backlog'), 'update: progress warning in backlog', wb.warnings);
  const nw = await ok('e.nowarn', 'task_update', { task_id: t, progress: 40 });
  check(nw.warnings == null || nw.warnings.length === 0, 'update: no warning otherwise', nw.warnings);
  await ok('e.todo', 'task_update', { task_id: t, status: 'todo', progress: 100 });
  await fail('e.blocked.emptyreason', 'task_update', { task_id: t, status: 'blocked', blocked_reason: '' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  const wbl = await ok('e.blocked', 'task_update', { task_id: t, status: 'blocked', blocked_reason: 'r' });
  check(Array.isArray(wbl.warnings) && wbl.warnings.some((w) => w.includes('blocked')), 'update: progress warning in blocked', wbl.warnings);
  const sb = await ok('e.blocked.same', 'task_update', { task_id: t, status: 'blocked', blocked_reason: 'r' });
  check(sb.status === 'blocked' && sb.previous_status === undefined && sb.seq === wbl.seq, 'update: blocked→blocked with the same reason is no change', sb);
  // blocked→blocked without a reason: the arguments' rule, whatever the state; nothing changes
  await fail('e.blocked.again.noreason', 'task_update', { task_id: t, status: 'blocked' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  const ga = await ok('e.blocked.again.get', 'task_get', { task_id: t });
  check(ga.status === 'blocked' && ga.blocked_reason === 'r' && ga.seq === wbl.seq, 'update: a refused blocked→blocked left the task as it was', ga);
  await ok('e.ip', 'task_update', { task_id: t, status: 'in_progress' });
  await ok('e.review', 'task_update', { task_id: t, status: 'review' });
  await fail('e.review.blocked.noreason', 'task_update', { task_id: t, status: 'blocked' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  await ok('e.thought', 'thought_record', { task_id: t, type: 'reflection', content: 'done now' });
  const d = await ok('e.done.progress', 'task_update', { task_id: t, status: 'done', progress: 30 });
  const gd = await ok('e.get.done', 'task_get', { task_id: t });
  check(gd.progress === 100 && d.progress === 100 || d === undefined, 'update: done sets progress 100 even when another is asked', [d, gd.progress]);
  // empty ids: not found
  await fail('e.parent.empty', 'task_create', { title: 'x', project: EP, parent_id: '' }, 'ERR_TASK_NOT_FOUND');
  await fail('e.session.empty', 'thought_record', { task_id: t, type: 'plan', content: 'x', session_id: '' }, 'ERR_SESSION_NOT_FOUND');
  await fail('e.thl.session.empty', 'thought_record_list', { session_id: '' }, 'ERR_SESSION_NOT_FOUND');
  await fail('e.thl.task.empty', 'thought_record_list', { task_id: '' }, 'ERR_TASK_NOT_FOUND');
  await fail('e.verify.task.empty', 'audit_verify_chain', { task_id: '' }, 'ERR_TASK_NOT_FOUND');
  await fail('e.root.empty', 'merkle_root', { session_id: '' }, 'ERR_SESSION_NOT_FOUND');
  await fail('e.start.empty', 'audit_session_start', { task_id: '', auditor_id: 'a' }, 'ERR_TASK_NOT_FOUND');
  await fail('e.update.empty', 'task_update', { task_id: '', title: 'y' }, 'ERR_TASK_NOT_FOUND');
  // a sub-task of a closed task
  const sub = await ok('e.sub.closed', 'task_create', { title: 's', project: EP, parent_id: t });
  // next_actions: a project with no todo task
  const n = await ok('e.next.empty', 'task_next_actions', { project: EP });
  check(n.count === 0 && eq(n.next_actions, []), 'next: empty when nothing is todo', n);
  // list: offset past the end
  const lo = await ok('e.list.offset', 'task_list', { project: EP, offset: 10 });
  check(lo.total_count === 2 && lo.returned_count === 0 && lo.offset === 10 && eq(lo.tasks, []), 'list: offset past the end', lo);
  // sort by updated asc: the task changed longest ago first
  const ua = await ok('e.list.updated.asc', 'task_list', { project: EP, sort_by: 'updated', sort_order: 'asc' });
  check(eq(ua.tasks.map((x) => x.task_id), [t, sub.task_id]), 'list: updated asc', ua.tasks.map((x) => x.task_id));
  // session on a task: thoughts of the task are leaves; a thought in another session
  const s1 = await ok('e.s1', 'audit_session_start', { task_id: t, auditor_id: 'a' });
  const s2 = await ok('e.s2', 'audit_session_start', { task_id: sub.task_id, auditor_id: 'a' });
  const th = await ok('e.s.th', 'thought_record', { task_id: t, type: 'plan', content: 'in s2', session_id: s2.session_id });
  const v1 = await ok('e.v1', 'audit_verify_chain', { session_id: s1.session_id, full_trace: true });
  const v2 = await ok('e.v2', 'audit_verify_chain', { session_id: s2.session_id, full_trace: true });
  check(v1.hashes.some((x) => x.seq === th.seq) && v2.hashes.some((x) => x.seq === th.seq), 'session: a thought on its task (s1) and with its id (s2) is a leaf of both', [th.seq, v1.hashes, v2.hashes]);
  check(!v1.hashes.some((x) => x.seq === s2.start_seq), 'session: another session start not a leaf', s2.start_seq);
  const tl = await ok('e.thl.both', 'thought_record_list', { task_id: t, session_id: s2.session_id });
  check(tl.thought_count === 1 && tl.thoughts[0].thought_id === th.thought_id, 'thl: task and session together', tl);
  // knowledge_search without project but server --project
  return { t };
}

async function readOnly() {
  const h = await ok('ro.health', 'server_health', {});
  check(h.mode === 'READONLY', 'read-only: mode READONLY', h.mode);
  const l0 = await ok('ro.list0', 'task_list', {});
  for (const [name, args] of [
    ['task_create', { title: 'x', project: 'p' }], ['task_update', { task_id: 'T-0001', title: 'x' }],
    ['thought_record', { task_id: 'T-0001', type: 'plan', content: 'x' }], ['audit_session_start', { task_id: 'T-0001', auditor_id: 'a' }],
    ['merkle_finalize', { session_id: 'A-0001' }], ['finding_record', { task_id: 'T-0001', category: 'bug', summary: 's' }],
    ['learning_record', { pattern: 'one two three four five six seven eight nine ten eleven', context: 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi', project: 'p' }], ['learning_supersede', { learning_id: 'L-0001', by: 'L-0002' }],
    ['memory_write', { key: 'k', scope: 'global', content: 'c' }],
  ]) {
    await fail(`ro.${name}`, name, args, 'ERR_READ_ONLY');
  }
  await fail('ro.invalid.first', 'task_create', { title: '', project: 'p' }, 'ERR_INVALID_INPUT', { issues: issueAt('title') });
  const l = await ok('ro.list', 'task_list', {});
  check(l.total_count === l0.total_count, 'read-only: nothing written', [l0.total_count, l.total_count]);
  const h2 = await ok('ro.health2', 'server_health', {});
  check(h2.ledger.head_seq > h.ledger.head_seq, 'read-only: every call still recorded', [h.ledger.head_seq, h2.ledger.head_seq]);
}

async function defaultProject(project) {
  // --project names a project with no task yet: searched by default, so not found
  await fail('dp.ks.none', 'knowledge_search', { query: 'dp' }, 'ERR_PROJECT_NOT_FOUND', { project });
  const kx = await ok('dp.ks.cross', 'knowledge_search', { query: 'dp', cross_project: true });
  check(kx.project === undefined && kx.count === 0, 'knowledge: cross_project instead of --project', kx);
  const t = await ok('dp.mk', 'task_create', { title: 'dp', project });
  const ks = await ok('dp.ks', 'knowledge_search', { query: 'dp' });
  check(ks.project === project, 'knowledge: default project is --project', ks);
  await ok('dp.mk.other', 'task_create', { title: 'other', project: project + '-x' });
  const o = (await ok('dp.list.other', 'task_list', { project: project + '-x' })).tasks[0].task_id;
  await ok('dp.todo', 'task_update', { task_id: t.task_id, status: 'todo' });
  await ok('dp.todo.other', 'task_update', { task_id: o, status: 'todo' });
  const n = await ok('dp.next', 'task_next_actions', {});
  check(n.project === project && eq(n.next_actions.map((x) => x.task_id), [t.task_id]), 'next: default project is --project', n);
  const n2 = await ok('dp.next.explicit', 'task_next_actions', { project: project + '-x' });
  check(n2.project === project + '-x' && eq(n2.next_actions.map((x) => x.task_id), [o]), 'next: project given wins', n2);
  const m = await ok('dp.mem', 'memory_write', { key: 'k', scope: 'project', content: 'c' });
  check(m.project === project, 'memory: project default is --project', m);
}


async function edges2() {
  const XP = P + '-x';
  // exactly one tool.called per call: the head grows by one for a read, a
  // failure, and a no-op; by the domain events plus one for a write
  const head = async (l) => (await ok(l, 'server_health', {})).ledger.head_seq;
  let h0 = await head('x.h0');
  let h1 = await head('x.h1');
  check(h1 === h0 + 1, 'audit: a read appends exactly one event', [h0, h1]);
  await call('x.fail', 'task_get', { task_id: 'T-999999' });
  let h2 = await head('x.h2');
  check(h2 === h1 + 2, 'audit: a failed call appends exactly one event', [h1, h2]);
  await call('x.invalid', 'task_create', { title: '' });
  let h3 = await head('x.h3');
  check(h3 === h2 + 2, 'audit: an invalid call appends exactly one event', [h2, h3]);
  const t = await ok('x.mk', 'task_create', { title: 'x', project: XP, estimate_hours: 0 });
  let h4 = await head('x.h4');
  check(h4 === h3 + 3 && t.seq === h3 + 2, 'audit: a create appends its event and its tool.called', [h3, t.seq, h4]);
  // estimate_hours 0 is kept
  const g = await ok('x.get', 'task_get', { task_id: t.task_id });
  check(g.estimate_hours === 0, 'get: estimate_hours 0 kept', g.estimate_hours);
  await ok('x.todo', 'task_update', { task_id: t.task_id, status: 'todo' });
  const n = await ok('x.next', 'task_next_actions', { project: XP });
  check(n.next_actions[0].estimate_hours === 0, 'next: estimate_hours 0 kept', n.next_actions[0]);
  // time travel: thought_trail and dependents as of then
  const asof = (await ok('x.get.asof.base', 'task_get', { task_id: t.task_id })).seq;
  await ok('x.th', 'thought_record', { task_id: t.task_id, type: 'plan', content: 'later' });
  const kid = await ok('x.kid', 'task_create', { title: 'kid', project: XP, parent_id: t.task_id });
  const gk = await ok('x.kid.grand', 'task_create', { title: 'grand', project: XP, parent_id: kid.task_id });
  const past = await ok('x.get.asof', 'task_get', { task_id: t.task_id, as_of_seq: asof, include_thought_trail: true, include_dependents: true });
  check(eq(past.thought_trail, []) && eq(past.dependents, []), 'get as_of_seq: trail and dependents as of then', past);
  const now = await ok('x.get.now', 'task_get', { task_id: t.task_id, include_thought_trail: true, include_dependents: true });
  check(now.thought_trail.length === 1 && eq(now.dependents, [kid.task_id]), 'get: dependents are the direct sub-tasks', now);
  const n2 = await ok('x.next2', 'task_next_actions', { project: XP });
  check(n2.next_actions[0].dependencies_unmet === 1, 'next: dependencies_unmet counts direct sub-tasks', n2.next_actions[0]);
  // finalize with a task in a deep scope that has no leaves: the start event only
  const s = await ok('x.s', 'audit_session_start', { task_id: t.task_id, auditor_id: 'a', scope: 'deep' });
  const f = await ok('x.fin', 'merkle_finalize', { session_id: s.session_id, task_id: gk.task_id });
  check(f.leaf_count >= 1 && f.first_seq === s.start_seq, 'finalize task_id: never empty', f);
  // labels [] clears
  await ok('x.labels', 'task_update', { task_id: kid.task_id, labels: ['a'] });
  await ok('x.labels.clear', 'task_update', { task_id: kid.task_id, labels: [] });
  check(eq((await ok('x.get.labels', 'task_get', { task_id: kid.task_id })).labels, []), 'update: labels [] clears');
  // thought with session_id on a task outside the scope is a leaf of it
  const th = await ok('x.th.out', 'thought_record', { task_id: kid.task_id, type: 'plan', content: 'x' });
  check(th.chain_position === 1, 'thought: chain per task', th);
  // knowledge as_of_seq
  const before = (await ok('x.h5', 'server_health', {})).ledger.head_seq;
  const word = 'unusual' + P.slice(4); // this run's own word
  await ok('x.find', 'finding_record', { task_id: t.task_id, category: 'gap', summary: `zyxwv ${word}` });
  const ks = await ok('x.ks.asof', 'knowledge_search', { query: word, as_of_seq: before });
  const ks2 = await ok('x.ks.now', 'knowledge_search', { query: word });
  check(ks.count === 0 && ks2.count === 1, 'knowledge: as_of_seq hides what came after', [ks.count, ks2.count]);
}

// round6 reads CONTRACT.md line by line for what the cases above leave out:
// ids across the ledger, the actor and times in every object that reports
// them, the warning on the resulting state, blocked reasons, the list
// filters' empty values and time offsets, next_actions' blocked list, which
// calls' events are a session's leaves, a session with nothing but its start,
// the ledger root server_health reports, and calls made concurrently.
async function round6() {
  const R = P + '-r6';
  const num = (id) => Number(id.slice(id.indexOf('-') + 1));
  // ---- ids: one number sequence per prefix across the whole ledger; a
  // failed call takes none
  const a = await ok('r6.id.a', 'task_create', { title: 'a', project: R });
  await fail('r6.id.fail', 'task_create', { title: 'b', project: R, priority: 'urgent' }, 'ERR_INVALID_INPUT', { issues: issueAt('priority') });
  await fail('r6.id.fail.parent', 'task_create', { title: 'b', project: R, parent_id: 'T-999999' }, 'ERR_TASK_NOT_FOUND');
  const b = await ok('r6.id.b', 'task_create', { title: 'b', project: R + '-other' });
  check(num(b.task_id) === num(a.task_id) + 1 && b.sequence === 1, 'ids: the next task id across projects, none taken by failed creates', [a.task_id, b.task_id]);
  const th1 = await ok('r6.id.th1', 'thought_record', { task_id: a.task_id, type: 'plan', content: 'one' });
  await fail('r6.id.th.fail', 'thought_record', { task_id: a.task_id, type: 'plan', content: 'x', session_id: 'A-999999' }, 'ERR_SESSION_NOT_FOUND', { session_id: 'A-999999' });
  const th2 = await ok('r6.id.th2', 'thought_record', { task_id: b.task_id, type: 'plan', content: 'two' });
  check(num(th2.thought_id) === num(th1.thought_id) + 1, 'ids: the next thought id across tasks', [th1.thought_id, th2.thought_id]);
  const s1 = await ok('r6.id.s1', 'audit_session_start', { task_id: a.task_id, auditor_id: 'r6' });
  await fail('r6.id.s.fail', 'audit_session_start', { task_id: a.task_id, auditor_id: 'r6', scope: 'all' }, 'ERR_INVALID_INPUT', { issues: issueAt('scope') });
  const s2 = await ok('r6.id.s2', 'audit_session_start', { task_id: b.task_id, auditor_id: 'r6' });
  check(num(s2.session_id) === num(s1.session_id) + 1, 'ids: the next session id across tasks', [s1.session_id, s2.session_id]);

  // ---- the actor and the times each object reports, the same everywhere
  const g = await ok('r6.get', 'task_get', { task_id: a.task_id });
  check(g.created_at === a.created_at && g.updated_at === a.created_at && g.created_by === opts.agent && g.updated_by === opts.agent && g.seq === a.seq,
    'task: created_at/updated_at/created_by/updated_by/seq as task_create answered', [a, g]);
  const li = (await ok('r6.list.item', 'task_list', { project: R })).tasks.find((x) => x.task_id === a.task_id);
  check(li && li.created_at === g.created_at && li.updated_at === g.updated_at && li.project === R, 'task_list: the times task_get reports', li);
  check(th1.recorded_by === opts.agent && th1.task_id === a.task_id && th1.type === 'plan', 'thought: recorded_by is the caller identity', th1);
  const tl = await ok('r6.thl', 'thought_record_list', { task_id: a.task_id });
  const tli = tl.thoughts[0];
  check(tli && tli.recorded_at === th1.recorded_at && tli.recorded_by === th1.recorded_by && tli.hash === th1.hash && tli.previous_hash === null && tli.chain_position === 1 && tli.content === 'one',
    'thought_record_list: the thought as thought_record answered', [th1, tli]);
  const u = await ok('r6.upd', 'task_update', { task_id: a.task_id, title: 'a2' });
  const gu = await ok('r6.get.upd', 'task_get', { task_id: a.task_id });
  check(u.updated_by === opts.agent && gu.updated_at === u.updated_at && gu.seq === u.seq && u.seq > a.seq && gu.created_at === a.created_at,
    'task_update: updated_at, updated_by and seq as task_get then reports', [u, gu]);
  const past = await ok('r6.get.past', 'task_get', { task_id: a.task_id, as_of_seq: a.seq });
  check(past.title === 'a' && past.updated_at === a.created_at && past.seq === a.seq, 'task_get as_of_seq: updated_at and seq as of then', past);

  // ---- task_update: the warning is on the resulting state
  const w1 = await ok('r6.warn.todo', 'task_update', { task_id: a.task_id, status: 'todo', progress: 100 });
  check(eq(w1.warnings, ['progress is 100 but status is todo']), 'update: progress warning in todo', w1.warnings);
  const w2 = await ok('r6.warn.title', 'task_update', { task_id: a.task_id, title: 'a3' });
  check(eq(w2.warnings, ['progress is 100 but status is todo']) && w2.progress === 100, 'update: the warning follows the resulting state, whatever was changed', w2);
  await ok('r6.ip', 'task_update', { task_id: a.task_id, status: 'in_progress' });
  const w3 = await ok('r6.review', 'task_update', { task_id: a.task_id, status: 'review' });
  check(eq(w3.warnings, []), 'update: no progress warning in review', w3.warnings);
  // blocked: another reason while blocked replaces it; leaving blocked with one is refused
  const c = await ok('r6.bl.mk', 'task_create', { title: 'c', project: R });
  await ok('r6.bl.todo', 'task_update', { task_id: c.task_id, status: 'todo' });
  const bl1 = await ok('r6.bl', 'task_update', { task_id: c.task_id, status: 'blocked', blocked_reason: 'first' });
  const bl2 = await ok('r6.bl.again', 'task_update', { task_id: c.task_id, status: 'blocked', blocked_reason: 'second' });
  const gbl = await ok('r6.bl.get', 'task_get', { task_id: c.task_id });
  check(bl2.status === 'blocked' && bl2.previous_status === undefined && bl2.seq > bl1.seq && gbl.blocked_reason === 'second', 'update: a new blocked_reason while blocked replaces it, status unchanged', [bl2, gbl.blocked_reason]);
  const bl3 = await ok('r6.bl.reason.only', 'task_update', { task_id: c.task_id, blocked_reason: 'third' });
  check(bl3.seq > bl2.seq && (await ok('r6.bl.get3', 'task_get', { task_id: c.task_id })).blocked_reason === 'third', 'update: blocked_reason alone on a blocked task', bl3);
  await fail('r6.bl.leave.reason', 'task_update', { task_id: c.task_id, status: 'todo', blocked_reason: 'x' }, 'ERR_INVALID_INPUT', { issues: issueAt('blocked_reason') });
  const gbl2 = await ok('r6.bl.get.after', 'task_get', { task_id: c.task_id });
  check(gbl2.status === 'blocked' && gbl2.blocked_reason === 'third' && gbl2.seq === bl3.seq, 'update: leaving blocked with a blocked_reason changed nothing', gbl2);

  // ---- task_list: an empty filter filters nothing; times with an offset
  const all = await ok('r6.list.all', 'task_list', { project: R, sort_by: 'created', sort_order: 'asc' });
  for (const [k, v] of [['status', []], ['priority', []], ['search', '   ']]) {
    const r = await ok(`r6.list.empty.${k}`, 'task_list', { project: R, sort_by: 'created', sort_order: 'asc', [k]: v });
    check(r.total_count === all.total_count && eq(r.tasks.map((x) => x.task_id), all.tasks.map((x) => x.task_id)), `task_list: ${k} ${JSON.stringify(v)} filters nothing`, r.total_count);
  }
  // the same instant written with an offset: the same answer
  const at = Date.parse(g.created_at);
  const shifted = new Date(at + 2 * 3600e3).toISOString().replace('Z', '+02:00');
  for (const k of ['created_after', 'created_before']) {
    const z = await ok(`r6.list.${k}.z`, 'task_list', { project: R, [k]: g.created_at });
    const o = await ok(`r6.list.${k}.offset`, 'task_list', { project: R, [k]: shifted });
    check(eq(z.tasks.map((x) => x.task_id), o.tasks.map((x) => x.task_id)) && !z.tasks.some((x) => x.task_id === a.task_id), `task_list: ${k} is exclusive and reads an offset`, [g.created_at, shifted, z.total_count, o.total_count]);
  }

  // ---- next_actions: the blocked list is the project's blocked tasks, in
  // creation order; limit bounds the suggestions only
  const NB = R + '-nb';
  const nb = [];
  for (const [i, pr] of ['low', 'critical', 'normal'].entries()) {
    const t = await ok(`r6.nb.mk${i}`, 'task_create', { title: `nb${i}`, project: NB, priority: pr });
    await ok(`r6.nb.todo${i}`, 'task_update', { task_id: t.task_id, status: 'todo' });
    nb.push(t.task_id);
  }
  const nt = await ok('r6.nb.mk.todo', 'task_create', { title: 'nbt', project: NB });
  await ok('r6.nb.todo.t', 'task_update', { task_id: nt.task_id, status: 'todo' });
  for (const i of [2, 0, 1]) await ok(`r6.nb.block${i}`, 'task_update', { task_id: nb[i], status: 'blocked', blocked_reason: `why ${i}` });
  const n1 = await ok('r6.nb.next', 'task_next_actions', { project: NB, include_blocked: true, limit: 1 });
  check(eq(n1.next_actions.map((x) => x.task_id), [nt.task_id]) && n1.count === 1, 'next: blocked tasks are not suggested', n1);
  check(eq((n1.blocked ?? []).map((x) => [x.task_id, x.blocked_reason]), nb.map((id, i) => [id, `why ${i}`])), 'next: blocked lists every blocked task of the project in creation order, limit notwithstanding', n1.blocked);
  const n2 = await ok('r6.nb.next.none', 'task_next_actions', { project: R + '-other', include_blocked: true });
  check(eq(n2.blocked, []) && eq(n2.next_actions, []) && n2.count === 0 && n2.project === R + '-other', 'next: blocked [] when asked and none', n2);

  // ---- sessions: which calls' events are leaves
  const SR = R + '-s';
  const root = (await ok('r6.s.root', 'task_create', { title: 'root', project: SR })).task_id;
  const sh = await ok('r6.s.shallow', 'audit_session_start', { task_id: root, auditor_id: 'r6' });
  const dp = await ok('r6.s.deep', 'audit_session_start', { task_id: root, auditor_id: 'r6', scope: 'deep' });
  const leaves = async (l) => [(await ok(`${l}.sh`, 'merkle_root', { session_id: sh.session_id })).leaf_count, (await ok(`${l}.dp`, 'merkle_root', { session_id: dp.session_id })).leaf_count];
  let kid;
  const steps = [
    // [label, tool, args, how it is expected to answer, leaves added to shallow, to deep]
    ['read', 'task_get', { task_id: root }, 'ok', 1, 1], // its tool.called names the task
    ['failed', 'task_update', { task_id: root, status: 'done' }, 'ERR_INVALID_TRANSITION', 1, 1],
    ['invalid', 'task_update', { task_id: root, progress: 101 }, 'ERR_INVALID_INPUT', 1, 1],
    ['unnamed', 'task_list', { project: SR }, 'ok', 0, 0], // names no task
    ['write', 'task_update', { task_id: root, progress: 7 }, 'ok', 2, 2], // task.updated and its tool.called
    ['kid', 'task_create', { title: 'kid', project: SR }, 'ok', 1, 2], // parent_id below: the call names the task; the kid's event is a descendant's
    ['kid.update', 'task_update', { task_id: null, progress: 1 }, 'ok', 0, 2],
    ['kid.thought', 'thought_record', { task_id: null, type: 'plan', content: 'k' }, 'ok', 0, 2],
    ['thought', 'thought_record', { task_id: root, type: 'plan', content: 'r' }, 'ok', 2, 2],
  ];
  for (const [l, tool, args0, want, dsh, ddp] of steps) {
    const args = { ...args0 };
    if (l === 'kid') args.parent_id = root;
    if (args.task_id === null) args.task_id = kid;
    const [a0, b0] = await leaves(`r6.s.${l}.before`);
    const env = await call(`r6.s.${l}`, tool, args);
    check((env.ok ? 'ok' : env.error.code) === want, `r6.s.${l}: ${want}`, env);
    if (l === 'kid') kid = env.data.task_id;
    const [a1, b1] = await leaves(`r6.s.${l}.after`);
    check(a1 - a0 === dsh && b1 - b0 === ddp, `session leaves: ${l} (${tool}) adds ${dsh} to shallow, ${ddp} to deep`, [a1 - a0, b1 - b0]);
  }
  const ssh = await ok('r6.s.fin.again.mk', 'merkle_finalize', { session_id: sh.session_id });
  await fail('r6.s.fin.again.task', 'merkle_finalize', { session_id: sh.session_id, task_id: root }, 'ERR_ALREADY_FINALIZED', { session_id: sh.session_id });
  const rr = await ok('r6.s.root.final', 'merkle_root', { session_id: sh.session_id });
  check(rr.as_of === ssh.finalized_at && rr.as_of_seq === ssh.ledger_size, 'merkle_root of a finalized session: as_of is finalized_at, as_of_seq the finalize event', [rr, ssh]);
  // a session on a task nothing else happens to: its start event and the
  // start call's tool.called (which names the task), then the finalize event
  const lone = (await ok('r6.lone.mk', 'task_create', { title: 'lone', project: SR })).task_id;
  await ok('r6.lone.cancel', 'task_update', { task_id: lone, status: 'cancelled' });
  const ls = await ok('r6.lone.start', 'audit_session_start', { task_id: lone, auditor_id: 'r6' }); // a closed task may be audited
  const lf = await ok('r6.lone.fin', 'merkle_finalize', { session_id: ls.session_id });
  const lv = await ok('r6.lone.verify', 'audit_verify_chain', { session_id: ls.session_id, full_trace: true });
  check(lf.leaf_count === 2 && lf.tree_depth === 1 && lf.first_seq === ls.start_seq && lf.last_seq === ls.start_seq + 1 && lf.ledger_size === ls.start_seq + 2,
    'finalize: a session with only its start call', lf);
  check(eq(lv.hashes.map((x) => x.seq), [ls.start_seq, ls.start_seq + 1]) && mth(lv.hashes.map((x) => x.hash)) === lf.merkle_root && lv.merkle_valid === true, 'finalize: the root over those two leaves', [lv.hashes, lf.merkle_root]);

  // ---- server_health: the ledger it reports is the ledger verified
  const h = await ok('r6.health', 'server_health', {});
  const whole = await ok('r6.health.trace', 'audit_verify_chain', { full_trace: true });
  const upTo = whole.hashes.filter((x) => x.seq <= h.ledger.head_seq);
  check(upTo.length === h.ledger.head_seq && mth(upTo.map((x) => x.hash)) === h.ledger.root && upTo.at(-1).hash === h.ledger.head_hash,
    'health: ledger.root is RFC 9162 over events 1..head_seq, head_hash the last one', [h.ledger, upTo.length]);
  check(h.projections.applied_seq === h.ledger.head_seq && h.db.open === true && isInt(h.db.size_bytes) && h.db.size_bytes > 0 && typeof h.version === 'string' && h.version.length > 0 &&
    ['ok', 'degraded'].includes(h.status) && h.middleware.stages.every((x) => typeof x === 'string'), 'health: fields and types', h);

  // ---- thought_record: metadata up to 16 KiB as compact JSON
  await ok('r6.meta.16k', 'thought_record', { task_id: root, type: 'plan', content: 'm', metadata: { big: 'x'.repeat(16384 - 10) } });
  await fail('r6.meta.16k+1', 'thought_record', { task_id: root, type: 'plan', content: 'm', metadata: { big: 'x'.repeat(16384 - 9) } }, 'ERR_INVALID_INPUT', { issues: issueAt('metadata') });

  // ---- calls in flight together: ids, sequences and chain positions
  // still one each, in one order
  const CP = R + '-cc';
  const made = await Promise.all(Array.from({ length: 12 }, (_, i) => ok(`r6.cc.mk${i}`, 'task_create', { title: `cc${i}`, project: CP })));
  const byId = [...made].sort((x, y) => num(x.task_id) - num(y.task_id));
  check(byId.every((x, i) => x.sequence === i + 1 && (i === 0 || (num(x.task_id) === num(byId[i - 1].task_id) + 1 && x.seq > byId[i - 1].seq))),
    'concurrent creates: consecutive ids, sequences 1..n, in ledger order', byId.map((x) => [x.task_id, x.sequence, x.seq]));
  const ths = await Promise.all(Array.from({ length: 12 }, (_, i) => ok(`r6.cc.th${i}`, 'thought_record', { task_id: byId[0].task_id, type: 'analysis', content: `c${i}` })));
  const byPos = [...ths].sort((x, y) => x.chain_position - y.chain_position);
  check(byPos.every((x, i) => x.chain_position === i + 1 && x.previous_hash === (i === 0 ? null : byPos[i - 1].hash) && (i === 0 || x.seq > byPos[i - 1].seq)),
    'concurrent thoughts: one chain, positions 1..n in ledger order', byPos.map((x) => [x.chain_position, x.seq]));
  const cv = await ok('r6.cc.verify', 'thought_record_list', { task_id: byId[0].task_id, verify_chain: true });
  check(cv.chain_valid === true && eq(cv.invalid_links, []) && cv.thought_count === 12, 'concurrent thoughts: the chain verifies', cv.invalid_links);

  // ---- the default limits cap: 50 tasks, 20 suggestions, 100 thoughts
  const DL = R + '-dl';
  const dl = await Promise.all(Array.from({ length: 51 }, (_, i) => ok(`r6.dl.mk${i}`, 'task_create', { title: `dl${i}`, project: DL })));
  await Promise.all(dl.slice(0, 21).map((x, i) => ok(`r6.dl.todo${i}`, 'task_update', { task_id: x.task_id, status: 'todo' })));
  const l50 = await ok('r6.dl.list', 'task_list', { project: DL });
  check(l50.returned_count === 50 && l50.tasks.length === 50 && l50.total_count === 51 && l50.limit === 50, 'task_list: limit 50 by default', [l50.returned_count, l50.total_count]);
  const n20 = await ok('r6.dl.next', 'task_next_actions', { project: DL });
  check(n20.count === 20 && n20.next_actions.length === 20, 'task_next_actions: limit 20 by default', n20.count);
  const n21 = await ok('r6.dl.next.100', 'task_next_actions', { project: DL, limit: 100 });
  check(n21.count === 21 && eq(n21.next_actions.slice(0, 20), n20.next_actions), 'task_next_actions: the default page is the first 20', n21.count);
  await Promise.all(Array.from({ length: 101 }, (_, i) => ok(`r6.dl.th${i}`, 'thought_record', { task_id: dl[0].task_id, type: 'plan', content: `t${i}` })));
  const t100 = await ok('r6.dl.thl', 'thought_record_list', { task_id: dl[0].task_id, verify_chain: true });
  check(t100.thought_count === 101 && t100.thoughts.length === 100 && t100.thoughts.every((x, i) => x.chain_position === i + 1) && t100.chain_valid === true,
    'thought_record_list: limit 100 by default, the first in ledger order', [t100.thought_count, t100.thoughts.length]);
}

async function unknownTool() {
  let res, err;
  try { res = await client.callTool({ name: 'no_such_tool', arguments: {} }); } catch (e) { err = e; }
  summary.outcomes['unknown.tool'] = res ? (res.structuredContent?.error?.code ?? JSON.stringify(res).slice(0, 200)) : `rpc ${err.code}`;
  // A tool name "": unknown tool, recorded, over stdio and HTTP (this
  // client speaks 2025-11-25); serve --connect speaks 2026-07-28 to the
  // server, whose Mcp-Name header cannot carry it: refused, not recorded.
  const bridged = (opts['serve-args'] ?? '').split(',').includes('--connect');
  const before = (await ok('empty.tool.h0', 'server_health', {})).ledger.head_seq;
  let res1, err1;
  try { res1 = await client.callTool({ name: '', arguments: {} }); } catch (e) { err1 = e; }
  const after = (await ok('empty.tool.h1', 'server_health', {})).ledger.head_seq;
  if (bridged) {
    check(err1?.code === -32020 && /the call was not recorded/.test(err1.message) && after === before + 1, 'tools/call name "": through serve --connect, refused and not recorded', [err1?.code, err1?.message, before, after]);
  } else {
    const e = res1?.structuredContent?.error;
    check(res1?.isError && e?.code === 'ERR_INVALID_INPUT' && e.details.issues.some((i) => i.path === 'name') && after === before + 2, 'tools/call name "": unknown tool, recorded', [res1, err1?.message, before, after]);
  }
  let res2, err2;
  try { res2 = await client.callTool({ name: 'server_ping' }); } catch (e) { err2 = e; }
  summary.outcomes['ping.noargs'] = res2 ? (res2.structuredContent?.ok ? 'ok' : res2.structuredContent?.error?.code) : `rpc ${err2.code}`;
}


// The whole state machine: from every state, a request for every state.
const ALLOWED = {
  backlog: ['todo', 'cancelled'], todo: ['in_progress', 'blocked', 'cancelled'],
  in_progress: ['review', 'blocked', 'cancelled'], blocked: ['todo', 'in_progress', 'cancelled'],
  review: ['done', 'backlog', 'blocked', 'cancelled'], done: [], cancelled: [],
};
const PATH = { backlog: [], todo: ['todo'], in_progress: ['todo', 'in_progress'], blocked: ['todo', 'blocked'],
  review: ['todo', 'in_progress', 'review'], done: ['todo', 'in_progress', 'review', 'done'], cancelled: ['cancelled'] };
async function stateMachine() {
  const MP = P + '-sm';
  for (const from of Object.keys(ALLOWED)) {
    for (const to of Object.keys(ALLOWED)) {
      const label = `sm.${from}->${to}`;
      const t = (await ok(`${label}.mk`, 'task_create', { title: label, project: MP })).task_id;
      await ok(`${label}.th`, 'thought_record', { task_id: t, type: 'plan', content: 'p' });
      for (const st of PATH[from]) {
        await ok(`${label}.path.${st}`, 'task_update', { task_id: t, status: st, ...(st === 'blocked' ? { blocked_reason: 'r' } : {}) });
      }
      const before = await ok(`${label}.before`, 'task_get', { task_id: t });
      const args = { task_id: t, status: to, ...(to === 'blocked' && from !== 'blocked' ? { blocked_reason: 'why' } : {}), ...(to === 'blocked' && from === 'blocked' ? { blocked_reason: 'r' } : {}) };
      if (from === 'done' || from === 'cancelled') {
        await fail(label, 'task_update', args, 'ERR_TASK_CLOSED', { task_id: t, status: from });
      } else if (from === to) {
        const r = await ok(label, 'task_update', args);
        check(r.seq === before.seq && r.previous_status === undefined, `${label}: same state is no change`, r);
      } else if (ALLOWED[from].includes(to)) {
        const r = await ok(label, 'task_update', args);
        check(r.status === to && r.previous_status === from, `${label}: moved`, r);
        const g = await ok(`${label}.after`, 'task_get', { task_id: t });
        check(g.status === to && (to === 'blocked' ? g.blocked_reason === 'why' : g.blocked_reason == null), `${label}: stored`, g);
      } else {
        await fail(label, 'task_update', args, 'ERR_INVALID_TRANSITION', { from, to, allowed: (a) => eq([...a].sort(), [...ALLOWED[from]].sort()) });
        const g = await ok(`${label}.after`, 'task_get', { task_id: t });
        check(g.seq === before.seq && g.status === from, `${label}: nothing changed`, g);
      }
    }
  }
}

// A read-only or scoped identity can't be tested here (one token); http.mjs does it.

try {
  await connect();
  await unknownTool();
  if (opts.mode === 'read-only') {
    await readOnly();
  } else if (opts.mode && opts.mode.startsWith('project=')) {
    await defaultProject(opts.mode.slice('project='.length));
  } else {
  await tasks();
  const { L, ids } = await lists();
  await next(L, ids);
  await thoughts();
  await sessions();
  await skills();
  await knowledge();
  await edges();
  await edges2();
  await stateMachine();
  await round6();
  }
  await client.close();
} catch (e) {
  summary.failures.push(`aborted: ${e && e.stack || e}`);
}
summary.ok = summary.failures.length === 0;
// Written whole before the exit: a pipe takes 64 KiB at a time, and
// process.exit does not wait for the rest.
process.stdout.write(JSON.stringify(summary, null, 1) + '\n', () => process.exit(summary.ok ? 0 : 1));
