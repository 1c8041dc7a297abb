// bench.mjs is `make bench-peers`: it drives logbook (`logbook serve`), the
// Colibri-style SQLite peer (sqlite-peer.mjs) and the reference memory server
// (@modelcontextprotocol/server-memory) with one client (servers.mjs: the
// TypeScript SDK client over real stdio), in alternating rounds on fresh
// stores, and prints the peer rows of issue 9's table: medians over the
// rounds, the ratio logbook / SQLite peer, and each row against its goal.
//
// Within a round each figure is measured for every server before the next
// figure, in an order that rotates from round to round, so the servers share
// the machine's ups and downs. Bytes on disk per thought is measured once,
// after the rounds (it does not depend on the machine's load).
//
// Usage: node bench.mjs --bin bin/logbook [--out FILE.json]
// Environment (defaults in brackets): BENCH_PEERS_ROUNDS [5],
// BENCH_PEERS_CALLS [1000] calls per latency figure (twice that in flight),
// BENCH_PEERS_AGENTS [8] and BENCH_PEERS_WRITES [500] for the shared store,
// BENCH_PEERS_THOUGHTS [100000] for the bytes on disk, BENCH_PEERS_SERVERS
// [logbook,sqlite,memory], BENCH_PEERS_FIGURES [all: thought_p50,task_p50,
// inflight8,agents,bytes] (e.g. agents: only the shared store's row).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { connect, cpuSeconds, makeServers, versions } from './servers.mjs';

const { values: opts } = parseArgs({ options: { bin: { type: 'string' }, out: { type: 'string' } } });
if (!opts.bin) {
  console.error('bench.mjs: --bin is required (the logbook binary)');
  process.exit(2);
}
const envInt = (name, def) => {
  const v = Number(process.env[name] ?? def);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`bench.mjs: ${name} must be a positive integer`);
    process.exit(2);
  }
  return v;
};
const ROUNDS = envInt('BENCH_PEERS_ROUNDS', 5);
const CALLS = envInt('BENCH_PEERS_CALLS', 1000);
const AGENTS = envInt('BENCH_PEERS_AGENTS', 8);
const WRITES = envInt('BENCH_PEERS_WRITES', 500);
const THOUGHTS = envInt('BENCH_PEERS_THOUGHTS', 100000);
const WARMUP = 50; // calls before the clock runs: JIT, caches, the first pages of a fresh store
const ALL = makeServers(path.resolve(opts.bin));
const NAMES = (process.env.BENCH_PEERS_SERVERS ?? 'logbook,sqlite,memory').split(',');
for (const n of NAMES) {
  if (!ALL[n]) {
    console.error(`bench.mjs: unknown server ${n} in BENCH_PEERS_SERVERS (known: ${Object.keys(ALL).join(', ')})`);
    process.exit(2);
  }
}

const log = (s) => process.stderr.write(`${s}\n`);
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((s.length * p) / 100))];
};
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

// withStore runs fn on a fresh store in a directory of its own, with the
// servers it launches closed and the directory removed afterwards.
async function withStore(name, fn) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `bench-peers-${name}-`));
  const conns = [];
  const open = async (agent) => {
    const c = await connect(ALL[name].launch(dir, agent), agent);
    conns.push(c);
    return c;
  };
  try {
    return await fn(dir, open);
  } catch (e) {
    throw new Error(`${name}: ${e.message}\n--- server stderr ---\n${conns.map((c) => c.stderr()).join('\n')}`);
  } finally {
    await Promise.all(conns.map((c) => c.close().catch(() => {})));
    rmSync(dir, { recursive: true, force: true });
  }
}

