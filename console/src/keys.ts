/**
 * A trigger API key the user typed this session (the try-it form): kept in memory
 * only, never stored, so leaving or reloading the page forgets it.
 */
let key: string | undefined;

export function rememberedKey(): string | undefined {
  return key;
}

export function rememberKey(value: string): void {
  key = value === '' ? undefined : value;
}
