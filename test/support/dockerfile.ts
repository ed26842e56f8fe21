// The Dockerfile and .dockerignore read as Docker reads them, as far as ours need: the tests of
// test/container/ follow these files instead of repeating what they say.

/** One instruction: `RUN npm ci` is { keyword: 'RUN', flags: {}, args: 'npm ci' }. */
export interface Instruction {
  keyword: string;
  /** The `--name=value` options before the arguments (`COPY --from=build`, `RUN --mount=…`). */
  flags: Record<string, string>;
  /** The rest of the line, continuation lines joined. */
  args: string;
}

export interface Stage {
  /** The image it starts from (`node:20-bookworm-slim`). */
  base: string;
  /** Its name (`FROM … AS build`), if any. */
  name?: string;
  /** Every instruction after FROM, in order. */
  instructions: Instruction[];
}

/** The stages of a Dockerfile, in order; the last is the image. Parser directives and comments are skipped. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  let pending = '';
  for (const line of text.split('\n')) {
    // Comments are whole lines, also between continuation lines.
    if (/^\s*#/.test(line)) continue;
    pending += line;
    if (pending.endsWith('\\')) {
      pending = `${pending.slice(0, -1)} `;
      continue;
    }
    const instruction = pending.trim();
    pending = '';
    if (instruction === '') continue;
    const parsed = parseInstruction(instruction);
    if (parsed.keyword === 'FROM') {
      const [base, as, name] = parsed.args.split(/\s+/);
      if (base === undefined || (as !== undefined && (as.toUpperCase() !== 'AS' || name === undefined))) {
        throw new Error(`Dockerfile: cannot read "${instruction}"`);
      }
      stages.push({ base, name, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (!stage) throw new Error(`Dockerfile: "${instruction}" comes before any FROM`);
    stage.instructions.push(parsed);
  }
  if (pending.trim() !== '') throw new Error('Dockerfile: the last line ends with a continuation');
  return stages;
}

function parseInstruction(line: string): Instruction {
  const match = /^(\S+)\s*(.*)$/s.exec(line);
  if (!match?.[1]) throw new Error(`Dockerfile: cannot read "${line}"`);
  const keyword = match[1].toUpperCase();
  let args = match[2] ?? '';
  const flags: Record<string, string> = {};
  for (;;) {
    const flag = /^--([a-z-]+)(?:=(\S*))?\s*/.exec(args);
    if (!flag?.[1]) break;
    flags[flag[1]] = flag[2] ?? '';
    args = args.slice(flag[0].length);
  }
  return { keyword, flags, args: args.trim() };
}

/** The instructions of a stage with this keyword. */
export function instructionsOf(stage: Stage, keyword: string): Instruction[] {
  return stage.instructions.filter((instruction) => instruction.keyword === keyword);
}

/** The variables a stage's ENV instructions set (`ENV A=1 B="two words"`), later ones winning. */
export function envOf(stage: Stage): Record<string, string> {
  const env: Record<string, string> = {};
  for (const { args } of instructionsOf(stage, 'ENV')) {
    const pairs = args.match(/[A-Za-z_][A-Za-z0-9_]*=(?:"(?:[^"\\]|\\.)*"|\S*)/g) ?? [];
    if (pairs.join(' ') !== args.replace(/\s+/g, ' ')) throw new Error(`Dockerfile: cannot read "ENV ${args}"`);
    for (const pair of pairs) {
      const at = pair.indexOf('=');
      const raw = pair.slice(at + 1);
      env[pair.slice(0, at)] = raw.startsWith('"') ? (JSON.parse(raw) as string) : raw;
    }
  }
  return env;
}

/** An exec-form argument list (`CMD ["node", "dist/main.js"]`); a shell form is refused. */
export function execForm(args: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(`not the exec form (a JSON array): ${args}`);
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((item) => typeof item === 'string')) {
    throw new Error(`not the exec form (a JSON array of strings): ${args}`);
  }
  return parsed;
}

/** The HEALTHCHECK's command (exec form) and options (`--interval=10s` …); throws for any other form. */
export function healthcheckOf(instruction: Instruction): { command: string[]; flags: Record<string, string> } {
  const command = /^CMD\s+(.*)$/s.exec(instruction.args)?.[1];
  if (command === undefined) throw new Error(`HEALTHCHECK without CMD: ${instruction.args}`);
  return { command: execForm(command), flags: instruction.flags };
}

/**
 * Whether .dockerignore's `patterns` leave `path` (relative, with `/`) out of the build context:
 * as Docker decides it, the last pattern that matches the path or one of its folders wins, and
 * `!` patterns bring back what earlier ones left out. Patterns are relative to the context's root;
 * `*` and `?` stay within a path segment, `**` spans any number of them.
 */
export function isDockerIgnored(path: string, patterns: readonly string[]): boolean {
  const segments = path.split('/');
  const candidates = segments.map((_, index) => segments.slice(0, index + 1).join('/'));
  let ignored = false;
  for (const line of patterns) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const keep = trimmed.startsWith('!');
    const pattern = (keep ? trimmed.slice(1) : trimmed).replace(/^\/+/, '').replace(/^\.\//, '');
    const regex = patternRegex(pattern);
    if (candidates.some((candidate) => regex.test(candidate))) ignored = !keep;
  }
  return ignored;
}

function patternRegex(pattern: string): RegExp {
  let source = '';
  for (let index = 0; index < pattern.length; index++) {
    const char = pattern[index] as string;
    if (char === '*' && pattern[index + 1] === '*') {
      // `**/` is any number of folders (none too); a final `**` is anything.
      if (pattern[index + 2] === '/') {
        source += '(?:.*/)?';
        index += 2;
      } else {
        source += '.*';
        index += 1;
      }
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return new RegExp(`^${source.replace(/\/+$/, '')}$`);
}
