/**
 * `state::update` op semantics, as a pure function over a JSON value. The embedded store calls it
 * inside its write transaction; the Redis store runs WRITE_SCRIPT of redis-scripts.ts, which implements the
 * rules below on the server (the conformance suite holds both to them).
 *
 * Rules (`path` [] is the whole value; `undefined` means the key is absent):
 * - set: put `value` at path.
 * - merge: shallow-assign `value`'s fields into the object at path (absent or null counts as {}).
 * - increment / decrement: add / subtract `by` to the number at path (absent or null counts as 0).
 * - append: push `value` onto the array at path (absent or null counts as []); if both the target
 *   and `value` are strings, concatenate. On a path given as a field name (a string, as iii's SDKs
 *   type it), a string appended to nothing is that string (iii's rule: chunks of text build a string).
 * - remove: delete the field or array element at path; at the root, delete the key. Removing
 *   something absent is a no-op.
 * - Walking a path: a missing or null intermediate becomes {} (remove stops instead); an array is
 *   indexed by an integer segment (a dotted "0" counts), at most its length (= one past the end);
 *   anything else in the way is a type_error naming the path.
 * Ops apply in order. By default (iii's semantics) each op is on its own: an op that fails changes
 * nothing and is reported in `errors` ({op_index, code, message}), and the ops after it still apply.
 * With `atomic`, the first failing op fails the whole update and nothing is written. An op that
 * fails never changes the value it was given (every check comes before the first change), which is
 * what lets a failed op be skipped without a copy.
 */
import { describe } from '../shared/describe.js';
import { StateError, pathText, type JsonValue, type OpError, type Path, type UpdateOp } from './store.js';

type Container = JsonValue[] | { [k: string]: JsonValue };

const isObject = (v: unknown): v is { [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The start of an error message naming the op; built only when an op fails. */
type Ctx = () => string;

/**
 * Apply ops to `current`: the new value (undefined: the key is deleted) and the ops that failed.
 * `current` may be mutated (see `mutatesInput`): callers pass a freshly parsed value and discard it
 * when this throws. `atomic`: throw the first op's error instead of listing it. `where` names the
 * call in error messages ("state::update scope … key …").
 */
export function applyOps(
  current: JsonValue | undefined,
  ops: readonly UpdateOp[],
  where: () => string,
  atomic: boolean,
): { value: JsonValue | undefined; errors: OpError[] } {
  let root = current;
  const errors: OpError[] = [];
  for (let i = 0; i < ops.length; i++) {
    const op = ops[i]!;
    try {
      root = applyOne(root, op, () => `${where()}: ops[${i}] (${op.type} at ${pathText(op.path)})`);
    } catch (e) {
      if (atomic || !(e instanceof StateError)) throw e;
      errors.push({ op_index: i, code: e.code, message: e.message });
    }
  }
  return { value: root, errors };
}

/**
 * Whether applyOps may change the value it is given in place. Ops at the root that replace the
 * value (set, increment, decrement, remove) never do, so a caller that needs the value before the
 * update too (old_value) can skip parsing it twice.
 */
export function mutatesInput(ops: readonly UpdateOp[]): boolean {
  for (const op of ops) {
    if (op.path.length > 0 || op.type === 'merge' || op.type === 'append') return true;
  }
  return false;
}

function applyOne(root: JsonValue | undefined, op: UpdateOp, ctx: Ctx): JsonValue | undefined {
  if (op.path.length === 0) return leaf(root, op, ctx);
  if (op.type === 'remove') {
    if (root === undefined || root === null) return root;
  } else if (root === undefined || root === null) {
    root = {};
  }
  let node: JsonValue = root;
  for (let d = 0; d < op.path.length - 1; d++) {
    const c = container(node, op.path, d, ctx);
    const seg = index(c, op.path, d, ctx);
    let child = own(c, seg);
    if (child === undefined || child === null) {
      if (op.type === 'remove') return root;
      child = {};
      (c as Record<string | number, JsonValue>)[seg] = child;
    }
    node = child;
  }
  const last = op.path.length - 1;
  const parent = container(node, op.path, last, ctx);
  const seg = index(parent, op.path, last, ctx);
  if (op.type === 'remove') {
    if (Array.isArray(parent)) {
      if ((seg as number) < parent.length) parent.splice(seg as number, 1);
    } else {
      delete parent[seg as string];
    }
    return root;
  }
  const before = own(parent, seg);
  const after = leaf(before, op, ctx) as JsonValue; // only remove yields undefined
  (parent as Record<string | number, JsonValue>)[seg] = after;
  return root;
}

/** An own member only: inherited names such as "constructor" count as absent. */
function own(c: Container, seg: string | number): JsonValue | undefined {
  return Object.hasOwn(c, seg) ? (c as Record<string | number, JsonValue>)[seg] : undefined;
}

/** The container at path[0..d), or a type_error naming that prefix. */
function container(node: JsonValue, path: Path, d: number, ctx: Ctx): Container {
  if (typeof node === 'object' && node !== null) return node;
  const at = d === 0 ? 'the value' : JSON.stringify(path.slice(0, d));
  throw new StateError('type_error', `${ctx()}: cannot step into ${at}: it is ${describe(node)}, not an object or array`);
}

/** The key to use for path[d] inside `c`: an array index (bounded) or an object property name. */
function index(c: Container, path: Path, d: number, ctx: Ctx): string | number {
  const seg = path[d]!;
  if (!Array.isArray(c)) return String(seg);
  const n = typeof seg === 'number' ? seg : /^(0|[1-9][0-9]*)$/.test(seg) ? Number(seg) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw new StateError('type_error', `${ctx()}: segment ${JSON.stringify(seg)} indexes an array and must be an integer`);
  }
  if (n > c.length) {
    throw new StateError('invalid_path', `${ctx()}: index ${n} is past the end of an array of length ${c.length}`);
  }
  return n;
}

function leaf(v: JsonValue | undefined, op: UpdateOp, ctx: Ctx): JsonValue | undefined {
  switch (op.type) {
    case 'set':
      return op.value;
    case 'remove':
      return undefined;
    case 'merge': {
      if (v === undefined || v === null) return { ...op.value };
      if (!isObject(v)) throw new StateError('type_error', `${ctx()}: merge needs an object, found ${describe(v)}`);
      for (const k of Object.keys(op.value)) {
        v[k] = op.value[k]!;
      }
      return v;
    }
    case 'increment':
    case 'decrement': {
      const cur = v === undefined || v === null ? 0 : v;
      if (typeof cur !== 'number') throw new StateError('type_error', `${ctx()}: cannot ${op.type} ${describe(cur)}; the value there is not a number`);
      const next = op.type === 'increment' ? cur + op.by : cur - op.by;
      if (!Number.isFinite(next)) throw new StateError('type_error', `${ctx()}: result ${next} is not a finite number`);
      return next;
    }
    case 'append': {
      if (v === undefined || v === null) return op.field && typeof op.value === 'string' ? op.value : [op.value];
      if (Array.isArray(v)) {
        v.push(op.value);
        return v;
      }
      if (typeof v === 'string' && typeof op.value === 'string') return v + op.value;
      throw new StateError('type_error', `${ctx()}: cannot append ${describe(op.value)} to ${describe(v)}; append needs an array (or two strings)`);
    }
  }
}
