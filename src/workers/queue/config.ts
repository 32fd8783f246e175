/**
 * svc-queue's configuration: the `config` object of its entry in config.yaml, handed to the process
 * as JSON in env SVC_WORKER_CONFIG. Every key is optional; unknown keys are refused so a typo is an
 * error, not a silently ignored setting. Named queues live under `queues:`; `default` always exists.
 */
import { unknownKeyMessage } from 'svc-sdk/internal';
import { DEFAULT_INVOCATION_TIMEOUT_MS } from 'svc-sdk';
import { readConfig, STORE_KEYS, type StoreSettings } from '../shared/config.js';
import { QueueError } from './store.js';

export interface QueueSettings {
  name: string;
  /** Runs of a job before it is dead-lettered (1 = no retry). */
  maxAttempts: number;
  /** Backoff before retry n: min(backoffMaxMs, backoffMs × 2^(n-1)), less up to backoffJitter of it at random. */
  backoffMs: number;
  backoffMaxMs: number;
  backoffJitter: number;
  /** Jobs of this queue running at once, over every svc-queue replica. */
  concurrency: number;
  /** A run not answered by then is a failed attempt (`timeout`). */
  timeoutMs: number;
  /** Every job waits this long before its first run. */
  delayMs: number;
  /** Jobs with the same value of this payload field run one at a time, in order (FIFO per group). */
  messageGroupField: string | null;
  /** Jobs (waiting, delayed, running, dead) and their payload bytes the queue may hold. */
  maxJobs: number;
  maxBytes: number;
}

/** Store settings (shared/config.ts; data_dir default ./data/queue, redis_key_prefix svc:queue), and: */
export interface QueueWorkerConfig extends StoreSettings {
  /** Largest payload of one job or topic message, in UTF-8 bytes of its JSON. */
  maxPayloadBytes: number;
  /** How long a durable:subscriber subscription keeps receiving copies after its last binding left. */
  subscriberRetentionMs: number;
  queues: Map<string, QueueSettings>;
}

export const DEFAULT_QUEUE = 'default';
export const QUEUE_NAME = /^[A-Za-z0-9][A-Za-z0-9_:-]{0,127}$/;
const KEYS = [...STORE_KEYS, 'max_payload_bytes', 'subscriber_retention_ms', 'queues'];

/** Queue keys: name in config.yaml, default, lowest, highest. */
const QUEUE_KEYS = {
  max_attempts: [3, 1, 1000],
  backoff_ms: [1000, 0, 86_400_000],
  backoff_max_ms: [60_000, 0, 86_400_000],
  backoff_jitter: [0.2, 0, 1],
  concurrency: [10, 1, 10_000],
  timeout_ms: [DEFAULT_INVOCATION_TIMEOUT_MS, 1, 3_600_000],
  delay_ms: [0, 0, 7 * 86_400_000],
  max_jobs: [10_000_000, 1, 1e12],
  max_bytes: [1024 ** 3, 1024, 1024 ** 4],
} as const;
type NumericKey = keyof typeof QUEUE_KEYS;