// latency: one call at a time on one connection; p50 and p99 in µs, and the
// server process's own CPU time (user and system) per call, in µs: what it
// used over the timed calls, divided by them.
function latency(kind) {
  return (name) => withStore(name, async (dir, open) => {
    const s = ALL[name];
    const { client, pid } = await open('bench-agent');
    const subject = await s.subject(client, 'solo');
    const call = (i) => (kind === 'task' ? s.task(client, i) : s.thought(client, subject, i));
    for (let i = 0; i < WARMUP; i++) await call(-1 - i);
    const lat = [];
    const cpu0 = cpuSeconds(pid);
    for (let i = 0; i < CALLS; i++) {
      const t0 = performance.now();
      await call(i);
      lat.push((performance.now() - t0) * 1000);
    }
    const cpu = ((cpuSeconds(pid) - cpu0) * 1e6) / CALLS;
    return { p50_us: pct(lat, 50), p99_us: pct(lat, 99), cpu_us: cpu };
  });
}

// inflight: 8 thought_record calls in flight on one connection; calls/s.
function inflight(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const { client } = await open('bench-agent');
    const subject = await s.subject(client, 'solo');
    for (let i = 0; i < WARMUP; i++) await s.thought(client, subject, -1 - i);
    const total = 2 * CALLS;
    let next = 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i; (i = next++) < total;) await s.thought(client, subject, i);
    }));
    const secs = (performance.now() - t0) / 1000;
    // server-memory's handlers interleave their read-modify-write of its
    // file: acknowledged observations can go missing, which shows here.
    const lost = WARMUP + total - await s.count([{ client }], [subject], dir);
    return { calls_per_s: total / secs, lost };
  });
}

// agents: AGENTS server processes on one store, each with its own
// connection and task, each writing WRITES thoughts one at a time, all at
// once. A write counts when it is acknowledged as a success; afterwards the
// store is counted, so a write that was acknowledged and then lost shows.
function agents(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const conns = [];
    const subjects = [];
    for (let k = 0; k < AGENTS; k++) {
      const c = await open(`agent-${k}`);
      conns.push(c);
      subjects.push(await s.subject(c.client, `agent-${k}`));
    }
    const warm = 10;
    await Promise.all(conns.map(async (c, k) => {
      for (let i = 0; i < warm; i++) await s.thought(c.client, subjects[k], -1 - i);
    }));
    const lat = [];
    let failed = 0;
    let firstError;
    const t0 = performance.now();
    await Promise.all(conns.map(async (c, k) => {
      for (let i = 0; i < WRITES; i++) {
        const t = performance.now();
        try {
          await s.thought(c.client, subjects[k], k * WRITES + i);
          lat.push((performance.now() - t) * 1000);
        } catch (e) {
          failed++;
          firstError ??= e.message;
        }
      }
    }));
    const secs = (performance.now() - t0) / 1000;
    const stored = await s.count(conns, subjects, dir);
    return {
      acked_per_s: lat.length / secs, p99_ms: lat.length ? pct(lat, 99) / 1000 : NaN,
      failed, lost: AGENTS * warm + lat.length - stored, ...(firstError ? { first_error: firstError } : {}),
    };
  });
}

// bytes: THOUGHTS thoughts in a fresh store, then its size on disk / thoughts.
function bytes(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const c = await open('bench-agent');
    const subject = await s.subject(c.client, 'solo');
    await s.fill(c.client, subject, THOUGHTS);
    const stored = await s.count([c], [subject], dir);
    if (stored !== THOUGHTS) throw new Error(`${stored} thoughts stored, ${THOUGHTS} written`);
    const size = s.store(dir);
    return { bytes_per_thought: size / THOUGHTS, store_bytes: size };
  });
}

const ALL_FIGURES = {
  thought_p50: latency('thought'),
  task_p50: latency('task'),
  inflight8: inflight,
  agents: agents,
};
const WANT = (process.env.BENCH_PEERS_FIGURES ?? [...Object.keys(ALL_FIGURES), 'bytes'].join(',')).split(',');
for (const f of WANT) {
  if (!ALL_FIGURES[f] && f !== 'bytes') {
    console.error(`bench.mjs: unknown figure ${f} in BENCH_PEERS_FIGURES (known: ${Object.keys(ALL_FIGURES).join(', ')}, bytes)`);
    process.exit(2);
  }
}
const FIGURES = Object.fromEntries(Object.entries(ALL_FIGURES).filter(([f]) => WANT.includes(f)));

