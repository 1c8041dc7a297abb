// http.mjs drives a running `logbook server` with the official MCP TypeScript
// SDK client over Streamable HTTP (StreamableHTTPClientTransport), the way a
// remote agent host does: with a full token, every tool (each structuredContent
// checked by the SDK against the tool's outputSchema, forced 2025-06-18 and the
// SDK's latest revision); without, with a bad and with a revoked token (401
// with a Bearer challenge, connect refused); with a scoped token (only its
// tools listed, ERR_FORBIDDEN outside them); with a read-only token
// (ERR_READ_ONLY from a mutating tool).
//
// Usage: node http.mjs --url URL --token T --scoped-token T --scope a,b
//          --read-only-token T --revoked-token T
//
// It prints one JSON summary on stdout and exits 0 only if every check held.
// cmd/logbook/e2e_server_ts_test.go starts the server, runs it and asserts on
// the summary and the ledger.
import { parseArgs } from 'node:util';
import { readFileSync } from 'node:fs';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { LATEST_PROTOCOL_VERSION } from '@modelcontextprotocol/sdk/types.js';

const { values: opts } = parseArgs({
  options: {
    url: { type: 'string' },
    token: { type: 'string' },
    'scoped-token': { type: 'string' },
    scope: { type: 'string' },
    'read-only-token': { type: 'string' },
    'revoked-token': { type: 'string' },
  },
});
for (const k of ['url', 'token', 'scoped-token', 'scope', 'read-only-token', 'revoked-token']) {
  if (!opts[k]) {
    console.error(`http.mjs: --${k} is required`);
    process.exit(2);
  }
}

const summary = {
  ok: false,
  sdk_version: JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url))).version,
  protocols: {},     // requested -> negotiated
  tools_called: [],  // distinct tools answered ok
  scoped_listed: [],
  calls: 0,          // tools/call answered
  checks: 0,
  get_statuses: [],  // the HTTP status of each GET (event stream) the SDK opened
  failures: [],
};
const called = new Set();

function check(cond, what, detail) {
  summary.checks++;
  if (!cond) summary.failures.push(detail === undefined ? what : `${what}: ${JSON.stringify(detail)}`);
  return cond;
}

// connect returns a client whose every request carries token. The GETs
// the SDK sends (it opens an event stream after initialize) are noted, and
// any error the client reports outside a request is a failure (unless the
// token is to be refused): the server answers GET 405, which must not
// break it.
async function connect(token, name, protocolVersion, toBeRefused = false) {
  const client = new Client({ name, version: '1.0.0' });
  if (!toBeRefused) client.onerror = (err) => summary.failures.push(`${name}: the client reported ${err?.stack ?? err}`);
  const transport = new StreamableHTTPClientTransport(new URL(opts.url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
    fetch: async (url, init) => {
      const res = await fetch(url, init);
      if ((init?.method ?? 'GET') === 'GET') summary.get_statuses.push(res.status);
      return res;
    },
  });
  if (protocolVersion) {
    // Ask for an older revision: the SDK sends its latest unless told.
    const send = transport.send.bind(transport);
    transport.send = (msg, o) => {
      if (msg.method === 'initialize') msg.params.protocolVersion = protocolVersion;
      return send(msg, o);
    };
  }
  await client.connect(transport);
  return client;
}

async function call(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  summary.calls++;
  const env = res.structuredContent;
  check(env && typeof env.ok === 'boolean', `${name}: an envelope`, res);
  check(res.content?.length === 1 && JSON.stringify(JSON.parse(res.content[0].text)) === JSON.stringify(env),
    `${name}: the text item is the envelope`, res);
  check(Boolean(res.isError) === !env.ok, `${name}: isError matches ok`, res);
  return env;
}

async function ok(client, name, args) {
  const env = await call(client, name, args);
  if (check(env.ok, `${name} ok`, env)) called.add(name);
  return env.data;
}

