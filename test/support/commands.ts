import type { CommandStartedEvent, Document, MongoClient } from "mongodb";

/** The queue's own traffic: the apply worker's polling and lease, which runs whatever the request. */
const BACKGROUND = new Set(["event_queues", "event_segments", "event_workers", "instance_lease"]);
const HANDSHAKES = new Set(["hello", "isMaster", "ping", "endSessions"]);

/** The commands `client` starts during `call`, in order. */
export async function startedDuring(client: MongoClient, call: () => Promise<unknown>): Promise<CommandStartedEvent[]> {
  const started: CommandStartedEvent[] = [];
  const onStarted = (event: CommandStartedEvent) => void started.push(event);
  client.on("commandStarted", onStarted);
  try {
    await call();
  } finally {
    client.off("commandStarted", onStarted);
  }
  return started;
}

/**
 * The database commands `client` sends during `call`, as `<command> <collection>`, in order; with `background`,
 * the apply worker's queue traffic too (for a count that includes applying events).
 */
export async function commandsOf(
  client: MongoClient,
  call: () => Promise<unknown>,
  { background = false } = {},
): Promise<string[]> {
  return (await startedDuring(client, call)).flatMap((event) => {
    const collection = String(event.command[event.commandName] ?? "");
    if ((!background && BACKGROUND.has(collection)) || HANDSHAKES.has(event.commandName)) return [];
    return [`${event.commandName} ${collection}`];
  });
}

/** A query's shape: its command, collection, filter (field names and operators, values dropped) and sort. */
export interface CommandShape {
  command: string;
  collection: string;
  /** Each field the filter names, with its operators ("=" for a value); `$or` branches as filters of their own. */
  filter: FilterShape;
  sort: string[];
}

export interface FilterShape {
  fields: Record<string, string[]>;
  or: FilterShape[];
}

/** The filters a command carries, by command (an update or delete command carries one a statement). */
const FILTERS: Record<string, (command: Document) => { filter?: Document; sort?: Document | Map<string, unknown> }[]> =
  {
    find: (c) => [{ filter: c.filter, sort: c.sort }],
    count: (c) => [{ filter: c.query }],
    distinct: (c) => [{ filter: c.query }],
    findAndModify: (c) => [{ filter: c.query, sort: c.sort }],
    update: (c) => (c.updates as Document[]).map((u) => ({ filter: u.q })),
    delete: (c) => (c.deletes as Document[]).map((d) => ({ filter: d.q })),
    aggregate: (c) => {
      const pipeline = c.pipeline as Document[];
      return [{ filter: pipeline[0]?.$match ?? {}, sort: pipeline.find((stage) => stage.$sort)?.$sort }];
    },
  };

/** The query shapes of a started command (none for a command that reads by no filter: an insert, a getMore). */
export function shapesOf(event: Pick<CommandStartedEvent, "commandName" | "command">): CommandShape[] {
  const filters = FILTERS[event.commandName]?.(event.command) ?? [];
  const collection = String(event.command[event.commandName]);
  return filters.map(({ filter = {}, sort = {} }) => ({
    command: event.commandName,
    collection,
    filter: filterShape(filter),
    // The driver sends a find's sort as a Map.
    sort: sort instanceof Map ? [...sort.keys()] : Object.keys(sort),
  }));
}

function filterShape(filter: Document): FilterShape {
  const shape: FilterShape = { fields: {}, or: [] };
  for (const [key, value] of Object.entries(filter)) {
    if (key === "$and") {
      for (const part of value as Document[]) {
        const inner = filterShape(part);
        for (const [field, ops] of Object.entries(inner.fields))
          shape.fields[field] = [...(shape.fields[field] ?? []), ...ops];
        shape.or.push(...inner.or);
      }
    } else if (key === "$or") shape.or.push(...(value as Document[]).map(filterShape));
    else shape.fields[key] = operatorsOf(value);
  }
  return shape;
}

const operatorsOf = (value: unknown): string[] => {
  const isOperators =
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value) &&
    Object.keys(value).some((k) => k.startsWith("$"));
  return isOperators ? Object.keys(value).sort() : ["="];
};

/** A shape as one line: `find event_raw {project_id:=, n:$in} sort [at]`. */
export function shapeText({ command, collection, filter, sort }: CommandShape): string {
  const text = (f: FilterShape): string => {
    const fields = Object.entries(f.fields).map(([field, ops]) => `${field}:${ops.join(",")}`);
    const or = f.or.length > 0 ? [`$or:[${f.or.map(text).join(" | ")}]`] : [];
    return `{${[...fields, ...or].join(", ")}}`;
  };
  return `${command} ${collection} ${text(filter)}${sort.length > 0 ? ` sort [${sort.join(", ")}]` : ""}`;
}