const runs = Object.fromEntries(NAMES.map((n) => [n, Object.fromEntries(Object.keys(FIGURES).map((f) => [f, []]))]));
const started = new Date();
log(`bench-peers: ${ROUNDS} rounds; ${CALLS} calls per latency, ${2 * CALLS} in flight, ${AGENTS} agents × ${WRITES} writes, bytes at ${THOUGHTS} thoughts; servers ${NAMES.join(', ')}`);
for (let r = 0; r < ROUNDS; r++) {
  const order = NAMES.map((_, i) => NAMES[(i + r) % NAMES.length]);
  for (const [fig, measure] of Object.entries(FIGURES)) {
    for (const name of order) {
      const v = await measure(name);
      runs[name][fig].push(v);
      log(`round ${r + 1}/${ROUNDS} ${fig.padEnd(11)} ${name.padEnd(7)} ${JSON.stringify(v, (k, x) => (typeof x === 'number' ? Math.round(x * 10) / 10 : x))}`);
    }
  }
}
const sizes = {};
for (const name of WANT.includes('bytes') ? NAMES : []) {
  sizes[name] = await bytes(name);
  log(`bytes ${name.padEnd(7)} ${JSON.stringify(sizes[name])}`);
}

// med is the median over the rounds of one field of one figure.
const med = (name, fig, field) => median(runs[name][fig].map((v) => v[field]));
const has = (n) => NAMES.includes(n);
const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : '–');
const ratio = (a, b) => (has('logbook') && has('sqlite') ? `${fmt(a / b, 2)}×` : '–');
// rr is the median over the rounds of logbook / peer, each round's pair
// measured back to back: steadier on a loaded machine than a ratio of the
// two medians, which may come from different rounds.
const rr = (fig, field) => (has('logbook') && has('sqlite')
  ? median(runs.logbook[fig].map((v, r) => v[field] / runs.sqlite[fig][r][field])) : NaN);
const verdict = (ok) => (has('logbook') && has('sqlite') ? (ok ? 'ok' : 'MISS') : '–');
const cell = (n, f) => (has(n) ? f(n) : '–');

// lostNote names the worst round's acknowledged writes missing from the
// store, and failed calls, of a figure; empty when there were none.
const lostNote = (n, fig) => {
  const lost = Math.max(...runs[n][fig].map((x) => x.lost ?? 0));
  const failed = Math.max(...runs[n][fig].map((x) => x.failed ?? 0));
  return `${lost ? `; up to ${fmt(lost)} acked writes lost` : ''}${failed ? `; up to ${fmt(failed)} calls failed` : ''}`;
};

