import { createTestDatabase, type TestDatabase } from '@kairos/testing';
import { EPOCH_MS } from './lease/sql';

/** The numeric form EPOCH_MS replaced: exact by construction, and slow. */
const NUMERIC_EPOCH_MS = (expression: string) => `floor(extract(epoch FROM ${expression}) * 1000)::float8`;

describe('EPOCH_MS (float8 epoch milliseconds of a timestamptz)', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await createTestDatabase();
  });
  afterAll(async () => {
    await db.drop();
  });

  /** Instants whose float8 and numeric epoch milliseconds differ, among `sample`. */
  async function mismatches(sample: string): Promise<Array<{ t: string; fast: number; exact: number }>> {
    const { rows } = await db.pool.query(
      `SELECT t::text AS t, ${EPOCH_MS('t')} AS fast, ${NUMERIC_EPOCH_MS('t')} AS exact
       FROM (${sample}) s(t)
       WHERE ${EPOCH_MS('t')} IS DISTINCT FROM ${NUMERIC_EPOCH_MS('t')}
       LIMIT 5`,
    );
    return rows;
  }

  it('truncates to the same whole millisecond as the numeric form, for random microsecond instants from 1900 to 2105', async () => {
    // 300,000 instants spread over two centuries, each with random microseconds (so sub-millisecond parts too).
    const sample = `SELECT timestamptz '1900-01-01 00:00:00+00' + make_interval(secs => floor(random() * 6500000000000000)::bigint / 1000000.0)
                    FROM generate_series(1, 300000)`;
    expect(await mismatches(sample)).toEqual([]);
  });

  it('agrees on the edges of a millisecond: exact boundaries, a microsecond either side, before and after 1970', async () => {
    const sample = `SELECT base + make_interval(secs => offset_us / 1000000.0)
                    FROM (SELECT timestamptz '2030-06-01 12:00:00+00' + make_interval(secs => g * 0.001) AS base FROM generate_series(-2000, 2000) g
                          UNION ALL SELECT timestamptz '1969-12-31 23:59:59+00' + make_interval(secs => g * 0.001) FROM generate_series(-2000, 2000) g
                          UNION ALL SELECT timestamptz '2105-12-31 23:59:59+00' + make_interval(secs => g * 0.001) FROM generate_series(-2000, 2000) g) b,
                         (VALUES (-1), (0), (1), (999), (-999)) o(offset_us)`;
    expect(await mismatches(sample)).toEqual([]);
  });

  it('is a float8 the driver hands to JavaScript as a number', async () => {
    const { rows } = await db.pool.query(`SELECT ${EPOCH_MS(`timestamptz '2030-01-01 00:00:00.123999+00'`)} AS ms`);
    expect(rows[0].ms).toBe(Date.parse('2030-01-01T00:00:00.123Z'));
  });
});
