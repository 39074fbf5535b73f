import { listScmInstallations, type Db } from '@floe/meta';
import type { FileCache, CachedFile, FileKey } from './file-cache.ts';
import { HostError, type ScmHost } from './host.ts';
import type { InstallationTokens } from './tokens.ts';

/**
 * The stack-frame source lookup (spec 2, source-context rules 1–7). It never throws: every way of
 * not serving a snippet is a `reason`, so a frame without source never fails the trace, error or
 * profile view that asked for it.
 */

export const UNAVAILABLE_REASONS = ['not_configured', 'no_installation', 'not_found', 'not_a_file', 'too_large', 'undecodable', 'line_out_of_range', 'scm_error', 'internal'] as const;
export type UnavailableReason = (typeof UNAVAILABLE_REASONS)[number];

export interface SourceContextRequest {
  /** owner/name or a URL of the repository; absent: the tenant's linked repositories are probed. */
  repository?: string;
  /** absent: the default branch (the answer then carries ref null). */
  ref?: string;
  path: string;
  line?: number;
  context_lines?: number;
}

export type SourceContext =
  | { status: 'available'; repository: string; ref: string | null; path: string; url: string; line: number | null; start_line: number; lines: { number: number; text: string }[] }
  | { status: 'unavailable'; reason: UnavailableReason };

/** Spec 2, Limits. */
export const MAX_FILE_BYTES = 512 * 1024;
export const MAX_PROBED_REPOSITORIES = 25;
export const DEFAULT_CONTEXT_LINES = 5;
export const MAX_CONTEXT_LINES = 100;

const unavailable = (reason: UnavailableReason): SourceContext => ({ status: 'unavailable', reason });

// GitHub owner and repository names: letters, digits, '-', '_' and '.'.
const NAME = /^[A-Za-z0-9_.-]{1,100}$/;

/** owner/name from "owner/name", an https URL, "host/owner/name" or an ssh remote; undefined when none can be read. */
export function parseRepository(input: string): string | undefined {
  let s = input.trim();
  const ssh = /^[\w.-]+@[^:/]+:(.+)$/.exec(s);
  if (ssh) s = ssh[1]!;
  else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(s)) {
    try {
      s = new URL(s).pathname;
    } catch {
      return undefined;
    }
  }
  const parts = s.split('/').filter(Boolean);
  // Owners never contain a dot, hosts do: "github.com/owner/name" names its host first.
  if (parts.length >= 3 && parts[0]!.includes('.')) parts.shift();
  if (parts.length < 2) return undefined;
  const owner = parts[0]!;
  const name = parts[1]!.replace(/\.git$/, '');
  return NAME.test(owner) && NAME.test(name) && name !== '.' && name !== '..' ? `${owner}/${name}` : undefined;
}

/** The path inside the repository, or undefined when it cannot name a file there. */
export function normalisePath(path: string): string | undefined {
  const parts = path.replace(/\\/g, '/').split('/').filter((p) => p !== '' && p !== '.');
  if (parts.length === 0 || parts.some((p) => p === '..' || p.includes('\0'))) return undefined;
  return parts.join('/');
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** A file's lines, or why it cannot be served as text (binary or invalid UTF-8). */
export function decodeLines(bytes: Buffer): readonly string[] | undefined {
  // A NUL byte is valid UTF-8 but marks a binary file.
  if (bytes.includes(0)) return undefined;
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return undefined;
  }
  const lines = text.split(/\r?\n/);
  if (lines.length > 1 && lines[lines.length - 1] === '') lines.pop();
  return lines;
}

interface Candidate {
  installationId: number;
  repository: string;
}

export interface SourceContextDeps {
  db: Db;
  host: ScmHost;
  tokens: InstallationTokens;
  cache: FileCache;
  onHostError?: (err: HostError, candidate: Candidate) => void;
}

export async function lookupSourceContext(deps: SourceContextDeps, tenantId: string, req: SourceContextRequest): Promise<SourceContext> {
  const installations = await listScmInstallations(deps.db, tenantId);
  if (installations.length === 0) return unavailable('no_installation');
  const path = normalisePath(req.path);
  let candidates: Candidate[];
  if (req.repository !== undefined) {
    // Rule 2: only the caller's own links are searched, so another tenant's repository looks
    // exactly like one nobody linked.
    const wanted = parseRepository(req.repository)?.toLowerCase();
    const inst = wanted === undefined ? undefined : installations.find((i) => i.repositories.some((r) => r.toLowerCase() === wanted));
    if (!inst) return unavailable('no_installation');
    candidates = [{ installationId: inst.installationId, repository: inst.repositories.find((r) => r.toLowerCase() === wanted)! }];
  } else {
    // Rule 3: the first 25 linked repositories, in link order and then the host's order.
    candidates = installations.flatMap((i) => i.repositories.map((repository) => ({ installationId: i.installationId, repository }))).slice(0, MAX_PROBED_REPOSITORIES);
    if (candidates.length === 0) return unavailable('not_found');
  }
  if (path === undefined) return unavailable('not_found');

  let firstContentReason: UnavailableReason | undefined;
  let hostFailed = false;
  for (const c of candidates) {
    const key: FileKey = { installationId: c.installationId, repository: c.repository, ref: req.ref, path };
    let file: CachedFile;
    try {
      file = await fetchFile(deps, key);
    } catch (err) {
      if (!(err instanceof HostError)) throw err;
      deps.onHostError?.(err, c);
      hostFailed = true;
      continue;
    }
    if (file.kind === 'file') return snippet(c.repository, req, path, file);
    if (file.reason !== 'not_found') firstContentReason ??= file.reason;
  }
  return unavailable(firstContentReason ?? (hostFailed ? 'scm_error' : 'not_found'));
}

async function fetchFile(deps: SourceContextDeps, key: FileKey): Promise<CachedFile> {
  const cached = deps.cache.get(key);
  if (cached) return cached;
  const token = await deps.tokens.get(key.installationId);
  const got = await deps.host.file(token, key.repository, key.path, key.ref, MAX_FILE_BYTES);
  let value: CachedFile;
  if (got.kind === 'file') {
    const lines = decodeLines(got.bytes);
    value = lines === undefined ? { kind: 'unavailable', reason: 'undecodable' } : { kind: 'file', lines, url: got.url };
  } else {
    value = { kind: 'unavailable', reason: got.kind };
  }
  deps.cache.set(key, value);
  return value;
}

function snippet(repository: string, req: SourceContextRequest, path: string, file: Extract<CachedFile, { kind: 'file' }>): SourceContext {
  const context = Math.min(req.context_lines ?? DEFAULT_CONTEXT_LINES, MAX_CONTEXT_LINES);
  const line = req.line ?? null;
  if (line !== null && (line < 1 || line > file.lines.length)) return unavailable('line_out_of_range');
  // Without a line the top of the file is shown, as much as a window around a line would be.
  const start = line === null ? 1 : Math.max(1, line - context);
  const end = line === null ? Math.min(file.lines.length, 2 * context + 1) : Math.min(file.lines.length, line + context);
  const lines = file.lines.slice(start - 1, end).map((text, i) => ({ number: start + i, text }));
  return {
    status: 'available',
    repository,
    ref: req.ref ?? null,
    path,
    url: line === null ? file.url : `${file.url}#L${line}`,
    line,
    start_line: start,
    lines,
  };
}
