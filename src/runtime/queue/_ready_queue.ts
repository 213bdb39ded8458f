// The ready part of a WorkQueue: entries by priority, highest first, FIFO within one.
//
// One FIFO per distinct priority rather than one heap: queues use a handful of priorities
// (controller-runtime's `LowPriority` and the default), so push and shift stay O(1) as in a
// plain FIFO, and an entry moved to a higher priority is dropped lazily from its old FIFO.
// Only priorities that hold entries are kept, sorted, so the highest is always the first;
// a new priority costs a binary search and an insert into that short list.

/** What the ready queue needs of an entry. */
export interface ReadyEntry {
  /** The entry's priority; fixed while it is queued. */
  readonly priority: number;
  /** Whether the entry is in a FIFO; the queue clears it on `shift` and `remove`. */
  queued: boolean;
}

interface Level<E> {
  priority: number;
  // Entries before #head are consumed; an entry whose `queued` is false was removed.
  items: (E | undefined)[];
  head: number;
  live: number;
}

/** Entries by priority (highest first), FIFO within one priority. */
export class ReadyQueue<E extends ReadyEntry> {
  // Levels holding live entries, highest priority first.
  #levels: Level<E>[] = [];
  #size = 0;
  // An emptied level kept for reuse: a queue that drains and refills does not allocate.
  #spare?: Level<E>;

  /** The number of queued entries. */
  get size(): number {
    return this.#size;
  }

  /** Appends `entry` to its priority's FIFO and marks it queued. */
  push(entry: E): void {
    const levels = this.#levels;
    let level = levels[0];
    if (level === undefined || level.priority !== entry.priority) {
      const i = this.#find(entry.priority);
      level = levels[i];
      if (level === undefined || level.priority !== entry.priority) {
        level = this.#spare ?? { priority: 0, items: [], head: 0, live: 0 };
        this.#spare = undefined;
        level.priority = entry.priority;
        levels.splice(i, 0, level);
      }
    }
    entry.queued = true;
    level.items.push(entry);
    level.live++;
    this.#size++;
  }

  /** Takes the first entry of the highest priority, or `undefined` when empty. */
  shift(): E | undefined {
    const level = this.#levels[0];
    if (level === undefined) return undefined;
    const items = level.items;
    let entry: E | undefined;
    do {
      entry = items[level.head];
      items[level.head++] = undefined;
    } while (!entry!.queued);
    entry!.queued = false;
    this.#size--;
    if (--level.live === 0) this.#drop(0);
    else if (level.head >= 1024 && level.head * 2 >= items.length) {
      level.items = items.slice(level.head);
      level.head = 0;
    }
    return entry;
  }

  /** Takes a queued `entry` out; its slot is skipped later. */
  remove(entry: E): void {
    const i = this.#find(entry.priority);
    const level = this.#levels[i];
    entry.queued = false;
    this.#size--;
    if (--level.live === 0) return this.#drop(i);
    // Removed entries are skipped by `shift`; compacting once they outnumber the live ones
    // keeps memory bounded for a level that never drains, at amortized O(1).
    const slots = level.items.length - level.head;
    if (slots >= 1024 && slots > 2 * level.live) {
      level.items = level.items.slice(level.head).filter((e) => e!.queued);
      level.head = 0;
    }
  }

  /** The queued entries in the order `shift` would return them. */
  *[Symbol.iterator](): IterableIterator<E> {
    for (const level of this.#levels) {
      for (let i = level.head; i < level.items.length; i++) {
        const entry = level.items[i];
        if (entry?.queued) yield entry;
      }
    }
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
    this.#spare = level;
  }
}
