/**
 * Server reflection lists every service the coordinator serves, the standard
 * health service included, as grpcurl's `list` would ask for them.
 */
import * as grpc from '@grpc/grpc-js';
import { createTestDatabase, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';

describe('gRPC server reflection', () => {
  let db: TestDatabase;
  let address: string;

  beforeAll(async () => {
    db = await createTestDatabase();
    address = (await startCoordinatorProcess({ databaseUrl: db.url })).grpcAddress;
  });
  afterAll(async () => {
    await stopAll();
    await db?.drop();
  });

  it('lists the Kairos services and grpc.health.v1.Health', async () => {
    // ServerReflectionRequest{list_services: ""} is field 7, length 0; the answer names each service as a plain string.
    const Client = grpc.makeGenericClientConstructor(
      {
        info: {
          path: '/grpc.reflection.v1.ServerReflection/ServerReflectionInfo',
          requestStream: true,
          responseStream: true,
          requestSerialize: (bytes: Buffer) => bytes,
          requestDeserialize: (bytes: Buffer) => bytes,
          responseSerialize: (bytes: Buffer) => bytes,
          responseDeserialize: (bytes: Buffer) => bytes,
        },
      },
      'ServerReflection',
    );
    const client = new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & {
      info(): grpc.ClientDuplexStream<Buffer, Buffer>;
    };
    try {
      const call = client.info();
      const answer = new Promise<string>((resolve, reject) => {
        call.on('data', (bytes: Buffer) => resolve(bytes.toString('latin1')));
        call.on('error', reject);
      });
      call.write(Buffer.from([0x3a, 0x00]));
      const text = await answer;
      call.end();
      for (const service of ['kairos.v1.JobService', 'kairos.v1.AgentService', 'kairos.v1.TokenService', 'kairos.v1.WebhookService', 'grpc.health.v1.Health']) {
        expect(text).toContain(service);
      }
    } finally {
      client.close();
    }
  });
});
