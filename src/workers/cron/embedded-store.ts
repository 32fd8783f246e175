/**
 * svc-cron's default store: LMDB (the `lmdb` package, as svc-state; docs/design.md has the choice).
 * Several svc-cron processes on one machine share one environment (`data_dir`): LMDB is made for
 * that (its write lock is a robust process-shared mutex, readers see every committed transaction),
 * so replicas supervised by one engine claim fires from the same records.
 *
 * Every operation is one synchronous write transaction, fdatasync'ed before it returns
 * (`overlappingSync: false`): a claim is on disk before the fire's call is made, so a fire claimed
 * just before `kill -9` is not repeated after the restart.
 *
 * Keys: `s:<schedule id>` → the schedule's state (JSON), `h:<holder id>` → {expires_at, worker},
 * `b:<holder id>` → that holder's bindings [[trigger id, schedule id], …] (written when they change).
 */
import { mkdirSync } from 'node:fs';
import { open, type RootDatabase } from 'lmdb';
import { CronError } from './errors.js';
import type { ScheduleDef } from './schedule.js';
import {
  EMPTY_COUNTS,
  refusedRecord,
  toRun,
  type AdvanceRequest,
  type AdvanceResult,
  type CronStore,
  type FireRecord,
  type HeldBinding,
  type ScheduleState,
  type StartOutcome,
  type StartRequest,
} from './store.js';

type Stored = Omit<ScheduleState, 'schedule_id'>;
interface Holder {
  expires_at: number;
  worker: string;
}

export async function openEmbeddedCronStore(dataDir: string): Promise<CronStore> {
  mkdirSync(dataDir, { recursive: true });
  try {
    const db = open<string, string>({ path: dataDir, encoding: 'string', overlappingSync: false, cache: false });
    return new EmbeddedCronStore(db, dataDir);
  } catch (e) {
    throw new CronError('store_unavailable', `embedded store: cannot open ${JSON.stringify(dataDir)}: ${(e as Error).message}`);
  }
}

class EmbeddedCronStore implements CronStore {
  constructor(
    private readonly db: RootDatabase<string, string>,
    private readonly dataDir: string,
  ) {}

  /** One synchronous transaction (on disk when it returns); a failure names the store. */
  private tx<T>(body: () => T): T {
    let out: T | undefined;
    try {
      this.db.transactionSync(() => {
        out = body();
      });
    } catch (e) {
      if (e instanceof CronError) throw e;
      throw new CronError('store_unavailable', `embedded store ${JSON.stringify(this.dataDir)}: commit failed, nothing of it was written: ${(e as Error).message}`);
    }
    return out as T;
  }

  /**
   * Reads outside a write transaction use lmdb-js' shared read snapshot, renewed once per event
   * turn: renewed here so that they see what other processes (and handles) committed just now.
   */
  private fresh(): void {
    this.db.resetReadTxn();
  }

  private read(id: string): Stored | undefined {
    const raw = this.db.get(`s:${id}`);
    return raw === undefined ? undefined : (JSON.parse(raw) as Stored);
  }

  private write(id: string, s: Stored): void {
    this.db.put(`s:${id}`, JSON.stringify(s));
  }

  private holderLive(holderId: string, now: number): boolean {
    const raw = this.db.get(`h:${holderId}`);
    return raw !== undefined && (JSON.parse(raw) as Holder).expires_at > now;
  }

  /** The start rules on a record read in the current transaction (both stores apply the same). */
  private applyStart(s: Stored, req: StartRequest): StartOutcome {
    if (req.honor_pause && s.paused) {
      s.counts.skipped++;
      s.last = refusedRecord(req.record, 'paused');
      return 'paused';
    }
    if (req.skip_while_running && s.run && s.run.until > req.now && this.holderLive(s.run.holder_id, req.now)) {
      s.counts.skipped++;
      s.last = refusedRecord(req.record, 'skipped');
      return 'skipped';
    }
    s.run = { run_id: req.run_id, holder_id: req.holder_id, until: req.until };
    s.counts.fired++;
    s.last = req.record;
    return 'fire';
  }

  private missing(id: string): never {
    throw new CronError('schedule_not_found', `no schedule ${id} in the store (it is recorded when a binding of it is first held)`);
  }

