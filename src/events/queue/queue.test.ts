import { describe, expect, it } from "vitest";
import { QueueLease, type QueueStateStore } from "./queue.js";

/** The cursor document's lease, as QueueStateStore keeps it; `takes` counts the commands sent. */
function leaseDocument() {
  const doc = { owner: null as string | null, until: new Date(0), takes: 0 };
  const store = {
    takeLease: async (owner: string, now: Date, until: Date) => {
      doc.takes++;
      if (doc.owner !== owner && doc.until >= now) return false;
      Object.assign(doc, { owner, until });
      return true;
    },
    releaseLease: async (owner: string) => {
      if (doc.owner === owner) Object.assign(doc, { owner: null, until: new Date(0) });
    },
  } as unknown as QueueStateStore;
  return { doc, store };
}

const at = (seconds: number) => new Date(Date.parse("2026-01-10T08:00:00Z") + seconds * 1000);

describe("the apply worker's lease", () => {
  it("is renewed once half of it has run, not on every pass", async () => {
    const { doc, store } = leaseDocument();
    const lease = new QueueLease(store, 10_000);
    expect(await lease.take(at(0))).toBe("resumed");
    expect(await lease.take(at(1))).toBe("continued");
    expect(await lease.take(at(4.9))).toBe("continued");
    expect(doc.takes).toBe(1);
    expect(await lease.take(at(5))).toBe("continued");
    expect(doc.takes).toBe(2);
    expect(doc.until).toEqual(at(15));
  });

  it("is refused while another worker holds it, and taken once that one's ran out", async () => {
    const { store } = leaseDocument();
    const mine = new QueueLease(store, 10_000);
    const other = new QueueLease(store, 10_000);
    await other.take(at(0));
    expect(await mine.take(at(1))).toBe("refused");
    expect(mine.holds(at(1))).toBe(false);
    expect(await mine.take(at(10.5))).toBe("resumed");
    expect(mine.holds(at(11))).toBe(true);
    // The other worker stalled past its lease: it learns so before it applies anything.
    expect(await other.take(at(12))).toBe("refused");
  });

  it("counts as resumed when taken again after it ran out: another worker may have applied meanwhile", async () => {
    const { store } = leaseDocument();
    const lease = new QueueLease(store, 10_000);
    await lease.take(at(0));
    expect(lease.holds(at(9.9))).toBe(true);
    expect(lease.holds(at(10))).toBe(false);
    expect(await lease.take(at(30))).toBe("resumed");
  });

  it("is free for another worker once released", async () => {
    const { store } = leaseDocument();
    const mine = new QueueLease(store, 10_000);
    await mine.take(at(0));
    await mine.release();
    expect(await new QueueLease(store, 10_000).take(at(1))).toBe("resumed");
  });
});
