/**
 * caller-worker: the TypeScript half of the svc quickstart.
 *
 *   math::add_two_numbers    calls math::add (Python, in math-worker) with the same payload and
 *                            returns its result: the engine routes the call, whatever the language.
 *   http::add_two_numbers    (HTTP block) POST /math/add-two-numbers through svc-http: passes the
 *                            request body to math::add_two_numbers and answers 200 {c, running_total}.
 *
 * Run by `svc worker add ./workers/caller-worker`, or by hand: npm install && npm start.
 * The engine address comes from SVC_URL (default ws://localhost:49134).
 */
import { InvocationError, Logger, registerWorker } from 'svc-sdk';

// ==================================== HTTP block switch ====================================
// true:  also serve POST /math/add-two-numbers through svc-http (`svc worker add svc-http`).
// false: only math::add_two_numbers is registered; nothing else in this file needs to change.
// SVC_QUICKSTART_HTTP=0 or =1 in the environment overrides this value for one run.
const USE_HTTP = true;
// ===========================================================================================

const SVC_URL = process.env.SVC_URL || 'ws://localhost:49134';
const httpEnabled = envSwitch('SVC_QUICKSTART_HTTP', USE_HTTP);

/** What math::add returns: c, plus running_total while math-worker's state block is on. */
interface AddResult {
  c: number;
  running_total?: number;
}

const worker = registerWorker(SVC_URL, { workerName: 'caller-worker' });
const logger = new Logger();

worker.registerFunction(
  'math::add_two_numbers',
  async (data: unknown): Promise<AddResult> => {
    // Same payload on, same result back: math::add checks a and b and reports bad input itself.
    return worker.trigger<AddResult>({ function_id: 'math::add', payload: data ?? {} });
  },
  { description: 'Adds a and b by calling math::add (Python); returns its result.' },
);

if (httpEnabled) {
  // The payload svc-http sends: {body, headers, query_params, path_params, method, path}; it
  // answers the request with the envelope we return: {status_code, body, headers}.
  worker.registerFunction(
    'http::add_two_numbers',
    async (req: { body: unknown }) => {
      const body = req.body;
      if (typeof body !== 'object' || body === null || Array.isArray(body)) {
        return jsonResponse(400, {
          error: { code: 'invalid_body', message: 'Send a JSON object such as {"a": 2, "b": 3} with Content-Type: application/json' },
        });
      }
      let result: AddResult;
      try {
        result = await worker.trigger<AddResult>({ function_id: 'math::add_two_numbers', payload: body });
      } catch (e) {
        // Bad a or b is the client's mistake (400); anything else fails the request (svc-http: 5xx).
        if (e instanceof InvocationError && e.code === 'invalid_payload') {
          return jsonResponse(400, { error: { code: e.code, message: e.message } });
        }
        throw e;
      }
      // running_total is there only while math-worker keeps it (its state block is on).
      const out: AddResult = { c: result.c };
      if (result.running_total !== undefined) out.running_total = result.running_total;
      return jsonResponse(200, out);
    },
    { description: 'POST /math/add-two-numbers: body {a, b} → 200 {c, running_total}.' },
  );

  try {
    // Resolves when svc-http took the route, or when the engine parked it until svc-http connects.
    await worker.registerTrigger({
      type: 'http',
      function_id: 'http::add_two_numbers',
      config: { api_path: '/math/add-two-numbers', http_method: 'POST' },
    });
  } catch (e) {
    const code = e instanceof InvocationError ? `${e.code}: ` : '';
    logger.error(`caller-worker: cannot bind POST /math/add-two-numbers: ${code}${(e as Error).message}`);
    process.exit(1);
  }
}

// On Ctrl-C or SIGTERM (what `svc worker restart/remove` send), close the connection cleanly, so
// the engine sees this worker leave rather than a dropped connection.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void worker.shutdown().finally(() => process.exit(0)));
}

logger.info(
  `caller-worker: registered math::add_two_numbers${httpEnabled ? ' and POST /math/add-two-numbers' : ' (HTTP block off)'} with the engine at ${SVC_URL}`,
);

function jsonResponse(status: number, body: unknown) {
  return { status_code: status, body, headers: { 'Content-Type': 'application/json' } };
}

/** A 0/1 (false/true, off/on) environment switch; `fallback` when unset or empty. */
function envSwitch(name: string, fallback: boolean): boolean {
  const raw = process.env[name]?.trim().toLowerCase();
  if (!raw) return fallback;
  if (['0', 'false', 'off', 'no'].includes(raw)) return false;
  if (['1', 'true', 'on', 'yes'].includes(raw)) return true;
  throw new Error(`${name} must be 0 or 1 (or true/false, on/off), got ${JSON.stringify(process.env[name])}`);
}
