// servers.mjs is the one client code path of `make bench-peers`: the official
// TypeScript SDK client over stdio (the same package and version as
// cmd/logbook/e2e), and, for each server measured, how to launch it on a
// fresh store, its comparable write calls, how to tell that a call succeeded,
// and how to count what its store holds and the bytes it takes on disk.
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import Database from 'better-sqlite3';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const peerScript = path.join(here, 'sqlite-peer.mjs');
export const memoryScript = path.join(here, 'node_modules', '@modelcontextprotocol', 'server-memory', 'dist', 'index.js');

// pkg reads an installed package's own package.json (the SDK's exports map
// answers a different one to require).
const pkg = (name) => JSON.parse(readFileSync(path.join(here, 'node_modules', name, 'package.json'), 'utf8'));

export const versions = () => ({
  node: process.version,
  sdk: pkg('@modelcontextprotocol/sdk').version,
  'server-memory': pkg('@modelcontextprotocol/server-memory').version,
  'better-sqlite3': pkg('better-sqlite3').version,
  sqlite: new Database(':memory:').prepare('SELECT sqlite_version() AS v').get().v,
});

// connect launches a server with the SDK's StdioClientTransport, runs the
// initialize handshake and tools/list (after which the SDK client checks
// every structuredContent against the tool's outputSchema, for every server
// alike). stderr is kept for the error message of a failed run; pid is the
// server process's (its CPU time: cpuSeconds).
export async function connect({ command, args, env = {} }, name) {
  const transport = new StdioClientTransport({ command, args, env: { ...getDefaultEnvironment(), ...env }, stderr: 'pipe' });
  let stderr = '';
  transport.stderr?.on('data', (b) => { stderr = (stderr + b.toString()).slice(-8000); });
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(transport);
  await client.listTools();
  return { client, pid: transport.pid, stderr: () => stderr, close: () => client.close() };
}

// CLK_TCK is the unit of /proc/PID/stat's CPU times (100 on Linux as
// built; asked of getconf all the same).
let clkTck;
const ticksPerSecond = () => {
  if (clkTck === undefined) {
    try {
      clkTck = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clkTck = 100;
    }
  }
  return clkTck;
};

// cpuSeconds is the CPU time process pid has used so far, in user space
// and in the kernel (utime + stime of /proc/PID/stat: its own threads, not
// its children's); NaN where there is no /proc.
export function cpuSeconds(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN;
  }
  // The fields after the command's closing parenthesis, from the state
  // (field 3): utime and stime are fields 14 and 15.
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) / ticksPerSecond();
}

const size = (f) => { try { return statSync(f).size; } catch { return 0; } };

// CONTENT is the body of every thought (with its number in front, so that
// no two are the same: server-memory drops a repeated observation).
const CONTENT = 'Retry the upload with exponential back-off: the storage API rate-limits bursts, and a fixed delay either waits too long or trips the limit again.';
export const thoughtText = (i) => `${i}: ${CONTENT}`;

// prose is n characters of plausible engineering prose, different for each
// i (its number first, then words picked by a walk that i seeds), for the
// figures at other content sizes: neither store compresses, so only its
// length and its words matter (the words feed logbook's search index).
const WORDS = ('the retry loop backs off when the storage API rate-limits bursts, so a fixed delay either waits too long or trips '
  + 'the limit again. We measured p99 latency across three regions and found the west cluster slower because its disks are '
  + 'older; decided to cache manifests locally, invalidating on ETag change. Tests cover cold start, eviction and a '
  + 'corrupted cache file; the migration keeps the old path readable for one release').split(' ');
export function prose(i, n) {
  let s = `${i}:`;
  for (let k = Math.abs(i) * 7 + 1; s.length < n; k = (k * 31 + 17) % 100003) s += ` ${WORDS[k % WORDS.length]}`;
  return s.slice(0, n).trimEnd() || String(i);
}

// envelope checks logbook's answer shape, which the SQLite peer shares.
function envelopeData(res, tool) {
  const sc = res.structuredContent;
  if (res.isError || sc?.ok !== true) throw new Error(`${tool} failed: ${JSON.stringify(sc ?? res.content).slice(0, 400)}`);
  return sc.data;
}

