import {
  DuckDBDataChunk,
  DuckDBInstance,
  INTEGER,
  SMALLINT,
  UTINYINT,
  VARCHAR,
  type DuckDBAppender,
  type DuckDBConnection,
  type DuckDBType,
  type DuckDBValue,
} from "@duckdb/node-api";
import { EVENT_NAMES, PURCHASE, type NameDay, type ScaleModel } from "./scale-model.js";

/** Rows a data chunk carries (DuckDB's vector size). */
const CHUNK_ROWS = 2048;

/** Players appended between two turns of the event loop. */
const YIELD_EVERY = 4096;

/** DuckDB's settings in the bench: the machine's 2 cores, and a bound on its memory. */
export const DUCK_OPTIONS = { threads: "2", memory_limit: "4GB" };

/** The raw events and the players with their tags, as a warehouse would keep them: one row an event. */
const SCHEMA = `
  CREATE TABLE events (player INTEGER NOT NULL, day SMALLINT NOT NULL, name UTINYINT NOT NULL, amount_cents INTEGER);
  CREATE TABLE names (name UTINYINT NOT NULL, label VARCHAR NOT NULL);
  CREATE TABLE players (player INTEGER NOT NULL, identity_key VARCHAR NOT NULL, tier VARCHAR);
  CREATE TABLE player_tags (player INTEGER NOT NULL, tag VARCHAR NOT NULL);
`;

/** Rows appended a data chunk at a time (a value at a time is 2.5 times slower, measured). */
class Rows {
  private readonly columns: DuckDBValue[][];
  private filled = 0;

  constructor(
    private readonly appender: DuckDBAppender,
    private readonly types: DuckDBType[],
  ) {
    this.columns = types.map(() => new Array<DuckDBValue>(CHUNK_ROWS));
  }

  add(...values: DuckDBValue[]): void {
    for (let c = 0; c < values.length; c++) this.columns[c][this.filled] = values[c];
    if (++this.filled === CHUNK_ROWS) this.flush();
  }

  flush(): void {
    if (this.filled === 0) return;
    const chunk = DuckDBDataChunk.create(this.types, this.filled);
    chunk.setColumns(this.filled === CHUNK_ROWS ? this.columns : this.columns.map((c) => c.slice(0, this.filled)));
    this.appender.appendDataChunk(chunk);
    this.filled = 0;
  }

  close(): void {
    this.flush();
    this.appender.closeSync();
  }
}

/**
 * Writes the bench's raw events straight to a DuckDB file from the same model as the service's sets: every event a
 * row (player, day, name, amount in cents for purchases), and the players with their identity keys, tiers and tags.
 */
export class DuckWriter {
  private constructor(
    private readonly instance: DuckDBInstance,
    private readonly connection: DuckDBConnection,
    private readonly events: Rows,
  ) {}

  static async create(file: string): Promise<DuckWriter> {
    const instance = await DuckDBInstance.create(file, DUCK_OPTIONS);
    const connection = await instance.connect();
    await connection.run(SCHEMA);
    const appender = await connection.createAppender("events");
    return new DuckWriter(instance, connection, new Rows(appender, [INTEGER, SMALLINT, UTINYINT, INTEGER]));
  }

  /**
   * Day `day` (a dayNumber) of the model's day `d`: a row per event, each purchase with its own price. It yields to
   * the event loop now and then, so that the service's database writes of the day go on meanwhile.
   */
  async appendDay(model: ScaleModel, d: number, day: number, byName: readonly NameDay[]): Promise<void> {
    for (const [name, { players, counts }] of byName.entries()) {
      for (let j = 0; j < players.length; j++) {
        for (let k = 0; k < counts[j]; k++) {
          this.events.add(players[j], day, name, name === PURCHASE ? model.priceCents(players[j], d, k) : null);
        }
        if (j % YIELD_EVERY === 0) await new Promise(setImmediate);
      }
    }
  }

  /** The players' table and their tags (as of the generation: the bench changes no tag before its checks). */
  async appendPlayers(model: ScaleModel): Promise<void> {
    this.events.close();
    const names = new Rows(await this.connection.createAppender("names"), [UTINYINT, VARCHAR]);
    EVENT_NAMES.forEach((label, name) => names.add(name, label));
    names.close();
    const players = new Rows(await this.connection.createAppender("players"), [INTEGER, VARCHAR, VARCHAR]);
    const tags = new Rows(await this.connection.createAppender("player_tags"), [INTEGER, VARCHAR]);
    for (let i = 0; i < model.shape.players; i++) {
      players.add(i, `u:${model.partnerId(i)}`, model.tierOf(i));
      for (const tag of model.tagsOf(i)) tags.add(i, tag);
    }
    players.close();
    tags.close();
  }

  async close(): Promise<{ rows: number }> {
    await this.connection.run("CHECKPOINT");
    const reader = await this.connection.runAndReadAll("SELECT count(*)::INTEGER AS n FROM events");
    const rows = Number(reader.getRowObjects()[0].n);
    this.connection.closeSync();
    this.instance.closeSync();
    return { rows };
  }
}
