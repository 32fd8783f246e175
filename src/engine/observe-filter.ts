/**
 * The filter language of iii's observers (`iii-filter` v1, iii 0.25 `observe.v1`): an observer's
 * `source.filters` chooses which invocations reach its target. Validated and compiled once, when the
 * `observe` frame enters; evaluated on `{input, output, error, caller, metadata}` of each settled call
 * of the observed function. The rules, limits and answers are those of PyPI iii-sdk 0.25.0's own
 * evaluator (`iii/filter`), which says it has the engine's semantics; test/engine/observe-filter.test.ts
 * holds vectors answered by that evaluator. Values here are what JSON.parse made, so no host-value
 * mapping is needed.
 */

/** Refusal of a filter; `code` is iii's (`INVALID_FILTER`), carried as is to the observing SDK. */
export class FilterError extends Error {
  readonly code = 'INVALID_FILTER';
}

export const FILTER_LIMITS = {
  /** Nesting of filters; the top-level one is at depth 1 (`$or`, `$not`, `$any` add one, `$and` none). */
  depth: 8,
  /** Operators plus `$or` and `$not` clauses. */
  nodes: 64,
  /** Items of one `$in` / `$nin`. */
  setItems: 256,
  /** Path segments after the root. */
  pathSegments: 16,
  /** UTF-8 bytes of the filter's compact JSON. */
  encodedBytes: 8192,
  /** Arrays / objects nested in one `$eq` / `$ne` operand or `$in` / `$nin` item. */
  literalDepth: 32,
  /** Arrays / objects nested in the whole filter. */
  jsonDepth: 120,
} as const;

/** The document a filter reads: a missing key is an absent root, `null` is the value null. */
export type FilterDoc = Readonly<Record<string, unknown>>;
type Pred = (doc: FilterDoc, element: unknown) => boolean;
type Op = (value: unknown, doc: FilterDoc) => boolean;
const ABSENT: unique symbol = Symbol('absent');

const ROOTS = new Set(['input', 'output', 'error', 'caller', 'metadata', '@']);
const VALUE_OPERATORS = new Set(['$eq', '$ne', '$in', '$nin', '$gt', '$gte', '$lt', '$lte', '$exists', '$prefix', '$any']);
const MAX_SAFE_LITERAL = 2 ** 53;

export interface CompiledFilter {
  /** `{}`: every document matches. */
  readonly matchAll: boolean;
  /** Never throws: an evaluation that fails is a non-match. */
  matches(doc: FilterDoc): boolean;
}

export const MATCH_ALL: CompiledFilter = { matchAll: true, matches: () => true };

/** Validates and compiles a filter; absent or null is `{}`. Throws FilterError. */
export function compileFilter(src: unknown): CompiledFilter {
  if (src === undefined || src === null) return MATCH_ALL;
  if (!isObject(src)) throw invalid(`a filter must be a JSON object, found ${kind(src)}`);
  checkJson(src);
  if (Buffer.byteLength(JSON.stringify(src)) > FILTER_LIMITS.encodedBytes) {
    throw invalid(`the filter encodes to more than ${FILTER_LIMITS.encodedBytes} bytes`);
  }
  const budget = { used: 0 };
  const clauses: Pred[] = [];
  collectClauses(src, 1, false, budget, clauses);
  if (clauses.length === 0) return MATCH_ALL;
  const pred = allOf(clauses);
  return {
    matchAll: false,
    matches(doc) {
      try {
        return pred(doc, undefined);
      } catch {
        return false;
      }
    },
  };
}

function invalid(message: string): FilterError {
  return new FilterError(message);
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'boolean') return 'a boolean';
  if (typeof v === 'number') return 'a number';
  if (typeof v === 'string') return 'a string';
  return 'an object';
}

/** Numbers within ±2^53 and nesting within jsonDepth, so every implementation reads the filter alike. */
function checkJson(src: unknown): void {
  const stack: [unknown, number][] = [[src, 1]];
  while (stack.length > 0) {
    const [value, level] = stack.pop()!;
    if (typeof value === 'number') {
      if (!(Math.abs(value) <= MAX_SAFE_LITERAL)) throw invalid(`the number ${value} is outside ±2^53`);
    } else if (typeof value === 'object' && value !== null) {
      if (level > FILTER_LIMITS.jsonDepth) throw invalid(`the filter nests more than ${FILTER_LIMITS.jsonDepth} arrays / objects`);
      for (const member of Object.values(value)) stack.push([member, level + 1]);
    }
  }
}

function take(budget: { used: number }): void {
  if (++budget.used > FILTER_LIMITS.nodes) throw invalid(`more than ${FILTER_LIMITS.nodes} operator / clause nodes`);
}

function parseFilter(src: unknown, depth: number, inAny: boolean, budget: { used: number }): Pred {
  const clauses: Pred[] = [];
  collectClauses(src, depth, inAny, budget, clauses);
  return allOf(clauses);
}

function allOf(clauses: Pred[]): Pred {
  if (clauses.length === 0) return () => true;
  if (clauses.length === 1) return clauses[0]!;
  return (doc, el) => clauses.every((c) => c(doc, el));
}

