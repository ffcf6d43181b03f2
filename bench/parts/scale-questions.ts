/**
 * The scale bench's questions: each as the service is asked it (a /v1 route and body) and as DuckDB is asked it (one
 * SQL statement over the raw events and the players' tags), with both answers brought to one comparable shape.
 * Days in SQL are dayNumber()s (days since 1970-01-01), as the events table keeps them.
 */

type Row = Record<string, unknown>;

export interface Question {
  label: string;
  path: string;
  body: object;
  sql: string;
  fromRows(rows: Row[]): unknown;
  fromService(answer: any): unknown;
}

export interface QuestionContext {
  /** The last day of the history (yesterday) and the number of days the reads cover, ending on it. */
  lastDay: number;
  rangeDays: number;
  tags: readonly string[];
  /** Names of the events, in the order of the events table's codes. */
  names: readonly string[];
  /** The summed property: its event name and property. */
  sum: { name: string; property: string };
  /** The tag pairs of the filters: two tags all, and a tag without another. */
  both: [string, string];
  without: [string, string];
  /** The tags of the searches: one tag, and two tags all. */
  searchOne: string;
  searchBoth: [string, string];
}

const PERIODS = 30;
const PAGE = 50;

const dateOf = (day: number): string => new Date(day * 86_400_000).toISOString().slice(0, 10);
const quoted = (tags: readonly string[]) => tags.map((tag) => `'${tag}'`).join(", ");
const num = (value: unknown): number => Number(value ?? 0);

