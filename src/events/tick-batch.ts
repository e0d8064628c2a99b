/**
 * Collects what is pushed during one turn of the event loop and hands it over as one array
 * (setImmediate): the delivery thread's calls and replies cross the thread boundary as one
 * message per turn instead of one per call (src/events/outbound.ts, delivery-thread.ts).
 */
export function tickBatcher<T>(send: (batch: T[]) => void): (item: T) => void {
  let items: T[] = [];
  let scheduled = false;
  return (item) => {
    items.push(item);
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      const batch = items;
      items = [];
      send(batch);
    });
  };
}
