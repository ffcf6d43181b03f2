/**
 * Spends whose outcome this process does not know: the delete failed with an
 * error, which a lost reply also gives after the database applied it. The
 * verify that saw the error answered 503, so when a later verify finds the
 * token spent and no spend in this process has succeeded, the spend that
 * removed the marker was that failed one and the later verify may take it as
 * its own. That holds only while every spend of the database goes through
 * this process (one instance owns a FerretDB database); elsewhere nothing is
 * claimed.
 *
 * Tokens whose spend succeeded (or was claimed) are remembered too, until they
 * expire: a failed spend of the same token that reports after the successful
 * one must not open a doubt that a retry could claim as a second `valid`.
 */
export class SpendsInDoubt {
  /** jti → what this process knows of its spend, and the token's expiry in ms (past it, no verify gets this far). */
  private readonly entries = new Map<string, { state: "doubt" | "spent"; expiresAt: number }>();

  constructor(private readonly soleSpender: boolean) {}

  /** The spend of `jti` failed with an error: it may have been applied. */
  remember(jti: string, expiresAt: Date): void {
    if (!this.soleSpender || this.entries.get(jti)?.state === "spent") return;
    this.entries.set(jti, { state: "doubt", expiresAt: expiresAt.getTime() });
  }

  /** A spend of `jti` succeeded, so no other one did or will. */
  spent(jti: string, expiresAt: Date): void {
    if (this.soleSpender) this.entries.set(jti, { state: "spent", expiresAt: expiresAt.getTime() });
  }

  /** True for at most one caller per doubtful spend: the token was spent by a spend that answered an error. */
  claim(jti: string): boolean {
    const entry = this.entries.get(jti);
    if (entry?.state !== "doubt") return false;
    entry.state = "spent";
    return true;
  }

  /** Drops the entries of expired tokens. */
  prune(now: Date): void {
    for (const [jti, entry] of this.entries) if (entry.expiresAt < now.getTime()) this.entries.delete(jti);
  }
}
