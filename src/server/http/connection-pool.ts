import type { Clock } from "../../clock.js";

/** A client connection as the pool sees it: something it can close. */
export interface PooledConnection {
  /** Closes the connection cleanly (HTTP/2: GOAWAY); it need not be closed when this returns. */
  close(): void;
}

export interface ConnectionPoolOptions {
  maxConnections: number;
  /** A connection that has never had a request in flight is closed this long after it was admitted. */
  firstRequestTimeoutMs: number;
  /** A connection that has served requests is closed after this long with none in flight. */
  idleTimeoutMs: number;
  clock: Clock;
}

interface State {
  inFlight: number;
  /** When the connection last had no request in flight (ms since the epoch). */
  idleSince: number;
}

/**
 * Which connections the listener keeps. Only a connection with no request in
 * flight is ever closed for being idle or evicted; requests in flight are
 * bounded by the request timeout instead.
 *
 * At the cap, a newcomer evicts the longest-idle connection rather than being
 * refused: an attacker holding idle connections (the cheapest attack, a few
 * bytes each) then only pushes out its own oldest ones, and a health check or
 * a client with work to do still gets in. A legitimate idle client loses
 * nothing but a reconnect. Only when every connection has a request in flight
 * is a newcomer refused.
 */
export class ConnectionPool<C extends PooledConnection> {
  private readonly states = new Map<C, State>();
  // Idle connections in the order they became idle, so the first is the longest idle and the
  // expiry sweep stops at the first one still in time. New connections are kept apart because
  // they expire sooner.
  private readonly fresh = new Set<C>();
  private readonly idle = new Set<C>();
  private draining = false;

  constructor(private readonly options: ConnectionPoolOptions) {}

  get size(): number {
    return this.states.size;
  }

  /** Takes a new connection in, evicting the longest-idle one at the cap; false when all are busy (close it). */
  admit(connection: C): boolean {
    if (this.states.size >= this.options.maxConnections) {
      const longestIdle = this.longestIdle();
      if (longestIdle === undefined) return false;
      this.close(longestIdle);
    }
    this.states.set(connection, { inFlight: 0, idleSince: this.now() });
    this.fresh.add(connection);
    return true;
  }

  requestStarted(connection: C): void {
    const state = this.states.get(connection);
    if (!state) return;
    state.inFlight++;
    this.fresh.delete(connection);
    this.idle.delete(connection);
  }

  requestFinished(connection: C): void {
    const state = this.states.get(connection);
    if (!state || state.inFlight === 0) return;
    state.inFlight--;
    if (state.inFlight > 0) return;
    if (this.draining) return this.close(connection);
    state.idleSince = this.now();
    this.idle.add(connection);
  }

  /** Forgets a connection that has closed. */
  remove(connection: C): void {
    this.states.delete(connection);
    this.fresh.delete(connection);
    this.idle.delete(connection);
  }

  /** Closes the connections idle past their timeout; the listener calls it every so often. */
  sweep(): void {
    const now = this.now();
    this.closeWhile(this.fresh, (state) => now - state.idleSince >= this.options.firstRequestTimeoutMs);
    this.closeWhile(this.idle, (state) => now - state.idleSince >= this.options.idleTimeoutMs);
  }

  /** From now on (shutdown), closes each connection as its last request in flight finishes. */
  drain(): void {
    this.draining = true;
  }

  private closeWhile(connections: Set<C>, expired: (state: State) => boolean): void {
    for (const connection of connections) {
      if (!expired(this.states.get(connection)!)) return;
      this.close(connection);
    }
  }

  private longestIdle(): C | undefined {
    const [fresh] = this.fresh;
    const [idle] = this.idle;
    if (fresh === undefined || idle === undefined) return fresh ?? idle;
    return this.states.get(fresh)!.idleSince <= this.states.get(idle)!.idleSince ? fresh : idle;
  }

  private close(connection: C): void {
    this.remove(connection);
    connection.close();
  }

  private now(): number {
    return this.options.clock.now().getTime();
  }
}
