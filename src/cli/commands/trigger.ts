import { readFileSync } from 'node:fs';
import { Args, Command, Flags } from '@oclif/core';
import { engineAddress, formatError, unownedAddressNote, withClient } from '../client.js';
import { engineFlags, withEngine } from '../engine-flags.js';
import { usageLine } from '../usage-error.js';
import { InvocationError } from 'svc-sdk';
import { printable, printableJson } from '../../engine/printable.js';
import { buildPayload } from '../payload.js';
import { closestKey } from 'svc-sdk/internal';

/** Lines of a callee's stack trace shown without --verbose. */
const STACK_LINES = 12;

/** The callee's stack trace (a Python traceback, a JS stack) under the one-line error, each line escaped. */
function stackLines(stack: string, all: boolean, from: string): string {
  const lines = stack.replace(/\n+$/, '').split('\n');
  const shown = all ? lines : lines.slice(0, STACK_LINES);
  const more = lines.length - shown.length;
  return `stack trace (from ${from}):\n${shown.map((l) => `  │ ${printable(l)}\n`).join('')}${more > 0 ? `  │ … ${more} more line(s): svc trigger --verbose\n` : ''}`;
}

/** A command line this command cannot use, in the form of every parse error: `error: invalid_argument: svc trigger: …`, exit 2. */
function usageFail(what: string): never {
  process.stderr.write(usageLine('trigger', what));
  process.exit(2);
}

/**
 * `--payload` as JSON text: `@<file>` is the file's content, `-` is stdin's (neither is JSON, so
 * nothing that was valid before changes meaning). An unreadable file is a usage error naming it.
 */
function readPayloadFlag(flag: string | undefined): string | undefined {
  if (flag === undefined || (flag !== '-' && !flag.startsWith('@'))) return flag;
  const source = flag === '-' ? 0 : flag.slice(1);
  try {
    return readFileSync(source, 'utf8');
  } catch (e) {
    usageFail(`--payload ${flag}: cannot read ${source === 0 ? 'stdin' : JSON.stringify(source)}: ${(e as Error).message}`);
  }
}

/** `did you mean "math::add"?` for a mistyped function id: the closest registered one, if any is close. */
async function nearestFunction(address: string, token: string | undefined, id: string): Promise<string | undefined> {
  const listed = await withClient(address, (w) => w.trigger<{ functions: Array<{ function_id: string }> }>({ function_id: 'engine::functions::list' }), 5000, token).catch(() => undefined);
  const ids = [...new Set((listed?.functions ?? []).map((f) => f.function_id))].filter((f) => f !== id);
  return closestKey(id, ids);
}

export default class Trigger extends Command {
  static override summary = 'Call a function by id and print its JSON result.';
  static override description = `Two forms:
  svc trigger --function-id=math::add --payload='{"a":2,"b":3}'
  svc trigger math::add a=2 b=3

In the key=value form each value is typed as JSON when it parses as JSON (numbers, booleans, null,
objects, arrays, "quoted strings"), otherwise it is taken as a plain string: a=2 is the number 2,
ok=true a boolean, name=alice the string "alice", tags='["x"]' an array. Keys and --payload merge;
key=value pairs win. The payload must be a JSON object. --payload @<file> reads it from a file and
--payload - from stdin (as curl's -d does), for payloads too large for a command line (Linux takes
at most 128 KiB in one argument) or written by another program.

With --enqueue <queue> the call is stored as a job of that queue (svc-queue must run): the command
prints {"messageReceiptId": "..."} once the job is durable, and the function runs later.

The result is printed as JSON on stdout. On error, "error: <code>: <message>" goes to stderr and the
exit code is 1 (2 for bad arguments). When the function's worker sent its stack trace (both SDKs do
for an unexpected exception, not for an SvcError raised on purpose) and the error is
invocation_failed (an exception without a code of its own: usually a bug), its first lines follow
on stderr; another error with a stack (one with a code of its own that is not an SvcError, such as
ENOENT) says a trace is there. --verbose shows the whole trace for any error. With --json
the error is printed on stdout as {"error": {"code", "message", "stacktrace"?}} instead. A function id
that no worker registered (function_not_found) is followed by the closest one that is, if any, and,
when no engine of ./config.yaml is running and neither --address nor SVC_URL named one, by a note
saying which engine answered (config.yaml's engine.host:port, or the default address, may be
another project's engine).`;
  static override examples = [
    'svc trigger math::add a=2 b=3',
    `svc trigger --function-id=math::add --payload='{"a":2,"b":3}'`,
    'svc trigger orders::import --payload @orders.json',
    'svc trigger engine::workers::list',
    'svc trigger --enqueue default math::add a=2 b=3',
    'svc trigger --namespace billing invoices::total id=42',
    'svc trigger --token "$SVC_TOKEN" --address ws://10.0.0.5:49134 math::add a=1 b=2',
  ];
  static override strict = false;
  static override args = {
    function_id: Args.string({ description: 'Function id (or use --function-id).', required: false }),
  };
  static override flags = {
    'function-id': Flags.string({ summary: 'Function id to call.' }),
    payload: Flags.string({ summary: 'JSON object passed to the function; @<file> reads it from a file, - from stdin.' }),
    address: engineFlags.address,
    'timeout-ms': Flags.integer({ summary: "Deadline of the call in milliseconds (default: the engine's engine.invocation_timeout_ms).", min: 1 }),
    enqueue: Flags.string({ summary: 'Store the call as a job of this queue (svc-queue); prints its messageReceiptId.' }),
    namespace: Flags.string({ summary: 'Namespace the function is looked up in (default: $SVC_NAMESPACE, else "default"): for workers registered in one (docs/workers.md).' }),
    token: engineFlags.token,
    json: Flags.boolean({ summary: 'Errors too as JSON on stdout: {"error": {"code", "message", "stacktrace"?}}.', default: false }),
    verbose: Flags.boolean({ char: 'v', summary: "On error, the callee's whole stack trace (else its first 12 lines, for invocation_failed only).", default: false }),
  };