/** The clauses of `src` and of the filters its `$and`s hold (`$and` adds no depth). */
function collectClauses(src: unknown, depth: number, inAny: boolean, budget: { used: number }, out: Pred[]): void {
  if (depth > FILTER_LIMITS.depth) throw invalid(`filters nested deeper than ${FILTER_LIMITS.depth} levels`);
  const pending: unknown[] = [src];
  while (pending.length > 0) {
    const current = pending.pop();
    if (!isObject(current)) throw invalid(`a filter must be a JSON object, found ${kind(current)}`);
    for (const [key, value] of Object.entries(current)) {
      if (key === '$and') {
        pending.push(...filterList('$and', value).reverse());
      } else if (key === '$or') {
        take(budget);
        const children = filterList('$or', value).map((f) => parseFilter(f, depth + 1, inAny, budget));
        out.push((doc, el) => children.some((c) => c(doc, el)));
      } else if (key === '$not') {
        take(budget);
        if (!isObject(value)) throw invalid(`\`$not\` takes a filter object, found ${kind(value)}`);
        const child = parseFilter(value, depth + 1, inAny, budget);
        out.push((doc, el) => !child(doc, el));
      } else if (VALUE_OPERATORS.has(key)) {
        throw invalid(`\`${key}\` needs a path: write {"<path>": {"${key}": ...}}`);
      } else if (key.startsWith('$')) {
        throw invalid(`unknown operator \`${key}\` (a filter holds paths, \`$and\`, \`$or\` and \`$not\`)`);
      } else {
        const resolve = compilePath(key, inAny);
        const ops = parseOperatorObject(key, value, depth, budget);
        out.push((doc, el) => {
          const v = resolve(doc, el);
          return ops.every((op) => op(v, doc));
        });
      }
    }
  }
}

function filterList(name: string, value: unknown): unknown[] {
  if (!Array.isArray(value)) throw invalid(`\`${name}\` takes an array of filters, found ${kind(value)}`);
  if (value.length === 0) throw invalid(`\`${name}\` takes a non-empty array of filters`);
  return [...value];
}

/** `root(.segment)*`; `\.` and `\\` escape inside a segment; `@` (the `$any` element) only inside `$any`. */
function compilePath(raw: string, inAny: boolean): (doc: FilterDoc, el: unknown) => unknown {
  const parts: string[] = [];
  let current = '';
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if (c === '\\') {
      const next = raw[i + 1];
      if (next === '.' || next === '\\') {
        current += next;
        i++;
        continue;
      }
      throw invalid(next === undefined ? `path \`${raw}\`: dangling \`\\\` at the end` : `path \`${raw}\`: invalid escape \`\\${next}\` (only \`\\.\` and \`\\\\\` are allowed)`);
    }
    if (c === '.') {
      if (current === '') throw invalid(raw === '' ? 'empty path' : `path \`${raw}\`: empty segment`);
      parts.push(current);
      current = '';
    } else current += c;
  }
  if (current === '') throw invalid(raw === '' ? 'empty path' : `path \`${raw}\`: empty segment`);
  parts.push(current);
  const root = parts[0]!;
  if (!ROOTS.has(root) || (root === '@') !== inAny) {
    throw invalid(
      inAny
        ? `path \`${raw}\`: inside \`$any\` paths start at \`@\`, the current element`
        : root === '@'
          ? `path \`${raw}\`: \`@\` paths are only allowed inside \`$any\``
          : `path \`${raw}\`: unknown root \`${root}\` (expected input, output, error, caller or metadata)`,
    );
  }
  const segments = parts.slice(1).map((key) => ({ key, index: canonicalIndex(key) }));
  if (segments.length > FILTER_LIMITS.pathSegments) {
    throw invalid(`path \`${raw}\`: ${segments.length} segments after the root (limit ${FILTER_LIMITS.pathSegments})`);
  }
  const step = (start: unknown): unknown => {
    let cur = start;
    for (const s of segments) {
      if (Array.isArray(cur)) {
        if (s.index === undefined || s.index >= cur.length) return ABSENT;
        cur = cur[s.index];
      } else if (isObject(cur)) {
        if (!Object.prototype.hasOwnProperty.call(cur, s.key)) return ABSENT;
        cur = cur[s.key];
      } else return ABSENT;
    }
    return cur;
  };
  if (root === '@') return (_doc, el) => step(el);
  return (doc) => (Object.prototype.hasOwnProperty.call(doc, root) && doc[root] !== undefined ? step(doc[root]) : ABSENT);
}

/** `0` or `[1-9][0-9]*`, at most 15 digits: selects an array element. */
function canonicalIndex(segment: string): number | undefined {
  return segment.length <= 15 && /^(0|[1-9][0-9]*)$/.test(segment) ? Number(segment) : undefined;
}

