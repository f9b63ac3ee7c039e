import { parseCron } from './cron-schedule';
import { previewOccurrences } from './preview';

const berlin = (expression: string) => parseCron(expression, 'Europe/Berlin');
const brief = (occurrences: ReturnType<typeof previewOccurrences>) =>
  occurrences.map((o) => [o.at.toISOString(), `${o.local}${o.offset}`, o.dst, o.scheduledLocal]);

describe('previewOccurrences', () => {
  it('marks the occurrence a spring-forward gap shifted (Europe/Berlin, 28 March 2027)', () => {
    expect(brief(previewOccurrences(berlin('30 2 * * *'), new Date('2027-03-26T00:00:00Z'), 4))).toEqual([
      ['2027-03-26T01:30:00.000Z', '2027-03-26T02:30:00+01:00', null, null],
      ['2027-03-27T01:30:00.000Z', '2027-03-27T02:30:00+01:00', null, null],
      ['2027-03-28T01:30:00.000Z', '2027-03-28T03:30:00+02:00', 'gap-shifted', '2027-03-28T02:30:00'],
      ['2027-03-29T00:30:00.000Z', '2027-03-29T02:30:00+02:00', null, null],
    ]);
  });

  it('an hourly schedule across the gap: no hour is shifted, the missing reading simply does not exist', () => {
    expect(brief(previewOccurrences(berlin('0 * * * *'), new Date('2027-03-28T00:00:00Z'), 3))).toEqual([
      ['2027-03-28T00:00:00.000Z', '2027-03-28T01:00:00+01:00', null, null],
      ['2027-03-28T01:00:00.000Z', '2027-03-28T03:00:00+02:00', null, null],
      ['2027-03-28T02:00:00.000Z', '2027-03-28T04:00:00+02:00', null, null],
    ]);
  });

  it('marks the first pass of a repeated hour, and the second pass an hourly schedule keeps (31 October 2027)', () => {
    expect(brief(previewOccurrences(berlin('30 2 * * *'), new Date('2027-10-30T12:00:00Z'), 2))).toEqual([
      ['2027-10-31T00:30:00.000Z', '2027-10-31T02:30:00+02:00', 'repeated-first', null],
      ['2027-11-01T01:30:00.000Z', '2027-11-01T02:30:00+01:00', null, null],
    ]);
    expect(brief(previewOccurrences(berlin('0 * * * *'), new Date('2027-10-30T23:00:00Z'), 4))).toEqual([
      ['2027-10-30T23:00:00.000Z', '2027-10-31T01:00:00+02:00', null, null],
      ['2027-10-31T00:00:00.000Z', '2027-10-31T02:00:00+02:00', 'repeated-first', null],
      ['2027-10-31T01:00:00.000Z', '2027-10-31T02:00:00+01:00', 'repeated-elapsed', null],
      ['2027-10-31T02:00:00.000Z', '2027-10-31T03:00:00+01:00', null, null],
    ]);
  });

  it('starts at `from` inclusive, stops at count, and caps the count', () => {
    const utc = parseCron('*/10 * * * * *');
    const from = new Date('2030-01-01T00:00:00Z');
    expect(previewOccurrences(utc, from, 2).map((o) => o.at.toISOString())).toEqual(['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:10.000Z']);
    expect(previewOccurrences(utc, from, 0)).toEqual([]);
    expect(previewOccurrences(utc, from, 5000)).toHaveLength(1000);
    expect(previewOccurrences(utc, from, 1)[0]).toMatchObject({ local: '2030-01-01T00:00:00', offset: '+00:00', dst: null });
  });

  it('writes negative and fractional offsets', () => {
    expect(previewOccurrences(parseCron('0 9 * * *', 'America/St_Johns'), new Date('2030-01-01T00:00:00Z'), 1)[0]).toMatchObject({
      local: '2030-01-01T09:00:00',
      offset: '-03:30',
    });
  });
});
