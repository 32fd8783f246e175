/**
 * The Redis client of the built-ins' Redis stores (svc-state, svc-queue, svc-cron): one way to
 * connect, and one way to run their Lua scripts.
 *
 * Connecting is bounded. node-redis's `connect()` retries for ever on its own: against an
 * unreachable Redis, or one that refuses the login, a store would never open and its worker would
 * hang at start without a word. Here a refused login fails at once (retrying cannot fix it) and
 * anything else after REDIS_CONNECT_TIMEOUT_MS, with `store_unavailable` naming the address (its
 * password shown as `***`) and Redis' last error. Once connected, the client reconnects on its own
 * and commands fail at once meanwhile (`disableOfflineQueue`) instead of queueing.
 */
import { createClient, type RedisClientType } from 'redis';
import { redactAddress } from 'svc-sdk';

// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export type RedisClient = RedisClientType<{}, {}, {}, 3, {}>;

export const REDIS_CONNECT_TIMEOUT_MS = 10_000;

/** Redis' answers to a login it refuses (a wrong password or user, none given, no permission). */
const LOGIN_REFUSED = /WRONGPASS|NOAUTH|NOPERM|invalid password|invalid username/i;

export interface ConnectOptions {
  /** Names the store in the error: `<what>: cannot connect to <url>…`. */
  what: string;
  /** Makes the store's own error (its `store_unavailable`) of a message. */
  unavailable: (message: string) => Error;
  timeoutMs?: number;
}

export async function connectRedis(url: string, o: ConnectOptions): Promise<RedisClient> {
  const timeoutMs = o.timeoutMs ?? REDIS_CONNECT_TIMEOUT_MS;
  const client = createClient({ url, disableOfflineQueue: true }) as unknown as RedisClient;
  let lastError = '';
  let refused: ((e: Error) => void) | undefined;
  client.on('error', (e: Error) => {
    lastError = e.message; // reconnects on its own; commands meanwhile fail with store_unavailable
    if (refused && LOGIN_REFUSED.test(e.message)) refused(e);
  });
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.connect(),
      new Promise<never>((_, reject) => {
        refused = reject;
        timer = setTimeout(() => reject(new Error(`no connection within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
  } catch (e) {
    client.destroy();
    const why = (e as Error).message;
    const detail = lastError && lastError !== why ? `${why} (last error: ${lastError})` : why || lastError;
    throw o.unavailable(`${o.what}: cannot connect to ${redactAddress(url)}: ${detail}`);
  } finally {
    clearTimeout(timer);
    refused = undefined;
  }
  return client;
}

/** A Lua script run by its SHA, loaded again once if Redis lost it (a restart, SCRIPT FLUSH). */
export class RedisScript {
  private sha = '';

  constructor(
    private readonly client: RedisClient,
    readonly text: string,
  ) {}

  async load(): Promise<void> {
    this.sha = await this.client.scriptLoad(this.text);
  }

  async run<T>(keys: string[], args: string[], options?: { timeout: number }): Promise<T> {
    const call = () => this.client.sendCommand(['EVALSHA', this.sha, String(keys.length), ...keys, ...args], options) as Promise<T>;
    try {
      return await call();
    } catch (e) {
      if (!String((e as Error).message).startsWith('NOSCRIPT')) throw e;
      await this.load();
      return await call();
    }
  }
}
