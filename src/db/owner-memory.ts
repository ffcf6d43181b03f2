/**
 * The byte budget of what the instance that owns its database keeps in memory
 * (it is the only writer, so what it wrote stays true; OWNER_MEMORY_MB). Sizes are estimates from each cache's own measure; a
 * cache that cannot take what it needs keeps nothing and its reads go to the
 * database.
 */
export class OwnerMemory {
  private used = 0;

  constructor(readonly budgetBytes: number) {}

  /** Takes `bytes` of the budget; false (and nothing taken) when they do not fit. */
  take(bytes: number): boolean {
    if (this.used + bytes > this.budgetBytes) return false;
    this.used += bytes;
    return true;
  }

  /** Takes `bytes` (or gives back, when negative) whatever the budget: what must stay until it is written. */
  charge(bytes: number): void {
    this.used = Math.max(0, this.used + bytes);
  }

  give(bytes: number): void {
    this.used = Math.max(0, this.used - bytes);
  }

  /** Whether `bytes` more would fit now. */
  fits(bytes: number): boolean {
    return this.used + bytes <= this.budgetBytes;
  }

  get usedBytes(): number {
    return this.used;
  }
}
