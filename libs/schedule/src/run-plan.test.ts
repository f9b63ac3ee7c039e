import { parseCron } from './cron-schedule';
import { continueStretch, planNextRun, type RunPlan, type RunPlanInput } from './run-plan';

const T0 = Date.parse('2030-01-01T00:00:00Z');
const minute = (n: number) => new Date(T0 + n * 60_000);
const everyMinute = parseCron('* * * * *');

/** The plan, with instants as minutes after T0, for readable expectations. */
function plan(input: Partial<RunPlanInput> & Pick<RunPlanInput, 'misfire' | 'overlap'>): unknown {
  const result: RunPlan = planNextRun(everyMinute, { served: minute(0), now: minute(10), runStartedAt: minute(0), ...input });
  const m = (date: Date | null) => (date === null ? null : (date.getTime() - T0) / 60_000);
  return {
    next: m(result.next),
    reason: result.reason,
    runThrough: m(result.runThrough),
    skipped: result.skipped.map((s) => [s.reason, s.listed.map(m), s.count]),
    decidedThrough: m(result.decidedThrough),
  };
}

describe('planNextRun', () => {
  it('nothing missed: the next occurrence after the one served', () => {
    expect(plan({ misfire: 'fire-once', overlap: 'skip', now: new Date(T0 + 30_000) })).toMatchObject({ next: 1, reason: null, runThrough: null, skipped: [] });
  });

  describe('a run that outlasted its interval (started on time at 0, ended at 10:00)', () => {
    it('skip: nothing that came due meanwhile runs; each is recorded against the overlap policy', () => {
      expect(plan({ misfire: 'fire-once', overlap: 'skip' })).toEqual({
        next: 11,
        reason: null,
        runThrough: null,
        skipped: [['overlap:skip', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 10]],
        decidedThrough: 10,
      });
    });
    it('buffer-one: the first that came due runs now, the rest are skipped', () => {
      expect(plan({ misfire: 'fire-once', overlap: 'buffer-one' })).toEqual({
        next: 1,
        reason: 'overlap:buffer-one',
        runThrough: null,
        skipped: [['overlap:buffer-one', [2, 3, 4, 5, 6, 7, 8, 9, 10], 9]],
        decidedThrough: 10,
      });
    });
    it('buffer-all: every one runs in order; beyond the bound, the oldest are skipped', () => {
      expect(plan({ misfire: 'fire-once', overlap: 'buffer-all' })).toMatchObject({ next: 1, reason: 'overlap:buffer-all', runThrough: 10, skipped: [] });
      expect(plan({ misfire: 'fire-once', overlap: 'buffer-all', bufferLimit: 3 })).toMatchObject({
        next: 8,
        runThrough: 10,
        skipped: [['overlap:buffer-all', [1, 2, 3, 4, 5, 6, 7], 7]],
      });
    });
    it('cancel-other: the newest replaces the rest', () => {
      expect(plan({ misfire: 'fire-once', overlap: 'cancel-other' })).toMatchObject({
        next: 10,
        reason: 'overlap:cancel-other',
        runThrough: null,
        skipped: [['overlap:cancel-other', [1, 2, 3, 4, 5, 6, 7, 8, 9], 9]],
      });
    });
  });

  describe('a run that started late (claimed at 6:30 for occurrence 0, ended at 10:00)', () => {
    const late = { runStartedAt: new Date(T0 + 6.5 * 60_000) };
    it('fire-once runs the latest missed before the start, then what the overlap policy keeps', () => {
      expect(plan({ ...late, misfire: 'fire-once', overlap: 'skip' })).toEqual({
        next: 6,
        reason: 'misfire:fire-once',
        runThrough: null,
        skipped: [
          ['overlap:skip', [7, 8, 9, 10], 4],
          ['misfire:fire-once', [1, 2, 3, 4, 5], 5],
        ],
        decidedThrough: 10,
      });
      expect(plan({ ...late, misfire: 'fire-once', overlap: 'buffer-all' })).toMatchObject({ next: 6, runThrough: 10 });
    });
    it('catch-up runs every missed one in order, bounded by the window; skip runs none', () => {
      expect(plan({ ...late, misfire: 'catch-up', overlap: 'skip' })).toMatchObject({
        next: 1,
        reason: 'misfire:catch-up',
        runThrough: 6,
        skipped: [['overlap:skip', [7, 8, 9, 10], 4]],
      });
      expect(plan({ ...late, misfire: 'catch-up', overlap: 'skip', catchupWindowMs: 7 * 60_000 })).toMatchObject({
        next: 3,
        runThrough: 6,
        skipped: [['overlap:skip', [7, 8, 9, 10], 4], ['misfire:catch-up', [1, 2], 2]],
      });
      expect(plan({ ...late, misfire: 'skip', overlap: 'buffer-one' })).toMatchObject({
        next: 7,
        reason: 'overlap:buffer-one',
        skipped: [
          ['overlap:buffer-one', [8, 9, 10], 3],
          ['misfire:skip', [1, 2, 3, 4, 5, 6], 6],
        ],
      });
    });
    it('cancel-other drops the late ones too: only the newest runs', () => {
      expect(plan({ ...late, misfire: 'catch-up', overlap: 'cancel-other' })).toMatchObject({ next: 10, runThrough: null });
    });
    it('cancel-other with nothing come due during the run: the late ones follow the misfire policy', () => {
      // The run started at 6:30 and ended at 6:45, before occurrence 7: nothing replaces 1..6.
      const quick = { ...late, now: new Date(T0 + 6.75 * 60_000) };
      expect(plan({ ...quick, misfire: 'fire-once', overlap: 'cancel-other' })).toEqual({
        next: 6,
        reason: 'misfire:fire-once',
        runThrough: null,
        skipped: [['misfire:fire-once', [1, 2, 3, 4, 5], 5]],
        decidedThrough: 6.75,
      });
      expect(plan({ ...quick, misfire: 'catch-up', overlap: 'cancel-other' })).toMatchObject({ next: 1, reason: 'misfire:catch-up', runThrough: 6 });
      expect(plan({ ...quick, misfire: 'skip', overlap: 'cancel-other' })).toMatchObject({ next: 7, skipped: [['misfire:skip', [1, 2, 3, 4, 5, 6], 6]] });
    });
  });

  it('starts after what an earlier plan decided, so nothing is skipped twice', () => {
    // A buffer-all stretch planned at 10:00 ran 1..10; its last run, started at 12:30, ended at 14:00.
    const result = plan({ misfire: 'fire-once', overlap: 'skip', served: minute(10), decidedThrough: minute(10), runStartedAt: new Date(T0 + 12.5 * 60_000), now: minute(14) });
    expect(result).toMatchObject({ next: 12, reason: 'misfire:fire-once', skipped: [['overlap:skip', [13, 14], 2], ['misfire:fire-once', [11], 1]] });
    const later = plan({ misfire: 'fire-once', overlap: 'skip', served: minute(3), decidedThrough: minute(10), runStartedAt: minute(10), now: minute(10) });
    expect(later).toMatchObject({ next: 11, skipped: [] });
  });

  it('counts without listing every occurrence of a long stretch', () => {
    const seconds = parseCron('* * * * * *');
    const day = planNextRun(seconds, { served: new Date(T0), now: new Date(T0 + 86_400_000), runStartedAt: new Date(T0), misfire: 'fire-once', overlap: 'skip' });
    expect(day.skipped[0]).toMatchObject({ reason: 'overlap:skip', count: 86_400 });
    expect(day.skipped[0]!.listed).toHaveLength(100);
  });

  it('continues a stretch until its last occurrence', () => {
    expect(continueStretch(everyMinute, minute(3), minute(5))).toEqual({ next: minute(4), runThrough: minute(5) });
    expect(continueStretch(everyMinute, minute(4), minute(5))).toEqual({ next: minute(5), runThrough: null });
    expect(continueStretch(everyMinute, minute(5), minute(5))).toBeNull();
  });
});