export function parseQueueSettings(name: string, raw: unknown, where: string): QueueSettings {
  const bad = (msg: string) => new QueueError('invalid_config', `svc-queue config: ${where}: ${msg}`);
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) throw bad(`must be a mapping of settings, got ${JSON.stringify(raw)}`);
  const c = raw as Record<string, unknown>;
  const known = [...Object.keys(QUEUE_KEYS), 'message_group_field'];
  for (const k of Object.keys(c)) {
    if (!known.includes(k)) throw bad(unknownKeyMessage(k, known));
  }
  const num = (k: NumericKey): number => {
    const [def, min, max] = QUEUE_KEYS[k];
    const v = c[k] ?? def;
    const integer = k !== 'backoff_jitter';
    if (typeof v !== 'number' || !Number.isFinite(v) || (integer && !Number.isSafeInteger(v)) || v < min || v > max) {
      throw bad(`"${k}" must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got ${JSON.stringify(v)}`);
    }
    return v;
  };
  const field = c.message_group_field ?? null;
  if (field !== null && (typeof field !== 'string' || field === '' || field.length > 256)) {
    throw bad(`"message_group_field" must be a payload field name (a non-empty string), got ${JSON.stringify(field)}`);
  }
  const backoffMs = num('backoff_ms');
  const backoffMaxMs = c.backoff_max_ms === undefined ? Math.max(backoffMs, QUEUE_KEYS.backoff_max_ms[0]) : num('backoff_max_ms');
  if (backoffMaxMs < backoffMs) throw bad(`"backoff_max_ms" (${backoffMaxMs}) must be at least "backoff_ms" (${backoffMs})`);
  return {
    name,
    maxAttempts: num('max_attempts'),
    backoffMs,
    backoffMaxMs,
    backoffJitter: num('backoff_jitter'),
    concurrency: num('concurrency'),
    timeoutMs: num('timeout_ms'),
    delayMs: num('delay_ms'),
    messageGroupField: field,
    maxJobs: num('max_jobs'),
    maxBytes: num('max_bytes'),
  };
}

export function parseQueueConfig(raw: unknown, cwd = process.cwd()): QueueWorkerConfig {
  const bad = (msg: string) => new QueueError('invalid_config', `svc-queue config: ${msg}`);
  const { c, store } = readConfig(raw, { keys: KEYS, cwd, defaults: { dataDir: './data/queue', keyPrefix: 'svc:queue' }, bad, show: (v) => JSON.stringify(v) });
  const int = (k: string, def: number, min: number, max: number): number => {
    const v = c[k] ?? def;
    if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < min || v > max) throw bad(`"${k}" must be an integer from ${min} to ${max}, got ${JSON.stringify(v)}`);
    return v;
  };
  const rawQueues = c.queues ?? {};
  if (typeof rawQueues !== 'object' || rawQueues === null || Array.isArray(rawQueues)) {
    throw bad(`"queues" must be a mapping of queue names to settings, got ${JSON.stringify(rawQueues)}`);
  }
  const queues = new Map<string, QueueSettings>();
  for (const [name, settings] of Object.entries(rawQueues as Record<string, unknown>)) {
    if (!QUEUE_NAME.test(name)) throw bad(`queue name ${JSON.stringify(name)} must be 1 to 128 letters, digits, '_', ':' or '-' (starting with a letter or digit)`);
    queues.set(name, parseQueueSettings(name, settings, `queues.${name}`));
  }
  if (!queues.has(DEFAULT_QUEUE)) queues.set(DEFAULT_QUEUE, parseQueueSettings(DEFAULT_QUEUE, {}, `queues.${DEFAULT_QUEUE}`));
  return {
    ...store,
    maxPayloadBytes: int('max_payload_bytes', 1024 * 1024, 16, 64 * 1024 * 1024),
    subscriberRetentionMs: int('subscriber_retention_ms', 300_000, 0, 30 * 86_400_000),
    queues,
  };
}

/** The settings as config.yaml spells them (queue::list shows them). */
export function settingsView(s: QueueSettings): Record<string, unknown> {
  return {
    max_attempts: s.maxAttempts,
    backoff_ms: s.backoffMs,
    backoff_max_ms: s.backoffMaxMs,
    backoff_jitter: s.backoffJitter,
    concurrency: s.concurrency,
    timeout_ms: s.timeoutMs,
    delay_ms: s.delayMs,
    message_group_field: s.messageGroupField,
    max_jobs: s.maxJobs,
    max_bytes: s.maxBytes,
  };
}

/** What a refusal naming an unconfigured queue adds: the configured ones, and how to configure `queue`. */
export function unconfiguredQueueHint(config: QueueWorkerConfig, queue: string): string {
  return `configured queues: ${[...config.queues.keys()].join(', ')}; add it to svc-queue's config (svc worker add svc-queue --set queues.${queue}.max_attempts=3)`;
}
