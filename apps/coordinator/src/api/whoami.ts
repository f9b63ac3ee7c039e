/**
 * `GET /whoami`: the caller's token as the coordinator sees it — its
 * namespace, role and name. Any valid token may ask (an agent token too: it
 * only learns about itself). The web console uses it to decide which actions
 * to offer; the API still checks every call on its own.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Principal } from './auth';
import type { WhoamiView } from './views';

export function registerWhoami(app: FastifyInstance, caller: (request: FastifyRequest) => Principal): void {
  app.get('/whoami', async (request): Promise<WhoamiView> => {
    const principal = caller(request);
    return { namespace: principal.namespace, role: principal.role, tokenName: principal.tokenName, tokenId: principal.tokenId };
  });
}