export function scaleQuestions(c: QuestionContext): Question[] {
  const to = c.lastDay;
  const from = to - c.rangeDays + 1;
  const range = { from: dateOf(from), to: dateOf(to) };
  const days = Array.from({ length: to - from + 1 }, (_, i) => from + i);
  const split = { split_by: "tags", tags: [...c.tags] };
  const tagged = `SELECT player, tag FROM player_tags WHERE tag IN (${quoted(c.tags)})`;
  const trends = (interval: "day" | "week" | "month") => trendsQuestion(c, { from, to, days, interval, split: true });
  return [
    {
      label: "retention_30x30_split_10_tags",
      path: "/v1/events/retention",
      body: { ...range, periods: PERIODS, ...split },
      sql: `WITH starts AS (SELECT player, min(day) AS start FROM events GROUP BY player HAVING min(day) BETWEEN ${from} AND ${to}),
        returns AS (SELECT DISTINCT e.player, s.start, e.day - s.start AS k FROM events e JOIN starts s USING (player)
                    WHERE e.day BETWEEN ${from} AND ${to + PERIODS} AND e.day BETWEEN s.start AND s.start + ${PERIODS})
        SELECT t.tag, r.start::INTEGER AS start, r.k::INTEGER AS k, count(*)::INTEGER AS n
        FROM returns r JOIN (${tagged}) t USING (player) GROUP BY ALL`,
      fromRows: (rows) => {
        const n = new Map(rows.map((r) => [`${r.tag as string}/${num(r.start)}/${num(r.k)}`, num(r.n)]));
        return c.tags.map((tag) => ({
          tag,
          cohorts: days.map((start) => {
            const begun = Math.max(0, Math.min(PERIODS, to + 1 - start) + 1);
            const returned = Array.from({ length: begun }, (_, k) => n.get(`${tag}/${start}/${k}`) ?? 0);
            return { date: dateOf(start), players: returned[0] ?? 0, returned };
          }),
        }));
      },
      fromService: (answer) => answer.series,
    },
    {
      label: "active_30_days_split_10_tags",
      path: "/v1/events/active",
      body: { ...range, ...split },
      // A player counts on day D for a width w while their latest day of play up to D is within w days of it: each
      // day of play spans the days until their next one, so each measure is a sum of +1 and -1 edges over the days.
      sql: `WITH played AS (SELECT DISTINCT player, day FROM events WHERE day BETWEEN ${from - 29} AND ${to}),
        spans AS (SELECT player, day, coalesce(lead(day) OVER (PARTITION BY player ORDER BY day) - 1, ${to}) AS until FROM played),
        starts AS (SELECT player, min(day) AS start FROM events GROUP BY player),
        marks AS (SELECT player, 'dau' AS m, day AS a, day AS b FROM spans
          UNION ALL SELECT player, 'wau', day, least(until, day + 6) FROM spans
          UNION ALL SELECT player, 'mau', day, least(until, day + 29) FROM spans
          UNION ALL SELECT player, 'new_players', start, start FROM starts),
        clipped AS (SELECT player, m, greatest(a, ${from}) AS a, least(b, ${to}) AS b FROM marks WHERE greatest(a, ${from}) <= least(b, ${to})),
        edges AS (SELECT t.tag, m, a AS d, 1 AS delta FROM clipped JOIN (${tagged}) t USING (player)
          UNION ALL SELECT t.tag, m, b + 1, -1 FROM clipped JOIN (${tagged}) t USING (player))
        SELECT tag, m, d::INTEGER AS d, (sum(sum(delta)) OVER (PARTITION BY tag, m ORDER BY d))::INTEGER AS n FROM edges GROUP BY tag, m, d`,
      fromRows: (rows) => {
        const at = new Map(rows.map((r) => [`${r.tag as string}/${r.m as string}/${num(r.d)}`, num(r.n)]));
        return c.tags.map((tag) => {
          const level: Record<string, number> = { dau: 0, wau: 0, mau: 0, new_players: 0 };
          return {
            tag,
            points: days.map((day) => {
              for (const m of Object.keys(level)) level[m] = at.get(`${tag}/${m}/${day}`) ?? level[m];
              return { date: dateOf(day), ...level };
            }),
          };
        });
      },
      fromService: (answer) => answer.series,
    },
    trends("day"),
    trends("week"),
    trends("month"),
    {
      ...trendsQuestion(c, { from, to, days, interval: "day", split: false, players: bothOf(c.both) }),
      label: "trends_by_day_two_tags_all",
      body: { ...range, interval: "day", tags: c.both, tags_match: "all" },
    },
    {
      ...trendsQuestion(c, { from, to, days, interval: "day", split: false, players: withoutOf(c.without) }),
      label: "trends_by_day_tag_and_tags_none",
      body: { ...range, interval: "day", tags: [c.without[0]], tags_none: [c.without[1]] },
    },
    searchQuestion(
      "search_one_tag",
      { tags: [c.searchOne] },
      `SELECT player FROM player_tags WHERE tag = '${c.searchOne}'`,
    ),
    searchQuestion("search_two_tags_all", { tags: c.searchBoth, tags_match: "all" }, bothOf(c.searchBoth)),
  ];
}

const bothOf = ([a, b]: readonly [string, string]) =>
  `SELECT player FROM player_tags WHERE tag = '${a}' INTERSECT SELECT player FROM player_tags WHERE tag = '${b}'`;
const withoutOf = ([a, b]: readonly [string, string]) =>
  `SELECT player FROM player_tags WHERE tag = '${a}' EXCEPT SELECT player FROM player_tags WHERE tag = '${b}'`;

/**
 * Trends over the range by `interval` (a bucket starts on its day, Monday or first of the month, never before the
 * range), events, players and the sum: split by the tags, or of the players `players` selects.
 */
