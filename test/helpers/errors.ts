// Errors thrown by the native addon come from Node's own realm, not from jest's sandbox, so
// `toThrow(TypeError)` cannot match them by class; this checks the name and message instead.
export function expectThrows(fn: () => unknown, name: string, message?: RegExp): void {
  let caught: unknown;
  try {
    fn();
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeDefined();
  expect((caught as Error).name).toBe(name);
  if (message) expect((caught as Error).message).toMatch(message);
}
