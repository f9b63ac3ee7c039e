/**
 * Previews over both transports against a live coordinator: the next
 * occurrences of a schedule (POST /schedules/preview, PreviewSchedule) and of a
 * job (GET /jobs/{id}/upcoming, ListUpcoming), DST marks included, and the
 * field named for every bad input.
 */
import { createKairosClient, type KairosClient } from '@kairos/client';
import { createTestDatabase, restClient, startCoordinatorProcess, stopAll, type TestDatabase } from '@kairos/testing';

describe('schedule previews, end to end', () => {
  let db: TestDatabase;
  let api: ReturnType<typeof restClient>;
  let client: KairosClient;

  beforeAll(async () => {
    db = await createTestDatabase();
    const coordinator = await startCoordinatorProcess({ databaseUrl: db.url });
    api = restClient(coordinator.httpUrl);
    client = createKairosClient({ address: coordinator.grpcAddress });
  });
  afterAll(async () => {
    client?.close();
    await stopAll();
    await db?.drop();
  });

  it('previews Europe/Berlin across the March 2027 spring-forward, the same over REST and gRPC', async () => {
    const request = { schedule: '30 2 * * *', timezone: 'Europe/Berlin', count: 4, from: '2027-03-26T00:00:00Z' };
    const rest = await api.call<any>('POST', '/schedules/preview', request);
    expect(rest.status).toBe(200);
    expect(rest.body).toEqual({
      schedule: '30 2 * * *',
      timezone: 'Europe/Berlin',
      occurrences: [
        { at: '2027-03-26T01:30:00.000Z', local: '2027-03-26T02:30:00', offset: '+01:00', dst: null, scheduledLocal: null },
        { at: '2027-03-27T01:30:00.000Z', local: '2027-03-27T02:30:00', offset: '+01:00', dst: null, scheduledLocal: null },
        { at: '2027-03-28T01:30:00.000Z', local: '2027-03-28T03:30:00', offset: '+02:00', dst: 'gap-shifted', scheduledLocal: '2027-03-28T02:30:00' },
        { at: '2027-03-29T00:30:00.000Z', local: '2027-03-29T02:30:00', offset: '+02:00', dst: null, scheduledLocal: null },
      ],
    });
    const grpc = await client.previewSchedule(request);
    expect(grpc.occurrences.map((o) => ({ ...o, at: o.at?.toISOString() }))).toEqual(rest.body.occurrences);
  });

  it.each([
    [{ timezone: 'UTC' }, 'schedule'],
    [{ schedule: '61 * * * *' }, 'schedule'],
    [{ schedule: '* * * * *', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ schedule: '* * * * *', count: 0 }, 'count'],
    [{ schedule: '* * * * *', count: 1001 }, 'count'],
    [{ schedule: '* * * * *', count: '5' }, 'count'],
    [{ schedule: '* * * * *', from: 'yesterday' }, 'from'],
    [{ schedule: '* * * * *', until: '2030-01-01T00:00:00Z' }, 'until'],
  ])('refuses %j naming %s', async (body, field) => {
    const answer = await api.call<any>('POST', '/schedules/preview', body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toMatchObject({ code: 'invalid_argument', field });
  });

  it("lists a job's upcoming occurrences from the one it waits for; a one-off job's is its runAt", async () => {
    const recurring = await api.createJob({ task: 'sleep', schedule: '0 9 * * *', timezone: 'America/New_York', payload: { seconds: 0 } });
    const job = (await api.getJob(recurring.body.jobId)).body;
    const upcoming = await api.call<any>('GET', `/jobs/${job.jobId}/upcoming?count=3`);
    expect(upcoming.status).toBe(200);
    expect(upcoming.body).toMatchObject({ jobId: job.jobId, schedule: '0 9 * * *', timezone: 'America/New_York' });
    expect(upcoming.body.occurrences).toHaveLength(3);
    expect(upcoming.body.occurrences[0].at).toBe(job.occurrenceAt);
    for (const occurrence of upcoming.body.occurrences) expect(occurrence.local).toMatch(/T09:00:00$/);
    const viaGrpc = await client.listUpcoming(job.jobId, { count: 3 });
    expect(viaGrpc.occurrences.map((o) => o.at?.toISOString())).toEqual(upcoming.body.occurrences.map((o: { at: string }) => o.at));

    const runAt = '2031-05-06T07:08:09.000Z';
    const oneOff = await api.createJob({ task: 'sleep', runAt, payload: { seconds: 0 } });
    const single = await api.call<any>('GET', `/jobs/${oneOff.body.jobId}/upcoming`);
    expect(single.body).toMatchObject({ schedule: null, occurrences: [{ at: runAt, dst: null }] });
    expect((await api.cancelJob(oneOff.body.jobId)).status).toBe(204);
    expect((await api.call<any>('GET', `/jobs/${oneOff.body.jobId}/upcoming`)).body.occurrences).toEqual([]);

    expect((await api.call<any>('GET', `/jobs/${job.jobId}/upcoming?count=abc`)).body.error).toMatchObject({ field: 'count' });
    expect((await api.call<any>('GET', '/jobs/0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d/upcoming')).status).toBe(404);
  });
});
