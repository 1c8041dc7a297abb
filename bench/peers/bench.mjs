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
// [logbook,sqlite,memory], BENCH_PEERS_FIGURES [the default ones:
// thought_p50,task_p50,inflight8,agents,bytes] (e.g. agents: only the shared
// store's row). Figures run only when named (logbook and the SQLite peer):
// reads (task_get, with a thought trail of 100 and of BENCH_PEERS_TRAIL
// [1000] thoughts, thought_record_list, task_list with filters and search,
// over BENCH_PEERS_TASKS [10000] tasks; one at a time and 8 in flight),
// large (thought_record p50 on a store already holding BENCH_PEERS_LARGE
// [50000] thoughts, short and 5,000-character content), mixed (AGENTS
// processes writing and reading at once), sizes (bytes on disk per thought
// at 20, 300, 2,000 and 5,000 characters of prose and with every optional
// field, per task with a 300-character description, over
// BENCH_PEERS_SIZES_N [10000] of each, and logbook's file after a rebuild).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';

import { connect, cpuSeconds, makeServers, prose, versions } from './servers.mjs';

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
const TASKS = envInt('BENCH_PEERS_TASKS', 10000);
const TRAIL = envInt('BENCH_PEERS_TRAIL', 1000);
const LARGE = envInt('BENCH_PEERS_LARGE', 50000);
const SIZES_N = envInt('BENCH_PEERS_SIZES_N', 10000);
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

// pool runs fn(0..total-1), n calls in flight.
async function pool(n, total, fn) {
  let next = 0;
  await Promise.all(Array.from({ length: n }, async () => {
    for (let i; (i = next++) < total;) await fn(i);
  }));
}

// timed times fn one call at a time, after a warm-up: p50 and p99 in µs.
async function timed(calls, fn) {
  for (let i = 0; i < 20; i++) await fn(-1 - i);
  const lat = [];
  for (let i = 0; i < calls; i++) {
    const t0 = performance.now();
    await fn(i);
    lat.push((performance.now() - t0) * 1000);
  }
  return { p50_us: pct(lat, 50), p99_us: pct(lat, 99) };
}

// taskArgs is the i-th task of the read figures: two projects, every
// priority, two of five labels, eight assignees, a 60-character title and a
// 300-character description; one in a hundred mentions kubernetes.
const LABELS = ['backend', 'frontend', 'infra', 'docs', 'security'];
const PRIORITIES = ['low', 'normal', 'high', 'critical'];
const taskArgs = (i) => ({
  title: prose(i, 60), project: i % 4 ? 'bench' : 'ops',
  description: `${prose(i + 1000000, 300)}${i % 100 === 7 ? ' Kubernetes' : ''}`,
  priority: PRIORITIES[i % 4], labels: [LABELS[i % 5], LABELS[(i + 1 + ((i >> 3) % 4)) % 5]], assignee: `agent-${i % 8}`,
});

// READS are the reads both servers answer, by the name of their rows; each
// gets the store's two trail tasks. matched is what a result's size says,
// the same on both servers when they answer the same thing.
const READS = {
  task_get: { tool: 'task_get', args: () => ({ task_id: 'T-0042' }), matched: (d) => d.labels.length },
  task_get_trail100: { tool: 'task_get', args: (t) => ({ task_id: t.small, include_thought_trail: true }), matched: (d) => d.thought_trail.length },
  task_get_trail: { tool: 'task_get', args: (t) => ({ task_id: t.big, include_thought_trail: true }), matched: (d) => d.thought_trail.length },
  thoughts_100: { tool: 'thought_record_list', args: (t) => ({ task_id: t.big, limit: 100 }), matched: (d) => d.thought_count },
  task_list: { tool: 'task_list', args: () => ({ project: 'bench' }), matched: (d) => d.total_count },
  task_list_filter: { tool: 'task_list', args: () => ({ priority: ['high', 'critical'], label: 'infra', assignee: 'agent-2', sort_by: 'created' }), matched: (d) => d.total_count },
  task_list_search: { tool: 'task_list', args: () => ({ search: 'kubernetes cache' }), matched: (d) => d.total_count },
};
const READS_INFLIGHT = ['task_get_trail100', 'task_list_search'];

