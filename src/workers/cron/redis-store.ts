/**
 * svc-cron's Redis store: schedules shared by svc-cron processes on several machines and engines
 * (cluster mode). Each operation on a schedule is one Lua script (redis-scripts.ts), atomic on the
 * server. Keys under `<prefix>` (default `svc:cron`): `:s:<id>` (hash, one per schedule),
 * `:holders` (hash, svc-cron process → "<expires_at> <worker>"), `:b:<holder>` (its bindings, JSON).
 */
import { redactAddress } from 'svc-sdk';
import { connectRedis, RedisScript, type RedisClient } from '../shared/redis.js';
import { CronError } from './errors.js';
import { ADVANCE_SCRIPT, FINISH_SCRIPT, PAUSE_SCRIPT, REAP_SCRIPT, REGISTER_SCRIPT, START_SCRIPT } from './redis-scripts.js';
import type { ScheduleDef } from './schedule.js';
import {
  EMPTY_COUNTS,
  refusedRecord,
  type AdvanceRequest,
  type AdvanceResult,
  type CronStore,
  type FireRecord,
  type HeldBinding,
  type ScheduleState,
  type StartOutcome,
  type StartRequest,
} from './store.js';

type Reply = string | number | null | Reply[];

const SCRIPTS = { register: REGISTER_SCRIPT, advance: ADVANCE_SCRIPT, start: START_SCRIPT, finish: FINISH_SCRIPT, pause: PAUSE_SCRIPT, reap: REAP_SCRIPT };
type ScriptName = keyof typeof SCRIPTS;

/** `connectTimeoutMs`: how long opening may take before it fails with store_unavailable (shared/redis.ts). */
export async function openRedisCronStore(url: string, prefix = 'svc:cron', opts: { connectTimeoutMs?: number } = {}): Promise<CronStore> {
  // Commands fail at once while Redis is unreachable instead of queueing: a claim must not land late.
  const client = await connectRedis(url, {
    what: 'redis store',
    unavailable: (m) => new CronError('store_unavailable', m),
    ...(opts.connectTimeoutMs !== undefined ? { timeoutMs: opts.connectTimeoutMs } : {}),
  });
  const store = new RedisCronStore(client, url, prefix);
  try {
    await store.loadScripts();
  } catch (e) {
    client.destroy();
    throw new CronError('store_unavailable', `redis store at ${redactAddress(url)}: cannot load scripts: ${(e as Error).message}`);
  }
  return store;
}

function startArgs(req: StartRequest): string[] {
  return [
    String(req.scheduled_time),
    req.run_id,
    req.holder_id,
    String(req.now),
    String(req.until),
    req.skip_while_running ? '1' : '0',
    req.honor_pause ? '1' : '0',
    JSON.stringify(req.record),
    JSON.stringify(refusedRecord(req.record, 'skipped')),
    JSON.stringify(refusedRecord(req.record, 'paused')),
  ];
}

const num = (v: string | undefined): number => (v === undefined || v === '' ? 0 : Number(v));

/** A schedule hash (HGETALL as a flat array or a map) into ScheduleState. */
function stateOf(id: string, reply: Reply | Record<string, string>): ScheduleState | null {
  let h: Record<string, string>;
  if (Array.isArray(reply)) {
    h = {};
    for (let i = 0; i + 1 < reply.length; i += 2) h[String(reply[i])] = String(reply[i + 1]);
  } else if (reply instanceof Map) {
    h = Object.fromEntries([...(reply as Map<string, string>)].map(([k, v]) => [String(k), String(v)]));
  } else h = (reply ?? {}) as Record<string, string>;
  if (h.def === undefined) return null;
  return {
    schedule_id: id,
    def: JSON.parse(h.def) as ScheduleDef,
    created_at: num(h.created_at),
    last_time: h.last_time === undefined ? null : Number(h.last_time),
    paused: h.paused === '1',
    run: h.run_id !== undefined ? { run_id: h.run_id, holder_id: h.run_holder ?? '', until: num(h.run_until) } : null,
    last: h.last ? (JSON.parse(h.last) as FireRecord) : null,
    last_result: h.last_result ? (JSON.parse(h.last_result) as FireRecord) : null,
    counts: { ...EMPTY_COUNTS, fired: num(h.fired), ok: num(h.ok), error: num(h.error), skipped: num(h.skipped), missed: num(h.missed) },
  };
}

class RedisCronStore implements CronStore {
  private readonly scripts: Record<ScriptName, RedisScript>;
  private readonly holdersKey: string;
  /** The store's address as errors show it (its password as ***). */
  private readonly url: string;

  constructor(
    private readonly client: RedisClient,
    url: string,
    private readonly prefix: string,
  ) {
    this.url = redactAddress(url);
    this.holdersKey = `${prefix}:holders`;
    this.scripts = Object.fromEntries(Object.entries(SCRIPTS).map(([name, text]) => [name, new RedisScript(client, text)])) as Record<ScriptName, RedisScript>;
  }

  async loadScripts(): Promise<void> {
    for (const s of Object.values(this.scripts)) await s.load();
  }

