import { useState } from 'react';
import { invoke, type ErrorBody } from '../api';
import { RegisteredBy, Status } from '../components';
import { duration, json, whenIn } from '../format';

/** What cron::list says about one schedule (src/workers/cron/operations.ts, ScheduleView). */
export interface CronSchedule {
  schedule_id: string;
  function_id: string;
  expression: string;
  timezone: string;
  overlap: string;
  catch_up: string;
  queue: string | null;
  trigger_ids: string[];
  paused: boolean;
  running: boolean;
  next_fires: string[];
  last_fire: CronFire | null;
  last_result: CronFire | null;
}

interface CronFire {
  scheduled_time: string;
  outcome: string;
  manual: boolean;
  duration_ms?: number;
  error?: ErrorBody;
  note?: string;
}

interface RunNow {
  outcome: string;
  result?: unknown;
  error?: ErrorBody;
  duration_ms?: number;
  note?: string;
}

export interface CronBinding {
  id: string;
  function_id: string;
  config: Record<string, unknown> | null;
  worker_name: string | null;
  status: string;
}

/** One `cron` binding: its schedule's next and last fire with the outcome; Run now, Pause / Resume. */
export function CronRow({ b, schedule, refresh }: { b: CronBinding; schedule: CronSchedule | undefined; refresh: () => void }) {
  const [busy, setBusy] = useState(false);
  const [out, setOut] = useState<{ ok: boolean; text: string; head: string }>();
  const cfg = b.config ?? {};
  const target = { trigger_id: b.id };
  const act = async (fn: 'cron::run_now' | 'cron::pause' | 'cron::resume'): Promise<void> => {
    setBusy(true);
    try {
      const o = await invoke<RunNow>(fn, target, fn === 'cron::run_now' ? 3_600_000 : undefined);
      if (fn !== 'cron::run_now') {
        if (!o.ok) setOut({ ok: false, head: `${fn} failed`, text: json(o.error) });
        else setOut(undefined);
      } else if (!o.ok) {
        setOut({ ok: false, head: 'Run now failed', text: json(o.error) });
      } else {
        const r = o.result!;
        setOut({
          ok: r.outcome === 'ok',
          head: `${r.outcome}${r.duration_ms !== undefined ? ` in ${duration(r.duration_ms)}` : ''}${r.note ? ` (${r.note})` : ''}`,
          text: r.outcome === 'ok' ? json(r.result) : json(r.error),
        });
      }
    } catch (e) {
      setOut({ ok: false, head: `${fn} failed`, text: (e as Error).message });
    } finally {
      setBusy(false);
      refresh();
    }
  };
  const last = schedule?.last_fire ?? null;
  // Times in the schedule's own zone, named (UTC when it has none), as `svc cron list` shows them.
  const lastText = last && schedule ? `${whenIn(last.scheduled_time, schedule.timezone)}${last.manual ? ' (run now)' : ''}` : 'not yet';
  return (
    <>
      <tr data-testid="binding-row" data-trigger-id={b.id}>
        <td className="binding-function">
          <span className="mono">{b.function_id}</span>
          <RegisteredBy name={b.worker_name} />
        </td>
        <td className="mono small">
          {String(cfg.expression ?? '')}
          {schedule && schedule.timezone !== 'UTC' && <span className="sub"> {schedule.timezone}</span>}
          {schedule && <div className="sub">overlap {schedule.overlap} · catch-up {schedule.catch_up}{schedule.queue ? ` · queue ${schedule.queue}` : ''}</div>}
        </td>
        <td className="fold-wide">{b.worker_name ?? '-'}</td>
        <td>
          <Status value={b.status} />
        </td>
        <td className="small" data-testid="cron-next">
          {!schedule ? '-' : schedule.paused ? <Status value="paused" /> : whenIn(schedule.next_fires[0], schedule.timezone)}
        </td>
        <td className="small" data-testid="cron-last" data-outcome={last?.outcome ?? ''} title={last?.error ? `${last.error.code}: ${last.error.message}` : undefined}>
          {lastText} {last && <Status value={last.outcome} />}
          {last?.duration_ms !== undefined && <span className="sub"> {duration(last.duration_ms)}</span>}
          {schedule?.last_result?.outcome === 'error' && schedule.last_result.error && (
            <div className="sub" data-testid="cron-last-error">
              {schedule.last_result.error.code}: {schedule.last_result.error.message}
            </div>
          )}
        </td>
        <td className="row-actions">
          <button onClick={() => void act('cron::run_now')} disabled={busy || !schedule} data-testid="cron-run">
            {busy ? '…' : 'Run now'}
          </button>{' '}
          <button onClick={() => void act(schedule?.paused ? 'cron::resume' : 'cron::pause')} disabled={busy || !schedule} data-testid="cron-pause">
            {schedule?.paused ? 'Resume' : 'Pause'}
          </button>
        </td>
      </tr>
      {out && (
        <tr>
          <td colSpan={7}>
            <div className={`outcome ${out.ok ? 'ok' : 'failed'}`} data-testid="cron-outcome">
              <div className="outcome-head">{out.head}</div>
              <pre>{out.text}</pre>
            </div>
          </td>
        </tr>
      )}
    </>
  );
}