// reads: a store of TASKS tasks, one task with 100 thoughts and one with
// TRAIL; then each read one at a time, and two of them 8 in flight.
function reads(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const { client } = await open('bench-agent');
    await pool(8, TASKS, (i) => s.call(client, 'task_create', taskArgs(i)));
    const t = {
      small: (await s.call(client, 'task_create', { title: 'trail 100', project: 'bench' })).task_id,
      big: (await s.call(client, 'task_create', { title: `trail ${TRAIL}`, project: 'bench' })).task_id,
    };
    await pool(8, 100, (i) => s.call(client, 'thought_record', { task_id: t.small, type: 'analysis', content: prose(i, 300) }));
    await pool(8, TRAIL, (i) => s.call(client, 'thought_record', { task_id: t.big, type: 'analysis', content: prose(i, 300) }));
    const out = {};
    for (const [k, r] of Object.entries(READS)) {
      const args = r.args(t);
      out[`${k}_matched`] = r.matched(await s.call(client, r.tool, args));
      Object.assign(out, Object.fromEntries(Object.entries(await timed(Math.max(100, CALLS >> 2), () => s.call(client, r.tool, args))).map(([f, v]) => [`${k}_${f}`, v])));
    }
    for (const k of READS_INFLIGHT) {
      const args = READS[k].args(t);
      const total = CALLS;
      const t0 = performance.now();
      await pool(8, total, () => s.call(client, READS[k].tool, args));
      out[`${k}_inflight8_per_s`] = total / ((performance.now() - t0) / 1000);
    }
    return out;
  });
}

// large: thought_record one at a time on a store already holding LARGE
// thoughts (logbook: twice as many events, each call's tool.called
// included), with the usual short content and with 5,000 characters.
function large(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const { client } = await open('bench-agent');
    const task = await s.subject(client, 'large');
    await s.fill(client, task, LARGE);
    const calls = Math.max(100, CALLS >> 1);
    const short = await timed(calls, (i) => s.thought(client, task, LARGE + i));
    const long = await timed(calls, (i) => s.call(client, 'thought_record', { task_id: task, type: 'analysis', content: prose(LARGE + calls + i, 5000) }));
    return { short_p50_us: short.p50_us, short_p99_us: short.p99_us, long_p50_us: long.p50_us, long_p99_us: long.p99_us };
  });
}

// mixed: AGENTS processes on one store of 1,000 tasks, each with a task of
// its own, each doing WRITES calls one at a time, in turn thought_record,
// task_get with its trail, task_list with a search, thought_record_list:
// calls/s over all, p50 and p99 of the writes and of the reads.
const MIXED = [
  (s, c, task, i) => s.call(c, 'thought_record', { task_id: task, type: 'analysis', content: prose(i, 300) }),
  (s, c, task) => s.call(c, 'task_get', { task_id: task, include_thought_trail: true }),
  (s, c) => s.call(c, 'task_list', { search: 'kubernetes cache', limit: 20 }),
  (s, c, task) => s.call(c, 'thought_record_list', { task_id: task, limit: 20 }),
];
function mixed(name) {
  return withStore(name, async (dir, open) => {
    const s = ALL[name];
    const conns = [];
    for (let k = 0; k < AGENTS; k++) conns.push(await open(`agent-${k}`));
    await pool(8, 1000, (i) => s.call(conns[0].client, 'task_create', taskArgs(i)));
    const tasks = [];
    for (let k = 0; k < AGENTS; k++) tasks.push(await s.subject(conns[k].client, `agent-${k}`));
    const w = [];
    const r = [];
    const t0 = performance.now();
    await Promise.all(conns.map(async (c, k) => {
      for (let i = 0; i < WRITES; i++) {
        const t = performance.now();
        await MIXED[i % MIXED.length](s, c.client, tasks[k], k * WRITES + i);
        (i % MIXED.length ? r : w).push((performance.now() - t) * 1000);
      }
    }));
    const secs = (performance.now() - t0) / 1000;
    return {
      calls_per_s: (w.length + r.length) / secs,
      write_p50_us: pct(w, 50), write_p99_us: pct(w, 99), read_p50_us: pct(r, 50), read_p99_us: pct(r, 99),
    };
  });
}

