// Reads the shell blocks of a Markdown file as steps to run, and compares an answer with the output shown for it.

/** The fence languages that mark a block as commands to type. */
const SHELL_LANGUAGES = new Set(["sh", "bash", "shell", "console"]);
/** `<!-- not run by test/service/readme.test.ts: <why> -->` on the last non-blank line before a fence keeps a block out. */
const NOT_RUN = /^<!--\s*not run by test\/service\/readme\.test\.ts:\s*(.+?)\s*-->$/;

export interface ShellBlock {
  /** 1-based line of the opening fence. */
  line: number;
  /** The block's lines, without the fence's indentation. */
  lines: string[];
  /** Why the block is not run, when it is marked so. */
  notRun?: string;
}

export interface Step {
  /** 1-based line of the step's first command line. */
  line: number;
  /** Bash source: the command lines since the previous shown output. */
  script: string;
  /** The JSON shown in `# ...` comment lines right after the commands, if any. */
  expected?: unknown;
}

/** Every fenced block in a shell language, in document order. */
export function shellBlocks(markdown: string): ShellBlock[] {
  const lines = markdown.split("\n");
  const blocks: ShellBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)(`{3,})\s*(\S*)/.exec(lines[i]);
    if (!open) continue;
    const [, indent, fence, language] = open;
    let end = i + 1;
    while (end < lines.length && !lines[end].trimStart().startsWith(fence)) end++;
    if (SHELL_LANGUAGES.has(language)) {
      blocks.push({
        line: i + 1,
        lines: lines.slice(i + 1, end).map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line)),
        notRun: notRunReason(lines, i),
      });
    }
    i = end;
  }
  return blocks;
}

function notRunReason(lines: string[], fenceIndex: number): string | undefined {
  let i = fenceIndex - 1;
  while (i >= 0 && lines[i].trim() === "") i--;
  return i >= 0 ? NOT_RUN.exec(lines[i].trim())?.[1] : undefined;
}

/**
 * Splits a block into steps: command lines, each run ended by `#` comment lines that
 * together read as JSON (the output shown for those commands). Comments that are not
 * JSON are ordinary comments and stay in the script.
 */
export function blockSteps(block: ShellBlock): Step[] {
  const steps: Step[] = [];
  let commands: { line: number; text: string }[] = [];
  const { lines } = block;
  for (let i = 0; i < lines.length;) {
    if (!lines[i].startsWith("#") || commands.length === 0) {
      if (lines[i].trim() !== "") commands.push({ line: block.line + 1 + i, text: lines[i] });
      i++;
      continue;
    }
    const output = shownOutput(lines, i);
    if (output) {
      steps.push(toStep(commands, output.json));
      commands = [];
      i = output.end;
    } else {
      commands.push({ line: block.line + 1 + i, text: lines[i] });
      i++;
    }
  }
  if (commands.length > 0) steps.push(toStep(commands, undefined));
  return steps;
}

/** The shortest run of `#` lines from `start` that reads as a JSON object or array, and the index after it. */
function shownOutput(lines: string[], start: number): { json: unknown; end: number } | undefined {
  const text: string[] = [];
  for (let end = start; end < lines.length && lines[end].startsWith("#");) {
    text.push(lines[end++].replace(/^#\s?/, ""));
    const json = parseJson(text.join("\n"));
    if (json !== undefined) return { json, end };
  }
  return undefined;
}

function toStep(commands: { line: number; text: string }[], expected: unknown): Step {
  return { line: commands[0].line, script: commands.map((c) => c.text).join("\n"), expected };
}

/** The JSON object or array `text` holds; undefined for anything else (a comment in words, a bare number). */
function parseJson(text: string): unknown {
  if (!/^\s*[[{]/.test(text)) return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/;

/**
 * Where `actual` differs from the output shown: objects need the same keys, arrays the
 * same length, numbers, booleans and null the same value. A shown string with `...` in it
 * matches any text in place of each `...` ("prj_..."); a shown RFC 3339 timestamp matches
 * any timestamp written the same way (whole seconds or fractions); other strings must be equal.
 */
export function shapeMismatches(expected: unknown, actual: unknown, path = "$"): string[] {
  const shown = (value: unknown) => JSON.stringify(value);
  if (typeof expected === "string") {
    return typeof actual === "string" && stringMatches(expected, actual)
      ? []
      : [`${path}: shown ${shown(expected)}, got ${shown(actual)}`];
  }
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) {
      return [`${path}: shown ${expected.length} items, got ${shown(actual)}`];
    }
    return expected.flatMap((item, i) => shapeMismatches(item, actual[i], `${path}[${i}]`));
  }
  if (expected !== null && typeof expected === "object") {
    if (actual === null || typeof actual !== "object" || Array.isArray(actual)) {
      return [`${path}: shown an object, got ${shown(actual)}`];
    }
    const keys = new Set([...Object.keys(expected), ...Object.keys(actual)]);
    return [...keys].flatMap((key) => {
      if (!(key in expected)) return [`${path}.${key}: not shown, got ${shown((actual as any)[key])}`];
      if (!(key in actual)) return [`${path}.${key}: shown, but missing from the answer`];
      return shapeMismatches((expected as any)[key], (actual as any)[key], `${path}.${key}`);
    });
  }
  return expected === actual ? [] : [`${path}: shown ${shown(expected)}, got ${shown(actual)}`];
}

function stringMatches(expected: string, actual: string): boolean {
  if (expected.includes("...")) {
    const parts = expected.split("...").map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
    return new RegExp(`^${parts.join("[^]*")}$`).test(actual);
  }
  const timestamp = TIMESTAMP.exec(expected);
  if (timestamp) {
    const match = TIMESTAMP.exec(actual);
    return match !== null && (match[1] === undefined) === (timestamp[1] === undefined);
  }
  return expected === actual;
}