  async register(id: string, def: ScheduleDef, now: number): Promise<ScheduleState> {
    this.fresh();
    const existing = this.read(id);
    if (existing) return { schedule_id: id, ...existing };
    return this.tx(() => {
      let s = this.read(id);
      if (!s) {
        s = { def, created_at: now, last_time: null, paused: false, run: null, last: null, last_result: null, counts: { ...EMPTY_COUNTS } };
        this.write(id, s);
      }
      return { schedule_id: id, ...s };
    });
  }

  async advance(id: string, req: AdvanceRequest): Promise<AdvanceResult> {
    return this.tx(() => {
      const s = this.read(id) ?? this.missing(id);
      const fresh = s.last_time === null ? req.times : req.times.filter((t) => t > s.last_time!);
      if (fresh.length === 0) return { run: [], missed: 0, started: null };
      s.last_time = fresh[fresh.length - 1]!;
      const run = toRun(fresh, req.policy);
      const missed = fresh.length - run.length;
      s.counts.missed += missed;
      let started: StartOutcome | null = null;
      if (req.start && run[0] === req.start.scheduled_time) started = this.applyStart(s, req.start);
      this.write(id, s);
      return { run, missed, started };
    });
  }

  async start(id: string, req: StartRequest): Promise<StartOutcome> {
    return this.tx(() => {
      const s = this.read(id) ?? this.missing(id);
      const out = this.applyStart(s, req);
      this.write(id, s);
      return out;
    });
  }

  async finish(id: string, record: FireRecord & { run_id: string }): Promise<void> {
    this.tx(() => {
      const s = this.read(id);
      if (!s) return;
      if (s.run?.run_id === record.run_id) s.run = null;
      if (s.last?.run_id === record.run_id) s.last = record;
      s.last_result = record;
      if (record.outcome === 'ok') s.counts.ok++;
      else s.counts.error++;
      this.write(id, s);
    });
  }

  async setPaused(id: string, paused: boolean): Promise<ScheduleState | null> {
    return this.tx(() => {
      const s = this.read(id);
      if (!s) return null;
      if (s.paused !== paused) {
        s.paused = paused;
        this.write(id, s);
      }
      return { schedule_id: id, ...s };
    });
  }

  async get(ids: string[]): Promise<Map<string, ScheduleState>> {
    const out = new Map<string, ScheduleState>();
    this.fresh();
    for (const id of ids) {
      const s = this.read(id);
      if (s) out.set(id, { schedule_id: id, ...s });
    }
    return out;
  }

  async heartbeat(holderId: string, worker: string, expiresAt: number, bindings: Array<[string, string]> | undefined): Promise<void> {
    this.tx(() => {
      this.db.put(`h:${holderId}`, JSON.stringify({ expires_at: expiresAt, worker } satisfies Holder));
      if (bindings) this.db.put(`b:${holderId}`, JSON.stringify(bindings));
    });
  }

  async removeHolder(holderId: string): Promise<void> {
    this.tx(() => {
      this.db.remove(`h:${holderId}`);
      this.db.remove(`b:${holderId}`);
    });
  }

  async liveBindings(now: number): Promise<HeldBinding[]> {
    const out: HeldBinding[] = [];
    const dead: string[] = [];
    this.fresh();
    for (const { key, value } of this.db.getRange({ start: 'h:', end: 'h;' })) {
      const holderId = (key as string).slice(2);
      const h = JSON.parse(value) as Holder;
      if (h.expires_at <= now) {
        dead.push(holderId);
        continue;
      }
      const raw = this.db.get(`b:${holderId}`);
      for (const [trigger_id, schedule_id] of raw ? (JSON.parse(raw) as Array<[string, string]>) : []) {
        out.push({ holder_id: holderId, worker: h.worker, trigger_id, schedule_id });
      }
    }
    if (dead.length > 0) {
      this.tx(() => {
        for (const id of dead) {
          const raw = this.db.get(`h:${id}`);
          // Re-checked inside the transaction: the holder may have renewed meanwhile.
          if (raw !== undefined && (JSON.parse(raw) as Holder).expires_at <= now) {
            this.db.remove(`h:${id}`);
            this.db.remove(`b:${id}`);
          }
        }
      });
    }
    return out;
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
