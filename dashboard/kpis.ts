// The overview's headline figures, from the API's answers for the range and the period before it (pure).

export interface ActivePoint {
  date: string;
  dau: number;
  wau: number;
  mau: number;
  new_players: number;
}
export interface Cohort {
  date: string;
  players: number;
  returned: number[];
}
export interface TrendPoint {
  date: string;
  events: number;
  players: number;
  sum?: number | null;
}
export interface ActiveAnswer {
  series: { tag: string | null; points: ActivePoint[] }[];
}
export interface RetentionAnswer {
  series: { tag: string | null; cohorts: Cohort[] }[];
  complete_through?: string;
  lag_seconds?: number;
}
export interface TrendsAnswer {
  series: { name: string; tag: string | null; points: TrendPoint[] }[];
  complete_through?: string;
  lag_seconds?: number;
}

/** A figure of the range beside the same figure of the period before; `daily` draws its trend line. */
export interface Figure {
  key: string;
  label: string;
  current: number | null;
  previous: number | null;
  /** "percent": a change in percentage points; otherwise relative. */
  kind: "count" | "percent" | "amount";
  daily: number[];
}

const total = (values: number[]) => values.reduce((sum, value) => sum + value, 0);

/** Day k's retention over the cohorts whose day k has begun: their players back on day k over their players. */
export function retentionOn(cohorts: Cohort[], k: number): number | null {
  const begun = cohorts.filter((cohort) => cohort.returned.length > k && cohort.players > 0);
  const players = total(begun.map((cohort) => cohort.players));
  return players === 0 ? null : (100 * total(begun.map((cohort) => cohort.returned[k]))) / players;
}

/** Per day of the range (those from `from` on): the figure of that day. */
function dailyTotals(points: TrendPoint[][], from: string, pick: (point: TrendPoint) => number): Map<string, number> {
  const days = new Map<string, number>();
  for (const series of points)
    for (const point of series) if (point.date >= from) days.set(point.date, (days.get(point.date) ?? 0) + pick(point));
  return days;
}

export function overviewFigures(
  range: { from: string; previousFrom: string },
  active: ActiveAnswer,
  retention: RetentionAnswer,
  trends: TrendsAnswer,
  sum: string,
): Figure[] {
  const points = active.series[0]?.points ?? [];
  const [before, during] = [points.filter((p) => p.date < range.from), points.filter((p) => p.date >= range.from)];
  const mean = (values: number[]) => (values.length === 0 ? null : total(values) / values.length);
  const cohorts = retention.series[0]?.cohorts ?? [];
  const [oldCohorts, newCohorts] = [
    cohorts.filter((c) => c.date < range.from),
    cohorts.filter((c) => c.date >= range.from),
  ];
  const trendPoints = trends.series.map((series) => series.points);
  const events = (from: string, to: string) =>
    [...dailyTotals(trendPoints, from, (p) => p.events)].filter(([date]) => date < to).map(([, n]) => n);
  const sums = (from: string, to: string) =>
    [...dailyTotals(trendPoints, from, (p) => p.sum ?? 0)].filter(([date]) => date < to).map(([, n]) => n);
  const end = "9999-12-31";
  const retentionFigure = (k: number): Figure => ({
    key: `d${k}`,
    label: `D${k} retention`,
    current: retentionOn(newCohorts, k),
    previous: retentionOn(oldCohorts, k),
    kind: "percent",
    daily: newCohorts
      .filter((c) => c.returned.length > k && c.players > 0)
      .map((c) => (100 * c.returned[k]) / c.players),
  });
  return [
    {
      key: "dau",
      label: "Daily active players (average)",
      current: mean(during.map((p) => p.dau)),
      previous: mean(before.map((p) => p.dau)),
      kind: "count",
      daily: during.map((p) => p.dau),
    },
    {
      key: "mau",
      label: "Monthly active players (30 days to the last day)",
      current: during.at(-1)?.mau ?? null,
      previous: before.at(-1)?.mau ?? null,
      kind: "count",
      daily: during.map((p) => p.mau),
    },
    {
      key: "new",
      label: "New players",
      current: total(during.map((p) => p.new_players)),
      previous: total(before.map((p) => p.new_players)),
      kind: "count",
      daily: during.map((p) => p.new_players),
    },
    retentionFigure(1),
    retentionFigure(7),
    retentionFigure(30),
    {
      key: "events",
      label: "Events",
      current: total(events(range.from, end)),
      previous: total(events(range.previousFrom, range.from)),
      kind: "count",
      daily: events(range.from, end),
    },
    {
      key: "sum",
      label: sum === "" ? "Sum (no property summed)" : `Sum of ${sum}`,
      current: sum === "" ? null : total(sums(range.from, end)),
      previous: sum === "" ? null : total(sums(range.previousFrom, range.from)),
      kind: "amount",
      daily: sums(range.from, end),
    },
  ];
}

/** "+12.5%" against the period before, "+1.2 pp" for a percentage; null without both figures. */
export function changeOf(figure: Figure): string | null {
  const { current, previous } = figure;
  if (current === null || previous === null) return null;
  const sign = (n: number) => (n > 0 ? "+" : n < 0 ? "−" : "±");
  if (figure.kind === "percent") return `${sign(current - previous)}${Math.abs(current - previous).toFixed(1)} pp`;
  if (previous === 0) return current === 0 ? "±0%" : "new";
  const change = (100 * (current - previous)) / previous;
  return `${sign(change)}${Math.abs(change).toFixed(1)}%`;
}