// contractServer is a server with logbook's task_create and thought_record,
// and its reads task_get, task_list and thought_record_list.
const contractServer = (launch, store, count) => ({
  launch,
  store,
  count,
  // call calls any of those tools with these arguments: its data.
  async call(client, tool, args) {
    return envelopeData(await client.callTool({ name: tool, arguments: args }), tool);
  },
  async subject(client, name) {
    const d = envelopeData(await client.callTool({ name: 'task_create', arguments: { title: `bench ${name}`, project: 'bench' } }), 'task_create');
    return d.task_id;
  },
  async thought(client, task, i) {
    const d = envelopeData(await client.callTool({ name: 'thought_record', arguments: { task_id: task, type: 'analysis', content: thoughtText(i) } }), 'thought_record');
    if (!/^[0-9a-f]{64}$/.test(d.hash ?? '')) throw new Error(`thought_record answered no hash: ${JSON.stringify(d)}`);
  },
  async task(client, i) {
    envelopeData(await client.callTool({ name: 'task_create', arguments: { title: `bench task ${i}`, project: 'bench' } }), 'task_create');
  },
  // fill records n thoughts, 8 calls in flight (one thought per call: each is
  // a commit of its own on both servers).
  async fill(client, task, n) {
    let next = 0;
    await Promise.all(Array.from({ length: 8 }, async () => {
      for (let i; (i = next++) < n;) await this.thought(client, task, i);
    }));
  },
});

export function makeServers(logbookBin) {
  return {
    logbook: {
      ...contractServer(
        (dir, agent) => ({ command: logbookBin, args: ['serve', '--db', path.join(dir, 'ledger.db'), '--agent', agent] }),
        (dir) => size(path.join(dir, 'ledger.db')),
        async (conns, tasks) => {
          let n = 0;
          for (let k = 0; k < tasks.length; k++) {
            n += envelopeData(await conns[0].client.callTool({ name: 'thought_record_list', arguments: { task_id: tasks[k], limit: 1 } }), 'thought_record_list').thought_count;
          }
          return n;
        },
      ),
      // rebuild runs `logbook rebuild` on the store (its servers closed).
      rebuild: (dir) => execFileSync(logbookBin, ['rebuild', '--db', path.join(dir, 'ledger.db')], { stdio: ['ignore', 'ignore', 'pipe'] }),
    },
    sqlite: contractServer(
      (dir, agent) => ({ command: process.execPath, args: [peerScript, '--db', path.join(dir, 'peer.db'), '--agent', agent] }),
      (dir) => size(path.join(dir, 'peer.db')) + size(path.join(dir, 'peer.db-wal')),
      async (conns, tasks, dir) => {
        const db = new Database(path.join(dir, 'peer.db'), { readonly: true });
        try {
          return db.prepare('SELECT count(*) AS n FROM thoughts').get().n;
        } finally {
          db.close();
        }
      },
    ),
    memory: {
      // server-memory keeps its knowledge graph in one JSONL file that every
      // write reads whole and rewrites (temporary file, rename; no fsync).
      // A thought is an observation added to an entity (add_observations), a
      // task an entity (create_entities).
      launch: (dir) => ({ command: process.execPath, args: [memoryScript], env: { MEMORY_FILE_PATH: path.join(dir, 'memory.jsonl') } }),
      store: (dir) => size(path.join(dir, 'memory.jsonl')),
      async count(conns, tasks, dir) {
        let n = 0;
        for (const line of readFileSync(path.join(dir, 'memory.jsonl'), 'utf8').split('\n')) {
          if (line.trim()) n += JSON.parse(line).observations?.length ?? 0;
        }
        return n;
      },
      async subject(client, name) {
        await this.entity(client, `agent ${name}`);
        return `agent ${name}`;
      },
      async entity(client, name) {
        const res = await client.callTool({ name: 'create_entities', arguments: { entities: [{ name, entityType: 'task', observations: [] }] } });
        if (res.isError || res.structuredContent?.entities?.length !== 1) throw new Error(`create_entities failed: ${JSON.stringify(res.content).slice(0, 400)}`);
      },
      async thought(client, entity, i) { await this.observe(client, entity, [thoughtText(i)]); },
      async task(client, i) { await this.entity(client, `bench task ${i}`); },
      async observe(client, entity, contents) {
        const res = await client.callTool({ name: 'add_observations', arguments: { observations: [{ entityName: entity, contents }] } });
        const added = res.structuredContent?.results?.[0]?.addedObservations;
        if (res.isError || added?.length !== contents.length) throw new Error(`add_observations failed: ${JSON.stringify(res.content).slice(0, 400)}`);
      },
      // fill adds n observations 1,000 per call: it rewrites its whole file
      // on every write, so one per call would take hours at 100k; the bytes
      // it ends with are the same either way.
      async fill(client, entity, n) {
        for (let i = 0; i < n; i += 1000) {
          await this.observe(client, entity, Array.from({ length: Math.min(1000, n - i) }, (_, k) => thoughtText(i + k)));
        }
      },
    },
  };
}
