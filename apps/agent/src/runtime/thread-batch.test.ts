import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { batchingPoster, unbatching } from './thread-batch';
import type { ThreadWire } from './thread-wire';

/** Batches cross as they are: these tests are about batching, thread-wire.test.ts about packing. */
const AS_IS: ThreadWire<unknown> = { pack: (batch) => [...batch], unpack: (packed) => [...packed] };

describe('thread batching', () => {
  function setup() {
    const { port1, port2 } = new MessageChannel();
    const batches: unknown[][] = [];
    const delivered: unknown[] = [];
    const deliver = unbatching<unknown>(AS_IS, (message) => delivered.push(message));
    port2.on('message', (batch: unknown[]) => {
      batches.push(batch);
      deliver(batch);
    });
    const post = batchingPoster<unknown>(AS_IS, (batch) => port1.postMessage(batch));
    const close = (...ports: MessagePort[]) => ports.forEach((port) => port.close());
    return { post, batches, delivered, dispose: () => close(port1, port2) };
  }

  /** Resolves once `count` batches have arrived (each arrival is one 'message' event). */
  function batchesArrived(batches: unknown[][], count: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (batches.length >= count) resolve();
        else setImmediate(check);
      };
      check();
    });
  }

  it('sends the messages posted in one turn as one postMessage, in posting order', async () => {
    const { post, batches, delivered, dispose } = setup();
    post({ type: 'started', n: 1 });
    post({ type: 'outcome', n: 2 });
    await Promise.resolve(); // a microtask later is still the same turn
    post({ type: 'release', n: 3 });
    await batchesArrived(batches, 1);
    expect(batches).toEqual([[{ type: 'started', n: 1 }, { type: 'outcome', n: 2 }, { type: 'release', n: 3 }]]);
    expect(delivered).toEqual(batches[0]);
    dispose();
  });

  it('starts a new batch in the next turn and keeps the order across batches', async () => {
    const { post, batches, delivered, dispose } = setup();
    post('a');
    post('b');
    await new Promise((resolve) => setImmediate(resolve)); // the first batch leaves here
    post('c');
    await batchesArrived(batches, 2);
    expect(batches).toEqual([['a', 'b'], ['c']]);
    expect(delivered).toEqual(['a', 'b', 'c']);
    dispose();
  });
});
