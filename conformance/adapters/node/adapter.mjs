#!/usr/bin/env node
// Adapter protocol v1 (conformance/PROTOCOL.md) for the Anthropic TypeScript SDK's local filesystem
// memory tool. Install once with `npm ci` (or `npm install`) in this folder, then:
//
//   refmem-conformance --target "cmd:node conformance/adapters/node/adapter.mjs"
//
// The SDK keeps memories in `<basePath>/memories`; the runner's root is always a directory named
// `memories`, so basePath is the root's parent and the SDK works on exactly the directory the runner
// prepared. Each command goes through the SDK's own runRunnableTool, so `output` and `is_error` are
// what the SDK's tool runner would send the model. A thrown value that is not the tool's designed error
// signal (a plain Error or a ToolError) — a TypeError, or a Node system error carrying an errno `code`
// — is also reported as `raised`.

import path from 'node:path';
import readline from 'node:readline';
import { BetaLocalFilesystemMemoryTool, betaMemoryTool } from '@anthropic-ai/sdk/tools/memory/node';
import { runRunnableTool } from '@anthropic-ai/sdk/lib/tools/BetaRunnableTool';
import { ToolError } from '@anthropic-ai/sdk/lib/tools/ToolError';
import { VERSION } from '@anthropic-ai/sdk/version';

const PROTOCOL_VERSION = 1;

const state = { started: false, tool: null };

class Refusal extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

function isDesignedError(thrown) {
  if (thrown instanceof ToolError) return true;
  return thrown instanceof Error && thrown.constructor === Error && typeof thrown.code !== 'string';
}

function contentText(content) {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content.filter((block) => block && block.type === 'text').map((block) => String(block.text)).join('');
  }
  return String(content);
}

function describe(thrown) {
  if (thrown instanceof Error) return thrown.stack || `${thrown.name}: ${thrown.message}`;
  return `thrown non-Error value: ${String(thrown)}`;
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
        name: '@anthropic-ai/sdk BetaLocalFilesystemMemoryTool',
        language: 'typescript',
        version: VERSION,
        homepage: 'https://github.com/anthropics/anthropic-sdk-typescript',
      },
      storage: 'filesystem',
      // the SDK works on the root directory itself: adapters started on one root share it (the deployment tier)
      ...(request.share === true ? { share: true } : {}),
    };
  },

  async reset(request) {
    const root = request.root;
    if (typeof root !== 'string' || !path.isAbsolute(root)) {
      throw new Refusal('bad-request', 'reset needs an absolute directory path in `root`');
    }
    if (path.basename(root) !== 'memories') {
      throw new Refusal('bad-root', 'the SDK keeps memories in <base>/memories: the root must be named memories');
    }
    const memory = await BetaLocalFilesystemMemoryTool.init(path.dirname(root));
    state.tool = betaMemoryTool(memory);
    return { ok: true };
  },

  async execute(request) {
    if (!state.tool) throw new Refusal('no-root', 'send reset before execute');
    if (!('input' in request)) throw new Refusal('bad-request', 'execute needs an `input`');
    const tool = state.tool;
    let thrown;
    const probe = {
      ...tool,
      run: async (input, context) => {
        try {
          return await tool.run(input, context);
        } catch (error) {
          thrown = error;
          throw error;
        }
      },
    };
    const outcome = await runRunnableTool(probe, request.input, {});
    const reply = { output: contentText(outcome.content), is_error: outcome.isError === true };
    if (thrown !== undefined && !isDesignedError(thrown)) reply.raised = describe(thrown);
    return reply;
  },
};

const needsStart = new Set(['reset', 'execute']);

function errorReply(code, message, seq) {
  return seq === undefined ? { error: { code, message } } : { seq, error: { code, message } };
}

async function handle(line) {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return errorReply('bad-json', 'the line is not JSON');
  }
  if (request === null || typeof request !== 'object' || Array.isArray(request)) {
    return errorReply('bad-request', 'a request must be a JSON object');
  }
  const seq = Number.isInteger(request.seq) ? request.seq : undefined;
  if (request.cmd === 'stop') process.exit(0);
  const command = Object.hasOwn(commands, request.cmd) ? commands[request.cmd] : undefined;
  if (!command) return errorReply('unknown-cmd', 'unknown cmd', seq);
  if (needsStart.has(request.cmd) && !state.started) return errorReply('not-started', 'send start first', seq);
  try {
    const reply = await command(request);
    return seq === undefined ? reply : { seq, ...reply };
  } catch (error) {
    if (error instanceof Refusal) return errorReply(error.code, error.message, seq);
    process.stderr.write(`${describe(error)}\n`);
    return errorReply('internal', 'the adapter failed on this request', seq);
  }
}

function encode(reply) {
  // ASCII only: every non-ASCII character, lone surrogates included, as a \u escape.
  return JSON.stringify(reply).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  process.stdout.write(`${encode(await handle(line))}\n`);
}