  private key(id: string): string {
    return `${this.prefix}:s:${id}`;
  }

  private bindingsKey(holderId: string): string {
    return `${this.prefix}:b:${holderId}`;
  }

  /** Run a command; Redis failures become store_unavailable naming the operation. */
  private async run<T>(what: string, f: () => Promise<T>): Promise<T> {
    try {
      return await f();
    } catch (e) {
      if (e instanceof CronError) throw e;
      throw new CronError('store_unavailable', `${what}: redis store at ${this.url} failed: ${(e as Error).message}`);
    }
  }

  private script(name: ScriptName, keys: string[], args: string[]): Promise<Reply> {
    return this.scripts[name].run<Reply>(keys, args);
  }

  private missing(id: string): never {
    throw new CronError('schedule_not_found', `no schedule ${id} in the store (it is recorded when a binding of it is first held)`);
  }

  register(id: string, def: ScheduleDef, now: number): Promise<ScheduleState> {
    return this.run(`schedule ${id}`, async () => {
      const reply = await this.script('register', [this.key(id), this.holdersKey], [JSON.stringify(def), String(now)]);
      return stateOf(id, reply) ?? this.missing(id);
    });
  }

  advance(id: string, req: AdvanceRequest): Promise<AdvanceResult> {
    return this.run(`schedule ${id}`, async () => {
      const args = [req.policy, String(req.times.length), ...req.times.map(String), req.start ? '1' : '0', ...(req.start ? startArgs(req.start) : [])];
      const reply = (await this.script('advance', [this.key(id), this.holdersKey], args)) as string[];
      if (reply[0] === 'missing') this.missing(id);
      const started = reply[reply.length - 1]!;
      return { run: reply.slice(0, -2).map(Number), missed: Number(reply[reply.length - 2]), started: started === '' ? null : (started as StartOutcome) };
    });
  }

  start(id: string, req: StartRequest): Promise<StartOutcome> {
    return this.run(`schedule ${id}`, async () => {
      const out = (await this.script('start', [this.key(id), this.holdersKey], startArgs(req))) as string;
      if (out === 'missing') this.missing(id);
      return out as StartOutcome;
    });
  }

  async finish(id: string, record: FireRecord & { run_id: string }): Promise<void> {
    await this.run(`schedule ${id}`, () => this.script('finish', [this.key(id)], [record.run_id, JSON.stringify(record), record.outcome === 'ok' ? '1' : '0']));
  }

  setPaused(id: string, paused: boolean): Promise<ScheduleState | null> {
    return this.run(`schedule ${id}`, async () => stateOf(id, await this.script('pause', [this.key(id)], [paused ? '1' : '0'])));
  }

  get(ids: string[]): Promise<Map<string, ScheduleState>> {
    return this.run('cron::list', async () => {
      const out = new Map<string, ScheduleState>();
      if (ids.length === 0) return out;
      const multi = this.client.multi();
      for (const id of ids) multi.hGetAll(this.key(id));
      const replies = (await multi.exec()) as unknown as Array<Record<string, string>>;
      ids.forEach((id, i) => {
        const s = stateOf(id, replies[i] ?? {});
        if (s) out.set(id, s);
      });
      return out;
    });
  }

  async heartbeat(holderId: string, worker: string, expiresAt: number, bindings: Array<[string, string]> | undefined): Promise<void> {
    await this.run('svc-cron heartbeat', async () => {
      const multi = this.client.multi().hSet(this.holdersKey, holderId, `${expiresAt} ${worker}`);
      if (bindings) multi.set(this.bindingsKey(holderId), JSON.stringify(bindings));
      await multi.exec();
    });
  }

  async removeHolder(holderId: string): Promise<void> {
    await this.run('svc-cron shutdown', async () => {
      await this.client.multi().hDel(this.holdersKey, holderId).del(this.bindingsKey(holderId)).exec();
    });
  }

  liveBindings(now: number): Promise<HeldBinding[]> {
    return this.run('cron::list', async () => {
      const holders = await this.client.hGetAll(this.holdersKey);
      const live: Array<{ id: string; worker: string }> = [];
      const dead: string[] = [];
      for (const [id, v] of Object.entries(holders)) {
        const m = /^(\d+) (.*)$/s.exec(v);
        if (m && Number(m[1]) > now) live.push({ id, worker: m[2]! });
        else dead.push(id);
      }
      if (dead.length > 0) await this.script('reap', [this.holdersKey, ...dead.map((d) => this.bindingsKey(d))], [String(now), ...dead]);
      if (live.length === 0) return [];
      const lists = await this.client.mGet(live.map((h) => this.bindingsKey(h.id)));
      const out: HeldBinding[] = [];
      live.forEach((h, i) => {
        const raw = lists[i];
        for (const [trigger_id, schedule_id] of raw ? (JSON.parse(raw) as Array<[string, string]>) : []) {
          out.push({ holder_id: h.id, worker: h.worker, trigger_id, schedule_id });
        }
      });
      return out;
    });
  }

  async close(): Promise<void> {
    try {
      await this.client.close();
    } catch {
      this.client.destroy();
    }
  }
}