const rows = [];
const wants = (fig) => WANT.includes(fig);
if (wants('thought_p50')) {
  const v = (n) => med(n, 'thought_p50', 'p50_us');
  rows.push(['thought_record p50, one call at a time, real stdio', cell('logbook', (n) => `${fmt(v(n))} µs`), cell('sqlite', (n) => `${fmt(v(n))} µs`),
    ratio(rr('thought_p50', 'p50_us'), 1), cell('memory', (n) => `${fmt(v(n))} µs`), '≤ the peer, same run', verdict(rr('thought_p50', 'p50_us') <= 1)]);
}
if (wants('thought_p50')) {
  // Measured through the real binary over real stdio, beside the peer: the
  // in-process figure, with the bytes a call allocates, is mcp's
  // BenchmarkServerCall (`make bench`).
  const v = (n) => med(n, 'thought_p50', 'cpu_us');
  rows.push(['CPU per call (thought_record, one at a time: the server process\'s own user + system CPU over the calls, /proc/PID/stat)', cell('logbook', (n) => `${fmt(v(n))} µs`), cell('sqlite', (n) => `${fmt(v(n))} µs`),
    ratio(rr('thought_p50', 'cpu_us'), 1), cell('memory', (n) => `${fmt(v(n))} µs`), '≤ 150 µs', has('logbook') ? (v('logbook') <= 150 ? 'ok' : 'MISS') : '–']);
}
if (wants('task_p50')) {
  const v = (n) => med(n, 'task_p50', 'p50_us');
  rows.push(['task_create p50', cell('logbook', (n) => `${fmt(v(n))} µs`), cell('sqlite', (n) => `${fmt(v(n))} µs`),
    ratio(rr('task_p50', 'p50_us'), 1), cell('memory', (n) => `${fmt(v(n))} µs`), '≤ the peer', verdict(rr('task_p50', 'p50_us') <= 1)]);
}
if (wants('inflight8')) {
  const v = (n) => med(n, 'inflight8', 'calls_per_s');
  const c = (n) => `${fmt(v(n))} calls/s${lostNote(n, 'inflight8')}`;
  rows.push(['8 in flight, thought_record', cell('logbook', c), cell('sqlite', c),
    ratio(rr('inflight8', 'calls_per_s'), 1), cell('memory', c), '≥ the peer', verdict(rr('inflight8', 'calls_per_s') >= 1)]);
}
if (wants('agents')) {
  const a = (n) => med(n, 'agents', 'acked_per_s');
  const p = (n) => med(n, 'agents', 'p99_ms');
  const c = (n) => `${fmt(a(n))} acked/s, p99 ${fmt(p(n), 1)} ms${lostNote(n, 'agents')}`;
  rows.push([`${AGENTS} agent processes on one store, ${WRITES} writes each`, cell('logbook', c), cell('sqlite', c),
    ratio(rr('agents', 'acked_per_s'), 1), cell('memory', c), '≥ the peer, p99 ≤ 10 ms', verdict(rr('agents', 'acked_per_s') >= 1 && p('logbook') <= 10)]);
}
if (wants('bytes')) {
  const v = (n) => sizes[n].bytes_per_thought;
  rows.push([`bytes on disk per thought (${fmt(THOUGHTS)} thoughts)`, cell('logbook', (n) => `${fmt(v(n))} B`), cell('sqlite', (n) => `${fmt(v(n))} B`),
    ratio(v('logbook'), v('sqlite')), cell('memory', (n) => `${fmt(v(n))} B`), '≤ 1.5× the peer', verdict(v('logbook') <= 1.5 * v('sqlite'))]);
}

const ver = versions();
const out = [
  '',
  `bench-peers, ${started.toISOString()}: medians of ${ROUNDS} rounds (bytes: one run), fresh stores, one client (TypeScript SDK ${ver.sdk}, Node ${ver.node}) over real stdio; ${os.cpus().length} cores (${os.cpus()[0]?.model ?? '?'}), load average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}.`,
  `SQLite peer: better-sqlite3 ${ver['better-sqlite3']} (SQLite ${ver.sqlite}), WAL, synchronous=FULL, BEGIN IMMEDIATE, busy_timeout 5 s. server-memory ${ver['server-memory']}: its own tools (create_entities, add_observations); it rewrites its whole file on every write and never fsyncs, so it is not durable like the other two, and it is not safe with several processes on one file (lost writes show in its row).`,
  '',
  '| figure | logbook | SQLite peer | logbook / peer (median of the rounds\' ratios) | server-memory | goal | logbook vs goal |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  'CPU per call in process, with the bytes a call allocates (mcp\'s BenchmarkServerCall), verify, rebuild and Append against raw bbolt are `make bench`\'s rows.',
];
console.log(out.join('\n'));
if (opts.out) {
  writeFileSync(opts.out, `${JSON.stringify({ started: started.toISOString(), versions: ver, config: { ROUNDS, CALLS, AGENTS, WRITES, THOUGHTS, WARMUP }, runs, sizes, table: out }, null, 2)}\n`);
  log(`raw figures: ${opts.out}`);
}