async function allTools(client, project) {
  await client.listTools(); // the SDK keeps the output schemas and validates every result against them
  await ok(client, 'server_ping', {});
  await ok(client, 'server_health', {});
  await ok(client, 'skill_list', {});
  const { task_id } = await ok(client, 'task_create', { title: 'from typescript', project });
  await ok(client, 'task_update', { task_id, status: 'todo' });
  await ok(client, 'task_get', { task_id, include_thought_trail: true });
  await ok(client, 'task_list', { project });
  await ok(client, 'task_next_actions', { project });
  const { session_id } = await ok(client, 'audit_session_start', { task_id, auditor_id: 'ts-auditor' });
  await ok(client, 'thought_record', { task_id, type: 'decision', content: 'decided over http', session_id });
  await ok(client, 'thought_record_list', { task_id, verify_chain: true });
  await ok(client, 'merkle_root', { session_id });
  await ok(client, 'merkle_finalize', { session_id });
  await ok(client, 'audit_verify_chain', {});
}

// refused checks a token is turned away: a raw POST gets 401 with a Bearer
// challenge, and the SDK's connect fails.
async function refused(what, token) {
  const headers = { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(opts.url, {
    method: 'POST', headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: LATEST_PROTOCOL_VERSION, capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  });
  check(res.status === 401 && /^Bearer/.test(res.headers.get('www-authenticate') ?? ''), `${what}: 401 with a Bearer challenge`,
    { status: res.status, challenge: res.headers.get('www-authenticate') });
  let connected = false;
  try {
    const c = await connect(token ?? '', what, undefined, true);
    connected = true;
    await c.close();
  } catch { /* refused, as it must be */ }
  check(!connected, `${what}: the SDK client cannot connect`);
}

try {
  for (const proto of ['2025-06-18', undefined]) {
    const client = await connect(opts.token, 'ts-http-client', proto);
    const want = proto ?? LATEST_PROTOCOL_VERSION;
    summary.protocols[want] = client.transport.protocolVersion ?? null;
    check(summary.protocols[want] === want, `protocol ${want} negotiated`, summary.protocols[want]);
    const { tools } = await client.listTools();
    check(tools.length === 21, `protocol ${proto}: 21 tools listed`, tools.map((t) => t.name));
    await allTools(client, `ts-${(proto ?? 'latest').replaceAll('.', '-')}`);
    await client.close();
  }
  check(summary.get_statuses.length > 0 && summary.get_statuses.every((s) => s === 405),
    'every GET the SDK sent answered 405 (no event stream)', summary.get_statuses);

  await refused('no token', undefined);
  await refused('bad token', opts.token.slice(0, -2) + 'xx');
  await refused('revoked token', opts['revoked-token']);

  const scope = opts.scope.split(',').sort();
  const scoped = await connect(opts['scoped-token'], 'ts-scoped');
  summary.scoped_listed = (await scoped.listTools()).tools.map((t) => t.name).sort();
  check(JSON.stringify(summary.scoped_listed) === JSON.stringify(scope), 'scoped token lists only its tools', summary.scoped_listed);
  const forbidden = await call(scoped, 'task_create', { title: 'x', project: 'p' });
  check(!forbidden.ok && forbidden.error.code === 'ERR_FORBIDDEN' && forbidden.error.details.tool === 'task_create',
    'out of scope: ERR_FORBIDDEN', forbidden);
  await scoped.close();

  const ro = await connect(opts['read-only-token'], 'ts-read-only');
  await ro.listTools();
  const refusedWrite = await call(ro, 'task_create', { title: 'x', project: 'p' });
  check(!refusedWrite.ok && refusedWrite.error.code === 'ERR_READ_ONLY', 'read-only token: ERR_READ_ONLY', refusedWrite);
  await ok(ro, 'task_list', {});
  await ro.close();
} catch (err) {
  summary.failures.push(`unexpected: ${err?.stack ?? err}`);
}
summary.tools_called = [...called].sort();
summary.ok = summary.failures.length === 0;
console.log(JSON.stringify(summary));
process.exit(summary.ok ? 0 : 1);