  async run(): Promise<void> {
    const { args, flags, argv } = await this.parse(Trigger);
    const rest = (argv as string[]).slice(args.function_id !== undefined ? 1 : 0);
    let functionId = flags['function-id'];
    let pairs = rest;
    if (!functionId) {
      functionId = args.function_id;
    } else if (args.function_id !== undefined) {
      // With --function-id every positional is a key=value pair.
      pairs = argv as string[];
    }
    if (!functionId || functionId.includes('=')) {
      usageFail('a function id is required: svc trigger <function_id> [key=value ...] or --function-id=<id>');
    }
    const built = buildPayload(readPayloadFlag(flags.payload), pairs);
    if (!built.ok) usageFail(built.message);
    try {
      const result = await withEngine(flags, (w) =>
        w.trigger({
          function_id: functionId,
          payload: built.payload,
          ...(flags.namespace !== undefined ? { namespace: flags.namespace } : {}),
          ...(flags['timeout-ms'] !== undefined ? { timeoutMs: flags['timeout-ms'] } : {}),
          ...(flags.enqueue !== undefined ? { action: { type: 'enqueue' as const, queue: flags.enqueue } } : {}),
        }),
      );
      // Valid JSON still, with what a terminal would act on escaped (the result is the callee's).
      process.stdout.write(printableJson(JSON.stringify(result) ?? 'null') + '\n');
    } catch (err) {
      const stack = err instanceof InvocationError ? err.stacktrace : undefined;
      if (flags.json) {
        const code = err instanceof InvocationError ? err.code : 'error';
        process.stdout.write(printableJson(JSON.stringify({ error: { code, message: err instanceof Error ? err.message : String(err), ...(stack ? { stacktrace: stack } : {}) } })) + '\n');
      } else {
        process.stderr.write(formatError(err) + '\n');
        // Only when the id not found is the one called: engine::functions::info, or a handler's own
        // call, answers function_not_found of another id, and a near name of the called one misled.
        if (err instanceof InvocationError && err.code === 'function_not_found' && flags.enqueue === undefined && err.message.startsWith(`Function ${functionId} not found`)) {
          // The engine names the namespaces that hold this very id: say how to call it there (a
          // near id would be another function).
          if (/registered in namespace/.test(err.message)) process.stderr.write('call it in one of them with svc trigger --namespace <namespace>\n');
          else {
            const near = await nearestFunction(engineAddress(flags.address), flags.token, functionId);
            if (near) process.stderr.write(printable(`did you mean "${near}"? (svc worker list shows each worker's functions)`) + '\n');
          }
        }
        // A function this project has, not found: maybe the engine that answered is not its own.
        const note = err instanceof InvocationError && err.code === 'function_not_found' ? unownedAddressNote(flags.address) : undefined;
        if (note) process.stderr.write(note + '\n');
        // With --enqueue the call is svc-queue's engine::queue::enqueue: a trace is svc-queue's, not the function's.
        const from = flags.enqueue !== undefined ? 'svc-queue' : "the function's worker";
        if (stack && (flags.verbose || (err as InvocationError).code === 'invocation_failed')) {
          process.stderr.write(stackLines(stack, flags.verbose, from));
        } else if (stack) {
          // An error with a code of its own was raised on purpose (bad input, not found): where it
          // was raised is noise then, and an uncaught exception (invocation_failed) is where it helps.
          process.stderr.write(`(${from} sent a stack trace: svc trigger --verbose)\n`);
        }
      }
      this.exit(1);
    }
  }
}
