/**
 * The statistics of experiments' results: differences from the control with two-sided 95 % intervals and p-values
 * (a normal approximation for shares, Welch's t for means) and a chi-square test of a split against its weights.
 * The distributions come from the regularized incomplete gamma and beta functions (Numerical Recipes' series and
 * continued fractions), good to about 1e-12 here.
 */

/** The normal quantile of 0.975: a 95 % interval is ±1.96 standard errors. */
export const Z_975 = 1.959963984540054;

/** A group's values: how many players, Σ of their values and Σ of their squares (for a share, each value 0 or 1). */
export interface GroupTotals {
  n: number;
  total: number;
  squares: number;
}

/** A variant against the control: the difference of their values, its interval and p-value (undefined: not given). */
export interface Comparison {
  difference: number;
  ciLow?: number;
  ciHigh?: number;
  pValue?: number;
}

/**
 * Two shares: the difference's interval from the unpooled standard error (Wald), its p-value from the two-proportion
 * z-test with the pooled one.
 */
export function compareShares(control: GroupTotals, variant: GroupTotals): Comparison | undefined {
  if (control.n === 0 || variant.n === 0) return undefined;
  const p0 = control.total / control.n;
  const p1 = variant.total / variant.n;
  const difference = p1 - p0;
  const se = Math.sqrt((p0 * (1 - p0)) / control.n + (p1 * (1 - p1)) / variant.n);
  const pooled = (control.total + variant.total) / (control.n + variant.n);
  const sePooled = Math.sqrt(pooled * (1 - pooled) * (1 / control.n + 1 / variant.n));
  return {
    difference,
    ...(se > 0 && { ciLow: difference - Z_975 * se, ciHigh: difference + Z_975 * se }),
    ...(sePooled > 0 && { pValue: normalTwoSided(difference / sePooled) }),
  };
}

/** Two means, by Welch's t: each group's own variance, the Welch-Satterthwaite degrees of freedom. */
export function compareMeans(control: GroupTotals, variant: GroupTotals): Comparison | undefined {
  if (control.n === 0 || variant.n === 0) return undefined;
  const difference = variant.total / variant.n - control.total / control.n;
  if (control.n < 2 || variant.n < 2) return { difference };
  const a = varianceOf(control) / control.n;
  const b = varianceOf(variant) / variant.n;
  const se = Math.sqrt(a + b);
  if (!(se > 0)) return { difference };
  const df = (a + b) ** 2 / (a ** 2 / (control.n - 1) + b ** 2 / (variant.n - 1));
  const margin = studentQuantile975(df) * se;
  return {
    difference,
    ciLow: difference - margin,
    ciHigh: difference + margin,
    pValue: studentTwoSided(difference / se, df),
  };
}

/** The chi-square test of `observed` counts against shares by `weights`: its p-value (1 with nothing observed). */
export function sampleRatioPValue(observed: readonly number[], weights: readonly number[]): number {
  const n = observed.reduce((sum, count) => sum + count, 0);
  const weight = weights.reduce((sum, w) => sum + w, 0);
  if (n === 0) return 1;
  const chiSquare = observed.reduce((sum, count, i) => {
    const expected = (n * weights[i]) / weight;
    return sum + (count - expected) ** 2 / expected;
  }, 0);
  return gammaQ((observed.length - 1) / 2, chiSquare / 2);
}

/** The sample variance (n - 1) of a group from its sums. */
function varianceOf({ n, total, squares }: GroupTotals): number {
  return Math.max(0, (squares - (total * total) / n) / (n - 1));
}

/** P(|Z| ≥ |z|) of a standard normal: erfc(|z|/√2), which is Q(1/2, z²/2). */
export const normalTwoSided = (z: number): number => gammaQ(0.5, (z * z) / 2);

/** P(|T| ≥ |t|) of Student's t with `df` degrees of freedom: I_{df/(df+t²)}(df/2, 1/2). */
export const studentTwoSided = (t: number, df: number): number => betaI(df / 2, 0.5, df / (df + t * t));

/** The 0.975 quantile of Student's t: where its two-sided tail is 0.05, found by bisection. */
export function studentQuantile975(df: number): number {
  let low = 0;
  let high = 1;
  while (studentTwoSided(high, df) > 0.05) high *= 2;
  for (let i = 0; i < 100 && high - low > 1e-13 * high; i++) {
    const mid = (low + high) / 2;
    if (studentTwoSided(mid, df) > 0.05) low = mid;
    else high = mid;
  }
  return (low + high) / 2;
}

const EPS = 1e-15;
const TINY = 1e-300;
const LANCZOS = [
  0.99999999999980993, 676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
  12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7,
];

/** ln Γ(x), x > 0 (Lanczos, g = 7). */
function lnGamma(x: number): number {
  if (x < 0.5) return Math.log(Math.PI / Math.sin(Math.PI * x)) - lnGamma(1 - x);
  const y = x - 1;
  let sum = LANCZOS[0];
  for (let i = 1; i < LANCZOS.length; i++) sum += LANCZOS[i] / (y + i);
  const t = y + 7.5;
  return 0.5 * Math.log(2 * Math.PI) + (y + 0.5) * Math.log(t) - t + Math.log(sum);
}

/** The regularized upper incomplete gamma Q(a, x): a series below a + 1, a continued fraction above. */
export function gammaQ(a: number, x: number): number {
  if (x <= 0) return 1;
  const front = Math.exp(-x + a * Math.log(x) - lnGamma(a));
  if (x < a + 1) {
    let term = 1 / a;
    let sum = term;
    for (let n = 1; n < 1000 && Math.abs(term) > Math.abs(sum) * EPS; n++) {
      term *= x / (a + n);
      sum += term;
    }
    return 1 - sum * front;
  }
  let b = x + 1 - a;
  let c = 1 / TINY;
  let d = 1 / b;
  let h = d;
  for (let i = 1; i < 1000; i++) {
    const an = -i * (i - a);
    b += 2;
    d = nonZero(an * d + b);
    c = nonZero(b + an / c);
    d = 1 / d;
    h *= d * c;
    if (Math.abs(d * c - 1) < EPS) break;
  }
  return front * h;
}

/** The regularized incomplete beta I_x(a, b), by its continued fraction on the side where it converges fast. */
function betaI(a: number, b: number, x: number): number {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const front = Math.exp(lnGamma(a + b) - lnGamma(a) - lnGamma(b) + a * Math.log(x) + b * Math.log(1 - x));
  return x < (a + 1) / (a + b + 2) ? (front * betaFraction(a, b, x)) / a : 1 - (front * betaFraction(b, a, 1 - x)) / b;
}

function betaFraction(a: number, b: number, x: number): number {
  let c = 1;
  let d = 1 / nonZero(1 - ((a + b) * x) / (a + 1));
  let h = d;
  for (let m = 1; m < 1000; m++) {
    const even = (m * (b - m) * x) / ((a - 1 + 2 * m) * (a + 2 * m));
    d = 1 / nonZero(1 + even * d);
    c = nonZero(1 + even / c);
    h *= d * c;
    const odd = (-(a + m) * (a + b + m) * x) / ((a + 2 * m) * (a + 1 + 2 * m));
    d = 1 / nonZero(1 + odd * d);
    c = nonZero(1 + odd / c);
    h *= d * c;
    if (Math.abs(d * c - 1) < EPS) break;
  }
  return h;
}

const nonZero = (value: number): number => (Math.abs(value) < TINY ? TINY : value);