// SIZES are the thoughts and tasks of the sizes figure: arguments of the
// i-th call.
const SIZES = {
  thought_20: { tool: 'thought_record', args: (i) => ({ type: 'analysis', content: prose(i, 20) }) },
  thought_300: { tool: 'thought_record', args: (i) => ({ type: 'analysis', content: prose(i, 300) }) },
  thought_2000: { tool: 'thought_record', args: (i) => ({ type: 'analysis', content: prose(i, 2000) }) },
  thought_5000: { tool: 'thought_record', args: (i) => ({ type: 'analysis', content: prose(i, 5000) }) },
  thought_rich: {
    tool: 'thought_record',
    args: (i) => ({
      type: 'decision', content: prose(i, 300), branch: 'fix-upload-retry', commit_sha: (0x1a2b3c4d5e6f + i).toString(16),
      tests_run: ['go test ./storage: ok', `go test ./api -run TestUpload${i}: ok`], blockers: ['the infra ticket for the west cluster'],
      metadata: { pr: 1000 + i, files: ['storage/retry.go', 'api/upload.go'], p99_ms: 41.5 },
    }),
  },
  task_300: { tool: 'task_create', args: (i) => ({ title: prose(i, 60), project: 'bench', description: prose(i + 1000000, 300) }) },
};

// sizes: for each of SIZES, SIZES_N calls (8 in flight) on a fresh store,
// then its bytes on disk per call; logbook's file again after a rebuild.
function shapesOf(name) {
  const out = {};
  return Object.entries(SIZES).reduce((p, [k, v]) => p.then(() => withStore(name, async (dir, open) => {
    const s = ALL[name];
    const c = await open('bench-agent');
    const task = await s.subject(c.client, 'sizes');
    await pool(8, SIZES_N, (i) => s.call(c.client, v.tool, { ...(v.tool === 'thought_record' ? { task_id: task } : {}), ...v.args(i) }));
    await c.close();
    out[k] = s.store(dir) / SIZES_N;
    if (s.rebuild) {
      s.rebuild(dir);
      out[`${k}_rebuilt`] = s.store(dir) / SIZES_N;
    }
  })), Promise.resolve()).then(() => out);
}

const ALL_FIGURES = {
  thought_p50: latency('thought'),
  task_p50: latency('task'),
  inflight8: inflight,
  agents: agents,
  reads,
  large,
  mixed,
};
// CONTRACT_ONLY are the figures server-memory has no tools for.
const CONTRACT_ONLY = ['reads', 'large', 'mixed', 'sizes'];
const DEFAULT = ['thought_p50', 'task_p50', 'inflight8', 'agents', 'bytes'];
const WANT = (process.env.BENCH_PEERS_FIGURES ?? DEFAULT.join(',')).split(',');
for (const f of WANT) {
  if (!ALL_FIGURES[f] && f !== 'bytes' && f !== 'sizes') {
    console.error(`bench.mjs: unknown figure ${f} in BENCH_PEERS_FIGURES (known: ${Object.keys(ALL_FIGURES).join(', ')}, bytes, sizes)`);
    process.exit(2);
  }
}
const FIGURES = Object.fromEntries(Object.entries(ALL_FIGURES).filter(([f]) => WANT.includes(f)));
const serves = (name, fig) => !CONTRACT_ONLY.includes(fig) || ALL[name].call;