function parseOperatorObject(path: string, value: unknown, depth: number, budget: { used: number }): Op[] {
  const literal = `\`${path}\`: expected an operator object such as {"$eq": ...}; literal values are not allowed`;
  if (!isObject(value)) throw invalid(literal);
  const names = Object.keys(value);
  if (names.length === 0) throw invalid(`\`${path}\`: empty operator object`);
  if (names.some((k) => !k.startsWith('$'))) throw invalid(literal);
  return parseOperators(path, value, depth, budget);
}

function parseOperators(path: string, ops: Record<string, unknown>, depth: number, budget: { used: number }): Op[] {
  return Object.entries(ops).map(([name, operand]) => {
    take(budget);
    return parseOperator(path, name, operand, depth, budget);
  });
}

function parseOperator(path: string, name: string, operand: unknown, depth: number, budget: { used: number }): Op {
  const wrong = (expected: string): FilterError => invalid(`\`${path}\`: \`${name}\` takes ${expected}, found ${kind(operand)}`);
  switch (name) {
    case '$eq':
      checkLiteralDepth(path, name, operand);
      return (v) => v !== ABSENT && jsonEquals(v, operand);
    case '$ne':
      checkLiteralDepth(path, name, operand);
      return (v) => v === ABSENT || !jsonEquals(v, operand);
    case '$in':
    case '$nin': {
      if (!Array.isArray(operand)) throw wrong('an array');
      if (operand.length > FILTER_LIMITS.setItems) throw invalid(`\`${path}\`: \`${name}\` has ${operand.length} items (limit ${FILTER_LIMITS.setItems})`);
      for (const item of operand) checkLiteralDepth(path, name, item);
      const member = (v: unknown): boolean => operand.some((item) => jsonEquals(v, item));
      return name === '$in' ? (v) => v !== ABSENT && member(v) : (v) => v === ABSENT || !member(v);
    }
    case '$gt':
    case '$gte':
    case '$lt':
    case '$lte': {
      const accept = (c: number): boolean => (name === '$gt' ? c > 0 : name === '$gte' ? c >= 0 : name === '$lt' ? c < 0 : c <= 0);
      if (typeof operand === 'number') return (v) => typeof v === 'number' && accept(v < operand ? -1 : v > operand ? 1 : 0);
      if (typeof operand === 'string') return (v) => typeof v === 'string' && accept(compareCodePoints(v, operand));
      throw wrong('a number or a string');
    }
    case '$exists':
      if (typeof operand !== 'boolean') throw wrong('a boolean');
      return (v) => (v !== ABSENT) === operand;
    case '$prefix':
      if (typeof operand !== 'string') throw wrong('a string');
      return (v) => typeof v === 'string' && v.startsWith(operand);
    case '$any':
      return parseAny(path, operand, depth, budget);
    case '$and':
    case '$or':
    case '$not':
      throw invalid(`\`${path}\`: \`${name}\` combines filters and is not a value operator`);
    default:
      throw invalid(`\`${path}\`: unknown operator \`${name}\``);
  }
}

/** An operator object applied to each element, or a filter over `@`; true when one element matches. */
function parseAny(path: string, operand: unknown, depth: number, budget: { used: number }): Op {
  if (!isObject(operand)) throw invalid(`\`${path}\`: \`$any\` takes an operator object or a filter over \`@\`, found ${kind(operand)}`);
  if (depth + 1 > FILTER_LIMITS.depth) throw invalid(`filters nested deeper than ${FILTER_LIMITS.depth} levels`);
  const keys = Object.keys(operand);
  if (keys.length > 0 && keys.every((k) => VALUE_OPERATORS.has(k))) {
    const ops = parseOperators(path, operand, depth + 1, budget);
    return (v, doc) => Array.isArray(v) && v.some((item: unknown) => ops.every((op) => op(item, doc)));
  }
  const node = parseFilter(operand, depth + 1, true, budget);
  return (v, doc) => Array.isArray(v) && v.some((item: unknown) => node(doc, item));
}

function checkLiteralDepth(path: string, name: string, literal: unknown): void {
  const stack: [unknown, number][] = [[literal, 1]];
  while (stack.length > 0) {
    const [value, level] = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (level > FILTER_LIMITS.literalDepth) throw invalid(`\`${path}\`: \`${name}\` nests a literal deeper than ${FILTER_LIMITS.literalDepth} arrays / objects`);
    for (const member of Object.values(value)) stack.push([member, level + 1]);
  }
}

/** JSON deep equality: numbers as doubles, key order ignored, array order not, no coercion. */
function jsonEquals(host: unknown, literal: unknown): boolean {
  if (literal === null || typeof literal !== 'object') return host === literal;
  if (Array.isArray(literal)) {
    return Array.isArray(host) && host.length === literal.length && literal.every((item, i) => jsonEquals(host[i], item));
  }
  if (!isObject(host)) return false;
  const keys = Object.keys(literal);
  if (Object.keys(host).length !== keys.length) return false;
  return keys.every((k) => Object.prototype.hasOwnProperty.call(host, k) && jsonEquals(host[k], (literal as Record<string, unknown>)[k]));
}

/** Strings order by code point (UTF-8 byte order), not by UTF-16 unit as `<` does. */
function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i++) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return x.length === y.length ? 0 : x.length < y.length ? -1 : 1;
}
