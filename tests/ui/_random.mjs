// Seeded random inputs for the property-style tests: the same seed gives the same cases on
// every run and machine, so a failure reproduces (the failing case is in the assertion).

/** mulberry32: a small, fast, well-distributed 32-bit PRNG. Returns floats in [0, 1). */
export function rng(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function int(random, min, max) {
  return min + Math.floor(random() * (max - min + 1));
}

export function pick(random, items) {
  return items[int(random, 0, items.length - 1)];
}

// ASCII (with the characters URLs and JSON escape), Latin-1, CJK, right-to-left and an
// astral emoji (a surrogate pair): well-formed UTF-16 only.
const ALPHABET = [..."abcXYZ019 -_.~!*'()/?#&=%\"\\:;,+@$[]{}<>\n\té€ßñ中文字עבריתالعربية😀🧭"];

export function string(random, maxLength = 24) {
  const length = int(random, 0, maxLength);
  let text = "";
  for (let i = 0; i < length; i += 1) text += pick(random, ALPHABET);
  return text;
}

/** `count` cases from `make(random)`, with a fixed seed per test. */
export function cases(seed, count, make) {
  const random = rng(seed);
  return Array.from({ length: count }, () => make(random));
}
