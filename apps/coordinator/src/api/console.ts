/**
 * The operators' web console (docs/operations.md, "Console"): static files
 * built by tools/scripts/build-console.mjs into dist/ui next to this module,
 * served under /ui without a token — they hold no data; every API call the
 * page makes carries the operator's token and is checked like any other.
 *
 * The files are read and gzipped once, at start. index.html is revalidated on
 * every load; the script and style sheet have a content hash in their names
 * and are cached for a year. Every answer carries a Content-Security-Policy
 * that allows scripts, styles and API calls from this origin only (no inline
 * script or style, no framing).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, errorBody } from './errors';

/** The routes, for the list of routes that need no token (rest.ts). */
export const CONSOLE_ROUTES = ['/ui', '/ui/', '/ui/:file'] as const;

/** Where the build puts the console: dist/ui, beside dist/api. */
export const CONSOLE_DIR = path.join(__dirname, '..', 'ui');

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

interface Asset {
  type: string;
  raw: Buffer;
  gzipped: Buffer;
  cacheControl: string;
}

/** The console's files by name; empty when the console was not built. */
export function loadConsole(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  if (!existsSync(dir)) return assets;
  for (const name of readdirSync(dir)) {
    const type = TYPES[path.extname(name)];
    if (type === undefined) continue;
    const raw = readFileSync(path.join(dir, name));
    // Hashed names (app-3f2a9c1b.js) never change content: cache them for good.
    const immutable = /-[0-9a-f]{8,}\.[a-z]+$/.test(name);
    assets.set(name, {
      type,
      raw,
      gzipped: gzipSync(raw, { level: 9 }),
      cacheControl: immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    });
  }
  return assets;
}

export function registerConsole(app: FastifyInstance, dir: string = CONSOLE_DIR): void {
  const assets = loadConsole(dir);
  const serve = (request: FastifyRequest, reply: FastifyReply, name: string) => {
    const asset = assets.get(name);
    reply
      .header('content-security-policy', CONSOLE_CSP)
      .header('x-content-type-options', 'nosniff')
      .header('referrer-policy', 'no-referrer')
      .header('x-frame-options', 'DENY');
    if (asset === undefined) {
      const message = assets.size === 0 ? 'the console is not built here (npm run build builds it)' : `no console file ${name}`;
      return reply.code(404).send(errorBody(new ApiError('not_found', message, undefined, undefined, 'NOT_FOUND')));
    }
    const accepts = String(request.headers['accept-encoding'] ?? '');
    const gzip = /\bgzip\b/.test(accepts) && asset.gzipped.length < asset.raw.length;
    reply.header('content-type', asset.type).header('cache-control', asset.cacheControl).header('vary', 'accept-encoding');
    if (gzip) reply.header('content-encoding', 'gzip');
    return reply.send(gzip ? asset.gzipped : asset.raw);
  };
  app.get('/ui', async (_request, reply) => reply.redirect('/ui/', 308));
  app.get('/ui/', async (request, reply) => serve(request, reply, 'index.html'));
  app.get<{ Params: { file: string } }>('/ui/:file', async (request, reply) => serve(request, reply, request.params.file));
}
