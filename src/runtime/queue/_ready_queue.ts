// The ready part of a WorkQueue: keys by priority, highest first, FIFO within one.
//
// One FIFO of keys per distinct priority rather than one heap: queues use a handful of
// priorities (controller-runtime's `LowPriority` and the default), so push and shift stay
// O(1) and allocation-free as in a plain FIFO. Only priorities that hold keys are kept,
// sorted, so the highest is always the first; a new priority costs a binary search and an
// insert into that short list.
//
// A key moved to a higher priority is dropped lazily from its old FIFO: the level counts
// it as stale, and `shift` skips that many occurrences of it. They are its first ones
// there, since any later slot of the key in that level was pushed after it moved away.

interface Level<K> {
  priority: number;
  // Keys before `head` are consumed.
  items: (K | undefined)[];
  head: number;
  live: number;
  // Per key, how many of its next slots in `items` are stale.
  stale: Map<K, number>;
}

/** Keys by priority (highest first), FIFO within one priority. */
export class ReadyQueue<K> {
  // Levels holding live keys, highest priority first.
  #levels: Level<K>[] = [];
  #size = 0;
  // An emptied level kept for reuse: a queue that drains and refills does not allocate.
  #spare?: Level<K>;

  /** The number of queued keys. */
  get size(): number {
    return this.#size;
  }

  /** The priority of the key `shift` would return, or `undefined` when empty. */
  get topPriority(): number | undefined {
    return this.#levels[0]?.priority;
  }

  /** Appends `key` to the FIFO of `priority`. */
  push(key: K, priority: number): void {
    const levels = this.#levels;
    let level = levels[0];
    if (level === undefined || level.priority !== priority) {
      const i = this.#find(priority);
      level = levels[i];
      if (level === undefined || level.priority !== priority) {
        level = this.#spare ?? { priority, items: [], head: 0, live: 0, stale: new Map() };
        this.#spare = undefined;
        level.priority = priority;
        levels.splice(i, 0, level);
      }
    }
    level.items.push(key);
    level.live++;
    this.#size++;
  }

  /** Takes the first key of the highest priority, or `undefined` when empty. */
  shift(): K | undefined {
    const level = this.#levels[0];
    if (level === undefined) return undefined;
    const { items, stale } = level;
    let key: K;
    for (;;) {
      key = items[level.head]!;
      items[level.head++] = undefined;
      if (stale.size === 0) break;
      const n = stale.get(key);
      if (n === undefined) break;
      if (n === 1) stale.delete(key);
      else stale.set(key, n - 1);
    }
    this.#size--;
    if (--level.live === 0) this.#drop(0);
    else if (level.head >= 1024 && level.head * 2 >= items.length) {
      level.items = items.slice(level.head);
      level.head = 0;
    }
    return key;
  }

  /** Takes a queued `key` out of the FIFO of `priority`; its slot is skipped later. */
  remove(key: K, priority: number): void {
    const i = this.#find(priority);
    const level = this.#levels[i];
    this.#size--;
    if (--level.live === 0) return this.#drop(i);
    level.stale.set(key, (level.stale.get(key) ?? 0) + 1);
    // Compacting once stale slots outnumber live ones keeps memory bounded for a level
    // that never drains, at amortized O(1).
    const slots = level.items.length - level.head;
    if (slots >= 1024 && slots > 2 * level.live) {
      level.items = [...live(level)];
      level.head = 0;
      level.stale.clear();
    }
  }

  /** The queued keys in the order `shift` would return them. */
  *[Symbol.iterator](): IterableIterator<K> {
    for (const level of this.#levels) yield* live(level);
  }

  // The index of `priority` in #levels, or where it would be inserted.
  #find(priority: number): number {
    const levels = this.#levels;
    let lo = 0;
    let hi = levels.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (levels[mid].priority > priority) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  #drop(i: number): void {
    const levels = this.#levels;
    const level = i === 0 ? levels.shift()! : levels.splice(i, 1)[0];
    level.items.length = 0;
    level.head = 0;
    level.stale.clear();
    this.#spare = level;
  }
}

// A level's live keys in order, skipping stale slots without consuming them.
function* live<K>(level: Level<K>): Generator<K> {
  const stale = level.stale.size === 0 ? undefined : new Map(level.stale);
  for (let i = level.head; i < level.items.length; i++) {
    const key = level.items[i]!;
    const n = stale?.get(key);
    if (n === undefined) yield key;
    else if (n === 1) stale!.delete(key);
    else stale!.set(key, n - 1);
  }
}
