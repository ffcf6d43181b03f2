/**
 * Spends whose outcome this process does not know: the delete failed with an
 * error, which a lost reply also gives after the database applied it. The
 * verify that saw the error answered 503, so when a later verify finds the
 * token spent and no spend in this process has succeeded since, the spend
 * that removed the marker was that failed one and the later verify may take
 * it as its own. That holds only while every spend of the database goes
 * through this process (one instance owns a FerretDB database); elsewhere
 * nothing is claimed.
 */
export class SpendsInDoubt {
  /** jti → the token's expiry in ms; past it, no verify of the token gets this far. */
  private readonly entries = new Map<string, number>();

  constructor(private readonly soleSpender: boolean) {}

  /** The spend of `jti` failed with an error: it may have been applied. */
  remember(jti: string, expiresAt: Date): void {
    if (this.soleSpender) this.entries.set(jti, expiresAt.getTime());
  }

  /** A spend of `jti` succeeded, so no earlier one did. */
  forget(jti: string): void {
    this.entries.delete(jti);
  }

  /** True for at most one caller per doubtful spend: the token was spent by a spend that answered an error. */
  claim(jti: string): boolean {
    return this.entries.delete(jti);
  }

  /** Drops the entries of expired tokens. */
  prune(now: Date): void {
    for (const [jti, expiresAt] of this.entries) if (expiresAt < now.getTime()) this.entries.delete(jti);
  }
}
