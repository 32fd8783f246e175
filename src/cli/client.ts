import { existsSync, readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { DEFAULT_ENGINE_URL, InvocationError, redactAddress, Worker } from 'svc-sdk';
import { printable } from '../engine/printable.js';
import { parseConfig } from '../daemon/config-file.js';
import { readEngineState, readRecordedEngineState, type EngineState } from '../daemon/engine-state.js';

/** The engine running for ./config.yaml, if any (it writes .svc/engine.json beside the file). */
let local: EngineState | null | undefined;
function localEngine(): EngineState | null {
  // Read once per command: the address and the token both come from it.
  if (local === undefined) local = readEngineState(resolve('config.yaml'));
  return local;
}

/** configuredAddress's answer for `port: 0` with no engine recorded: there is no address to try. */
const PICKED_AT_START = 'port-0';

/**
 * Where ./config.yaml says its engine listens, read without creating or changing anything: with no
 * engine running, a command must not fall back to the default port, where another project's engine
 * may listen. A wildcard host is reached on loopback. With `port: 0` the port is the one the engine
 * recorded in .svc/engine.json, even when its process cannot be checked from here (the engine runs
 * in a container: its pid is the container's); with no record, none (engineAddress refuses).
 */
function configuredAddress(): string | undefined {
  const file = resolve('config.yaml');
  if (!existsSync(file)) return undefined;
  try {
    const { host, port } = parseConfig(file, readFileSync(file, 'utf8'), process.env, 'optional').engine;
    if (port === 0) return readRecordedEngineState(file)?.url ?? PICKED_AT_START;
    const h = host === '0.0.0.0' || host === '' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
    return `ws://${h}:${port}`;
  } catch {
    return undefined;
  }
}

/**
 * The engine address a command talks to: --address, else SVC_URL, else the engine running for
 * ./config.yaml (whatever port it was given), else the address ./config.yaml gives its engine, else
 * the default port on localhost.
 */
export function engineAddress(flag?: string): string {
  const given = flag ?? process.env.SVC_URL;
  if (given !== undefined) return withScheme(given);
  const address = localEngine()?.url ?? configuredAddress() ?? DEFAULT_ENGINE_URL;
  if (address === PICKED_AT_START) {
    throw new InvocationError(
      'connection_failed',
      `No engine of ${resolve('config.yaml')} is running, and its port is picked at start (engine.port: 0), so there is no address to try: start it (svc --config config.yaml), or set --address or SVC_URL`,
    );
  }
  return address;
}

/**
 * Why engineAddress chose the engine it did, when no engine of ./config.yaml runs here and none was
 * named (--address, SVC_URL): the address config.yaml gives (or the default one) may be another
 * project's engine, which answers for functions this project never had. Undefined otherwise.
 */
export function unownedAddressNote(flag?: string): string | undefined {
  if ((flag ?? process.env.SVC_URL) !== undefined || localEngine()) return undefined;
  const configured = configuredAddress();
  if (configured === PICKED_AT_START) return undefined;
  if (configured === undefined) {
    // configuredAddress reads no address from a config.yaml it cannot parse either.
    const why = existsSync(resolve('config.yaml')) ? 'config.yaml here is not valid (svc --config config.yaml says why)' : 'there is no config.yaml here';
    return `note: ${why}, so the engine that answered is the one at the default address ${DEFAULT_ENGINE_URL}; --address (or SVC_URL) names another`;
  }
  return `note: no engine of config.yaml is running, so the engine that answered is the one at ${configured} (config.yaml's engine.host:port), another project's? Start this project's: svc --config config.yaml`;
}

/**
 * `127.0.0.1:49134` as `ws://127.0.0.1:49134` (each of a comma-separated list). Without a scheme,
 * the URL parser read the host as the scheme and the port as a path, and the command said
 * "nothing listens there" of an engine that listened there.
 */
function withScheme(address: string): string {
  return address
    .split(',')
    .map((a) => (a.trim() === '' || /^[a-z][a-z0-9+.-]*:\/\//i.test(a.trim()) ? a : `ws://${a.trim()}`))
    .join(',');
}

/** What --address means, for help texts. */
export const ADDRESS_DEFAULT = "default: $SVC_URL, else the engine running for ./config.yaml, else ./config.yaml's engine.host:port (port 0: the one .svc/engine.json recorded), else ws://localhost:49134";

/**
 * The client secret of the engine running for ./config.yaml, handed only to that same engine: it
 * proves a connection is the project's own CLI or console, which may use the names reserved for
 * them (svc-cli…, svc-console…).
 */
export function localClientSecret(address: string, fresh = false): string | undefined {
  const engine = fresh ? readEngineState(resolve('config.yaml')) : localEngine();
  return engine && engine.url === address ? engine.client_secret : undefined;
}

/**
 * The name a CLI or console connection registers: the reserved `svc-cli:<pid>` (`svc-console:<pid>`)
 * when it presents the local engine's client secret, which entitles it to the name; else the same
 * without the `svc-` prefix, which nobody reserves, so the engine has no name to refuse and warn of.
 */
export function clientName(kind: 'svc-cli' | 'svc-console', proven: boolean): string {
  return `${proven ? kind : kind.slice('svc-'.length)}:${process.pid}`;
}

/**
 * Whether anything accepts TCP connections at the engine address: a refused connection is known at
 * once, where the SDK would retry until the connect timeout. Anything else (a timeout, a name that
 * does not resolve yet, an address that is not ws://host:port) is left to the SDK.
 */
function refusesConnections(address: string): Promise<boolean> {
  let url: URL;
  try {
    url = new URL(address);
  } catch {
    return Promise.resolve(false);
  }
  const port = Number(url.port || (url.protocol === 'wss:' ? 443 : 80));
  const host = url.hostname.replace(/^\[|\]$/g, '');
  return new Promise((done) => {
    const socket = connect({ host, port });
    const finish = (refused: boolean): void => {
      socket.destroy();
      done(refused);
    };
    socket.setTimeout(1000, () => finish(false));
    socket.once('connect', () => finish(false));
    socket.once('error', (e: NodeJS.ErrnoException) => finish(e.code === 'ECONNREFUSED'));
  });
}

/**
 * Connect as a short-lived client (hidden from worker lists), run `fn`, disconnect. A missing
 * engine is reported plainly instead of retrying forever as a worker would.
 */
export async function withClient<T>(address: string, fn: (w: Worker) => Promise<T>, connectTimeoutMs = 5000, tokenArg?: string): Promise<T> {
  if (await refusesConnections(address)) {
    throw new InvocationError('connection_failed', `Cannot reach the engine at ${redactAddress(address)}: nothing listens there (is \`svc --config config.yaml\` running? set --address or SVC_URL)`);
  }
  // SVC_TOKEN, else the local engine's own token, handed only to that same engine.
  const engine = localEngine();
  const token = tokenArg ?? process.env.SVC_TOKEN ?? (engine && engine.url === address ? engine.token : undefined);
  const secret = localClientSecret(address);
  const w = new Worker(address, {
    ...(token ? { token } : {}),
    // Never a run secret from the environment: a CLI run by a supervised worker inherits its
    // worker's SVC_RUN_SECRET, which is not the CLI's to present (another engine would refuse it).
    runSecret: secret ?? '',
    // The reserved svc-cli name only with the secret that proves it: run from another directory,
    // the engine refused it and logged a reserved_name warning for every command.
    workerName: clientName('svc-cli', secret !== undefined),
    role: 'client',
    echoLogs: false,
    reconnect: { initialDelayMs: 100, maxDelayMs: 500 },
  });
  w.on('error', () => {
    /* per-call errors are reported by the command */
  });
  w.start();
  try {
    try {
      await w.ready(connectTimeoutMs);
    } catch (e) {
      if (e instanceof InvocationError && (e.code === 'unauthorized' || e.code === 'stale_worker')) throw e;
      throw new InvocationError('connection_failed', `Cannot reach the engine at ${redactAddress(address)} (is \`svc --config config.yaml\` running? set --address or SVC_URL)`);
    }
    return await fn(w);
  } finally {
    await w.shutdown();
  }
}

/**
 * One line for stderr: `error: <code>: <message>`, escaped: the code and message may come from any
 * worker (a function's own error).
 */
export function formatError(err: unknown): string {
  if (err instanceof InvocationError) return printable(`error: ${err.code}: ${err.message}`);
  return printable(`error: ${err instanceof Error ? err.message : String(err)}`);
}

/**
 * Print `error: <message>` on stderr and exit with `code`. Used instead of oclif's `this.error`,
 * which wraps long messages at 80 columns even when stderr is not a terminal.
 */
export function fail(message: string, code = 1): never {
  process.stderr.write(`error: ${message}\n`);
  process.exit(code);
}

/** `error: <code>: <message>` for an SvcError (docs/errors.md), then exit with `exitCode`. */
export function failWith(err: { code: string; message: string }, exitCode: number, suffix = ''): never {
  fail(`${err.code}: ${err.message}${suffix}`, exitCode);
}
