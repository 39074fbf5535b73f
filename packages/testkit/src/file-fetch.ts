import { open, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

/**
 * Node's fetch has no file:// scheme, and icebird (an independent Iceberg reader) reads metadata,
 * manifests and Parquet through fetch with HEAD and Range requests. This wraps fetch so file://
 * URLs are served from disk with 206 range replies; other URLs pass through.
 */
export function installFileFetch(): () => void {
  const original = globalThis.fetch;
  globalThis.fetch = (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (!url.startsWith('file://')) return original(input, init);
    const path = fileURLToPath(url);
    const size = (await stat(path)).size;
    const method = init?.method ?? (input instanceof Request ? input.method : 'GET');
    if (method === 'HEAD') return new Response(null, { status: 200, headers: { 'content-length': String(size) } });
    const range = new Headers(init?.headers).get('range');
    const m = range ? /bytes=(\d+)-(\d*)/.exec(range) : null;
    const start = m ? Number(m[1]) : 0;
    const end = m && m[2] ? Math.min(Number(m[2]), size - 1) : size - 1;
    const fh = await open(path, 'r');
    try {
      const buf = Buffer.alloc(Math.max(0, end - start + 1));
      await fh.read(buf, 0, buf.length, start);
      return new Response(buf, { status: m ? 206 : 200, headers: { 'content-length': String(buf.length) } });
    } finally {
      await fh.close();
    }
  }) as typeof fetch;
  return () => {
    globalThis.fetch = original;
  };
}