const runs = Object.fromEntries(NAMES.map((n) => [n, Object.fromEntries(Object.keys(FIGURES).map((f) => [f, []]))]));
const started = new Date();
log(`bench-peers: ${ROUNDS} rounds; ${CALLS} calls per latency, ${2 * CALLS} in flight, ${AGENTS} agents × ${WRITES} writes, bytes at ${THOUGHTS} thoughts; servers ${NAMES.join(', ')}`);
for (let r = 0; r < ROUNDS; r++) {
  const order = NAMES.map((_, i) => NAMES[(i + r) % NAMES.length]);
  for (const [fig, measure] of Object.entries(FIGURES)) {
    for (const name of order.filter((n) => serves(n, fig))) {
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
const shapes = {};
for (const name of WANT.includes('sizes') ? NAMES.filter((n) => serves(n, 'sizes')) : []) {
  shapes[name] = await shapesOf(name);
  log(`sizes ${name.padEnd(7)} ${JSON.stringify(shapes[name], (k, x) => (typeof x === 'number' ? Math.round(x) : x))}`);
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
// The figures run only when named: logbook and the SQLite peer.
const both = (fig, field, unit, goal, better) => {
  const v = (n) => med(n, fig, field);
  const r = rr(fig, field);
  return [cell('logbook', (n) => `${fmt(v(n))} ${unit}`), cell('sqlite', (n) => `${fmt(v(n))} ${unit}`), ratio(r, 1), '–', goal, verdict(better === 'low' ? r <= 1 : r >= 1)];
};
if (wants('reads')) {
  for (const k of Object.keys(READS)) {
    // matched differs when the two servers did not answer the same thing.
    const m = (n) => median(runs[n].reads.map((v) => v[`${k}_matched`]));
    const same = !(has('logbook') && has('sqlite')) || m('logbook') === m('sqlite') ? '' : ` (MATCHED ${m('logbook')} vs ${m('sqlite')})`;
    rows.push([`${k} p50 (${fmt(TASKS)} tasks, trail of ${fmt(TRAIL)})${same}`, ...both('reads', `${k}_p50_us`, 'µs', '≤ the peer', 'low')]);
  }
  for (const k of READS_INFLIGHT) rows.push([`${k}, 8 in flight`, ...both('reads', `${k}_inflight8_per_s`, 'calls/s', '≥ the peer', 'high')]);
}
if (wants('large')) {
  rows.push([`thought_record p50, ${fmt(LARGE)} thoughts already stored`, ...both('large', 'short_p50_us', 'µs', '≤ the peer', 'low')]);
  rows.push([`thought_record p50, 5,000 characters, ${fmt(LARGE)} stored`, ...both('large', 'long_p50_us', 'µs', '≤ the peer', 'low')]);
}
if (wants('mixed')) {
  rows.push([`${AGENTS} agents writing and reading, ${WRITES} calls each`, ...both('mixed', 'calls_per_s', 'calls/s', '≥ the peer', 'high')]);
  for (const f of ['write_p50_us', 'write_p99_us', 'read_p50_us', 'read_p99_us']) rows.push([`  mixed ${f.replace('_us', '').replace('_', ' ')}`, ...both('mixed', f, 'µs', '≤ the peer', 'low')]);
}
if (wants('sizes')) {
  for (const k of Object.keys(SIZES)) {
    const l = shapes.logbook?.[k];
    const q = shapes.sqlite?.[k];
    const rb = shapes.logbook?.[`${k}_rebuilt`];
    rows.push([`bytes on disk per ${k.replace('_', ' ')} (${fmt(SIZES_N)})`, cell('logbook', () => `${fmt(l)} B (${fmt(rb)} B rebuilt)`), cell('sqlite', () => `${fmt(q)} B`),
      ratio(l, q), '–', '≤ 1.5× the peer; a rebuild does not grow the file', verdict(l <= 1.5 * q && rb <= l)]);
  }
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
  writeFileSync(opts.out, `${JSON.stringify({ started: started.toISOString(), versions: ver, config: { ROUNDS, CALLS, AGENTS, WRITES, THOUGHTS, TASKS, TRAIL, LARGE, SIZES_N, WARMUP }, runs, sizes, shapes, table: out }, null, 2)}\n`);
  log(`raw figures: ${opts.out}`);
}
