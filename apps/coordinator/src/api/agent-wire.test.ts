import { MAX_RELEASE_REASON_CHARS, releaseReasonFromWire } from './agent-wire';

describe('releaseReasonFromWire', () => {
  it("keeps an agent's reason as it wrote it", () => {
    expect(releaseReasonFromWire('no free slot: the start queue did not move for 500 ms')).toBe(
      'no free slot: the start queue did not move for 500 ms',
    );
  });

  it('answers undefined for an empty or blank reason, so the default applies', () => {
    expect(releaseReasonFromWire('')).toBeUndefined();
    expect(releaseReasonFromWire(' \n\t\u0000 ')).toBeUndefined();
  });

  it('replaces control characters (a forged log line or terminal escape) with spaces', () => {
    expect(releaseReasonFromWire('busy\n{"level":"error"}\u001b[31m')).toBe('busy {"level":"error"} [31m');
  });

  it(`keeps at most ${MAX_RELEASE_REASON_CHARS} characters, never splitting a character`, () => {
    const long = '🙂'.repeat(MAX_RELEASE_REASON_CHARS + 50);
    const kept = releaseReasonFromWire(long)!;
    expect([...kept]).toHaveLength(MAX_RELEASE_REASON_CHARS);
    expect(kept).toBe('🙂'.repeat(MAX_RELEASE_REASON_CHARS));
  });
});