function trendsQuestion(
  c: QuestionContext,
  q: { from: number; to: number; days: number[]; interval: "day" | "week" | "month"; split: boolean; players?: string },
): Question {
  const bucketOf = {
    day: (day: string) => day,
    week: (day: string) => `${day} - ((${day} + 3) % 7)`,
    month: (day: string) => `(date_trunc('month', DATE '1970-01-01' + ${day})::DATE - DATE '1970-01-01')`,
  }[q.interval];
  const buckets = [...new Set(q.days.map((day) => bucketStart(q.interval, day, q.from)))];
  const cohort = q.split
    ? `JOIN (SELECT player, tag FROM player_tags WHERE tag IN (${quoted(c.tags)})) t USING (player)`
    : `JOIN (${q.players}) t USING (player)`;
  return {
    label: `trends_by_${q.interval}_split_10_tags`,
    path: "/v1/events/trends",
    body: {
      from: dateOf(q.from),
      to: dateOf(q.to),
      interval: q.interval,
      ...(q.split && { split_by: "tags", tags: [...c.tags], sum: c.sum.property }),
    },
    sql: `WITH per AS (SELECT player, name, greatest(${bucketOf("day")}, ${q.from}) AS bucket, count(*) AS events,
                              sum(amount_cents) AS cents
                       FROM events WHERE day BETWEEN ${q.from} AND ${q.to} GROUP BY ALL)
      SELECT ${q.split ? "t.tag" : "NULL"} AS tag, name::INTEGER AS name, bucket::INTEGER AS bucket,
             sum(events)::DOUBLE AS events, count(*)::INTEGER AS players, coalesce(sum(cents), 0)::DOUBLE AS cents
      FROM per ${cohort} GROUP BY ALL`,
    fromRows: (rows) => {
      const series = new Map<string, Map<number, { events: number; players: number; cents: number }>>();
      for (const r of rows) {
        const key = `${(r.tag as string | null) ?? ""}/${c.names[num(r.name)]}`;
        const points = series.get(key) ?? series.set(key, new Map()).get(key)!;
        points.set(num(r.bucket), { events: num(r.events), players: num(r.players), cents: num(r.cents) });
      }
      return [...series]
        .map(([key, points]) => {
          const name = key.slice(key.indexOf("/") + 1);
          const withSum = q.split && name === c.sum.name;
          return [
            key,
            buckets.map((b) => {
              const point = points.get(b);
              return {
                date: dateOf(b),
                events: point?.events ?? 0,
                players: point?.players ?? 0,
                ...(withSum && { sum: (point?.cents ?? 0) / 100 }),
              };
            }),
          ] as const;
        })
        .sort(([a], [b]) => (a < b ? -1 : 1));
    },
    fromService: (answer) =>
      answer.series
        .map((s: any) => [
          `${s.tag ?? ""}/${s.name}`,
          s.points.map((p: any) => ({
            date: p.date,
            events: num(p.events),
            players: num(p.players),
            ...(p.sum != null && { sum: num(p.sum) }),
          })),
        ])
        .sort(([a]: [string], [b]: [string]) => (a < b ? -1 : 1)),
  };
}

/** The first day of the bucket of `day`, never before `from`. */
function bucketStart(interval: "day" | "week" | "month", day: number, from: number): number {
  if (interval === "day") return day;
  if (interval === "week") return Math.max(from, day - ((day + 3) % 7));
  const date = new Date(day * 86_400_000);
  return Math.max(from, Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1) / 86_400_000);
}

/** A search's first page (identity keys with their tags) and its total: `players` selects the cohort. */
function searchQuestion(label: string, filter: object, players: string): Question {
  return {
    label,
    path: "/v1/players/search",
    body: { ...filter, page: 1, page_size: PAGE },
    sql: `WITH cohort AS (${players})
      SELECT p.identity_key, (SELECT list(tag ORDER BY tag) FROM player_tags t WHERE t.player = p.player) AS tags,
             p.tier, (count(*) OVER ())::INTEGER AS total
      FROM players p WHERE p.player IN (SELECT player FROM cohort) ORDER BY p.identity_key LIMIT ${PAGE}`,
    fromRows: (rows) => ({
      total: num(rows[0]?.total),
      players: rows.map((r) => ({ key: r.identity_key, tags: r.tags, tier: r.tier ?? null })),
    }),
    fromService: (answer) => ({
      total: num(answer.players_info?.total),
      players: answer.players.map((p: any) => ({
        key: `u:${p.partner_user_id}`,
        tags: [...(p.tags ?? [])].sort(),
        tier: p.traits?.tier ?? null,
      })),
    }),
  };
}
