import { readdirSync, statSync, watch, type FSWatcher } from 'node:fs';
import { join, relative, sep } from 'node:path';

export interface SourceWatch {
  close(): void;
}

/**
 * Watches a worker's directory tree for `svc dev`: one non-recursive watch per directory, skipping
 * the directories `skipDir` names (node_modules, .venv …), and following directories created later.
 *
 * Why not `fs.watch(dir, {recursive: true})`: on Linux, Node 20 implements it in JavaScript by
 * watching every file of the tree (node_modules and .venv included, thousands of inotify watches)
 * and loses a file that is replaced by a rename: after one `sed -i`, or an editor's "safe write"
 * (write a copy, rename it over), later edits of that file were never seen, so `svc dev` stopped
 * restarting the worker. A directory's own watch reports its entries by name, whatever their inode.
 */
export function watchSourceTree(
  root: string,
  o: { skipDir: (name: string) => boolean; onChange: (relativePath: string) => void; onError: (message: string) => void },
): SourceWatch {
  const watchers = new Map<string, FSWatcher>();
  let closed = false;

  const unwatch = (dir: string): void => {
    for (const [d, w] of watchers) {
      if (d === dir || d.startsWith(dir + sep)) {
        w.close();
        watchers.delete(d);
      }
    }
  };

  const add = (dir: string): void => {
    if (closed || watchers.has(dir)) return;
    let w: FSWatcher;
    try {
      w = watch(dir, (_event, name) => {
        if (closed) return;
        if (!name) {
          o.onChange(relative(root, dir));
          return;
        }
        const path = join(dir, name.toString());
        // A directory created (or renamed in) is watched from now on; one removed is dropped.
        let isDir = false;
        try {
          isDir = statSync(path).isDirectory();
        } catch {
          unwatch(path);
        }
        if (isDir && !o.skipDir(name.toString())) addTree(path);
        o.onChange(relative(root, path));
      });
    } catch (e) {
      // The directory went away between listing and watching it, or the watch limit is reached.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') o.onError(`cannot watch ${dir}: ${(e as Error).message}`);
      return;
    }
    w.on('error', () => {
      // A watched directory that is removed ends its watch (EPERM on some systems): drop it.
      w.close();
      if (watchers.get(dir) === w) watchers.delete(dir);
    });
    watchers.set(dir, w);
  };

  const addTree = (dir: string): void => {
    add(dir);
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory() && !o.skipDir(e.name)) addTree(join(dir, e.name));
  };

  addTree(root);
  if (!watchers.has(root)) throw new Error(`cannot watch ${root}`);
  return {
    close(): void {
      closed = true;
      for (const w of watchers.values()) w.close();
      watchers.clear();
    },
  };
}
