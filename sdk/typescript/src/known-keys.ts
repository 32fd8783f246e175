/**
 * One wording for an unknown key, wherever a mapping is checked (config.yaml, svc.worker.yaml, the
 * built-ins' configs, `--set`): the key, the closest known key when one is a likely typo, and every
 * known key. A typo is refused, never silently a default.
 */

/** Edits (insert, delete, substitute, swap two neighbours) between `a` and `b`: optimal string alignment. */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array<number>(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0]![j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let v = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) v = Math.min(v, d[i - 2]![j - 2]! + 1);
      d[i]![j] = v;
    }
  }
  return d[a.length]![b.length]!;
}

/**
 * The known key `key` is most likely a typo of: within a third of its length in edits (at least 1);
 * else the one key that is `key` with a suffix (`lease` → `lease_ms`, `node` → `node_id`: the unit or
 * kind left off, too many edits for a typo); else none.
 */
export function closestKey(key: string, known: readonly string[]): string | undefined {
  // Keys are short; a long one is not a typo of any of them (and the distance is quadratic).
  if (key.length > 64) return undefined;
  const lower = key.toLowerCase();
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(key.length / 3)) + 1;
  for (const k of known) {
    const dist = lower === k.toLowerCase() ? 0 : editDistance(lower, k.toLowerCase());
    if (dist < bestDistance) {
      best = k;
      bestDistance = dist;
    }
  }
  if (best !== undefined || lower.length < 3) return best;
  const extended = known.filter((k) => k.toLowerCase().startsWith(`${lower}_`));
  return extended.length === 1 ? extended[0] : undefined;
}

/** `unknown key "replcas" (did you mean "replicas"?); known keys: name, builtin, …` */
export function unknownKeyMessage(key: string, known: readonly string[], what = 'key'): string {
  const shown = JSON.stringify(key.length > 64 ? key.slice(0, 64) + '…' : key);
  const near = closestKey(key, known);
  return `unknown ${what} ${shown}${near ? ` (did you mean "${near}"?)` : ''}; known keys: ${known.join(', ')}`;
}

/** The first key of `mapping` not in `known`, if any. */
export function firstUnknownKey(mapping: object, known: readonly string[]): string | undefined {
  return Object.keys(mapping).find((k) => !known.includes(k));
}
